//! `GET /events/{eventId}/queue/{queueId}`: where the caller stands, and the claim. A waiting
//! customer learns their number and ETA (see [`crate::application::queue_api`]); an admitted one claims the
//! admission here and gets the access token. `queueId` is the signed ticket the join returned:
//! one that is not the caller's, or whose number was edited, is answered exactly like an unknown
//! one (404), so tickets reveal nothing about other customers. After a cache loss a valid ticket
//! puts its holder back ([`crate::application::restore`]). `DELETE` on the same path leaves the queue or
//! gives up the admission.

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};

use crate::application::error::LineupError;
use crate::application::group_line::group_ticket_limit;
use crate::application::http::{request, response};
use crate::application::ports::queue::Standing;
use crate::application::queue_api::QueueApi;
use crate::application::restore::TicketRestore;
use crate::domain::ids::{CustomerId, EventId, QueueId};
use crate::domain::signing::QueueTicket;

/// Answers one `GET` (poll) or `DELETE` (leave) on a queue entry (errors as their HTTP answer).
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

/// The caller, the line and the ticket, checked to be the caller's own for this line: the
/// event's own, or the priority group's line the ticket names (its MAC covers the line, so a
/// ticket names no line but its own).
async fn own_entry(
    api: &QueueApi,
    request: &Request,
) -> Result<(CustomerId, EventId, QueueId, QueueTicket), LineupError> {
    let customer = request::caller(request)?;
    request::body_within(request, request::NO_INPUT_BODY_LIMIT)?;
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    let queue_id = QueueId::parse(request::path_parameter(request, "queueId")?)?;
    let event = match queue_id.group() {
        Some(group) => event.group_line(&group),
        None => event,
    };
    let ticket = match api.key.open_ticket(&queue_id, &event, &customer) {
        Some(ticket) => Some(ticket),
        // Signed by another instance with a key this one has not fetched yet: fetch, try again.
        None if api.key.refresh_after_miss().await => {
            api.key.open_ticket(&queue_id, &event, &customer)
        }
        None => None,
    };
    let ticket = ticket.ok_or(LineupError::QueueEntryNotFound)?;
    Ok((customer, event, queue_id, ticket))
}

/// The customer's standing, re-loading the event if the cache lost it.
async fn standing(
    api: &QueueApi,
    event: &EventId,
    customer: &CustomerId,
) -> Result<Option<Standing>, LineupError> {
    let now = api.clock.now();
    match api.line.standing(event, customer, now).await {
        Err(LineupError::EventNotFound) => {
            if !api.restorer.restore_event(event, now).await? {
                return Err(LineupError::EventNotFound);
            }
            match api.line.standing(event, customer, now).await {
                // Lost again at once (a second loss mid-request): the client retries shortly.
                Err(LineupError::EventNotFound) => Err(LineupError::CacheRecovering),
                found => found,
            }
        }
        found => found,
    }
}

async fn poll(api: &QueueApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let (customer, event, queue_id, ticket) = own_entry(api, request).await?;
    let now = api.clock.now();
    let standing = match standing(api, &event, &customer).await? {
        Some(standing) => standing,
        // Unknown to the cache: if it lost this customer, their ticket puts them back.
        None => match api
            .restorer
            .restore_ticket(&event, &customer, ticket, now)
            .await?
        {
            TicketRestore::Restored => standing(api, &event, &customer)
                .await?
                .ok_or(LineupError::QueueEntryNotFound)?,
            TicketRestore::Expired => Standing::Expired,
            TicketRestore::Nothing => return Err(LineupError::QueueEntryNotFound),
        },
    };
    let group_limit = match standing {
        Standing::Admitted { .. } => group_ticket_limit(api, &event).await?,
        _ => None,
    };
    let (body, retry_after) = api.describe(
        &event,
        &customer,
        Some((&queue_id, ticket)),
        &standing,
        group_limit,
        now,
    );
    Ok(response::json(StatusCode::OK, &body, retry_after))
}

async fn leave(api: &QueueApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let (customer, event, _, _) = own_entry(api, request).await?;
    if api.line.leave(&event, &customer).await? {
        tracing::info!(event = %event, "left the queue");
        return Ok(response::no_content());
    }
    // Nothing to leave: the cache may have lost the event (then its place comes back only
    // when its ticket is presented, so the customer should try again once it is restored).
    match api.line.standing(&event, &customer, api.clock.now()).await {
        Err(LineupError::EventNotFound) if api.restorer.exists(&event).await? => {
            Err(LineupError::CacheRecovering)
        }
        _ => Err(LineupError::QueueEntryNotFound),
    }
}
