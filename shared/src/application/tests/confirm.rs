//! The payment webhook's decisions over the in-memory fakes: a signed payment settles its order
//! exactly once (PAID, seats SOLD, one outbox event, the admission ended), repetitions get the
//! first answer, money that cannot buy the order is recorded for a refund, and unsigned, stale,
//! oversized or mismatched requests are refused with nothing stored. The requests are
//! `events/confirm.json` pointed at orders held through the `hold` handler (see
//! [`super::hold::Sale`]), as `tests/payments.rs` sends them against real stores.

use std::time::Duration;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::{json, Value};

use super::hold::{api_event, body, customer, refusal, retry_after, to_request, Sale};
use crate::application::confirm::{self, ConfirmApi};
use crate::application::fakes::outage::Faulty;
use crate::application::ports::ledger::{HoldSweeper, OrderStatus, PaymentOutcome, HOLD_DURATION};
use crate::application::ports::outbox::OutboxEventKind;
use crate::domain::clock::rfc3339;
use crate::domain::ids::{CustomerId, OrderId};
use crate::domain::seat::SeatStatus;
use crate::domain::webhook_signature::{WebhookSecret, MAX_BODY};

const CONFIRM_SAMPLE: &str = include_str!("../../../../events/confirm.json");
const BAD_SIGNATURE_SAMPLE: &str = include_str!("../../../../events/confirm-bad-signature.json");

/// The secret shared with the payment provider.
fn secret() -> WebhookSecret {
    WebhookSecret::new(vec![9u8; 32]).unwrap()
}

/// The webhook handler as the `confirm` function builds it, over the sale's fakes.
pub(super) fn confirm_api(sale: &Sale) -> ConfirmApi {
    ConfirmApi {
        ledger: sale.ledger.clone(),
        holds: sale.ledger.clone(),
        refunds: sale.ledger.clone(),
        admissions: sale.admissions.clone(),
        limits: sale.admissions.clone(),
        secret: secret().into(),
        stripe_secret: None,
        clock: sale.clock.clone(),
    }
}

/// The provider's body: `payment_id` of `amount` KRW for `order_id`.
fn payment(order_id: &str, payment_id: &str, amount: i64) -> String {
    json!({
        "orderId": order_id,
        "paymentId": payment_id,
        "amount": amount,
        "currency": "KRW",
    })
    .to_string()
}

/// `POST /orders/{orderId}/confirm` with exactly these headers (`None`: left out).
fn webhook(
    path_order: &str,
    idempotency_key: Option<&str>,
    body: &str,
    signature: Option<&str>,
) -> Request {
    let mut event = api_event(CONFIRM_SAMPLE, &[("orderId", path_order)], None);
    event["body"] = body.into();
    let headers = event["headers"].as_object_mut().expect("headers");
    for (name, value) in [
        ("idempotency-key", idempotency_key),
        ("lineup-signature", signature),
    ] {
        match value {
            Some(value) => headers.insert(name.to_owned(), value.into()),
            None => headers.remove(name),
        };
    }
    to_request(&event)
}

/// A webhook signed now with the provider's secret.
fn signed(sale: &Sale, path_order: &str, idempotency_key: &str, body: &str) -> Request {
    let signature = secret().sign(sale.now(), body.as_bytes());
    webhook(path_order, Some(idempotency_key), body, Some(&signature))
}

async fn send(sale: &Sale, request: Request) -> Response<Body> {
    confirm::handle(&confirm_api(sale), request).await
}

/// Pays `order_id` with `payment_id` under the idempotency key `key`.
pub(super) async fn pay(
    sale: &Sale,
    order_id: &str,
    key: &str,
    payment_id: &str,
    amount: i64,
) -> Response<Body> {
    let body = payment(order_id, payment_id, amount);
    send(sale, signed(sale, order_id, key, &body)).await
}

/// An on-sale where `alice` holds `seats`: the sale, alice, her order id and its amount.
pub(super) async fn held(seats: &[&str]) -> (Sale, CustomerId, String, i64) {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, seats).await;
    let order_id = order["orderId"].as_str().unwrap().to_owned();
    let amount = order["amount"].as_i64().unwrap();
    (sale, alice, order_id, amount)
}

fn paid(order_id: &str) -> Value {
    json!({ "orderId": order_id, "status": "PAID" })
}

