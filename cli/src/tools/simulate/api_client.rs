//! The HTTP side of the simulation: every route of `openapi.yaml` a customer uses (the public,
//! cached status and draw among them), plus the `lineup dev` routes (payments, the ticket desk,
//! the stack's whereabouts and traffic), through one shared connection pool. Each request is
//! timed under its route key and counted at the edge ([`EdgeCounter`]), a 503 is retried after
//! its `Retry-After` (except for the waiting reads of the status and the draw, which the waiting
//! customer backs off from itself, as the page does), and each answer is turned into what the
//! caller can act on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lineup::domain::draw::DrawChunk;
use lineup::domain::status::EventStatus;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::answer_log::{AnswerLog, Recorded};
use super::edge_traffic::EdgeCounter;
use super::latency::LatencyRecorder;
use crate::dev::payment_provider::{ProviderSettings, ProviderStats};
use crate::dev::ticket_desk::Ticket;

/// The routes the simulation calls, each named by its key (as in the contract, and in the
/// latency table).
pub mod routes {
    use std::sync::LazyLock;

    use reqwest::Method;

    use crate::dev::routes::{routes, Route};

    /// The contract's routes: the dev server's own list (its tests check it against
    /// `template.yaml`), each with its key computed once so requests can name it for good.
    static CONTRACT: LazyLock<Vec<(Route, String)>> = LazyLock::new(|| {
        routes()
            .into_iter()
            .map(|route| {
                let key = route.key();
                (route, key)
            })
            .collect()
    });

    /// One of the contract's routes.
    #[derive(Clone, Copy)]
    pub struct ContractRoute {
        route: &'static Route,
        pub key: &'static str,
    }

    impl ContractRoute {
        pub fn method(&self) -> Method {
            self.route.method.clone()
        }

        /// The route's path with its `{parameter}`s filled in.
        pub fn path(&self, parameters: &[(&str, &str)]) -> String {
            parameters
                .iter()
                .fold(self.route.path.to_owned(), |path, (name, value)| {
                    path.replace(&format!("{{{name}}}"), value)
                })
        }
    }

    /// The contract's route `method path`. There is always one: the tests look up every route
    /// below (a missing one is a simulator bug, so it panics).
    fn contract(method: Method, path: &str) -> ContractRoute {
        CONTRACT
            .iter()
            .find(|(route, _)| route.method == method && route.path == path)
            .map(|(route, key)| ContractRoute {
                route,
                key: key.as_str(),
            })
            .unwrap_or_else(|| panic!("the contract has no route {method} {path}"))
    }

    pub fn join() -> ContractRoute {
        contract(Method::POST, "/events/{eventId}/queue")
    }
    pub fn poll() -> ContractRoute {
        contract(Method::GET, "/events/{eventId}/queue/{queueId}")
    }
    pub fn leave() -> ContractRoute {
        contract(Method::DELETE, "/events/{eventId}/queue/{queueId}")
    }
    /// Public (no JWT), served through the CDN: availability, a bitset per section.
    pub fn seats() -> ContractRoute {
        contract(Method::GET, "/events/{eventId}/seats")
    }
    /// Public, immutable: the seat layout of one version.
    pub fn layout() -> ContractRoute {
        contract(Method::GET, "/events/{eventId}/layout/{version}")
    }
    pub fn hold() -> ContractRoute {
        contract(Method::POST, "/events/{eventId}/holds")
    }
    pub fn release() -> ContractRoute {
        contract(Method::DELETE, "/events/{eventId}/holds/{orderId}")
    }
    pub fn order() -> ContractRoute {
        contract(Method::GET, "/orders/{orderId}")
    }
    /// The provider's payment for a held order (checkout).
    pub fn payment() -> ContractRoute {
        contract(Method::POST, "/orders/{orderId}/payment")
    }
    /// Public (no JWT), served through the CDN.
    pub fn status() -> ContractRoute {
        contract(Method::GET, "/events/{eventId}/status")
    }
    /// Public (no JWT), served through the CDN; immutable once published.
    pub fn draw_chunk() -> ContractRoute {
        contract(Method::GET, "/events/{eventId}/draw/{prefix}")
    }

    /// `lineup dev`'s own routes, beside the contract's: its provider's Stripe-shaped confirm,
    /// as Stripe.js calls it from the browser.
    pub const PAY: &str = "POST /v1/payment_intents/{id}/confirm";
    pub const DEV_INFO: &str = "GET /dev/info";
    pub const PAYMENT_STATS: &str = "GET /dev/payments/stats";
    pub const PAYMENT_SETTINGS: &str = "PUT /dev/payments/settings";
    pub const TICKETS: &str = "GET /dev/tickets";
}

