//! Payment confirmation: exactly once under duplicate webhooks, refused when unsigned, stale or
//! reusing a key, and right about late payments on lapsed holds.

use std::time::Duration;

use futures::future::join_all;
use http::StatusCode;
use lineup::application::confirm;
use lineup::application::expire::Expiry;
use lineup::application::ports::ledger::HOLD_DURATION;
use lineup::domain::clock::Clock;
use lineup_tests::aws::unique;
use lineup_tests::on_sale::{payment_body, seat, webhook_secret, OnSale};
use lineup_tests::*;
use serde_json::{json, Value};

fn order_of(response: &lambda_http::Response<lambda_http::Body>) -> (String, i64) {
    assert_eq!(response.status(), StatusCode::CREATED, "{}", body(response));
    let order = body(response);
    (
        order["orderId"].as_str().unwrap().to_owned(),
        order["amount"].as_i64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_identical_webhooks_at_once_pay_once_and_get_one_answer() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let alice = customer(1);
    let token = &sale.admit(std::slice::from_ref(&alice)).await[0];
    let (order_id, amount) = order_of(&sale.hold(&alice, token, &[seat(1), seat(2)]).await);
    assert_eq!(amount, 24_000);

    let payment = payment_body(&order_id, "pay_1", amount);
    let text = payment.to_string();

    // First, while the order is PENDING, requests that must change nothing: bad and stale
    // signatures, no idempotency key, a wrong amount.
    let pending = sale.snapshot().await;
    let forged = lineup::domain::webhook_signature::WebhookSecret::new(
        "not-the-provider-secret-0123456789ab",
    )
    .unwrap();
    let now = sale.clock.now();
    for (name, signature) in [
        ("other secret", Some(forged.sign(now, text.as_bytes()))),
        (
            "stale",
            Some(webhook_secret().sign(now - Duration::from_secs(301), text.as_bytes())),
        ),
        (
            "from the future",
            Some(webhook_secret().sign(now + Duration::from_secs(301), text.as_bytes())),
        ),
        ("over another body", Some(webhook_secret().sign(now, b"{}"))),
        ("missing", None),
    ] {
        let request = sale.confirm_request_signed(
            &order_id,
            Some(&unique("key")),
            &text,
            signature.as_deref(),
        );
        let response = confirm::handle(&sale.confirm_api, request).await;
        assert_eq!(
            (response.status(), error_code(&response).as_str()),
            (StatusCode::UNAUTHORIZED, "invalid_signature"),
            "{name}"
        );
    }
    let signature = webhook_secret().sign(now, text.as_bytes());
    let no_key = confirm::handle(
        &sale.confirm_api,
        sale.confirm_request_signed(&order_id, None, &text, Some(&signature)),
    )
    .await;
    assert_eq!(
        (no_key.status(), error_code(&no_key).as_str()),
        (StatusCode::BAD_REQUEST, "missing_idempotency_key")
    );
    assert_eq!(
        sale.snapshot().await,
        pending,
        "refused webhooks changed a pending order"
    );
    assert!(sale.is_admitted(&alice).await);

    // Then twenty identical webhooks at once.
    let key = unique("key");
    let answers = join_all((0..20).map(|_| {
        let request = sale.confirm_request(&order_id, &key, &payment);
        let api = &sale.confirm_api;
        async move { confirm::handle(api, request).await }
    }))
    .await;
    for answer in &answers {
        assert_eq!(answer.status(), StatusCode::OK, "{}", body(answer));
        assert_eq!(
            body(answer),
            json!({ "orderId": order_id, "status": "PAID" })
        );
    }
    let orders = sale.orders().await;
    assert_eq!(orders[&order_id]["status"], "PAID");
    assert_eq!(
        sale.outbox().await.len(),
        1,
        "one outbox item for twenty webhooks"
    );
    let seats = sale.seats().await;
    for n in [1, 2] {
        assert_eq!(seats[seat(n).as_str()]["status"], "SOLD");
    }
    assert!(
        !sale.is_admitted(&alice).await,
        "paying frees the customer's slot"
    );

    // After: the same key with another payment is refused, and that payment (money all the
    // same) is recorded once for a refund; a replay (same key) and a redelivery of the same
    // payment under a new key get the first answer and change nothing.
    let other_body = payment_body(&order_id, "pay_2", amount);
    let reused = confirm::handle(
        &sale.confirm_api,
        sale.confirm_request(&order_id, &key, &other_body),
    )
    .await;
    assert_eq!(
        (reused.status(), error_code(&reused).as_str()),
        (StatusCode::CONFLICT, "idempotency_key_reused")
    );
    let after_reuse = sale.snapshot().await;
    let refunds: Vec<&Value> = after_reuse["outbox"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "refund_required")
        .collect();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0]["paymentId"], "pay_2");
    assert_eq!(refunds[0]["amount"], amount);
    let before = after_reuse;
    for (name, key) in [("replay", key.clone()), ("redelivery", unique("key"))] {
        let again = confirm::handle(
            &sale.confirm_api,
            sale.confirm_request(&order_id, &key, &payment),
        )
        .await;
        assert_eq!(
            (again.status(), body(&again)),
            (
                StatusCode::OK,
                json!({ "orderId": order_id, "status": "PAID" })
            ),
            "a later {name} still gets the first answer"
        );
    }
    assert_eq!(
        sale.snapshot().await,
        before,
        "refusals and replays changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_late_payment_after_someone_took_a_lapsed_seat_requires_a_refund() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let (alice, bob) = (customer(1), customer(2));
    let tokens = sale.admit(&[alice.clone(), bob.clone()]).await;
    let (alices_order, amount) =
        order_of(&sale.hold(&alice, &tokens[0], &[seat(1), seat(2)]).await);

    // Before the hold lapses, A-002 is Alice's.
    let early = sale.hold(&bob, &tokens[1], &[seat(2)]).await;
    assert_eq!(error_code(&early), "seats_unavailable");

    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let (bobs_order, _) = order_of(&sale.hold(&bob, &tokens[1], &[seat(2)]).await);

    let late = sale.pay(&alices_order, amount).await;
    assert_eq!(late.status(), StatusCode::OK);
    assert_eq!(body(&late)["status"], "REFUND_REQUIRED");

    let orders = sale.orders().await;
    assert_eq!(orders[&alices_order]["status"], "REFUND_REQUIRED");
    let seats = sale.seats().await;
    assert_eq!(
        seats["A-002"]["held_by"],
        bobs_order.as_str(),
        "Bob keeps the seat he took"
    );
    assert_eq!(seats["A-002"]["status"], "HELD");
    assert_ne!(
        seats["A-001"]["status"], "SOLD",
        "nothing of a refunded order is sold"
    );
    let outbox = sale.outbox().await;
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0]["type"], "refund_required");
    assert_eq!(outbox[0]["orderId"], alices_order.as_str());
    assert_eq!(outbox[0]["amount"], amount);
    assert!(
        sale.is_admitted(&alice).await,
        "a refunded customer keeps shopping"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_late_payment_on_a_lapsed_hold_nobody_took_still_sells() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let (carol, dave) = (customer(3), customer(4));
    let tokens = sale.admit(&[carol.clone(), dave.clone()]).await;
    let (carols_order, carols_amount) = order_of(&sale.hold(&carol, &tokens[0], &[seat(3)]).await);
    let (daves_order, daves_amount) = order_of(&sale.hold(&dave, &tokens[1], &[seat(4)]).await);
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(60));

    // Carol pays late, her seat still HELD by her lapsed order (no sweep yet).
    let paid = sale.pay(&carols_order, carols_amount).await;
    assert_eq!(body(&paid)["status"], "PAID");

    // Dave's lapsed hold is swept first (order EXPIRED, seat AVAILABLE), then he pays.
    let seats = sale.queue.availability_board();
    let expiry = Expiry {
        sweeper: sale.ledger.as_ref(),
        seats: &seats,
        events: &OnlyEvents {
            queue: sale.queue.clone(),
            events: Vec::new(),
        }, // no sold-out check
        settings: sale.queue.as_ref(),
        clock: sale.clock.as_ref(),
    };
    let swept = expiry.run().await.unwrap();
    assert_eq!(
        (swept.sweep.orders_expired, swept.sweep.seats_released),
        (1, 1)
    );
    assert_eq!(sale.orders().await[&daves_order]["status"], "EXPIRED");
    assert_eq!(sale.seats().await["A-004"]["status"], "AVAILABLE");
    let paid = sale.pay(&daves_order, daves_amount).await;
    assert_eq!(body(&paid)["status"], "PAID");

    let seats = sale.seats().await;
    assert_eq!(seats["A-003"]["status"], "SOLD");
    assert_eq!(seats["A-003"]["held_by"], carols_order.as_str());
    assert_eq!(seats["A-004"]["status"], "SOLD");
    assert_eq!(seats["A-004"]["held_by"], daves_order.as_str());
    let kinds: Vec<Value> = sale
        .outbox()
        .await
        .iter()
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(kinds, vec![json!("ticket_issued"), json!("ticket_issued")]);
}