#[tokio::test]
async fn a_signed_payment_pays_sells_and_writes_one_outbox_event() {
    let (sale, alice, order_id, amount) = held(&["F1-1", "F1-2"]).await;
    assert_eq!(amount, 24_000);

    let response = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;

    assert_eq!(response.status(), StatusCode::OK, "{}", body(&response));
    assert_eq!(body(&response), paid(&order_id));
    assert_eq!(sale.order(&order_id).status, OrderStatus::Paid);
    for id in ["F1-1", "F1-2"] {
        assert_eq!(sale.seat_status(id), SeatStatus::Sold, "{id}");
        assert_eq!(sale.held_by(id).as_deref(), Some(order_id.as_str()));
    }
    let outbox = sale.ledger.outbox();
    assert_eq!(outbox.len(), 1);
    let ticket = &outbox[0];
    assert_eq!(ticket.kind, OutboxEventKind::TicketIssued);
    assert_eq!(ticket.outbox_id, format!("ticket-{order_id}"));
    assert_eq!(
        (ticket.order_id.as_str(), ticket.customer_id.as_str()),
        (order_id.as_str(), "alice")
    );
    assert_eq!(ticket.seat_ids, ["F1-1", "F1-2"]);
    assert_eq!((ticket.amount, ticket.currency.as_str()), (24_000, "KRW"));
    assert_eq!(ticket.payment_id.as_deref(), Some("pay_1"));
    assert_eq!(ticket.occurred_at, rfc3339(sale.now()));
    assert_eq!(sale.ledger.paid_seats(&sale.event, &alice), Some(2));
    // The sale was one write: the hold lock it leaves behind names the paid order, and her
    // next hold frees it (she may hold again at once).
    assert_eq!(
        sale.ledger
            .hold_lock(&sale.event, &alice)
            .map(|lock| lock.order_id),
        Some(order_id.clone())
    );

    assert_eq!(
        sale.ledger.payments()["pay_1"].outcome,
        PaymentOutcome::Paid
    );
    let record = &sale.ledger.idempotency_records()["evt_1"];
    assert_eq!(
        (record.order_id.as_str(), record.outcome),
        (order_id.as_str(), PaymentOutcome::Paid)
    );
    assert_eq!(record.request_digest.len(), 64, "a SHA-256 of the request");
    assert_eq!(
        sale.admissions.admitted_until(&sale.event, &alice),
        None,
        "paying frees her slot for the next in the queue"
    );
    let again = sale.held(&alice, &["F1-3"]).await;
    assert_eq!(again["seatIds"], json!(["F1-3"]));
}

#[tokio::test]
async fn a_repeated_webhook_gets_the_first_answer_and_changes_nothing() {
    let (sale, alice, order_id, amount) = held(&["F1-1", "F1-2"]).await;
    let first = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;
    assert_eq!(body(&first), paid(&order_id));
    // Admitted again, with an admission ending at the very same time (the worst case for a
    // replay that would end it).
    sale.admit(&alice);
    let after_first = sale.ledger.snapshot();

    let replay = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;
    let redelivery = pay(&sale, &order_id, "evt_2", "pay_1", amount).await;

    for (name, response) in [("replay", &replay), ("redelivery", &redelivery)] {
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        assert_eq!(body(response), paid(&order_id), "{name}");
    }
    assert_eq!(
        sale.ledger.snapshot(),
        after_first,
        "a repetition wrote something"
    );
    assert_eq!(
        sale.ledger.outbox().len(),
        1,
        "one ticket for three webhooks"
    );
    assert_eq!(sale.admissions.calls("end_admission"), 1);
    assert!(
        sale.admissions
            .admitted_until(&sale.event, &alice)
            .is_some(),
        "a repetition never ends an admission"
    );
}