/// How often a 503 is retried (after its `Retry-After`) before the call gives up.
const UNAVAILABLE_ATTEMPTS: u32 = 10;
/// How often a request that got no answer at all is sent again (only where repeating is safe).
const NETWORK_ATTEMPTS: u32 = 3;
/// Bound on one request: the emulator serialises DynamoDB requests, so a hold can queue a while.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a call did not give an answer the caller expected.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("{route}: no answer from the server")]
    Network {
        route: &'static str,
        #[source]
        source: reqwest::Error,
    },
    #[error("{route}: unexpected answer {status} {}", code.as_deref().unwrap_or("(no error code)"))]
    Unexpected {
        route: &'static str,
        status: u16,
        code: Option<String>,
        body: String,
        /// The answer's `Retry-After`, if it had one.
        retry_after: Option<Duration>,
    },
    #[error("{route}: the answer is not the JSON the contract describes")]
    Decode {
        route: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{route}: still 503 after {attempts} attempts")]
    Unavailable { route: &'static str, attempts: u32 },
    /// A documented answer that does not agree with itself or with another (bits that do not
    /// decode, an availability longer than its layout).
    #[error("{route}: {what}")]
    Inconsistent {
        route: &'static str,
        what: &'static str,
    },
}

impl CallError {
    /// A short, stable description for grouping problems in the report (no error text inside).
    pub fn kind(&self) -> String {
        match self {
            Self::Network { route, source } => {
                let why = if source.is_timeout() {
                    "timed out"
                } else if source.is_connect() {
                    "could not connect"
                } else {
                    "connection failed"
                };
                format!("{route}: no answer ({why})")
            }
            Self::Unexpected {
                route,
                status,
                code,
                ..
            } => format!(
                "{route}: HTTP {status} {}",
                code.as_deref().unwrap_or("(no error code)")
            ),
            Self::Decode { route, .. } => format!("{route}: body not as documented"),
            Self::Unavailable { route, .. } => format!("{route}: 503 until the retries ran out"),
            Self::Inconsistent { route, what } => format!("{route}: {what}"),
        }
    }

    /// Whether this is a 404 with the error code `code`.
    pub fn is_not_found(&self, code: &str) -> bool {
        matches!(self, Self::Unexpected { status: 404, code: Some(found), .. } if found == code)
    }

    /// Whether asking again later may well succeed: no answer, 429 (a throttle) or a 5xx. A
    /// page backs off from those and reads again ([`super::waiting`]).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Network { .. } | Self::Unavailable { .. } => true,
            Self::Unexpected { status, .. } => *status == 429 || *status >= 500,
            Self::Decode { .. } | Self::Inconsistent { .. } => false,
        }
    }

    /// The `Retry-After` the answer gave, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Unexpected { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The answer's body, when there was one (shown once per kind in the report).
    pub fn body(&self) -> Option<&str> {
        match self {
            Self::Unexpected { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// One answer: status, `Retry-After` (seconds) if any, and the body text.
#[derive(Debug)]
pub struct Answer {
    pub route: &'static str,
    pub status: StatusCode,
    pub retry_after: Option<Duration>,
    pub body: String,
}

impl Answer {
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, CallError> {
        serde_json::from_str(&self.body).map_err(|source| CallError::Decode {
            route: self.route,
            source,
        })
    }

    /// `error.code` and `error.seatIds` of an error body (absent when it is not one).
    pub fn error(&self) -> ErrorBody {
        serde_json::from_str::<ErrorEnvelope>(&self.body)
            .map(|envelope| envelope.error)
            .unwrap_or_default()
    }

    pub fn unexpected(&self) -> CallError {
        let mut body = self.body.clone();
        if body.len() > 300 {
            let mut end = 300;
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            body.truncate(end);
            body.push('…');
        }
        CallError::Unexpected {
            route: self.route,
            status: self.status.as_u16(),
            code: self.error().code,
            body,
            retry_after: self.retry_after,
        }
    }
}

#[derive(Debug, Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub code: Option<String>,
    #[serde(default)]
    pub seat_ids: Vec<String>,
}

/// One request to make (again, for a retry).
struct Call<'a> {
    route: &'static str,
    method: Method,
    path: String,
    bearer: Option<&'a str>,
    queue_token: Option<&'a str>,
    body: Option<serde_json::Value>,
    /// A form-encoded body instead (Stripe's API).
    form: Option<Vec<(String, String)>>,
    /// Whether sending it twice is harmless (then a request with no answer is sent again).
    repeatable: bool,
    /// Whether the caller backs off and asks again itself after a 503 or no answer (the waiting
    /// reads, as the page does them): then the call is sent once.
    retried_by_caller: bool,
}

impl<'a> Call<'a> {
    /// A call of the contract's `route`, with its path parameters, and nothing else yet.
    fn to(route: routes::ContractRoute, parameters: &[(&str, &str)], bearer: &'a str) -> Self {
        Self {
            route: route.key,
            method: route.method(),
            path: route.path(parameters),
            bearer: Some(bearer),
            queue_token: None,
            body: None,
            form: None,
            repeatable: true,
            retried_by_caller: false,
        }
    }

    /// A call of one of the contract's public routes: no JWT, as the CDN would cache it.
    fn public(route: routes::ContractRoute, parameters: &[(&str, &str)]) -> Self {
        Self {
            bearer: None,
            ..Self::to(route, parameters, "")
        }
    }

    /// A waiting customer's read of a public route (the status, a draw chunk): sent once, the
    /// customer backs off from a failure itself.
    fn waiting_read(route: routes::ContractRoute, parameters: &[(&str, &str)]) -> Self {
        Self {
            retried_by_caller: true,
            ..Self::public(route, parameters)
        }
    }

    /// A call of one of `lineup dev`'s own routes (or its provider's): no JWT, no body.
    fn dev(route: &'static str, method: Method, path: String) -> Self {
        Self {
            route,
            method,
            path,
            bearer: None,
            queue_token: None,
            body: None,
            form: None,
            repeatable: true,
            retried_by_caller: false,
        }
    }
}

/// The API of one `lineup dev` server, shared by every customer.
pub struct Api {
    http: reqwest::Client,
    base: String,
    /// Layouts already fetched, by version (immutable, as a browser's cache keeps them).
    layouts: std::sync::Mutex<std::collections::HashMap<String, Arc<Vec<SeatView>>>>,
    /// The last availability answer and the seat map made of it: the CDN serves the same answer
    /// for a second, so a crowd of shoppers reads the same bytes, and building a 20,000-seat map
    /// for each of them would starve the dev server of the cores it shares with this process.
    last_map: std::sync::Mutex<Option<(String, Arc<Vec<SeatView>>)>>,
    latency: Arc<LatencyRecorder>,
    /// Every customer request to the edge, counted as it is sent.
    edge: EdgeCounter,
    unavailable: AtomicU64,
    server_errors: AtomicU64,
    /// Every answer in time, when kept (a chaos run).
    answers: Option<Arc<AnswerLog>>,
}

impl Api {
    pub fn new(
        base: &str,
        pool_size: usize,
        latency: Arc<LatencyRecorder>,
    ) -> Result<Self, reqwest::Error> {
        let http = crate::http_client()
            .pool_max_idle_per_host(pool_size)
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            layouts: std::sync::Mutex::default(),
            last_map: std::sync::Mutex::default(),
            latency,
            edge: EdgeCounter::default(),
            unavailable: AtomicU64::new(0),
            server_errors: AtomicU64::new(0),
            answers: None,
        })
    }

    /// Keeps every answer (and every request that got none) in `log`, with when it was sent
    /// and answered.
    pub fn keep_answers(&mut self, log: Arc<AnswerLog>) {
        self.answers = Some(log);
    }

    fn keep(&self, route: &'static str, sent: Instant, status: Option<StatusCode>, body: &str) {
        let Some(log) = &self.answers else {
            return;
        };
        let code = status
            .filter(|status| !status.is_success())
            .and_then(|_| serde_json::from_str::<ErrorEnvelope>(body).ok())
            .and_then(|envelope| envelope.error.code);
        log.record(Recorded {
            route,
            sent,
            answered: Instant::now(),
            status: status.map(|status| status.as_u16()),
            code,
        });
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// The customers' requests to the edge so far.
    pub fn edge(&self) -> &EdgeCounter {
        &self.edge
    }

    /// How many 503 answers were seen (each one retried).
    pub fn unavailable_answers(&self) -> u64 {
        self.unavailable.load(Ordering::Relaxed)
    }

    /// How many answers were a 5xx other than 503 (none is ever allowed).
    pub fn server_errors(&self) -> u64 {
        self.server_errors.load(Ordering::Relaxed)
    }

    async fn send(&self, call: Call<'_>) -> Result<Answer, CallError> {
        let mut unavailable_attempts = 0;
        let mut network_attempts = 0;
        loop {
            let mut request = self
                .http
                .request(call.method.clone(), format!("{}{}", self.base, call.path));
            if let Some(jwt) = call.bearer {
                request = request.bearer_auth(jwt);
            }
            if let Some(token) = call.queue_token {
                request = request.header("X-Queue-Token", token);
            }
            if let Some(form) = &call.form {
                request = request.form(form);
            }
            if let Some(body) = &call.body {
                request = request.json(body);
            }
            let started = Instant::now();
            self.edge.count(call.route);
            let sent = request.send().await;
            let response = match sent {
                Ok(response) => response,
                Err(source) => {
                    self.latency.record(call.route, started.elapsed());
                    self.keep(call.route, started, None, "");
                    network_attempts += 1;
                    let again = call.repeatable && !call.retried_by_caller;
                    if again && network_attempts < NETWORK_ATTEMPTS {
                        tokio::time::sleep(Duration::from_millis(500 * network_attempts as u64))
                            .await;
                        continue;
                    }
                    return Err(CallError::Network {
                        route: call.route,
                        source,
                    });
                }
            };
            let status = response.status();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let body = response.text().await;
            self.latency.record(call.route, started.elapsed());
            let body = match body {
                Ok(body) => body,
                Err(source) => {
                    self.keep(call.route, started, None, "");
                    return Err(CallError::Network {
                        route: call.route,
                        source,
                    });
                }
            };
            self.keep(call.route, started, Some(status), &body);
            if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
                self.server_errors.fetch_add(1, Ordering::Relaxed);
            }
            if status == StatusCode::SERVICE_UNAVAILABLE {
                self.unavailable.fetch_add(1, Ordering::Relaxed);
            }
            if status == StatusCode::SERVICE_UNAVAILABLE && !call.retried_by_caller {
                unavailable_attempts += 1;
                if unavailable_attempts >= UNAVAILABLE_ATTEMPTS {
                    return Err(CallError::Unavailable {
                        route: call.route,
                        attempts: unavailable_attempts,
                    });
                }
                tokio::time::sleep(retry_after.unwrap_or(Duration::from_secs(1))).await;
                continue;
            }
            return Ok(Answer {
                route: call.route,
                status,
                retry_after,
                body,
            });
        }
    }

    // ---- the customer routes ----

    pub async fn join(&self, jwt: &str, event: &str) -> Result<Standing, CallError> {
        let answer = self
            .send(Call {
                body: Some(serde_json::json!({})),
                ..Call::to(routes::join(), &[("eventId", event)], jwt)
            })
            .await?;
        match answer.status {
            StatusCode::OK | StatusCode::CREATED => Standing::from_answer(&answer),
            StatusCode::CONFLICT if answer.error().code.as_deref() == Some("queue_closed") => {
                Ok(Standing::Closed)
            }
            _ => Err(answer.unexpected()),
        }
    }

    /// Where the caller stands, by its ticket.
    pub async fn poll(&self, jwt: &str, event: &str, queue_id: &str) -> Result<Polled, CallError> {
        let answer = self
            .send(Call::to(
                routes::poll(),
                &[("eventId", event), ("queueId", queue_id)],
                jwt,
            ))
            .await?;
        match answer.status {
            StatusCode::OK => Standing::from_answer(&answer).map(Polled::Standing),
            StatusCode::NOT_FOUND
                if answer.error().code.as_deref() == Some("queue_entry_not_found") =>
            {
                Ok(Polled::EntryNotFound {
                    retry_after: answer.retry_after,
                })
            }
            _ => Err(answer.unexpected()),
        }
    }

    /// `false`: there was nothing to leave.
    pub async fn leave(&self, jwt: &str, event: &str, queue_id: &str) -> Result<bool, CallError> {
        let answer = self
            .send(Call::to(
                routes::leave(),
                &[("eventId", event), ("queueId", queue_id)],
                jwt,
            ))
            .await?;
        match answer.status {
            StatusCode::NO_CONTENT => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(answer.unexpected()),
        }
    }

    /// The seat map as a page draws it: the availability (public, cached a second) over the
    /// layout of its version (immutable, fetched once).
    pub async fn seat_map(&self, event: &str) -> Result<Arc<Vec<SeatView>>, CallError> {
        let answer = self
            .send(Call::public(routes::seats(), &[("eventId", event)]))
            .await?;
        if answer.status == StatusCode::OK {
            let last = self.last_map.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((body, map)) = last.as_ref() {
                if *body == answer.body {
                    return Ok(map.clone());
                }
            }
        }
        let availability: AvailabilityBody = match answer.status {
            StatusCode::OK => answer.json()?,
            _ => return Err(answer.unexpected()),
        };
        let layout = self.layout(event, &availability.layout_version).await?;
        let mut seats = Vec::with_capacity(layout.len());
        let mut at = 0usize;
        for section in &availability.sections {
            let bits =
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &section.bits)
                    .map_err(|_| CallError::Inconsistent {
                    route: routes::seats().key,
                    what: "the availability bits are not base64",
                })?;
            for index in 0..section.seats as usize {
                let Some(seat) = layout.get(at) else {
                    return Err(CallError::Inconsistent {
                        route: routes::seats().key,
                        what: "the availability has more seats than its layout",
                    });
                };
                let available = bits
                    .get(index / 8)
                    .is_some_and(|byte| byte & (0x80 >> (index % 8)) != 0);
                seats.push(SeatView {
                    status: if available { "AVAILABLE" } else { "TAKEN" }.to_owned(),
                    ..seat.clone()
                });
                at += 1;
            }
        }
        let seats = Arc::new(seats);
        *self.last_map.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((answer.body.clone(), seats.clone()));
        Ok(seats)
    }

    /// The layout's seats in order (fetched once per version).
    async fn layout(&self, event: &str, version: &str) -> Result<Arc<Vec<SeatView>>, CallError> {
        let cached = self
            .layouts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(version)
            .cloned();
        if let Some(layout) = cached {
            return Ok(layout);
        }
        let answer = self
            .send(Call::public(
                routes::layout(),
                &[("eventId", event), ("version", version)],
            ))
            .await?;
        let layout: LayoutBody = match answer.status {
            StatusCode::OK => answer.json()?,
            _ => return Err(answer.unexpected()),
        };
        let seats: Vec<SeatView> = layout
            .sections
            .into_iter()
            .flat_map(|section| {
                let (name, price) = (section.name, section.price);
                section.rows.into_iter().flat_map(move |row| {
                    let name = name.clone();
                    row.seats.into_iter().map(move |seat_id| SeatView {
                        seat_id,
                        section: name.clone(),
                        price,
                        status: String::new(),
                    })
                })
            })
            .collect();
        let seats = Arc::new(seats);
        self.layouts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(version.to_owned(), seats.clone());
        Ok(seats)
    }

    /// Best available: `quantity` seats together in `section`, chosen by the server.
    pub async fn hold_best_available(
        &self,
        jwt: &str,
        queue_token: &str,
        event: &str,
        section: &str,
        quantity: usize,
    ) -> Result<HoldAnswer, CallError> {
        let answer = self
            .send(Call {
                queue_token: Some(queue_token),
                body: Some(serde_json::json!({ "section": section, "quantity": quantity })),
                ..Call::to(routes::hold(), &[("eventId", event)], jwt)
            })
            .await?;
        self.hold_answer(answer)
    }

    pub async fn hold(
        &self,
        jwt: &str,
        queue_token: &str,
        event: &str,
        seat_ids: &[String],
    ) -> Result<HoldAnswer, CallError> {
        let answer = self
            .send(Call {
                queue_token: Some(queue_token),
                body: Some(serde_json::json!({ "seatIds": seat_ids })),
                // Repeatable (`to`'s default): the contract gives the same seats again the same
                // order back, never a second.
                ..Call::to(routes::hold(), &[("eventId", event)], jwt)
            })
            .await?;
        self.hold_answer(answer)
    }

    fn hold_answer(&self, answer: Answer) -> Result<HoldAnswer, CallError> {
        match answer.status {
            StatusCode::CREATED => Ok(HoldAnswer::Held(answer.json()?)),
            StatusCode::FORBIDDEN => Ok(HoldAnswer::AccessDenied),
            StatusCode::CONFLICT => {
                let error = answer.error();
                match error.code.as_deref() {
                    Some("seats_unavailable") => Ok(HoldAnswer::Taken(error.seat_ids)),
                    Some("price_changed") => Ok(HoldAnswer::PriceChanged),
                    Some("hold_exists") => Ok(HoldAnswer::HoldExists),
                    Some("no_seats_together") => Ok(HoldAnswer::NoneTogether),
                    _ => Err(answer.unexpected()),
                }
            }
            _ => Err(answer.unexpected()),
        }
    }

    /// `false`: the order was no longer pending (409 `order_not_pending`).
    pub async fn release(&self, jwt: &str, event: &str, order: &str) -> Result<bool, CallError> {
        let answer = self
            .send(Call::to(
                routes::release(),
                &[("eventId", event), ("orderId", order)],
                jwt,
            ))
            .await?;
        match answer.status {
            StatusCode::NO_CONTENT => Ok(true),
            StatusCode::CONFLICT => Ok(false),
            _ => Err(answer.unexpected()),
        }
    }

    pub async fn order(&self, jwt: &str, order: &str) -> Result<OrderView, CallError> {
        let answer = self
            .send(Call::to(routes::order(), &[("orderId", order)], jwt))
            .await?;
        match answer.status {
            StatusCode::OK => answer.json(),
            _ => Err(answer.unexpected()),
        }
    }

    /// The event's public status, through the CDN (`lineup dev`'s stand-in for it).
    pub async fn status(&self, event: &str) -> Result<EventStatus, CallError> {
        let answer = self
            .send(Call::waiting_read(routes::status(), &[("eventId", event)]))
            .await?;
        match answer.status {
            StatusCode::OK => answer.json(),
            _ => Err(answer.unexpected()),
        }
    }

    /// The published draw's chunk of entrants starting with `prefix`, through the CDN.
    pub async fn draw_chunk(&self, event: &str, prefix: &str) -> Result<DrawChunk, CallError> {
        let answer = self
            .send(Call::waiting_read(
                routes::draw_chunk(),
                &[("eventId", event), ("prefix", prefix)],
            ))
            .await?;
        match answer.status {
            StatusCode::OK => answer.json(),
            _ => Err(answer.unexpected()),
        }
    }

    // ---- the `lineup dev` routes ----

    /// The order's payment (checkout): what the browser pays it with. Checkout makes one
    /// payment per order whatever the repeats, and only for a live hold.
    pub async fn checkout(&self, jwt: &str, order: &OrderView) -> Result<PaymentView, CallError> {
        let answer = self
            .send(Call::to(
                routes::payment(),
                &[("orderId", &order.order_id)],
                jwt,
            ))
            .await?;
        match answer.status {
            StatusCode::OK => answer.json(),
            _ => Err(answer.unexpected()),
        }
    }

    /// Pays checkout's payment as Stripe.js pays it: confirmed at `lineup dev`'s provider with
    /// the publishable key and the client secret. The provider then sends Stripe's webhook
    /// itself (or, with `--lose-webhooks`, loses it for reconciliation).
    pub async fn confirm(&self, payment: &PaymentView) -> Result<Confirmed, CallError> {
        let key = payment.publishable_key.clone().unwrap_or_default();
        let mut form = vec![("payment_method".to_owned(), "pm_card_visa".to_owned())];
        if let Some(secret) = &payment.client_secret {
            form.push(("client_secret".to_owned(), secret.clone()));
        }
        let answer = self
            .send(Call {
                bearer: Some(&key),
                form: Some(form),
                // Repeatable (`dev`'s default): a second confirm of a succeeded payment is
                // refused, not paid twice.
                ..Call::dev(
                    routes::PAY,
                    Method::POST,
                    format!("/v1/payment_intents/{}/confirm", payment.payment_id),
                )
            })
            .await?;
        match answer.status {
            StatusCode::OK => Ok(Confirmed::Paid),
            // Stripe's refusal to confirm a payment past confirming: cancelled, here, with the
            // lapsed hold it was for (reconciliation does that).
            StatusCode::BAD_REQUEST
                if answer.error().code.as_deref() == Some("payment_intent_unexpected_state") =>
            {
                Ok(Confirmed::Refused)
            }
            _ => Err(answer.unexpected()),
        }
    }

    /// The dev provider's counts so far (`GET /dev/payments/stats`).
    pub async fn payment_stats(&self) -> Result<ProviderStats, CallError> {
        let answer = self
            .send(Call::dev(
                routes::PAYMENT_STATS,
                Method::GET,
                "/dev/payments/stats".to_owned(),
            ))
            .await?;
        match answer.status {
            StatusCode::OK => answer.json(),
            _ => Err(answer.unexpected()),
        }
    }

    /// Sets the share of Stripe events the dev provider loses for good from now on
    /// (`PUT /dev/payments/settings`).
    pub async fn set_lose_webhooks(&self, share: f64) -> Result<(), CallError> {
        let answer = self
            .send(Call {
                body: Some(
                    serde_json::to_value(ProviderSettings {
                        lose_webhooks: share,
                    })
                    .unwrap_or_default(),
                ),
                ..Call::dev(
                    routes::PAYMENT_SETTINGS,
                    Method::PUT,
                    "/dev/payments/settings".to_owned(),
                )
            })
            .await?;
        match answer.status {
            StatusCode::OK => Ok(()),
            _ => Err(answer.unexpected()),
        }
    }

    pub async fn dev_info(&self) -> Result<Answer, CallError> {
        self.send(Call {
            repeatable: false,
            ..Call::dev(routes::DEV_INFO, Method::GET, "/dev/info".to_owned())
        })
        .await
    }

    pub async fn tickets(&self, event: &str) -> Result<Vec<Ticket>, CallError> {
        let answer = self
            .send(Call::dev(
                routes::TICKETS,
                Method::GET,
                format!("/dev/tickets?eventId={event}"),
            ))
            .await?;
        match answer.status {
            StatusCode::OK => Ok(answer.json::<TicketsBody>()?.tickets),
            _ => Err(answer.unexpected()),
        }
    }
}

