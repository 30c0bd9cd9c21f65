//! The `hold` function's decisions over the in-memory fakes: holding exact seats and the best
//! available, the refusals (taken, unknown or repriced seats, bad bodies, tokens, a second hold,
//! the ticket limit), releasing, an order's status, and store outages. The requests are the
//! sample API Gateway events of `events/`, pointed at a fresh on-sale, as `tests/hold_requests.rs`
//! sends them against real stores. [`Sale`] (the on-sale, its fakes and its request builders) is
//! shared with the `confirm` tests.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::{json, Value};

use crate::application::checkout::{self, CheckoutApi};
use crate::application::fakes::admissions::MemoryAdmissions;
use crate::application::fakes::ledger::MemoryLedger;
use crate::application::fakes::outage::Faulty;
use crate::application::fakes::payments::FakeProvider;
use crate::application::fakes::records::MemoryRecords;
use crate::application::fakes::seat_map::MemorySeatMap;
use crate::application::hold::{self, HoldApi, HOLD_BODY_LIMIT};
use crate::application::layout_catalogue::LayoutCatalogue;
use crate::application::ports::ledger::{
    HoldRequest, Order, OrderStatus, SeatLedger, HOLD_DURATION,
};
use crate::application::seeding::{SeatWriter, SeedOutcome, Seeding};
use crate::domain::access_token;
use crate::domain::clock::{from_unix_millis, rfc3339, unix_millis, Clock, FixedClock};
use crate::domain::ids::{CustomerId, EventId, GroupName, OrderId, SeatId};
use crate::domain::layout::{IndexedLayout, SeatLayout};
use crate::domain::priority_group::{Membership, PriorityGroup, PriorityGroups};
use crate::domain::seat::{NewSeat, SeatStatus};
use crate::domain::seat_allocation::{SeatAllocations, SeatReservation};
use crate::domain::signing::SigningKey;

const HOLD_SAMPLE: &str = include_str!("../../../../events/hold.json");
const RELEASE_SAMPLE: &str = include_str!("../../../../events/release.json");
const ORDER_SAMPLE: &str = include_str!("../../../../events/order.json");

/// How long an admission lasts in these tests.
pub(super) const SESSION: Duration = Duration::from_secs(10 * 60);

pub(super) fn customer(name: &str) -> CustomerId {
    CustomerId::parse(name).expect("a valid customer id")
}

pub(super) fn seat(id: &str) -> SeatId {
    SeatId::parse(id).expect("a valid seat id")
}

/// The venue: `Floor`, three rows of eight at `floor_price` KRW (`F1-1`..`F3-8`, indexes 0-23),
/// then `Balcony`, one row of four at 8,000 KRW (`B1-1`..`B1-4`, indexes 24-27).
pub(super) fn venue(floor_price: i64) -> SeatLayout {
    let floor = (1..=3).flat_map(|row| {
        (1..=8).map(move |n| NewSeat {
            seat_id: seat(&format!("F{row}-{n}")),
            section: "Floor".to_owned(),
            row: format!("F{row}"),
            price: floor_price,
            currency: "KRW".to_owned(),
        })
    });
    let balcony = (1..=4).map(|n| NewSeat {
        seat_id: seat(&format!("B1-{n}")),
        section: "Balcony".to_owned(),
        row: "B1".to_owned(),
        price: 8_000,
        currency: "KRW".to_owned(),
    });
    SeatLayout::from_seats(&floor.chain(balcony).collect::<Vec<_>>()).expect("a valid layout")
}

/// A sample event pointed at other path parameters and caller (`None`: no JWT), its raw path
/// rebuilt from the route key as API Gateway would.
pub(super) fn api_event(
    sample: &str,
    parameters: &[(&str, &str)],
    caller: Option<&CustomerId>,
) -> Value {
    let mut value: Value = serde_json::from_str(sample).expect("a sample event is JSON");
    let route_key = value["routeKey"].as_str().expect("a routeKey").to_owned();
    let mut path = route_key
        .split_once(' ')
        .expect("METHOD /path")
        .1
        .to_owned();
    for (name, replacement) in parameters {
        value["pathParameters"][*name] = (*replacement).into();
    }
    for (name, current) in value["pathParameters"]
        .as_object()
        .expect("path parameters")
    {
        path = path.replace(&format!("{{{name}}}"), current.as_str().unwrap_or_default());
    }
    value["rawPath"] = path.clone().into();
    value["requestContext"]["http"]["path"] = path.into();
    match caller {
        Some(caller) => {
            value["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = caller.as_str().into()
        }
        None => {
            value["requestContext"]
                .as_object_mut()
                .expect("a request context")
                .remove("authorizer");
        }
    }
    value
}

pub(super) fn to_request(event: &Value) -> Request {
    lambda_http::request::from_str(&event.to_string()).expect("a valid API Gateway v2 event")
}

/// The response body as JSON (`Null` when empty).
pub(super) fn body(response: &Response<Body>) -> Value {
    match response.body() {
        Body::Empty => Value::Null,
        Body::Text(text) => serde_json::from_str(text).expect("a JSON body"),
        Body::Binary(bytes) => serde_json::from_slice(bytes).expect("a JSON body"),
        _ => panic!("an unexpected body kind"),
    }
}

/// The error's code, checking the contract's shape (a code and a message).
pub(super) fn error_code(response: &Response<Body>) -> String {
    let body = body(response);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|message| !message.is_empty()),
        "no error.message in {body}"
    );
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.code in {body}"))
        .to_owned()
}

pub(super) fn retry_after(response: &Response<Body>) -> Option<u64> {
    response
        .headers()
        .get(http::header::RETRY_AFTER)
        .map(|value| value.to_str().unwrap().parse().unwrap())
}

/// The status and error code of a refusal.
pub(super) fn refusal(response: &Response<Body>) -> (StatusCode, String) {
    (response.status(), error_code(response))
}

/// The seat ids of an order body.
fn seats_of(order: &Value) -> Vec<String> {
    order["seatIds"]
        .as_array()
        .expect("seatIds")
        .iter()
        .map(|id| id.as_str().expect("a seat id").to_owned())
        .collect()
}

