//! Unit tests of the admission loop ([`crate::application::admit`]) over the in-memory queue and
//! events table: rate and cap, the durable cursor before any call, the draw at opening, paused
//! and closed events, failed ticks, and the restore after a cache loss, in milliseconds.
//! [`World`] is shared with the restore and expiry tests.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lambda_runtime::{Context, LambdaEvent};
use serde_json::{json, Value};

use crate::application::admit::{
    admit_for_invocation, AdmissionLoop, AdmissionPorts, AdmissionSummary,
};
use crate::application::error::{LineupError, Store};
use crate::application::fakes::outage::Faulty;
use crate::application::fakes::queue::{MemoryQueue, RESTORE_GRACE};
use crate::application::fakes::records::MemoryRecords;
use crate::application::ports::event_records::{DrawPublication, EventRecords};
use crate::application::ports::queue::{Admitter, EventSettingsStore, StatusBoard, WaitingLine};
use crate::application::restore::{Restorer, TicketRestore};
use crate::domain::clock::{unix_millis, FixedClock};
use crate::domain::event_settings::{EventSettings, QueueState};
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::signing::QueueTicket;

/// The tests' "now" at their start.
pub(super) fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

pub(super) fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

pub(super) fn event(name: &str) -> EventId {
    EventId::parse(name).unwrap()
}

pub(super) fn customer(n: u64) -> CustomerId {
    CustomerId::parse(&format!("c{n:03}")).unwrap()
}

/// An open event (opened a minute before [`t0`]) admitting `rate` a second, `max_active` at once.
pub(super) fn settings(rate: u32, max_active: u32) -> EventSettings {
    EventSettings {
        admit_per_second: rate,
        max_active,
        ..EventSettings::opening_at(t0() - secs(60))
    }
}

/// A queue and an events table in memory, the restorer over them, and a clock at [`t0`].
pub(super) struct World {
    pub(super) queue: Arc<MemoryQueue>,
    pub(super) records: Arc<MemoryRecords>,
    pub(super) restorer: Restorer,
    pub(super) clock: FixedClock,
}

impl World {
    pub(super) fn new() -> Self {
        let queue = Arc::new(MemoryQueue::new());
        let records = Arc::new(MemoryRecords::new());
        let restorer = Restorer::new(queue.clone(), records.clone(), records.clone());
        Self {
            queue,
            records,
            restorer,
            clock: FixedClock::at(t0()),
        }
    }

    /// Another instance (its own kept records) over the same stores.
    pub(super) fn another_restorer(&self) -> Restorer {
        Restorer::new(
            self.queue.clone(),
            self.records.clone(),
            self.records.clone(),
        )
    }

    /// What the join and poll handlers work with, over this world's queue and records, signing
    /// with a fixed key, at `clock`'s time; no claim required, nobody exempt, no code known.
    pub(super) fn queue_api(
        &self,
        clock: Arc<crate::domain::clock::FixedClock>,
    ) -> crate::application::queue_api::QueueApi {
        crate::application::queue_api::QueueApi {
            line: self.queue.clone(),
            restorer: Arc::new(self.another_restorer()),
            key: crate::domain::signing::SigningKey::new(vec![3u8; 32])
                .unwrap()
                .into(),
            clock,
            required_claim: None,
            challenge_exempt_claim: None,
            access_codes: Arc::new(
                crate::application::fakes::access_codes::MemoryAccessCodes::new(),
            ),
        }
    }

    pub(super) fn now(&self) -> SystemTime {
        crate::domain::clock::Clock::now(&self.clock)
    }

