//! The seat catalogue: each event's seat map, kept in the function's memory.
//!
//! Two uses, two freshness rules:
//! - a hold needs the prices to write the order's amount in the same single transaction, and
//!   reading them on every hold would double its requests. Prices are re-checked inside the
//!   hold's conditions, so a stale catalogue can refuse a seat (409 `price_changed`, which
//!   drops the cached event) but never misprice one;
//! - the seat map route serves statuses that "may lag a few seconds": one read of the whole map
//!   per event per [`SEAT_MAP_MAX_AGE`] per instance, however many customers look.
//!
//! Concurrent misses wait for one load instead of each reading the whole map, and an unknown
//! event is remembered too (as no seats), so made-up ids cannot turn every request into reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::ids::{EventId, SeatId};
use crate::ledger::{Seat, SeatLedger};
use crate::LineupError;

/// How stale the seat map route's statuses may be.
pub const SEAT_MAP_MAX_AGE: Duration = Duration::from_secs(2);
/// How long prices are trusted before the map is read again.
const PRICES_MAX_AGE: Duration = Duration::from_secs(60);
/// A hold naming a seat the cached map lacks reloads it, but not more often than this.
const MIN_RELOAD_INTERVAL: Duration = Duration::from_secs(5);

struct Loaded {
    seats: Arc<Vec<Seat>>,
    by_id: Arc<HashMap<SeatId, Seat>>,
    at: Instant,
}

#[derive(Default)]
pub struct SeatCatalogue {
    events: Mutex<HashMap<EventId, Arc<Loaded>>>,
    loading: tokio::sync::Mutex<()>,
}

impl SeatCatalogue {
    /// The seats a hold asks for, with their prices. `UnknownSeats` names seats the event does
    /// not have; `EventNotFound` when the event has no seats at all.
    pub async fn seats(
        &self,
        ledger: &dyn SeatLedger,
        event: &EventId,
        wanted: &[SeatId],
        now: SystemTime,
    ) -> Result<Vec<Seat>, LineupError> {
        let usable = |loaded: &Loaded| {
            let age = loaded.at.elapsed();
            let has_all = wanted.iter().all(|seat| loaded.by_id.contains_key(seat));
            (has_all && age < PRICES_MAX_AGE) || age < MIN_RELOAD_INTERVAL
        };
        let loaded = self.get(ledger, event, now, usable).await?;
        if loaded.seats.is_empty() {
            return Err(LineupError::EventNotFound);
        }
        let unknown: Vec<String> = wanted
            .iter()
            .filter(|seat| !loaded.by_id.contains_key(*seat))
            .map(|seat| seat.as_str().to_owned())
            .collect();
        if !unknown.is_empty() {
            return Err(LineupError::UnknownSeats(unknown));
        }
        Ok(wanted
            .iter()
            .filter_map(|seat| loaded.by_id.get(seat).cloned())
            .collect())
    }

    /// The event's seat map, at most [`SEAT_MAP_MAX_AGE`] old. `EventNotFound` when it has no seats.
    pub async fn seat_map(
        &self,
        ledger: &dyn SeatLedger,
        event: &EventId,
        now: SystemTime,
    ) -> Result<Arc<Vec<Seat>>, LineupError> {
        let loaded = self
            .get(ledger, event, now, |loaded| {
                loaded.at.elapsed() < SEAT_MAP_MAX_AGE
            })
            .await?;
        if loaded.seats.is_empty() {
            return Err(LineupError::EventNotFound);
        }
        Ok(loaded.seats.clone())
    }

    /// Drops what is known of an event (its prices changed).
    pub fn forget(&self, event: &EventId) {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(event);
    }

    async fn get(
        &self,
        ledger: &dyn SeatLedger,
        event: &EventId,
        now: SystemTime,
        usable: impl Fn(&Loaded) -> bool,
    ) -> Result<Arc<Loaded>, LineupError> {
        if let Some(loaded) = self.cached(event).filter(|loaded| usable(loaded)) {
            return Ok(loaded);
        }
        let _loading = self.loading.lock().await;
        // Loaded by another request while this one waited?
        if let Some(loaded) = self.cached(event).filter(|loaded| usable(loaded)) {
            return Ok(loaded);
        }
        let seats = ledger.seat_map(event, now).await?;
        let loaded = Arc::new(Loaded {
            by_id: Arc::new(
                seats
                    .iter()
                    .map(|seat| (seat.seat_id.clone(), seat.clone()))
                    .collect(),
            ),
            seats: Arc::new(seats),
            at: Instant::now(),
        });
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(event.clone(), loaded.clone());
        Ok(loaded)
    }

    fn cached(&self, event: &EventId) -> Option<Arc<Loaded>> {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(event)
            .cloned()
    }
}
