//! `GET /events/{eventId}/queue/{queueId}`: where the caller stands (position once the event has
//! opened, ETA and when to poll again; or the access token once admitted; before opening no
//! position, see [`super::queue_api`]). `DELETE` on the same path leaves the queue or
//! gives up the admission. A queue id that is not the caller's is answered exactly like an
//! unknown one (404), so ids reveal nothing about other customers.

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};

use super::queue_api::QueueApi;
use super::{request, response};
use crate::ids::{CustomerId, EventId, QueueId};
use crate::LineupError;

pub async fn handle(api: &QueueApi, request: Request) -> Response<Body> {
    response::from_result(route(api, &request).await)
}

async fn route(api: &QueueApi, request: &Request) -> Result<Response<Body>, LineupError> {
    match *request.method() {
        Method::GET => poll(api, request).await,
        Method::DELETE => leave(api, request).await,
        _ => Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        }),
    }
}

/// The caller, the event and the queue id, with the queue id checked to be the caller's own.
async fn own_entry(
    api: &QueueApi,
    request: &Request,
) -> Result<(CustomerId, EventId, QueueId), LineupError> {
    let customer = request::caller(request)?;
    request::body_within(request, request::NO_INPUT_BODY_LIMIT)?;
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    let queue_id = QueueId::parse(request::path_parameter(request, "queueId")?)?;
    let own = api.key.is_own_queue_id(&queue_id, &event, &customer)
        // Made by another instance with a key this one has not fetched yet: fetch, check again.
        || (api.key.refresh_after_miss().await
            && api.key.is_own_queue_id(&queue_id, &event, &customer));
    if !own {
        return Err(LineupError::QueueEntryNotFound);
    }
    Ok((customer, event, queue_id))
}

async fn poll(api: &QueueApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let (customer, event, queue_id) = own_entry(api, request).await?;
    let now = api.clock.now();
    let standing = api
        .line
        .standing(&event, &customer, now)
        .await?
        .ok_or(LineupError::QueueEntryNotFound)?;
    let (body, retry_after) = api.describe(&event, &customer, &queue_id, &standing, now);
    Ok(response::json(StatusCode::OK, &body, retry_after))
}

async fn leave(api: &QueueApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let (customer, event, queue_id) = own_entry(api, request).await?;
    if api.line.leave(&event, &customer).await? {
        tracing::info!(event = %event, queue_id = %queue_id, "left the queue");
        Ok(response::no_content())
    } else {
        Err(LineupError::QueueEntryNotFound)
    }
}
