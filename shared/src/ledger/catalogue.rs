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

#[derive(Default)]
pub struct SeatCatalogue {
    events: Mutex<HashMap<EventId, EventSeats>>,
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
        let known = match cached {
            Some(seats) if wanted.iter().all(|seat| seats.contains_key(seat)) => seats,
            _ => self.load(ledger, event, now).await?,
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

    fn cached(&self, event: &EventId) -> Option<EventSeats> {
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
            .insert(event.clone(), seats.clone());
        Ok(seats)
    }
}
