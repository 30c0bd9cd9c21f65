//! The handlers fed the sample events in `events/` exactly as `sam local invoke -e` or
//! `cargo lambda invoke --data-file` would send them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lambda_runtime::{Context, LambdaEvent};
use lineup::adapters::redis::keys::EventKeys;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::admit::admit_for_invocation;
use lineup::application::error::LineupError;
use lineup::application::ports::queue::{Admitter, WaitingLine};
use lineup::application::{join, poll};
use lineup::domain::clock::{unix_millis, SystemClock};
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::EventId;
use lineup::wiring::config::AdmitConfig;
use lineup_tests::redis_server::RedisServer;
use lineup_tests::*;

/// The samples name event `demo`; this test owns it in the test Redis, so it starts it afresh.
async fn reset_sample_event(queue: &RedisQueue) -> EventId {
    let event = EventId::parse(SAMPLE_EVENT).unwrap();
    let keys = EventKeys::new(&event);
    let mut redis = redis().await;
    let _: i64 = redis::cmd("DEL")
        .arg(&[
            &keys.settings,
            &keys.queue,
            &keys.active,
            &keys.offered,
            &keys.admission,
            &keys.prequeue,
            &keys.entrants,
            &keys.status,
        ])
        .query_async(&mut redis)
        .await
        .unwrap();
    let settings = EventSettings::opening_at(SystemTime::now() - Duration::from_secs(60));
    configure(queue, &event, settings).await;
    event
}

