//! The `hold` function's routes: holding seats (exact seats, or best available in a section) and
//! an order's status. Holding needs the access token from the queue (`X-Queue-Token`); everything
//! is the caller's own (another customer's order is answered as unknown). The seat map itself is
//! public and cached (`status` serves it); giving a hold back is `checkout`'s, which cancels its
//! payment first.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::SystemTime;

use http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use crate::application::error::{HoldRefused, LineupError};
use crate::application::http::{request, response};
use crate::application::layout_catalogue::LayoutCatalogue;
use crate::application::ports::availability::{bit, AvailabilityBoard, Projection};
use crate::application::ports::event_records::LayoutStore;
use crate::application::ports::ledger::{
    HoldRequest, Order, OrderStatus, SeatLedger, MAX_SEATS_PER_HOLD,
};
use crate::application::ports::queue::AdmissionRegistry;
use crate::application::rotating::SigningKeys;
use crate::domain::access_token;
use crate::domain::best_available::{ranked_blocks, spread};
use crate::domain::clock::{rfc3339, Clock};
use crate::domain::ids::{CustomerId, EventId, GroupName, OrderId, SeatId};
use crate::domain::layout::IndexedLayout;
use crate::domain::seat::Seat;

/// The header carrying the access token `poll` handed out on admission.
pub const QUEUE_TOKEN_HEADER: &str = "x-queue-token";

/// How many holds one best-available request tries before it gives up (each a transaction).
pub const BEST_AVAILABLE_ATTEMPTS: usize = 4;
/// Among how many of the best non-overlapping blocks a retry picks at random: 8 after the first
/// conflict, doubling with each (the more conflicts, the bigger the crowd to spread over).
const BEST_AVAILABLE_SPREAD: usize = 8;
/// How many ranked blocks are looked at per attempt.
const BEST_AVAILABLE_CANDIDATES: usize = 512;

/// What the `hold` function's handler works with.
#[derive(Clone)]
pub struct HoldApi {
    /// Holds, orders and releases (DynamoDB).
    pub ledger: Arc<dyn SeatLedger>,
    /// Whether the admission an access token names is still live (Redis).
    pub admissions: Arc<dyn AdmissionRegistry>,
    /// The signing key's versions, to verify access tokens.
    pub key: SigningKeys,
    /// The time tokens and holds are judged at.
    pub clock: Arc<dyn Clock>,
    /// The seat map's projection (availability and the current layout's summary).
    pub seats: Arc<dyn AvailabilityBoard>,
    /// Where layouts are stored (read once per version per instance).
    pub layouts: Arc<dyn LayoutStore>,
    /// This instance's memory of layouts and recently taken seats.
    pub catalogue: Arc<LayoutCatalogue>,
}

/// Answers one request to the hold routes (errors as their HTTP answer).
pub async fn handle(api: &HoldApi, request: Request) -> Response<Body> {
    response::from_result(route(api, &request).await)
}

async fn route(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let route_key = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.route_key.as_deref(),
        _ => None,
    };
    match route_key {
        Some("POST /events/{eventId}/holds") => hold(api, request).await,
        Some("GET /orders/{orderId}") => order_status(api, request).await,
        _ => Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        }),
    }
}

/// The most a hold's body may be: four seat ids take a few hundred bytes.
pub const HOLD_BODY_LIMIT: usize = 4096;

/// What a hold asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wanted {
    /// `{"seatIds": [...]}`: 1–4 distinct, well-formed seat ids.
    Seats(Vec<SeatId>),
    /// `{"section": "Floor", "quantity": 2}`: that many seats together, the best available.
    BestAvailable { section: String, quantity: usize },
}

const BODY_SHAPES: &str =
    "the body must be {\"seatIds\": [...]} or {\"section\": \"...\", \"quantity\": n}";

