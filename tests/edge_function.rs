//! CloudFront's viewer-request function and `lineup dev`'s stand-in for it: the JavaScript itself
//! decides every case of `edge/cases.json` as the table says (run in node, the table the Rust
//! stand-in's unit tests read too); a flood of made-up URLs at the dev server's edge (the
//! router `lineup dev` serves the API with, in front of the real public handler over Redis and
//! the local events table), malformed ones and well-formed ids of no event alike, reaches no
//! function, while a real status and chunk read still answer, and a second read of the chunk
//! comes from the cache; and an operator's change puts the event into the store of live events
//! before it is live (nothing changes when the store cannot be written), where `lineup dev`'s
//! stand-in finds it too.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lambda_http::Body;
use lineup::adapters::redis::keys::EventKeys;
use lineup::application::ports::event_records::DrawPublication;
use lineup::application::ports::event_records::{AuditLog, EventRecords};
use lineup::application::ports::queue::EventSettingsStore;
use lineup::application::status::{self, StatusApi};
use lineup::domain::draw::{self, DrawSeed};
use lineup::domain::event_settings::QueueState;
use lineup::domain::ids::EventId;
use lineup::domain::status::StatusInputs;
use lineup_cli::dev::api_gateway::{self, Origin};
use lineup_cli::dev::edge_cache::live_events::{self, LiveEventSet};
use lineup_cli::dev::edge_cache::viewer_request;
use lineup_cli::dev::edge_cache::EdgeCache;
use lineup_cli::dev::routes::Function;
use lineup_cli::event_admin::{AdminError, EventAdmin, SettingsChange};
use lineup_cli::live_events::{LiveEvents, LiveEventsError};
use serde_json::Value;

const ENTRANTS: usize = 300;

/// The repository's root (the tests crate is one level down).
fn repository() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_owned()
}

#[test]
fn the_cloudfront_function_decides_every_case_of_the_shared_table_in_node() {
    let ran = std::process::Command::new("node")
        .args(["--test", "edge/"])
        .current_dir(repository())
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run node (the browser test's runtime, needed here too): {error}")
        });
    let report = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success(),
        "node --test edge/ failed:\n{report}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    // Every case ran (and the table's own check): not a run that found no test.
    let cases = std::fs::read_to_string(repository().join("edge/cases.json")).unwrap();
    let cases = serde_json::from_str::<Value>(&cases).unwrap()["cases"]
        .as_array()
        .map(Vec::len)
        .unwrap();
    assert!(
        report.contains(&format!("# pass {}", cases + 1)),
        "node ran other than the {cases} cases:\n{report}"
    );
}

/// The public function only, over the shared Redis and events table, with every invocation
/// written down: what reached the origin.
struct PublicOrigin {
    status: StatusApi,
    edge: EdgeCache,
    invoked: Mutex<Vec<String>>,
}

impl Origin for PublicOrigin {
    async fn invoke(
        &self,
        function: Function,
        request: lambda_http::Request,
    ) -> lambda_http::Response<Body> {
        // Only once the future runs: the cache drops the origin's future unpolled on a hit.
        self.invoked
            .lock()
            .unwrap()
            .push(format!("{function:?} {}", request.uri().path()));
        match function {
            Function::Status => status::handle(&self.status, request).await,
            // No customer route is asked in this test: a 500 would show in its assertions.
            _ => lambda_http::Response::builder()
                .status(500)
                .body(Body::Empty)
                .expect("a status and an empty body"),
        }
    }

    fn edge(&self) -> &EdgeCache {
        &self.edge
    }
}

impl PublicOrigin {
    fn invoked(&self) -> Vec<String> {
        self.invoked.lock().unwrap().clone()
    }
}