// ---- bodies ----

/// What a customer reads of a standing.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StandingBody {
    status: String,
    queue_id: Option<String>,
    number: Option<u64>,
    serving_up_to: Option<u64>,
    entrant: Option<String>,
    eta_seconds: Option<u64>,
    access_token: Option<String>,
}

/// What a poll said.
#[derive(Debug)]
pub enum Polled {
    Standing(Standing),
    /// 404 `queue_entry_not_found`: the server knows no entry of the caller's under this ticket.
    EntryNotFound {
        retry_after: Option<Duration>,
    },
}

/// Where a customer stands, as join and poll tell it.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Waiting with a queue number: read the status after `read_status_after`.
    Numbered(NumberedPlace),
    /// In the pre-queue, before the draw: no number yet, only the entrant hash to find it by.
    PreQueue(PreQueuePlace),
    Admitted {
        queue_id: String,
        access_token: String,
    },
    Expired,
    /// Sold out or closed (a waiting poll's `closed`, or a join's 409 `queue_closed`).
    Closed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NumberedPlace {
    /// The signed ticket stating the number: what to claim (and leave) with.
    pub queue_id: String,
    pub number: u64,
    pub serving_up_to: u64,
    /// The ETA the answer gave.
    pub eta: Duration,
    /// `Retry-After`: when to read the status next.
    pub read_status_after: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PreQueuePlace {
    pub queue_id: String,
    /// The customer's hash in the published draw (32 hex digits).
    pub entrant: String,
    pub read_status_after: Duration,
}

impl Standing {
    /// When `waiting` comes without `Retry-After` (it should not), read the status after the
    /// minimum.
    const DEFAULT_RETRY_AFTER: Duration = lineup::domain::wait_policy::MIN_STATUS_INTERVAL;

    fn from_answer(answer: &Answer) -> Result<Self, CallError> {
        let body: StandingBody = answer.json()?;
        let read_status_after = answer.retry_after.unwrap_or(Self::DEFAULT_RETRY_AFTER);
        match body.status.as_str() {
            "waiting" => match (body.queue_id, body.number, body.serving_up_to, body.entrant) {
                (Some(queue_id), Some(number), Some(serving_up_to), _) => {
                    Ok(Self::Numbered(NumberedPlace {
                        queue_id,
                        number,
                        serving_up_to,
                        eta: Duration::from_secs(body.eta_seconds.unwrap_or_default()),
                        read_status_after,
                    }))
                }
                (Some(queue_id), None, _, Some(entrant)) if is_entrant(&entrant) => {
                    Ok(Self::PreQueue(PreQueuePlace {
                        queue_id,
                        entrant,
                        read_status_after,
                    }))
                }
                _ => Err(answer.unexpected()),
            },
            "admitted" => match (body.queue_id, body.access_token) {
                (Some(queue_id), Some(access_token)) => Ok(Self::Admitted {
                    queue_id,
                    access_token,
                }),
                _ => Err(answer.unexpected()),
            },
            "expired" => Ok(Self::Expired),
            "closed" => Ok(Self::Closed),
            _ => Err(answer.unexpected()),
        }
    }
}

/// An entrant hash as the draw publishes it: the chunk is named by its leading digits.
fn is_entrant(text: &str) -> bool {
    text.len() == lineup::domain::draw::ENTRANT_HEX_LEN
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AvailabilityBody {
    layout_version: String,
    sections: Vec<SectionAvailabilityBody>,
}

#[derive(Debug, Deserialize)]
struct SectionAvailabilityBody {
    seats: u32,
    bits: String,
}

#[derive(Debug, Deserialize)]
struct LayoutBody {
    sections: Vec<LayoutSectionBody>,
}

#[derive(Debug, Deserialize)]
struct LayoutSectionBody {
    name: String,
    price: i64,
    rows: Vec<LayoutRowBody>,
}

#[derive(Debug, Deserialize)]
struct LayoutRowBody {
    seats: Vec<String>,
}

/// One seat of the seat map.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeatView {
    pub seat_id: String,
    pub section: String,
    pub price: i64,
    pub status: String,
}

impl SeatView {
    pub fn is_available(&self) -> bool {
        self.status == "AVAILABLE"
    }
}

/// An order, as the hold returns it and `GET /orders/{orderId}` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    pub order_id: String,
    pub status: String,
    pub seat_ids: Vec<String>,
    pub amount: i64,
    pub currency: String,
}

