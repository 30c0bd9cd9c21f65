//! The bot challenge at join, through the real join handler and Redis: an event that asks for a
//! proof-of-work refuses a bare join, a stale or forged proof and one solved for another customer
//! or event with a 403 carrying a fresh challenge, stores nothing for any of them, and lets in a
//! solved join, its same-customer replay (the same idempotent join), the operator's exempt claim,
//! and, after a cache loss, asks for the difficulty its durable record keeps. The page's solver
//! passes its node test (`tests/web/pow.test.mjs`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lambda_http::{Body, Response};
use lineup::application::join;
use lineup::application::ports::event_records::EventRecords;
use lineup::application::queue_api::QueueApi;
use lineup::domain::clock::{FixedClock, SystemClock};
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::{CustomerId, EventId};
use lineup::domain::proof_of_work::{self, ChallengeDifficulty, WINDOW};
use lineup_tests::*;
use serde_json::{json, Value};

/// Low enough to solve in a millisecond or two, high enough that a random nonce fails.
const BITS: u32 = 10;

fn challenged(opens_at: SystemTime) -> EventSettings {
    EventSettings {
        challenge_difficulty: ChallengeDifficulty::new(BITS).unwrap(),
        ..EventSettings::opening_at(opens_at)
    }
}

/// A join request carrying `body` (`None`: the sample's `{}`) and, if given, JWT claims.
fn join_with(
    event: &EventId,
    caller: &CustomerId,
    body: Option<Value>,
    claims: &[(&str, &str)],
) -> lambda_http::Request {
    let mut sample = route(
        &sample("join.json"),
        &[("eventId", event.as_str())],
        Some(caller),
    );
    if let Some(body) = body {
        sample["body"] = body.to_string().into();
    }
    for (name, value) in claims {
        sample["requestContext"]["authorizer"]["jwt"]["claims"][*name] = (*value).into();
    }
    request(&sample)
}

