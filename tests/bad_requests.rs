//! Bad input gets its 4xx and the contract's JSON error body, and changes nothing in Redis;
//! with Redis down, the handlers answer 503 with `Retry-After` instead of failing or hanging.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lineup::adapters::dynamo::access_codes::DynamoAccessCodes;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::admit::AdmissionLoop;
use lineup::application::error::{LineupError, Store};
use lineup::application::ports::queue::EventSettingsStore;
use lineup::application::queue_api::QueueApi;
use lineup::application::{join, poll};
use lineup::domain::clock::SystemClock;
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::EventId;
use lineup_tests::redis_server::RedisServer;
use lineup_tests::*;
use serde_json::Value;

enum Handler {
    Join,
    Poll,
}

struct Case {
    name: &'static str,
    handler: Handler,
    event: Value,
    status: StatusCode,
    code: &'static str,
}

#[tokio::test]
async fn bad_requests_get_their_4xx_and_change_nothing() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock)).await;
    let event = open_event(&queue, SystemTime::now()).await;
    let (alice, bob, carol) = (customer(1), customer(2), customer(3));
    for c in [&alice, &bob] {
        assert_eq!(
            join::handle(&api, join_request(&event, c)).await.status(),
            StatusCode::CREATED
        );
    }
    let alice_id = queue_id(&event, &alice).await;
    let unknown = EventId::parse("no-such-event").unwrap();

    let with = |mut value: Value, pointer: &str, replacement: Value| {
        *value
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer} in sample")) = replacement;
        value
    };
    let join_sample = retarget(&sample("join.json"), &event, Some(&carol), None);
    let poll_sample = retarget(&sample("poll.json"), &event, Some(&alice), Some(&alice_id));
    let leave_sample = retarget(&sample("leave.json"), &event, Some(&alice), Some(&alice_id));
    let unknown_id = queue_id(&unknown, &alice).await;
    let carol_id = queue_id(&event, &carol).await;

    let cases = vec![
        Case {
            name: "join an unknown event",
            handler: Handler::Join,
            event: sample("join-unknown-event.json"),
            status: StatusCode::NOT_FOUND,
            code: "event_not_found",
        },
        Case {
            name: "join a malformed event id",
            handler: Handler::Join,
            event: with(
                join_sample.clone(),
                "/pathParameters/eventId",
                "bad{id}".into(),
            ),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_event_id",
        },
        Case {
            name: "join without a JWT",
            handler: Handler::Join,
            event: retarget(&sample("join-unauthenticated.json"), &event, None, None),
            status: StatusCode::UNAUTHORIZED,
            code: "unauthenticated",
        },
        Case {
            name: "join with an empty sub",
            handler: Handler::Join,
            event: with(
                join_sample.clone(),
                "/requestContext/authorizer/jwt/claims/sub",
                "".into(),
            ),
            status: StatusCode::UNAUTHORIZED,
            code: "unauthenticated",
        },
        Case {
            name: "join with an oversized sub",
            handler: Handler::Join,
            event: with(
                join_sample.clone(),
                "/requestContext/authorizer/jwt/claims/sub",
                "x".repeat(500).into(),
            ),
            status: StatusCode::UNAUTHORIZED,
            code: "unauthenticated",
        },
        Case {
            name: "join with a form body",
            handler: Handler::Join,
            event: retarget(&sample("join-not-json.json"), &event, Some(&carol), None),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_json",
        },
        Case {
            name: "join with truncated JSON",
            handler: Handler::Join,
            event: with(join_sample.clone(), "/body", "{\"seat".into()),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_json",
        },
        Case {
            name: "join with a JSON array",
            handler: Handler::Join,
            event: with(join_sample.clone(), "/body", "[1,2]".into()),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_body",
        },
        Case {
            name: "poll a malformed queue id",
            handler: Handler::Poll,
            event: retarget(
                &sample("poll-malformed-queue-id.json"),
                &event,
                Some(&alice),
                None,
            ),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_queue_id",
        },
        Case {
            name: "poll someone else's queue id",
            handler: Handler::Poll,
            event: retarget(
                &sample("poll-foreign-queue-id.json"),
                &event,
                Some(&bob),
                Some(&alice_id),
            ),
            status: StatusCode::NOT_FOUND,
            code: "queue_entry_not_found",
        },
        Case {
            name: "poll without a JWT",
            handler: Handler::Poll,
            event: retarget(&poll_sample, &event, None, None),
            status: StatusCode::UNAUTHORIZED,
            code: "unauthenticated",
        },
        Case {
            name: "poll an unknown event",
            handler: Handler::Poll,
            event: retarget(&poll_sample, &unknown, Some(&alice), Some(&unknown_id)),
            status: StatusCode::NOT_FOUND,
            code: "event_not_found",
        },
        Case {
            name: "poll before joining",
            handler: Handler::Poll,
            event: retarget(&poll_sample, &event, Some(&carol), Some(&carol_id)),
            status: StatusCode::NOT_FOUND,
            code: "queue_entry_not_found",
        },
        Case {
            name: "poll with a malformed event id",
            handler: Handler::Poll,
            event: with(poll_sample.clone(), "/pathParameters/eventId", "a:b".into()),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_event_id",
        },
        Case {
            name: "leave someone else's entry",
            handler: Handler::Poll,
            event: retarget(&leave_sample, &event, Some(&bob), Some(&alice_id)),
            status: StatusCode::NOT_FOUND,
            code: "queue_entry_not_found",
        },
        Case {
            name: "leave without a JWT",
            handler: Handler::Poll,
            event: retarget(&leave_sample, &event, None, None),
            status: StatusCode::UNAUTHORIZED,
            code: "unauthenticated",
        },
        Case {
            name: "leave a malformed queue id",
            handler: Handler::Poll,
            event: retarget(&leave_sample, &event, Some(&alice), Some("0123")),
            status: StatusCode::BAD_REQUEST,
            code: "invalid_queue_id",
        },
        Case {
            name: "an unsupported method on the entry",
            handler: Handler::Poll,
            event: with(
                poll_sample.clone(),
                "/requestContext/http/method",
                "PUT".into(),
            ),
            status: StatusCode::NOT_FOUND,
            code: "route_not_found",
        },
    ];

    let before = (snapshot(&event).await, snapshot(&unknown).await);
    for case in cases {
        let request = request(&case.event);
        let response = match case.handler {
            Handler::Join => join::handle(&api, request).await,
            Handler::Poll => poll::handle(&api, request).await,
        };
        assert_eq!(
            response.status(),
            case.status,
            "{}: {}",
            case.name,
            body(&response)
        );
        assert_eq!(error_code(&response), case.code, "{}", case.name);
        assert_eq!(
            response.headers().get(http::header::CONTENT_TYPE).unwrap(),
            "application/json",
            "{}",
            case.name
        );
        let after = (snapshot(&event).await, snapshot(&unknown).await);
        assert_eq!(before, after, "{} changed what Redis holds", case.name);
    }
}

