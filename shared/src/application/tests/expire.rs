//! Unit tests of the expiry sweep ([`crate::application::expire`]) over the in-memory ledger,
//! seat map and queue: lapsed holds freed, the seats left recorded, sold-out queues closed (and
//! only those), what a failing store does to the run, and the scheduled-event check.

use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::application::error::{LineupError, Store};
use crate::application::expire::{Expiry, ExpiryReport};
use crate::application::fakes::ledger::MemoryLedger;
use crate::application::fakes::outage::Faulty;
use crate::application::fakes::seat_map::MemorySeatMap;
use crate::application::ports::ledger::{HoldRequest, Order, OrderStatus, SeatLedger, SweepReport};
use crate::application::ports::queue::{Admitter, EventSettingsStore, StatusBoard};
use crate::domain::event_settings::QueueState;
use crate::domain::ids::{EventId, SeatId};
use crate::domain::layout::{IndexedLayout, SeatLayout};
use crate::domain::seat::NewSeat;
use crate::domain::seat::SeatStatus::{self, Available, Held, Sold};

use super::admit::{customer, invocation, scheduled_event, secs, settings, t0, World};

/// Four seats in one row: `A-1`..`A-4`, indexes 0-3.
fn four_seats() -> SeatLayout {
    let seats: Vec<NewSeat> = (1..=4)
        .map(|n| NewSeat {
            seat_id: seat(n),
            section: "Floor".to_owned(),
            row: "A".to_owned(),
            price: 5_000,
            currency: "EUR".to_owned(),
        })
        .collect();
    SeatLayout::from_seats(&seats).unwrap()
}

fn seat(n: u32) -> SeatId {
    SeatId::parse(&format!("A-{n}")).unwrap()
}

/// The queue, the events table and the clock of [`World`], with a ledger and a seat map.
struct Sweep {
    world: World,
    ledger: MemoryLedger,
    seat_map: MemorySeatMap,
}

impl Sweep {
    fn new() -> Self {
        Self {
            world: World::new(),
            ledger: MemoryLedger::new(),
            seat_map: MemorySeatMap::new(),
        }
    }

    fn expiry(&self) -> Expiry<'_> {
        Expiry {
            sweeper: &self.ledger,
            seats: &self.seat_map,
            events: self.world.queue.as_ref(),
            settings: self.world.queue.as_ref(),
            clock: &self.world.clock,
        }
    }

    /// An open event, its four seats seeded in the ledger and the seat map, shown as `shown`.
    async fn event(&self, name: &str, shown: [SeatStatus; 4]) -> EventId {
        let event = self.world.open(name, settings(5, 100)).await;
        let layout = four_seats();
        self.ledger.seed(&event, &layout);
        self.seat_map.seed(&event, &layout);
        for (index, status) in shown.into_iter().enumerate() {
            self.seat_map.show(&event, index as u32, status);
        }
        event
    }

    /// `customer` holds `seats` at `now` (a hold lasts five minutes).
    async fn hold(&self, event: &EventId, who: u64, seats: &[u32], now: SystemTime) -> Order {
        let layout = IndexedLayout::new(std::sync::Arc::new(four_seats()));
        let request = HoldRequest {
            event: event.clone(),
            customer: customer(who),
            seats: seats
                .iter()
                .map(|n| layout.seat(&seat(*n)).unwrap())
                .collect(),
            ticket_limit: None,
            group: None,
            admission_expires_at: now + secs(600),
            now,
        };
        self.ledger.hold(&request).await.unwrap()
    }

    fn status_of(&self, order: &Order) -> OrderStatus {
        self.ledger
            .stored_order(&order.order_id)
            .unwrap()
            .order
            .status
    }

    async fn is_open(&self, event: &EventId) -> bool {
        let open = self
            .world
            .queue
            .open_events()
            .await
            .unwrap()
            .contains(event);
        let settings = self.world.queue.settings(event).await.unwrap().unwrap();
        assert_eq!(open, settings.state != QueueState::Closed);
        open
    }
}