/// The challenge a refusal carries, after checking the refusal's shape.
fn challenge_of(refused: &Response<Body>, code: &str) -> String {
    let body = body(refused);
    assert_eq!(
        (refused.status(), body["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some(code)),
        "{body}"
    );
    assert_eq!(body["error"]["difficulty"], BITS, "{body}");
    assert!(
        body["error"]["expiresAt"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{body}"
    );
    let challenge = body["error"]["challenge"].as_str().expect("a challenge");
    assert_eq!(challenge.len(), 64, "{body}");
    challenge.to_owned()
}

/// `{"proofOfWork": ...}` solving `challenge` to `bits` zero bits.
fn solved(challenge: &str, bits: u32) -> Value {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(challenge, &mut bytes).unwrap();
    let (nonce, _) = proof_of_work::solve(&bytes, ChallengeDifficulty::new(bits).unwrap());
    json!({"proofOfWork": {"challenge": challenge, "nonce": nonce}})
}

/// A nonce whose hash after `challenge` falls short of [`BITS`].
fn unsolved(challenge: &str) -> Value {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(challenge, &mut bytes).unwrap();
    let nonce = (0u64..)
        .map(|n| n.to_string())
        .find(|n| proof_of_work::leading_zero_bits(&bytes, n.as_bytes()) < BITS)
        .unwrap();
    json!({"proofOfWork": {"challenge": challenge, "nonce": nonce}})
}

async fn challenged_event(api: &QueueApi) -> EventId {
    let event = fresh_event();
    let queue = queue();
    configure(
        &queue,
        &event,
        challenged(api.clock.now() - Duration::from_secs(60)),
    )
    .await;
    event
}

#[tokio::test]
async fn a_join_without_a_valid_proof_is_refused_and_stores_nothing() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock)).await;
    let event = challenged_event(&api).await;
    let other_event = challenged_event(&api).await;
    let (alice, bob) = (customer(1), customer(2));
    let before = event_state(&event).await;

    // Bare: a challenge to solve, and nothing stored.
    let bare = join::handle(&api, join_with(&event, &alice, None, &[])).await;
    let challenge = challenge_of(&bare, "challenge_required");
    // Too few zero bits; another customer's; another event's; a forged challenge.
    let bobs = challenge_of(
        &join::handle(&api, join_with(&event, &bob, None, &[])).await,
        "challenge_required",
    );
    let elsewhere = challenge_of(
        &join::handle(&api, join_with(&other_event, &alice, None, &[])).await,
        "challenge_required",
    );
    let forged = "ab".repeat(32);
    for (what, body) in [
        ("too few bits", unsolved(&challenge)),
        ("bob's challenge", solved(&bobs, BITS)),
        ("another event's challenge", solved(&elsewhere, BITS)),
        ("a forged challenge", solved(&forged, BITS)),
    ] {
        let refused = join::handle(&api, join_with(&event, &alice, Some(body), &[])).await;
        let fresh = challenge_of(&refused, "challenge_invalid");
        assert_eq!(
            fresh, challenge,
            "{what}: alice's own challenge, this window"
        );
    }
    // Malformed or oversized proofs: 400 / 413, never a panic.
    for (body, status, code) in [
        (
            json!({"proofOfWork": "yes"}),
            StatusCode::BAD_REQUEST,
            "invalid_proof_of_work",
        ),
        (
            json!({"proofOfWork": {"challenge": "ab", "nonce": "1"}}),
            StatusCode::BAD_REQUEST,
            "invalid_proof_of_work",
        ),
        (
            json!({"proofOfWork": {"challenge": challenge, "nonce": "1 2"}}),
            StatusCode::BAD_REQUEST,
            "invalid_proof_of_work",
        ),
        (
            json!({"proofOfWork": {"challenge": challenge, "nonce": 7}}),
            StatusCode::BAD_REQUEST,
            "invalid_proof_of_work",
        ),
        (
            json!({"proofOfWork": {"challenge": challenge, "nonce": "1", "extra": true}}),
            StatusCode::BAD_REQUEST,
            "invalid_proof_of_work",
        ),
        (
            json!({"proofOfWork": {"challenge": challenge, "nonce": "9".repeat(5000)}}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
    ] {
        let refused = join::handle(&api, join_with(&event, &alice, Some(body.clone()), &[])).await;
        assert_eq!(
            (refused.status(), error_code(&refused)),
            (status, code.to_owned()),
            "{body}"
        );
    }
    assert_eq!(
        event_state(&event).await,
        before,
        "a refused join stored something"
    );

    // Solved: in the queue. Replayed by alice: the same idempotent join, the same number.
    let proof = solved(&challenge, BITS);
    let joined = join::handle(&api, join_with(&event, &alice, Some(proof.clone()), &[])).await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));
    assert_eq!(body(&joined)["number"], 1);
    let again = join::handle(&api, join_with(&event, &alice, Some(proof.clone()), &[])).await;
    assert_eq!(
        (again.status(), body(&again)["number"].clone()),
        (StatusCode::OK, json!(1))
    );
    // Replayed by bob, or at another event: refused, nothing stored.
    let after_alice = event_state(&event).await;
    let stolen = join::handle(&api, join_with(&event, &bob, Some(proof.clone()), &[])).await;
    challenge_of(&stolen, "challenge_invalid");
    assert_eq!(
        event_state(&event).await,
        after_alice,
        "bob was queued with alice's proof"
    );
    let moved = join::handle(&api, join_with(&other_event, &alice, Some(proof), &[])).await;
    challenge_of(&moved, "challenge_invalid");
}

#[tokio::test]
async fn a_proof_is_good_for_its_window_and_the_next_only() {
    let start = SystemTime::now();
    let clock = Arc::new(FixedClock::at(start));
    let queue = queue();
    let api = api(queue.clone(), clock.clone()).await;
    let event = challenged_event(&api).await;
    let (late, later) = (customer(1), customer(2));
    let challenge_for = |who: &CustomerId| {
        let api = api.clone();
        let event = event.clone();
        let who = who.clone();
        async move {
            challenge_of(
                &join::handle(&api, join_with(&event, &who, None, &[])).await,
                "challenge_required",
            )
        }
    };
    let (late_challenge, later_challenge) =
        (challenge_for(&late).await, challenge_for(&later).await);

    clock.advance(WINDOW);
    let joined = join::handle(
        &api,
        join_with(&event, &late, Some(solved(&late_challenge, BITS)), &[]),
    )
    .await;
    assert_eq!(
        joined.status(),
        StatusCode::CREATED,
        "one window later: {}",
        body(&joined)
    );

    clock.advance(WINDOW);
    let stale = join::handle(
        &api,
        join_with(&event, &later, Some(solved(&later_challenge, BITS)), &[]),
    )
    .await;
    let fresh = challenge_of(&stale, "challenge_invalid");
    assert_ne!(fresh, later_challenge, "a new window, a new challenge");
}

