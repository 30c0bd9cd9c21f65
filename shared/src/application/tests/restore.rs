//! Unit tests of what a cache loss leaves and how it is put back ([`crate::application::restore`],
//! [`crate::application::numbering`]) over the in-memory queue and events table: the event from
//! its record, each customer from their ticket (once), made-up ids, and numbers handed out only
//! under a durable ceiling.

use std::time::{Duration, SystemTime};

use crate::application::error::LineupError;
use crate::application::fakes::outage::Faulty;
use crate::application::ports::event_records::{
    AdmissionCursor, Checkpoint, DrawPublication, EventRecords,
};
use crate::application::ports::queue::{
    Admitter, EventSettingsStore, NumberRange, NumberRanges, PlaceRestorer, RestoreContext,
    RestoreDone, Standing, WaitingLine,
};
use crate::application::restore::TicketRestore;
use crate::domain::clock::unix_millis;
use crate::domain::draw;
use crate::domain::event_settings::EventSettings;
use crate::domain::ids::EventId;
use crate::domain::signing::QueueTicket;

use super::admit::{customer, event, secs, settings, t0, World};

fn at(seconds_before_t0: u64) -> SystemTime {
    t0() - secs(seconds_before_t0)
}

/// Admission stood at 40 (called at `t0 − 60 s`, 20 at `t0 − 100 s`), saved last at `t0 − 30 s`.
fn cursor_at_40() -> AdmissionCursor {
    AdmissionCursor {
        serving: 40,
        next_number: 90,
        entrants: Some(0),
        drawn: true,
        checkpoints: vec![
            Checkpoint {
                at_ms: unix_millis(at(100)),
                serving: 20,
            },
            Checkpoint {
                at_ms: unix_millis(at(60)),
                serving: 40,
            },
        ],
        saved_at_ms: Some(unix_millis(at(30))),
        first_call_at_ms: None,
    }
}

/// An event the events table has (settings, `cursor`, a ceiling of 128) and the cache lost.
async fn lost(
    world: &World,
    name: &str,
    settings: EventSettings,
    cursor: AdmissionCursor,
) -> EventId {
    let event = event(name);
    world
        .records
        .save_settings(&event, &settings, None)
        .await
        .unwrap();
    world.records.save_cursor(&event, &cursor).await.unwrap();
    world.records.reserve_numbers(&event, 128).await.unwrap();
    event
}

fn ticket(number: Option<u64>, issued_at: SystemTime) -> QueueTicket {
    QueueTicket { number, issued_at }
}

#[tokio::test]
async fn an_event_lost_from_the_cache_is_put_back_from_its_durable_record() {
    let world = World::new();
    let settings = settings(7, 300);
    let event = lost(&world, "reloaded", settings.clone(), cursor_at_40()).await;
    assert!(!world.queue.has_event(&event));

    assert!(world.restorer.restore_event(&event, t0()).await.unwrap());
    assert_eq!(world.queue.settings(&event).await.unwrap(), Some(settings));
    assert_eq!(
        world.queue.serving(&event),
        Some(40),
        "where admission stood"
    );
    // Numbering goes on past every number the lost cache could have handed out.
    let range = world.queue.number_range(&event).await.unwrap().unwrap();
    assert_eq!(
        range,
        NumberRange {
            next_number: 128,
            ceiling: 128,
            block: 0,
            reserved_at: None,
            reserved_from: 0
        }
    );
    let context = world
        .queue
        .restore_context(&event, &customer(1))
        .await
        .unwrap();
    assert_eq!(
        context,
        Some(RestoreContext {
            restored_at: t0(),
            serving: 40,
            lost_since: Some(at(30)),
            done: None,
        })
    );
    assert!(world.queue.open_events().await.unwrap().contains(&event));
    // Whether it exists (kept by the instance), then the record read fresh after the lock.
    assert_eq!(world.records.calls("event"), 2);
}

