//! The seat catalogue: each event's seats with their sections and prices, kept in the function's
//! memory. A hold needs the prices to write the order's amount in the same single transaction;
//! reading them from DynamoDB on every hold would double its requests. Prices are re-checked
//! inside the hold's conditions, so a stale catalogue can refuse a seat but never misprice one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::ids::{EventId, SeatId};
use crate::ledger::{Seat, SeatLedger};
use crate::LineupError;

type EventSeats = Arc<HashMap<SeatId, Seat>>;

/// A request naming a seat the cached catalogue lacks reloads it, but not more often than this:
/// otherwise a stream of made-up seat ids would turn every request into a full seat-map read.
const MIN_RELOAD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Default)]
pub struct SeatCatalogue {
    events: Mutex<HashMap<EventId, (EventSeats, std::time::Instant)>>,
    /// One load at a time: requests that miss together wait for the first one's load instead of
    /// each reading the whole seat map.
    loading: tokio::sync::Mutex<()>,
}

impl SeatCatalogue {
    /// The seats asked for, from memory; the event is (re)loaded when it is unknown or a seat is
    /// missing. `Err(unknown_seats)` names seats the event does not have; `EventNotFound` when
    /// the event has no seats at all.
    pub async fn seats(
        &self,
        ledger: &dyn SeatLedger,
        event: &EventId,
        wanted: &[SeatId],
        now: SystemTime,
    ) -> Result<Vec<Seat>, LineupError> {
        let cached = self.cached(event);
        let usable = |cached: &(EventSeats, std::time::Instant)| {
            wanted.iter().all(|seat| cached.0.contains_key(seat))
                || cached.1.elapsed() < MIN_RELOAD_INTERVAL
        };
        let known = match cached {
            Some(cached) if usable(&cached) => cached.0,
            _ => {
                let _loading = self.loading.lock().await;
                match self.cached(event) {
                    // Loaded by another request while this one waited.
                    Some(cached) if usable(&cached) => cached.0,
                    _ => self.load(ledger, event, now).await?,
                }
            }
        };
        let unknown: Vec<String> = wanted
            .iter()
            .filter(|seat| !known.contains_key(*seat))
            .map(|seat| seat.as_str().to_owned())
            .collect();
        if !unknown.is_empty() {
            return Err(LineupError::UnknownSeats(unknown));
        }
        Ok(wanted
            .iter()
            .filter_map(|seat| known.get(seat).cloned())
            .collect())
    }

    fn cached(&self, event: &EventId) -> Option<(EventSeats, std::time::Instant)> {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(event)
            .cloned()
    }

    async fn load(
        &self,
        ledger: &dyn SeatLedger,
        event: &EventId,
        now: SystemTime,
    ) -> Result<EventSeats, LineupError> {
        let seats = ledger.seat_map(event, now).await?;
        if seats.is_empty() {
            return Err(LineupError::EventNotFound);
        }
        let seats: EventSeats = Arc::new(
            seats
                .into_iter()
                .map(|seat| (seat.seat_id.clone(), seat))
                .collect(),
        );
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(event.clone(), (seats.clone(), std::time::Instant::now()));
        Ok(seats)
    }
}
