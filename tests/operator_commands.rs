//! The operator commands' use cases (`lineup seed`, `lineup event open|set|close`) against real
//! Redis and the emulator: what matters is that an operator cannot put sold seats back on sale,
//! and that each command changes exactly what it names.

use lineup::clock::Clock;
use lineup::event_settings::QueueState;
use lineup::ledger::NewSeat;
use lineup::queue::{EventSettingsStore, WaitingLine};
use lineup::LineupError;
use lineup_cli::event_admin::{self, AdminError, SettingsChange};
use lineup_tests::customer;
use lineup_tests::on_sale::{seat, OnSale, CURRENCY};

fn seats(n: usize) -> Vec<NewSeat> {
    (1..=n)
        .map(|n| NewSeat {
            seat_id: seat(n),
            section: "Floor".to_owned(),
            price: 1,
            currency: CURRENCY.to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn seeding_is_refused_while_any_seat_is_held_or_sold_and_changes_nothing() {
    let sale = OnSale::with_seats(3).await;
    let alice = customer(1);
    let tokens = sale.admit(std::slice::from_ref(&alice)).await;
    let held = sale.hold(&alice, &tokens[0], &[seat(2)]).await;
    assert_eq!(held.status(), 201);
    let before = sale.snapshot().await;

    let refused = event_admin::seed(&sale.ledger, &sale.event, &seats(3), sale.clock.now()).await;
    assert!(
        matches!(&refused, Err(AdminError::SeatsInUse { in_use: 1, .. })),
        "{refused:?}"
    );
    assert_eq!(sale.snapshot().await, before);
}

#[tokio::test]
async fn seeding_a_new_event_writes_every_seat_available() {
    let sale = OnSale::with_seats(0).await;
    event_admin::seed(&sale.ledger, &sale.event, &seats(30), sale.clock.now())
        .await
        .expect("seed");
    let stored = sale.seats().await;
    assert_eq!(stored.len(), 30);
    assert!(stored.values().all(|item| item["status"] == "AVAILABLE"));
    // Seeding again before the on-sale (nothing held) is allowed: it rewrites the same seats.
    event_admin::seed(&sale.ledger, &sale.event, &seats(30), sale.clock.now())
        .await
        .expect("seed again");
    assert_eq!(sale.seats().await.len(), 30);
}

#[tokio::test]
async fn open_set_and_close_change_what_they_name() {
    let sale = OnSale::with_seats(0).await;
    let queue = sale.queue.as_ref();
    let now = sale.clock.now();
    let change = |max_active, rate| SettingsChange {
        max_active,
        rate,
        ..SettingsChange::default()
    };

    event_admin::close(queue, &sale.event).await.expect("close");
    let set = event_admin::set(queue, &sale.event, &change(Some(7), None), now)
        .await
        .expect("set");
    // `set` keeps the state (closed) and every setting it does not name.
    assert_eq!(set.state, QueueState::Closed);
    assert_eq!(set.max_active, 7);
    let refused = queue.join(&sale.event, &customer(9), now).await;
    assert!(
        matches!(refused, Err(LineupError::QueueClosed)),
        "{refused:?}"
    );

    let opened = event_admin::open(queue, &sale.event, &change(None, Some(3)), now)
        .await
        .expect("open");
    assert_eq!(opened.state, QueueState::Open);
    assert_eq!((opened.max_active, opened.admit_per_second), (7, 3));
    assert_eq!(queue.settings(&sale.event).await.unwrap(), Some(opened));
    queue
        .join(&sale.event, &customer(9), now)
        .await
        .expect("join when open");

    let unknown = lineup_tests::fresh_event();
    let missing = event_admin::set(queue, &unknown, &change(Some(1), None), now).await;
    assert!(matches!(missing, Err(AdminError::UnknownEvent(_))));
    assert!(matches!(
        event_admin::close(queue, &unknown).await,
        Err(AdminError::UnknownEvent(_))
    ));
    assert!(queue.settings(&unknown).await.unwrap().is_none());
}
