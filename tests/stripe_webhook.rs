//! `POST /webhooks/stripe` against moto and Redis: Stripe's signature scheme (a secret roll's
//! two `v1` values, a stale timestamp), its delivery habits (twice, out of order, after the
//! payment's own failure), a sale in one DynamoDB request, and signed payments that cannot buy
//! their order recorded for a refund.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::adapters::dynamo::DynamoLedger;
use lineup::application::confirm;
use lineup::application::ports::ledger::{OrderTerms, SeatLedger};
use lineup::application::rotating::Rotating;
use lineup::domain::clock::Clock;
use lineup::domain::ids::OrderId;
use lineup::domain::keys::KeyRing;
use lineup::domain::webhook_signature::WebhookSecret;
use lineup_tests::aws::unique;
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::request_counter::counting_dynamodb;
use lineup_tests::*;
use serde_json::{json, Value};

/// The endpoint secret before and after a roll in Stripe's dashboard.
fn old_secret() -> WebhookSecret {
    WebhookSecret::new("whsec_the_secret_before_the_roll_0000000000").unwrap()
}

fn new_secret() -> WebhookSecret {
    WebhookSecret::new("whsec_the_secret_after_the_roll_11111111111").unwrap()
}

/// An on-sale whose confirm function verifies Stripe events under both versions in force.
async fn stripe_sale(seats: usize) -> OnSale {
    let mut sale = OnSale::with_seats(seats).await;
    sale.confirm_api.stripe_secret = Some(Rotating::fixed(KeyRing::new(
        new_secret(),
        Some(old_secret()),
    )));
    sale
}

/// The order a hold made, as Lineup writes it into its PaymentIntent's metadata.
async fn terms_of(sale: &OnSale, hold: &Value) -> OrderTerms {
    let order_id = OrderId::parse(hold["orderId"].as_str().unwrap()).unwrap();
    let order = sale.ledger.order(&order_id).await.unwrap().unwrap();
    OrderTerms::of(&order)
}

/// A Stripe event of `kind` about the PaymentIntent `payment` for `terms`, paying `amount`.
fn event(kind: &str, event_id: &str, payment: &str, terms: &OrderTerms, amount: i64) -> String {
    let metadata: serde_json::Map<String, Value> = terms
        .metadata()
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.into()))
        .collect();
    let status = match kind {
        "payment_intent.succeeded" => "succeeded",
        _ => "requires_payment_method",
    };
    json!({
        "id": event_id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1_795_942_800,
        "type": kind,
        "livemode": false,
        "pending_webhooks": 1,
        "a_field_stripe_added_later": {"ignored": true},
        "data": {"object": {
            "id": payment,
            "object": "payment_intent",
            "amount": amount,
            "currency": terms.currency.to_ascii_lowercase(),
            "status": status,
            "metadata": metadata,
            "latest_charge": {"id": "ch_1", "object": "charge"},
        }},
    })
    .to_string()
}