#[tokio::test]
async fn the_same_key_with_another_payment_is_409_and_that_payment_is_recorded_for_a_refund() {
    let (sale, _, order_id, amount) = held(&["F1-1"]).await;
    pay(&sale, &order_id, "evt_1", "pay_1", amount).await;
    let before = sale.ledger.snapshot();

    let reused = pay(&sale, &order_id, "evt_1", "pay_2", amount).await;
    let again = pay(&sale, &order_id, "evt_1", "pay_2", amount).await;

    for answer in [&reused, &again] {
        assert_eq!(
            refusal(answer),
            (StatusCode::CONFLICT, "idempotency_key_reused".to_owned())
        );
    }
    // The sale is untouched; the second payment is money, recorded once and to be refunded.
    let after = sale.ledger.snapshot();
    assert_eq!(after.orders, before.orders);
    assert_eq!(after.seats, before.seats);
    assert_eq!(after.idempotency, before.idempotency);
    assert_eq!(
        sale.ledger.payments()["pay_2"].outcome,
        PaymentOutcome::KeyReused
    );
    let refunds: Vec<_> = sale
        .ledger
        .outbox()
        .into_iter()
        .filter(|event| event.kind == OutboxEventKind::RefundRequired)
        .collect();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0].payment_id.as_deref(), Some("pay_2"));
    assert_eq!(refunds[0].amount, amount);
}

#[tokio::test]
async fn a_payment_naming_another_order_than_its_path_is_400() {
    let (sale, _, alices, amount) = held(&["F1-1"]).await;
    let bobs = sale.held(&customer("bob"), &["F1-2"]).await;
    let bobs = bobs["orderId"].as_str().unwrap();
    let before = sale.ledger.snapshot();

    // Alice's signed payment, captured and replayed to Bob's order's URL.
    let body = payment(&alices, "pay_1", amount);
    let response = send(&sale, signed(&sale, bobs, "evt_1", &body)).await;

    assert_eq!(
        refusal(&response),
        (StatusCode::BAD_REQUEST, "order_mismatch".to_owned())
    );
    assert_eq!(sale.ledger.calls("confirm"), 0);
    assert_eq!(sale.ledger.snapshot(), before);
}

#[tokio::test]
async fn a_payment_already_used_for_another_order_is_409() {
    let (sale, _, alices, amount) = held(&["F1-1"]).await;
    let bobs = sale.held(&customer("bob"), &["F1-2"]).await;
    let bobs = bobs["orderId"].as_str().unwrap();
    pay(&sale, &alices, "evt_1", "pay_1", amount).await;
    let before = sale.ledger.snapshot();

    let again = pay(&sale, bobs, "evt_2", "pay_1", amount).await;

    assert_eq!(
        refusal(&again),
        (StatusCode::CONFLICT, "payment_already_used".to_owned())
    );
    assert_eq!(sale.ledger.snapshot(), before, "nothing recorded");
    assert_eq!(sale.order(bobs).status, OrderStatus::Pending);
}

#[tokio::test]
async fn a_wrong_amount_or_currency_is_422_and_recorded_for_refund() {
    let (sale, alice, order_id, amount) = held(&["F1-1", "F1-2"]).await;

    let short = pay(&sale, &order_id, "evt_1", "pay_1", amount - 1).await;
    let short_again = pay(&sale, &order_id, "evt_1", "pay_1", amount - 1).await;
    let euros = json!({
        "orderId": order_id, "paymentId": "pay_2", "amount": amount, "currency": "EUR",
    })
    .to_string();
    let in_euros = send(&sale, signed(&sale, &order_id, "evt_2", &euros)).await;

    for response in [&short, &short_again, &in_euros] {
        assert_eq!(
            refusal(response),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "payment_mismatch".to_owned()
            )
        );
    }
    let refunds = sale.ledger.outbox();
    assert_eq!(refunds.len(), 2, "one refund per payment: {refunds:?}");
    assert!(refunds
        .iter()
        .all(|event| event.kind == OutboxEventKind::RefundRequired && event.seat_ids.is_empty()));
    assert_eq!(
        (refunds[0].payment_id.as_deref(), refunds[0].amount),
        (Some("pay_1"), amount - 1),
        "the money received is what is refunded"
    );
    assert_eq!(refunds[1].currency, "EUR");
    assert_eq!(
        sale.ledger.payments()["pay_1"].outcome,
        PaymentOutcome::AmountMismatch
    );
    // The order is untouched, and can still be paid rightly.
    assert_eq!(sale.order(&order_id).status, OrderStatus::Pending);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Held);
    assert!(sale
        .admissions
        .admitted_until(&sale.event, &alice)
        .is_some());
    let right = pay(&sale, &order_id, "evt_3", "pay_3", amount).await;
    assert_eq!(body(&right), paid(&order_id));
}