#[tokio::test]
async fn the_operators_exempt_claim_lets_a_customer_in_without_a_proof() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock))
        .await
        .with_challenge_exempt_claim(Some("custom:pow_exempt".to_owned()));
    let event = challenged_event(&api).await;
    for value in ["false", "TRUE", ""] {
        let refused = join::handle(
            &api,
            join_with(&event, &customer(1), None, &[("custom:pow_exempt", value)]),
        )
        .await;
        challenge_of(&refused, "challenge_required");
    }
    let joined = join::handle(
        &api,
        join_with(&event, &customer(1), None, &[("custom:pow_exempt", "true")]),
    )
    .await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));
}

#[tokio::test]
async fn a_difficulty_changes_live_and_survives_a_cache_loss() {
    use lineup::application::ports::queue::EventSettingsStore;
    let queue = queue();
    let records = records().await;
    let api = api(queue.clone(), Arc::new(SystemClock)).await;
    let event = fresh_event();
    let opened = SystemTime::now() - Duration::from_secs(60);

    // No difficulty: a bare join is let in, and a stray proof is ignored.
    let plain = EventSettings::opening_at(opened);
    let seed = records.save_settings(&event, &plain, None).await.unwrap();
    queue.configure(&event, &plain, &seed).await.unwrap();
    let joined = join::handle(&api, join_with(&event, &customer(1), None, &[])).await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));
    let stray = json!({"proofOfWork": {"challenge": "ab".repeat(32), "nonce": "1"}});
    let joined = join::handle(&api, join_with(&event, &customer(2), Some(stray), &[])).await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));

    // Raised live (as `lineup event set --challenge-difficulty` does: the record, then the cache).
    let hard = challenged(opened);
    records.save_settings(&event, &hard, None).await.unwrap();
    queue.configure(&event, &hard, &seed).await.unwrap();
    assert_eq!(
        queue
            .settings(&event)
            .await
            .unwrap()
            .unwrap()
            .challenge_difficulty
            .bits(),
        BITS
    );
    challenge_of(
        &join::handle(&api, join_with(&event, &customer(3), None, &[])).await,
        "challenge_required",
    );
    // Those already queued keep their place without a proof (nothing new is stored for them).
    let kept = join::handle(&api, join_with(&event, &customer(1), None, &[])).await;
    assert_eq!(
        (kept.status(), body(&kept)["number"].clone()),
        (StatusCode::OK, json!(1))
    );

    // The cache loses the event: the join restores it from the record, difficulty included.
    let mut redis = redis().await;
    let _: i64 = redis::cmd("DEL")
        .arg(lineup::adapters::redis::keys::EventKeys::new(&event).settings)
        .query_async(&mut redis)
        .await
        .unwrap();
    let record = records.event(&event).await.unwrap().unwrap();
    assert_eq!(record.settings.challenge_difficulty.bits(), BITS);
    let challenge = challenge_of(
        &join::handle(&api, join_with(&event, &customer(4), None, &[])).await,
        "challenge_required",
    );
    let joined = join::handle(
        &api,
        join_with(&event, &customer(4), Some(solved(&challenge, BITS)), &[]),
    )
    .await;
    assert!(joined.status().is_success(), "{}", body(&joined));

    // Back to none.
    records.save_settings(&event, &plain, None).await.unwrap();
    queue.configure(&event, &plain, &seed).await.unwrap();
    assert!(
        records
            .event(&event)
            .await
            .unwrap()
            .unwrap()
            .settings
            .challenge_difficulty
            == ChallengeDifficulty::NONE
    );
    let joined = join::handle(&api, join_with(&event, &customer(5), None, &[])).await;
    assert!(joined.status().is_success(), "{}", body(&joined));
}

/// The page's solver (`web/pow.js`), run in node as the edge function's test is: its SHA-256 is
/// SHA-256 and the nonce it finds is the first the server's rule accepts.
#[test]
fn the_pages_solver_passes_its_node_test() {
    lineup_tests::node_test_passes("tests/web/pow.test.mjs", 5);
}
