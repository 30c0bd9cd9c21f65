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
//!
//! An event may admit only holders of an access code (docs/decisions/0030-access-codes.md): the
//! queue script answers "code required" for a newcomer; with the body's `code`, the code is
//! then bound to the caller in DynamoDB (one conditional write) and the join runs again with
//! the code accepted. Without one, 403 `code_required`; a code that does not let the caller in,
//! 403 `code_invalid`; one that cannot be a code, 400 `invalid_code`.

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::application::group_line::{checks_code_first, group_ticket_limit, line_for};
use crate::application::http::{request, response};
use crate::application::queue_api::QueueApi;
use std::time::{Duration, SystemTime};

use crate::application::error::LineupError;
use crate::application::ports::queue::{Joined, Standing};
use crate::domain::access_code::{AccessCode, CodeShown};
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
    let body = join_body(request)?;
    let proof = proof_of_work(&body)?;
    let code = access_code(&body)?;

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
    // A presale code (ADR 0031): when the event has a group of code holders, the join's code
    // is bound to the caller first (as below, one conditional write; binding again is free),
    // and the group it was made for decides the line; but only once the join shows the
    // event's proof-of-work (without it the join is refused with a challenge, below).
    let code_group = match &code {
        Some(code) if checks_code_first(api, &event, work).await? => {
            api.access_codes
                .accept(&event, code, &customer, now)
                .await?
                .group
        }
        _ => None,
    };
    // The line of the first priority group the caller belongs to, else the event's own.
    let line = line_for(
        api,
        |name| request::claim(request, name),
        code_group.as_ref(),
        &event,
        &customer,
        now,
    )
    .await?;
    let joined = match join_with_code(api, &line, &customer, now, work, code.as_ref()).await {
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
    let group_limit = match joined.standing {
        Standing::Admitted { .. } => group_ticket_limit(api, &line).await?,
        _ => None,
    };
    let (body, retry_after) =
        api.describe(&line, &customer, None, &joined.standing, group_limit, now);
    tracing::info!(event = %event, line = %line, newly_queued = joined.newly_queued, "joined");
    let status = if joined.newly_queued {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(response::json(status, &body, retry_after))
}

/// The join body: `{}`, or with `"proofOfWork": {"challenge": "<64 hex>", "nonce": "<nonce>"}`
/// and/or `"code": "<access code>"` (other fields are ignored, as before either existed).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JoinBody {
    #[serde(default)]
    proof_of_work: Option<serde_json::Value>,
    #[serde(default)]
    code: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProofFields {
    challenge: String,
    nonce: String,
}

/// The join body's fields. (The body is already known to be empty or a JSON object of at most
/// 1 KiB.)
fn join_body(request: &Request) -> Result<JoinBody, LineupError> {
    let body = request::body_bytes(request);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(JoinBody::default());
    }
    serde_json::from_slice(body)
        .map_err(|_| LineupError::invalid("invalid_json", "the join body must be a JSON object"))
}

/// The body's proof-of-work, if any; 400 `invalid_proof_of_work` for one in the wrong shape.
fn proof_of_work(body: &JoinBody) -> Result<Option<ProofOfWork>, LineupError> {
    let refused = |message: String| LineupError::invalid("invalid_proof_of_work", message);
    let Some(value) = body.proof_of_work.as_ref().filter(|value| !value.is_null()) else {
        return Ok(None);
    };
    let fields = ProofFields::deserialize(value).map_err(|_| {
        refused(
            "proofOfWork must be an object with the string fields challenge and nonce".to_owned(),
        )
    })?;
    ProofOfWork::parse(&fields.challenge, &fields.nonce)
        .map(Some)
        .map_err(|malformed| refused(malformed.to_string()))
}

/// The body's access code, if any (`null` or absent: none); 400 `invalid_code` for one that
/// cannot be a code (not a string, or not 16 symbols of the codes' alphabet).
fn access_code(body: &JoinBody) -> Result<Option<AccessCode>, LineupError> {
    match &body.code {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(typed)) => AccessCode::parse(typed)
            .map(Some)
            .map_err(|malformed| LineupError::invalid("invalid_code", malformed.to_string())),
        Some(_) => Err(LineupError::invalid(
            "invalid_code",
            "code must be a string: the access code you were given",
        )),
    }
}

// --- Access codes (ADR 0030) ---------------------------------------------------------------

/// Joins; if the event requires an access code of this newcomer, binds the body's code to the
/// caller durably (one conditional write) and joins again with it accepted. The binding comes
/// first: a join that fails after it leaves the caller bound (a slot of the code is theirs, and
/// their retry passes), never another account let in.
async fn join_with_code(
    api: &QueueApi,
    event: &EventId,
    customer: &CustomerId,
    now: SystemTime,
    work: WorkShown,
    code: Option<&AccessCode>,
) -> Result<Joined, LineupError> {
    match join_with_numbers(api, event, customer, now, work, CodeShown::Nothing).await {
        Err(LineupError::CodeRequired) => {
            let Some(code) = code else {
                return Err(LineupError::CodeRequired);
            };
            // Codes are the event's, whichever of its lines the caller joins.
            let accepted = match api
                .access_codes
                .accept(&event.event(), code, customer, now)
                .await
            {
                Err(LineupError::CodeRefused) => {
                    tracing::info!(event = %event, "access code refused");
                    return Err(LineupError::CodeRefused);
                }
                other => other?,
            };
            // (A code's group chose the line before this, for an event with a group of code
            // holders: `checks_code_first`.)
            tracing::info!(
                event = %event,
                code_group = accepted.group.as_ref().map(|group| group.as_str()),
                "access code accepted"
            );
            join_with_numbers(api, event, customer, now, work, CodeShown::Accepted).await
        }
        other => other,
    }
}

// --- end of access codes -------------------------------------------------------------------

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
    code: CodeShown,
) -> Result<Joined, LineupError> {
    let mut restored = false;
    let mut waits = 0;
    loop {
        match api
            .line
            .join_with_work(event, customer, now, work, code)
            .await
        {
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