#[tokio::test]
async fn a_second_payment_for_a_paid_order_is_recorded_for_refund() {
    let (sale, _, order_id, amount) = held(&["F1-1"]).await;
    pay(&sale, &order_id, "evt_1", "pay_1", amount).await;

    let second = pay(&sale, &order_id, "evt_2", "pay_2", amount).await;
    let second_again = pay(&sale, &order_id, "evt_2", "pay_2", amount).await;

    for response in [&second, &second_again] {
        assert_eq!(
            refusal(response),
            (StatusCode::CONFLICT, "order_not_payable".to_owned())
        );
    }
    let outbox = sale.ledger.outbox();
    assert_eq!(outbox.len(), 2);
    assert_eq!(outbox[1].kind, OutboxEventKind::RefundRequired);
    assert_eq!(outbox[1].payment_id.as_deref(), Some("pay_2"));
    assert_eq!(outbox[1].amount, amount);
    let stored = sale
        .ledger
        .stored_order(&crate::domain::ids::OrderId::parse(&order_id).unwrap())
        .unwrap();
    assert_eq!(stored.order.status, OrderStatus::Paid);
    assert_eq!(stored.payment_id.as_deref(), Some("pay_1"), "settled once");
}

#[tokio::test]
async fn a_payment_for_an_order_open_when_its_event_was_cancelled_is_refunded_not_sold() {
    let (sale, alice, order_id, amount) = held(&["F1-1", "F1-2"]).await;
    let order = OrderId::parse(&order_id).unwrap();
    sale.ledger.cancel_event_of(&order, sale.now());

    let paid_after = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;
    let again = pay(&sale, &order_id, "evt_2", "pay_1", amount).await;

    for answer in [&paid_after, &again] {
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(
            body(answer),
            json!({ "orderId": order_id, "status": "REFUND_REQUIRED" })
        );
    }
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);
    for id in ["F1-1", "F1-2"] {
        assert_ne!(
            sale.seat_status(id),
            SeatStatus::Sold,
            "{id} sold after the cancel"
        );
    }
    let outbox = sale.ledger.outbox();
    assert_eq!(outbox.len(), 1, "one refund for two deliveries");
    assert_eq!(outbox[0].kind, OutboxEventKind::RefundRequired);
    assert_eq!(outbox[0].amount, amount);
    assert_eq!(outbox[0].payment_id.as_deref(), Some("pay_1"));
    assert_eq!(sale.ledger.paid_seats(&sale.event, &alice), None);
}

#[tokio::test]
async fn a_late_payment_after_a_lapsed_seat_was_taken_requires_a_refund() {
    let (sale, alice, order_id, amount) = held(&["F1-1", "F1-2"]).await;
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let bob = customer("bob");
    let bobs = sale.held(&bob, &["F1-2"]).await;

    let late = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;

    assert_eq!(late.status(), StatusCode::OK);
    assert_eq!(
        body(&late),
        json!({ "orderId": order_id, "status": "REFUND_REQUIRED" })
    );
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);
    assert_eq!(sale.held_by("F1-2").as_deref(), bobs["orderId"].as_str());
    assert_eq!(
        sale.seat_status("F1-1"),
        SeatStatus::Available,
        "nothing of a refunded order is sold; its seat goes back on sale now"
    );
    let outbox = sale.ledger.outbox();
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].kind, OutboxEventKind::RefundRequired);
    assert_eq!(outbox[0].seat_ids, ["F1-1", "F1-2"]);
    assert_eq!(outbox[0].amount, amount);
    assert_eq!(sale.ledger.paid_seats(&sale.event, &alice), None);
    assert!(
        sale.admissions
            .admitted_until(&sale.event, &alice)
            .is_some(),
        "a refunded customer keeps shopping"
    );
}

