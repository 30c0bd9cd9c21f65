//! The public routes, the same answer for everyone and no JWT, made to be cached by the CDN:
//!
//! - `GET /events/{eventId}/status`: the event's status as the last admit tick published it
//!   (one Redis read), cached a couple of seconds.
//! - `GET /events/{eventId}/draw`: the published pre-queue draw's summary (seed revealed),
//!   immutable once published.
//! - `GET /events/{eventId}/draw/{prefix}`: the entrants whose hash starts with `prefix`, with
//!   their numbers, immutable once published.
//! - `GET /events/{eventId}/seats`: which seats are available, a bitset per section (one Redis
//!   read), cached a second.
//! - `GET /events/{eventId}/layout`: a redirect to the current layout's version (cached 5 s).
//! - `GET /events/{eventId}/layout/{version}`: the seat layout, immutable (read from the events
//!   table once per version per instance).
//!
//! Every answer says how long it may be cached, errors included: a 404 for a made-up event is
//! cached too (5 s), so made-up ids cannot stream to the origin through the CDN; a 503 for 1 s,
//! so a Redis hiccup does not turn the crowd's reads into a stampede.
//!
//! After a cache loss the status, seat map and layout are missing from Redis until the admitter
//! (or a join or poll) restores them: an event that exists durably (asked of [`KnownEvents`], a
//! read per instance every few seconds at most) is answered 503 with `Retry-After`, never 404.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use http::{HeaderValue, Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};

use crate::application::error::LineupError;
use crate::application::http::{request, response};
use crate::application::known_events::KnownEvents;
use crate::application::ports::availability::{
    layout_path, AvailabilityBoard, AvailabilityDocument, Projection,
};
use crate::application::ports::event_records::{DrawPublication, LayoutStore};
use crate::application::ports::queue::StatusBoard;
use crate::domain::draw::DrawSummary;
use crate::domain::event_settings::QueueState;
use crate::domain::ids::EventId;
use crate::domain::seat_allocation::SeatAllocations;
use crate::domain::status::{EventStatus, StatusInputs};

/// A published draw never changes: caches may keep it for good.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Misses (unknown events, a draw not yet published) are cached briefly.
const MISS_MAX_AGE: Duration = Duration::from_secs(5);

/// How long the redirect to the current layout may be cached (a re-seed shows within it).
const CURRENT_LAYOUT_MAX_AGE: Duration = Duration::from_secs(5);
/// The most layout documents one instance keeps (immutable; an 80,000-seat one is ~1 MB).
const MAX_LAYOUT_DOCUMENTS: usize = 8;
/// The most published draw summaries one instance keeps (a few hundred bytes each).
const MAX_DRAW_SUMMARIES: usize = 256;

/// What the `status` function's handler works with.
#[derive(Clone)]
pub struct StatusApi {
    /// The status documents the admit ticks publish (Redis).
    pub status: Arc<dyn StatusBoard>,
    /// The published draw: summaries and chunks.
    pub draw: Arc<dyn DrawPublication>,
    /// The seats' availability projection.
    pub seats: Arc<dyn AvailabilityBoard>,
    /// Where layout documents are stored (the events table).
    pub layouts: Arc<dyn LayoutStore>,
    /// This instance's layout documents already read.
    pub layout_documents: Arc<LayoutDocuments>,
    /// This instance's published draw summaries already read.
    pub published_draws: Arc<PublishedDraws>,
    /// Whether an event the cache does not know exists durably (then: 503, not 404).
    pub events: Arc<KnownEvents>,
}

/// Layout documents already read, by event and version: they never change. Concurrent misses
/// wait for one read instead of each reading the layout.
///
/// Only the event's current version is read from the table (checked first against the
/// projection's summary, one Redis read): made-up versions, however many, never reach it nor
/// queue behind the single read.
#[derive(Default)]
pub struct LayoutDocuments {
    documents: Mutex<HashMap<(EventId, String), Arc<String>>>,
    loading: tokio::sync::Mutex<()>,
}