/// An event whose draw of 300 entrants is published and whose status shows it.
async fn published_event() -> (EventId, DrawSeed, draw::DrawSummary) {
    let event = lineup_tests::fresh_event();
    let seed = DrawSeed::generate();
    let now = SystemTime::now();
    let entrants = (0..ENTRANTS).map(|n| seed.entrant(&lineup_tests::customer(n)));
    let (summary, chunks) = draw::publish(&draw::numbers(&seed, entrants), &event, &seed, now);
    lineup_tests::records()
        .await
        .publish_draw(&event, &summary, &chunks)
        .await
        .expect("publish the draw");
    let status = StatusInputs {
        state: QueueState::Open,
        closed_reason: None,
        opens_at: now - Duration::from_secs(10),
        serving: 0,
        measured_advance: None,
        configured_rate: 50,
        last_number: ENTRANTS as u64,
        waiting: ENTRANTS as u64,
        claim_window: Duration::from_secs(60),
        seats_left: None,
        commitment: seed.commitment(),
        entrants: Some(ENTRANTS as u64),
        revealed_seed: Some(seed.reveal().to_owned()),
        restored_at: None,
        pre_queue: None,
        edge_budget: lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
        first_call_at: None,
        pace: None,
    }
    .status(event.as_str(), now);
    let () = redis::cmd("SET")
        .arg(EventKeys::new(&event).status)
        .arg(serde_json::to_string(&status).unwrap())
        .arg("EX")
        .arg(600)
        .query_async(&mut lineup_tests::redis().await)
        .await
        .expect("SET the status");
    (event, seed, summary)
}

/// The dev server's API router, with the edge's answer for the paths and methods no route takes,
/// on a free loopback port.
async fn serve(origin: Arc<PublicOrigin>) -> String {
    let app = api_gateway::router(origin)
        .expect("every route's method is routable")
        .fallback(viewer_request::unrouted)
        .method_not_allowed_fallback(viewer_request::unrouted);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a local port");
    let address = listener.local_addr().expect("a bound address");
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    format!("http://{address}")
}

/// Made-up URLs of every kind the edge can tell from real ones: malformed event ids, draw
/// prefixes and layout versions on every public route, well-formed ids of events the store of
/// live events does not hold, paths that are not canonical, routes and methods that do not
/// exist. `real` is the published event; each kind comes in `n` variants (a fresh random part
/// each), so no answer can come from a cache.
fn junk(real: &EventId, n: usize) -> Vec<(&'static str, String, u16, &'static str)> {
    let mut junk = Vec::new();
    for _ in 0..n {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let bad_event = format!("{}!", &random[..12]);
        let long_event = format!("e{random}{random}");
        let unknown_event = format!("made-up-{}", &random[..12]);
        for (method, path, status, code) in [
            (
                "GET",
                format!("/events/{unknown_event}/status"),
                404,
                "event_not_found",
            ),
            (
                "GET",
                format!("/events/{unknown_event}/draw"),
                404,
                "event_not_found",
            ),
            (
                "GET",
                format!("/events/{unknown_event}/draw/{}", &random[..2]),
                404,
                "event_not_found",
            ),
            (
                "GET",
                format!("/events/{unknown_event}/seats"),
                404,
                "event_not_found",
            ),
            (
                "GET",
                format!("/events/{unknown_event}/layout"),
                404,
                "event_not_found",
            ),
            (
                "GET",
                format!("/events/{unknown_event}/layout/{}", &random[..16]),
                404,
                "event_not_found",
            ),
            (
                "GET",
                format!("/events/{bad_event}/status"),
                400,
                "invalid_event_id",
            ),
            (
                "GET",
                format!("/events/{long_event}/status"),
                400,
                "invalid_event_id",
            ),
            (
                "GET",
                format!("/events/%64{random}/draw"),
                400,
                "invalid_event_id",
            ),
            (
                "GET",
                format!("/events/{bad_event}/draw/3f"),
                400,
                "invalid_event_id",
            ),
            (
                "GET",
                format!("/events/{bad_event}/seats"),
                400,
                "invalid_event_id",
            ),
            (
                "GET",
                format!("/events/{bad_event}/layout"),
                400,
                "invalid_event_id",
            ),
            (
                "GET",
                format!("/events/{real}/draw/{}", &random[..7]),
                400,
                "invalid_prefix",
            ),
            (
                "GET",
                format!("/events/{real}/draw/{}", random[..2].to_uppercase() + "G"),
                400,
                "invalid_prefix",
            ),
            (
                "GET",
                format!("/events/{real}/draw/%3{}", &random[..1]),
                400,
                "invalid_prefix",
            ),
            (
                "GET",
                format!("/events/{real}/layout/{}", &random[..15]),
                400,
                "invalid_layout_version",
            ),
            (
                "GET",
                format!("/events/{real}/layout/{random}"),
                400,
                "invalid_layout_version",
            ),
            (
                "GET",
                format!("/events/{real}/status/{}", &random[..4]),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("/events/{random}/status/"),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("/events/{real}/draw/{}/", &random[..2]),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("//events/{random}/status"),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("/events//{random}/draw"),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("/Events/{random}/status"),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("/events/{random}/STATUS"),
                404,
                "route_not_found",
            ),
            (
                "GET",
                format!("/events/{random}/layouts"),
                404,
                "route_not_found",
            ),
            ("GET", format!("/{random}"), 404, "route_not_found"),
            (
                "POST",
                format!("/events/{random}/status"),
                404,
                "route_not_found",
            ),
            (
                "DELETE",
                format!("/events/{random}/draw/3f"),
                404,
                "route_not_found",
            ),
        ] {
            junk.push((method, path, status, code));
        }
    }
    junk
}

