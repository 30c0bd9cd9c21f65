//! The public routes: the status is the same for everyone, needs no JWT, says how long it may be
//! cached, and costs the origin one Redis read; the published draw is immutable; made-up events
//! and chunks are answered with cacheable misses and create nothing; an operator's pause shows.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::header::CACHE_CONTROL;
use http::StatusCode;
use lambda_http::{Body, Response};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::http::origin::{OriginGuard, OriginSecret};
use lineup::application::join;
use lineup::application::ports::queue::WaitingLine;
use lineup::application::rotating::Rotating;
use lineup::application::status;
use lineup::application::status::StatusApi;
use lineup::domain::clock::{Clock, FixedClock};
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::EventId;
use lineup::domain::keys::{KeyRing, SecretKey};
use lineup_cli::event_admin::{EventAdmin, SettingsChange};
use lineup_tests::redis_server::RedisServer;
use lineup_tests::*;
use serde_json::Value;

async fn public_api(queue: Arc<RedisQueue>) -> StatusApi {
    lineup::wiring::backends::Queue::new(queue, records().await).status_api()
}

fn status_request(event: &EventId) -> lambda_http::Request {
    request(&route(
        &sample("status.json"),
        &[("eventId", event.as_str())],
        None,
    ))
}

fn draw_request(event: &EventId, prefix: Option<&str>) -> lambda_http::Request {
    match prefix {
        None => request(&route(
            &sample("draw.json"),
            &[("eventId", event.as_str())],
            None,
        )),
        Some(prefix) => request(&route(
            &sample("draw-chunk.json"),
            &[("eventId", event.as_str()), ("prefix", prefix)],
            None,
        )),
    }
}

fn cache_control(response: &Response<Body>) -> String {
    response
        .headers()
        .get(CACHE_CONTROL)
        .expect("every public answer says how long it may be cached")
        .to_str()
        .unwrap()
        .to_owned()
}

/// Every command Redis has run, by name (from `INFO commandstats`), less the `INFO`s.
async fn commands_run(url: &str) -> u64 {
    let mut redis = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut redis)
        .await
        .unwrap();
    info.lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| {
            let calls = line.split("calls=").nth(1)?.split(',').next()?;
            calls.parse::<u64>().ok()
        })
        .sum()
}

#[tokio::test]
async fn the_status_is_public_cacheable_and_costs_one_redis_read() {
    // A Redis of its own, so its command count is this test's alone.
    let server = RedisServer::start();
    let queue = Arc::new(RedisQueue::new(&server.url(), Duration::from_secs(2)).unwrap());
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let event = fresh_event();
    configure(
        &queue,
        &event,
        EventSettings {
            admit_per_second: 3,
            ..EventSettings::opening_at(clock.now() - Duration::from_secs(60))
        },
    )
    .await;
    for n in 0..10 {
        queue.join(&event, &customer(n), clock.now()).await.unwrap();
    }
    Admission::new(queue.clone())
        .await
        .tick(&event, clock.now())
        .await;
    let api = public_api(queue.clone()).await;

    let before = commands_run(&server.url()).await;
    let answer = status::handle(&api, status_request(&event)).await;
    assert_eq!(
        commands_run(&server.url()).await - before,
        1,
        "one Redis read"
    );
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        cache_control(&answer),
        "public, max-age=2, stale-while-revalidate=5, stale-if-error=60"
    );
    let status = body(&answer);
    assert_eq!(status["eventId"], event.as_str());
    assert_eq!(status["state"], "open");
    assert_eq!(status["servingUpTo"], 3, "three admitted in the tick");
    assert_eq!(status["lastNumber"], 10);
    assert_eq!(status["waiting"], 7);
    assert_eq!(
        status["advancePerSecond"], 3.0,
        "configured, until measured"
    );
    assert_eq!(status["advanceMeasured"], false);
    assert_eq!(status["claimWindowSeconds"], 60);
    assert_eq!(status["draw"]["published"], false);
    assert!(status["draw"]["commitment"]
        .as_str()
        .is_some_and(|c| c.len() == 64));
    assert!(
        status["draw"].get("seed").is_none(),
        "never before the draw"
    );

    // The same for everyone: a caller's JWT is neither needed nor looked at.
    let mut with_jwt = route(
        &sample("status.json"),
        &[("eventId", event.as_str())],
        Some(&customer(1)),
    );
    with_jwt["headers"]["authorization"] = "Bearer whoever".into();
    assert_eq!(
        body(&status::handle(&api, request(&with_jwt)).await),
        status
    );
}