    /// One admitter, as the `admit` function builds it (no seat map check).
    pub(super) fn admission(&self) -> AdmissionLoop<'_> {
        AdmissionLoop::new(self.ports(), &self.clock, Duration::from_millis(5))
    }

    fn ports(&self) -> AdmissionPorts<'_> {
        AdmissionPorts {
            admitter: self.queue.as_ref(),
            draw: self.queue.as_ref(),
            records: self.records.as_ref(),
            publication: self.records.as_ref(),
            restorer: &self.restorer,
            availability: None,
        }
    }

    /// An event as an operator opens it: the events table first, then the cache.
    pub(super) async fn open(&self, name: &str, settings: EventSettings) -> EventId {
        let event = event(name);
        let seed = self
            .records
            .save_settings(&event, &settings, None)
            .await
            .unwrap();
        self.queue
            .configure(&event, &settings, &seed)
            .await
            .unwrap();
        event
    }

    /// Customers `from..=to` join now, their numbers reserved durably first.
    pub(super) async fn join(&self, event: &EventId, from: u64, to: u64) {
        self.restorer
            .numbers
            .reserve_through(event, to, self.now())
            .await
            .unwrap();
        for n in from..=to {
            self.queue
                .join(event, &customer(n), self.now())
                .await
                .unwrap();
        }
    }

    /// One tick of `admission`, which must succeed.
    pub(super) async fn tick(&self, admission: &AdmissionLoop<'_>) -> AdmissionSummary {
        let mut summary = AdmissionSummary::default();
        admission.tick_once(&mut summary).await.unwrap();
        summary
    }

    /// The customers called so far (offered or admitted), by their numbers 1..
    pub(super) fn called(&self, event: &EventId) -> Vec<CustomerId> {
        self.queue.called(event).into_iter().collect()
    }

    /// The published status, as JSON.
    /// Whether `who` has a place in `event`'s line (waiting, admitted or in the pre-queue).
    pub(super) async fn queued(&self, event: &EventId, who: &CustomerId) -> bool {
        self.queue
            .standing(event, who, t0())
            .await
            .unwrap()
            .is_some()
    }

    pub(super) async fn status(&self, event: &EventId) -> Value {
        let json = self
            .queue
            .status_json(event)
            .await
            .unwrap()
            .expect("a status");
        serde_json::from_str(&json).unwrap()
    }
}

fn customers(numbers: impl IntoIterator<Item = u64>) -> Vec<CustomerId> {
    numbers.into_iter().map(customer).collect()
}

#[tokio::test]
async fn admits_at_the_configured_rate_and_no_more_than_max_active_at_once() {
    let world = World::new();
    let event = world.open("rate-cap", settings(5, 8)).await;
    world.join(&event, 1, 20).await;
    let admission = world.admission();

    assert_eq!(
        world.tick(&admission).await.admitted,
        5,
        "a full bucket: one second's worth"
    );
    assert_eq!(world.called(&event), customers(1..=5));
    world.clock.advance(secs(1));
    assert_eq!(
        world.tick(&admission).await.admitted,
        3,
        "the cap leaves 3 slots"
    );
    world.clock.advance(secs(1));
    assert_eq!(
        world.tick(&admission).await.admitted,
        0,
        "8 shopping: the cap binds"
    );
    assert_eq!(world.called(&event), customers(1..=8), "in number order");
    assert_eq!(world.queue.waiting(&event).len(), 12);
}

#[tokio::test]
async fn the_bucket_refills_at_the_rate_and_holds_one_second_at_most() {
    let world = World::new();
    let event = world.open("bucket", settings(10, 1_000)).await;
    world.join(&event, 1, 100).await;
    let admission = world.admission();

    assert_eq!(world.tick(&admission).await.admitted, 10);
    assert_eq!(
        world.tick(&admission).await.admitted,
        0,
        "no time passed: no tokens"
    );
    world.clock.advance(Duration::from_millis(500));
    assert_eq!(
        world.tick(&admission).await.admitted,
        5,
        "half a second: half the rate"
    );
    world.clock.advance(secs(30));
    assert_eq!(
        world.tick(&admission).await.admitted,
        10,
        "a long pause saves up one second"
    );
    assert_eq!(world.queue.serving(&event), Some(25));
}

