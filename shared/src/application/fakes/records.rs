//! `MemoryRecords`: an event's durable records (settings and draw seed, admission cursor, number
//! ceiling, the open events, the audit trail, layouts, the published draw) in memory, so the use
//! cases that read or write the events table can be unit-tested without DynamoDB. It keeps the
//! DynamoDB adapter's conditional writes (`adapters/dynamo/event_records.rs`): the seed is made on
//! the first save and never changed, a cursor is saved unless one further along is stored, the
//! number ceiling only goes up, times are stored in milliseconds, an empty draw chunk is not
//! stored but read as empty once the draw is published.
//!
//! It plays an outage ([`MemoryRecords::go_down`], [`MemoryRecords::fail_next`]: calls fail with
//! [`LineupError::Unavailable`] from [`Store::Seats`], the events table's store, changing
//! nothing).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::event_records::{
    AdmissionCursor, AuditEntry, AuditLog, DrawPublication, DrawPublished, EventRecord,
    EventRecords, GroupMembers, LayoutStore,
};
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::draw::{DrawChunk, DrawSeed, DrawSummary};
use crate::domain::event_settings::{EventSettings, QueueState};
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::layout::{LayoutSummary, SeatLayout};

/// One event's items in the events table.
#[derive(Default)]
struct EventItems {
    /// `STATE#SETTINGS`: the settings, the closing reason, the seed.
    settings: Option<(EventSettings, Option<String>, DrawSeed)>,
    /// `STATE#CURSOR`.
    cursor: Option<AdmissionCursor>,
    /// `STATE#NUMBERS`.
    ceiling: Option<u64>,
    /// `AUDIT#...`, in key order (time, then as written).
    audit: Vec<AuditEntry>,
    /// `MEMBER#<customer>`: a group line's imported members.
    members: BTreeSet<String>,
    /// `DRAW`.
    draw: Option<DrawSummary>,
    /// `DRAW#<event>#<prefix>`: non-empty chunks only.
    chunks: BTreeMap<String, DrawChunk>,
    /// `LAYOUT`: the current layout's summary.
    current_layout: Option<LayoutSummary>,
    /// `LAYOUT#<event>#<version>`: the documents as served.
    layouts: BTreeMap<String, String>,
}

#[derive(Default)]
struct State {
    events: BTreeMap<EventId, EventItems>,
    /// `OPEN_EVENTS`.
    open: BTreeSet<EventId>,
    outage: Outage,
}

/// The events table in memory. Every port call counts in [`MemoryRecords::calls`].
#[derive(Default)]
pub(crate) struct MemoryRecords {
    state: Mutex<State>,
}

/// Settings as read back: times in whole milliseconds, as the table stores them.
fn as_stored(settings: &EventSettings) -> EventSettings {
    let millis = |duration: Duration| Duration::from_millis(duration.as_millis() as u64);
    EventSettings {
        opens_at: from_unix_millis(unix_millis(settings.opens_at)),
        session: millis(settings.session),
        claim_window: millis(settings.claim_window),
        ..settings.clone()
    }
}

impl MemoryRecords {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn enter(&self, operation: &'static str) -> Result<MutexGuard<'_, State>, LineupError> {
        let mut state = self.lock();
        state
            .outage
            .enter(Store::Seats, "memory events table", operation)?;
        Ok(state)
    }

    // --- Playing faults ---

    // --- Looking inside ---

    /// The stored cursor (`None`: never saved).
    pub(crate) fn cursor(&self, event: &EventId) -> Option<AdmissionCursor> {
        self.lock()
            .events
            .get(event)
            .and_then(|items| items.cursor.clone())
    }

    /// The stored number ceiling (`None`: never reserved).
    pub(crate) fn number_ceiling(&self, event: &EventId) -> Option<u64> {
        self.lock()
            .events
            .get(event)
            .and_then(|items| items.ceiling)
    }
}

#[async_trait]
impl GroupMembers for MemoryRecords {
    async fn is_member(&self, line: &EventId, customer: &CustomerId) -> Result<bool, LineupError> {
        let state = self.enter("is_member")?;
        Ok(state
            .events
            .get(line)
            .is_some_and(|items| items.members.contains(customer.as_str())))
    }