#[tokio::test]
async fn the_sweep_expires_lapsed_holds_frees_their_seats_and_records_the_seats_left() {
    let sweep = Sweep::new();
    let event = sweep.event("sweep", [Held, Held, Held, Available]).await;
    let lapsed = sweep.hold(&event, 1, &[1, 2], t0()).await;
    let live = sweep.hold(&event, 2, &[3], t0() + secs(240)).await;
    sweep.world.clock.advance(secs(360));

    let report = sweep.expiry().run().await.unwrap();
    assert_eq!(
        report,
        ExpiryReport {
            sweep: SweepReport {
                orders_expired: 1,
                seats_released: 2,
                orders_failed: 0
            },
            sold_out: vec![],
        }
    );
    assert_eq!(sweep.status_of(&lapsed), OrderStatus::Expired);
    assert_eq!(sweep.status_of(&live), OrderStatus::Pending);
    assert_eq!(
        sweep.ledger.seats_in(&event, Available),
        vec![seat(1), seat(2), seat(4)]
    );
    assert_eq!(sweep.ledger.seats_in(&event, Held), vec![seat(3)]);
    // The seat map is only read: it follows the seats table's stream, not the sweep.
    assert_eq!(sweep.seat_map.is_available(&event, 0), Some(false));
    assert_eq!(
        sweep.world.queue.seats_left(&event),
        Some(4),
        "nothing sold"
    );
    assert!(sweep.is_open(&event).await);

    // Nothing lapsed since: the next sweep does nothing.
    let again = sweep.expiry().run().await.unwrap();
    assert_eq!(again.sweep, SweepReport::default());
}

#[tokio::test]
async fn a_sold_out_event_has_its_queue_closed_and_its_status_published() {
    let sweep = Sweep::new();
    let gone = sweep.event("gone", [Sold; 4]).await;
    let report = sweep.expiry().run().await.unwrap();

    assert_eq!(report.sold_out, vec!["gone".to_owned()]);
    assert!(!sweep.is_open(&gone).await);
    assert_eq!(
        sweep.world.queue.closed_reason(&gone).as_deref(),
        Some("sold_out")
    );
    assert_eq!(sweep.world.queue.seats_left(&gone), Some(0));
    let status: Value =
        serde_json::from_str(&sweep.world.queue.status_json(&gone).await.unwrap().unwrap())
            .unwrap();
    assert_eq!(status["state"], "sold_out");
    assert_eq!(status["seatsLeft"], 0);

    // Closed: no longer an open event, so the next sweep leaves it alone.
    let again = sweep.expiry().run().await.unwrap();
    assert!(again.sold_out.is_empty());
}

#[tokio::test]
async fn an_event_with_a_seat_held_or_available_stays_open() {
    let sweep = Sweep::new();
    let held = sweep.event("one-held", [Sold, Sold, Held, Sold]).await;
    let free = sweep.event("one-free", [Sold, Available, Sold, Sold]).await;

    let report = sweep.expiry().run().await.unwrap();
    assert!(report.sold_out.is_empty(), "{report:?}");
    for event in [&held, &free] {
        assert!(sweep.is_open(event).await);
        assert_eq!(sweep.world.queue.closed_reason(event), None);
        assert_eq!(sweep.world.queue.seats_left(event), Some(1));
    }
    assert_eq!(sweep.world.queue.calls("close"), 0);
}

