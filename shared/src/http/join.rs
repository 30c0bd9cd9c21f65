//! `POST /events/{eventId}/queue`: join an event's queue. 201 with the new place; 200 with the
//! same body when the customer already had one (pressing F5 never sends anyone to the back).
//! Before opening the place is a pre-queue draw fixed by the event's seed and the customer, so
//! leaving and joining again cannot improve it, and the answer shows no position (see
//! [`super::queue_api`] for why). An on-sale may require a JWT claim to be `"true"` before
//! anyone joins (`LINEUP_REQUIRED_CLAIM`, e.g. `email_verified`): 403 `claim_required`.

use http::StatusCode;
use lambda_http::{Body, Request, Response};

use super::queue_api::QueueApi;
use super::{request, response};
use crate::ids::EventId;
use crate::LineupError;

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

    let now = api.clock.now();
    let joined = api.line.join(&event, &customer, now).await?;
    let queue_id = api.key.queue_id(&event, &customer);
    tracing::info!(event = %event, queue_id = %queue_id, newly_queued = joined.newly_queued, "joined");

    let (body, retry_after) = api.describe(&event, &customer, &queue_id, &joined.standing, now);
    let status = if joined.newly_queued {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(response::json(status, &body, retry_after))
}
