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
//! event is remembered too (as no seats), so repeating a made-up id does not turn every request
//! into reads. Memory is bounded however many made-up ids are asked for: at most
//! [`MAX_EVENTS`] events are kept, and when one must go, a remembered unknown event goes first
//! (then the longest-loaded one), so a flood of made-up ids cannot push real events out.

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
/// The most events one instance keeps (an instance serves a handful of live on-sales).
pub const MAX_EVENTS: usize = 256;

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
        let mut events = self
            .events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if events.len() >= MAX_EVENTS && !events.contains_key(event) {
            evict_one(&mut events);
        }
        events.insert(event.clone(), loaded.clone());
        Ok(loaded)
    }

    /// How many events are kept now.
    pub fn len(&self) -> usize {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn cached(&self, event: &EventId) -> Option<Arc<Loaded>> {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(event)
            .cloned()
    }
}

/// Makes room for one event: an unknown one (no seats) if any, else the longest-loaded one.
fn evict_one(events: &mut HashMap<EventId, Arc<Loaded>>) {
    let victim = events
        .iter()
        .min_by_key(|(_, loaded)| (!loaded.seats.is_empty(), loaded.at))
        .map(|(event, _)| event.clone());
    if let Some(victim) = victim {
        events.remove(&victim);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;

    use super::*;
    use crate::ids::OrderId;
    use crate::ledger::{HoldRequest, Order, SeatStatus};

    /// One real event with one seat; every other id has no seats. Counts reads per event.
    struct OneEvent {
        real: EventId,
        real_reads: AtomicUsize,
        other_reads: AtomicUsize,
    }

    #[async_trait]
    impl SeatLedger for OneEvent {
        async fn seat_map(
            &self,
            event: &EventId,
            _now: SystemTime,
        ) -> Result<Vec<Seat>, LineupError> {
            if *event != self.real {
                self.other_reads.fetch_add(1, Ordering::SeqCst);
                return Ok(Vec::new());
            }
            self.real_reads.fetch_add(1, Ordering::SeqCst);
            Ok(vec![Seat {
                seat_id: SeatId::parse("A-1").unwrap(),
                section: "Floor".to_owned(),
                price: 100,
                currency: "EUR".to_owned(),
                status: SeatStatus::Available,
            }])
        }
        async fn hold(&self, _: &HoldRequest) -> Result<Order, LineupError> {
            unreachable!("not used")
        }
        async fn order(&self, _: &OrderId) -> Result<Option<Order>, LineupError> {
            unreachable!("not used")
        }
        async fn release(&self, _: &Order) -> Result<(), LineupError> {
            unreachable!("not used")
        }
    }

    #[tokio::test]
    async fn made_up_event_ids_neither_grow_memory_nor_push_out_a_real_event() {
        let ledger = OneEvent {
            real: EventId::parse("real-event").unwrap(),
            real_reads: AtomicUsize::new(0),
            other_reads: AtomicUsize::new(0),
        };
        let catalogue = SeatCatalogue::default();
        let now = SystemTime::now();
        let wanted = [SeatId::parse("A-1").unwrap()];
        catalogue
            .seats(&ledger, &ledger.real, &wanted, now)
            .await
            .unwrap();
        for n in 0..5 * MAX_EVENTS {
            let made_up = EventId::parse(&format!("made-up-{n}")).unwrap();
            assert!(matches!(
                catalogue.seat_map(&ledger, &made_up, now).await,
                Err(LineupError::EventNotFound)
            ));
            assert!(
                catalogue.len() <= MAX_EVENTS,
                "{} events kept",
                catalogue.len()
            );
        }
        assert_eq!(ledger.other_reads.load(Ordering::SeqCst), 5 * MAX_EVENTS);
        // The real event is still cached: its seats come without another read.
        catalogue
            .seats(&ledger, &ledger.real, &wanted, now)
            .await
            .unwrap();
        assert_eq!(ledger.real_reads.load(Ordering::SeqCst), 1);
    }
}
