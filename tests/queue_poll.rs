//! Polling: waiting customers learn their number and position (once the pre-queue is drawn:
//! before, nothing in the answer depends on the draw), ETA and when to read the status again;
//! admitted ones claim with it and get an access token that the token check accepts, and that
//! nobody else can use.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lineup::application::error::LineupError;
use lineup::application::ports::queue::{Admitter, WaitingLine};
use lineup::application::{join, poll};
use lineup::domain::access_token;
use lineup::domain::access_token::TokenRejection;
use lineup::domain::clock::{Clock, FixedClock};
use lineup::domain::event_settings::{EventSettings, QueueState};
use lineup::domain::ids::{CustomerId, EventId};
use lineup_tests::*;

#[tokio::test]
async fn a_waiting_customer_gets_position_eta_and_a_poll_interval_that_grows_with_the_wait() {
    let queue = queue();
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let api = api(queue.clone(), clock.clone()).await;
    let event = open_event(&queue, clock.now()).await; // 50 admissions/s configured, none measured yet
    for n in 0..5_000 {
        queue.join(&event, &customer(n), clock.now()).await.unwrap();
    }

    let front_ticket = queue_id(&event, &customer(10)).await;
    let front = poll::handle(&api, poll_request(&event, &customer(10), &front_ticket)).await;
    assert_eq!(front.status(), StatusCode::OK);
    let front_body = body(&front);
    assert_eq!(front_body["status"], "waiting");
    assert_eq!(front_body["number"], 11);
    assert_eq!(front_body["position"], 10);
    assert_eq!(front_body["servingUpTo"], 0);
    assert_eq!(
        front_body["queueId"],
        front_ticket.as_str(),
        "the ticket is kept"
    );
    assert_eq!(front_body["etaSeconds"], 1, "11 customers at 50/s");
    assert_eq!(
        retry_after(&front),
        Some(5),
        "near the front: read the status every 5 s"
    );

    let back = poll::handle(
        &api,
        poll_request(
            &event,
            &customer(4_999),
            &queue_id(&event, &customer(4_999)).await,
        ),
    )
    .await;
    let back_body = body(&back);
    assert_eq!(back_body["position"], 4_999);
    assert_eq!(back_body["etaSeconds"], 100, "5,000 customers at 50/s");
    assert_eq!(retry_after(&back), Some(10), "further back: less often");
}

#[tokio::test]
async fn the_eta_follows_the_measured_admission_rate() {
    let queue = queue();
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let api = api(queue.clone(), clock.clone()).await;
    let event = fresh_event();
    let settings = EventSettings {
        max_active: 10_000,
        admit_per_second: 20,
        ..EventSettings::opening_at(clock.now() - Duration::from_secs(1))
    };
    configure(&queue, &event, settings).await;
    for n in 0..2_000 {
        queue.join(&event, &customer(n), clock.now()).await.unwrap();
    }
    // Tick every 2 s for 24 s: 20 admitted per tick, i.e. 10 per second measured (half the cap).
    for _ in 0..13 {
        queue.admit_tick(&event, clock.now()).await.unwrap();
        clock.advance(Duration::from_secs(2));
    }
    let last = customer(1_999);
    let ticket = queue_id(&event, &last).await;
    let response = poll::handle(&api, poll_request(&event, &last, &ticket)).await;
    let body = body(&response);
    let position = body["position"].as_u64().unwrap();
    assert_eq!(position, 1_999 - 13 * 20);
    assert_eq!(body["servingUpTo"], 13 * 20);
    let eta = body["etaSeconds"].as_u64().unwrap();
    assert!(
        (170..=176).contains(&eta),
        "{position} ahead at ~10 numbers/s measured should be ~174 s, got {eta}"
    );
}