#[tokio::test]
async fn a_late_payment_on_a_swept_or_released_order_still_buys_free_seats() {
    let (sale, alice, swept, amount) = held(&["F1-1"]).await;
    let bob = customer("bob");
    let released = sale.held(&bob, &["F1-2"]).await;
    let released = released["orderId"].as_str().unwrap();
    assert_eq!(
        sale.send(sale.release_request(&bob, released))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let sweep = sale.ledger.expire_lapsed(sale.now()).await.unwrap();
    assert_eq!((sweep.orders_expired, sweep.seats_released), (1, 1));
    assert_eq!(sale.order(&swept).status, OrderStatus::Expired);

    // The adapter takes a payment for an EXPIRED or RELEASED order while its seats are free.
    let alices = pay(&sale, &swept, "evt_1", "pay_1", amount).await;
    let bobs = pay(&sale, released, "evt_2", "pay_2", 12_000).await;

    assert_eq!(body(&alices), paid(&swept));
    assert_eq!(body(&bobs), paid(released));
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Sold);
    assert_eq!(sale.seat_status("F1-2"), SeatStatus::Sold);
    assert_eq!(sale.held_by("F1-2").as_deref(), Some(released));
    assert_eq!(sale.ledger.outbox().len(), 2);
    assert_eq!(sale.admissions.admitted_until(&sale.event, &alice), None);
}

#[tokio::test]
async fn a_ticket_limit_lowered_since_the_hold_makes_the_payment_a_refund() {
    let (sale, alice, order_id, amount) = held(&["F1-1", "F1-2"]).await;
    // The operator sets a limit of one ticket per customer mid-sale.
    sale.admissions.set_ticket_limit(&sale.event, Some(1));

    let response = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body(&response)["status"], "REFUND_REQUIRED");
    for id in ["F1-1", "F1-2"] {
        assert_eq!(sale.seat_status(id), SeatStatus::Available, "{id}");
    }
    assert_eq!(sale.ledger.paid_seats(&sale.event, &alice), None);
    assert_eq!(
        sale.ledger.outbox()[0].kind,
        OutboxEventKind::RefundRequired
    );
}

#[tokio::test]
async fn a_queue_outage_never_stops_a_payment() {
    let (sale, alice, order_id, amount) = held(&["F1-1"]).await;
    sale.admissions.go_down();

    // The event's limit now cannot be read (the order's applies) and the admission cannot be
    // ended (it lapses on its own): the sale stands.
    let response = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;

    assert_eq!(response.status(), StatusCode::OK, "{}", body(&response));
    assert_eq!(body(&response), paid(&order_id));
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Sold);
    assert_eq!(sale.admissions.calls("ticket_limit"), 1);
    assert_eq!(sale.admissions.calls("end_admission"), 1);
    sale.admissions.come_back();
    assert!(sale
        .admissions
        .admitted_until(&sale.event, &alice)
        .is_some());
}

#[tokio::test]
async fn bad_or_stale_signatures_are_401_and_store_nothing() {
    let (sale, _, order_id, amount) = held(&["F1-1"]).await;
    let before = sale.ledger.snapshot();
    let text = payment(&order_id, "pay_1", amount);
    let now = sale.now();
    let other = WebhookSecret::new(vec![1u8; 32]).unwrap();
    let cases = [
        ("another secret", Some(other.sign(now, text.as_bytes()))),
        (
            "stale",
            Some(secret().sign(now - Duration::from_secs(301), text.as_bytes())),
        ),
        (
            "from the future",
            Some(secret().sign(now + Duration::from_secs(301), text.as_bytes())),
        ),
        ("over another body", Some(secret().sign(now, b"{}"))),
        ("missing", None),
    ];
    for (name, signature) in cases {
        let response = send(
            &sale,
            webhook(&order_id, Some("evt_1"), &text, signature.as_deref()),
        )
        .await;
        assert_eq!(
            refusal(&response),
            (StatusCode::UNAUTHORIZED, "invalid_signature".to_owned()),
            "{name}"
        );
    }
    for sample in [CONFIRM_SAMPLE, BAD_SIGNATURE_SAMPLE] {
        let response = send(&sale, to_request(&api_event(sample, &[], None))).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::UNAUTHORIZED, "invalid_signature".to_owned())
        );
    }
    assert_eq!(sale.ledger.calls("confirm"), 0);
    assert_eq!(sale.ledger.snapshot(), before);
    let within = secret().sign(now - Duration::from_secs(299), text.as_bytes());
    let response = send(
        &sale,
        webhook(&order_id, Some("evt_1"), &text, Some(&within)),
    )
    .await;
    assert_eq!(body(&response), paid(&order_id), "within the tolerance");
}