#[tokio::test]
async fn a_flood_of_made_up_urls_reaches_no_function_and_real_reads_still_answer() {
    let (event, seed, summary) = published_event().await;
    // The edge knows the published event is live, as the store of live events holds it.
    let origin = Arc::new(PublicOrigin {
        status: lineup_tests::public_api(lineup_tests::records().await),
        edge: EdgeCache::knowing(Arc::new(LiveEventSet::holding([event.as_str()]))),
        invoked: Mutex::new(Vec::new()),
    });
    let base = serve(origin.clone()).await;
    let http = lineup_cli::http_client().build().expect("an HTTP client");

    // The flood: 20 variants of 28 kinds, all at once.
    let flood = junk(&event, 20);
    assert_eq!(flood.len(), 560);
    let answers: Vec<(String, u16, Option<String>, Value)> =
        futures::future::join_all(flood.iter().map(|(method, path, _, _)| {
            let request = http.request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{base}{path}"),
            );
            async move {
                let answer = request.send().await.expect("the dev edge answers");
                let status = answer.status().as_u16();
                let cache = answer
                    .headers()
                    .get(http::header::CACHE_CONTROL)
                    .map(|value| value.to_str().unwrap().to_owned());
                let body = answer.json::<Value>().await.unwrap_or(Value::Null);
                (format!("{method} {path}"), status, cache, body)
            }
        }))
        .await;
    for ((_, _, status, code), (request, answered, cache, body)) in flood.iter().zip(&answers) {
        assert_eq!(answered, status, "{request}: {body}");
        assert_eq!(body["error"]["code"], *code, "{request}");
        assert_eq!(
            cache.as_deref(),
            Some(viewer_request::MISS),
            "{request}: the public routes' miss, cacheable"
        );
    }
    assert_eq!(
        origin.invoked(),
        Vec::<String>::new(),
        "no made-up URL reached a function"
    );
    let traffic = origin.edge.traffic();
    assert!(
        traffic.values().all(|route| route.origin == 0),
        "{traffic:?}"
    );
    assert_eq!(
        traffic["GET /events/{eventId}/draw/{prefix}"].edge,
        20 * 5,
        "the chunk route's refusals are counted as answered at the edge: {traffic:?}"
    );
    for route in [
        "GET /events/{eventId}/status",
        "GET /events/{eventId}/draw",
        "GET /events/{eventId}/layout",
    ] {
        assert!(
            traffic[route].edge >= 20,
            "{route}: the unknown events' reads are answered at the edge: {traffic:?}"
        );
    }
    let refused_on_routes: u64 = traffic.values().map(|route| route.edge).sum();
    let unknown_events = answers
        .iter()
        .filter(|(_, _, _, body)| body["error"]["code"] == "event_not_found")
        .count();
    assert_eq!(
        unknown_events,
        20 * 6,
        "every unknown event's read, refused"
    );
    eprintln!(
        "edge flood: {} made-up URLs ({unknown_events} of well-formed ids of no event), all \
         answered at the edge ({refused_on_routes} on a route's counters, the rest matching no \
         route); {} reached a function",
        flood.len(),
        origin.invoked().len()
    );

    // Real reads still answer: the status, and the chunk that lists customer 7 with its number.
    let status: Value = http
        .get(format!("{base}/events/{event}/status"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["draw"]["published"], true);
    assert_eq!(status["draw"]["prefixLength"], summary.prefix_length);
    let entrant = seed.entrant(&lineup_tests::customer(7));
    let prefix = &entrant[..summary.prefix_length];
    let chunk_url = format!("{base}/events/{event}/draw/{prefix}");
    for _ in 0..3 {
        let answer = http.get(&chunk_url).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let chunk: Value = answer.json().await.unwrap();
        let listed = chunk["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry[0] == entrant.as_str())
            .unwrap_or_else(|| panic!("customer 7's chunk lists them: {chunk}"));
        assert!(listed[1]
            .as_u64()
            .is_some_and(|n| (1..=ENTRANTS as u64).contains(&n)));
    }
    // The origin saw exactly the two real paths, the chunk once: the other two came from the
    // cache, as CloudFront answers them.
    assert_eq!(
        origin.invoked(),
        [
            format!("Status /events/{event}/status"),
            format!("Status /events/{event}/draw/{prefix}")
        ]
    );

    // A well-formed id of no event, asked again and again: refused at the edge every time,
    // never once at the origin (docs/decisions/0022-the-edge-refuses-junk.md).
    let unknown = lineup_tests::fresh_event();
    for _ in 0..3 {
        let answer = http
            .get(format!("{base}/events/{unknown}/status"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 404);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "event_not_found");
    }
    assert_eq!(origin.invoked().len(), 2, "{:?}", origin.invoked());
}

/// A store of live events in memory, that can be made unwritable.
#[derive(Default)]
struct FakeLiveEvents {
    events: Mutex<std::collections::BTreeSet<String>>,
    unwritable: bool,
}

/// Why the unwritable store fails.
#[derive(Debug)]
struct Throttled;

impl std::fmt::Display for Throttled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the store is throttling every write")
    }
}