/// Whether the seats are next to each other in one row (`F2-3`, `F2-4`...).
fn together(seats: &[String]) -> bool {
    let mut places: Vec<(&str, u32)> = seats
        .iter()
        .map(|id| {
            let (row, n) = id.split_once('-').expect("row-number");
            (row, n.parse().expect("a number"))
        })
        .collect();
    places.sort_unstable();
    places
        .windows(2)
        .all(|pair| pair[0].0 == pair[1].0 && pair[0].1 + 1 == pair[1].1)
}

/// An on-sale over the fakes: the venue seeded as an operator seeds it, the event open in the
/// queue, the hold handler built as the `hold` function builds it, and a clock that stands still.
pub(super) struct Sale {
    pub(super) event: EventId,
    pub(super) layout: SeatLayout,
    pub(super) ledger: Arc<MemoryLedger>,
    pub(super) records: Arc<MemoryRecords>,
    pub(super) seat_map: Arc<MemorySeatMap>,
    pub(super) admissions: Arc<MemoryAdmissions>,
    pub(super) clock: Arc<FixedClock>,
    pub(super) key: SigningKey,
    pub(super) hold_api: HoldApi,
    /// The checkout function's routes (payment, release), over the same ledger.
    pub(super) checkout_api: CheckoutApi,
    /// The payment provider behind checkout.
    pub(super) provider: Arc<FakeProvider>,
}

impl Sale {
    pub(super) async fn new() -> Self {
        Self::with_limit(None).await
    }

    /// An on-sale whose event has this per-customer ticket limit.
    pub(super) async fn with_limit(ticket_limit: Option<u32>) -> Self {
        let event = EventId::parse("spring-gala").unwrap();
        let layout = venue(12_000);
        let clock = Arc::new(FixedClock::at(from_unix_millis(1_800_000_000_000)));
        let ledger = Arc::new(MemoryLedger::new());
        let records = Arc::new(MemoryRecords::new());
        let seat_map = Arc::new(MemorySeatMap::new());
        let admissions = Arc::new(MemoryAdmissions::new());
        let seeded = Seeding {
            ledger: ledger.as_ref(),
            layouts: records.as_ref(),
            board: seat_map.as_ref(),
        }
        .seed(&event, &layout, &Default::default(), clock.now())
        .await
        .expect("seed the venue");
        assert!(matches!(seeded, SeedOutcome::Seeded { seats: 28, .. }));
        admissions.open_event(&event, ticket_limit);
        let key = SigningKey::new(vec![7u8; 32]).unwrap();
        let hold_api = HoldApi {
            ledger: ledger.clone(),
            admissions: admissions.clone(),
            key: key.clone().into(),
            clock: clock.clone(),
            seats: seat_map.clone(),
            layouts: records.clone(),
            catalogue: Arc::new(LayoutCatalogue::default()),
        };
        let provider = Arc::new(FakeProvider::default());
        let checkout_api = CheckoutApi {
            orders: ledger.clone(),
            checkout: ledger.clone(),
            provider: provider.clone(),
            publishable_key: Some("pk_test_unit".into()),
            clock: clock.clone(),
        };
        Self {
            event,
            layout,
            ledger,
            records,
            seat_map,
            admissions,
            clock,
            key,
            hold_api,
            checkout_api,
            provider,
        }
    }

    pub(super) fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// Admits `customer` for a session from now; their access token.
    pub(super) fn admit(&self, customer: &CustomerId) -> String {
        let until = self.now() + SESSION;
        self.admissions.admit(&self.event, customer, until);
        self.token(customer, until)
    }

    /// An access token for `customer`'s admission to the event ending at `until`.
    pub(super) fn token(&self, customer: &CustomerId, until: SystemTime) -> String {
        access_token::issue(&self.key, &self.event, customer, until)
    }

    /// `POST /events/{eventId}/holds` with `body`, as `caller`, with the token (`None`: none).
    pub(super) fn hold_request(
        &self,
        caller: Option<&CustomerId>,
        token: Option<&str>,
        body: &Value,
    ) -> Request {
        let mut event = api_event(HOLD_SAMPLE, &[("eventId", self.event.as_str())], caller);
        event["body"] = body.to_string().into();
        let headers = event["headers"].as_object_mut().expect("headers");
        match token {
            Some(token) => headers.insert("x-queue-token".to_owned(), token.into()),
            None => headers.remove("x-queue-token"),
        };
        to_request(&event)
    }

    /// To the function that serves the request's route, as API Gateway routes it.
    pub(super) async fn send(&self, request: Request) -> Response<Body> {
        let route_key = match lambda_http::RequestExt::request_context_ref(&request) {
            Some(lambda_http::request::RequestContext::ApiGatewayV2(context)) => {
                context.route_key.clone()
            }
            _ => None,
        };
        match route_key.as_deref() {
            Some("POST /orders/{orderId}/payment" | "DELETE /events/{eventId}/holds/{orderId}") => {
                checkout::handle(&self.checkout_api, request).await
            }
            _ => hold::handle(&self.hold_api, request).await,
        }
    }

    pub(super) async fn hold(
        &self,
        customer: &CustomerId,
        token: &str,
        seats: &[&str],
    ) -> Response<Body> {
        self.send(self.hold_request(Some(customer), Some(token), &json!({ "seatIds": seats })))
            .await
    }

    pub(super) async fn hold_best(
        &self,
        customer: &CustomerId,
        token: &str,
        section: &str,
        quantity: usize,
    ) -> Response<Body> {
        let body = json!({ "section": section, "quantity": quantity });
        self.send(self.hold_request(Some(customer), Some(token), &body))
            .await
    }

    /// Admits `customer` and holds `seats` for them: the order as the hold answered it.
    pub(super) async fn held(&self, customer: &CustomerId, seats: &[&str]) -> Value {
        let token = self.admit(customer);
        let response = self.hold(customer, &token, seats).await;
        assert_eq!(
            response.status(),
            StatusCode::CREATED,
            "{}",
            body(&response)
        );
        body(&response)
    }

