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

#[tokio::test]
async fn the_tick_counts_the_slots_freed_and_held_and_the_status_publishes_the_pace() {
    let queue = queue();
    let start = SystemTime::now();
    let session = Duration::from_secs(60);
    let event = fresh_event();
    configure(
        &queue,
        &event,
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
        },
    )
    .await;
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
    // 50 s), not 14 ÷ 100 s as the rate would say.
    let eta = status.eta(20).as_secs_f64();
    assert!((eta - 14.0 * expected / 4.0).abs() < 1e-2, "{eta}");

    // The four offers not claimed lapse (the first two at 30 s, the next two at 40 s), and
    // their slots go to four more: four no-shows of ten admissions.
    let lapsed = start + Duration::from_secs(41);
    assert_eq!(queue.admit_tick(&event, lapsed).await.unwrap().admitted, 4);
    let pace = status_of(&event).await.pace.expect("a pace");
    let no_shows = pace.no_show_share.expect("admissions made");
    assert!((no_shows - 0.4).abs() < 1e-9, "{no_shows}");
}
