//! What the end-to-end tests share: the Redis they run against, fresh events, requests built
//! from the sample events in `events/`, and reading responses.
//!
//! Tests need a real Redis at `REDIS_URL` (the README's test command starts one). Without it
//! they fail loudly; they never pass by skipping.

pub mod aws;
pub mod localstripe;
pub mod on_sale;
pub mod public_routes;
pub mod redis_server;
pub mod request_counter;
pub mod stream;
pub mod template;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lambda_http::{Body, Request, Response};
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::redis::keys::{EventKeys, OPEN_EVENTS};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::admit::AdmissionLoop;
use lineup::application::ports::queue::EventSettingsStore;
use lineup::application::ports::queue::TickReport;
use lineup::application::queue_api::QueueApi;
use lineup::application::restore::Restorer;
use lineup::domain::clock::{Clock, FixedClock};
use lineup::domain::draw::DrawSeed;
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::{CustomerId, EventId};
use lineup::domain::signing::{QueueTicket, SigningKey};
use lineup::wiring::backends::{Admit, Queue};
use lineup_cli::local_aws::tables;
use serde_json::Value;

/// The development signing key (`lineup dev`'s). Not a secret: it signs nothing outside local
/// runs and tests, and the sample events' queue ids (`events/poll.json`) are derived with it.
pub use lineup_cli::local_aws::secrets::DEV_SIGNING_KEY;

/// The customer and event the sample events in `events/` are written for.
pub const SAMPLE_EVENT: &str = lineup_cli::local_aws::SAMPLES_EVENT;
pub const SAMPLE_CUSTOMER: &str = "customer-0001";

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "REDIS_URL is not set: these tests need a real Redis. \
             Run the README's test command (scripts/test.sh), which starts one."
        )
    })
}

pub fn signing_key() -> SigningKey {
    SigningKey::new(DEV_SIGNING_KEY).expect("the development key is long enough")
}

pub fn queue() -> Arc<RedisQueue> {
    Arc::new(
        RedisQueue::new(&redis_url(), Duration::from_secs(2))
            .expect("REDIS_URL is a valid Redis URL"),
    )
}

/// A direct connection, for inspecting what the scripts stored.
pub async fn redis() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url())
        .expect("REDIS_URL is a valid Redis URL")
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|error| panic!("cannot reach Redis at {}: {error}", redis_url()))
}

/// A new event id, so tests running in parallel never share a queue.
pub fn fresh_event() -> EventId {
    EventId::parse(&format!("t-{}", uuid::Uuid::new_v4().simple())).expect("uuid ids are valid")
}

pub fn customer(n: usize) -> CustomerId {
    CustomerId::parse(&format!("customer-{n:05}")).expect("valid customer id")
}

/// Creates `event` in Redis only (no durable record), with these settings and a fresh seed,
/// and numbers allowed as if reserved ([`allow_numbers`]).
pub async fn configure(queue: &RedisQueue, event: &EventId, settings: EventSettings) {
    queue
        .configure(event, &settings, &DrawSeed::generate())
        .await
        .expect("configure the event");
    allow_numbers(queue, event).await;
}

/// Lets the cache hand out numbers up to ten million without reserving them in the events
/// table, for tests that drive the queue's Redis port alone (joins through `QueueApi` reserve
/// ranges for real; `tests/cache_loss.rs` checks that).
pub async fn allow_numbers(queue: &RedisQueue, event: &EventId) {
    use lineup::application::ports::queue::NumberRanges;
    assert!(
        queue
            .extend_numbers(event, 10_000_000, 0, SystemTime::now())
            .await
            .expect("allow numbers"),
        "the event is configured"
    );
}

/// The events table every test in this process shares (events have unique ids), created on
/// first use in the local emulator.
pub async fn records() -> Arc<DynamoEventRecords> {
    Arc::new(DynamoEventRecords::new(
        aws::dynamo().await,
        shared_events_table().await,
    ))
}

/// The shared events table through a client that counts its requests.
pub async fn counting_records() -> (Arc<DynamoEventRecords>, request_counter::RequestCounter) {
    let table = shared_events_table().await;
    let (dynamo, counter) = request_counter::counting_dynamodb();
    (Arc::new(DynamoEventRecords::new(dynamo, table)), counter)
}

async fn shared_events_table() -> String {
    static TABLE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    TABLE
        .get_or_init(|| async {
            let name = aws::unique("events");
            tables::create(&aws::dynamo().await, tables::EVENTS, &name)
                .await
                .expect("create the events table");
            name
        })
        .await
        .clone()
}

/// An events table of its own, for a test whose admitter lists every open event (a shared table
/// would make it tick other tests' events).
pub async fn private_records() -> Arc<DynamoEventRecords> {
    let name = aws::unique("events");
    tables::create(&aws::dynamo().await, tables::EVENTS, &name)
        .await
        .expect("create an events table");
    Arc::new(DynamoEventRecords::new(aws::dynamo().await, name))
}

