//! Reading what a request carries, each piece validated into a typed value or a 4xx error.

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};

use crate::application::error::LineupError;
use crate::domain::ids::CustomerId;

/// The calling customer: the `sub` claim verified by the API Gateway JWT authorizer.
/// Never read from the body, so nobody can act as someone else.
pub fn caller(request: &Request) -> Result<CustomerId, LineupError> {
    Ok(CustomerId::parse(
        claim(request, "sub").ok_or(LineupError::Unauthenticated)?,
    )?)
}

/// A claim of the caller's verified JWT, as the API Gateway JWT authorizer passes it (claims
/// arrive as strings: a boolean claim is `"true"` or `"false"`).
pub fn claim<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context
            .authorizer
            .as_ref()
            .and_then(|authorizer| authorizer.jwt.as_ref())
            .and_then(|jwt| jwt.claims.get(name))
            .map(String::as_str),
        _ => None,
    }
}

/// A path parameter as API Gateway extracted it from the route (`/events/{eventId}/...`).
pub fn path_parameter<'r>(
    request: &'r Request,
    name: &'static str,
) -> Result<&'r str, LineupError> {
    request
        .path_parameters_ref()
        .and_then(|parameters| parameters.first(name))
        .ok_or_else(|| {
            LineupError::invalid("missing_path_parameter", format!("the path has no {name}"))
        })
}

/// A header's value, if present and readable as text.
pub fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
}

/// The body's bytes (API Gateway may send it base64-encoded; lambda_http has decoded it).
pub fn body_bytes(request: &Request) -> &[u8] {
    match request.body() {
        Body::Empty => &[],
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    }
}

/// The body's bytes, or 413 `body_too_large` when there are more than `limit`. Every handler
/// reads its body through this first: API Gateway passes bodies of up to 10 MB, and nothing a
/// route needs is anywhere near that, so a huge body is refused before it is parsed or hashed.
pub fn body_within(request: &Request, limit: usize) -> Result<&[u8], LineupError> {
    let body = body_bytes(request);
    if body.len() > limit {
        return Err(LineupError::BodyTooLarge { limit });
    }
    Ok(body)
}

/// The most a route that takes no input accepts (an empty JSON object, or a client's habit of
/// sending a few fields): anything longer is not a mistake.
pub const NO_INPUT_BODY_LIMIT: usize = 1024;

/// For routes that take no input: an empty body, or a JSON object (whose fields are ignored).
/// Anything else is refused, so a client with a broken serialiser finds out at once.
pub fn expect_no_body_or_json_object(request: &Request) -> Result<(), LineupError> {
    let body = body_within(request, NO_INPUT_BODY_LIMIT)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err(LineupError::invalid(
            "invalid_body",
            "the body must be a JSON object",
        )),
        Err(_) => Err(LineupError::invalid(
            "invalid_json",
            "the body is not valid JSON",
        )),
    }
}
