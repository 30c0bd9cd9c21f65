//! The `hold` function's routes: the seat map, holding seats, releasing a hold, and an order's
//! status. Holding needs the access token from the queue (`X-Queue-Token`); everything is the
//! caller's own (another customer's order is answered as unknown).

use std::collections::HashSet;
use std::sync::Arc;

use http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use super::{request, response};
use crate::access_token;
use crate::clock::{rfc3339, Clock};
use crate::ids::{EventId, OrderId, SeatId};
use crate::ledger::catalogue::SeatCatalogue;
use crate::ledger::{HoldRequest, Order, OrderStatus, SeatLedger, SeatStatus, MAX_SEATS_PER_HOLD};
use crate::queue::AdmissionRegistry;
use crate::signing::SigningKeys;
use crate::{HoldRefused, LineupError};

/// The header carrying the access token `poll` handed out on admission.
pub const QUEUE_TOKEN_HEADER: &str = "x-queue-token";

#[derive(Clone)]
pub struct HoldApi {
    pub ledger: Arc<dyn SeatLedger>,
    pub admissions: Arc<dyn AdmissionRegistry>,
    pub key: SigningKeys,
    pub clock: Arc<dyn Clock>,
    pub catalogue: Arc<SeatCatalogue>,
}

pub async fn handle(api: &HoldApi, request: Request) -> Response<Body> {
    response::from_result(route(api, &request).await)
}

async fn route(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let route_key = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.route_key.as_deref(),
        _ => None,
    };
    match route_key {
        Some("GET /events/{eventId}/seats") => seat_map(api, request).await,
        Some("POST /events/{eventId}/holds") => hold(api, request).await,
        Some("DELETE /events/{eventId}/holds/{orderId}") => release(api, request).await,
        Some("GET /orders/{orderId}") => order_status(api, request).await,
        _ => Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        }),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SeatBody {
    seat_id: String,
    section: String,
    price: i64,
    currency: String,
    status: SeatStatus,
}

async fn seat_map(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    request::caller(request)?;
    request::body_within(request, request::NO_INPUT_BODY_LIMIT)?;
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    let seats = api
        .catalogue
        .seat_map(api.ledger.as_ref(), &event, api.clock.now())
        .await?;
    let seats: Vec<SeatBody> = seats
        .iter()
        .map(|seat| SeatBody {
            seat_id: seat.seat_id.as_str().to_owned(),
            section: seat.section.clone(),
            price: seat.price,
            currency: seat.currency.clone(),
            status: seat.status,
        })
        .collect();
    Ok(response::json(
        StatusCode::OK,
        &serde_json::json!({ "seats": seats }),
        None,
    ))
}

/// The most a hold's body may be: four seat ids take a few hundred bytes.
pub const HOLD_BODY_LIMIT: usize = 4096;

/// `{"seatIds": [...]}`: 1–4 distinct, well-formed seat ids.
fn requested_seats(request: &Request) -> Result<Vec<SeatId>, LineupError> {
    let body: serde_json::Value =
        serde_json::from_slice(request::body_within(request, HOLD_BODY_LIMIT)?).map_err(|_| {
            LineupError::invalid(
                "invalid_json",
                "the body must be JSON: {\"seatIds\": [...]}",
            )
        })?;
    let Some(raw) = body.get("seatIds").and_then(|ids| ids.as_array()) else {
        return Err(LineupError::invalid(
            "invalid_body",
            "the body must be {\"seatIds\": [...]}",
        ));
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
                .and_then(SeatId::parse)
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
    let admission = access_token::check_admitted(
        &api.key,
        api.admissions.as_ref(),
        token,
        &event,
        &customer,
        now,
    )
    .await?;

    let wanted = requested_seats(request)?;
    let seats = api
        .catalogue
        .seats(api.ledger.as_ref(), &event, &wanted, now)
        .await?;
    let held = api
        .ledger
        .hold(&HoldRequest {
            event: event.clone(),
            customer,
            seats,
            ticket_limit: admission.ticket_limit,
            admission_expires_at: admission.expires_at,
            now,
        })
        .await;
    if matches!(
        &held,
        Err(LineupError::HoldRefused(HoldRefused::PriceChanged(_)))
    ) {
        api.catalogue.forget(&event);
    }
    let outcome = match &held {
        Ok(_) => Some("HoldsWon"),
        Err(LineupError::HoldRefused(_)) => Some("HoldsLost"),
        Err(_) => None,
    };
    if let Some(metric) = outcome {
        crate::metrics::emit(
            &[("EventId", event.as_str())],
            &[(metric, 1.0, crate::metrics::Unit::Count)],
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

async fn release(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    let order = own_order(api, request).await?;
    if order.event_id != event {
        return Err(LineupError::NotFound("no such order for this customer"));
    }
    api.ledger.release(&order).await?;
    tracing::info!(event = %event, order = %order.order_id, "hold released");
    Ok(response::no_content())
}

async fn order_status(api: &HoldApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let order = own_order(api, request).await?;
    Ok(response::json(
        StatusCode::OK,
        &OrderBody::from(&order),
        None,
    ))
}