#[tokio::test]
async fn an_admitted_customer_gets_a_token_that_only_they_can_use_for_that_event() {
    let queue = queue();
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let api = api(queue.clone(), clock.clone()).await;
    let event = open_event(&queue, clock.now()).await;
    let other_event = open_event(&queue, clock.now()).await;
    let (alice, bob) = (customer(1), customer(2));
    for e in [&event, &other_event] {
        for c in [&alice, &bob] {
            assert_eq!(
                join::handle(&api, join_request(e, c)).await.status(),
                StatusCode::CREATED
            );
        }
        assert_eq!(queue.admit_tick(e, clock.now()).await.unwrap().admitted, 2);
    }

    // Admitted, not yet claimed: the poll is the claim.
    let ticket = ticket_at(&event, &alice, Some(1), clock.now());
    let response = poll::handle(&api, poll_request(&event, &alice, &ticket)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(retry_after(&response), None);
    let admitted = body(&response);
    assert_eq!(admitted["status"], "admitted");
    let expires_at = humantime::parse_rfc3339(admitted["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(
        expires_at
            .duration_since(clock.now() - Duration::from_millis(1))
            .unwrap()
            .as_secs(),
        600,
        "the default 10-minute session"
    );
    let token = admitted["accessToken"].as_str().unwrap().to_owned();

    let key: lineup::application::rotating::SigningKeys = signing_key().into();
    let check = |token: String, event: EventId, caller: CustomerId, now: SystemTime| {
        let (key, queue) = (key.clone(), queue.clone());
        async move {
            lineup::application::hold::check_admitted(
                &key,
                queue.as_ref(),
                Some(&token),
                &event,
                &caller,
                now,
            )
            .await
        }
    };
    let refused = |result: Result<_, LineupError>| match result {
        Err(LineupError::AccessDenied(reason)) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    };

    let accepted = check(token.clone(), event.clone(), alice.clone(), clock.now())
        .await
        .unwrap();
    assert_eq!(accepted.ticket_limit, None, "no ticket limit here");
    assert_eq!(
        lineup::domain::clock::unix_millis(accepted.expires_at),
        lineup::domain::clock::unix_millis(expires_at),
        "the admission the token names"
    );

    // Forged: another key signed it; or the claims were edited after signing.
    let forged_key =
        lineup::domain::signing::SigningKey::new("an attacker's key, not the server's one")
            .unwrap();
    let forged = access_token::issue(
        &forged_key,
        &event,
        &alice,
        clock.now() + Duration::from_secs(3_600),
    );
    assert_eq!(
        refused(check(forged, event.clone(), alice.clone(), clock.now()).await),
        TokenRejection::BadSignature
    );
    let mut tampered = token.clone();
    tampered.replace_range(5..6, if &tampered[5..6] == "A" { "B" } else { "A" });
    assert_eq!(
        refused(check(tampered, event.clone(), alice.clone(), clock.now()).await),
        TokenRejection::BadSignature
    );

    // Another event's, another customer's, expired.
    assert_eq!(
        refused(
            check(
                token.clone(),
                other_event.clone(),
                alice.clone(),
                clock.now()
            )
            .await
        ),
        TokenRejection::OtherEvent
    );
    assert_eq!(
        refused(check(token.clone(), event.clone(), bob.clone(), clock.now()).await),
        TokenRejection::OtherCustomer
    );
    let later = clock.now() + Duration::from_secs(601);
    assert_eq!(
        refused(check(token.clone(), event.clone(), alice.clone(), later).await),
        TokenRejection::Expired
    );
    assert_eq!(
        refused(
            lineup::application::hold::check_admitted(
                &key,
                queue.as_ref(),
                None,
                &event,
                &alice,
                clock.now()
            )
            .await
        ),
        TokenRejection::Missing
    );

    // A validly signed token for an admission that does not exist (never issued by poll).
    let made_up = access_token::issue(
        &key.current(),
        &event,
        &alice,
        clock.now() + Duration::from_secs(300),
    );
    assert_eq!(
        refused(check(made_up, event.clone(), alice.clone(), clock.now()).await),
        TokenRejection::Revoked
    );

    // Revoked: leaving ends the admission before the token expires.
    assert!(queue.leave(&event, &alice).await.unwrap());
    assert_eq!(
        refused(check(token, event.clone(), alice.clone(), clock.now()).await),
        TokenRejection::Revoked
    );
}

#[tokio::test]
async fn waiting_customers_of_a_closed_event_are_told_so_and_new_joins_are_refused() {
    let queue = queue();
    let clock = Arc::new(FixedClock::at(SystemTime::now()));
    let api = api(queue.clone(), clock.clone()).await;
    let event = open_event(&queue, clock.now()).await;
    assert_eq!(
        join::handle(&api, join_request(&event, &customer(1)))
            .await
            .status(),
        StatusCode::CREATED
    );
    let settings = EventSettings {
        state: QueueState::Closed,
        ..EventSettings::opening_at(clock.now() - Duration::from_secs(60))
    };
    configure(&queue, &event, settings).await;

    let ticket = queue_id(&event, &customer(1)).await;
    let response = poll::handle(&api, poll_request(&event, &customer(1), &ticket)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body(&response)["status"], "closed");
    let late = join::handle(&api, join_request(&event, &customer(2))).await;
    assert_eq!(late.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(&late), "queue_closed");
}

#[tokio::test]
async fn before_the_draw_a_poll_answers_alike_whatever_the_draw_will_be() {
    let queue = queue();
    let start = SystemTime::now();
    let clock = Arc::new(FixedClock::at(start));
    let api = api(queue.clone(), clock.clone()).await;
    let event = fresh_event();
    let opens_in = Duration::from_secs(1_800);
    // Admitting nobody: this test looks at the numbers.
    let settings = EventSettings {
        admit_per_second: 0,
        ..EventSettings::opening_at(start + opens_in)
    };
    configure(&queue, &event, settings).await;
    for n in 0..50 {
        queue.join(&event, &customer(n), clock.now()).await.unwrap();
    }

    let poll_of = |customer: CustomerId| {
        let (api, event) = (api.clone(), event.clone());
        async move {
            let ticket = queue_id(&event, &customer).await;
            let response = poll::handle(&api, poll_request(&event, &customer, &ticket)).await;
            assert_eq!(response.status(), StatusCode::OK);
            let mut body = body(&response);
            for varying in ["queueId", "entrant"] {
                body.as_object_mut().unwrap().remove(varying);
            }
            (body, retry_after(&response))
        }
    };
    let first = poll_of(customer(0)).await;
    for n in 1..50 {
        assert_eq!(poll_of(customer(n)).await, first, "customer {n}");
    }
    let (seen, retry) = first;
    assert_eq!(seen["status"], "waiting");
    assert!(seen.get("number").is_none(), "{seen}");
    assert!(seen.get("position").is_none(), "{seen}");
    assert_eq!(seen["etaSeconds"], 1_800, "the ETA counts to the opening");
    assert!(seen["opensAt"].is_string(), "{seen}");
    assert_eq!(retry, Some(180), "a tenth of the wait");

    // Drawn at opening: now each has a number, 1 to 50.
    clock.advance(opens_in);
    Admission::new(queue.clone())
        .await
        .tick(&event, clock.now())
        .await;
    let mut numbers = Vec::new();
    for n in 0..50 {
        let (seen, _) = poll_of(customer(n)).await;
        numbers.push(seen["number"].as_u64().expect("a number after the draw"));
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=50).collect::<Vec<_>>());
}