#[tokio::test]
async fn with_redis_down_join_and_poll_answer_503_with_retry_after_and_recover() {
    let mut server = RedisServer::start();
    let queue = Arc::new(RedisQueue::new(&server.url(), Duration::from_millis(500)).unwrap());
    let api = QueueApi {
        restorer: restorer(queue.clone()).await,
        line: queue.clone(),
        key: signing_key().into(),
        clock: Arc::new(SystemClock),
        required_claim: None,
        challenge_exempt_claim: None,
        access_codes: Arc::new(DynamoAccessCodes::in_events_table(&*records().await)),
    };
    let event = fresh_event();
    let settings = EventSettings::opening_at(SystemTime::now() - Duration::from_secs(1));
    configure(&queue, &event, settings.clone()).await;
    let alice = customer(1);
    let alice_id = queue_id(&event, &alice).await;
    assert_eq!(
        join::handle(&api, join_request(&event, &alice))
            .await
            .status(),
        StatusCode::CREATED
    );

    server.stop();
    // A hang would trip this guard; the Redis timeout (500 ms) is what answers.
    let guard = Duration::from_secs(20);
    for response in [
        tokio::time::timeout(
            guard,
            join::handle(&api, join_request(&event, &customer(2))),
        )
        .await
        .expect("join answered"),
        tokio::time::timeout(
            guard,
            poll::handle(&api, poll_request(&event, &alice, &alice_id)),
        )
        .await
        .expect("poll answered"),
        tokio::time::timeout(
            guard,
            poll::handle(&api, leave_request(&event, &alice, &alice_id)),
        )
        .await
        .expect("leave answered"),
    ] {
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error_code(&response), "service_unavailable");
        assert!(
            retry_after(&response).is_some_and(|secs| secs >= 1),
            "503 carries Retry-After"
        );
    }
    let records = private_records().await;
    let restorer = lineup::application::restore::Restorer::new(
        queue.clone(),
        records.clone(),
        records.clone(),
    );
    let ports = lineup::application::admit::AdmissionPorts {
        availability: None,
        admitter: queue.as_ref(),
        draw: queue.as_ref(),
        records: records.as_ref(),
        publication: records.as_ref(),
        restorer: &restorer,
    };
    let admission = AdmissionLoop::new(ports, &SystemClock, Duration::from_millis(50));
    let outcome = tokio::time::timeout(guard, admission.run(Duration::from_secs(10)))
        .await
        .expect("admit loop gave up");
    assert!(
        matches!(
            outcome,
            Err(LineupError::Unavailable {
                store: Store::Queue,
                ..
            })
        ),
        "{outcome:?}"
    );

    // Redis is back (empty: this test server keeps nothing on disk); the same adapter reconnects.
    server.restart();
    queue
        .configure(
            &event,
            &settings,
            &lineup::domain::draw::DrawSeed::generate(),
        )
        .await
        .expect("reconnected");
    let again = join::handle(&api, join_request(&event, &alice)).await;
    assert_eq!(again.status(), StatusCode::CREATED, "{}", body(&again));
}
