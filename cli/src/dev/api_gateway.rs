//! What API Gateway does in front of the functions, done locally: match the route, take the
//! caller from the bearer JWT (unverified, see [`super::unverified_jwt`]), build the HTTP API
//! (payload v2) event a function receives, and turn the function's answer into the HTTP reply.
//! The event goes through `lambda_http`'s own parser, so handlers see exactly what they would
//! see in Lambda. In front of it all, CloudFront's part ([`EdgeCache`]): its viewer-request
//! function's refusals first (the route not yet asked), then the cache of the public routes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body as AxumBody, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, Request as AxumRequest, StatusCode};
use axum::response::{IntoResponse, Response as AxumResponse};
use axum::routing::{on, MethodFilter};
use axum::Router;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use lambda_http::Body;
use lineup::application::checkout::CheckoutApi;
use lineup::application::confirm::ConfirmApi;
use lineup::application::hold::HoldApi;
use lineup::application::queue_api::QueueApi;
use lineup::application::status::StatusApi;

use super::edge_cache::viewer_request::{self, Verdict};
use super::edge_cache::EdgeCache;
use serde_json::{json, Value};

use super::routes::{routes, Function, Route};
use super::unverified_jwt;

/// Bigger bodies are refused (API Gateway's own limit is 10 MB; no Lineup request is near 64 KB).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The functions, built as their `main`s build them.
#[derive(Clone)]
pub struct Functions {
    pub queue: QueueApi,
    pub hold: HoldApi,
    pub checkout: CheckoutApi,
    pub confirm: ConfirmApi,
    pub status: StatusApi,
    /// CloudFront's part: the public routes' cache, and the origin's traffic per route.
    pub edge: Arc<EdgeCache>,
}

/// What stands behind the local API Gateway: the functions, and CloudFront's part in front of
/// them. [`Functions`] in `lineup dev`; a test may stand up only the functions it needs.
pub trait Origin: Send + Sync + 'static {
    /// Runs `function` on the event API Gateway built.
    fn invoke(
        &self,
        function: Function,
        request: lambda_http::Request,
    ) -> impl std::future::Future<Output = lambda_http::Response<Body>> + Send;

    /// CloudFront's part: the public routes' cache, and every route's traffic.
    fn edge(&self) -> &EdgeCache;
}

impl Origin for Functions {
    async fn invoke(
        &self,
        function: Function,
        request: lambda_http::Request,
    ) -> lambda_http::Response<Body> {
        use lineup::application::{checkout, confirm, hold, join, poll, status};
        match function {
            Function::Join => join::handle(&self.queue, request).await,
            Function::Poll => poll::handle(&self.queue, request).await,
            Function::Hold => hold::handle(&self.hold, request).await,
            Function::Checkout => checkout::handle(&self.checkout, request).await,
            Function::Confirm => confirm::handle(&self.confirm, request).await,
            Function::Status => status::handle(&self.status, request).await,
        }
    }

    fn edge(&self) -> &EdgeCache {
        &self.edge
    }
}

/// A route whose method axum's router cannot take.
#[derive(Debug, thiserror::Error)]
#[error("route {0} has a method the router cannot take")]
pub struct UnroutableMethod(pub String);

/// Every route of `template.yaml` ([`routes`]) served through `origin`, behind CloudFront's
/// stand-in. No fallback: a path no route takes is the caller's to answer (for the edge's own
/// answer, [`viewer_request::unrouted`]).
pub fn router<O: Origin>(origin: Arc<O>) -> Result<Router, UnroutableMethod> {
    let mut api = Router::new();
    for route in routes() {
        let filter = MethodFilter::try_from(route.method.clone())
            .map_err(|_| UnroutableMethod(route.key()))?;
        let path = route.path;
        let route = Arc::new(route);
        api = api.route(
            path,
            on(
                filter,
                move |State(origin): State<Arc<O>>,
                      ConnectInfo(peer): ConnectInfo<SocketAddr>,
                      parameters: Result<Path<HashMap<String, String>>, PathRejection>,
                      request: AxumRequest<AxumBody>| {
                    serve_through(route.clone(), origin, peer, parameters, request)
                },
            ),
        );
    }
    Ok(api.with_state(origin))
}

/// One route's handler for the axum router.
pub async fn serve(
    route: Arc<Route>,
    State(functions): State<Arc<Functions>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    parameters: Result<Path<HashMap<String, String>>, PathRejection>,
    request: AxumRequest<AxumBody>,
) -> AxumResponse {
    serve_through(route, functions, peer, parameters, request).await
}

