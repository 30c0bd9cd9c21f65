//! The `expire` sweep returns lapsed holds and leaves live ones alone; an event whose seats are
//! all sold closes its queue.

use std::time::Duration;

use http::StatusCode;
use lambda_runtime::{Context, LambdaEvent};
use lineup::application::expire::Expiry;
use lineup::application::ports::ledger::HOLD_DURATION;
use lineup::application::ports::queue::WaitingLine;
use lineup::application::{join, poll};
use lineup::domain::clock::Clock;
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::*;

fn scheduled(file: &str) -> LambdaEvent<serde_json::Value> {
    LambdaEvent::new(sample(file), Context::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expire_returns_lapsed_holds_and_leaves_live_ones_alone() {
    logs();
    let sale = OnSale::with_seats(6).await;
    let (alice, bob) = (customer(1), customer(2));
    let tokens = sale.admit(&[alice.clone(), bob.clone()]).await;
    let lapsing = body(&sale.hold(&alice, &tokens[0], &[seat(1), seat(2)]).await);
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let live = body(&sale.hold(&bob, &tokens[1], &[seat(4)]).await);

    let only = OnlyEvents {
        queue: sale.queue.clone(),
        events: vec![sale.event.clone()],
    };
    let seats = sale.queue.availability_board();
    let expiry = Expiry {
        sweeper: sale.ledger.as_ref(),
        seats: &seats,
        events: &only,
        settings: sale.queue.as_ref(),
        clock: sale.clock.as_ref(),
    };
    let report = expiry
        .handle(scheduled("expire.json"))
        .await
        .expect("expire ran");
    assert_eq!(
        (report.sweep.orders_expired, report.sweep.seats_released),
        (1, 2)
    );
    assert!(report.sold_out.is_empty());

    let orders = sale.orders().await;
    assert_eq!(
        orders[lapsing["orderId"].as_str().unwrap()]["status"],
        "EXPIRED"
    );
    assert!(
        !orders[lapsing["orderId"].as_str().unwrap()].contains_key("pending_shard"),
        "out of the pending index"
    );
    assert_eq!(
        orders[live["orderId"].as_str().unwrap()]["status"],
        "PENDING"
    );
    let seats = sale.seats().await;
    for n in [1, 2] {
        assert_eq!(seats[seat(n).as_str()]["status"], "AVAILABLE", "seat {n}");
        assert!(!seats[seat(n).as_str()].contains_key("held_by"));
    }
    assert_eq!(seats["A-004"]["status"], "HELD");
    assert_eq!(seats["A-004"]["held_by"], live["orderId"]);

    // A second sweep finds nothing more to do.
    let again = expiry.run().await.unwrap();
    assert_eq!(
        (again.sweep.orders_expired, again.sweep.seats_released),
        (0, 0)
    );

    // The public seat map, once the seats table's stream is applied, shows what the sweep made
    // true: every seat available but the live hold's.
    sale.sync_availability().await;
    let available: Vec<String> = sale.available_seats().await.into_iter().collect();
    assert_eq!(available, ["A-001", "A-002", "A-003", "A-005", "A-006"]);

    let wrong = expiry.handle(scheduled("admit-wrong-kind.json")).await;
    assert!(
        matches!(&wrong, Err(error) if error.code() == "not_a_scheduled_event"),
        "{wrong:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn when_every_seat_is_sold_the_queue_closes() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let (alice, waiting) = (customer(1), customer(2));
    let token = &sale.admit(std::slice::from_ref(&alice)).await[0];
    sale.queue
        .join(&sale.event, &waiting, sale.clock.now())
        .await
        .unwrap();
    let only = OnlyEvents {
        queue: sale.queue.clone(),
        events: vec![sale.event.clone()],
    };
    let seats = sale.queue.availability_board();
    let expiry = Expiry {
        sweeper: sale.ledger.as_ref(),
        seats: &seats,
        events: &only,
        settings: sale.queue.as_ref(),
        clock: sale.clock.as_ref(),
    };

    let order = body(&sale.hold(&alice, token, &[seat(1), seat(2)]).await);
    // Both seats held: not sold out, a hold may still lapse back.
    sale.sync_availability().await;
    assert!(expiry.run().await.unwrap().sold_out.is_empty());
    assert!(sale.is_open().await);

    let paid = sale
        .pay(
            order["orderId"].as_str().unwrap(),
            order["amount"].as_i64().unwrap(),
        )
        .await;
    assert_eq!(body(&paid)["status"], "PAID");
    // The sold-out check counts the seat map, which the seats table's stream keeps.
    sale.sync_availability().await;
    assert_eq!(
        expiry.run().await.unwrap().sold_out,
        vec![sale.event.as_str().to_owned()]
    );
    assert!(!sale.is_open().await);

    let late = join::handle(&sale.queue_api, join_request(&sale.event, &customer(3))).await;
    assert_eq!(
        (late.status(), error_code(&late).as_str()),
        (StatusCode::CONFLICT, "queue_closed")
    );
    let queue_id = queue_id(&sale.event, &waiting).await;
    let polled = poll::handle(
        &sale.queue_api,
        poll_request(&sale.event, &waiting, &queue_id),
    )
    .await;
    assert_eq!(body(&polled)["status"], "closed");
}
