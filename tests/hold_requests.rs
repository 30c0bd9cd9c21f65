//! The hold function's and the webhook's bad inputs each get the contract's 4xx and change
//! nothing; the good paths (order status, release) do what they say.

use http::StatusCode;
use lambda_http::Request;
use lineup::application::{confirm, hold};
use lineup::domain::clock::Clock;
use lineup_tests::aws::unique;
use lineup_tests::on_sale::{payment_body, seat, OnSale};
use lineup_tests::route;
use lineup_tests::*;
use serde_json::{json, Value};

fn with(mut value: Value, pointer: &str, replacement: Value) -> Value {
    *value
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer} in sample")) = replacement;
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_hold_and_webhook_requests_get_their_4xx_and_change_nothing() {
    logs();
    let sale = OnSale::with_seats(6).await;
    let (alice, bob) = (customer(1), customer(2));
    let tokens = sale.admit(&[alice.clone(), bob.clone()]).await;
    let held = body(&sale.hold(&alice, &tokens[0], &[seat(1)]).await);
    let order_id = held["orderId"].as_str().unwrap().to_owned();
    let event = sale.event.as_str();

    let hold_sample = |caller, token: Option<&str>, seats: Value| {
        let mut value = route(&sample("hold.json"), &[("eventId", event)], caller);
        value["body"] = json!({ "seatIds": seats }).to_string().into();
        match token {
            Some(token) => value["headers"]["x-queue-token"] = token.into(),
            None => {
                value["headers"]
                    .as_object_mut()
                    .unwrap()
                    .remove("x-queue-token");
            }
        }
        value
    };
    let bobs = |seats: Value| hold_sample(Some(&bob), Some(&tokens[1]), seats);
    let forged_token = tokens[1].replacen("v2.", "v2.x", 1);

    let hold_cases: Vec<(&str, Value, StatusCode, &str)> = vec![
        (
            "no seats",
            bobs(json!([])),
            StatusCode::BAD_REQUEST,
            "no_seats",
        ),
        (
            "five seats",
            route(
                &with(
                    sample("hold-too-many-seats.json"),
                    "/headers/x-queue-token",
                    tokens[1].clone().into(),
                ),
                &[("eventId", event)],
                Some(&bob),
            ),
            StatusCode::BAD_REQUEST,
            "too_many_seats",
        ),
        (
            "duplicate seats",
            bobs(json!(["A-002", "A-002"])),
            StatusCode::BAD_REQUEST,
            "duplicate_seats",
        ),
        (
            "unknown seats",
            bobs(json!(["A-002", "Z-999"])),
            StatusCode::BAD_REQUEST,
            "unknown_seats",
        ),
        (
            "malformed seat id",
            bobs(json!(["A 2"])),
            StatusCode::BAD_REQUEST,
            "invalid_seat_id",
        ),
        (
            "seat id not a string",
            bobs(json!([2])),
            StatusCode::BAD_REQUEST,
            "invalid_seat_id",
        ),
        (
            "malformed JSON",
            with(bobs(json!([])), "/body", "{\"seatIds\": [".into()),
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            "no seatIds",
            with(bobs(json!([])), "/body", "{\"seats\": []}".into()),
            StatusCode::BAD_REQUEST,
            "invalid_body",
        ),
        (
            "no token",
            route(
                &sample("hold-no-token.json"),
                &[("eventId", event)],
                Some(&bob),
            ),
            StatusCode::FORBIDDEN,
            "access_denied",
        ),
        (
            "forged token",
            hold_sample(Some(&bob), Some(&forged_token), json!(["A-002"])),
            StatusCode::FORBIDDEN,
            "access_denied",
        ),
        (
            "someone else's token",
            hold_sample(Some(&bob), Some(&tokens[0]), json!(["A-002"])),
            StatusCode::FORBIDDEN,
            "access_denied",
        ),
        (
            "no JWT",
            hold_sample(None, Some(&tokens[1]), json!(["A-002"])),
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        ),
        (
            "a second open hold",
            hold_sample(Some(&alice), Some(&tokens[0]), json!(["A-003"])),
            StatusCode::CONFLICT,
            "hold_exists",
        ),
        (
            "a seat someone holds",
            bobs(json!(["A-001", "A-002"])),
            StatusCode::CONFLICT,
            "seats_unavailable",
        ),
        (
            "release someone else's order",
            route(
                &sample("release.json"),
                &[("eventId", event), ("orderId", &order_id)],
                Some(&bob),
            ),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "someone else's order",
            route(
                &sample("order-foreign.json"),
                &[("orderId", &order_id)],
                Some(&bob),
            ),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "a malformed order id",
            route(
                &sample("order.json"),
                &[("orderId", "not-a-uuid")],
                Some(&alice),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_order_id",
        ),
        (
            "an unknown route",
            with(
                bobs(json!(["A-002"])),
                "/requestContext/routeKey",
                "PUT /events/{eventId}/holds".into(),
            ),
            StatusCode::NOT_FOUND,
            "route_not_found",
        ),
    ];

    let payment = payment_body(&order_id, "pay_1", 12_000);
    let confirm_cases: Vec<(&str, Request, StatusCode, &str)> = vec![
        (
            "no idempotency key",
            {
                let text = payment.to_string();
                let signature = on_sale_signature(&sale, &text);
                sale.confirm_request_signed(&order_id, None, &text, Some(&signature))
            },
            StatusCode::BAD_REQUEST,
            "missing_idempotency_key",
        ),
        (
            "malformed body",
            {
                let text = "{\"paymentId\": 1}";
                let signature = on_sale_signature(&sale, text);
                sale.confirm_request_signed(&order_id, Some(&unique("key")), text, Some(&signature))
            },
            StatusCode::BAD_REQUEST,
            "invalid_body",
        ),
        (
            "malformed order id",
            sale.confirm_request("nope", &unique("key"), &payment),
            StatusCode::BAD_REQUEST,
            "invalid_order_id",
        ),
        (
            "bad signature (sample)",
            request(&route(
                &sample("confirm-bad-signature.json"),
                &[("orderId", &order_id)],
                None,
            )),
            StatusCode::UNAUTHORIZED,
            "invalid_signature",
        ),
    ];

    let before = sale.snapshot().await;
    for (name, event, status, code) in hold_cases {
        let response = sale.send(request(&event)).await;
        assert_eq!(response.status(), status, "{name}: {}", body(&response));
        assert_eq!(error_code(&response), code, "{name}");
        if code == "unknown_seats" {
            assert_eq!(body(&response)["error"]["seatIds"], json!(["Z-999"]));
        }
        if code == "seats_unavailable" {
            assert_eq!(
                body(&response)["error"]["seatIds"],
                json!(["A-001"]),
                "only the taken seat is named"
            );
        }
        assert_eq!(
            sale.snapshot().await,
            before,
            "{name} changed what is stored"
        );
    }
    for (name, request, status, code) in confirm_cases {
        let response = confirm::handle(&sale.confirm_api, request).await;
        assert_eq!(response.status(), status, "{name}: {}", body(&response));
        assert_eq!(error_code(&response), code, "{name}");
        assert_eq!(
            sale.snapshot().await,
            before,
            "{name} changed what is stored"
        );
    }
    // A signed payment for an order that does not exist is a 404 that changes no order or seat,
    // but it is money: its payment record and a refund_required event are written.
    let unknown = "7d5c9a8e-1f0b-4a3c-9e2d-6b8a7c5d4e3f";
    let response = confirm::handle(
        &sale.confirm_api,
        sale.confirm_request(
            unknown,
            &unique("key"),
            &payment_body(unknown, "pay_unknown", 12_000),
        ),
    )
    .await;
    assert_eq!(
        (response.status(), error_code(&response).as_str()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    let after = sale.snapshot().await;
    assert_eq!(after["seats"], before["seats"]);
    let refunds: Vec<&Value> = after["outbox"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "refund_required")
        .collect();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(
        (
            refunds[0]["orderId"].as_str(),
            refunds[0]["paymentId"].as_str()
        ),
        (Some(unknown), Some("pay_unknown"))
    );
    assert!(
        sale.is_admitted(&alice).await && sale.is_admitted(&bob).await,
        "nobody lost their admission"
    );
}

fn on_sale_signature(sale: &OnSale, body: &str) -> String {
    use lineup::domain::clock::Clock;
    lineup_tests::on_sale::webhook_secret().sign(sale.clock.now(), body.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_order_can_be_looked_up_and_released_by_its_owner() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let alice = customer(1);
    let token = &sale.admit(std::slice::from_ref(&alice)).await[0];
    let held = sale.hold(&alice, token, &[seat(2), seat(3)]).await;
    assert_eq!(held.status(), StatusCode::CREATED);
    let held = body(&held);
    assert_eq!(held["seatIds"], json!(["A-002", "A-003"]));
    assert_eq!(held["amount"], 24_000);
    assert_eq!(held["status"], "PENDING");
    let order_id = held["orderId"].as_str().unwrap();

    // The same hold again (a retry after a lost answer) gets the same order, not a 409.
    let retried = sale.hold(&alice, token, &[seat(3), seat(2)]).await;
    assert_eq!(retried.status(), StatusCode::CREATED);
    assert_eq!(body(&retried), held);
    assert_eq!(sale.orders().await.len(), 1);
    // Another seat set while the hold is open is a second hold: refused as such, her own seats
    // not reported as "taken".
    // It names the open order, so a client whose first answer was lost can find, pay or
    // release it.
    let other = sale.hold(&alice, token, &[seat(2)]).await;
    assert_eq!(error_code(&other), "hold_exists");
    assert_eq!(body(&other)["error"]["orderId"], order_id);

    let status = hold::handle(
        &sale.hold_api,
        request(&route(
            &sample("order.json"),
            &[("orderId", order_id)],
            Some(&alice),
        )),
    )
    .await;
    assert_eq!(status.status(), StatusCode::OK);
    assert_eq!(body(&status), held, "the order as the hold returned it");

    let release = route(
        &sample("release.json"),
        &[("eventId", sale.event.as_str()), ("orderId", order_id)],
        Some(&alice),
    );
    let released = sale.send(request(&release)).await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    assert_eq!(sale.orders().await[order_id]["status"], "RELEASED");
    let seats = sale.seats().await;
    assert_eq!(
        (
            seats["A-002"]["status"].as_str(),
            seats["A-003"]["status"].as_str()
        ),
        (Some("AVAILABLE"), Some("AVAILABLE"))
    );
    let again = sale.send(request(&release)).await;
    assert_eq!(
        (again.status(), error_code(&again).as_str()),
        (StatusCode::CONFLICT, "order_not_pending")
    );

    // The lock went with the release: Alice may hold again at once.
    assert_eq!(
        sale.hold(&alice, token, &[seat(2)]).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_price_change_is_never_charged_at_the_old_price() {
    logs();
    let sale = OnSale::with_seats(3).await;
    let alice = customer(1);
    let token = &sale.admit(std::slice::from_ref(&alice)).await[0];
    // Alice's instance knows the layout (prices) from a first hold, given back.
    let first = body(&sale.hold(&alice, token, &[seat(2)]).await);
    assert_eq!(first["amount"], 12_000);
    let release = route(
        &sample("release.json"),
        &[
            ("eventId", sale.event.as_str()),
            ("orderId", first["orderId"].as_str().unwrap()),
        ],
        Some(&alice),
    );
    assert_eq!(
        sale.send(request(&release)).await.status(),
        StatusCode::NO_CONTENT
    );
    let orders_before = sale.orders().await;

    // An operator re-seeds the event with the Balcony (A-001's section) at 15,000, behind
    // the instance's back: a new layout version.
    let repriced: Vec<lineup::domain::seat::NewSeat> = sale
        .layout
        .as_ref()
        .unwrap()
        .seats()
        .map(|(_, seat)| lineup::domain::seat::NewSeat {
            price: if seat.section == "Balcony" {
                15_000
            } else {
                seat.price
            },
            ..seat
        })
        .collect();
    let repriced = lineup::domain::layout::SeatLayout::from_seats(&repriced).unwrap();
    lineup_cli::event_admin::seed(
        &sale.ledger,
        &sale.records,
        &sale.queue,
        &sale.event,
        &repriced,
        sale.clock.now(),
    )
    .await
    .expect("re-seed");

    let stale = sale.hold(&alice, token, &[seat(1)]).await;
    assert_eq!(
        (stale.status(), error_code(&stale).as_str()),
        (StatusCode::CONFLICT, "price_changed")
    );
    assert_eq!(body(&stale)["error"]["seatIds"], json!(["A-001"]));
    assert_eq!(
        sale.orders().await,
        orders_before,
        "nothing held at the old price"
    );

    let fresh = sale.hold(&alice, token, &[seat(1)]).await;
    assert_eq!(
        fresh.status(),
        StatusCode::CREATED,
        "the new layout was read: {}",
        body(&fresh)
    );
    assert_eq!(body(&fresh)["amount"], 15_000);
}