#[tokio::test]
async fn made_up_events_and_chunks_get_cacheable_misses_and_create_nothing() {
    let queue = queue();
    let api = public_api(queue.clone()).await;
    let made_up = fresh_event();
    let before = event_state(&made_up).await;

    for answer in [
        status::handle(&api, status_request(&made_up)).await,
        status::handle(&api, draw_request(&made_up, None)).await,
        status::handle(&api, draw_request(&made_up, Some("a"))).await,
    ] {
        assert_eq!(answer.status(), StatusCode::NOT_FOUND);
        assert!(["event_not_found", "draw_not_published"].contains(&error_code(&answer).as_str()));
        assert_eq!(
            cache_control(&answer),
            "public, max-age=5",
            "misses are cached too"
        );
    }
    assert_eq!(event_state(&made_up).await, before, "a miss stores nothing");
    let malformed = request(&route(
        &sample("status.json"),
        &[("eventId", "no{braces}")],
        None,
    ));
    let refused = status::handle(&api, malformed).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(cache_control(&refused), "public, max-age=5");
}

#[tokio::test]
async fn the_published_draw_is_immutable_and_served_by_chunk() {
    let queue = queue();
    let api = public_api(queue.clone()).await;
    let start = SystemTime::now();
    let event = fresh_event();
    configure(
        &queue,
        &event,
        EventSettings::opening_at(start + Duration::from_secs(60)),
    )
    .await;
    for n in 0..40 {
        queue.join(&event, &customer(n), start).await.unwrap();
    }
    let unpublished = status::handle(&api, draw_request(&event, None)).await;
    assert_eq!(error_code(&unpublished), "draw_not_published");

    Admission::new(queue.clone())
        .await
        .tick(&event, start + Duration::from_secs(61))
        .await;
    let summary = status::handle(&api, draw_request(&event, None)).await;
    assert_eq!(summary.status(), StatusCode::OK);
    assert_eq!(
        cache_control(&summary),
        "public, max-age=31536000, immutable"
    );
    let summary = body(&summary);
    assert_eq!(summary["entrants"], 40);
    assert_eq!(summary["prefixLength"], 1);

    let mut listed = 0;
    for prefix in lineup::domain::draw::all_prefixes(1) {
        let chunk = status::handle(&api, draw_request(&event, Some(&prefix))).await;
        assert_eq!(chunk.status(), StatusCode::OK, "chunk {prefix}");
        assert_eq!(cache_control(&chunk), "public, max-age=31536000, immutable");
        let chunk = body(&chunk);
        for entry in chunk["entries"].as_array().unwrap() {
            assert!(entry[0].as_str().unwrap().starts_with(&prefix));
            listed += 1;
        }
    }
    assert_eq!(listed, 40);
    // The status now reveals the seed the commitment bound.
    let status: Value = serde_json::from_str(
        &lineup::application::ports::queue::StatusBoard::status_json(queue.as_ref(), &event)
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(status["draw"]["published"], true);
    assert_eq!(status["draw"]["seed"], summary["seed"]);
    let seed = lineup::domain::draw::DrawSeed::parse(summary["seed"].as_str().unwrap()).unwrap();
    assert_eq!(status["draw"]["commitment"], seed.commitment());

    for bad in ["ab", "G", "-"] {
        let refused = status::handle(&api, draw_request(&event, Some(bad))).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(error_code(&refused), "invalid_prefix");
    }
}

#[tokio::test]
async fn a_paused_event_admits_nobody_and_says_so_and_every_change_is_kept() {
    let queue = queue();
    let records = records().await;
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "ops-on-call");
    let event = fresh_event();
    admin
        .open(
            &event,
            &SettingsChange {
                rate: Some(5),
                ..SettingsChange::default()
            },
            clock.now() - Duration::from_secs(10),
        )
        .await
        .unwrap();
    let joins = api(queue.clone(), clock.clone()).await;
    for n in 0..20 {
        let joined = join::handle(&joins, join_request(&event, &customer(n))).await;
        assert_eq!(joined.status(), StatusCode::CREATED);
    }
    let admission = Admission::new(queue.clone()).await;
    assert_eq!(admission.tick(&event, clock.now()).await.admitted, 5);

    admin.pause(&event, clock.now()).await.unwrap();
    let status_of = |queue: Arc<RedisQueue>| {
        let event = event.clone();
        async move {
            let api = public_api(queue).await;
            body(&status::handle(&api, status_request(&event)).await)
        }
    };
    assert_eq!(status_of(queue.clone()).await["state"], "paused");
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        admission.tick(&event, clock.now()).await.admitted,
        0,
        "paused"
    );
    // Places and joins stay.
    let joined = body(&join::handle(&joins, join_request(&event, &customer(99))).await);
    assert_eq!(joined["number"], 21);

    admin.resume(&event, clock.now()).await.unwrap();
    assert_eq!(status_of(queue.clone()).await["state"], "open");
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        admission.tick(&event, clock.now()).await.admitted,
        5,
        "resumed"
    );

    admin.close(&event, clock.now()).await.unwrap();
    assert_eq!(status_of(queue.clone()).await["state"], "closed");
    assert!(matches!(
        admin.pause(&event, clock.now()).await,
        Err(lineup_cli::event_admin::AdminError::Closed(_))
    ));

    let history = admin.history(&event).await.unwrap();
    let actions: Vec<&str> = history.iter().map(|entry| entry.action.as_str()).collect();
    assert_eq!(actions, ["open", "pause", "resume", "close"]);
    assert!(history.iter().all(|entry| entry.operator == "ops-on-call"));
    assert!(history
        .windows(2)
        .all(|pair| pair[0].at_ms <= pair[1].at_ms));
    assert!(history[1].detail["settings"]
        .as_str()
        .unwrap()
        .contains("paused"));
}

