//! Unit tests of the join's access codes ([`crate::application::join`], ADR 0030) over the
//! in-memory queue and codes: a join without a code, with a malformed one, a wrong, foreign,
//! used-up, expired or revoked one is refused with nothing stored; a good one binds the caller
//! and queues them; the same account comes back with its code, or without once queued; a code
//! lets in at most its uses of distinct accounts; a failed join after the binding keeps the slot
//! for its account only; codes and proofs-of-work together.

use std::sync::Arc;
use std::time::SystemTime;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::{json, Value};

use crate::application::error::LineupError;
use crate::application::fakes::access_codes::MemoryAccessCodes;
use crate::application::fakes::outage::Faulty;
use crate::application::join;
use crate::application::ports::access_codes::{AccessCodeBook, AccessCodes, CodeAccepted};
use crate::application::queue_api::QueueApi;
use crate::domain::access_code::{AccessCode, CodeTerms};
use crate::domain::clock::FixedClock;
use crate::domain::event_settings::EventSettings;
use crate::domain::ids::GroupName;
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::proof_of_work::ChallengeDifficulty;

use super::admit::{customer, secs, t0, World};
use super::hold::body as body_of;

struct Joining {
    world: World,
    codes: Arc<MemoryAccessCodes>,
    api: QueueApi,
}

impl Joining {
    fn new() -> Self {
        let world = World::new();
        let codes = Arc::new(MemoryAccessCodes::new());
        let api = QueueApi {
            challenge_exempt_claim: Some("pow_exempt".to_owned()),
            access_codes: codes.clone(),
            ..world.queue_api(Arc::new(FixedClock::at(t0())))
        };
        Self { world, codes, api }
    }

    /// An open event requiring a code (or not), opened a minute ago.
    async fn event(&self, name: &str, code_required: bool) -> EventId {
        let settings = EventSettings {
            code_required,
            ..EventSettings::opening_at(t0() - secs(60))
        };
        self.world.open(name, settings).await
    }

    /// `count` codes for `event` letting in `uses` accounts each, until `expires_at`.
    async fn codes(
        &self,
        event: &EventId,
        count: usize,
        uses: u32,
        expires_at: Option<SystemTime>,
    ) -> Vec<AccessCode> {
        let codes: Vec<AccessCode> = (0..count).map(|_| AccessCode::generate()).collect();
        let terms = CodeTerms {
            uses,
            expires_at,
            group: GroupName::parse("fan-club").ok(),
        };
        self.codes
            .create(event, &codes, &terms, t0())
            .await
            .unwrap();
        codes
    }

    async fn join(&self, event: &EventId, caller: &CustomerId, body: Value) -> Response<Body> {
        self.join_through(&self.api, event, caller, body).await
    }