/// One request of `route`: CloudFront's viewer-request function, then API Gateway (the path's
/// parameters, the body's size, the JWT authorizer, the event), then the cache or the function.
async fn serve_through<O: Origin>(
    route: Arc<Route>,
    origin: Arc<O>,
    peer: SocketAddr,
    parameters: Result<Path<HashMap<String, String>>, PathRejection>,
    request: AxumRequest<AxumBody>,
) -> AxumResponse {
    let started = Instant::now();
    let live_events = origin.edge().live_events();
    if let Verdict::Refuse(refusal) = viewer_request::decide_at_dev_edge(
        request.method(),
        request.uri().path(),
        live_events,
        started,
    )
    .await
    {
        origin.edge().refused(&route.key());
        tracing::debug!(route = %route.key(), status = refusal.status.as_u16(), code = refusal.code, "refused at the edge");
        return refusal.into_response();
    }
    let Ok(Path(parameters)) = parameters else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_path",
            "a path parameter is not valid UTF-8 once percent-decoded",
        );
    };
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "the request body is larger than 64 KB",
            )
        }
    };
    let Ok(claims) = authorizer_claims(&route, &parts.headers) else {
        // The JWT authorizer refuses before any function runs, with its own body.
        return unauthorized();
    };
    let event = api_gateway_event(&route, &parts, &parameters, &body, peer, claims);
    let request = match lambda_http::request::from_str(&event.to_string()) {
        Ok(request) => request,
        Err(parse_error) => {
            tracing::error!(error = %parse_error, route = %route.key(), "could not build the API Gateway event");
            return error(
                StatusCode::BAD_REQUEST,
                "unreadable_request",
                "the request could not be passed on to the function",
            );
        }
    };
    let route_key = route.key();
    let edge = origin.edge();
    let function = origin.invoke(route.function, request);
    let answer = if route.cached() {
        edge.serve(&route_key, parts.uri.path(), function).await
    } else {
        edge.pass(&route_key, function).await
    };
    tracing::debug!(route = %route.key(), status = answer.status().as_u16(), ms = started.elapsed().as_millis() as u64, "request");
    into_http(answer)
}

/// The payload v2 event API Gateway would send for this request.
fn api_gateway_event(
    route: &Route,
    parts: &http::request::Parts,
    parameters: &HashMap<String, String>,
    body: &Bytes,
    peer: SocketAddr,
    claims: Option<serde_json::Map<String, Value>>,
) -> Value {
    let headers = joined_headers(&parts.headers);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut context = json!({
        "accountId": "000000000000",
        "apiId": "local",
        "domainName": headers.get("host").cloned().unwrap_or_else(|| "127.0.0.1".into()),
        "domainPrefix": "local",
        "http": {
            "method": parts.method.as_str(),
            "path": parts.uri.path(),
            "protocol": "HTTP/1.1",
            "sourceIp": peer.ip().to_string(),
            "userAgent": headers.get("user-agent").cloned().unwrap_or_default(),
        },
        "requestId": uuid::Uuid::new_v4().to_string(),
        "routeKey": route.key(),
        "stage": "$default",
        "time": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        "timeEpoch": now,
    });
    if let Some(claims) = claims {
        context["authorizer"] = json!({ "jwt": { "claims": claims, "scopes": null } });
    }
    let (body, is_base64) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (STANDARD.encode(body), true),
    };
    let mut event = json!({
        "version": "2.0",
        "routeKey": route.key(),
        "rawPath": parts.uri.path(),
        "rawQueryString": parts.uri.query().unwrap_or(""),
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": is_base64,
    });
    if !parameters.is_empty() {
        event["pathParameters"] = json!(parameters);
    }
    if !body.is_empty() {
        event["body"] = Value::String(body);
    }
    event
}

/// The claims the authorizer passes on: none for an open route (the webhook); for a guarded
/// one, the bearer token's (unverified) claims, or `Err` when there is no usable token.
fn authorizer_claims(
    route: &Route,
    headers: &HeaderMap,
) -> Result<Option<serde_json::Map<String, Value>>, NoToken> {
    if !route.authorized {
        return Ok(None);
    }
    let header = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    unverified_jwt::claims(header).map(Some).ok_or(NoToken)
}

/// A guarded route was called without a usable bearer JWT.
#[derive(Debug)]
struct NoToken;

