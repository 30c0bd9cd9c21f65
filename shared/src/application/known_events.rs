//! What one instance knows of events' durable records, for a few seconds: so a crowd asking
//! about an event the cache lost costs one DynamoDB read per instance per [`RECORD_MAX_AGE`],
//! and made-up event ids cost no more than real ones (each kept as unknown). A route that finds
//! an event missing in the cache asks here whether it exists: 503 while it is being restored,
//! 404 only for an event that does not exist.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::application::error::LineupError;
use crate::application::ports::event_records::{EventRecord, EventRecords, LayoutStore};
use crate::domain::ids::EventId;
use crate::domain::layout::LayoutSummary;

/// How long an instance trusts what it read (a record, a current layout, or their absence).
pub const RECORD_MAX_AGE: Duration = Duration::from_secs(5);
/// The most events an instance keeps per kind (made-up ids included).
const EVENTS_KEPT: usize = 1_024;

type Kept<T> = Mutex<HashMap<EventId, (Option<T>, Instant)>>;

/// One instance's short-lived memory of events' records and current layouts (or their absence).
pub struct KnownEvents {
    records: Arc<dyn EventRecords>,
    layouts: Arc<dyn LayoutStore>,
    kept_records: Kept<EventRecord>,
    kept_layouts: Kept<LayoutSummary>,
    /// One durable read at a time per instance: concurrent misses wait for it.
    loading: tokio::sync::Mutex<()>,
}

fn fresh<T: Clone>(kept: &Kept<T>, event: &EventId) -> Option<Option<T>> {
    kept.lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(event)
        .filter(|(_, at)| at.elapsed() < RECORD_MAX_AGE)
        .map(|(value, _)| value.clone())
}

fn keep<T>(kept: &Kept<T>, event: &EventId, value: Option<T>) {
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= EVENTS_KEPT && !kept.contains_key(event) {
        kept.retain(|_, (_, at)| at.elapsed() < RECORD_MAX_AGE);
        if kept.len() >= EVENTS_KEPT {
            kept.clear();
        }
    }
    kept.insert(event.clone(), (value, Instant::now()));
}

impl KnownEvents {
    /// An empty memory over these stores: the first question about each event reads them.
    pub fn new(records: Arc<dyn EventRecords>, layouts: Arc<dyn LayoutStore>) -> Self {
        Self {
            records,
            layouts,
            kept_records: Mutex::default(),
            kept_layouts: Mutex::default(),
            loading: tokio::sync::Mutex::new(()),
        }
    }

    /// The event's record, at most [`RECORD_MAX_AGE`] old (`None`: no such event).
    pub async fn record(&self, event: &EventId) -> Result<Option<EventRecord>, LineupError> {
        if let Some(known) = fresh(&self.kept_records, event) {
            return Ok(known);
        }
        let _loading = self.loading.lock().await;
        if let Some(known) = fresh(&self.kept_records, event) {
            return Ok(known);
        }
        let record = self.records.event(event).await?;
        keep(&self.kept_records, event, record.clone());
        Ok(record)
    }

    /// The record just read elsewhere (fresh from the table), kept for the next callers.
    pub fn remember(&self, event: &EventId, record: Option<EventRecord>) {
        keep(&self.kept_records, event, record);
    }

    /// Known as no event, recently (no read).
    pub fn recently_unknown(&self, event: &EventId) -> bool {
        matches!(fresh(&self.kept_records, event), Some(None))
    }

    /// Whether the event exists durably.
    pub async fn exists(&self, event: &EventId) -> Result<bool, LineupError> {
        Ok(self.record(event).await?.is_some())
    }

    /// The event's current seat layout summary, at most [`RECORD_MAX_AGE`] old (`None`: no
    /// seats seeded, or no such event).
    pub async fn current_layout(
        &self,
        event: &EventId,
    ) -> Result<Option<LayoutSummary>, LineupError> {
        if let Some(known) = fresh(&self.kept_layouts, event) {
            return Ok(known);
        }
        let _loading = self.loading.lock().await;
        if let Some(known) = fresh(&self.kept_layouts, event) {
            return Ok(known);
        }
        let summary = self.layouts.current_layout(event).await?;
        keep(&self.kept_layouts, event, summary.clone());
        Ok(summary)
    }
}