    async fn join_through(
        &self,
        api: &QueueApi,
        event: &EventId,
        caller: &CustomerId,
        body: Value,
    ) -> Response<Body> {
        let mut request: Value =
            serde_json::from_str(include_str!("../../../../events/join.json")).unwrap();
        request["pathParameters"]["eventId"] = event.as_str().into();
        request["rawPath"] = format!("/events/{event}/queue").into();
        request["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = caller.as_str().into();
        request["body"] = body.to_string().into();
        let request: Request = lambda_http::request::from_str(&request.to_string()).unwrap();
        join::handle(api, request).await
    }

    async fn with_code(
        &self,
        event: &EventId,
        caller: &CustomerId,
        code: &AccessCode,
    ) -> Response<Body> {
        self.join(event, caller, json!({ "code": code.to_string() }))
            .await
    }
}

/// The answer is `status` with this error code.
fn refused(response: &Response<Body>, status: StatusCode, code: &str) {
    let body = body_of(response);
    assert_eq!(response.status(), status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
}

fn number(response: &Response<Body>) -> u64 {
    body_of(response)["number"].as_u64().unwrap()
}

#[tokio::test]
async fn without_a_code_a_newcomer_gets_code_required_and_nothing_is_stored() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let alice = customer(1);
    for body in [json!({}), json!({ "code": null })] {
        let bare = joining.join(&gala, &alice, body).await;
        refused(&bare, StatusCode::FORBIDDEN, "code_required");
        assert!(
            !body_of(&bare).to_string().contains("fan-club"),
            "nothing about codes is told"
        );
    }
    assert!(!joining.world.queued(&gala, &alice).await);
    assert_eq!(joining.codes.calls("accept"), 0, "nothing to check");
}

#[tokio::test]
async fn a_good_code_binds_the_account_and_queues_it_and_it_keeps_its_place() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let code = &joining.codes(&gala, 1, 1, None).await[0];
    let alice = customer(1);
    let joined = joining.with_code(&gala, &alice, code).await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body_of(&joined));
    assert_eq!(joining.codes.bound(&gala, code), vec![alice.clone()]);

    // Queued: joining again needs no code, and with it reads nothing durable.
    let calls = joining.codes.calls("accept");
    for body in [json!({}), json!({ "code": code.to_string() })] {
        let again = joining.join(&gala, &alice, body).await;
        assert_eq!(again.status(), StatusCode::OK, "{}", body_of(&again));
        assert_eq!(number(&again), number(&joined), "the same place");
    }
    assert_eq!(joining.codes.calls("accept"), calls);
}

#[tokio::test]
async fn a_second_account_with_a_single_use_code_is_refused_and_nothing_changes() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let code = &joining.codes(&gala, 1, 1, None).await[0];
    let (alice, bob) = (customer(1), customer(2));
    assert_eq!(
        joining.with_code(&gala, &alice, code).await.status(),
        StatusCode::CREATED
    );
    let passed_on = joining.with_code(&gala, &bob, code).await;
    refused(&passed_on, StatusCode::FORBIDDEN, "code_invalid");
    assert!(!joining.world.queued(&gala, &bob).await);
    assert_eq!(joining.codes.bound(&gala, code), vec![alice]);
}

#[tokio::test]
async fn a_code_lets_in_exactly_its_uses_of_distinct_accounts() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let code = &joining.codes(&gala, 1, 3, None).await[0];
    for n in 1..=3 {
        let joined = joining.with_code(&gala, &customer(n), code).await;
        assert_eq!(joined.status(), StatusCode::CREATED, "account {n}");
        // The same account again does not take a second use.
        let again = joining.with_code(&gala, &customer(n), code).await;
        assert_eq!(again.status(), StatusCode::OK, "account {n} again");
    }
    refused(
        &joining.with_code(&gala, &customer(4), code).await,
        StatusCode::FORBIDDEN,
        "code_invalid",
    );
    assert_eq!(joining.codes.bound(&gala, code).len(), 3);
}

#[tokio::test]
async fn wrong_foreign_expired_and_revoked_codes_are_refused_alike_with_nothing_stored() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let other = joining.event("other", true).await;
    let foreign = &joining.codes(&other, 1, 1, None).await[0];
    let expired = &joining.codes(&gala, 1, 1, Some(t0())).await[0];
    let revoked = &joining.codes(&gala, 1, 1, None).await[0];
    joining
        .codes
        .revoke(&gala, &[revoked.hash(&gala)], t0())
        .await
        .unwrap();
    let wrong = &AccessCode::generate();
    let alice = customer(1);
    let mut bodies = Vec::new();
    for code in [wrong, foreign, expired, revoked] {
        let answer = joining.with_code(&gala, &alice, code).await;
        refused(&answer, StatusCode::FORBIDDEN, "code_invalid");
        bodies.push(body_of(&answer));
    }
    assert!(
        bodies.windows(2).all(|pair| pair[0] == pair[1]),
        "one answer for every reason: {bodies:?}"
    );
    assert!(!joining.world.queued(&gala, &alice).await);
    for code in [expired, revoked] {
        assert!(joining.codes.bound(&gala, code).is_empty());
    }
    assert!(joining.codes.bound(&other, foreign).is_empty());
}