fn wanted(request: &Request) -> Result<Wanted, LineupError> {
    let body: serde_json::Value =
        serde_json::from_slice(request::body_within(request, HOLD_BODY_LIMIT)?)
            .map_err(|_| LineupError::invalid("invalid_json", BODY_SHAPES))?;
    let (seat_ids, section) = (body.get("seatIds"), body.get("section"));
    match (seat_ids, section) {
        (Some(raw), None) => requested_seats(raw).map(Wanted::Seats),
        (None, Some(section)) => {
            let section = section
                .as_str()
                .filter(|name| !name.is_empty() && name.len() <= 64)
                .ok_or_else(|| {
                    LineupError::invalid("invalid_section", "section is a section's name")
                })?;
            let quantity = body
                .get("quantity")
                .and_then(serde_json::Value::as_u64)
                .filter(|n| (1..=MAX_SEATS_PER_HOLD as u64).contains(n))
                .ok_or_else(|| {
                    LineupError::invalid(
                        "invalid_quantity",
                        format!("quantity is a whole number from 1 to {MAX_SEATS_PER_HOLD}"),
                    )
                })?;
            Ok(Wanted::BestAvailable {
                section: section.to_owned(),
                quantity: quantity as usize,
            })
        }
        _ => Err(LineupError::invalid("invalid_body", BODY_SHAPES)),
    }
}

