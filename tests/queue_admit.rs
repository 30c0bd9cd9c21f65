//! Admission: the cap on active shoppers and the rate hold even with two admitters at once;
//! lapsed admissions and leavers free their slots.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lineup::adapters::redis::keys::EventKeys;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::admit::{AdmissionLoop, AdmissionPorts, AdmissionSummary};
use lineup::application::ports::queue::{Admitter, WaitingLine};
use lineup::application::restore::Restorer;
use lineup::application::{join, poll};
use lineup::domain::clock::{unix_millis, Clock, FixedClock, SystemClock};
use lineup::domain::event_settings::{EventSettings, QueueState};
use lineup::domain::ids::EventId;
use lineup_tests::*;

const MAX_ACTIVE: u32 = 100;
const RATE: u32 = 50;

fn settings(session: Duration) -> EventSettings {
    EventSettings {
        state: QueueState::Open,
        opens_at: SystemTime::now() - Duration::from_secs(1),
        max_active: MAX_ACTIVE,
        admit_per_second: RATE,
        session,
        // Admitted customers here never claim: their offer lapses after one session's length,
        // as a claimed admission would, so the slot accounting reads the same either way.
        claim_window: session,
        ticket_limit: None,
        challenge_difficulty: Default::default(),
        code_required: false,
        groups: Default::default(),
    }
}

async fn event_with_waiting(
    queue: &RedisQueue,
    settings: EventSettings,
    waiting: usize,
) -> EventId {
    let event = fresh_event();
    configure(queue, &event, settings).await;
    for n in 0..waiting {
        queue
            .join(&event, &customer(n), SystemTime::now())
            .await
            .expect("join");
    }
    event
}

/// Every admission ever made for the event, as Unix milliseconds (claim deadline minus the
/// claim window, which these tests set to the session's length: offers and admissions stay,
/// lapsed or not, for an hour).
async fn admission_times(event: &EventId, session: Duration) -> Vec<u64> {
    let mut redis = redis().await;
    let keys = EventKeys::new(event);
    let mut entries: Vec<(String, f64)> = Vec::new();
    for set in [&keys.offered, &keys.active] {
        let found: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(set)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut redis)
            .await
            .unwrap();
        entries.extend(found);
    }
    let mut times: Vec<u64> = entries
        .iter()
        .map(|(_, expires)| *expires as u64 - session.as_millis() as u64)
        .collect();
    times.sort_unstable();
    times
}

/// The token bucket's promise: between any two admissions at `t_i <= t_j`, at most
/// `rate + rate * (t_j - t_i)` were admitted (one second's burst, then the rate). Returns the
/// first pair of admissions that breaks it.
fn breaks_the_rate(times: &[u64], rate: u32) -> Option<(u64, u64, usize)> {
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = j - i + 1;
            let allowed =
                f64::from(rate) + f64::from(rate) * (times[j] - times[i]) as f64 / 1_000.0;
            if count as f64 > allowed {
                return Some((times[i], times[j], count));
            }
        }
    }
    None
}
/// Slots in use: admissions claimed and offers still open.
async fn live_admissions(event: &EventId) -> u64 {
    let mut redis = redis().await;
    let keys = EventKeys::new(event);
    let mut live = 0;
    for set in [&keys.offered, &keys.active] {
        let count: u64 = redis::cmd("ZCOUNT")
            .arg(set)
            .arg(format!("({}", unix_millis(SystemTime::now())))
            .arg("+inf")
            .query_async(&mut redis)
            .await
            .unwrap();
        live += count;
    }
    live
}

