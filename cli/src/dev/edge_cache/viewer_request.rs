//! CloudFront's viewer-request function (`edge/viewer-request.js`), done locally: the same rules,
//! in Rust, applied before the cache stand-in and the functions, so a flood of made-up URLs at
//! `lineup dev` reaches no handler, as it reaches no origin in AWS. There is no JavaScript engine
//! among the CLI's dependencies, so the rules are written twice and both are checked against one
//! table of cases (`edge/cases.json`): here by the unit tests below, the JavaScript by
//! `edge/viewer-request.test.mjs` (node), and the JavaScript inlined in `template.yaml` against the
//! file.
//!
//! Refused: a path that is not canonical (an empty segment: a doubled or trailing slash; a fixed
//! word in another case or percent-encoded), a path or method no route has (404
//! `route_not_found`), a malformed `eventId` ([`EventId::parse`]; percent-encoded forms
//! included, so one event has one cache key), draw `prefix` (1-6 lowercase hex digits) or layout
//! `version` (16): the origin's own 400 and code. Then, for a well-formed request, an `eventId`
//! the store of live events does not hold ([`KnowsLiveEvents`]: CloudFront's KeyValueStore in
//! AWS, [`super::live_events::LiveEventSet`] here): the origin's 404 `event_not_found`. A lookup
//! that fails lets the request through, as the function does. The public routes' refusals carry
//! the origin's `Cache-Control` for a miss (5 s); the customer routes' none, as the origin's.

use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use lineup::domain::ids::EventId;
use serde_json::json;

use crate::dev::routes::{routes, Route};

/// The `Cache-Control` of a refused request to a public route, or to no route: the origin's for
/// a public route's error (`openapi.yaml`'s `CacheControlMiss`).
pub const MISS: &str = "public, max-age=5";

/// What the function does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// On to the cache and the origin, unchanged.
    Pass,
    /// Answered at the edge; nothing reaches the origin.
    Refuse(Refusal),
}

/// An answer made at the edge: the origin's error body, status and code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: &'static str,
    /// `None` for a customer route, as the origin's errors there.
    pub cache_control: Option<&'static str>,
}

const NOT_A_ROUTE: Refusal = Refusal {
    status: StatusCode::NOT_FOUND,
    code: "route_not_found",
    message: "no route matches this method and path",
    cache_control: Some(MISS),
};

/// The origin's code for an event it does not have.
const UNKNOWN_EVENT_CODE: &str = "event_not_found";

/// What the store of live events answers for an event id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The store holds the id: on to the cache and the origin.
    Live,
    /// The store does not hold it: answered at the edge, 404 `event_not_found`.
    Unknown,
    /// The store did not answer (throttled, not yet propagated, not yet read): on to the origin,
    /// which knows every event.
    Failed,
}

/// The store of live events the function reads: CloudFront's KeyValueStore in AWS.
pub trait KnowsLiveEvents {
    /// Whether `event` (a well-formed id) is live.
    fn lookup(&self, event: &str) -> Lookup;
}

/// A store that never answers: every well-formed request goes on to the origin.
pub struct NoStore;

impl KnowsLiveEvents for NoStore {
    fn lookup(&self, _event: &str) -> Lookup {
        Lookup::Failed
    }
}

/// The function's decision for `method` and `path` (as received: not percent-decoded, no query),
/// the event ids looked up in `live_events`.
pub fn decide(method: &Method, path: &str, live_events: &dyn KnowsLiveEvents) -> Verdict {
    let Some(rest) = path.strip_prefix('/') else {
        return Verdict::Refuse(NOT_A_ROUTE);
    };
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.iter().any(|segment| segment.is_empty()) {
        // "//", a trailing "/", or "/" alone.
        return Verdict::Refuse(NOT_A_ROUTE);
    }
    let route = routes()
        .into_iter()
        .find(|route| route.method == *method && fits(route, &segments));
    match route {
        // No such path, or not with this method: API Gateway's 404 too.
        None => Verdict::Refuse(NOT_A_ROUTE),
        Some(route) => match check_parameters(&route, &segments) {
            Verdict::Pass => check_event_is_live(&route, &segments, live_events),
            refused => refused,
        },
    }
}

/// Whether the path's `segments` (after the leading `/`) fit the route's template: its fixed
/// words exactly, one non-empty segment for each `{parameter}`.
fn fits(route: &Route, segments: &[&str]) -> bool {
    let template: Vec<&str> = route.path.trim_start_matches('/').split('/').collect();
    template.len() == segments.len()
        && template
            .iter()
            .zip(segments)
            .all(|(fixed, given)| fixed.starts_with('{') || fixed == given)
}