/// What checkout answers: the order's payment, and what the browser pays it with.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentView {
    pub payment_id: String,
    pub client_secret: Option<String>,
    pub publishable_key: Option<String>,
}

/// What confirming a payment at the provider came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmed {
    /// The money is taken: the webhook (or reconciliation) settles the order.
    Paid,
    /// 400 `payment_intent_unexpected_state`: the payment can no longer be confirmed (it was
    /// cancelled with its lapsed hold); no money taken.
    Refused,
}

/// What a hold came to.
#[derive(Debug)]
pub enum HoldAnswer {
    Held(OrderView),
    /// 409 `seats_unavailable`: these seats are taken.
    Taken(Vec<String>),
    /// 409 `price_changed`.
    PriceChanged,
    /// 409 `hold_exists`.
    HoldExists,
    /// 403: the admission ended (lapsed, or revoked).
    AccessDenied,
    /// 409 `no_seats_together`: best available found no row with that many together.
    NoneTogether,
}

#[derive(Debug, Deserialize)]
struct TicketsBody {
    tickets: Vec<Ticket>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use reqwest::StatusCode;

    use super::{Answer, NumberedPlace, PreQueuePlace, Standing};

    use super::routes;
    use crate::dev::routes::{routes as contract, Route};

    #[test]
    fn customers_call_every_customer_route_of_the_contract_by_its_own_key() {
        let called: BTreeSet<&str> = [
            routes::join(),
            routes::poll(),
            routes::leave(),
            routes::hold(),
            routes::release(),
            routes::order(),
            routes::payment(),
        ]
        .iter()
        .map(|route| route.key)
        .collect();
        let customer_routes: Vec<String> = contract()
            .iter()
            .filter(|route| route.authorized)
            .map(Route::key)
            .collect();
        let customer_routes: BTreeSet<&str> = customer_routes.iter().map(String::as_str).collect();
        assert_eq!(called, customer_routes);
    }