    async fn import_members(
        &self,
        line: &EventId,
        customers: &[CustomerId],
    ) -> Result<(), LineupError> {
        let mut state = self.enter("import_members")?;
        let items = state.events.entry(line.clone()).or_default();
        items
            .members
            .extend(customers.iter().map(|c| c.as_str().to_owned()));
        Ok(())
    }
}

/// Outages are played on the whole fake.
impl Faulty for MemoryRecords {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

#[async_trait]
impl EventRecords for MemoryRecords {
    async fn event(&self, event: &EventId) -> Result<Option<EventRecord>, LineupError> {
        let state = self.enter("event")?;
        let Some(items) = state.events.get(event) else {
            return Ok(None);
        };
        let Some((settings, closed_reason, seed)) = &items.settings else {
            return Ok(None);
        };
        Ok(Some(EventRecord {
            settings: settings.clone(),
            closed_reason: closed_reason.clone(),
            seed: seed.clone(),
            cursor: items.cursor.clone().unwrap_or_default(),
            number_ceiling: items.ceiling.unwrap_or(0),
        }))
    }

    /// The seed is made on the first save and kept (`if_not_exists`); the closing reason is set
    /// or removed with the settings; the open events follow the state.
    async fn save_settings(
        &self,
        event: &EventId,
        settings: &EventSettings,
        closed_reason: Option<&str>,
    ) -> Result<DrawSeed, LineupError> {
        let mut state = self.enter("save_settings")?;
        let items = state.events.entry(event.clone()).or_default();
        let seed = items
            .settings
            .as_ref()
            .map_or_else(DrawSeed::generate, |(_, _, seed)| seed.clone());
        items.settings = Some((
            as_stored(settings),
            closed_reason.map(str::to_owned),
            seed.clone(),
        ));
        if settings.state == QueueState::Closed {
            state.open.remove(event);
        } else {
            state.open.insert(event.clone());
        }
        Ok(seed)
    }

    /// Saved unless a cursor with a higher `serving` is stored; `Ok` either way.
    async fn save_cursor(
        &self,
        event: &EventId,
        cursor: &AdmissionCursor,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("save_cursor")?;
        let items = state.events.entry(event.clone()).or_default();
        let further = items
            .cursor
            .as_ref()
            .is_some_and(|stored| stored.serving > cursor.serving);
        if !further {
            items.cursor = Some(cursor.clone());
        }
        Ok(())
    }

    /// The ceiling only goes up; the one stored is returned.
    async fn reserve_numbers(&self, event: &EventId, at_least: u64) -> Result<u64, LineupError> {
        let mut state = self.enter("reserve_numbers")?;
        let items = state.events.entry(event.clone()).or_default();
        let ceiling = items
            .ceiling
            .map_or(at_least, |stored| stored.max(at_least));
        items.ceiling = Some(ceiling);
        Ok(ceiling)
    }

    async fn open_events(&self) -> Result<Vec<EventId>, LineupError> {
        let state = self.enter("open_events")?;
        Ok(state.open.iter().cloned().collect())
    }
}

#[async_trait]
impl AuditLog for MemoryRecords {
    async fn record(&self, event: &EventId, entry: &AuditEntry) -> Result<(), LineupError> {
        let mut state = self.enter("record")?;
        let audit = &mut state.events.entry(event.clone()).or_default().audit;
        // Keyed by time: an entry goes after every entry of its millisecond or before.
        let at = audit.partition_point(|kept| kept.at_ms <= entry.at_ms);
        audit.insert(at, entry.clone());
        Ok(())
    }