#[tokio::test]
async fn the_cursor_is_durable_before_anyone_is_called() {
    let world = World::new();
    let event = world.open("durable-first", settings(5, 1_000)).await;
    world.join(&event, 1, 30).await;
    let admission = world.admission();

    for _ in 0..4 {
        world.tick(&admission).await;
        let highest_called = world.queue.serving(&event).unwrap();
        let saved = world.records.cursor(&event).expect("a saved cursor");
        assert!(
            saved.serving >= highest_called,
            "{saved:?} behind {highest_called}"
        );
        assert_eq!(saved.serving, world.called(&event).len() as u64);
        world.clock.advance(secs(1));
    }
    assert_eq!(world.called(&event).len(), 20);

    // The events table refuses the save: nobody is called past what was durable before.
    world.records.go_down();
    assert_eq!(world.tick(&admission).await.admitted, 0);
    assert_eq!(world.queue.serving(&event), Some(20));
    assert_eq!(
        world.status(&event).await["servingUpTo"],
        20,
        "the status shows no new call"
    );
    // Back: the next tick saves and calls.
    world.records.come_back();
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 5);
    assert_eq!(world.records.cursor(&event).unwrap().serving, 25);
}

#[tokio::test]
async fn an_unreadable_cursor_calls_nobody_until_the_events_table_answers() {
    let world = World::new();
    let event = world.open("unreadable", settings(5, 1_000)).await;
    world.join(&event, 1, 10).await;
    let admission = world.admission();

    world.records.go_down();
    let summary = world.tick(&admission).await;
    assert_eq!(summary.admitted, 0, "the stored cursor could not be read");
    assert_eq!(
        summary.failed_event_ticks, 0,
        "holding back is not a failed tick"
    );
    assert!(world.called(&event).is_empty());
    assert_eq!(world.status(&event).await["servingUpTo"], 0);

    world.records.come_back();
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 5);
}

#[tokio::test]
async fn a_tick_that_moved_nothing_writes_nothing() {
    let world = World::new();
    let event = world.open("idle", settings(5, 5)).await;
    world.join(&event, 1, 5).await;
    let admission = world.admission();

    world.tick(&admission).await;
    assert_eq!(world.records.calls("save_cursor"), 1);
    assert_eq!(
        world.records.calls("event"),
        1,
        "the stored cursor is read once"
    );
    for _ in 0..5 {
        world.clock.advance(secs(1));
        assert_eq!(world.tick(&admission).await.admitted, 0);
    }
    assert_eq!(
        world.records.calls("save_cursor"),
        1,
        "nothing moved: nothing written"
    );
    assert_eq!(world.records.calls("event"), 1);
}

#[tokio::test]
async fn the_pre_queue_is_drawn_at_opening_published_once_then_admitted_in_draw_order() {
    let world = World::new();
    let opens_at = t0() + secs(10);
    let event = world
        .open(
            "drawn",
            EventSettings {
                admit_per_second: 4,
                ..EventSettings::opening_at(opens_at)
            },
        )
        .await;
    for n in 1..=6 {
        world
            .queue
            .join(&event, &customer(n), world.now())
            .await
            .unwrap();
        assert!(world.queue.in_pre_queue(&event, &customer(n)));
    }
    let admission = world.admission();

    assert_eq!(world.tick(&admission).await.admitted, 0, "before opening");
    assert_eq!(world.records.calls("publish_summary"), 0);
    assert_eq!(world.status(&event).await["state"], "pre_queue");

    world.clock.advance(secs(10));
    assert_eq!(
        world.tick(&admission).await.admitted,
        4,
        "drawn, then admitted at once"
    );
    assert_eq!(world.records.calls("publish_summary"), 1);
    assert!(
        world.records.number_ceiling(&event).unwrap() >= 6,
        "numbers durable first"
    );
    let seed = world.records.event(&event).await.unwrap().unwrap().seed;
    let summary = world
        .records
        .draw_summary(&event)
        .await
        .unwrap()
        .expect("published");
    assert_eq!(summary.entrants, 6);
    assert_eq!(summary.seed, seed.reveal());
    // Everyone has the number the published draw gives them; the first four are called.
    let mut drawn = Vec::new();
    for n in 1..=6 {
        let number = world
            .records
            .drawn_number(&event, &seed.entrant(&customer(n)))
            .await
            .unwrap()
            .expect("in the draw");
        drawn.push((number, customer(n)));
    }
    drawn.sort();
    assert_eq!(
        drawn.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );
    let called: Vec<CustomerId> = drawn[..4].iter().map(|(_, c)| c.clone()).collect();
    let mut expected = called.clone();
    expected.sort();
    assert_eq!(world.called(&event), expected);
    assert_eq!(world.queue.waiting(&event), drawn[4..].to_vec());
    let cursor = world.records.cursor(&event).unwrap();
    assert_eq!(
        (cursor.entrants, cursor.drawn, cursor.serving),
        (Some(6), true, 4)
    );
    let status = world.status(&event).await;
    assert_eq!(status["draw"]["published"], true);

    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 2);
    assert_eq!(world.records.calls("publish_summary"), 1, "published once");
    assert_eq!(world.queue.calls("lock_draw"), 1, "drawn once");
}