impl std::error::Error for Throttled {}

#[async_trait::async_trait]
impl LiveEvents for FakeLiveEvents {
    async fn add(&self, event: &EventId) -> Result<(), LiveEventsError> {
        if self.unwritable {
            return Err(LiveEventsError {
                store: "fake".to_owned(),
                action: "add",
                event: event.as_str().to_owned(),
                source: Box::new(Throttled),
            });
        }
        self.events
            .lock()
            .unwrap()
            .insert(event.as_str().to_owned());
        Ok(())
    }

    async fn exists(&self, event: &EventId) -> Result<bool, LiveEventsError> {
        Ok(self.events.lock().unwrap().contains(event.as_str()))
    }
}

#[tokio::test]
async fn an_opened_event_is_known_at_the_edge_and_an_unwritable_store_changes_nothing() {
    let queue = lineup_tests::queue();
    let records = lineup_tests::records().await;
    let store = FakeLiveEvents::default();
    let admin = EventAdmin::new(&queue, &records, "edge test").with_live_events(Some(&store));
    let event = lineup_tests::fresh_event();
    admin
        .open(&event, &SettingsChange::default(), SystemTime::now())
        .await
        .expect("open the event");
    assert!(
        store.exists(&event).await.unwrap(),
        "the store holds the opened event"
    );

    // lineup dev's stand-in, which no command writes, finds the same event in the events table.
    let configured =
        live_events::configured_events(&lineup_tests::aws::dynamo().await, records.table())
            .await
            .expect("scan the events table");
    assert!(
        configured.contains(event.as_str()),
        "{event} read from the table"
    );
    assert!(!configured.contains(lineup_tests::fresh_event().as_str()));

    // The store cannot be written: the command fails loudly, and the event is not live anywhere.
    let unwritable = FakeLiveEvents {
        unwritable: true,
        ..FakeLiveEvents::default()
    };
    let admin = EventAdmin::new(&queue, &records, "edge test").with_live_events(Some(&unwritable));
    let refused = lineup_tests::fresh_event();
    let failed = admin
        .open(&refused, &SettingsChange::default(), SystemTime::now())
        .await;
    assert!(
        matches!(failed, Err(AdminError::LiveEvents(_))),
        "{failed:?}"
    );
    assert!(
        records.event(&refused).await.unwrap().is_none(),
        "no record"
    );
    assert!(
        queue.settings(&refused).await.unwrap().is_none(),
        "no settings in the cache"
    );
    assert!(
        records.history(&refused).await.unwrap().is_empty(),
        "no audit entry"
    );
}