    /// Holds `seats` straight in the ledger for `customer`, as another `hold` instance would:
    /// neither the seat map nor this instance's catalogue hears of it.
    pub(super) async fn hold_behind_the_map(&self, customer: &CustomerId, seats: &[&str]) -> Order {
        let indexed = IndexedLayout::new(Arc::new(self.layout.clone()));
        let request = HoldRequest {
            event: self.event.clone(),
            customer: customer.clone(),
            seats: seats
                .iter()
                .map(|id| indexed.seat(&seat(id)).expect("a seat of the venue"))
                .collect(),
            ticket_limit: None,
            group: None,
            admission_expires_at: self.now() + SESSION,
            now: self.now(),
        };
        self.ledger.hold(&request).await.expect("held")
    }

    pub(super) fn release_request(&self, caller: &CustomerId, order_id: &str) -> Request {
        to_request(&api_event(
            RELEASE_SAMPLE,
            &[("eventId", self.event.as_str()), ("orderId", order_id)],
            Some(caller),
        ))
    }

    pub(super) fn order_request(&self, caller: &CustomerId, order_id: &str) -> Request {
        to_request(&api_event(
            ORDER_SAMPLE,
            &[("orderId", order_id)],
            Some(caller),
        ))
    }

    /// The order as stored.
    pub(super) fn order(&self, order_id: &str) -> Order {
        let id = OrderId::parse(order_id).expect("an order id");
        self.ledger
            .stored_order(&id)
            .expect("the order is stored")
            .order
    }

    pub(super) fn seat_status(&self, id: &str) -> SeatStatus {
        self.ledger
            .seat_status(&self.event, &seat(id))
            .expect("a seat of the venue")
    }

    /// The order holding (or sold) the seat.
    pub(super) fn held_by(&self, id: &str) -> Option<String> {
        self.ledger
            .seat(&self.event, &seat(id))
            .expect("a seat of the venue")
            .held_by
    }
}

// --- Exact seats ---

#[tokio::test]
async fn exact_seats_are_held_with_a_pending_order() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let response = sale.hold(&alice, &token, &["F1-2", "F1-1"]).await;

    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        body(&response)
    );
    let order = body(&response);
    let order_id = order["orderId"].as_str().expect("an orderId").to_owned();
    assert_eq!(
        order,
        json!({
            "orderId": order_id,
            "eventId": "spring-gala",
            "status": "PENDING",
            "seatIds": ["F1-2", "F1-1"],
            "amount": 24_000,
            "currency": "KRW",
            "expiresAt": rfc3339(sale.now() + HOLD_DURATION),
        })
    );
    for id in ["F1-1", "F1-2"] {
        assert_eq!(sale.seat_status(id), SeatStatus::Held, "{id}");
        assert_eq!(sale.held_by(id).as_deref(), Some(order_id.as_str()));
    }
    assert_eq!(sale.seat_status("F1-3"), SeatStatus::Available);
    let stored = sale.order(&order_id);
    assert_eq!(stored.status, OrderStatus::Pending);
    assert_eq!(stored.customer_id, alice);
    assert_eq!(
        stored.admission_expires_at,
        Some(sale.now() + SESSION),
        "the order names the admission it was held under"
    );
    let lock = sale
        .ledger
        .hold_lock(&sale.event, &alice)
        .expect("a hold lock");
    assert_eq!(lock.order_id, order_id);
}

#[tokio::test]
async fn a_taken_seat_is_named_and_nothing_is_written() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    let bobs = sale.held(&bob, &["F1-1"]).await;
    let token = sale.admit(&alice);
    let before = sale.ledger.snapshot();

    let response = sale.hold(&alice, &token, &["F1-1", "F1-2"]).await;

    assert_eq!(
        refusal(&response),
        (StatusCode::CONFLICT, "seats_unavailable".to_owned())
    );
    assert_eq!(
        body(&response)["error"]["seatIds"],
        json!(["F1-1"]),
        "only the taken seat is named"
    );
    assert_eq!(
        sale.ledger.snapshot(),
        before,
        "a refused hold wrote something"
    );
    assert_eq!(sale.held_by("F1-1").as_deref(), bobs["orderId"].as_str());
    assert_eq!(sale.seat_status("F1-2"), SeatStatus::Available);
}

#[tokio::test]
async fn seats_set_aside_for_a_group_are_held_by_its_members_alone_until_its_window_ends() {
    let sale = Sale::new().await;
    let fanclub = GroupName::parse("fanclub").unwrap();
    let window_end = sale.now() + Duration::from_secs(600);
    let reservation = SeatReservation {
        group: fanclub.clone(),
        until: window_end,
    };
    let floor: Vec<SeatId> = sale
        .layout
        .seats()
        .filter(|(_, seat)| seat.section == "Floor")
        .map(|(_, seat)| seat.seat_id)
        .collect();
    let written = sale
        .ledger
        .reserve_seats(&sale.event, &floor, Some(&reservation))
        .await
        .unwrap();
    assert_eq!(written, 24);
    let (alice, fan) = (customer("alice"), customer("fan"));
    let alices = sale.admit(&alice);
    let until = sale.now() + SESSION;
    sale.admissions.admit(&sale.event, &fan, until);
    let fans =
        access_token::issue_in_group(&sale.key, &sale.event, &fan, until, Some(&fanclub), None);
    let before = sale.ledger.snapshot();

    // Admitted through the general line: refused, by id or best available, nothing written.
    let by_id = sale.hold(&alice, &alices, &["F1-1", "B1-1"]).await;
    assert_eq!(
        refusal(&by_id),
        (StatusCode::CONFLICT, "seats_reserved".to_owned())
    );
    assert_eq!(body(&by_id)["error"]["seatIds"], json!(["F1-1"]));
    let best = sale.hold_best(&alice, &alices, "Floor", 2).await;
    assert_eq!(
        refusal(&best),
        (StatusCode::CONFLICT, "seats_reserved".to_owned())
    );
    // Admitted through another group's line: refused too.
    let carol = customer("carol");
    sale.admissions.admit(&sale.event, &carol, until);
    let card = GroupName::parse("card").unwrap();
    let carols =
        access_token::issue_in_group(&sale.key, &sale.event, &carol, until, Some(&card), None);
    let other_group = sale.hold(&carol, &carols, &["F2-1"]).await;
    assert_eq!(
        refusal(&other_group),
        (StatusCode::CONFLICT, "seats_reserved".to_owned())
    );
    assert_eq!(
        sale.ledger.snapshot(),
        before,
        "a refused hold wrote something"
    );

    // Admitted through the fan club's line: held.
    let held = sale.hold(&fan, &fans, &["F1-1", "F1-2"]).await;
    assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));

    // The window ends: anyone may hold the rest.
    sale.clock.advance(Duration::from_secs(600));
    let alices = sale.admit(&alice);
    let after = sale.hold_best(&alice, &alices, "Floor", 2).await;
    assert_eq!(after.status(), StatusCode::CREATED, "{}", body(&after));
}