#[tokio::test]
async fn a_paused_event_admits_nobody_and_keeps_its_queue() {
    let world = World::new();
    let paused = EventSettings {
        state: QueueState::Paused,
        ..settings(5, 100)
    };
    let event = world.open("paused", paused).await;
    world.join(&event, 1, 10).await;
    let admission = world.admission();

    for _ in 0..3 {
        assert_eq!(world.tick(&admission).await.admitted, 0);
        world.clock.advance(secs(1));
    }
    assert!(world.called(&event).is_empty());
    assert_eq!(world.queue.waiting(&event).len(), 10);
    assert_eq!(world.status(&event).await["state"], "paused");
    assert_eq!(world.records.cursor(&event).unwrap().serving, 0);
}

#[tokio::test]
async fn a_queue_closed_in_the_cache_admits_nobody_and_its_closing_is_recorded_once() {
    let world = World::new();
    let event = world.open("sold-out", settings(5, 100)).await;
    world.join(&event, 1, 10).await;
    let admission = world.admission();
    assert_eq!(world.tick(&admission).await.admitted, 5);

    // The expiry sweep closes a sold-out queue in the cache alone.
    assert!(world
        .queue
        .close(&event, crate::domain::event_settings::ClosedReason::SoldOut)
        .await
        .unwrap());
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 0);
    let record = world.records.event(&event).await.unwrap().unwrap();
    assert_eq!(record.settings.state, QueueState::Closed);
    assert_eq!(record.closed_reason.as_deref(), Some("sold_out"));
    assert!(!world.records.open_events().await.unwrap().contains(&event));
    assert_eq!(world.status(&event).await["state"], "sold_out");

    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 0);
    assert_eq!(
        world.records.calls("save_settings"),
        2,
        "the opening, and the closing once"
    );
    assert_eq!(world.called(&event).len(), 5);
}

#[tokio::test]
async fn a_failed_tick_is_an_error_and_the_next_tick_goes_on() {
    let world = World::new();
    let event = world.open("outage", settings(5, 100)).await;
    world.join(&event, 1, 10).await;
    let admission = world.admission();
    let mut summary = AdmissionSummary::default();

    // The cache does not answer the list of open events: the whole tick fails.
    world.queue.fail_next(1);
    let failed = admission.tick_once(&mut summary).await;
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
    // The event's own tick fails: with every event failed, so does the tick.
    world.queue.fail_next_of("tick", 1);
    assert!(admission.tick_once(&mut summary).await.is_err());
    assert_eq!(summary.failed_event_ticks, 1);
    assert!(world.called(&event).is_empty());

    admission.tick_once(&mut summary).await.unwrap();
    assert_eq!(summary.admitted, 5);
    assert_eq!(world.called(&event), customers(1..=5));
}

#[tokio::test]
async fn the_loop_gives_up_after_three_failed_ticks_in_a_row() {
    let world = World::new();
    let event = world.open("down", settings(5, 100)).await;
    world.join(&event, 1, 10).await;
    world.queue.go_down();
    let admission = world.admission();

    let run = tokio::time::timeout(secs(5), admission.run(secs(60)))
        .await
        .expect("gave up early");
    assert!(
        matches!(
            run,
            Err(LineupError::Unavailable {
                store: Store::Queue,
                ..
            })
        ),
        "{run:?}"
    );
    assert_eq!(world.queue.calls("open_events"), 3);

    // The cache back, the next invocation admits.
    world.queue.come_back();
    let next = world
        .admission()
        .run(Duration::from_millis(20))
        .await
        .unwrap();
    assert_eq!((next.admitted, next.failed_event_ticks), (5, 0));
}

