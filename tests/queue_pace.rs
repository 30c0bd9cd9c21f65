//! The admission pace the admit tick counts and the status publishes (ADR 0029): slots freed,
//! slot time held and no-shows, counted in `admit_tick.lua`'s one round trip, make the status's
//! `pace`, from which a waiting client computes its ETA range.

use std::time::{Duration, SystemTime};

use lineup::adapters::redis::keys::EventKeys;
use lineup::application::ports::queue::{Admitter, WaitingLine};
use lineup::domain::event_settings::{EventSettings, QueueState};
use lineup::domain::ids::EventId;
use lineup::domain::status::EventStatus;
use lineup_tests::*;

/// The public status the last tick wrote.
async fn status_of(event: &EventId) -> EventStatus {
    let json: String = redis::AsyncCommands::get(&mut redis().await, EventKeys::new(event).status)
        .await
        .expect("a status");
    serde_json::from_str(&json).expect("status JSON")
}

/// Open since a second before `start`: 4 slots, 100 admissions a second, sessions of `session`.
fn open_with_four_slots(start: SystemTime, session: Duration) -> EventSettings {
    EventSettings {
        state: QueueState::Open,
        opens_at: start - Duration::from_secs(1),
        max_active: 4,
        admit_per_second: 100,
        session,
        claim_window: Duration::from_secs(30),
        ticket_limit: None,
        challenge_difficulty: Default::default(),
        code_required: false,
        groups: Default::default(),
    }
}

#[tokio::test]
async fn the_tick_counts_the_slots_freed_and_held_and_the_status_publishes_the_pace() {
    let queue = queue();
    let start = SystemTime::now();
    let session = Duration::from_secs(60);
    let event = fresh_event();
    configure(&queue, &event, open_with_four_slots(start, session)).await;
    for n in 0..20 {
        queue.join(&event, &customer(n), start).await.expect("join");
    }

    // The cap fills at once: 4 offers, nothing measured yet, so the rate is the pace.
    assert_eq!(queue.admit_tick(&event, start).await.unwrap().admitted, 4);
    let first = status_of(&event).await.pace.expect("a pace once admitting");
    assert_eq!((first.max_active, first.slots_free), (4, 0));
    assert_eq!(first.slot_seconds, None);
    assert_eq!(first.sustained_admits_per_second, 100.0);

    // Two leave; 10 s later the tick counts 2 slots freed and 4 × 10 slot-seconds held, and
    // gives the two slots to the next two.
    for n in 0..2 {
        assert!(queue.leave(&event, &customer(n)).await.unwrap());
    }
    let ten = start + Duration::from_secs(10);
    assert_eq!(queue.admit_tick(&event, ten).await.unwrap().admitted, 2);
    let status = status_of(&event).await;
    let pace = status.pace.expect("a pace");
    // 40 slot-s over 2 freed + 4 / 2 in use: 10 s, and a tenth assumed to hold the whole
    // 60 s session while only 10 s of it has been seen: + 5/6 × 0.1 × (60 − 10).
    let expected = 10.0 + 5.0 / 6.0 * 0.1 * 50.0;
    let slot_seconds = pace.slot_seconds.expect("measured");
    // (The counting started at a whole millisecond: within a millisecond of `start`.)
    assert!((slot_seconds - expected).abs() < 1e-3, "{slot_seconds}");
    assert!((pace.sustained_admits_per_second - 4.0 / expected).abs() < 1e-4);
    assert_eq!(pace.no_show_share, Some(0.0));
    assert_eq!(pace.numbers_per_admission, 1.0);
    // Number 20, 14 to go with the cap full: 14 slots freed at 4 ÷ 14.2 s a second (about
    // 50 s, seen 2.5 s later), not 14 ÷ 100 s as the rate would say.
    let eta = status.eta(20).as_secs_f64();
    assert!((eta - 14.0 * expected / 4.0 - 2.5).abs() < 1e-2, "{eta}");
    assert_eq!(
        pace.quick_slot_seconds, None,
        "2 freed: too few for the forecast"
    );

    // The four offers not claimed lapse (the first two at 30 s, the next two at 40 s), and
    // their slots go to four more: four no-shows of ten admissions.
    let lapsed = start + Duration::from_secs(41);
    assert_eq!(queue.admit_tick(&event, lapsed).await.unwrap().admitted, 4);
    let pace = status_of(&event).await.pace.expect("a pace");
    let no_shows = pace.no_show_share.expect("admissions made");
    assert!((no_shows - 0.4).abs() < 1e-9, "{no_shows}");
    // Six freed before their deadline (nobody claimed): the forecast of the slots. They held
    // 4 × 10 + 4 × 31 slot-seconds, none claimed is in use, no session has ended: 164 ÷ 6 s
    // each; nothing old enough to tell who holds to the end, so the prior.
    assert_eq!(pace.session_seconds, Some(60.0));
    assert_eq!(pace.quick_slot_seconds, Some(27.33));
    assert_eq!(pace.held_to_the_end_share, Some(0.1));
    let held = pace.held_to_deadline.expect("the slots in use by deadline");
    assert!(held.iter().all(|[_, slots]| *slots == 0.0), "{held:?}");
}

#[tokio::test]
async fn the_tick_counts_the_claimed_slots_by_window_and_the_sessions_that_ran_to_their_end() {
    let queue = queue();
    let start = SystemTime::now();
    let event = fresh_event();
    configure(
        &queue,
        &event,
        open_with_four_slots(start, Duration::from_secs(80)),
    )
    .await;
    for n in 0..8 {
        queue.join(&event, &customer(n), start).await.expect("join");
    }
    assert_eq!(queue.admit_tick(&event, start).await.unwrap().admitted, 4);
    // Two claim a second later (their sessions end 80 s after that); two never do.
    let claimed = start + Duration::from_secs(1);
    for n in 0..2 {
        queue
            .standing(&event, &customer(n), claimed)
            .await
            .expect("standing")
            .expect("admitted");
    }
    let report = queue
        .admit_tick(&event, start + Duration::from_secs(2))
        .await
        .unwrap();
    let pace = report.status.pace.expect("the pace counters");
    let windows = pace.windows.expect("an admitting tick's windows");
    assert_eq!(
        windows.width,
        Duration::from_secs(10),
        "an eighth of the session"
    );
    assert_eq!(windows.held.iter().sum::<u64>(), 2, "{windows:?}");
    assert_eq!(windows.admitted.iter().sum::<u64>(), 4, "{windows:?}");
    // The claims are a second old: in the newest window or the one before.
    assert_eq!(windows.held[0] + windows.held[1], 2, "{windows:?}");
    assert_eq!(pace.ended, 0);
    // The offers lapse at 30 s (two more admitted), the two sessions at 81 s: ended.
    queue
        .admit_tick(&event, start + Duration::from_secs(31))
        .await
        .unwrap();
    let report = queue
        .admit_tick(&event, start + Duration::from_secs(82))
        .await
        .unwrap();
    let pace = report.status.pace.expect("the pace counters");
    assert_eq!(pace.ended, 2);
    assert_eq!(
        pace.no_shows, 4,
        "the two at 30 s, the two admitted then at 60 s"
    );
    assert_eq!(
        pace.windows.expect("windows").held.iter().sum::<u64>(),
        0,
        "nobody claimed holds a slot"
    );
}