#[tokio::test]
async fn a_ticket_issued_before_the_loss_puts_its_holder_back_at_their_number() {
    let world = World::new();
    let event = lost(&world, "waiting", settings(7, 300), cursor_at_40()).await;
    world.restorer.restore_event(&event, t0()).await.unwrap();

    let restored = world
        .restorer
        .restore_ticket(&event, &customer(50), ticket(Some(50), at(10)), t0())
        .await;
    assert_eq!(restored.unwrap(), TicketRestore::Restored);
    match world
        .queue
        .standing(&event, &customer(50), t0())
        .await
        .unwrap()
    {
        Some(Standing::Waiting {
            number, serving, ..
        }) => assert_eq!((number, serving), (50, 40)),
        other => panic!("expected waiting at 50, got {other:?}"),
    }
    assert_eq!(
        world.queue.restore_done(&event, &customer(50)),
        Some(RestoreDone::Placed)
    );
}

#[tokio::test]
async fn a_number_called_before_the_loss_comes_back_admitted_for_the_rest_of_its_session() {
    let world = World::new();
    let settings = settings(7, 300);
    let event = lost(&world, "called", settings.clone(), cursor_at_40()).await;
    world.restorer.restore_event(&event, t0()).await.unwrap();

    let restored = world
        .restorer
        .restore_ticket(&event, &customer(30), ticket(Some(30), at(600)), t0())
        .await;
    assert_eq!(restored.unwrap(), TicketRestore::Restored);
    // Called at the checkpoint that passed it (t0 − 60 s): claim window and session from then,
    // plus the 30 s of outage (from the last save) that fell inside them.
    let expected = at(60) + settings.claim_window + settings.session + secs(30);
    assert_eq!(
        world.queue.active_until(&event, &customer(30)),
        Some(expected)
    );
    assert_eq!(
        world
            .queue
            .standing(&event, &customer(30), t0())
            .await
            .unwrap(),
        Some(Standing::Admitted {
            expires_at: expected
        })
    );
    assert!(world.queue.waiting(&event).is_empty(), "not called again");
}

#[tokio::test]
async fn a_number_whose_session_ended_before_the_loss_is_not_restored_and_is_remembered() {
    let world = World::new();
    let mut cursor = cursor_at_40();
    cursor.checkpoints[0].at_ms = unix_millis(at(1_000));
    let event = lost(&world, "too-late", settings(7, 300), cursor).await;
    world.restorer.restore_event(&event, t0()).await.unwrap();

    // Number 10 was called at t0 − 1,000 s: claim window and session ended at t0 − 340 s.
    let first = world
        .restorer
        .restore_ticket(&event, &customer(10), ticket(Some(10), at(2_000)), t0())
        .await;
    assert_eq!(first.unwrap(), TicketRestore::Expired);
    assert_eq!(world.queue.active_until(&event, &customer(10)), None);
    assert_eq!(
        world.queue.restore_done(&event, &customer(10)),
        Some(RestoreDone::Expired)
    );

    // Asked again: answered from the cache's memory of it, nothing put back, nothing durable read.
    let (places, reads) = (
        world.queue.calls("restore_place"),
        world.records.calls("event"),
    );
    let again = world
        .another_restorer()
        .restore_ticket(&event, &customer(10), ticket(Some(10), at(2_000)), t0())
        .await;
    assert_eq!(again.unwrap(), TicketRestore::Expired);
    assert_eq!(world.queue.calls("restore_place"), places);
    assert_eq!(world.records.calls("event"), reads);
}