#[tokio::test]
async fn a_request_that_skipped_cloudfront_is_refused_before_anything_is_read() {
    let queue = queue();
    let event = open_event(&queue, SystemTime::now()).await;
    let secret =
        OriginSecret::from_secret(b"lineup-local-origin-header-not-a-secret".to_vec()).unwrap();
    let guard = lineup::adapters::secret_source::origin_guard(None)
        .await
        .unwrap();
    assert!(
        guard.refuse(&status_request(&event)).await.is_none(),
        "no secret: no check"
    );

    let guard = guarded(secret);
    // Through CloudFront (the sample carries the header): on to the function.
    assert!(guard.refuse(&status_request(&event)).await.is_none());
    // Straight to the API: no header, or a guessed one.
    let before = event_state(&event).await;
    for header in [None, Some("guess")] {
        let mut direct = sample("join.json");
        direct = retarget(&direct, &event, Some(&customer(1)), None);
        match header {
            None => {
                direct["headers"]
                    .as_object_mut()
                    .unwrap()
                    .remove("x-lineup-origin");
            }
            Some(value) => direct["headers"]["x-lineup-origin"] = value.into(),
        }
        let refused = guard.refuse(&request(&direct)).await.expect("refused");
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert_eq!(error_code(&refused), "direct_access_refused");
    }
    assert_eq!(event_state(&event).await, before, "nothing was joined");
}

fn guarded(secret: OriginSecret) -> OriginGuard {
    OriginGuard::fixed(Rotating::fixed(KeyRing::single(secret)))
}