fn unix(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// `t=<at>,v1=<mac>...`, one `v1` per secret, Stripe's way.
fn stripe_signature(at: SystemTime, body: &str, secrets: &[WebhookSecret]) -> String {
    let mut header = format!("t={}", unix(at));
    for secret in secrets {
        let signed = secret.sign(at, body.as_bytes());
        let (_, mac) = signed.split_once(",v1=").unwrap();
        header.push_str(&format!(",v1={mac}"));
    }
    header
}

fn stripe_request(body: &str, signature: Option<&str>) -> Request {
    let mut event = sample("stripe-webhook.json");
    event["body"] = body.into();
    let headers = event["headers"].as_object_mut().unwrap();
    match signature {
        Some(signature) => headers.insert("stripe-signature".into(), signature.into()),
        None => headers.remove("stripe-signature"),
    };
    request(&event)
}

async fn deliver(sale: &OnSale, body: &str, signature: &str) -> Response<Body> {
    confirm::handle(&sale.confirm_api, stripe_request(body, Some(signature))).await
}

async fn held(sale: &OnSale, seats: &[usize]) -> Value {
    let alice = customer(1);
    let tokens = sale.admit(std::slice::from_ref(&alice)).await;
    let seats: Vec<_> = seats.iter().map(|n| seat(*n)).collect();
    let response = sale.hold(&alice, &tokens[0], &seats).await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        body(&response)
    );
    body(&response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stripe_payment_delivered_twice_and_after_its_own_failure_sells_once_in_one_request() {
    logs();
    let mut sale = stripe_sale(4).await;
    let hold = held(&sale, &[1, 2]).await;
    let order_id = hold["orderId"].as_str().unwrap().to_owned();
    let terms = terms_of(&sale, &hold).await;
    let payment = unique("pi");
    let now = sale.clock.now();

    // The card is declined first: the order stays payable, nothing is stored.
    let before = sale.snapshot().await;
    let failed = event(
        "payment_intent.payment_failed",
        &unique("evt"),
        &payment,
        &terms,
        terms.amount,
    );
    let answer = deliver(
        &sale,
        &failed,
        &stripe_signature(now, &failed, &[new_secret()]),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::OK, "{}", body(&answer));
    assert_eq!(
        sale.snapshot().await,
        before,
        "a failed payment changes nothing"
    );

    // The succeeded event, signed too long ago (a captured request replayed): refused, nothing
    // changed.
    let succeeded = event(
        "payment_intent.succeeded",
        &unique("evt"),
        &payment,
        &terms,
        terms.amount,
    );
    let stale = stripe_signature(now - Duration::from_secs(301), &succeeded, &[new_secret()]);
    let answer = deliver(&sale, &succeeded, &stale).await;
    assert_eq!(
        (answer.status(), error_code(&answer).as_str()),
        (StatusCode::UNAUTHORIZED, "invalid_signature")
    );
    // Signed with a secret that is not (or no longer) in force: refused.
    let foreign = WebhookSecret::new("whsec_a_secret_this_endpoint_never_had_00").unwrap();
    let answer = deliver(
        &sale,
        &succeeded,
        &stripe_signature(now, &succeeded, &[foreign]),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(sale.snapshot().await, before, "refusals changed nothing");

    // During a roll Stripe signs with both secrets: the sale goes through, in one DynamoDB
    // request (the order, seats and amount come from the payment's metadata).
    let (client, counter) = counting_dynamodb();
    let counting = Arc::new(DynamoLedger::new(client, sale.tables.clone()));
    sale.confirm_api.ledger = counting;
    counter.take();
    let rolled = stripe_signature(now, &succeeded, &[old_secret(), new_secret()]);
    let answer = deliver(&sale, &succeeded, &rolled).await;
    assert_eq!(answer.status(), StatusCode::OK, "{}", body(&answer));
    assert_eq!(
        body(&answer),
        json!({"received": true, "outcome": "paid", "orderId": order_id})
    );
    let requests = counter.take();
    assert_eq!(
        requests.into_iter().collect::<Vec<_>>(),
        vec![("TransactWriteItems".to_owned(), 1)],
        "a sale is one DynamoDB request"
    );

    // Delivered again (a new signature, later), and again at once from eight retries racing,
    // and its own failure event after it (out of order): the first answer, nothing changes.
    let after_sale = sale.snapshot().await;
    sale.clock.advance(Duration::from_secs(30));
    let later = sale.clock.now();
    let again = futures::future::join_all((0..8).map(|_| {
        let signature = stripe_signature(later, &succeeded, &[new_secret()]);
        let sale = &sale;
        let succeeded = &succeeded;
        async move { deliver(sale, succeeded, &signature).await }
    }))
    .await;
    for answer in &again {
        assert_eq!(answer.status(), StatusCode::OK, "{}", body(answer));
        assert_eq!(body(answer)["outcome"], "paid");
    }
    let answer = deliver(
        &sale,
        &failed,
        &stripe_signature(later, &failed, &[new_secret()]),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        sale.snapshot().await,
        after_sale,
        "redeliveries changed nothing"
    );

    let orders = sale.orders().await;
    assert_eq!(orders[&order_id]["status"], "PAID");
    assert_eq!(orders[&order_id]["payment_id"], payment.as_str());
    let seats = sale.seats().await;
    for n in [1, 2] {
        assert_eq!(seats[seat(n).as_str()]["status"], "SOLD");
    }
    let outbox = sale.outbox().await;
    assert_eq!(outbox.len(), 1, "one ticket event: {outbox:?}");
    assert_eq!(outbox[0]["type"], "ticket_issued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signed_stripe_payment_that_cannot_buy_its_order_is_recorded_for_a_refund() {
    logs();
    let sale = stripe_sale(4).await;
    let hold = held(&sale, &[1]).await;
    let terms = terms_of(&sale, &hold).await;
    let now = sale.clock.now();
    let before = sale.snapshot().await;

    // An order that does not exist, and the right order with another amount.
    let mut unknown = terms.clone();
    unknown.order_id = OrderId::parse("7d5c9a8e-1f0b-4a3c-9e2d-6b8a7c5d4e3f").unwrap();
    let cases = [
        ("unknown order", unique("pi"), unknown, terms.amount),
        (
            "another amount",
            unique("pi"),
            terms.clone(),
            terms.amount - 1_000,
        ),
    ];
    for (name, payment, terms, amount) in &cases {
        let body_text = event(
            "payment_intent.succeeded",
            &unique("evt"),
            payment,
            terms,
            *amount,
        );
        let answer = deliver(
            &sale,
            &body_text,
            &stripe_signature(now, &body_text, &[new_secret()]),
        )
        .await;
        assert_eq!(answer.status(), StatusCode::OK, "{name}: {}", body(&answer));
        assert_eq!(body(&answer)["outcome"], "recorded_for_refund", "{name}");
    }
    let after = sale.snapshot().await;
    assert_eq!(after["seats"], before["seats"], "no seat changed");
    let order = &sale.orders().await[hold["orderId"].as_str().unwrap()];
    assert_eq!(order["status"], "PENDING", "the order is still payable");
    let refunds: Vec<_> = sale
        .outbox()
        .await
        .into_iter()
        .filter(|event| event["type"] == "refund_required")
        .collect();
    assert_eq!(refunds.len(), 2, "{refunds:?}");
    for (_, payment, _, amount) in &cases {
        let refund = refunds
            .iter()
            .find(|event| event["paymentId"] == payment.as_str())
            .expect("a refund per payment");
        assert_eq!(refund["amount"], *amount, "refunded in full");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stripe_events_lineup_does_not_act_on_or_cannot_trust_change_nothing() {
    logs();
    let sale = stripe_sale(2).await;
    let hold = held(&sale, &[1]).await;
    let terms = terms_of(&sale, &hold).await;
    let now = sale.clock.now();
    let before = sale.snapshot().await;
    let sign = |text: &str| stripe_signature(now, text, &[new_secret()]);

    // A payment of another product on the same Stripe account (no Lineup metadata).
    let mut foreign: Value = serde_json::from_str(&event(
        "payment_intent.succeeded",
        &unique("evt"),
        &unique("pi"),
        &terms,
        terms.amount,
    ))
    .unwrap();
    foreign["data"]["object"]["metadata"] = json!({"shop_order": "42"});
    let foreign = foreign.to_string();
    let answer = deliver(&sale, &foreign, &sign(&foreign)).await;
    assert_eq!(
        (answer.status(), body(&answer)["outcome"].clone()),
        (StatusCode::OK, json!("ignored"))
    );
    // An event type Lineup does not act on.
    let other = json!({"id": unique("evt"), "type": "customer.created", "data": {"object": {}}})
        .to_string();
    let answer = deliver(&sale, &other, &sign(&other)).await;
    assert_eq!(answer.status(), StatusCode::OK);

    // Refused: no signature, a malformed one, a body that is not an event, a huge body.
    let succeeded = event(
        "payment_intent.succeeded",
        &unique("evt"),
        &unique("pi"),
        &terms,
        terms.amount,
    );
    let unsigned = confirm::handle(&sale.confirm_api, stripe_request(&succeeded, None)).await;
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
    let malformed = deliver(&sale, &succeeded, "t=abc,v1=zz").await;
    assert_eq!(malformed.status(), StatusCode::UNAUTHORIZED);
    let not_an_event = "[1, 2, 3]";
    let answer = deliver(&sale, not_an_event, &sign(not_an_event)).await;
    assert_eq!(
        (answer.status(), error_code(&answer).as_str()),
        (StatusCode::BAD_REQUEST, "invalid_body")
    );
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(70 * 1024));
    let answer = deliver(&sale, &huge, &sign(&huge)).await;
    assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);

    assert_eq!(sale.snapshot().await, before, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_stripe_secret_the_route_does_not_exist() {
    let sale = OnSale::with_seats(1).await;
    let text = json!({"id": "evt_1", "type": "payment_intent.succeeded", "data": {"object": {}}})
        .to_string();
    let answer = confirm::handle(
        &sale.confirm_api,
        stripe_request(
            &text,
            Some(&stripe_signature(sale.clock.now(), &text, &[new_secret()])),
        ),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
}