#[tokio::test]
async fn a_body_too_large_is_413_before_its_signature_is_checked() {
    let (sale, _, order_id, amount) = held(&["F1-1"]).await;
    let mut huge: Value = serde_json::from_str(&payment(&order_id, "pay_1", amount)).unwrap();
    huge["note"] = "x".repeat(MAX_BODY).into();
    let huge = huge.to_string();

    let signed_huge = send(&sale, signed(&sale, &order_id, "evt_1", &huge)).await;
    let unsigned_huge = send(&sale, webhook(&order_id, Some("evt_1"), &huge, None)).await;

    for response in [&signed_huge, &unsigned_huge] {
        assert_eq!(
            refusal(response),
            (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large".to_owned())
        );
    }
    assert_eq!(sale.ledger.calls("confirm"), 0);
    assert_eq!(sale.order(&order_id).status, OrderStatus::Pending);
}

#[tokio::test]
async fn a_ledger_outage_is_503_and_the_retry_pays() {
    let (sale, alice, order_id, amount) = held(&["F1-1"]).await;
    let before = sale.ledger.snapshot();
    sale.ledger.fail_next(1);

    let down = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;

    assert_eq!(
        refusal(&down),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable".to_owned()
        )
    );
    assert_eq!(retry_after(&down), Some(2));
    assert_eq!(sale.ledger.snapshot(), before);
    assert!(sale
        .admissions
        .admitted_until(&sale.event, &alice)
        .is_some());
    let retried = pay(&sale, &order_id, "evt_1", "pay_1", amount).await;
    assert_eq!(body(&retried), paid(&order_id));
}

#[tokio::test]
async fn malformed_webhooks_are_400_and_an_unknown_order_404() {
    let (sale, _, order_id, amount) = held(&["F1-1"]).await;
    let unknown = "7d5c9a8e-1f0b-4a3c-9e2d-6b8a7c5d4e3f";
    let with = |field: &str, value: Value| {
        let mut body: Value = serde_json::from_str(&payment(&order_id, "pay_1", amount)).unwrap();
        body[field] = value;
        body.to_string()
    };
    let signature = |text: &str| secret().sign(sale.now(), text.as_bytes());
    let text = payment(&order_id, "pay_1", amount);
    let cases = [
        (
            "no idempotency key",
            webhook(&order_id, None, &text, Some(&signature(&text))),
            "missing_idempotency_key",
        ),
        (
            "a key with a space",
            webhook(&order_id, Some("evt 1"), &text, Some(&signature(&text))),
            "missing_idempotency_key",
        ),
        (
            "not the body's shape",
            signed(&sale, &order_id, "evt_1", "{\"paymentId\": 1}"),
            "invalid_body",
        ),
        (
            "an unknown field",
            signed(&sale, &order_id, "evt_1", &with("extra", json!(1))),
            "invalid_body",
        ),
        (
            "a negative amount",
            signed(&sale, &order_id, "evt_1", &with("amount", json!(-1))),
            "invalid_body",
        ),
        (
            "a lowercase currency",
            signed(&sale, &order_id, "evt_1", &with("currency", json!("krw"))),
            "invalid_body",
        ),
        (
            "an empty payment id",
            signed(&sale, &order_id, "evt_1", &with("paymentId", json!(""))),
            "invalid_payment_id",
        ),
        (
            "a malformed order id",
            signed(&sale, "nope", "evt_1", &payment("nope", "pay_1", amount)),
            "invalid_order_id",
        ),
    ];
    for (name, request, code) in cases {
        let response = send(&sale, request).await;
        assert_eq!(
            refusal(&response),
            (StatusCode::BAD_REQUEST, code.to_owned()),
            "{name}"
        );
    }
    assert_eq!(sale.ledger.calls("confirm"), 0);

    // A signed payment for an order that does not exist is money all the same: 404, recorded
    // once, and to be refunded in full.
    let missing = pay(&sale, unknown, "evt_1", "pay_1", amount).await;
    let again = pay(&sale, unknown, "evt_1", "pay_1", amount).await;
    for answer in [&missing, &again] {
        assert_eq!(
            refusal(answer),
            (StatusCode::NOT_FOUND, "not_found".to_owned())
        );
    }
    assert_eq!(
        sale.ledger.payments()["pay_1"].outcome,
        PaymentOutcome::UnknownOrder
    );
    let outbox = sale.ledger.outbox();
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    assert_eq!(outbox[0].kind, OutboxEventKind::RefundRequired);
    assert_eq!(outbox[0].order_id, unknown);
    assert_eq!(outbox[0].amount, amount);
}