#[tokio::test]
async fn a_seeding_writes_each_seat_with_its_sections_allocation() {
    let sale = Sale::new().await;
    let until = sale.now() + Duration::from_secs(600);
    let groups = PriorityGroups::new(vec![PriorityGroup {
        name: GroupName::parse("fanclub").unwrap(),
        membership: Membership::List,
        opens_at: sale.now(),
        closes_at: Some(until),
        ticket_limit: None,
        sections: vec!["Balcony".into()],
    }])
    .unwrap();
    let allocations = SeatAllocations::of(&groups);
    // A re-seeding with a Balcony seat held: every Balcony seat is set aside, the held one
    // included (it keeps its hold), and no Floor seat is.
    sale.held(&customer("bob"), &["B1-1"]).await;
    sale.ledger
        .seed_seats(&sale.event, &sale.layout, &allocations, sale.now())
        .await
        .unwrap();
    let stored = sale.ledger.snapshot();
    for (_, seat) in sale.layout.seats() {
        let reserved = stored.seats[&(sale.event.clone(), seat.seat_id.clone())]
            .reserved
            .clone();
        let expected =
            (seat.section == "Balcony").then(|| ("fanclub".to_owned(), unix_millis(until)));
        assert_eq!(reserved, expected, "{}", seat.seat_id.as_str());
    }
    assert_eq!(sale.seat_status("B1-1"), SeatStatus::Held);
    // Seeded again without the allocation: every mark is gone, the held seat's too.
    sale.ledger
        .seed_seats(
            &sale.event,
            &sale.layout,
            &SeatAllocations::default(),
            sale.now(),
        )
        .await
        .unwrap();
    assert!(sale
        .ledger
        .snapshot()
        .seats
        .values()
        .all(|seat| seat.reserved.is_none()));
}

#[tokio::test]
async fn unknown_seats_are_named_in_a_400() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let response = sale.hold(&alice, &token, &["F1-2", "Z-99"]).await;

    assert_eq!(
        refusal(&response),
        (StatusCode::BAD_REQUEST, "unknown_seats".to_owned())
    );
    assert_eq!(body(&response)["error"]["seatIds"], json!(["Z-99"]));
    assert_eq!(sale.ledger.calls("hold"), 0, "refused before the ledger");
    assert_eq!(sale.seat_status("F1-2"), SeatStatus::Available);
}

#[tokio::test]
async fn the_same_seat_twice_is_refused() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let response = sale.hold(&alice, &token, &["F1-2", "F1-3", "F1-2"]).await;

    assert_eq!(
        refusal(&response),
        (StatusCode::BAD_REQUEST, "duplicate_seats".to_owned())
    );
    assert_eq!(sale.ledger.calls("hold"), 0);
}

#[tokio::test]
async fn more_than_four_seats_are_refused() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let five = sale
        .hold(&alice, &token, &["F1-1", "F1-2", "F1-3", "F1-4", "F1-5"])
        .await;
    let five_together = sale.hold_best(&alice, &token, "Floor", 5).await;
    let four = sale
        .hold(&alice, &token, &["F1-1", "F1-2", "F1-3", "F1-4"])
        .await;

    assert_eq!(
        refusal(&five),
        (StatusCode::BAD_REQUEST, "too_many_seats".to_owned())
    );
    assert_eq!(
        refusal(&five_together),
        (StatusCode::BAD_REQUEST, "invalid_quantity".to_owned())
    );
    assert_eq!(
        four.status(),
        StatusCode::CREATED,
        "four is the most, not too many"
    );
    assert_eq!(sale.ledger.calls("hold"), 1);
}

#[tokio::test]
async fn malformed_bodies_are_refused_before_any_write() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let before = sale.ledger.snapshot();
    let cases = [
        (json!({ "seatIds": [] }), "no_seats"),
        (json!({ "seatIds": ["F1 1"] }), "invalid_seat_id"),
        (json!({ "seatIds": [7] }), "invalid_seat_id"),
        (json!({ "seatIds": "F1-1" }), "invalid_body"),
        (json!({ "seats": ["F1-1"] }), "invalid_body"),
        (
            json!({ "seatIds": ["F1-1"], "section": "Floor", "quantity": 1 }),
            "invalid_body",
        ),
        (
            json!({ "section": "Floor", "quantity": 0 }),
            "invalid_quantity",
        ),
        (
            json!({ "section": "Floor", "quantity": 1.5 }),
            "invalid_quantity",
        ),
        (json!({ "section": "Floor" }), "invalid_quantity"),
        (json!({ "section": "", "quantity": 1 }), "invalid_section"),
        (
            json!({ "section": "Stalls", "quantity": 1 }),
            "unknown_section",
        ),
        (json!("F1-1"), "invalid_body"),
    ];
    for (request_body, code) in cases {
        let response = sale
            .send(sale.hold_request(Some(&alice), Some(&token), &request_body))
            .await;
        assert_eq!(
            refusal(&response),
            (StatusCode::BAD_REQUEST, code.to_owned()),
            "{request_body}"
        );
    }
    let mut not_json = api_event(HOLD_SAMPLE, &[("eventId", "spring-gala")], Some(&alice));
    not_json["headers"]["x-queue-token"] = token.as_str().into();
    not_json["body"] = "{\"seatIds\": [".into();
    let response = sale.send(to_request(&not_json)).await;
    assert_eq!(
        refusal(&response),
        (StatusCode::BAD_REQUEST, "invalid_json".to_owned())
    );
    assert_eq!(sale.ledger.calls("hold"), 0);
    assert_eq!(sale.ledger.snapshot(), before);
}