#[tokio::test]
async fn an_event_lost_from_the_cache_is_restored_and_admission_resumes_without_calling_again() {
    let world = World::new();
    let event = world.open("lost", settings(5, 100)).await;
    world.join(&event, 1, 20).await;
    let admission = world.admission();
    world.tick(&admission).await;
    world.clock.advance(secs(1));
    world.tick(&admission).await;
    assert_eq!(world.called(&event), customers(1..=10));
    let issued = world.now();

    // The cache is lost; the next tick finds the event missing and re-loads it.
    world.queue.flush();
    world.clock.advance(secs(1));
    let restored_at = world.now();
    assert_eq!(world.tick(&admission).await.failed_event_ticks, 0);
    assert!(world.queue.has_event(&event));
    assert_eq!(
        world.queue.serving(&event),
        Some(10),
        "called numbers stay called"
    );
    assert!(world.queue.open_events().await.unwrap().contains(&event));
    let status = world.status(&event).await;
    assert_eq!(status["servingUpTo"], 10);
    assert_eq!(
        status["restoredAt"],
        crate::domain::clock::rfc3339(restored_at)
    );

    // Customers come back with their tickets: those called, admitted; the others, waiting.
    for n in [3, 11, 12, 13, 14, 15, 16] {
        let ticket = QueueTicket {
            number: Some(n),
            issued_at: issued,
        };
        let outcome = world
            .restorer
            .restore_ticket(&event, &customer(n), ticket, world.now())
            .await;
        assert_eq!(outcome.unwrap(), TicketRestore::Restored);
    }
    assert!(world.queue.active_until(&event, &customer(3)).is_some());
    // Within the grace nobody past the restored `serving` is called.
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 0);
    // Then admission moves on at the rate, from number 11.
    world.clock.advance(RESTORE_GRACE);
    assert_eq!(world.tick(&admission).await.admitted, 5);
    assert_eq!(world.called(&event), customers([3, 11, 12, 13, 14, 15]));
    assert_eq!(world.queue.waiting(&event), vec![(16, customer(16))]);
    assert_eq!(world.records.cursor(&event).unwrap().serving, 15);
}

#[tokio::test]
async fn an_event_the_events_table_does_not_know_is_dropped_and_the_others_go_on() {
    let world = World::new();
    let known = world.open("known", settings(5, 100)).await;
    world.join(&known, 1, 10).await;
    // An event in the cache alone (configured by hand, never saved durably).
    let stray = event("stray");
    let seed = crate::domain::draw::DrawSeed::generate();
    world
        .queue
        .configure(&stray, &settings(5, 100), &seed)
        .await
        .unwrap();
    let admission = world.admission();
    world.tick(&admission).await;

    world.queue.flush();
    world.clock.advance(secs(1));
    let summary = world.tick(&admission).await;
    assert_eq!(
        summary.failed_event_ticks, 1,
        "the stray event cannot be re-loaded"
    );
    assert!(world.queue.has_event(&known) && !world.queue.has_event(&stray));
    let ticks = world.queue.calls("tick");
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.failed_event_ticks, 0);
    assert_eq!(
        world.queue.calls("tick"),
        ticks + 2,
        "only the known event: plan and admit"
    );
}

pub(super) fn invocation(payload: Value, deadline: SystemTime) -> LambdaEvent<Value> {
    let mut context = Context::default();
    context.deadline = unix_millis(deadline);
    LambdaEvent::new(payload, context)
}

pub(super) fn scheduled_event() -> Value {
    json!({
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-30T09:00:00Z",
        "region": "eu-west-1",
        "resources": ["arn:aws:events:eu-west-1:123456789012:rule/lineup-admit"],
        "detail": {}
    })
}