/// What API Gateway's JWT authorizer answers a request without a valid token.
fn unauthorized() -> AxumResponse {
    (
        StatusCode::UNAUTHORIZED,
        [(http::header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(json!({ "message": "Unauthorized" })),
    )
        .into_response()
}

/// Headers as API Gateway passes them: lower-case names, repeated values joined with commas.
fn joined_headers(headers: &HeaderMap) -> HashMap<String, String> {
    let mut joined: HashMap<String, String> = HashMap::new();
    for (name, value) in headers {
        let Ok(value) = value.to_str() else { continue };
        joined
            .entry(name.as_str().to_owned())
            .and_modify(|existing| {
                existing.push(',');
                existing.push_str(value);
            })
            .or_insert_with(|| value.to_owned());
    }
    joined
}

fn into_http(answer: lambda_http::Response<Body>) -> AxumResponse {
    let (parts, body) = answer.into_parts();
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    AxumResponse::from_parts(parts, AxumBody::from(bytes))
}

/// The error body every Lineup answer uses, for what the local gateway itself refuses.
pub fn error(status: StatusCode, code: &str, message: &str) -> AxumResponse {
    (
        status,
        axum::Json(json!({ "error": { "code": code, "message": message } })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use lineup::application::http::request;

    use super::*;
    use crate::dev::routes::routes;

    fn event_for(
        route_key: &str,
        authorization: Option<&str>,
        body: &[u8],
    ) -> lambda_http::Request {
        let route = routes()
            .into_iter()
            .find(|route| route.key() == route_key)
            .unwrap();
        let mut builder = http::Request::builder()
            .method(route.method.clone())
            .uri("http://127.0.0.1:3000/events/demo/holds?x=1")
            .header("user-agent", "test")
            .header("accept", "application/json")
            .header("accept", "text/plain");
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        let (parts, ()) = builder.body(()).unwrap().into_parts();
        let parameters = HashMap::from([("eventId".to_owned(), "demo".to_owned())]);
        let event = api_gateway_event(
            &route,
            &parts,
            &parameters,
            &Bytes::copy_from_slice(body),
            "127.0.0.1:9".parse().unwrap(),
            authorizer_claims(&route, &parts.headers).unwrap_or(None),
        );
        lambda_http::request::from_str(&event.to_string()).unwrap()
    }

    #[test]
    fn handlers_read_the_caller_route_and_parameters_as_in_lambda() {
        let token = unverified_jwt::unsigned_token("alice");
        let request = event_for(
            "POST /events/{eventId}/holds",
            Some(&format!("Bearer {token}")),
            br#"{"seatIds":["FLO-A-01"]}"#,
        );
        assert_eq!(request::caller(&request).unwrap().as_str(), "alice");
        assert_eq!(
            request::path_parameter(&request, "eventId").unwrap(),
            "demo"
        );
        assert_eq!(
            request::body_bytes(&request),
            br#"{"seatIds":["FLO-A-01"]}"#
        );
        assert_eq!(
            request::header(&request, "accept"),
            Some("application/json,text/plain")
        );
        assert_eq!(request.method(), http::Method::POST);
    }

    #[test]
    fn a_guarded_route_without_a_token_is_refused_before_any_function_runs() {
        let guarded = routes().into_iter().find(|route| route.authorized).unwrap();
        assert!(authorizer_claims(&guarded, &HeaderMap::new()).is_err());
        let mut garbled = HeaderMap::new();
        garbled.insert(http::header::AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert!(authorizer_claims(&guarded, &garbled).is_err());
        assert_eq!(unauthorized().status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn no_token_means_no_caller_and_the_webhook_never_gets_one() {
        let request = event_for("POST /events/{eventId}/holds", None, b"");
        assert!(matches!(
            request::caller(&request),
            Err(lineup::application::error::LineupError::Unauthenticated)
        ));
        let token = unverified_jwt::unsigned_token("mallory");
        let webhook = event_for(
            "POST /orders/{orderId}/confirm",
            Some(&format!("Bearer {token}")),
            b"{}",
        );
        assert!(request::caller(&webhook).is_err());
    }

    #[test]
    fn binary_bodies_arrive_intact() {
        let request = event_for("POST /events/{eventId}/holds", None, &[0xff, 0x00, 0x10]);
        assert_eq!(request::body_bytes(&request), [0xff, 0x00, 0x10]);
    }
}
