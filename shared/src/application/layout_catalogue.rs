//! What a `hold` instance keeps in memory about seats:
//!
//! - each layout it has used, by event and version (immutable, so kept until pushed out): the
//!   seats' prices and places for every hold, without a read per hold;
//! - each event's current layout summary, for a couple of seconds (a re-seed is seen within
//!   them; a hold on the old layout is refused by its price condition, never mispriced);
//! - the seats it saw taken in the last few seconds (won by its own holds, or refused to them),
//!   which the availability it reads does not show yet: best-available skips them instead of
//!   trying them again.
//!
//! Memory stays bounded however many made-up event ids are asked for: at most
//! [`MAX_LAYOUTS`] layouts and [`MAX_EVENTS`] events are kept, and an unknown event is
//! remembered (as none) like a known one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::application::error::LineupError;
use crate::application::ports::availability::AvailabilityBoard;
use crate::application::ports::event_records::LayoutStore;
use crate::domain::ids::EventId;
use crate::domain::layout::{IndexedLayout, LayoutSummary};

/// How long an event's current layout is trusted.
const CURRENT_MAX_AGE: Duration = Duration::from_secs(2);
/// How long a seat seen taken is skipped (the availability catches up within about a second).
const RECENTLY_TAKEN_FOR: Duration = Duration::from_secs(3);
/// The most layouts kept (an 80,000-seat layout takes about 10 MB indexed).
pub const MAX_LAYOUTS: usize = 8;
/// The most events whose current layout (or absence) is kept.
pub const MAX_EVENTS: usize = 256;
/// The most recently taken seats kept per event.
const MAX_RECENT_PER_EVENT: usize = 4096;

type LayoutKey = (EventId, String);

/// One `hold` instance's memory of layouts and taken seats (see the module's doc).
#[derive(Default)]
pub struct LayoutCatalogue {
    layouts: Mutex<HashMap<LayoutKey, (Arc<IndexedLayout>, Instant)>>,
    current: Mutex<HashMap<EventId, (Option<LayoutSummary>, Instant)>>,
    recent: Mutex<HashMap<EventId, Vec<(u32, Instant)>>>,
    loading: tokio::sync::Mutex<()>,
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LayoutCatalogue {
    /// The event's current layout summary, at most `CURRENT_MAX_AGE` (2 s) old (`None`: no seats):
    /// from the seat map's projection, or, when the cache lost it, from the events table (holds
    /// go on while the admitter rebuilds the projection).
    pub async fn current(
        &self,
        board: &dyn AvailabilityBoard,
        store: &dyn LayoutStore,
        event: &EventId,
    ) -> Result<Option<LayoutSummary>, LineupError> {
        if let Some((summary, at)) = locked(&self.current).get(event) {
            if at.elapsed() < CURRENT_MAX_AGE {
                return Ok(summary.clone());
            }
        }
        let summary = match board.summary(event).await? {
            Some(summary) => Some(summary),
            None => store.current_layout(event).await?,
        };
        self.remember_current(event, summary.clone());
        Ok(summary)
    }

    /// Notes the summary an availability read just brought.
    pub fn remember_current(&self, event: &EventId, summary: Option<LayoutSummary>) {
        let mut current = locked(&self.current);
        if current.len() >= MAX_EVENTS && !current.contains_key(event) {
            // Unknown events go first, then the oldest.
            if let Some(victim) = current
                .iter()
                .min_by_key(|(_, (summary, at))| (summary.is_some(), *at))
                .map(|(event, _)| event.clone())
            {
                current.remove(&victim);
            }
        }
        current.insert(event.clone(), (summary, Instant::now()));
    }

    /// Drops the event's current summary (its prices changed: read it again).
    pub fn forget(&self, event: &EventId) {
        locked(&self.current).remove(event);
    }

    /// The layout of `version`, indexed; read once per version.
    pub async fn layout(
        &self,
        store: &dyn LayoutStore,
        event: &EventId,
        version: &str,
    ) -> Result<Arc<IndexedLayout>, LineupError> {
        let key = (event.clone(), version.to_owned());
        if let Some(layout) = self.cached(&key) {
            return Ok(layout);
        }
        let _loading = self.loading.lock().await;
        // Loaded by another request while this one waited?
        if let Some(layout) = self.cached(&key) {
            return Ok(layout);
        }
        let layout =
            store
                .layout(event, version)
                .await?
                .ok_or_else(|| LineupError::SeatStoreReply {
                    operation: "layout",
                    reply: format!("the current layout {version} is not stored"),
                })?;
        let indexed = Arc::new(IndexedLayout::new(Arc::new(layout)));
        let mut layouts = locked(&self.layouts);
        if layouts.len() >= MAX_LAYOUTS {
            if let Some(victim) = layouts
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone())
            {
                layouts.remove(&victim);
            }
        }
        layouts.insert(key, (indexed.clone(), Instant::now()));
        Ok(indexed)
    }

    fn cached(&self, key: &LayoutKey) -> Option<Arc<IndexedLayout>> {
        let mut layouts = locked(&self.layouts);
        let (layout, used) = layouts.get_mut(key)?;
        *used = Instant::now();
        Some(layout.clone())
    }

    /// Notes seats seen taken just now.
    pub fn taken(&self, event: &EventId, seats: impl IntoIterator<Item = u32>) {
        let now = Instant::now();
        let mut recent = locked(&self.recent);
        if recent.len() >= MAX_EVENTS && !recent.contains_key(event) {
            recent.retain(|_, seats| {
                seats
                    .iter()
                    .any(|(_, at)| at.elapsed() < RECENTLY_TAKEN_FOR)
            });
            if recent.len() >= MAX_EVENTS {
                return;
            }
        }
        let seats_of_event = recent.entry(event.clone()).or_default();
        seats_of_event.retain(|(_, at)| at.elapsed() < RECENTLY_TAKEN_FOR);
        seats_of_event.extend(seats.into_iter().map(|seat| (seat, now)));
        let excess = seats_of_event.len().saturating_sub(MAX_RECENT_PER_EVENT);
        seats_of_event.drain(..excess);
    }

    /// The seats seen taken in the last few seconds.
    pub fn recently_taken(&self, event: &EventId) -> std::collections::HashSet<u32> {
        locked(&self.recent)
            .get(event)
            .map(|seats| {
                seats
                    .iter()
                    .filter(|(_, at)| at.elapsed() < RECENTLY_TAKEN_FOR)
                    .map(|(seat, _)| *seat)
                    .collect()
            })
            .unwrap_or_default()
    }
}