#[tokio::test]
async fn a_malformed_code_is_a_bad_request_and_is_not_looked_up() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let alice = customer(1);
    for code in [
        json!("1234"),
        json!(1234),
        json!(["7QKD-M3XA-9FPE-T2WC"]),
        json!("7QKD-M3XA-9FPE-T2WU"),
    ] {
        let answer = joining.join(&gala, &alice, json!({ "code": code })).await;
        refused(&answer, StatusCode::BAD_REQUEST, "invalid_code");
    }
    assert_eq!(joining.codes.calls("accept"), 0);
    assert!(!joining.world.queued(&gala, &alice).await);
}

#[tokio::test]
async fn an_event_without_the_requirement_ignores_codes() {
    let joining = Joining::new();
    let gala = joining.event("gala", false).await;
    let joined = joining
        .with_code(&gala, &customer(1), &AccessCode::generate())
        .await;
    assert_eq!(joined.status(), StatusCode::CREATED);
    assert_eq!(joining.codes.calls("accept"), 0);
}

/// Codes that, once a code is accepted, make the queue's next call fail (an outage between the
/// binding and the join).
struct ThenTheQueueFails {
    codes: Arc<MemoryAccessCodes>,
    queue: Arc<crate::application::fakes::queue::MemoryQueue>,
}

#[async_trait::async_trait]
impl AccessCodes for ThenTheQueueFails {
    async fn accept(
        &self,
        event: &EventId,
        code: &AccessCode,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<CodeAccepted, LineupError> {
        let accepted = self.codes.accept(event, code, customer, now).await?;
        self.queue.fail_next(1);
        Ok(accepted)
    }
}

#[tokio::test]
async fn a_join_that_fails_after_the_binding_keeps_the_use_for_that_account_only() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let code = &joining.codes(&gala, 1, 1, None).await[0];
    let (alice, bob) = (customer(1), customer(2));
    // The queue fails the join that comes after the binding was written.
    let failing = QueueApi {
        access_codes: Arc::new(ThenTheQueueFails {
            codes: joining.codes.clone(),
            queue: joining.world.queue.clone(),
        }),
        ..joining.api.clone()
    };
    let failed = joining
        .join_through(&failing, &gala, &alice, json!({ "code": code.to_string() }))
        .await;
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(joining.codes.bound(&gala, code), vec![alice.clone()]);
    assert!(!joining.world.queued(&gala, &alice).await);

    refused(
        &joining.with_code(&gala, &bob, code).await,
        StatusCode::FORBIDDEN,
        "code_invalid",
    );
    let retried = joining.with_code(&gala, &alice, code).await;
    assert_eq!(
        retried.status(),
        StatusCode::CREATED,
        "{}",
        body_of(&retried)
    );
}

#[tokio::test]
async fn the_codes_store_down_is_a_503_with_nothing_stored() {
    let joining = Joining::new();
    let gala = joining.event("gala", true).await;
    let code = &joining.codes(&gala, 1, 1, None).await[0];
    joining.codes.go_down();
    let answer = joining.with_code(&gala, &customer(1), code).await;
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer.headers().contains_key("retry-after"));
    assert!(!joining.world.queued(&gala, &customer(1)).await);
}

#[tokio::test]
async fn with_a_proof_of_work_too_the_challenge_comes_first_and_then_the_code() {
    let joining = Joining::new();
    let settings = EventSettings {
        code_required: true,
        challenge_difficulty: ChallengeDifficulty::new(8).unwrap(),
        ..EventSettings::opening_at(t0() - secs(60))
    };
    let gala = joining.world.open("gala", settings).await;
    let code = &joining.codes(&gala, 1, 1, None).await[0];
    let alice = customer(1);
    let unsolved = joining.with_code(&gala, &alice, code).await;
    refused(&unsolved, StatusCode::FORBIDDEN, "challenge_required");
    assert!(
        joining.codes.bound(&gala, code).is_empty(),
        "no binding before the work is shown"
    );
}