/// The public routes over the shared Redis and `records`.
pub fn public_api(records: Arc<DynamoEventRecords>) -> lineup::application::status::StatusApi {
    Queue::new(queue(), records).status_api()
}

/// What restores events and customers after a cache loss, over `queue` and the shared table.
pub async fn restorer(queue: Arc<RedisQueue>) -> Arc<Restorer> {
    let records = records().await;
    Arc::new(Restorer::new(queue, records.clone(), records))
}

/// The admitter as the `admit` function runs it, over `queue` and the shared events table, for
/// one event at a time (tests run in parallel: ticking every open event would admit theirs).
pub struct Admission {
    admit: Admit,
    edge_budget: u64,
}

impl Admission {
    pub async fn new(queue: Arc<RedisQueue>) -> Self {
        Self {
            admit: Admit::new(Queue::new(queue, records().await), None),
            edge_budget: lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
        }
    }

    /// Draws pace the opening to `requests_per_second` at the edge (give the queue adapter the
    /// same, `RedisQueue::with_edge_budget`, for its statuses).
    pub fn with_edge_budget(mut self, requests_per_second: u64) -> Self {
        self.edge_budget = requests_per_second;
        self
    }

    /// One tick of `event` at `now`: admit, draw if due, publish the status, save the cursor.
    pub async fn tick(&self, event: &EventId, now: SystemTime) -> TickReport {
        self.try_tick(event, now).await.expect("admit tick")
    }

