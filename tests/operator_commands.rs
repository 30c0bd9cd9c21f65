//! The operator commands' use cases (`lineup seed`, `lineup event open|set|close`) against real
//! Redis and the emulator: what matters is that an operator cannot put sold seats back on sale,
//! and that each command changes exactly what it names.

use lineup::application::error::LineupError;
use lineup::application::ports::queue::{EventSettingsStore, WaitingLine};
use lineup::domain::clock::Clock;
use lineup::domain::event_settings::QueueState;
use lineup::domain::layout::SeatLayout;
use lineup::domain::seat::NewSeat;
use lineup_cli::event_admin::{self, AdminError, SettingsChange};
use lineup_tests::customer;
use lineup_tests::on_sale::{seat, OnSale, CURRENCY};

/// `n` seats in one section at 1 each: another layout than the on-sale's.
fn seats(n: usize) -> SeatLayout {
    let seats: Vec<NewSeat> = (1..=n)
        .map(|n| NewSeat {
            seat_id: seat(n),
            section: "Floor".to_owned(),
            row: "A".to_owned(),
            price: 1,
            currency: CURRENCY.to_owned(),
        })
        .collect();
    SeatLayout::from_seats(&seats).expect("layout")
}

/// Seeds `layout` for the sale's event as `lineup seed` does.
async fn seed(sale: &OnSale, layout: &SeatLayout) -> Result<(), AdminError> {
    event_admin::seed(
        &sale.ledger,
        &sale.records,
        &sale.queue,
        &sale.event,
        layout,
        sale.clock.now(),
    )
    .await
}