/// Runs one admit loop per entry of `loops` (each ticking its own list of events) at once for
/// `run_for`, while sampling the live admissions of `watched`; returns the summaries, the
/// highest live count seen, and how long the run took.
async fn run_admitters(
    queue: Arc<RedisQueue>,
    loops: &[Vec<EventId>],
    watched: &EventId,
    run_for: Duration,
) -> (Vec<AdmissionSummary>, u64, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let highest = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, highest, event) = (stop.clone(), highest.clone(), watched.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                highest.fetch_max(live_admissions(&event).await, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let started = std::time::Instant::now();
    let runs = loops.iter().map(|events| {
        let admitter = OnlyEvents {
            queue: queue.clone(),
            events: events.clone(),
        };
        let queue = queue.clone();
        tokio::spawn(async move {
            // No durable open events: this loop ticks exactly its own list.
            let records = private_records().await;
            let restorer = Restorer::new(queue.clone(), records.clone(), records.clone());
            let ports = AdmissionPorts {
                availability: None,
                admitter: &admitter,
                draw: queue.as_ref(),
                records: records.as_ref(),
                publication: records.as_ref(),
                restorer: &restorer,
            };
            let admission = AdmissionLoop::new(ports, &SystemClock, Duration::from_millis(100));
            admission.run(run_for).await.expect("admission loop")
        })
    });
    let summaries = futures::future::join_all(runs)
        .await
        .into_iter()
        .map(|r| r.expect("loop ran"))
        .collect();
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    (summaries, highest.load(Ordering::Relaxed), took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admitters_at_once_exceed_neither_the_cap_nor_the_rate() {
    let queue = queue();
    let run_for = Duration::from_secs(5);

    // Long sessions: the cap binds (100 admitted, although 5 s at 50/s would allow 300).
    let capped = event_with_waiting(&queue, settings(Duration::from_secs(600)), 1_000).await;
    // Two-second sessions: slots keep freeing, so the rate binds. One event is ticked by both
    // loops, its twin by one loop only: what one admitter would do, measured in the same run.
    let twice = event_with_waiting(&queue, settings(Duration::from_secs(2)), 1_000).await;
    let once = event_with_waiting(&queue, settings(Duration::from_secs(2)), 1_000).await;

    let loops = [
        vec![capped.clone(), twice.clone(), once.clone()],
        vec![capped.clone(), twice.clone()],
    ];
    let (summaries, highest, took) = run_admitters(queue.clone(), &loops, &capped, run_for).await;
    let admitted_by_loops: u64 = summaries.iter().map(|s| s.admitted).sum();

    let capped_times = admission_times(&capped, Duration::from_secs(600)).await;
    assert_eq!(
        capped_times.len(),
        MAX_ACTIVE as usize,
        "the cap binds exactly"
    );
    assert!(
        highest <= u64::from(MAX_ACTIVE),
        "active set reached {highest}"
    );
    assert_eq!(breaks_the_rate(&capped_times, RATE), None);

    let twice_times = admission_times(&twice, Duration::from_secs(2)).await;
    let once_times = admission_times(&once, Duration::from_secs(2)).await;
    println!(
        "admitted in {took:?}: {} by two loops, {} by one",
        twice_times.len(),
        once_times.len()
    );
    assert_eq!(
        breaks_the_rate(&twice_times, RATE),
        None,
        "two loops broke the rate"
    );
    assert_eq!(
        breaks_the_rate(&once_times, RATE),
        None,
        "one loop broke the rate"
    );
    let bucket_bound = f64::from(RATE) * (1.0 + took.as_secs_f64());
    assert!(
        (twice_times.len() as f64) <= bucket_bound,
        "{} admitted in {took:?}",
        twice_times.len()
    );
    // The second loop only picks up tokens sooner, never more: at most one tick's refill (5) and
    // rounding apart.
    assert!(
        twice_times.len() <= once_times.len() + (RATE / 5) as usize,
        "two loops admitted {} where one admitted {}",
        twice_times.len(),
        once_times.len()
    );
    assert!(
        twice_times.len() > MAX_ACTIVE as usize,
        "lapsed sessions freed their slots ({} admitted)",
        twice_times.len()
    );
    assert_eq!(
        admitted_by_loops,
        (capped_times.len() + twice_times.len() + once_times.len()) as u64,
        "the loops report what they did"
    );

    // The waiting customers were admitted from the head, in order.
    let mut redis = redis().await;
    let still_waiting: Vec<String> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&capped).queue)
        .arg(0)
        .arg(0)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(
        still_waiting,
        vec![customer(MAX_ACTIVE as usize).as_str().to_owned()]
    );
}

#[tokio::test]
async fn one_second_ticks_with_jitter_deliver_the_configured_rate() {
    let queue = queue();
    let start = SystemTime::now();
    let clock = FixedClock::at(start);
    let event = event_with_waiting(&queue, settings(Duration::from_secs(1)), 2_000).await;
    let mut admitted = 0;
    // Ticks about a second apart, some a little early, some a little late.
    for jitter in [998, 1_001, 999, 1_003, 997, 1_000, 999, 1_002, 998, 1_001].repeat(2) {
        admitted += queue
            .admit_tick(&event, clock.now())
            .await
            .unwrap()
            .admitted;
        clock.advance(Duration::from_millis(jitter));
    }
    let elapsed = clock.now().duration_since(start).unwrap().as_secs_f64() - 1.0;
    let expected = f64::from(RATE) * (1.0 + elapsed); // the first second's burst, then the rate
    assert!(
        (admitted as f64) >= expected - f64::from(RATE) && (admitted as f64) <= expected,
        "admitted {admitted} over {elapsed:.3} s at {RATE}/s (bucket allows {expected:.0})"
    );
}

#[tokio::test]
async fn lapsed_admissions_free_their_slots_and_their_polls_say_expired() {
    let queue = queue();
    let start = SystemTime::now();
    let clock = Arc::new(FixedClock::at(start));
    let session = Duration::from_secs(60);
    let event = event_with_waiting(&queue, settings(session), 300).await;

    let first = queue.admit_tick(&event, clock.now()).await.unwrap();
    assert_eq!(first.admitted, u64::from(RATE));
    clock.advance(Duration::from_secs(1));
    let second = queue.admit_tick(&event, clock.now()).await.unwrap();
    assert_eq!(
        (second.admitted, second.active),
        (u64::from(RATE), u64::from(MAX_ACTIVE))
    );
    clock.advance(Duration::from_secs(1));
    let full = queue.admit_tick(&event, clock.now()).await.unwrap();
    assert_eq!(full.admitted, 0, "no slot is free");

    // The first 50 lapse (admitted at start, session 60 s); the second 50 are still live.
    clock.advance(session - Duration::from_millis(1_500));
    let after_lapse = queue.admit_tick(&event, clock.now()).await.unwrap();
    assert_eq!(
        after_lapse.admitted,
        u64::from(RATE),
        "the lapsed slots are given to the next 50"
    );
    assert_eq!(after_lapse.active, u64::from(MAX_ACTIVE));

    let api = api(queue.clone(), clock.clone()).await;
    let lapsed = customer(0);
    let response = poll::handle(
        &api,
        poll_request(&event, &lapsed, &ticket_at(&event, &lapsed, Some(1), start)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body(&response)["status"], "expired");

    // Joining again after a lapse goes to the back of the queue.
    let rejoin = join::handle(&api, join_request(&event, &lapsed)).await;
    assert_eq!(rejoin.status(), StatusCode::CREATED);
    assert_eq!(body(&rejoin)["position"], 300 - 150);
}

#[tokio::test]
async fn leaving_frees_a_slot_at_once() {
    let queue = queue();
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let event = event_with_waiting(&queue, settings(Duration::from_secs(600)), 150).await;
    queue.admit_tick(&event, clock.now()).await.unwrap();
    clock.advance(Duration::from_secs(1));
    let full = queue.admit_tick(&event, clock.now()).await.unwrap();
    assert_eq!(full.active, u64::from(MAX_ACTIVE));
    clock.advance(Duration::from_secs(1));

    let api = api(queue.clone(), clock.clone()).await;
    let leaver = customer(3);
    let response = poll::handle(
        &api,
        leave_request(
            &event,
            &leaver,
            &ticket_at(&event, &leaver, Some(4), clock.now()),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);

    let next = queue.admit_tick(&event, clock.now()).await.unwrap();
    assert_eq!(
        (next.admitted, next.active),
        (1, u64::from(MAX_ACTIVE)),
        "exactly the freed slot is refilled"
    );
    let gone = poll::handle(
        &api,
        poll_request(
            &event,
            &leaver,
            &ticket_at(&event, &leaver, Some(4), clock.now()),
        ),
    )
    .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn nothing_is_admitted_before_opening_or_from_a_closed_queue() {
    let queue = queue();
    let now = SystemTime::now();
    let mut later = settings(Duration::from_secs(600));
    later.opens_at = now + Duration::from_secs(60);
    let event = event_with_waiting(&queue, later.clone(), 10).await;
    let admission = Admission::new(queue.clone()).await;
    assert_eq!(admission.tick(&event, now).await.admitted, 0);
    // The first tick after opening closes the pre-queue, draws it, and only then admits.
    let drawing = admission.tick(&event, now + Duration::from_secs(61)).await;
    assert_eq!(drawing.admitted, 10);
    assert!(drawing.drawn && !drawing.needs_draw, "{drawing:?}");
    assert_eq!(drawing.status.entrants, Some(10));

    let closed = event_with_waiting(&queue, settings(Duration::from_secs(600)), 10).await;
    let mut closing = settings(Duration::from_secs(600));
    closing.state = QueueState::Closed;
    configure(&queue, &closed, closing).await;
    assert_eq!(queue.admit_tick(&closed, now).await.unwrap().admitted, 0);
    assert!(
        !queue.open_events().await.unwrap().contains(&closed),
        "a closed event is not ticked"
    );
}

#[tokio::test]
async fn a_paced_opening_calls_nobody_before_its_first_call() {
    // Two requests each for 30 entrants at one a second: the opening is paced over 60 s.
    let queue = Arc::new(
        RedisQueue::new(&redis_url(), Duration::from_secs(2))
            .expect("REDIS_URL")
            .with_edge_budget(1),
    );
    let now = SystemTime::now();
    let mut later = settings(Duration::from_secs(600));
    later.opens_at = now + Duration::from_secs(60);
    let event = event_with_waiting(&queue, later.clone(), 30).await;
    let admission = Admission::new(queue.clone()).await.with_edge_budget(1);
    let before = admission.tick(&event, now).await;
    assert_eq!(before.status.pre_queue, Some(30), "counted for the status");
    let status = status_of(&event).await;
    assert_eq!(status["openingReadSpreadSeconds"], 60, "{status}");
    assert_eq!(status["openingReadDelaySeconds"], 1, "{status}");

    // Drawn 1 s after the opening, as the reads were told to start; the first call after every
    // entrant's read (60 s from then), its chunk (5 s) and 13 s to see it.
    let opened = later.opens_at + Duration::from_secs(1);
    let drawing = admission.tick(&event, opened).await;
    assert!(drawing.drawn, "{drawing:?}");
    assert_eq!(drawing.admitted, 0, "nobody called yet");
    let first_call = drawing.status.first_call_at.expect("a paced opening");
    let published_at = first_call - Duration::from_secs(60 + 5 + 13);
    assert!(
        published_at + Duration::from_millis(1) >= opened
            && published_at < opened + Duration::from_secs(5),
        "counted from the publication (stored in milliseconds)"
    );
    let status = status_of(&event).await;
    assert_eq!(
        status["firstCallAt"],
        lineup::domain::clock::rfc3339(first_call),
        "{status}"
    );
    assert_eq!(
        admission
            .tick(&event, first_call - Duration::from_millis(1))
            .await
            .admitted,
        0
    );
    assert_eq!(admission.tick(&event, first_call).await.admitted, 30);
}

/// The public status the last tick wrote.
async fn status_of(event: &EventId) -> serde_json::Value {
    let json: String = redis::AsyncCommands::get(&mut redis().await, EventKeys::new(event).status)
        .await
        .expect("a status");
    serde_json::from_str(&json).expect("status JSON")
}
