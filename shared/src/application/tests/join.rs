//! Unit tests of the join's bot challenge ([`crate::application::join`]) over the in-memory queue
//! and events table: a bare join, a proof with too few bits, another customer's or event's, an
//! expired one and a malformed one are each refused with nothing stored; a solved one and the
//! operator's exempt claim are let in; an event without a difficulty ignores proofs.

use std::sync::Arc;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::{json, Value};

use crate::application::join;
use crate::application::queue_api::QueueApi;
use crate::domain::clock::FixedClock;
use crate::domain::event_settings::EventSettings;
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::proof_of_work::{self, ChallengeDifficulty, WINDOW};

use super::admit::{customer, secs, t0, World};
use super::hold::body as body_of;

const BITS: u32 = 8;

struct Joining {
    world: World,
    clock: Arc<FixedClock>,
    api: QueueApi,
}

impl Joining {
    fn new() -> Self {
        let world = World::new();
        let clock = Arc::new(FixedClock::at(t0()));
        let api = QueueApi {
            challenge_exempt_claim: Some("pow_exempt".to_owned()),
            ..world.queue_api(clock.clone())
        };
        Self { world, clock, api }
    }

    async fn event(&self, name: &str, bits: u32) -> EventId {
        let settings = EventSettings {
            challenge_difficulty: ChallengeDifficulty::new(bits).unwrap(),
            ..EventSettings::opening_at(t0() - secs(60))
        };
        self.world.open(name, settings).await
    }

    async fn join(
        &self,
        event: &EventId,
        caller: &CustomerId,
        body: Value,
        claims: &[(&str, &str)],
    ) -> Response<Body> {
        let mut request: Value =
            serde_json::from_str(include_str!("../../../../events/join.json")).unwrap();
        request["pathParameters"]["eventId"] = event.as_str().into();
        request["rawPath"] = format!("/events/{event}/queue").into();
        request["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = caller.as_str().into();
        for (name, value) in claims {
            request["requestContext"]["authorizer"]["jwt"]["claims"][*name] = (*value).into();
        }
        request["body"] = body.to_string().into();
        let request: Request = lambda_http::request::from_str(&request.to_string()).unwrap();
        join::handle(&self.api, request).await
    }
}

/// The challenge in a 403 with this code.
fn challenge(response: &Response<Body>, code: &str) -> String {
    let body = body_of(response);
    assert_eq!(response.status(), StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["difficulty"], BITS, "{body}");
    body["error"]["challenge"].as_str().unwrap().to_owned()
}

fn proof(challenge: &str, nonce: &str) -> Value {
    json!({"proofOfWork": {"challenge": challenge, "nonce": nonce}})
}

fn solved(challenge: &str) -> Value {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(challenge, &mut bytes).unwrap();
    let (nonce, _) = proof_of_work::solve(&bytes, ChallengeDifficulty::new(BITS).unwrap());
    proof(challenge, &nonce)
}

#[tokio::test]
async fn a_bare_join_gets_a_challenge_and_a_solved_one_a_place() {
    let joining = Joining::new();
    let gala = joining.event("gala", BITS).await;
    let alice = customer(1);
    let bare = joining.join(&gala, &alice, json!({}), &[]).await;
    let issued = challenge(&bare, "challenge_required");
    assert!(!joining.world.queued(&gala, &alice).await, "nothing stored");

    let joined = joining.join(&gala, &alice, solved(&issued), &[]).await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body_of(&joined));
    let again = joining.join(&gala, &alice, solved(&issued), &[]).await;
    assert_eq!(
        again.status(),
        StatusCode::OK,
        "the same proof again: the same join"
    );
}

#[tokio::test]
async fn too_few_bits_another_customer_another_event_or_an_old_window_are_refused() {
    let joining = Joining::new();
    let gala = joining.event("gala", BITS).await;
    let other = joining.event("other", BITS).await;
    let (alice, bob) = (customer(1), customer(2));
    let alices = challenge(
        &joining.join(&gala, &alice, json!({}), &[]).await,
        "challenge_required",
    );
    let elsewhere = challenge(
        &joining.join(&other, &alice, json!({}), &[]).await,
        "challenge_required",
    );

    let mut bytes = [0u8; 32];
    hex::decode_to_slice(&alices, &mut bytes).unwrap();
    let weak = (0u64..)
        .map(|n| n.to_string())
        .find(|n| proof_of_work::leading_zero_bits(&bytes, n.as_bytes()) < BITS)
        .unwrap();
    for (what, who, body) in [
        ("too few bits", &alice, proof(&alices, &weak)),
        ("alice's proof, for bob", &bob, solved(&alices)),
        ("another event's proof", &alice, solved(&elsewhere)),
    ] {
        let refused = joining.join(&gala, who, body, &[]).await;
        challenge(&refused, "challenge_invalid");
        assert!(!joining.world.queued(&gala, who).await, "{what}: stored");
    }

    joining.clock.advance(WINDOW * 2);
    let stale = joining.join(&gala, &alice, solved(&alices), &[]).await;
    assert_ne!(
        challenge(&stale, "challenge_invalid"),
        alices,
        "a new window, a new challenge"
    );
    assert!(!joining.world.queued(&gala, &alice).await);
}

#[tokio::test]
async fn a_malformed_proof_is_a_bad_request() {
    let joining = Joining::new();
    let gala = joining.event("gala", BITS).await;
    for body in [
        json!({"proofOfWork": 1}),
        json!({"proofOfWork": {"challenge": "00"}}),
        proof("not hex", "1"),
        proof(&"00".repeat(32), ""),
        proof(&"00".repeat(32), "ü"),
    ] {
        let refused = joining.join(&gala, &customer(1), body.clone(), &[]).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body_of(&refused)["error"]["code"], "invalid_proof_of_work");
    }
    assert!(!joining.world.queued(&gala, &customer(1)).await);
}

#[tokio::test]
async fn the_exempt_claim_needs_no_proof_and_an_event_without_a_difficulty_none_either() {
    let joining = Joining::new();
    let gala = joining.event("gala", BITS).await;
    let refused = joining
        .join(&gala, &customer(1), json!({}), &[("pow_exempt", "false")])
        .await;
    challenge(&refused, "challenge_required");
    let exempt = joining
        .join(&gala, &customer(1), json!({}), &[("pow_exempt", "true")])
        .await;
    assert_eq!(exempt.status(), StatusCode::CREATED);

    let plain = joining.event("plain", 0).await;
    for (n, body) in [(2, json!({})), (3, proof(&"00".repeat(32), "1"))] {
        let joined = joining.join(&plain, &customer(n), body, &[]).await;
        assert_eq!(joined.status(), StatusCode::CREATED, "{}", body_of(&joined));
    }
}
