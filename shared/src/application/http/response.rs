//! Building responses: JSON bodies in camelCase, and the one error body
//! `{"error": {"code": ..., "message": ...}}` with `Retry-After` on retryable failures.

use std::time::Duration;

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::StatusCode;
use lambda_http::{Body, Response};
use serde::Serialize;

use crate::application::error::LineupError;

/// A JSON response, with `Retry-After` when the caller should come back later.
pub fn json(
    status: StatusCode,
    body: &impl Serialize,
    retry_after: Option<Duration>,
) -> Response<Body> {
    let mut builder = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json");
    if let Some(wait) = retry_after {
        builder = builder.header(RETRY_AFTER, wait.as_secs().max(1));
    }
    let text =
        serde_json::to_string(body).expect("response bodies are plain data and always serialise");
    builder
        .body(Body::Text(text))
        .expect("a status and fixed header names always make a valid response")
}

/// 204 No Content.
pub fn no_content() -> Response<Body> {
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(Body::Empty)
        .expect("a bare status always makes a valid response")
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorDetail<'a> {
    code: &'a str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    seat_ids: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    order_id: Option<&'a str>,
    /// `challenge_required` / `challenge_invalid`: the challenge to solve.
    #[serde(skip_serializing_if = "Option::is_none")]
    challenge: Option<&'a str>,
    /// The leading zero bits the solution's hash needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    difficulty: Option<u32>,
    /// When the challenge stops being accepted, RFC 3339 in UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
}

/// The response for an error, logged here once: server-side failures with their source chain,
/// client mistakes at a quieter level. The client never sees internal details.
pub fn error(error: &LineupError) -> Response<Body> {
    let status = error.status();
    if matches!(
        error,
        LineupError::CacheRecovering
            | LineupError::AvailabilityRebuilding
            | LineupError::NumbersExhausted { .. }
    ) {
        // Expected for a few seconds after a cache loss (the alarm is EventMissingInCache).
        tracing::warn!(code = error.code(), error = %error, "request deferred");
    } else if status.is_server_error() {
        tracing::error!(code = error.code(), error = %error, source = ?std::error::Error::source(error), "request failed");
    } else {
        tracing::info!(code = error.code(), error = %error, "request refused");
    }
    let body = ErrorBody {
        error: ErrorDetail {
            code: error.code(),
            message: error.public_message(),
            seat_ids: error.seat_ids(),
            order_id: error.order_id(),
            challenge: error.challenge().map(|issued| issued.challenge.as_str()),
            difficulty: error.challenge().map(|issued| issued.difficulty.bits()),
            expires_at: error
                .challenge()
                .map(|issued| crate::domain::clock::rfc3339(issued.expires_at)),
        },
    };
    let retry_after = error
        .retry_after_seconds()
        .map(|secs| Duration::from_secs(secs.into()));
    json(status, &body, retry_after)
}

/// Turns a handler's result into the response API Gateway returns.
pub fn from_result(result: Result<Response<Body>, LineupError>) -> Response<Body> {
    result.unwrap_or_else(|failure| error(&failure))
}