impl LayoutDocuments {
    async fn get(
        &self,
        current: &dyn AvailabilityBoard,
        store: &dyn LayoutStore,
        events: &KnownEvents,
        event: &EventId,
        version: &str,
    ) -> Result<Option<Arc<String>>, LineupError> {
        let key = (event.clone(), version.to_owned());
        if let Some(document) = self.locked().get(&key) {
            return Ok(Some(document.clone()));
        }
        let summary = match current.summary(event).await? {
            Some(summary) => summary,
            // The seat map was lost with the cache: the durable current layout answers.
            None => events
                .current_layout(event)
                .await?
                .ok_or(LineupError::EventNotFound)?,
        };
        if summary.version != version {
            return Ok(None);
        }
        let _loading = self.loading.lock().await;
        if let Some(document) = self.locked().get(&key) {
            return Ok(Some(document.clone()));
        }
        let Some(document) = store.layout_document(event, version).await? else {
            return Ok(None);
        };
        let document = Arc::new(document);
        let mut documents = self.locked();
        if documents.len() >= MAX_LAYOUT_DOCUMENTS {
            documents.clear();
        }
        documents.insert(key, document.clone());
        Ok(Some(document))
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, HashMap<(EventId, String), Arc<String>>> {
        self.documents
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Published draw summaries already read, by event: a published draw never changes, so each
/// instance reads an event's summary once, not once per chunk it serves (at the opening, chunk
/// fetches come by the thousand a second, and the summary sits under the event's own key). A
/// draw not published yet is not remembered: it is asked for again.
#[derive(Default)]
pub struct PublishedDraws {
    summaries: Mutex<HashMap<EventId, Arc<DrawSummary>>>,
}

impl PublishedDraws {
    async fn get(
        &self,
        draws: &dyn DrawPublication,
        event: &EventId,
    ) -> Result<Arc<DrawSummary>, LineupError> {
        if let Some(summary) = self.locked().get(event) {
            return Ok(summary.clone());
        }
        let summary = Arc::new(
            draws
                .draw_summary(event)
                .await?
                .ok_or(LineupError::DrawNotPublished)?,
        );
        let mut summaries = self.locked();
        if summaries.len() >= MAX_DRAW_SUMMARIES {
            summaries.clear();
        }
        summaries.insert(event.clone(), summary.clone());
        Ok(summary)
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, HashMap<EventId, Arc<DrawSummary>>> {
        self.summaries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Answers one public request, errors included with a `Cache-Control` (1 s for a 5xx, 5 s
/// otherwise).
pub async fn handle(api: &StatusApi, request: Request) -> Response<Body> {
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

async fn route(api: &StatusApi, request: &Request) -> Result<Response<Body>, LineupError> {
    if request.method() != Method::GET {
        return Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        });
    }
    request::body_within(request, request::NO_INPUT_BODY_LIMIT)?;
    let route_key = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.route_key.as_deref(),
        _ => None,
    };
    // A priority group's line (`<event>.<group>`) has a status and a draw of its own; its
    // seats and layout are its event's, served under the event's id only.
    let line_route = matches!(
        route_key,
        Some(
            "GET /events/{eventId}/status"
                | "GET /events/{eventId}/draw"
                | "GET /events/{eventId}/draw/{prefix}"
        )
    );
    let raw_event = request::path_parameter(request, "eventId")?;
    let event = if line_route {
        EventId::parse_line(raw_event)?
    } else {
        EventId::parse(raw_event)?
    };
    match route_key {
        Some("GET /events/{eventId}/status") => match api.status.status_json(&event).await? {
            Some(status) => Ok(document(status, &EventStatus::cache_control())),
            None => match api.events.record(&event).await? {
                None => Err(LineupError::EventNotFound),
                // Nothing ticks a closed event again: its status comes from its record.
                Some(record) if record.settings.state == QueueState::Closed => {
                    let status = closed_from_record(&record)
                        .status(event.as_str(), std::time::SystemTime::now());
                    Ok(document(to_json(&status), &EventStatus::cache_control()))
                }
                // Lost with the cache: the admitter (or a join or poll) restores it.
                Some(_) => Err(LineupError::CacheRecovering),
            },
        },
        Some("GET /events/{eventId}/draw") => {
            let summary = api.published_draws.get(api.draw.as_ref(), &event).await?;
            Ok(document(to_json(summary.as_ref()), IMMUTABLE))
        }
        Some("GET /events/{eventId}/draw/{prefix}") => {
            draw_chunk(api, &event, request::path_parameter(request, "prefix")?).await
        }
        Some("GET /events/{eventId}/seats") => match api.seats.availability(&event).await? {
            // Lost with the cache (the admitter rebuilds it for events it ticks), or never
            // seeded. A closed event is not ticked: its seat map is not kept after a loss.
            Projection::NoLayout if api.events.current_layout(&event).await?.is_some() => {
                match api.events.record(&event).await? {
                    Some(record) if record.settings.state == QueueState::Closed => {
                        Err(LineupError::NotFound(
                            "this event is closed: its seat map is no longer served",
                        ))
                    }
                    _ => Err(LineupError::AvailabilityRebuilding),
                }
            }
            Projection::NoLayout => Err(LineupError::EventNotFound),
            Projection::Rebuilding(_) => Err(LineupError::AvailabilityRebuilding),
            Projection::Ready(availability) => {
                // Sections set aside for a presale group are said so (ADR 0032), from the
                // event's record as this instance last read it (at most a few seconds old).
                // Only a label: the hold enforces the allocation on each seat, so a record that
                // cannot be read now leaves the seat map served without it.
                let allocations = match api.events.record(&event).await {
                    Ok(record) => record
                        .map(|record| SeatAllocations::of(&record.settings.groups))
                        .unwrap_or_default(),
                    Err(error) => {
                        tracing::warn!(
                            event = %event,
                            error = &error as &(dyn std::error::Error + 'static),
                            "the event's record could not be read; seat map served without the sections set aside"
                        );
                        SeatAllocations::default()
                    }
                };
                let seat_map = AvailabilityDocument::new(&event, &availability)
                    .set_aside(&allocations, std::time::SystemTime::now());
                Ok(document(
                    to_json(&seat_map),
                    AvailabilityDocument::cache_control(),
                ))
            }
        },
        Some("GET /events/{eventId}/layout") => {
            let summary = match api.seats.summary(&event).await? {
                Some(summary) => summary,
                // The seat map was lost with the cache: the durable current layout answers.
                None => api
                    .events
                    .current_layout(&event)
                    .await?
                    .ok_or(LineupError::EventNotFound)?,
            };
            let answer = Response::builder()
                .status(StatusCode::FOUND)
                .header(LOCATION, layout_path(&event, &summary.version))
                .body(Body::Empty)
                .expect("a status and a path make a valid response");
            Ok(with_cache_control(
                answer,
                &format!("public, max-age={}", CURRENT_LAYOUT_MAX_AGE.as_secs()),
            ))
        }
        Some("GET /events/{eventId}/layout/{version}") => {
            let version = request::path_parameter(request, "version")?;
            let well_formed = version.len() == 16
                && version
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            if !well_formed {
                return Err(LineupError::invalid(
                    "invalid_layout_version",
                    "a layout version is 16 lowercase hex digits",
                ));
            }
            let layout = api
                .layout_documents
                .get(
                    api.seats.as_ref(),
                    api.layouts.as_ref(),
                    &api.events,
                    &event,
                    version,
                )
                .await?
                .ok_or(LineupError::NotFound(
                    "this event has no such layout version",
                ))?;
            Ok(document(layout.as_ref().clone(), IMMUTABLE))
        }
        _ => Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        }),
    }
}

async fn draw_chunk(
    api: &StatusApi,
    event: &EventId,
    prefix: &str,
) -> Result<Response<Body>, LineupError> {
    // Only the chunk names the summary announces; anything else is not a chunk.
    let summary = api.published_draws.get(api.draw.as_ref(), event).await?;
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
        .draw_chunk(event, prefix)
        .await?
        .ok_or(LineupError::DrawNotPublished)?;
    Ok(document(to_json(&chunk), IMMUTABLE))
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("published documents are plain data and always serialise")
}

/// A closed event's status from its durable record alone: nothing ticks a closed event, so
/// after a cache loss this is what its status route answers (nothing in it moves any more).
fn closed_from_record(
    record: &crate::application::ports::event_records::EventRecord,
) -> StatusInputs {
    let cursor = &record.cursor;
    let drawn = cursor.drawn && cursor.entrants.unwrap_or(0) > 0;
    StatusInputs {
        state: crate::domain::event_settings::QueueState::Closed,
        closed_reason: record.closed_reason.clone(),
        opens_at: record.settings.opens_at,
        serving: cursor.serving,
        measured_advance: None,
        configured_rate: record.settings.admit_per_second,
        last_number: cursor.next_number,
        waiting: 0,
        claim_window: record.settings.claim_window,
        seats_left: None,
        commitment: record.seed.commitment(),
        entrants: cursor.entrants,
        revealed_seed: drawn.then(|| record.seed.reveal().to_owned()),
        restored_at: None,
        pre_queue: None,
        edge_budget: crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
        first_call_at: None,
        pace: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::fakes::outage::Faulty;
    use crate::application::fakes::records::MemoryRecords;

    fn summary(event: &EventId) -> DrawSummary {
        DrawSummary {
            event_id: event.as_str().to_owned(),
            algorithm: "test".into(),
            seed: "0".repeat(64),
            commitment: "1".repeat(64),
            entrant_digest: "2".repeat(64),
            entrants: 3,
            prefix_length: 1,
            published_at: "2026-12-03T10:00:00Z".into(),
        }
    }

    #[tokio::test]
    async fn a_published_summary_is_read_once_per_instance_and_a_missing_one_every_time() {
        let records = MemoryRecords::new();
        let draws = PublishedDraws::default();
        let event = EventId::parse("gala").unwrap();

        for _ in 0..2 {
            assert!(matches!(
                draws.get(&records, &event).await,
                Err(LineupError::DrawNotPublished)
            ));
        }
        assert_eq!(records.calls("draw_summary"), 2, "a miss is not remembered");

        records
            .publish_draw(&event, &summary(&event), &[])
            .await
            .unwrap();
        for _ in 0..50 {
            let read = draws.get(&records, &event).await.unwrap();
            assert_eq!(*read, summary(&event));
        }
        assert_eq!(
            records.calls("draw_summary"),
            3,
            "one read for fifty chunk fetches"
        );
    }
}