/// The route's parameters in path order (the event id first, as the origin checks it).
fn check_parameters(route: &Route, segments: &[&str]) -> Verdict {
    let template = route.path.trim_start_matches('/').split('/');
    for (name, given) in template.zip(segments) {
        let refusal = match name {
            "{eventId}" if route.serves_lines() && given.contains('.') => {
                match EventId::parse_line(given) {
                    Ok(_) => continue,
                    Err(_)
                        if EventId::parse(given.split('.').next().unwrap_or_default()).is_ok() =>
                    {
                        (
                            "invalid_event_id",
                            "eventId must be an event id, or <event id>.<group> for a group's line",
                        )
                    }
                    Err(_) => (
                        "invalid_event_id",
                        "eventId must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'",
                    ),
                }
            }
            "{eventId}" if EventId::parse(given).is_err() => (
                "invalid_event_id",
                "eventId must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'",
            ),
            "{prefix}" if !lowercase_hex(given, 1..=6) => (
                "invalid_prefix",
                "a chunk is named by the draw's prefixLength (1-6) lowercase hex digits",
            ),
            "{version}" if !lowercase_hex(given, 16..=16) => (
                "invalid_layout_version",
                "a layout version is 16 lowercase hex digits",
            ),
            _ => continue,
        };
        return Verdict::Refuse(Refusal {
            status: StatusCode::BAD_REQUEST,
            code: refusal.0,
            message: refusal.1,
            cache_control: route.cached().then_some(MISS),
        });
    }
    Verdict::Pass
}

/// Refuses a (well-formed) `eventId` the store does not hold; passes one it holds, a route
/// without one, and any request whose lookup fails.
fn check_event_is_live(
    route: &Route,
    segments: &[&str],
    live_events: &dyn KnowsLiveEvents,
) -> Verdict {
    let template = route.path.trim_start_matches('/').split('/');
    let Some((_, event)) = template
        .zip(segments)
        .find(|(name, _)| *name == "{eventId}")
    else {
        return Verdict::Pass;
    };
    // A priority group's line is live with its event.
    match live_events.lookup(event.split('.').next().unwrap_or_default()) {
        Lookup::Live | Lookup::Failed => Verdict::Pass,
        Lookup::Unknown => Verdict::Refuse(Refusal {
            status: StatusCode::NOT_FOUND,
            code: UNKNOWN_EVENT_CODE,
            message: "no on-sale event with this id",
            cache_control: route.cached().then_some(MISS),
        }),
    }
}

/// `lineup dev`'s edge: [`decide`] over the stand-in's set of live events, except that an id
/// the set does not hold is decided again once the set holds a read that began after the
/// request `arrived` (a second or so): an event opened a moment ago by another process is let
/// through, not refused while the set catches up (see [`super::live_events`]). If no such read
/// comes within a few seconds (the events table slow under a crowd), the request passes, as a
/// KeyValueStore lookup that fails does: the origin answers an unknown event itself, and a live
/// one is never refused for want of a read.
pub async fn decide_at_dev_edge(
    method: &Method,
    path: &str,
    live_events: &super::live_events::LiveEventSet,
    arrived: std::time::Instant,
) -> Verdict {
    match decide(method, path, live_events) {
        Verdict::Refuse(refusal) if refusal.code == UNKNOWN_EVENT_CODE => {
            if live_events.read_since(arrived).await {
                decide(method, path, live_events)
            } else {
                Verdict::Pass
            }
        }
        verdict => verdict,
    }
}

fn lowercase_hex(text: &str, lengths: std::ops::RangeInclusive<usize>) -> bool {
    lengths.contains(&text.len()) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut answer = (
            self.status,
            axum::Json(json!({ "error": { "code": self.code, "message": self.message } })),
        )
            .into_response();
        if let Some(cache_control) = self.cache_control {
            answer.headers_mut().insert(
                http::header::CACHE_CONTROL,
                HeaderValue::from_static(cache_control),
            );
        }
        answer
    }
}