#[tokio::test]
async fn admit_for_invocation_refuses_anything_but_a_scheduled_event() {
    let world = World::new();
    world.open("refused", settings(5, 100)).await;
    let mut other_detail = scheduled_event();
    other_detail["detail-type"] = "EC2 Instance State-change Notification".into();
    let http = json!({ "routeKey": "POST /events/e1/queue", "body": "{}" });

    for payload in [other_detail, http, json!(null)] {
        let refused = admit_for_invocation(
            world.ports(),
            &world.clock,
            &crate::application::admit::AdmitPace::new(secs(60), Duration::from_millis(5)),
            invocation(payload, t0() + secs(900)),
        )
        .await;
        match refused {
            Err(error @ LineupError::InvalidRequest { .. }) => {
                assert_eq!(error.code(), "not_a_scheduled_event")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(world.queue.calls("open_events"), 0, "nothing ticked");
}

#[tokio::test]
async fn a_scheduled_invocation_ticks_until_its_deadline_less_the_margin() {
    let world = World::new();
    let event = world.open("scheduled", settings(5, 100)).await;
    world.join(&event, 1, 10).await;

    // The deadline 3.05 s away: 3 s are kept back, so the loop runs about 50 ms, not a minute.
    let pace = crate::application::admit::AdmitPace::new(secs(60), Duration::from_millis(5));
    let run = admit_for_invocation(
        world.ports(),
        &world.clock,
        &pace,
        invocation(scheduled_event(), t0() + Duration::from_millis(3_050)),
    );
    let summary = tokio::time::timeout(secs(10), run)
        .await
        .expect("bounded by the deadline");
    let summary = summary.unwrap();
    assert!(summary.ticks >= 1, "{summary:?}");
    // The clock stands still: one bucket's worth over every tick.
    assert_eq!(summary.admitted, 5);
    assert_eq!(summary.failed_event_ticks, 0);
}

/// An event opening at `t0 + 10 s` with customers 1..=`entrants` in its pre-queue, admitting
/// `rate` a second.
async fn pre_queue(world: &World, name: &str, entrants: u64, rate: u32) -> EventId {
    let event = world
        .open(
            name,
            EventSettings {
                admit_per_second: rate,
                ..EventSettings::opening_at(t0() + secs(10))
            },
        )
        .await;
    for n in 1..=entrants {
        world
            .queue
            .join(&event, &customer(n), world.now())
            .await
            .unwrap();
    }
    event
}

/// The draw is published, then putting its numbers in the queue fails: the tick fails.
async fn open_with_a_failed_draw(world: &World, admission: &AdmissionLoop<'_>, event: &EventId) {
    world.tick(admission).await;
    world.clock.advance(secs(10));
    world.queue.fail_next_of("write_numbers", 1);
    let mut summary = AdmissionSummary::default();
    let failed = admission.tick_once(&mut summary).await;
    assert!(
        matches!(failed, Err(LineupError::Unavailable { .. })),
        "{failed:?}"
    );
    assert!(world.called(event).is_empty());
}

#[tokio::test]
async fn a_cache_lost_after_a_failed_draw_keeps_the_published_draw_and_draws_nothing_again() {
    let world = World::new();
    let event = pre_queue(&world, "redraw", 40, 100).await;
    let admission = world.admission();
    let joined_at = world.now();
    open_with_a_failed_draw(&world, &admission, &event).await;
    let published = world
        .records
        .draw_summary(&event)
        .await
        .unwrap()
        .expect("published before the numbers");
    assert_eq!(published.entrants, 40);

    // The next tick finds the draw taken: nothing drawn, nobody called, and the cursor says the
    // pre-queue closed with 40 and is not drawn.
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 0);
    let cursor = world.records.cursor(&event).unwrap();
    assert_eq!((cursor.entrants, cursor.drawn), (Some(40), false));

    // The cache is lost (the entrant list with it) before the draw runs again.
    world.queue.flush();
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.failed_event_ticks, 0);
    assert_eq!(
        world.records.calls("publish_summary"),
        1,
        "nothing published again"
    );
    let kept = world.records.draw_summary(&event).await.unwrap().unwrap();
    assert_eq!(kept, published, "the published draw is as it was");
    let status = world.status(&event).await;
    assert_eq!(status["draw"]["entrants"], 40);
    assert_eq!(status["draw"]["published"], true);
    assert_eq!(status["draw"]["seed"], published.seed.as_str());
    assert!(world.records.cursor(&event).unwrap().drawn);

    // Entrants come back from their pre-queue tickets, at the published numbers.
    let seed = world.records.event(&event).await.unwrap().unwrap().seed;
    for n in [1, 17, 40] {
        let ticket = QueueTicket {
            number: None,
            issued_at: joined_at,
        };
        let outcome = world
            .restorer
            .restore_ticket(&event, &customer(n), ticket, world.now())
            .await;
        assert_eq!(outcome.unwrap(), TicketRestore::Restored);
        let number = world
            .records
            .drawn_number(&event, &seed.entrant(&customer(n)))
            .await
            .unwrap()
            .unwrap();
        assert!(
            world.queue.waiting(&event).contains(&(number, customer(n))),
            "customer {n} waits at {number}"
        );
    }
}

#[tokio::test]
async fn a_draw_run_again_after_its_publication_puts_the_published_numbers_in_the_queue() {
    let world = World::new();
    let event = pre_queue(&world, "again", 30, 10).await;
    let admission = world.admission();
    open_with_a_failed_draw(&world, &admission, &event).await;
    let chunk_writes = world.records.calls("publish_chunks");
    assert!(chunk_writes > 0);

    // The admitter that took the draw is gone; another runs it again from the same entrants.
    world.queue.lapse_draw_lock(&event);
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 10);
    assert_eq!(world.records.calls("publish_summary"), 1);
    assert_eq!(
        world.records.calls("publish_chunks"),
        chunk_writes,
        "no chunk written again"
    );
    let seed = world.records.event(&event).await.unwrap().unwrap().seed;
    let mut numbered = world.queue.waiting(&event);
    for called in world.called(&event) {
        let number = world
            .records
            .drawn_number(&event, &seed.entrant(&called))
            .await
            .unwrap()
            .unwrap();
        assert!(number <= 10, "{called} was called at {number}");
        numbered.push((number, called));
    }
    numbered.sort();
    assert_eq!(numbered.len(), 30);
    for (number, customer) in &numbered {
        let published = world
            .records
            .drawn_number(&event, &seed.entrant(customer))
            .await
            .unwrap();
        assert_eq!(published, Some(*number), "{customer}");
    }
    assert_eq!(
        numbered.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        (1..=30).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_published_draw_is_never_replaced_and_the_same_draw_again_changes_nothing() {
    use crate::application::ports::event_records::DrawPublished;
    use crate::domain::draw;

    let world = World::new();
    let event = world.open("conditional", settings(5, 100)).await;
    let seed = world.records.event(&event).await.unwrap().unwrap().seed;
    let draw_of = |n: u64| draw::numbers(&seed, (1..=n).map(|n| seed.entrant(&customer(n))));
    let (summary, chunks) = draw::publish(&draw_of(20), &event, &seed, t0());
    assert_eq!(
        world
            .records
            .publish_draw(&event, &summary, &chunks)
            .await
            .unwrap(),
        DrawPublished::Published
    );

    // The same draw later: nothing changes, not even its publication time.
    let (later, _) = draw::publish(&draw_of(20), &event, &seed, t0() + secs(60));
    assert_eq!(
        world.records.publish_summary(&event, &later).await.unwrap(),
        DrawPublished::AlreadyPublished
    );
    // Another draw (one entrant fewer; none at all): refused, the published one returned.
    for other in [19, 0] {
        let (other, other_chunks) = draw::publish(&draw_of(other), &event, &seed, t0());
        assert_eq!(
            world.records.publish_summary(&event, &other).await.unwrap(),
            DrawPublished::Conflict(Box::new(summary.clone()))
        );
        assert_eq!(
            world
                .records
                .publish_draw(&event, &other, &other_chunks)
                .await
                .unwrap(),
            DrawPublished::Conflict(Box::new(summary.clone()))
        );
    }
    assert_eq!(
        world.records.draw_summary(&event).await.unwrap(),
        Some(summary)
    );
    for chunk in &chunks {
        assert_eq!(
            world
                .records
                .draw_chunk(&event, &chunk.prefix)
                .await
                .unwrap(),
            Some(chunk.clone()),
            "the published chunks stay"
        );
    }
}

#[tokio::test]
async fn a_pre_queue_past_the_draws_limits_is_refused_and_nobody_is_numbered() {
    use crate::application::admit::pre_queue_draw::DrawError;
    use crate::application::admit::DrawLimits;

    let world = World::new();
    let event = pre_queue(&world, "too-big", 40, 10).await;
    let mut admission = world.admission();
    // 40 entrants need at least 40 × 26 bytes of disk.
    admission.draw_limits = DrawLimits {
        disk_bytes: 1_000,
        ..DrawLimits::default()
    };
    // 1,000 bytes at 72 an entrant: 13 entrants expected to fit, the alarm from 11 (84%).
    assert_eq!(admission.draw_limits.max_entrants(), 13);
    assert_eq!(admission.draw_limits.percent_used(10), 76);
    assert_eq!(admission.draw_limits.percent_used(11), 84);
    world.tick(&admission).await;
    world.clock.advance(secs(10));
    let refused = admission
        .tick_event(&event, world.now())
        .await
        .expect_err("refused");
    let LineupError::Failed { source, .. } = &refused else {
        panic!("{refused:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<DrawError>(),
            Some(DrawError::DiskBudget {
                needed: 1_040,
                budget: 1_000
            })
        ),
        "{source:?}"
    );
    assert_eq!(world.records.calls("publish_chunks"), 0);
    assert_eq!(world.records.calls("publish_summary"), 0);
    assert!(world.queue.waiting(&event).is_empty());
    assert!(world.called(&event).is_empty());

    // With the limits raised, the next admitter draws it.
    world.queue.lapse_draw_lock(&event);
    let admission = world.admission();
    assert_eq!(world.tick(&admission).await.admitted, 10);
    assert_eq!(world.queue.waiting(&event).len(), 30);
}

#[tokio::test]
async fn a_paced_opening_calls_nobody_before_its_first_call_even_after_a_cache_loss() {
    let world = World::new();
    // 40 entrants at one request a second at the edge: their two requests each need 80 s, so
    // the opening is paced and the first call waits for it.
    let event = pre_queue(&world, "paced", 40, 100).await;
    let mut admission = world.admission();
    admission.edge_budget = 1;
    world.tick(&admission).await;
    world.clock.advance(secs(10));
    let opened = world.now();
    assert_eq!(
        world.tick(&admission).await.admitted,
        0,
        "drawn, nobody called"
    );
    assert_eq!(world.records.calls("publish_summary"), 1);
    // The draw estimated at 1 s, the reads over 80 s, 16 chunks within 5 s, 13 s to see them.
    let first_call = opened + secs(1 + 80 + 5 + 13);
    let status = world.status(&event).await;
    assert_eq!(status["draw"]["published"], true);
    assert_eq!(
        status["firstCallAt"],
        crate::domain::clock::rfc3339(first_call),
        "{status}"
    );
    let cursor = world.records.cursor(&event).unwrap();
    assert_eq!(
        cursor.first_call_at_ms,
        Some(crate::domain::clock::unix_millis(first_call)),
        "durable with the draw"
    );

    // Nobody is called until the first call, then admission runs at its rate.
    world
        .clock
        .advance(first_call.duration_since(world.now()).unwrap() - secs(1));
    assert_eq!(world.tick(&admission).await.admitted, 0);
    assert!(world.called(&event).is_empty());
    world.clock.advance(secs(1));
    assert_eq!(
        world.tick(&admission).await.admitted,
        40,
        "called from the first call on"
    );
}

#[tokio::test]
async fn a_cache_lost_during_a_paced_opening_keeps_its_first_call() {
    let world = World::new();
    let event = pre_queue(&world, "paced-lost", 40, 100).await;
    let mut admission = world.admission();
    admission.edge_budget = 1;
    world.tick(&admission).await;
    world.clock.advance(secs(10));
    let first_call = world.now() + secs(1 + 80 + 5 + 13);
    world.tick(&admission).await;

    // Lost 50 s into the phase: re-loaded from the events table with its first call, which the
    // status still shows.
    world.clock.advance(secs(50));
    world.queue.flush();
    world.clock.advance(secs(1));
    assert_eq!(world.tick(&admission).await.failed_event_ticks, 0);
    let status = world.status(&event).await;
    assert!(status["restoredAt"].is_string(), "{status}");
    assert_eq!(
        status["firstCallAt"],
        crate::domain::clock::rfc3339(first_call),
        "{status}"
    );
}