    /// A tick just after Redis was replaced: the first request on the old connection fails (as
    /// the scheduled admitter's would; its next tick goes on), so this tries up to 5 times.
    pub async fn tick_after_outage(&self, event: &EventId, now: SystemTime) -> TickReport {
        for _ in 0..4 {
            match self.try_tick(event, now).await {
                Ok(report) => return report,
                Err(error) => eprintln!("tick failed ({error}); the next one goes on"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.tick(event, now).await
    }

    pub async fn try_tick(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<TickReport, lineup::application::error::LineupError> {
        let clock = FixedClock::at(now);
        let mut admission =
            AdmissionLoop::new(self.admit.ports(None), &clock, Duration::from_secs(1));
        admission.edge_budget = self.edge_budget;
        admission.tick_event(event, now).await
    }
}

/// A ticket for `customer`, stating `number`, issued at `issued_at`.
pub fn ticket_at(
    event: &EventId,
    customer: &CustomerId,
    number: Option<u64>,
    issued_at: SystemTime,
) -> String {
    let keys: lineup::application::rotating::SigningKeys = signing_key().into();
    keys.queue_ticket(event, customer, QueueTicket { number, issued_at })
        .as_str()
        .to_owned()
}

/// A valid ticket for `customer`'s current place: their number as Redis holds it (none in the
/// pre-queue), issued now.
pub async fn queue_id(event: &EventId, customer: &CustomerId) -> String {
    let number: Option<f64> = redis::cmd("ZSCORE")
        .arg(EventKeys::new(event).queue)
        .arg(customer.as_str())
        .query_async(&mut redis().await)
        .await
        .expect("ZSCORE");
    ticket_at(event, customer, number.map(|n| n as u64), SystemTime::now())
}

/// An open event that opened a minute ago, with the default caps.
pub async fn open_event(queue: &RedisQueue, now: SystemTime) -> EventId {
    let event = fresh_event();
    configure(
        queue,
        &event,
        EventSettings::opening_at(now - Duration::from_secs(60)),
    )
    .await;
    event
}

pub async fn api(queue: Arc<RedisQueue>, clock: Arc<dyn Clock>) -> QueueApi {
    Queue::new(queue, records().await).queue_api(signing_key().into(), clock, None)
}

/// A sample event from `events/`, as JSON, to adjust before turning it into a request.
/// Each file is read once per process (benchmarks build a request per operation).
pub fn sample(name: &str) -> Value {
    static SAMPLES: Mutex<BTreeMap<String, Value>> = Mutex::new(BTreeMap::new());
    let mut samples = SAMPLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    samples
        .entry(name.to_owned())
        .or_insert_with(|| {
            let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../events")
                .join(name);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
        })
        .clone()
}

/// Turns an API Gateway event into the request lambda_http hands a handler.
pub fn request(event: &Value) -> Request {
    lambda_http::request::from_str(&event.to_string()).expect("a valid API Gateway v2 event")
}

/// Points a sample HTTP event at other path parameters and caller; the raw path is rebuilt from
/// the route key, as API Gateway would. `caller: None` removes the JWT claims.
pub fn route(sample: &Value, parameters: &[(&str, &str)], caller: Option<&CustomerId>) -> Value {
    let mut value = sample.clone();
    let route_key = value["routeKey"].as_str().expect("routeKey").to_owned();
    let mut path = route_key
        .split_once(' ')
        .expect("METHOD /path")
        .1
        .to_owned();
    for (name, replacement) in parameters {
        value["pathParameters"][*name] = (*replacement).into();
    }
    if let Some(parameters) = value["pathParameters"].as_object() {
        for (name, current) in parameters {
            path = path.replace(&format!("{{{name}}}"), current.as_str().unwrap_or_default());
        }
    }
    value["rawPath"] = path.clone().into();
    value["requestContext"]["http"]["path"] = path.into();
    match caller {
        Some(caller) => {
            value["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = caller.as_str().into()
        }
        None => {
            if let Some(context) = value["requestContext"].as_object_mut() {
                context.remove("authorizer");
            }
        }
    }
    value
}

/// Points a queue sample (`join.json`, `poll.json`, `leave.json`...) at another event, caller and
/// (for the queue-entry routes) queue id.
pub fn retarget(
    sample: &Value,
    event: &EventId,
    caller: Option<&CustomerId>,
    queue_id: Option<&str>,
) -> Value {
    let mut parameters = vec![("eventId", event.as_str())];
    if let Some(queue_id) = queue_id {
        parameters.push(("queueId", queue_id));
    }
    route(sample, &parameters, caller)
}

pub fn join_request(event: &EventId, caller: &CustomerId) -> Request {
    request(&retarget(&sample("join.json"), event, Some(caller), None))
}

pub fn poll_request(event: &EventId, caller: &CustomerId, queue_id: &str) -> Request {
    request(&retarget(
        &sample("poll.json"),
        event,
        Some(caller),
        Some(queue_id),
    ))
}

pub fn leave_request(event: &EventId, caller: &CustomerId, queue_id: &str) -> Request {
    request(&retarget(
        &sample("leave.json"),
        event,
        Some(caller),
        Some(queue_id),
    ))
}

/// The response body as JSON (`Value::Null` when empty).
pub fn body(response: &Response<Body>) -> Value {
    match response.body() {
        Body::Empty => Value::Null,
        Body::Text(text) => {
            serde_json::from_str(text).unwrap_or_else(|e| panic!("body {text:?} is not JSON: {e}"))
        }
        Body::Binary(bytes) => serde_json::from_slice(bytes).expect("body is JSON"),
        _ => panic!("unexpected body kind"),
    }
}

pub fn retry_after(response: &Response<Body>) -> Option<u64> {
    response
        .headers()
        .get(http::header::RETRY_AFTER)
        .map(|v| v.to_str().expect("ascii").parse().expect("whole seconds"))
}

/// Asserts the contract's error shape and returns the code.
pub fn error_code(response: &Response<Body>) -> String {
    let body = body(response);
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.code in {body}"));
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "no error.message in {body}"
    );
    code.to_owned()
}

/// Everything Redis holds for one event (every key under its hash tag, plus whether it is in the
/// open-events set), to show that a refused request changed nothing.
pub async fn snapshot(event: &EventId) -> BTreeMap<String, Value> {
    let mut connection = redis().await;
    let keys = EventKeys::new(event);
    let mut state = BTreeMap::new();
    for (name, key) in [("settings", &keys.settings), ("admission", &keys.admission)] {
        let map: BTreeMap<String, String> = redis::cmd("HGETALL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        state.insert(name.to_owned(), serde_json::to_value(map).unwrap());
    }
    for (name, key) in [
        ("queue", &keys.queue),
        ("active", &keys.active),
        ("offered", &keys.offered),
    ] {
        let members: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut connection)
            .await
            .unwrap();
        state.insert(name.to_owned(), serde_json::to_value(members).unwrap());
    }
    let open: bool = redis::cmd("SISMEMBER")
        .arg(OPEN_EVENTS)
        .arg(event.as_str())
        .query_async(&mut connection)
        .await
        .unwrap();
    state.insert("open".to_owned(), open.into());
    state
}

/// Every Redis key of one event, found by scanning its hash tag (`{ev:<id>}*`) rather than by
/// name, so a key added later is covered too; each key's whole content by its type (hash fields,
/// ZSET members with their scores, ...) and whether it has a TTL; plus the four keys of
/// [`EventKeys`] by name (`null` when absent) and whether the event is in the open-events set.
/// The attack tests compare it before and after an attack.
pub async fn event_state(event: &EventId) -> Value {
    let mut connection = redis().await;
    let keys = EventKeys::new(event);
    let mut names: std::collections::BTreeSet<String> =
        [&keys.settings, &keys.queue, &keys.active, &keys.admission]
            .into_iter()
            .cloned()
            .collect();
    let pattern = format!("{{ev:{}}}*", event.as_str());
    let mut cursor = 0_u64;
    loop {
        let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut connection)
            .await
            .expect("SCAN");
        names.extend(found);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let mut state = serde_json::Map::new();
    for name in names {
        let content = redis_key_content(&mut connection, &name).await;
        state.insert(name, content);
    }
    let open: bool = redis::cmd("SISMEMBER")
        .arg(OPEN_EVENTS)
        .arg(event.as_str())
        .query_async(&mut connection)
        .await
        .expect("SISMEMBER");
    state.insert(format!("{OPEN_EVENTS} has {}", event.as_str()), open.into());
    Value::Object(state)
}

/// One key's type and whole content (`null` when the key does not exist).
async fn redis_key_content(connection: &mut redis::aio::MultiplexedConnection, key: &str) -> Value {
    let kind: String = redis::cmd("TYPE")
        .arg(key)
        .query_async(connection)
        .await
        .expect("TYPE");
    let content = match kind.as_str() {
        "none" => return Value::Null,
        "hash" => {
            let map: BTreeMap<String, String> = redis::cmd("HGETALL")
                .arg(key)
                .query_async(connection)
                .await
                .expect("HGETALL");
            serde_json::to_value(map)
        }
        "zset" => {
            // Scores as Redis prints them: exact, whatever their size.
            let members: Vec<(String, String)> = redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query_async(connection)
                .await
                .expect("ZRANGE");
            serde_json::to_value(members)
        }
        "set" => {
            let members: std::collections::BTreeSet<String> = redis::cmd("SMEMBERS")
                .arg(key)
                .query_async(connection)
                .await
                .expect("SMEMBERS");
            serde_json::to_value(members)
        }
        "list" => {
            let items: Vec<String> = redis::cmd("LRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query_async(connection)
                .await
                .expect("LRANGE");
            serde_json::to_value(items)
        }
        "string" => {
            // Bitsets (the seat map) are not text: compared as hex.
            let bytes: Vec<u8> = redis::cmd("GET")
                .arg(key)
                .query_async(connection)
                .await
                .expect("GET");
            Ok(Value::String(match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(binary) => hex::encode(binary.into_bytes()),
            }))
        }
        _ => {
            let dump: Vec<u8> = redis::cmd("DUMP")
                .arg(key)
                .query_async(connection)
                .await
                .expect("DUMP");
            serde_json::to_value(dump)
        }
    }
    .expect("plain data");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(key)
        .query_async(connection)
        .await
        .expect("PTTL");
    serde_json::json!({ "type": kind, "content": content, "expires": ttl >= 0 })
}

/// The Redis admitter limited to some events: tests running side by side keep their own events
/// open in the shared Redis, and a real-time admitter or sweep must not touch those.
pub struct OnlyEvents {
    pub queue: Arc<RedisQueue>,
    pub events: Vec<EventId>,
}

#[async_trait::async_trait]
impl lineup::application::ports::queue::Admitter for OnlyEvents {
    async fn open_events(&self) -> Result<Vec<EventId>, lineup::application::error::LineupError> {
        Ok(self.events.clone())
    }

    async fn tick(
        &self,
        event: &EventId,
        now: SystemTime,
        mode: lineup::application::ports::queue::TickMode,
    ) -> Result<
        lineup::application::ports::queue::TickReport,
        lineup::application::error::LineupError,
    > {
        self.queue.tick(event, now, mode).await
    }
}

/// Sends the library's logs (errors with their source chain) to the test output: the harness
/// captures them per test and shows them with a failing test's output (or all of them with
/// `-- --nocapture`), at INFO or the level `RUST_LOG` names. Installed once per process, for every
/// test in it (the integration tests share one): through the harness's capture, so one test's
/// logs never land in another's output or on the console.
pub fn logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let level = std::env::var("RUST_LOG")
            .ok()
            .and_then(|level| {
                level
                    .parse::<tracing_subscriber::filter::LevelFilter>()
                    .ok()
            })
            .unwrap_or(tracing_subscriber::filter::LevelFilter::INFO);
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_target(false)
            .without_time()
            .with_test_writer()
            .try_init();
    });
}

/// Runs `node --test <file>` (a path from the repository's root: a test of the page's or the
/// edge's JavaScript) and fails unless exactly `passes` tests pass.
pub fn node_test_passes(file: &str, passes: usize) {
    let repository = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_owned();
    let ran = std::process::Command::new("node")
        .args(["--test", file])
        .current_dir(&repository)
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run node (the browser test's runtime, needed here too): {error}")
        });
    let report = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success() && report.contains(&format!("# pass {passes}\n")),
        "node --test {file} failed:\n{report}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}