    /// The seat map the client reads is the document the server writes (field names included).
    #[test]
    fn the_availability_the_server_writes_is_what_the_client_reads() {
        let layout =
            lineup::domain::layout::SeatLayout::from_seats(&[lineup::domain::seat::NewSeat {
                seat_id: lineup::domain::ids::SeatId::parse("A-1").unwrap(),
                section: "Floor".into(),
                row: "A".into(),
                price: 1,
                currency: "KRW".into(),
            }])
            .unwrap();
        let event = lineup::domain::ids::EventId::parse("e1").unwrap();
        let written = serde_json::to_string(
            &lineup::application::ports::availability::AvailabilityDocument::new(
                &event,
                &lineup::application::ports::availability::Availability {
                    summary: layout.summary(),
                    available: vec![0x80],
                },
            ),
        )
        .unwrap();
        let read: super::AvailabilityBody = serde_json::from_str(&written).unwrap();
        assert_eq!(read.layout_version, layout.version());
        assert_eq!(read.sections[0].seats, 1);
        let layout: super::LayoutBody = serde_json::from_str(&layout.to_document(&event)).unwrap();
        assert_eq!(layout.sections[0].rows[0].seats, ["A-1"]);
    }

    #[test]
    fn the_waiting_reads_go_to_the_cached_public_routes() {
        for route in [
            routes::status(),
            routes::draw_chunk(),
            routes::seats(),
            routes::layout(),
        ] {
            let declared = contract()
                .into_iter()
                .find(|r| r.key() == route.key)
                .expect("a contract route");
            assert!(!declared.authorized, "{} is public", route.key);
            assert!(declared.cached(), "{} goes through the CDN", route.key);
        }
        assert_eq!(
            routes::draw_chunk().path(&[("eventId", "sim-1"), ("prefix", "a7")]),
            "/events/sim-1/draw/a7"
        );
    }