// --- The caller and their access token ---

#[tokio::test]
async fn a_missing_malformed_forged_or_expired_token_is_refused() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let forger = SigningKey::new(vec![8u8; 32]).unwrap();
    let forged = access_token::issue(&forger, &sale.event, &alice, sale.now() + SESSION);
    let expired = sale.token(&alice, sale.now() - Duration::from_secs(1));
    let seats = json!({ "seatIds": ["F1-1"] });

    // The sample's placeholder token, as sent before a poll filled it in.
    let sample = to_request(&api_event(
        HOLD_SAMPLE,
        &[("eventId", "spring-gala")],
        Some(&alice),
    ));
    let cases = [
        ("no token", sale.hold_request(Some(&alice), None, &seats)),
        ("placeholder", sample),
        (
            "garbage",
            sale.hold_request(Some(&alice), Some("v2.x.y.z"), &seats),
        ),
        (
            "forged",
            sale.hold_request(Some(&alice), Some(&forged), &seats),
        ),
        (
            "expired",
            sale.hold_request(Some(&alice), Some(&expired), &seats),
        ),
    ];
    for (name, request) in cases {
        let response = sale.send(request).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::FORBIDDEN, "access_denied".to_owned()),
            "{name}"
        );
    }
    let no_jwt = sale
        .send(sale.hold_request(None, Some(&token), &seats))
        .await;
    assert_eq!(
        refusal(&no_jwt),
        (StatusCode::UNAUTHORIZED, "unauthenticated".to_owned())
    );
    assert_eq!(
        sale.admissions.calls("live_admission"),
        0,
        "a token that does not verify costs no queue lookup"
    );
    assert_eq!(sale.ledger.calls("hold"), 0);
}

#[tokio::test]
async fn someone_elses_token_or_another_events_is_refused() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    sale.admit(&alice);
    let bobs_token = sale.admit(&bob);
    let other_event = EventId::parse("autumn-gala").unwrap();
    let other_events_token =
        access_token::issue(&sale.key, &other_event, &alice, sale.now() + SESSION);

    for (name, token) in [
        ("bob's", &bobs_token),
        ("another event's", &other_events_token),
    ] {
        let response = sale.hold(&alice, token, &["F1-1"]).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::FORBIDDEN, "access_denied".to_owned()),
            "{name}"
        );
    }
    assert_eq!(sale.ledger.calls("hold"), 0);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Available);
}

#[tokio::test]
async fn a_cancelled_event_refuses_every_hold_even_from_a_live_admission() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    sale.admissions.cancel_event(&sale.event);

    let response = sale.hold(&alice, &token, &["F1-1"]).await;
    assert_eq!(
        refusal(&response),
        (StatusCode::CONFLICT, "event_cancelled".to_owned())
    );
    // Nothing written: the ledger was never asked.
    assert_eq!(sale.ledger.calls("hold"), 0);
}

#[tokio::test]
async fn a_revoked_admission_is_refused_though_its_token_verifies() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    let alices = sale.admit(&alice);
    let bobs = sale.admit(&bob);
    // Alice was admitted again since (a newer admission replaces the one her token names); Bob
    // left the queue.
    sale.clock.advance(Duration::from_secs(30));
    let newer = sale.admit(&alice);
    sale.admissions.remove(&sale.event, &bob);

    for (who, token) in [(&alice, &alices), (&bob, &bobs)] {
        let response = sale.hold(who, token, &["F1-1"]).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::FORBIDDEN, "access_denied".to_owned()),
            "{who:?}"
        );
    }
    assert_eq!(sale.admissions.calls("live_admission"), 2);
    assert_eq!(sale.ledger.calls("hold"), 0);
    // The newer admission's token works.
    let response = sale.hold(&alice, &newer, &["F1-1"]).await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

// --- One open hold, the ticket limit, prices ---

#[tokio::test]
async fn a_second_hold_names_the_open_order_and_a_retry_gets_it_back() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let first = sale.hold(&alice, &token, &["F1-1", "F1-2"]).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = body(&first);

    // The same seats again (a retry after a lost answer): the same order, not a 409.
    let retried = sale.hold(&alice, &token, &["F1-2", "F1-1"]).await;
    assert_eq!(retried.status(), StatusCode::CREATED);
    assert_eq!(body(&retried), first);

    // Other seats, or her own with more: 409 naming her open order (her own seats are not
    // reported as taken).
    for seats in [&["F2-1"][..], &["F1-1", "F1-2", "F1-3"]] {
        let response = sale.hold(&alice, &token, seats).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::CONFLICT, "hold_exists".to_owned()),
            "{seats:?}"
        );
        assert_eq!(body(&response)["error"]["orderId"], first["orderId"]);
        assert!(body(&response)["error"].get("seatIds").is_none());
    }
    assert_eq!(sale.ledger.orders().len(), 1);
    assert_eq!(sale.seat_status("F2-1"), SeatStatus::Available);
}

#[tokio::test]
async fn once_her_hold_lapsed_she_may_hold_again() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let first = sale.hold(&alice, &token, &["F1-1"]).await;
    let first = body(&first);

    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let second = sale.hold(&alice, &token, &["F1-1", "F1-2"]).await;

    assert_eq!(second.status(), StatusCode::CREATED, "{}", body(&second));
    let second = body(&second);
    assert_ne!(second["orderId"], first["orderId"]);
    assert_eq!(
        sale.held_by("F1-1").as_deref(),
        second["orderId"].as_str(),
        "a lapsed hold's seat is taken again without waiting for the sweep"
    );
    assert_eq!(
        sale.order(first["orderId"].as_str().unwrap()).status,
        OrderStatus::Pending,
        "the lapsed order is the sweep's to expire"
    );
}