/// 1–4 distinct, well-formed seat ids.
fn requested_seats(raw: &serde_json::Value) -> Result<Vec<SeatId>, LineupError> {
    let Some(raw) = raw.as_array() else {
        return Err(LineupError::invalid("invalid_body", BODY_SHAPES));
    };
    if raw.is_empty() {
        return Err(LineupError::invalid("no_seats", "choose at least one seat"));
    }
    if raw.len() > MAX_SEATS_PER_HOLD {
        return Err(LineupError::invalid(
            "too_many_seats",
            format!("one hold takes at most {MAX_SEATS_PER_HOLD} seats"),
        ));
    }
    let seats = raw
        .iter()
        .map(|id| {
            id.as_str()
                .ok_or_else(|| LineupError::invalid("invalid_seat_id", "seat ids are strings"))
                .and_then(|raw| Ok(SeatId::parse(raw)?))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if seats.iter().collect::<HashSet<_>>().len() != seats.len() {
        return Err(LineupError::invalid(
            "duplicate_seats",
            "each seat can be chosen once",
        ));
    }
    Ok(seats)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrderBody {
    order_id: String,
    event_id: String,
    status: OrderStatus,
    seat_ids: Vec<String>,
    amount: i64,
    currency: String,
    expires_at: String,
}

impl From<&Order> for OrderBody {
    fn from(order: &Order) -> Self {
        Self {
            order_id: order.order_id.as_str().to_owned(),
            event_id: order.event_id.as_str().to_owned(),
            status: order.status,
            seat_ids: order.seat_id_strings(),
            amount: order.amount,
            currency: order.currency.clone(),
            expires_at: rfc3339(order.expires_at),
        }
    }
}

async fn hold(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let customer = request::caller(request)?;
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    // The size first: nothing else is worth doing for a huge body.
    request::body_within(request, HOLD_BODY_LIMIT)?;
    let now = api.clock.now();
    let token = request::header(request, QUEUE_TOKEN_HEADER);
    let admission = check_admitted(
        &api.key,
        api.admissions.as_ref(),
        token,
        &event,
        &customer,
        now,
    )
    .await?;
    let hold = Hold {
        api,
        event: &event,
        customer: &customer,
        ticket_limit: admission.ticket_limit,
        group: admission.group,
        admission_expires_at: admission.expires_at,
        now,
    };
    let held = match wanted(request)? {
        Wanted::Seats(seats) => hold.exact(&seats).await,
        Wanted::BestAvailable { section, quantity } => {
            hold.best_available(&section, quantity).await
        }
    };
    let outcome = match &held {
        Ok(_) => Some("HoldsWon"),
        Err(LineupError::HoldRefused(_)) => Some("HoldsLost"),
        Err(_) => None,
    };
    if let Some(metric) = outcome {
        crate::application::metrics::emit(
            &[("EventId", event.as_str())],
            &[(metric, 1.0, crate::application::metrics::Unit::Count)],
        );
    }
    let order = held?;
    tracing::info!(event = %event, order = %order.order_id, seats = order.seat_ids.len(), "seats held");
    Ok(response::json(
        StatusCode::CREATED,
        &OrderBody::from(&order),
        None,
    ))
}

/// One hold request, admitted.
struct Hold<'a> {
    api: &'a HoldApi,
    event: &'a EventId,
    customer: &'a CustomerId,
    ticket_limit: Option<u32>,
    group: Option<GroupName>,
    admission_expires_at: std::time::SystemTime,
    now: std::time::SystemTime,
}

impl Hold<'_> {
    /// Holds exactly these seats, or none.
    async fn exact(&self, wanted: &[SeatId]) -> Result<Order, LineupError> {
        let api = self.api;
        let summary = api
            .catalogue
            .current(api.seats.as_ref(), api.layouts.as_ref(), self.event)
            .await?
            .ok_or(LineupError::EventNotFound)?;
        let layout = api
            .catalogue
            .layout(api.layouts.as_ref(), self.event, &summary.version)
            .await?;
        let unknown: Vec<String> = wanted
            .iter()
            .filter(|seat| layout.place(seat).is_none())
            .map(|seat| seat.as_str().to_owned())
            .collect();
        if !unknown.is_empty() {
            return Err(LineupError::UnknownSeats(unknown));
        }
        let seats = wanted.iter().filter_map(|seat| layout.seat(seat)).collect();
        self.write(&layout, seats).await
    }

    /// Holds `quantity` seats together in `section`: the best block the availability shows,
    /// then, after a conflict, one picked at random among the best few that do not overlap (8,
    /// then 16, 32), reading the availability again and skipping seats found taken, at most
    /// [`BEST_AVAILABLE_ATTEMPTS`] holds.
    async fn best_available(&self, section: &str, quantity: usize) -> Result<Order, LineupError> {
        let api = self.api;
        let availability = match api.seats.availability(self.event).await? {
            // Lost with the cache (the admitter rebuilds it within seconds), or never seeded.
            Projection::NoLayout => {
                let current = api
                    .catalogue
                    .current(api.seats.as_ref(), api.layouts.as_ref(), self.event)
                    .await?;
                return Err(match current {
                    Some(_) => LineupError::AvailabilityRebuilding,
                    None => LineupError::EventNotFound,
                });
            }
            Projection::Rebuilding(_) => return Err(LineupError::AvailabilityRebuilding),
            Projection::Ready(availability) => availability,
        };
        api.catalogue
            .remember_current(self.event, Some(availability.summary.clone()));
        let layout = api
            .catalogue
            .layout(
                api.layouts.as_ref(),
                self.event,
                &availability.summary.version,
            )
            .await?;
        let Some((at, rows)) = layout.section(section) else {
            return Err(LineupError::invalid(
                "unknown_section",
                "this event has no section of that name (the layout lists them)",
            ));
        };
        let first = availability.summary.sections[at].first;
        let mut bits = availability.available;
        let mut taken: HashSet<u32> = HashSet::new();
        let mut last_refusal = None;
        for attempt in 0..BEST_AVAILABLE_ATTEMPTS {
            if attempt > 0 {
                // After a conflict: the availability as it is now, and what this instance has
                // seen taken since (its other requests' wins and conflicts).
                if let Projection::Ready(now) = api.seats.availability(self.event).await? {
                    if now.summary.version == layout.layout.version() {
                        bits = now.available;
                    }
                }
            }
            taken.extend(api.catalogue.recently_taken(self.event));
            let blocks = ranked_blocks(
                rows,
                first,
                quantity,
                |index| bit(&bits, index) && !taken.contains(&index),
                BEST_AVAILABLE_CANDIDATES,
            );
            let spread_over = BEST_AVAILABLE_SPREAD << attempt.saturating_sub(1);
            let choices = spread(&blocks, spread_over);
            if choices.is_empty() {
                // Nothing left together, as far as the availability and the conflicts tell.
                last_refusal = None;
                break;
            }
            // The best block first; after a conflict (others chose from the same availability),
            // one of the next best at random, so the crowd spreads instead of colliding again.
            let block = if attempt == 0 {
                choices[0]
            } else {
                choices[pick(choices.len(), self.customer, attempt)]
            };
            let seats: Vec<Seat> = block
                .iter()
                .filter_map(|index| layout.seat_at(*index))
                .collect();
            match self.write(&layout, seats).await {
                Err(LineupError::HoldRefused(HoldRefused::SeatsUnavailable(ids))) => {
                    let indexes: Vec<u32> = ids
                        .iter()
                        .filter_map(|id| SeatId::parse(id).ok())
                        .filter_map(|id| layout.place(&id))
                        .map(|place| place.index)
                        .collect();
                    taken.extend(indexes.iter().copied());
                    api.catalogue.taken(self.event, indexes);
                    last_refusal = Some(HoldRefused::SeatsUnavailable(ids));
                }
                other => return other,
            }
        }
        // Attempts ran out while blocks remained: the seats went meanwhile (try again). Else no
        // row has that many together.
        Err(LineupError::HoldRefused(last_refusal.unwrap_or(
            HoldRefused::NoSeatsTogether {
                section: section.to_owned(),
                quantity,
            },
        )))
    }

    /// The hold's one transaction. Seats won are noted as taken (best available skips them
    /// until the availability shows them).
    async fn write(&self, layout: &IndexedLayout, seats: Vec<Seat>) -> Result<Order, LineupError> {
        let api = self.api;
        let indexes: Vec<u32> = seats
            .iter()
            .filter_map(|seat| layout.place(&seat.seat_id))
            .map(|place| place.index)
            .collect();
        let held = api
            .ledger
            .hold(&HoldRequest {
                event: self.event.clone(),
                customer: self.customer.clone(),
                seats,
                ticket_limit: self.ticket_limit,
                group: self.group.clone(),
                admission_expires_at: self.admission_expires_at,
                now: self.now,
            })
            .await;
        match &held {
            Ok(_) => api.catalogue.taken(self.event, indexes),
            Err(LineupError::HoldRefused(HoldRefused::PriceChanged(_))) => {
                api.catalogue.forget(self.event)
            }
            Err(_) => {}
        }
        held
    }
}

/// A number below `choices`, different from request to request.
fn pick(choices: usize, customer: &CustomerId, attempt: usize) -> usize {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write(customer.as_str().as_bytes());
    hasher.write_usize(attempt);
    hasher.finish() as usize % choices
}

/// The caller's own order, or 404 (another customer's order is not told apart from none).
async fn own_order(api: &HoldApi, request: &Request) -> Result<Order, LineupError> {
    let customer = request::caller(request)?;
    request::body_within(request, request::NO_INPUT_BODY_LIMIT)?;
    let order_id = OrderId::parse(request::path_parameter(request, "orderId")?)?;
    match api.ledger.order(&order_id).await? {
        Some(order) if order.customer_id == customer => Ok(order),
        _ => Err(LineupError::NotFound("no such order for this customer")),
    }
}

async fn order_status(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let order = own_order(api, request).await?;
    Ok(response::json(
        StatusCode::OK,
        &OrderBody::from(&order),
        None,
    ))
}
/// The full check the hold function runs: [`access_token::verify`], then one Redis call confirming that this
/// admission is still the customer's live entry in the active set (not left, paid or replaced),
/// which also brings the event's rules for the shopping it allows.
pub async fn check_admitted(
    keys: &SigningKeys,
    registry: &dyn AdmissionRegistry,
    token: Option<&str>,
    event: &EventId,
    caller: &CustomerId,
    now: SystemTime,
) -> Result<CheckedAdmission, LineupError> {
    let token = token.ok_or(access_token::TokenRejection::Missing)?;
    let verified = match access_token::verify(&keys.ring(), token, event, caller, now) {
        // Signed by a key this instance has not fetched yet (a rotation reaching instances at
        // different times): fetch, and check once more.
        Err(access_token::TokenRejection::BadSignature) if keys.refresh_after_miss().await => {
            access_token::verify(&keys.ring(), token, event, caller, now)?
        }
        checked => checked?,
    };
    let live = registry
        .live_admission(event, caller, verified.expires_at, now)
        .await?
        .ok_or(access_token::TokenRejection::Revoked)?;
    // A priority group's own limit (signed into the token by the line that admitted the
    // customer) applies on top of the event's: the tighter of the two.
    let ticket_limit = match (live.ticket_limit, verified.group_ticket_limit) {
        (Some(event_limit), Some(group_limit)) => Some(event_limit.min(group_limit)),
        (event_limit, group_limit) => event_limit.or(group_limit),
    };
    Ok(CheckedAdmission {
        expires_at: live.expires_at,
        ticket_limit,
        group: verified.group,
    })
}

/// An admission [`check_admitted`] found live, with the rules of the shopping it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedAdmission {
    /// When the admission ends.
    pub expires_at: SystemTime,
    /// The tighter of the event's ticket limit and the admitting group's (`None`: no limit).
    pub ticket_limit: Option<u32>,
    /// The priority group whose line admitted the customer, from the signed token (`None`: the
    /// event's own line): the seats set aside for that group are theirs to hold.
    pub group: Option<GroupName>,
}