#[tokio::test]
async fn the_sample_http_events_walk_through_join_poll_admission_and_leave() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock)).await;
    let event = reset_sample_event(&queue).await;
    for n in 0..3 {
        queue
            .join(&event, &customer(n), SystemTime::now())
            .await
            .unwrap();
    }

    let joined = join::handle(&api, request(&sample("join.json"))).await;
    assert_eq!(joined.status(), StatusCode::CREATED);
    let joined = body(&joined);
    assert_eq!(joined["position"], 3);
    assert_eq!(joined["number"], 4);
    let poll_sample = sample("poll.json");
    let keys: lineup::application::rotating::SigningKeys = signing_key().into();
    let sample_ticket = lineup::domain::ids::QueueId::parse(
        poll_sample["pathParameters"]["queueId"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(
        keys.open_ticket(&sample_ticket, &event, &customer_from(SAMPLE_CUSTOMER))
            .and_then(|ticket| ticket.number),
        Some(4),
        "events/poll.json holds the sample customer's ticket for number 4 (development key)"
    );
    assert_eq!(
        join::handle(&api, request(&sample("join.json")))
            .await
            .status(),
        StatusCode::OK
    );

    let waiting = poll::handle(&api, request(&poll_sample)).await;
    assert_eq!(waiting.status(), StatusCode::OK);
    assert_eq!(body(&waiting)["status"], "waiting");
    assert_eq!(body(&waiting)["position"], 3);
    assert_eq!(body(&waiting)["number"], 4);
    assert_eq!(retry_after(&waiting), Some(5));

    assert_eq!(
        queue
            .admit_tick(&event, SystemTime::now())
            .await
            .unwrap()
            .admitted,
        4
    );
    let admitted = body(&poll::handle(&api, request(&poll_sample)).await);
    assert_eq!(admitted["status"], "admitted");
    assert!(admitted["accessToken"]
        .as_str()
        .is_some_and(|t| t.starts_with("v2.")));

    for (file, status, code) in [
        (
            "join-unauthenticated.json",
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        ),
        (
            "join-not-json.json",
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            "join-unknown-event.json",
            StatusCode::NOT_FOUND,
            "event_not_found",
        ),
    ] {
        let response = join::handle(&api, request(&sample(file))).await;
        assert_eq!(
            (response.status(), error_code(&response).as_str()),
            (status, code),
            "{file}"
        );
    }
    for (file, status, code) in [
        (
            "poll-foreign-queue-id.json",
            StatusCode::NOT_FOUND,
            "queue_entry_not_found",
        ),
        (
            "poll-malformed-queue-id.json",
            StatusCode::BAD_REQUEST,
            "invalid_queue_id",
        ),
    ] {
        let response = poll::handle(&api, request(&sample(file))).await;
        assert_eq!(
            (response.status(), error_code(&response).as_str()),
            (status, code),
            "{file}"
        );
    }

    let left = poll::handle(&api, request(&sample("leave.json"))).await;
    assert_eq!(left.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        poll::handle(&api, request(&poll_sample)).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        poll::handle(&api, request(&sample("leave.json")))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
}

fn customer_from(raw: &str) -> lineup::domain::ids::CustomerId {
    lineup::domain::ids::CustomerId::parse(raw).unwrap()
}

/// The admit function's settings, as its environment would give them, with an events table of
/// its own (its admitter ticks every event the table says is open).
async fn admit_config(redis_url: &str) -> AdmitConfig {
    let events = private_records().await;
    let vars = HashMap::from([
        ("REDIS_URL", redis_url.to_owned()),
        ("REDIS_TIMEOUT_MS", "300".to_owned()),
        ("ADMIT_TICK_MS", "100".to_owned()),
        ("ADMIT_RUN_MS", "1500".to_owned()),
        ("EVENTS_TABLE", events.table().to_owned()),
        ("SEATS_TABLE", "seats".to_owned()),
        ("ORDERS_TABLE", "orders".to_owned()),
        ("OUTBOX_TABLE", "outbox".to_owned()),
        ("AWS_ENDPOINT_URL", lineup_tests::aws::endpoint_url()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
    ]);
    AdmitConfig::from_lookup(&|name: &str| vars.get(name).cloned()).unwrap()
}

/// The admit function's handler, wired as its `main` wires it.
async fn admit(
    queue: &Arc<RedisQueue>,
    config: &AdmitConfig,
    invocation: LambdaEvent<serde_json::Value>,
) -> Result<lineup::application::admit::AdmissionSummary, LineupError> {
    // Assembled as the function assembles it (lineup::wiring::backends).
    let admit = lineup::wiring::backends::Admit::new(
        lineup::wiring::backends::Queue::new(queue.clone(), Arc::new(config.events.records())),
        Some(Arc::new(config.ledger.ledger())),
    );
    let rebuild = admit.rebuild();
    let ports = admit.ports(rebuild.as_ref());
    admit_for_invocation(ports, &SystemClock, &config.pace(), invocation).await
}

fn invocation(file: &str, deadline_in: Duration) -> LambdaEvent<serde_json::Value> {
    let mut context = Context::default();
    context.deadline = unix_millis(SystemTime::now() + deadline_in);
    LambdaEvent::new(sample(file), context)
}

#[tokio::test]
async fn the_admit_function_ticks_every_open_event_for_its_run_time() {
    // A private Redis, so "every open event" means exactly this test's events.
    let server = RedisServer::start();
    let config = admit_config(&server.url()).await;
    let queue = Arc::new(RedisQueue::open(&config.redis).unwrap());
    let (first, second) = (fresh_event(), fresh_event());
    for event in [&first, &second] {
        let settings = EventSettings {
            admit_per_second: 10,
            ..EventSettings::opening_at(SystemTime::now() - Duration::from_secs(1))
        };
        configure(&queue, event, settings).await;
        for n in 0..100 {
            queue
                .join(event, &customer(n), SystemTime::now())
                .await
                .unwrap();
        }
    }

    let summary = admit(
        &queue,
        &config,
        invocation("admit.json", Duration::from_secs(60)),
    )
    .await
    .expect("admit ran");
    // 1.5 s at 10/s per event: the bucket's first 10, then 10 a second: at most 2 × 25. Each
    // tick that admits saves the cursor in DynamoDB first: under the whole suite the emulator
    // may make a tick overrun its 100 ms, and the next one waits (never two at once).
    assert!(
        (8..=16).contains(&summary.ticks),
        "ticks every 100 ms for 1.5 s: {}",
        summary.ticks
    );
    assert!(
        (20..=50).contains(&summary.admitted),
        "admitted {}",
        summary.admitted
    );
    let after = queue
        .admit_tick(&first, SystemTime::now())
        .await
        .unwrap()
        .active
        + queue
            .admit_tick(&second, SystemTime::now())
            .await
            .unwrap()
            .active;
    assert!(
        after >= summary.admitted,
        "what it reports is in the active sets"
    );
    assert_eq!(summary.failed_event_ticks, 0);

    // The invocation's deadline wins over the configured run time: 3.5 s left less the 3 s margin
    // is a 0.5 s run, at most 6 ticks of 100 ms (the 1.5 s run above makes about 15). Counted
    // in ticks, not timed: a busy machine makes fewer ticks, never more.
    let bounded = admit(
        &queue,
        &config,
        invocation("admit.json", Duration::from_millis(3_500)),
    )
    .await
    .unwrap();
    assert!(
        bounded.ticks <= 6,
        "kept the 3 s margin before the deadline: {} ticks",
        bounded.ticks
    );
}

#[tokio::test]
async fn the_admit_function_refuses_other_events_and_reports_an_unreachable_redis() {
    let mut server = RedisServer::start();
    let config = admit_config(&server.url()).await;
    let queue = Arc::new(RedisQueue::open(&config.redis).unwrap());

    let wrong = admit(
        &queue,
        &config,
        invocation("admit-wrong-kind.json", Duration::from_secs(60)),
    )
    .await;
    match wrong {
        Err(error @ LineupError::InvalidRequest { .. }) => {
            assert_eq!(error.code(), "not_a_scheduled_event")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut other_detail = sample("admit.json");
    other_detail["detail-type"] = "EC2 Instance State-change Notification".into();
    let wrong = admit(
        &queue,
        &config,
        LambdaEvent::new(other_detail, Context::default()),
    )
    .await;
    assert!(
        matches!(wrong, Err(LineupError::InvalidRequest { .. })),
        "{wrong:?}"
    );

    server.stop();
    let down = tokio::time::timeout(
        Duration::from_secs(20),
        admit(
            &queue,
            &config,
            invocation("admit.json", Duration::from_secs(60)),
        ),
    )
    .await
    .expect("gave up instead of hanging");
    let error = down.expect_err("an unreachable Redis is reported");
    assert_eq!(error.code(), "service_unavailable");
    let diagnostic = lambda_runtime::Diagnostic::from(error);
    assert_eq!(diagnostic.error_type, "service_unavailable");
}