#[tokio::test]
async fn a_ticket_issued_since_the_restore_restores_nothing() {
    let world = World::new();
    let event = lost(&world, "fresh-ticket", settings(7, 300), cursor_at_40()).await;
    world.restorer.restore_event(&event, t0()).await.unwrap();

    for issued in [t0(), t0() + secs(5)] {
        let restored = world
            .restorer
            .restore_ticket(
                &event,
                &customer(60),
                ticket(Some(60), issued),
                t0() + secs(10),
            )
            .await;
        assert_eq!(restored.unwrap(), TicketRestore::Nothing);
    }
    assert_eq!(world.queue.calls("restore_place"), 0);
    assert_eq!(
        world
            .queue
            .standing(&event, &customer(60), t0())
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_customer_is_put_back_once_and_not_after_leaving() {
    let world = World::new();
    let event = lost(&world, "once", settings(7, 300), cursor_at_40()).await;
    world.restorer.restore_event(&event, t0()).await.unwrap();
    let who = customer(70);
    let present = || {
        world
            .restorer
            .restore_ticket(&event, &who, ticket(Some(70), at(10)), t0())
    };

    assert_eq!(present().await.unwrap(), TicketRestore::Restored);
    assert_eq!(
        present().await.unwrap(),
        TicketRestore::Nothing,
        "already back"
    );
    assert!(world.queue.leave(&event, &customer(70)).await.unwrap());
    assert_eq!(
        present().await.unwrap(),
        TicketRestore::Nothing,
        "left: stays out"
    );
    assert_eq!(
        world
            .queue
            .standing(&event, &customer(70), t0())
            .await
            .unwrap(),
        None
    );
    assert_eq!(world.queue.calls("restore_place"), 1);
}

#[tokio::test]
async fn a_made_up_event_is_not_restored_takes_no_lock_and_costs_one_read() {
    let world = World::new();
    let made_up = event("made-up");

    assert!(!world.restorer.restore_event(&made_up, t0()).await.unwrap());
    assert!(!world.restorer.restore_event(&made_up, t0()).await.unwrap());
    assert_eq!(
        world.records.calls("event"),
        1,
        "kept as unknown by the instance"
    );
    assert_eq!(world.queue.calls("lock_restore"), 0);
    assert!(!world.queue.has_event(&made_up));
    let presented = world
        .restorer
        .restore_ticket(&made_up, &customer(1), ticket(Some(1), at(10)), t0())
        .await;
    assert_eq!(presented.unwrap(), TicketRestore::Nothing);
}

#[tokio::test]
async fn while_another_instance_reloads_the_event_the_others_are_told_to_retry() {
    let world = World::new();
    let event = lost(&world, "crowd", settings(7, 300), cursor_at_40()).await;
    // Another instance has taken the duty.
    assert!(world.queue.lock_restore(&event, secs(3)).await.unwrap());

    let retry = world.restorer.restore_event(&event, t0()).await;
    assert!(
        matches!(retry, Err(LineupError::CacheRecovering)),
        "{retry:?}"
    );
    assert_eq!(world.records.calls("event"), 1, "only whether it exists");
    assert_eq!(world.queue.calls("restore_event"), 0);
    assert!(!world.queue.has_event(&event));
}

#[tokio::test]
async fn pre_queue_tickets_come_back_to_the_pre_queue_or_at_their_drawn_number() {
    let world = World::new();
    // Lost before opening: a pre-queue ticket goes back to the pre-queue.
    let early = lost(
        &world,
        "before-opening",
        EventSettings::opening_at(t0() + secs(600)),
        AdmissionCursor::default(),
    )
    .await;
    world.restorer.restore_event(&early, t0()).await.unwrap();
    let restored = world
        .restorer
        .restore_ticket(&early, &customer(1), ticket(None, at(10)), t0())
        .await;
    assert_eq!(restored.unwrap(), TicketRestore::Restored);
    assert!(world.queue.in_pre_queue(&early, &customer(1)));

    // Lost after the draw was published: the number comes from the published draw.
    let cursor = AdmissionCursor {
        entrants: Some(3),
        drawn: true,
        ..AdmissionCursor::default()
    };
    let drawn = lost(&world, "after-draw", settings(7, 300), cursor).await;
    let seed = world.records.event(&drawn).await.unwrap().unwrap().seed;
    let entrants = (1..=3).map(|n| seed.entrant(&customer(n)));
    let published = draw::numbers(&seed, entrants);
    let (summary, chunks) = draw::publish(&published, &drawn, &seed, at(60));
    world
        .records
        .publish_draw(&drawn, &summary, &chunks)
        .await
        .unwrap();
    world.restorer.restore_event(&drawn, t0()).await.unwrap();

    let number = published.numbers[&seed.entrant(&customer(2))];
    let restored = world
        .restorer
        .restore_ticket(&drawn, &customer(2), ticket(None, at(120)), t0())
        .await;
    assert_eq!(restored.unwrap(), TicketRestore::Restored);
    assert_eq!(world.queue.waiting(&drawn), vec![(number, customer(2))]);
    // Not in the draw, after opening: nothing to go by.
    let stranger = world
        .restorer
        .restore_ticket(&drawn, &customer(9), ticket(None, at(120)), t0())
        .await;
    assert_eq!(stranger.unwrap(), TicketRestore::Nothing);
}

#[tokio::test]
async fn numbers_are_handed_out_only_under_the_durable_ceiling() {
    let world = World::new();
    let event = world.open("ceiling", settings(7, 300)).await;

    // Nothing reserved yet: the first join takes the duty, the next waits for it.
    let first = world.queue.join(&event, &customer(1), t0()).await;
    assert!(
        matches!(first, Err(LineupError::NumbersExhausted { top_up: true })),
        "{first:?}"
    );
    let second = world.queue.join(&event, &customer(2), t0()).await;
    assert!(
        matches!(second, Err(LineupError::NumbersExhausted { top_up: false })),
        "{second:?}"
    );

    world.restorer.numbers.top_up(&event, t0()).await.unwrap();
    let ceiling = world.records.number_ceiling(&event).unwrap();
    assert_eq!(ceiling, 64, "the smallest range");
    let mut duties = Vec::new();
    for n in 1..=ceiling {
        let joined = world.queue.join(&event, &customer(n), t0()).await.unwrap();
        let Standing::Waiting { number, .. } = joined.standing else {
            panic!("expected a number, got {joined:?}");
        };
        assert_eq!(number, n);
        if joined.top_up_numbers {
            duties.push(number);
        }
    }
    assert_eq!(
        duties,
        vec![32],
        "one join takes the top-up, when half the range is left"
    );
    let past = world.queue.join(&event, &customer(ceiling + 1), t0()).await;
    assert!(
        matches!(past, Err(LineupError::NumbersExhausted { top_up: false })),
        "{past:?}"
    );
    assert_eq!(world.records.number_ceiling(&event), Some(64));
}

#[tokio::test]
async fn a_top_up_reserves_the_next_range_durably_and_a_restore_numbers_past_it() {
    let world = World::new();
    let event = world.open("top-up", settings(7, 300)).await;
    world.restorer.numbers.top_up(&event, t0()).await.unwrap();
    for n in 1..=40 {
        world.queue.join(&event, &customer(n), t0()).await.unwrap();
    }

    // 40 numbers in 2 s: 20 a second, so a range of 4 s of joins (80), past the 64 reserved.
    let later = t0() + secs(2);
    world.restorer.numbers.top_up(&event, later).await.unwrap();
    assert_eq!(world.records.number_ceiling(&event), Some(144));
    let range = world.queue.number_range(&event).await.unwrap().unwrap();
    assert_eq!(
        range,
        NumberRange {
            next_number: 40,
            ceiling: 144,
            block: 80,
            reserved_at: Some(later),
            reserved_from: 40
        }
    );

    // The cache is lost: numbering starts again past everything reserved, never below.
    world.queue.flush();
    world.restorer.restore_event(&event, later).await.unwrap();
    let joined = world.queue.join(&event, &customer(41), later).await;
    assert!(
        matches!(joined, Err(LineupError::NumbersExhausted { top_up: true })),
        "{joined:?}"
    );
    world.restorer.numbers.top_up(&event, later).await.unwrap();
    let joined = world
        .queue
        .join(&event, &customer(41), later)
        .await
        .unwrap();
    assert!(
        matches!(joined.standing, Standing::Waiting { number: 145, .. }),
        "{joined:?}"
    );
}

#[tokio::test]
async fn reserving_through_a_draw_writes_only_when_needed_and_never_lowers_the_ceiling() {
    let world = World::new();
    let event = world.open("through", settings(7, 300)).await;
    let numbers = &world.restorer.numbers;

    numbers.reserve_through(&event, 10, t0()).await.unwrap();
    assert_eq!(
        world.records.number_ceiling(&event),
        Some(74),
        "10 and a range past them"
    );
    numbers.reserve_through(&event, 50, t0()).await.unwrap();
    assert_eq!(
        world.records.calls("reserve_numbers"),
        1,
        "covered: no write"
    );
    assert_eq!(world.records.reserve_numbers(&event, 20).await.unwrap(), 74);
    numbers
        .reserve_through(&event, 100, t0() + Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(world.records.number_ceiling(&event), Some(164));
    assert_eq!(
        world
            .queue
            .number_range(&event)
            .await
            .unwrap()
            .unwrap()
            .ceiling,
        164
    );

    // The cache lost the event: nothing is reserved for a range nobody holds.
    world.queue.flush();
    let lost = numbers.reserve_through(&event, 500, t0()).await;
    assert!(
        matches!(lost, Err(LineupError::CacheRecovering)),
        "{lost:?}"
    );
    assert_eq!(world.records.number_ceiling(&event), Some(164));
}

#[tokio::test]
async fn a_cache_lost_after_the_draw_was_published_is_reloaded_drawn_from_the_published_draw() {
    use crate::application::ports::queue::TickMode;

    let world = World::new();
    // The draw was published, then its numbers failed: the cursor says closed with 3, not
    // drawn (and the published draw has 4: the published one is what stands).
    let cursor = AdmissionCursor {
        entrants: Some(3),
        drawn: false,
        ..AdmissionCursor::default()
    };
    let drawn = lost(
        &world,
        "published-not-drawn",
        settings(7, 300),
        cursor.clone(),
    )
    .await;
    let seed = world.records.event(&drawn).await.unwrap().unwrap().seed;
    let published = draw::numbers(&seed, (1..=4).map(|n| seed.entrant(&customer(n))));
    let (summary, chunks) = draw::publish(&published, &drawn, &seed, at(60));
    world
        .records
        .publish_draw(&drawn, &summary, &chunks)
        .await
        .unwrap();
    let reads = world.records.calls("draw_summary");

    assert!(world.restorer.restore_event(&drawn, t0()).await.unwrap());
    assert_eq!(world.records.calls("draw_summary"), reads + 1);
    let plan = world
        .queue
        .tick(&drawn, t0(), TickMode::Plan)
        .await
        .unwrap();
    assert!(!plan.needs_draw, "never drawn again");
    assert!(plan.drawn);
    assert_eq!(plan.status.entrants, Some(4), "the published count");
    let status = plan.status.status(drawn.as_str(), t0());
    assert!(status.draw.published);
    assert_eq!(status.draw.seed.as_deref(), Some(seed.reveal()));

    // Not published: re-loaded as the cursor says, and drawn by the next tick.
    let undrawn = lost(&world, "not-published", settings(7, 300), cursor).await;
    assert!(world.restorer.restore_event(&undrawn, t0()).await.unwrap());
    let plan = world
        .queue
        .tick(&undrawn, t0(), TickMode::Plan)
        .await
        .unwrap();
    assert!(plan.needs_draw);
    assert_eq!(plan.status.entrants, Some(3));

    // A cursor that says drawn costs no read of the draw.
    let reads = world.records.calls("draw_summary");
    let done = AdmissionCursor {
        entrants: Some(4),
        drawn: true,
        ..AdmissionCursor::default()
    };
    let finished = lost(&world, "drawn", settings(7, 300), done).await;
    assert!(world.restorer.restore_event(&finished, t0()).await.unwrap());
    assert_eq!(world.records.calls("draw_summary"), reads);
}