#[tokio::test]
async fn seeding_is_refused_while_any_seat_is_held_or_sold_and_changes_nothing() {
    let sale = OnSale::with_seats(3).await;
    let alice = customer(1);
    let tokens = sale.admit(std::slice::from_ref(&alice)).await;
    let held = sale.hold(&alice, &tokens[0], &[seat(2)]).await;
    assert_eq!(held.status(), 201);
    let before = sale.snapshot().await;

    let refused = seed(&sale, &seats(3)).await;
    assert!(
        matches!(&refused, Err(AdminError::SeatsInUse { in_use: 1, .. })),
        "{refused:?}"
    );
    assert_eq!(sale.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seeding_racing_holds_never_frees_a_held_seat() {
    let sale = OnSale::with_seats(40).await;
    let customers: Vec<_> = (1..=10).map(customer).collect();
    let tokens = sale.admit(&customers).await;

    // Holds and a seeding of the same seats at once: whichever lands first, no hold that was
    // answered 201 loses its seat to the seeding.
    let holds = futures::future::join_all(customers.iter().zip(&tokens).enumerate().map(
        |(n, (customer, token))| {
            let sale = &sale;
            async move {
                sale.hold(customer, token, &[seat(4 * n + 1), seat(4 * n + 2)])
                    .await
            }
        },
    ));
    // The same layout as the on-sale's, so a hold's price check passes whichever write lands
    // first.
    let all_seats = sale.layout.clone().expect("seeded");
    let seeding = seed(&sale, &all_seats);
    let (answers, _) = futures::join!(holds, seeding);
    let orders: Vec<String> = answers
        .iter()
        .filter(|answer| answer.status() == 201)
        .map(|answer| {
            lineup_tests::body(answer)["orderId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(!orders.is_empty(), "some holds went through");

    // The conditional writes themselves, without the check through the index first: every held
    // seat is left alone and reported, every other seat is rewritten.
    let in_use = sale
        .ledger
        .seed_seats(
            &sale.event,
            &all_seats,
            &Default::default(),
            sale.clock.now(),
        )
        .await
        .expect("seed");
    let stored = sale.seats().await;
    let held: Vec<&String> = stored
        .iter()
        .filter(|(_, item)| item["status"] == "HELD")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(held.len(), 2 * orders.len());
    let mut reported: Vec<&str> = in_use.iter().map(|seat| seat.as_str()).collect();
    reported.sort_unstable();
    assert_eq!(
        reported,
        held.iter().map(|id| id.as_str()).collect::<Vec<_>>()
    );
    for (id, item) in &stored {
        if item["status"] == "HELD" {
            assert!(
                orders.iter().any(|order| item["held_by"] == order.as_str()),
                "{id}"
            );
        }
    }
}

#[tokio::test]
async fn seeding_a_new_event_writes_every_seat_available() {
    let sale = OnSale::with_seats(0).await;
    seed(&sale, &seats(30)).await.expect("seed");
    let stored = sale.seats().await;
    assert_eq!(stored.len(), 30);
    assert!(stored.values().all(|item| item["status"] == "AVAILABLE"));
    // Seeding again before the on-sale (nothing held) is allowed: it rewrites the same seats.
    seed(&sale, &seats(30)).await.expect("seed again");
    assert_eq!(sale.seats().await.len(), 30);
}

#[tokio::test]
async fn open_set_and_close_change_what_they_name() {
    let sale = OnSale::with_seats(0).await;
    let queue = sale.queue.as_ref();
    let records = lineup_tests::records().await;
    let admin = admin(&sale, &records);
    let now = sale.clock.now();
    let change = |max_active, rate| SettingsChange {
        max_active,
        rate,
        ..SettingsChange::default()
    };

    admin.close(&sale.event, now).await.expect("close");
    let set = admin
        .set(&sale.event, &change(Some(7), None), now)
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

    let opened = admin
        .open(&sale.event, &change(None, Some(3)), now)
        .await
        .expect("open");
    assert_eq!(opened.state, QueueState::Open);
    assert_eq!((opened.max_active, opened.admit_per_second), (7, 3));
    assert_eq!(queue.settings(&sale.event).await.unwrap(), Some(opened));
    let joined = lineup::application::join::handle(
        &sale.queue_api,
        lineup_tests::join_request(&sale.event, &customer(9)),
    )
    .await;
    assert_eq!(
        joined.status(),
        201,
        "join when open: {}",
        lineup_tests::body(&joined)
    );

    let unknown = lineup_tests::fresh_event();
    let missing = admin.set(&unknown, &change(Some(1), None), now).await;
    assert!(matches!(missing, Err(AdminError::UnknownEvent(_))));
    assert!(matches!(
        admin.close(&unknown, now).await,
        Err(AdminError::UnknownEvent(_))
    ));
    assert!(queue.settings(&unknown).await.unwrap().is_none());
}

#[tokio::test]
async fn a_ticket_limit_is_set_at_open_changed_cleared_and_never_touches_the_draw_seed() {
    let sale = OnSale::with_seats(0).await;
    let queue = sale.queue.as_ref();
    let records = lineup_tests::records().await;
    let admin = admin(&sale, &records);
    let now = sale.clock.now();
    let settings_key = lineup::adapters::redis::keys::EventKeys::new(&sale.event).settings;
    let redis = lineup_tests::redis().await;
    // A settings hash field as stored (what the hold path's script reads).
    let stored = |field: &'static str| {
        let (key, mut redis) = (settings_key.clone(), redis.clone());
        async move {
            redis::cmd("HGET")
                .arg(key)
                .arg(field)
                .query_async::<Option<String>>(&mut redis)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        queue
            .settings(&sale.event)
            .await
            .unwrap()
            .unwrap()
            .ticket_limit,
        None
    );
    assert_eq!(stored("ticket_limit").await, None, "no limit: no field");

    let limit = |n| SettingsChange {
        ticket_limit: Some(n),
        ..SettingsChange::default()
    };
    let opened = admin.open(&sale.event, &limit(4), now).await.expect("open");
    // The first durable save made the event's seed; the cache holds that one.
    let seed = stored("draw_seed")
        .await
        .expect("configuring made a draw seed");
    assert_eq!(opened.ticket_limit, Some(4));
    assert_eq!(stored("ticket_limit").await.as_deref(), Some("4"));
    assert_eq!(
        queue.settings(&sale.event).await.unwrap(),
        Some(opened.clone())
    );
    assert!(event_admin::describe(&sale.event, &opened).contains("at most 4 tickets per customer"));

    // `set` changes the limit; a `set` that names something else keeps it.
    let raised = admin.set(&sale.event, &limit(6), now).await.expect("set");
    assert_eq!(raised.ticket_limit, Some(6));
    let repaced = SettingsChange {
        rate: Some(9),
        ..SettingsChange::default()
    };
    let kept = admin
        .set(&sale.event, &repaced, now)
        .await
        .expect("set rate");
    assert_eq!((kept.ticket_limit, kept.admit_per_second), (Some(6), 9));
    assert_eq!(stored("ticket_limit").await.as_deref(), Some("6"));

    // `--no-ticket-limit` removes the field.
    let clear = SettingsChange {
        no_ticket_limit: true,
        ..SettingsChange::default()
    };
    let cleared = admin.set(&sale.event, &clear, now).await.expect("clear");
    assert_eq!(cleared.ticket_limit, None);
    assert_eq!(stored("ticket_limit").await, None);
    assert_eq!(queue.settings(&sale.event).await.unwrap(), Some(cleared));

    // Refused changes change nothing.
    assert!(matches!(
        admin.set(&sale.event, &limit(0), now).await,
        Err(AdminError::ZeroTicketLimit)
    ));
    assert_eq!(stored("ticket_limit").await, None);

    // None of this re-rolled the pre-queue draw.
    assert_eq!(stored("draw_seed").await, Some(seed));
}

/// The operator's use cases over the sale's Redis and the shared events table.
fn admin<'a>(
    sale: &'a OnSale,
    records: &'a lineup::adapters::dynamo::event_records::DynamoEventRecords,
) -> event_admin::EventAdmin<'a> {
    event_admin::EventAdmin::new(sale.queue.as_ref(), records, "a test")
}