#[tokio::test]
async fn the_ticket_limit_counts_the_seats_already_bought() {
    let sale = Sale::with_limit(Some(3)).await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    sale.ledger.set_paid_seats(&sale.event, &alice, 2);
    let before = sale.ledger.snapshot();

    let two_more = sale.hold(&alice, &token, &["F1-1", "F1-2"]).await;

    assert_eq!(
        refusal(&two_more),
        (StatusCode::CONFLICT, "ticket_limit_reached".to_owned())
    );
    assert!(
        body(&two_more)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 3"),
        "{}",
        body(&two_more)
    );
    assert_eq!(sale.ledger.snapshot(), before);
    let one_more = sale.hold(&alice, &token, &["F1-1"]).await;
    assert_eq!(one_more.status(), StatusCode::CREATED);
    let order = sale.order(body(&one_more)["orderId"].as_str().unwrap());
    assert_eq!(
        order.ticket_limit,
        Some(3),
        "the order keeps the limit it was held under"
    );
}

#[tokio::test]
async fn a_hold_past_the_ticket_limit_by_itself_is_refused() {
    let sale = Sale::with_limit(Some(2)).await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let before = sale.ledger.snapshot();

    let exact = sale.hold(&alice, &token, &["F1-1", "F1-2", "F1-3"]).await;
    let together = sale.hold_best(&alice, &token, "Floor", 3).await;

    for response in [&exact, &together] {
        assert_eq!(
            refusal(response),
            (StatusCode::CONFLICT, "ticket_limit_reached".to_owned())
        );
    }
    assert_eq!(sale.ledger.snapshot(), before);
}

#[tokio::test]
async fn a_changed_price_is_refused_and_the_layout_read_again() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    // The seats are re-priced behind this instance's back (its layout still says 12,000).
    sale.ledger.seed(&sale.event, &venue(15_000));
    let before = sale.ledger.snapshot();

    let response = sale.hold(&alice, &token, &["F1-1", "B1-1"]).await;

    assert_eq!(
        refusal(&response),
        (StatusCode::CONFLICT, "price_changed".to_owned())
    );
    assert_eq!(
        body(&response)["error"]["seatIds"],
        json!(["F1-1"]),
        "only the repriced seat is named"
    );
    assert_eq!(
        sale.ledger.snapshot(),
        before,
        "never held at the old price"
    );
    // The instance forgot the current layout: the next hold reads it again.
    let summaries = sale.seat_map.calls("summary");
    sale.hold(&alice, &token, &["B1-1"]).await;
    assert_eq!(sale.seat_map.calls("summary"), summaries + 1);
}

// --- Best available ---

#[tokio::test]
async fn best_available_holds_the_middle_of_the_front_row() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let response = sale.hold_best(&alice, &token, "Floor", 2).await;

    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        body(&response)
    );
    let order = body(&response);
    assert_eq!(order["seatIds"], json!(["F1-4", "F1-5"]));
    assert_eq!(order["amount"], 24_000);
    for id in ["F1-4", "F1-5"] {
        assert_eq!(sale.held_by(id).as_deref(), order["orderId"].as_str());
    }
    let balcony = sale
        .hold_best(
            &customer("bob"),
            &sale.admit(&customer("bob")),
            "Balcony",
            3,
        )
        .await;
    assert_eq!(body(&balcony)["seatIds"], json!(["B1-1", "B1-2", "B1-3"]));
    assert_eq!(body(&balcony)["amount"], 24_000);
}

#[tokio::test]
async fn best_available_spreads_callers_without_conflicts() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    let (alices, bobs) = (sale.admit(&alice), sale.admit(&bob));

    // The seat map is a stream behind (it never hears of these holds here): the instance
    // remembers what its own holds took.
    let first = body(&sale.hold_best(&alice, &alices, "Floor", 2).await);
    let second = body(&sale.hold_best(&bob, &bobs, "Floor", 2).await);

    assert_eq!(seats_of(&first), ["F1-4", "F1-5"]);
    let second = seats_of(&second);
    assert!(together(&second), "{second:?}");
    assert!(second
        .iter()
        .all(|id| !["F1-4", "F1-5"].contains(&id.as_str())));
    assert_eq!(sale.ledger.calls("hold"), 2, "no conflict, no retry");
}

#[tokio::test]
async fn concurrent_best_available_callers_get_disjoint_blocks() {
    let sale = Sale::new().await;
    let customers: Vec<CustomerId> = (1..=6).map(|n| customer(&format!("fan-{n}"))).collect();
    let tokens: Vec<String> = customers.iter().map(|who| sale.admit(who)).collect();

    let answers = join_all(
        customers
            .iter()
            .zip(&tokens)
            .map(|(who, token)| sale.hold_best(who, token, "Floor", 2)),
    )
    .await;

    let mut all = Vec::new();
    for answer in &answers {
        assert_eq!(answer.status(), StatusCode::CREATED, "{}", body(answer));
        let seats = seats_of(&body(answer));
        assert!(together(&seats), "{seats:?}");
        all.extend(seats);
    }
    let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), 12, "a seat held twice: {all:?}");
    assert_eq!(
        sale.ledger.seats_in(&sale.event, SeatStatus::Held).len(),
        12
    );
}

#[tokio::test]
async fn best_available_tries_elsewhere_after_a_conflict() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    // Bob took the best block through another instance; the seat map does not show it yet.
    sale.hold_behind_the_map(&bob, &["F1-4", "F1-5"]).await;
    let token = sale.admit(&alice);

    let response = sale.hold_best(&alice, &token, "Floor", 2).await;

    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        body(&response)
    );
    let seats = seats_of(&body(&response));
    assert!(together(&seats), "{seats:?}");
    assert!(
        seats.iter().all(|id| id != "F1-4" && id != "F1-5"),
        "{seats:?}"
    );
    assert_eq!(
        sale.ledger.calls("hold"),
        1 + 2,
        "Bob's, then Alice's conflict and retry"
    );
    assert_eq!(sale.ledger.orders().len(), 2);
}