    #[test]
    fn a_path_is_its_template_filled_in() {
        let release = routes::release();
        assert_eq!(release.key, "DELETE /events/{eventId}/holds/{orderId}");
        assert_eq!(release.method(), reqwest::Method::DELETE);
        assert_eq!(
            release.path(&[("eventId", "sim-1"), ("orderId", "o-2")]),
            "/events/sim-1/holds/o-2"
        );
    }

    fn answer(body: &str) -> Answer {
        Answer {
            route: "poll",
            status: StatusCode::OK,
            retry_after: Some(Duration::from_secs(7)),
            body: body.to_owned(),
        }
    }

    #[test]
    fn a_waiting_answer_is_a_number_or_a_pre_queue_entry() {
        let numbered = answer(
            r#"{"status":"waiting","queueId":"41.1796000000000.mac","number":41,"position":3,"servingUpTo":38,"etaSeconds":2}"#,
        );
        assert_eq!(
            Standing::from_answer(&numbered).unwrap(),
            Standing::Numbered(NumberedPlace {
                queue_id: "41.1796000000000.mac".to_owned(),
                number: 41,
                serving_up_to: 38,
                eta: Duration::from_secs(2),
                read_status_after: Duration::from_secs(7),
            })
        );
        let entrant = "0123456789abcdef0123456789abcdef";
        let pre_queue = answer(&format!(
            r#"{{"status":"waiting","queueId":"0.1796000000000.mac","entrant":"{entrant}","etaSeconds":925,"opensAt":"2026-11-30T09:15:00.000Z"}}"#
        ));
        assert_eq!(
            Standing::from_answer(&pre_queue).unwrap(),
            Standing::PreQueue(PreQueuePlace {
                queue_id: "0.1796000000000.mac".to_owned(),
                entrant: entrant.to_owned(),
                read_status_after: Duration::from_secs(7),
            })
        );
    }

    #[test]
    fn a_waiting_answer_with_neither_a_number_nor_an_entrant_is_refused() {
        for body in [
            r#"{"status":"waiting"}"#,
            r#"{"status":"waiting","queueId":"q1","etaSeconds":3}"#,
            // A number without where the queue stands cannot be waited on.
            r#"{"status":"waiting","queueId":"q1","number":4}"#,
            // Not an entrant hash: there is no chunk to find it in.
            r#"{"status":"waiting","queueId":"q1","entrant":"../../x"}"#,
            r#"{"status":"admitted","queueId":"q1"}"#,
        ] {
            assert!(Standing::from_answer(&answer(body)).is_err(), "{body}");
        }
        assert_eq!(
            Standing::from_answer(&answer(r#"{"status":"expired","queueId":"q1"}"#)).unwrap(),
            Standing::Expired
        );
    }
}