#[tokio::test]
async fn an_event_whose_seat_map_is_missing_or_unreadable_is_skipped_not_the_others() {
    let sweep = Sweep::new();
    // Sorted by id, as the open events are listed: a-unread, b-rebuilding, c-unseeded, d-gone.
    let unread = sweep.event("a-unread", [Sold; 4]).await;
    let rebuilding = sweep.event("b-rebuilding", [Sold; 4]).await;
    sweep.seat_map.drop_bitsets(&rebuilding);
    let unseeded = sweep.world.open("c-unseeded", settings(5, 100)).await;
    let gone = sweep.event("d-gone", [Sold; 4]).await;
    sweep.seat_map.fail_next(1);

    let report = sweep.expiry().run().await.unwrap();
    assert_eq!(report.sold_out, vec!["d-gone".to_owned()]);
    for skipped in [&unread, &rebuilding, &unseeded] {
        assert!(sweep.is_open(skipped).await, "{skipped:?}");
        assert_eq!(sweep.world.queue.seats_left(skipped), None, "{skipped:?}");
    }
    assert!(!sweep.is_open(&gone).await);
}

#[tokio::test]
async fn a_failed_sweep_fails_the_run_changes_no_order_and_the_sold_out_check_still_runs() {
    let sweep = Sweep::new();
    let open = sweep
        .event("still-open", [Held, Available, Available, Available])
        .await;
    let lapsed = sweep.hold(&open, 1, &[1], t0()).await;
    let gone = sweep.event("gone", [Sold; 4]).await;
    sweep.world.clock.advance(secs(360));
    let before = sweep.ledger.snapshot();

    sweep.ledger.go_down();
    let failed = sweep.expiry().run().await;
    assert!(
        matches!(
            failed,
            Err(LineupError::Unavailable {
                store: Store::Seats,
                ..
            })
        ),
        "{failed:?}"
    );
    sweep.ledger.come_back();
    assert_eq!(sweep.ledger.snapshot(), before, "no order or seat changed");
    assert_eq!(sweep.status_of(&lapsed), OrderStatus::Pending);
    // The two chores are independent: the sold-out check ran all the same.
    assert!(!sweep.is_open(&gone).await);
    assert_eq!(sweep.world.queue.seats_left(&open), Some(4));

    // The next sweep expires the order.
    let report = sweep.expiry().run().await.unwrap();
    assert_eq!(report.sweep.orders_expired, 1);
}

#[tokio::test]
async fn a_queue_outage_fails_the_run_after_the_sweep_is_done() {
    let sweep = Sweep::new();
    let event = sweep
        .event("queue-down", [Held, Available, Available, Available])
        .await;
    let lapsed = sweep.hold(&event, 1, &[1], t0()).await;
    sweep.world.clock.advance(secs(360));

    sweep.world.queue.go_down();
    let failed = sweep.expiry().run().await;
    assert!(
        matches!(
            failed,
            Err(LineupError::Unavailable {
                store: Store::Queue,
                ..
            })
        ),
        "{failed:?}"
    );
    assert_eq!(sweep.status_of(&lapsed), OrderStatus::Expired);
    assert_eq!(sweep.ledger.seats_in(&event, Held), Vec::<SeatId>::new());
}

#[tokio::test]
async fn handle_refuses_anything_but_a_scheduled_event() {
    let sweep = Sweep::new();
    let event = sweep
        .event("scheduled", [Held, Available, Available, Available])
        .await;
    sweep.hold(&event, 1, &[1], t0()).await;
    sweep.world.clock.advance(secs(360));
    let mut other_detail = scheduled_event();
    other_detail["detail-type"] = "AWS API Call via CloudTrail".into();
    let deadline = t0() + Duration::from_secs(900);

    for payload in [other_detail, json!({ "Records": [] })] {
        match sweep.expiry().handle(invocation(payload, deadline)).await {
            Err(error @ LineupError::InvalidRequest { .. }) => {
                assert_eq!(error.code(), "not_a_scheduled_event")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(sweep.ledger.calls("expire_lapsed"), 0, "nothing swept");
    assert_eq!(sweep.world.queue.calls("open_events"), 0);

    let report = sweep
        .expiry()
        .handle(invocation(scheduled_event(), deadline))
        .await
        .unwrap();
    assert_eq!(report.sweep.orders_expired, 1);
}