#[tokio::test]
async fn best_available_gives_up_after_four_conflicts() {
    let sale = Sale::new().await;
    // The whole Floor held through other instances, the seat map still showing it free.
    for row in 1..=3 {
        for half in [1, 5] {
            let seats: Vec<String> = (half..half + 4).map(|n| format!("F{row}-{n}")).collect();
            let seats: Vec<&str> = seats.iter().map(String::as_str).collect();
            sale.hold_behind_the_map(&customer(&format!("other-{row}-{half}")), &seats)
                .await;
        }
    }
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let calls = sale.ledger.calls("hold");

    let response = sale.hold_best(&alice, &token, "Floor", 2).await;

    assert_eq!(
        refusal(&response),
        (StatusCode::CONFLICT, "seats_unavailable".to_owned())
    );
    assert_eq!(
        body(&response)["error"]["seatIds"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        sale.ledger.calls("hold") - calls,
        hold::BEST_AVAILABLE_ATTEMPTS
    );
    assert!(sale.ledger.hold_lock(&sale.event, &alice).is_none());
}

#[tokio::test]
async fn best_available_with_no_row_free_enough_is_409() {
    let sale = Sale::new().await;
    // B1-2 (index 25) shows held: the Balcony's row of four has no three together.
    sale.seat_map.show(&sale.event, 25, SeatStatus::Held);
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let three = sale.hold_best(&alice, &token, "Balcony", 3).await;

    assert_eq!(
        refusal(&three),
        (StatusCode::CONFLICT, "no_seats_together".to_owned())
    );
    assert_eq!(sale.ledger.calls("hold"), 0, "nothing tried");
    let two = sale.hold_best(&alice, &token, "Balcony", 2).await;
    assert_eq!(body(&two)["seatIds"], json!(["B1-3", "B1-4"]));
}

#[tokio::test]
async fn seats_shown_free_but_all_taken_end_in_no_seats_together() {
    let sale = Sale::new().await;
    sale.hold_behind_the_map(&customer("bob"), &["B1-1", "B1-2", "B1-3", "B1-4"])
        .await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let response = sale.hold_best(&alice, &token, "Balcony", 2).await;

    // The first block's conflict names both seats; no block is left without them.
    assert_eq!(
        refusal(&response),
        (StatusCode::CONFLICT, "no_seats_together".to_owned())
    );
    assert_eq!(sale.ledger.calls("hold"), 1 + 1);
}

#[tokio::test]
async fn after_a_seat_map_loss_exact_holds_go_on_and_best_available_waits() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    let lookups = sale.records.calls("current_layout");
    // The bitsets lost (being rebuilt), then the whole cache.
    sale.seat_map.drop_bitsets(&sale.event);
    let rebuilding = sale.hold_best(&alice, &token, "Floor", 2).await;
    sale.seat_map.flush();
    let lost = sale.hold_best(&alice, &token, "Floor", 2).await;

    for response in [&rebuilding, &lost] {
        assert_eq!(
            refusal(response),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "availability_rebuilding".to_owned()
            )
        );
        assert_eq!(retry_after(response), Some(2));
    }
    assert_eq!(sale.ledger.calls("hold"), 0);
    assert_eq!(
        sale.records.calls("current_layout") - lookups,
        1,
        "the lost layout was looked up in the events table"
    );
    // An exact hold finds the layout in the events table (503 while that cannot be read).
    sale.records.fail_next(1);
    let records_down = sale.hold(&alice, &token, &["F2-2"]).await;
    assert_eq!(
        refusal(&records_down),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable".to_owned()
        )
    );
    let exact = sale.hold(&alice, &token, &["F2-2"]).await;
    assert_eq!(exact.status(), StatusCode::CREATED, "{}", body(&exact));
}

#[tokio::test]
async fn after_a_queue_restore_an_admission_claimed_before_it_still_holds() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    // Alice claimed her admission a minute before the cache lost the event; it is back from
    // the durable record now, with nobody in its active set.
    let alices = sale.token(&alice, sale.now() + SESSION - Duration::from_secs(60));
    sale.admissions
        .restore_event(&sale.event, None, sale.now(), SESSION);
    // A token naming an admission claimed after the restore proves nothing the cache forgot.
    let bobs = sale.token(&bob, sale.now() + SESSION + Duration::from_secs(1));

    let alices_hold = sale.hold(&alice, &alices, &["F1-1"]).await;
    let bobs_hold = sale.hold(&bob, &bobs, &["F1-2"]).await;

    assert_eq!(
        alices_hold.status(),
        StatusCode::CREATED,
        "{}",
        body(&alices_hold)
    );
    assert_eq!(
        refusal(&bobs_hold),
        (StatusCode::FORBIDDEN, "access_denied".to_owned())
    );
    assert!(
        sale.admissions
            .admitted_until(&sale.event, &alice)
            .is_some(),
        "her admission is back in the active set"
    );
}

#[tokio::test]
async fn an_event_without_seats_is_404() {
    let sale = Sale::new().await;
    let event = EventId::parse("no-seats").unwrap();
    sale.admissions.open_event(&event, None);
    let alice = customer("alice");
    let until = sale.now() + SESSION;
    sale.admissions.admit(&event, &alice, until);
    let token = access_token::issue(&sale.key, &event, &alice, until);

    for request_body in [
        json!({ "seatIds": ["F1-1"] }),
        json!({ "section": "Floor", "quantity": 1 }),
    ] {
        let mut request = api_event(HOLD_SAMPLE, &[("eventId", "no-seats")], Some(&alice));
        request["headers"]["x-queue-token"] = token.as_str().into();
        request["body"] = request_body.to_string().into();
        let response = sale.send(to_request(&request)).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::NOT_FOUND, "event_not_found".to_owned()),
            "{request_body}"
        );
    }
    assert_eq!(sale.ledger.calls("hold"), 0);
}

// --- Release and order status ---

