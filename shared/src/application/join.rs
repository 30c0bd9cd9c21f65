//! `POST /events/{eventId}/queue`: join an event's queue. 201 with the new place; 200 with the
//! same body when the customer already had one (pressing F5 never sends anyone to the back).
//! After opening the answer carries the customer's queue number and a signed ticket stating it;
//! before opening the customer enters the pre-queue, drawn at opening, and the answer has no
//! number (see [`crate::application::queue_api`] for why). An on-sale may require a JWT claim to be `"true"` before
//! anyone joins (`LINEUP_REQUIRED_CLAIM`, e.g. `email_verified`): 403 `claim_required`.
//!
//! An event may also ask every new joiner for a proof-of-work ([`crate::domain::proof_of_work`]):
//! the body's `proofOfWork` is checked here (its challenge must be the caller's own for this
//! event, in constant time) and the bits it shows go to the queue script, which compares them
//! with the event's difficulty before storing anything. Too little is 403 `challenge_required`
//! or `challenge_invalid`, whose body carries a fresh challenge to solve.

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::application::http::{request, response};
use crate::application::queue_api::QueueApi;
use std::time::{Duration, SystemTime};

use crate::application::error::LineupError;
use crate::application::ports::queue::Joined;
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::proof_of_work::{ProofOfWork, WorkShown};

/// Answers one join request (errors as their HTTP answer).
pub async fn handle(api: &QueueApi, request: Request) -> Response<Body> {
    response::from_result(join(api, &request).await)
}

async fn join(api: &QueueApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let customer = request::caller(request)?;
    if let Some(claim) = &api.required_claim {
        if request::claim(request, claim) != Some("true") {
            return Err(LineupError::ClaimRequired {
                claim: claim.clone(),
            });
        }
    }
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    request::expect_no_body_or_json_object(request)?;
    let proof = proof_of_work(request)?;

    let now = api.clock.now();
    let exempt = api
        .challenge_exempt_claim
        .as_deref()
        .is_some_and(|claim| request::claim(request, claim) == Some("true"));
    let work = match (&proof, exempt) {
        (_, true) => WorkShown::Exempt,
        (None, false) => WorkShown::Nothing,
        (Some(proof), false) => api.key.ring().check_work(proof, &event, &customer, now),
    };
    let joined = match join_with_numbers(api, &event, &customer, now, work).await {
        Err(LineupError::ChallengeRefused(mut refused)) => {
            refused.fresh = Some(api.key.ring().issue_challenge(
                &event,
                &customer,
                refused.difficulty,
                now,
            ));
            return Err(LineupError::ChallengeRefused(refused));
        }
        other => other?,
    };
    let (body, retry_after) = api.describe(&event, &customer, None, &joined.standing, now);
    tracing::info!(event = %event, newly_queued = joined.newly_queued, "joined");
    let status = if joined.newly_queued {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(response::json(status, &body, retry_after))
}

/// The join body: `{}` or `{"proofOfWork": {"challenge": "<64 hex>", "nonce": "<nonce>"}}`
/// (other fields are ignored, as before the challenge existed).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JoinBody {
    #[serde(default)]
    proof_of_work: Option<ProofFields>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProofFields {
    challenge: String,
    nonce: String,
}

/// The body's proof-of-work, if any; 400 `invalid_proof_of_work` for one in the wrong shape.
/// (The body is already known to be empty or a JSON object of at most 1 KiB.)
fn proof_of_work(request: &Request) -> Result<Option<ProofOfWork>, LineupError> {
    let body = request::body_bytes(request);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let refused = |message: String| LineupError::invalid("invalid_proof_of_work", message);
    let parsed: JoinBody = serde_json::from_slice(body).map_err(|_| {
        refused(
            "proofOfWork must be an object with the string fields challenge and nonce".to_owned(),
        )
    })?;
    parsed
        .proof_of_work
        .map(|fields| ProofOfWork::parse(&fields.challenge, &fields.nonce))
        .transpose()
        .map_err(|malformed| refused(malformed.to_string()))
}

/// How many times a join waits for another request's reservation of numbers before answering
/// 503 (each wait a little longer: 25, 50, 75... ms).
const NUMBER_WAITS: u32 = 6;

/// Joins, re-loading the event if the cache lost it, and reserving queue numbers when the
/// durable range runs low or out ([`crate::application::numbering`]).
async fn join_with_numbers(
    api: &QueueApi,
    event: &EventId,
    customer: &CustomerId,
    now: SystemTime,
    work: WorkShown,
) -> Result<Joined, LineupError> {
    let mut restored = false;
    let mut waits = 0;
    loop {
        match api.line.join_with_work(event, customer, now, work).await {
            Ok(joined) => {
                if joined.top_up_numbers {
                    // The range is half used: reserve the next before answering. This join's
                    // number is safe already; a failure only means the next join tries again.
                    if let Err(error) = api.restorer.numbers.top_up(event, now).await {
                        tracing::warn!(event = %event, error = %error, "could not reserve more queue numbers");
                    }
                }
                return Ok(joined);
            }
            Err(LineupError::NumbersExhausted { top_up: true }) => {
                api.restorer.numbers.top_up(event, now).await?;
            }
            Err(LineupError::NumbersExhausted { top_up: false }) if waits < NUMBER_WAITS => {
                waits += 1;
                tokio::time::sleep(Duration::from_millis(25 * u64::from(waits))).await;
            }
            // The cache may have lost the event: re-load it from DynamoDB and try once more.
            Err(LineupError::EventNotFound) if !restored => {
                if !api.restorer.restore_event(event, now).await? {
                    return Err(LineupError::EventNotFound);
                }
                restored = true;
            }
            // Lost again at once (a second loss mid-request): the client retries shortly.
            Err(LineupError::EventNotFound) => return Err(LineupError::CacheRecovering),
            Err(other) => return Err(other),
        }
    }
}
