//! `POST /events/{eventId}/queue`: join an event's queue. 201 with the new place; 200 with the
//! same body when the customer already had one (pressing F5 never sends anyone to the back).
//! After opening the answer carries the customer's queue number and a signed ticket stating it;
//! before opening the customer enters the pre-queue, drawn at opening, and the answer has no
//! number (see [`super::queue_api`] for why). An on-sale may require a JWT claim to be `"true"` before
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
    let joined = match api.line.join(&event, &customer, now).await {
        // The cache may have lost the event: re-load it from DynamoDB and try once more.
        Err(LineupError::EventNotFound) if api.restorer.restore_event(&event, now).await? => {
            api.line.join(&event, &customer, now).await?
        }
        joined => joined?,
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