#[tokio::test]
async fn a_release_gives_the_seats_back_once() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1", "F1-2"]).await;
    let order_id = order["orderId"].as_str().unwrap();
    sale.held(&customer("bob"), &["F1-3"]).await;

    let released = sale.send(sale.release_request(&alice, order_id)).await;

    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    assert_eq!(body(&released), Value::Null);
    assert_eq!(sale.order(order_id).status, OrderStatus::Released);
    for id in ["F1-1", "F1-2"] {
        assert_eq!(sale.seat_status(id), SeatStatus::Available, "{id}");
        assert_eq!(sale.held_by(id), None);
    }
    assert_eq!(
        sale.seat_status("F1-3"),
        SeatStatus::Held,
        "Bob's hold is his"
    );
    assert!(sale.ledger.hold_lock(&sale.event, &alice).is_none());

    let again = sale.send(sale.release_request(&alice, order_id)).await;
    assert_eq!(
        refusal(&again),
        (StatusCode::CONFLICT, "order_not_pending".to_owned())
    );
    // Her lock went with the release: she may hold again at once, under the same admission.
    let token = sale.token(&alice, sale.now() + SESSION);
    assert_eq!(
        sale.hold(&alice, &token, &["F1-2"]).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn someone_elses_order_is_not_found() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();
    let before = sale.ledger.snapshot();

    let by_bob = sale.send(sale.release_request(&bob, order_id)).await;
    let status_by_bob = sale.send(sale.order_request(&bob, order_id)).await;
    let other_event = api_event(
        RELEASE_SAMPLE,
        &[("eventId", "autumn-gala"), ("orderId", order_id)],
        Some(&alice),
    );
    let under_another_event = sale.send(to_request(&other_event)).await;

    for (name, response) in [
        ("Bob's release", &by_bob),
        ("Bob's look-up", &status_by_bob),
        ("another event's path", &under_another_event),
    ] {
        assert_eq!(
            refusal(response),
            (StatusCode::NOT_FOUND, "not_found".to_owned()),
            "{name}"
        );
    }
    assert_eq!(sale.ledger.calls("release"), 0);
    assert_eq!(sale.ledger.snapshot(), before);
}

#[tokio::test]
async fn an_order_status_is_its_owners() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["B1-1", "B1-2"]).await;
    let order_id = order["orderId"].as_str().unwrap();

    let own = sale.send(sale.order_request(&alice, order_id)).await;
    let unknown = sale
        .send(sale.order_request(&alice, "7d5c9a8e-1f0b-4a3c-9e2d-6b8a7c5d4e3f"))
        .await;
    let malformed = sale.send(sale.order_request(&alice, "not-a-uuid")).await;

    assert_eq!(own.status(), StatusCode::OK);
    assert_eq!(body(&own), order, "the order as the hold answered it");
    assert_eq!(
        refusal(&unknown),
        (StatusCode::NOT_FOUND, "not_found".to_owned())
    );
    assert_eq!(
        refusal(&malformed),
        (StatusCode::BAD_REQUEST, "invalid_order_id".to_owned())
    );
    sale.send(sale.release_request(&alice, order_id)).await;
    let after = sale.send(sale.order_request(&alice, order_id)).await;
    assert_eq!(body(&after)["status"], "RELEASED");
}

#[tokio::test]
async fn an_unreadable_order_is_a_500_that_tells_nothing() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();
    sale.ledger
        .corrupt_order(&OrderId::parse(order_id).unwrap());

    let response = sale.send(sale.order_request(&alice, order_id)).await;

    assert_eq!(
        refusal(&response),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error".to_owned()
        )
    );
    assert_eq!(
        body(&response)["error"]["message"],
        "something went wrong on our side"
    );
    assert_eq!(retry_after(&response), None);
}

// --- Outages and limits of the route ---

#[tokio::test]
async fn a_ledger_outage_is_503_with_retry_after_and_writes_nothing() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let held = sale.held(&customer("bob"), &["F1-1"]).await;
    let before = sale.ledger.snapshot();
    sale.ledger.go_down();

    let hold = sale.hold(&alice, &token, &["F1-2"]).await;
    let best = sale.hold_best(&alice, &token, "Floor", 2).await;
    let status = sale
        .send(sale.order_request(&customer("bob"), held["orderId"].as_str().unwrap()))
        .await;
    for response in [&hold, &best, &status] {
        assert_eq!(
            refusal(response),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "service_unavailable".to_owned()
            )
        );
        assert_eq!(retry_after(response), Some(2));
    }
    sale.ledger.come_back();
    assert_eq!(sale.ledger.snapshot(), before);
    assert!(
        sale.admissions
            .admitted_until(&sale.event, &alice)
            .is_some(),
        "the admission is kept for the retry"
    );
    let retried = sale.hold(&alice, &token, &["F1-2"]).await;
    assert_eq!(retried.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn a_queue_or_seat_map_outage_or_a_lost_event_is_503() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);

    sale.admissions.fail_next(1);
    let queue_down = sale.hold(&alice, &token, &["F1-1"]).await;
    sale.seat_map.go_down();
    let seat_map_down = sale.hold(&alice, &token, &["F1-1"]).await;
    sale.seat_map.come_back();
    sale.admissions.forget_event(&sale.event);
    let event_lost = sale.hold(&alice, &token, &["F1-1"]).await;

    assert_eq!(
        refusal(&queue_down),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable".to_owned()
        )
    );
    assert_eq!(
        refusal(&seat_map_down),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable".to_owned()
        )
    );
    assert_eq!(
        refusal(&event_lost),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "queue_recovering".to_owned()
        )
    );
    for response in [&queue_down, &seat_map_down, &event_lost] {
        assert_eq!(retry_after(response), Some(2));
    }
    assert_eq!(sale.ledger.calls("hold"), 0);
    assert!(sale.ledger.orders().is_empty());
}

#[tokio::test]
async fn a_body_too_large_or_an_unknown_route_is_refused_before_anything_is_read() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let token = sale.admit(&alice);
    let huge = json!({ "seatIds": ["F1-1"], "padding": "x".repeat(HOLD_BODY_LIMIT) });

    let too_large = sale
        .send(sale.hold_request(Some(&alice), Some(&token), &huge))
        .await;
    let mut unknown = api_event(HOLD_SAMPLE, &[("eventId", "spring-gala")], Some(&alice));
    unknown["routeKey"] = "PUT /events/{eventId}/holds".into();
    unknown["requestContext"]["routeKey"] = "PUT /events/{eventId}/holds".into();
    let unknown_route = sale.send(to_request(&unknown)).await;

    assert_eq!(
        refusal(&too_large),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large".to_owned())
    );
    assert_eq!(
        refusal(&unknown_route),
        (StatusCode::NOT_FOUND, "route_not_found".to_owned())
    );
    assert_eq!(sale.admissions.calls("live_admission"), 0);
    assert_eq!(sale.ledger.calls("hold"), 0);
}
