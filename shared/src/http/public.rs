//! The public routes, the same answer for everyone and no JWT, made to be cached by the CDN:
//!
//! - `GET /events/{eventId}/status`: the event's status as the last admit tick published it
//!   (one Redis read), cached a couple of seconds.
//! - `GET /events/{eventId}/draw`: the published pre-queue draw's summary (seed revealed),
//!   immutable once published.
//! - `GET /events/{eventId}/draw/{prefix}`: the entrants whose hash starts with `prefix`, with
//!   their numbers, immutable once published.
//!
//! Every answer says how long it may be cached, errors included: a 404 for a made-up event is
//! cached too (5 s), so made-up ids cannot stream to the origin through the CDN; a 503 for 1 s,
//! so a Redis hiccup does not turn the crowd's reads into a stampede.

use std::sync::Arc;
use std::time::Duration;

use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, StatusCode};
use lambda_http::{Body, Request, Response};

use super::{request, response};
use crate::event_records::DrawPublication;
use crate::ids::EventId;
use crate::queue::StatusBoard;
use crate::status::EventStatus;
use crate::LineupError;

/// A published draw never changes: caches may keep it for good.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Misses (unknown events, a draw not yet published) are cached briefly.
const MISS_MAX_AGE: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct PublicApi {
    pub board: Arc<dyn StatusBoard>,
    pub draw: Arc<dyn DrawPublication>,
}

pub async fn handle(api: &PublicApi, request: Request) -> Response<Body> {
    let mut answer = match route(api, &request).await {
        Ok(answer) => answer,
        Err(failure) => {
            let cache = match failure.status() {
                status if status.is_server_error() => "public, max-age=1".to_owned(),
                _ => format!("public, max-age={}", MISS_MAX_AGE.as_secs()),
            };
            with_cache_control(response::error(&failure), &cache)
        }
    };
    // Cached by everyone for everyone: never vary on who asked.
    answer.headers_mut().insert(
        http::header::VARY,
        HeaderValue::from_static("Accept-Encoding"),
    );
    answer
}

fn with_cache_control(mut answer: Response<Body>, value: &str) -> Response<Body> {
    if let Ok(value) = HeaderValue::from_str(value) {
        answer.headers_mut().insert(CACHE_CONTROL, value);
    }
    answer
}

/// A JSON document already serialised (as stored), with its cache lifetime.
fn document(json: String, cache_control: &str) -> Response<Body> {
    let answer = Response::builder()
        .status(StatusCode::OK)
        .header(CONTENT_TYPE, "application/json")
        .body(Body::Text(json))
        .expect("a status and fixed header names always make a valid response");
    with_cache_control(answer, cache_control)
}

async fn route(api: &PublicApi, request: &Request) -> Result<Response<Body>, LineupError> {
    if request.method() != Method::GET {
        return Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        });
    }
    request::body_within(request, request::NO_INPUT_BODY_LIMIT)?;
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    let path = request.uri().path();
    if path.ends_with("/status") {
        let status = api
            .board
            .status_json(&event)
            .await?
            .ok_or(LineupError::EventNotFound)?;
        return Ok(document(status, &EventStatus::cache_control()));
    }
    match request::path_parameter(request, "prefix") {
        Err(_) => {
            let summary = api
                .draw
                .draw_summary(&event)
                .await?
                .ok_or(LineupError::DrawNotPublished)?;
            Ok(document(to_json(&summary), IMMUTABLE))
        }
        Ok(prefix) => {
            // Only the chunk names the summary announces; anything else is not a chunk.
            let summary = api
                .draw
                .draw_summary(&event)
                .await?
                .ok_or(LineupError::DrawNotPublished)?;
            let well_formed = prefix.len() == summary.prefix_length
                && prefix
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            if !well_formed {
                return Err(LineupError::invalid(
                    "invalid_prefix",
                    format!(
                        "a chunk is named by {} lowercase hex digits",
                        summary.prefix_length
                    ),
                ));
            }
            let chunk = api
                .draw
                .draw_chunk(&event, prefix)
                .await?
                .ok_or(LineupError::DrawNotPublished)?;
            Ok(document(to_json(&chunk), IMMUTABLE))
        }
    }
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("published documents are plain data and always serialise")
}