    async fn history(&self, event: &EventId) -> Result<Vec<AuditEntry>, LineupError> {
        let state = self.enter("history")?;
        Ok(state
            .events
            .get(event)
            .map(|items| items.audit.clone())
            .unwrap_or_default())
    }
}

#[async_trait]
impl DrawPublication for MemoryRecords {
    /// Empty chunks are not stored.
    async fn publish_chunks(
        &self,
        event: &EventId,
        chunks: &[DrawChunk],
    ) -> Result<(), LineupError> {
        let mut state = self.enter("publish_chunks")?;
        let items = state.events.entry(event.clone()).or_default();
        for chunk in chunks.iter().filter(|chunk| !chunk.entries.is_empty()) {
            items.chunks.insert(chunk.prefix.clone(), chunk.clone());
        }
        Ok(())
    }

    /// Written only when no summary is stored, as the adapter's conditional put.
    async fn publish_summary(
        &self,
        event: &EventId,
        summary: &DrawSummary,
    ) -> Result<DrawPublished, LineupError> {
        let mut state = self.enter("publish_summary")?;
        let items = state.events.entry(event.clone()).or_default();
        Ok(match &items.draw {
            None => {
                items.draw = Some(summary.clone());
                DrawPublished::Published
            }
            Some(published) if published.same_draw(summary) => DrawPublished::AlreadyPublished,
            Some(published) => DrawPublished::Conflict(Box::new(published.clone())),
        })
    }

    /// As the provided method (chunks and summary only if no draw is published), in one call:
    /// counted as `publish_draw`, not as the reads and writes it is made of.
    async fn publish_draw(
        &self,
        event: &EventId,
        summary: &DrawSummary,
        chunks: &[DrawChunk],
    ) -> Result<DrawPublished, LineupError> {
        let mut state = self.enter("publish_draw")?;
        let items = state.events.entry(event.clone()).or_default();
        if let Some(published) = &items.draw {
            return Ok(if published.same_draw(summary) {
                DrawPublished::AlreadyPublished
            } else {
                DrawPublished::Conflict(Box::new(published.clone()))
            });
        }
        for chunk in chunks.iter().filter(|chunk| !chunk.entries.is_empty()) {
            items.chunks.insert(chunk.prefix.clone(), chunk.clone());
        }
        items.draw = Some(summary.clone());
        Ok(DrawPublished::Published)
    }

    async fn draw_summary(&self, event: &EventId) -> Result<Option<DrawSummary>, LineupError> {
        let state = self.enter("draw_summary")?;
        Ok(state.events.get(event).and_then(|items| items.draw.clone()))
    }

    /// A stored chunk; an empty one when the draw is published; `None` when it is not.
    async fn draw_chunk(
        &self,
        event: &EventId,
        prefix: &str,
    ) -> Result<Option<DrawChunk>, LineupError> {
        let state = self.enter("draw_chunk")?;
        let Some(items) = state.events.get(event) else {
            return Ok(None);
        };
        if let Some(chunk) = items.chunks.get(prefix) {
            return Ok(Some(chunk.clone()));
        }
        Ok(items.draw.as_ref().map(|_| DrawChunk {
            prefix: prefix.to_owned(),
            entries: Vec::new(),
        }))
    }
}

#[async_trait]
impl LayoutStore for MemoryRecords {
    async fn store_layout(&self, event: &EventId, layout: &SeatLayout) -> Result<(), LineupError> {
        let mut state = self.enter("store_layout")?;
        state
            .events
            .entry(event.clone())
            .or_default()
            .layouts
            .insert(layout.version().to_owned(), layout.to_document(event));
        Ok(())
    }

    /// Not checked against the stored versions (the adapter does not check either).
    async fn set_current_layout(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("set_current_layout")?;
        state
            .events
            .entry(event.clone())
            .or_default()
            .current_layout = Some(summary.clone());
        Ok(())
    }

    async fn current_layout(&self, event: &EventId) -> Result<Option<LayoutSummary>, LineupError> {
        let state = self.enter("current_layout")?;
        Ok(state
            .events
            .get(event)
            .and_then(|items| items.current_layout.clone()))
    }

    async fn layout_document(
        &self,
        event: &EventId,
        version: &str,
    ) -> Result<Option<String>, LineupError> {
        let state = self.enter("layout_document")?;
        Ok(state
            .events
            .get(event)
            .and_then(|items| items.layouts.get(version).cloned()))
    }
}