/// What the function answers a request no route of the local router took: always a refusal
/// (unless the tables disagree, which the tests below would show), never the origin.
pub async fn unrouted(method: Method, uri: axum::http::Uri) -> Response {
    match decide(&method, uri.path(), &NoStore) {
        Verdict::Refuse(refusal) => refusal,
        Verdict::Pass => NOT_A_ROUTE,
    }
    .into_response()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde::Deserialize;

    use super::*;

    const FUNCTION: &str = include_str!("../../../../edge/viewer-request.js");
    const CASES: &str = include_str!("../../../../edge/cases.json");

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cases {
        /// What the store of live events holds.
        live_events: Vec<String>,
        /// The ids whose lookup fails.
        lookup_fails: Vec<String>,
        cases: Vec<Case>,
    }

    /// The table's store: its `liveEvents`, failing for its `lookupFails`.
    struct TableStore {
        live_events: Vec<String>,
        lookup_fails: Vec<String>,
    }

    impl KnowsLiveEvents for TableStore {
        fn lookup(&self, event: &str) -> Lookup {
            if self.lookup_fails.iter().any(|failing| failing == event) {
                Lookup::Failed
            } else if self.live_events.iter().any(|live| live == event) {
                Lookup::Live
            } else {
                Lookup::Unknown
            }
        }
    }

    #[derive(Deserialize)]
    struct Case {
        request: String,
        outcome: Outcome,
        why: String,
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Outcome {
        Pass(String),
        Refused {
            status: u16,
            code: String,
            #[serde(rename = "cacheControl")]
            cache_control: Option<String>,
        },
    }

    fn table() -> Cases {
        serde_json::from_str::<Cases>(CASES).expect("edge/cases.json is a table of cases")
    }

    fn cases() -> Vec<Case> {
        table().cases
    }

    /// The same table the JavaScript is run against: every case decided as it says.
    #[test]
    fn every_case_of_the_shared_table_is_decided_as_the_function_decides_it() {
        let Cases {
            live_events,
            lookup_fails,
            cases,
        } = table();
        let store = TableStore {
            live_events,
            lookup_fails,
        };
        assert!(cases.len() >= 50, "{} cases", cases.len());
        for case in cases {
            let (method, path) = case
                .request
                .split_once(' ')
                .expect("a case is `METHOD path`");
            let method = Method::from_bytes(method.as_bytes()).expect("a method");
            let verdict = decide(&method, path, &store);
            let context = format!("{} ({})", case.request, case.why);
            match case.outcome {
                Outcome::Pass(pass) => {
                    assert_eq!(pass, "pass", "{context}: an outcome is `pass` or a refusal");
                    assert_eq!(verdict, Verdict::Pass, "{context}");
                }
                Outcome::Refused {
                    status,
                    code,
                    cache_control,
                } => {
                    let Verdict::Refuse(refusal) = verdict else {
                        panic!("{context}: let through, the table refuses it {status} {code}");
                    };
                    assert_eq!(refusal.status.as_u16(), status, "{context}");
                    assert_eq!(refusal.code, code, "{context}");
                    assert_eq!(
                        refusal.cache_control.map(str::to_owned),
                        cache_control,
                        "{context}"
                    );
                }
            }
        }
    }

    /// Every route of the API (the dev server's, which a test checks against the template's)
    /// is in the function's own table, with whether CloudFront caches it.
    #[test]
    fn the_function_knows_exactly_the_apis_routes() {
        let known: BTreeSet<String> = FUNCTION
            .lines()
            .filter_map(|line| line.trim().strip_prefix("{ key: '"))
            .map(|entry| {
                let (key, cached) = entry.split_once("', cached: ").expect("{ key, cached }");
                format!("{key} cached={}", cached.trim_end_matches(" },"))
            })
            .collect();
        let api: BTreeSet<String> = routes()
            .iter()
            .map(|route| format!("{} cached={}", route.key(), route.cached()))
            .collect();
        assert_eq!(known, api);
        // Every route passes when well formed, so the table's "pass" cases cover them all.
        let passing: BTreeSet<String> = cases()
            .into_iter()
            .filter(|case| matches!(&case.outcome, Outcome::Pass(_)))
            .filter_map(|case| {
                let (method, path) = case.request.split_once(' ')?;
                let method = Method::from_bytes(method.as_bytes()).ok()?;
                let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
                routes()
                    .into_iter()
                    .find(|route| route.method == method && fits(route, &segments))
                    .map(|route| route.key())
            })
            .collect();
        assert_eq!(passing.len(), routes().len(), "a passing case per route");
    }

    /// `template.yaml` cannot read a file: it carries the function inline, and that copy is the
    /// file, byte for byte.
    #[test]
    fn the_template_inlines_exactly_this_function() {
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .expect("template.yaml is beside the workspace");
        let template: serde_yaml::Value =
            serde_yaml::from_str(&template).expect("template.yaml is YAML");
        let function = &template["Resources"]["EdgeRequestFunction"]["Properties"];
        assert_eq!(
            function["FunctionConfig"]["Runtime"].as_str(),
            Some("cloudfront-js-2.0")
        );
        let inline = function["FunctionCode"]
            .as_str()
            .expect("EdgeRequestFunction's FunctionCode is a string");
        assert!(
            inline == FUNCTION,
            "template.yaml's EdgeRequestFunction FunctionCode differs from edge/viewer-request.js: \
             paste the file in again (indented under `FunctionCode: |`)"
        );
        // CloudFront Functions take at most 10 KB of code.
        assert!(FUNCTION.len() < 10 * 1024, "{} bytes", FUNCTION.len());
    }

    #[tokio::test]
    async fn a_refusal_is_the_origins_error_answer() {
        let answer = Refusal {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_prefix",
            message: "m",
            cache_control: Some(MISS),
        }
        .into_response();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
        assert_eq!(answer.headers()[http::header::CACHE_CONTROL], MISS);
        assert_eq!(
            answer.headers()[http::header::CONTENT_TYPE],
            "application/json"
        );
        let body = axum::body::to_bytes(answer.into_body(), 1024)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "invalid_prefix");
        let unrouted = unrouted(Method::GET, "/events/demo/status/".parse().unwrap()).await;
        assert_eq!(unrouted.status(), StatusCode::NOT_FOUND);
        assert_eq!(unrouted.headers()[http::header::CACHE_CONTROL], MISS);
    }
}
