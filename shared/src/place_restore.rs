//! After a cache loss: putting an event and its customers back.
//!
//! Redis holds the queue, and a failover or flush can lose it. What survives is durable: each
//! event's settings and admission cursor in DynamoDB ([`crate::event_records`]), the published
//! draw, and every customer's signed ticket (their number, [`crate::signing::QueueTicket`]).
//! Whoever finds an event missing re-loads it; a customer presenting a ticket issued before that
//! is put back once: in the queue at their number if it has not been called, admitted until
//! their session would have ended if it has (the cursor's checkpoints tell when it was called),
//! in the pre-queue if the event has not opened. A ticket issued after the restore is not
//! trusted to restore anything: its place was made in the cache as it is now, so if the cache
//! does not know it, its holder left.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::event_records::{DrawPublication, EventRecords};
use crate::ids::{CustomerId, EventId};
use crate::queue::{PlaceRestorer, RestoreOutcome, RestoredPlace};
use crate::signing::QueueTicket;
use crate::LineupError;

/// A made-up event id is looked up in DynamoDB at most this often per instance.
const REMEMBER_UNKNOWN_EVENTS: Duration = Duration::from_secs(5);
const UNKNOWN_EVENTS_KEPT: usize = 1_024;

/// What presenting a ticket to a cache that did not know its holder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketRestore {
    /// Put back: look the customer up again.
    Restored,
    /// Their number was called before the loss and their session is over.
    Expired,
    /// Nothing to restore (no loss, a ticket newer than the restore, or already restored).
    Nothing,
}

pub struct Restorer {
    pub queue: Arc<dyn PlaceRestorer>,
    pub records: Arc<dyn EventRecords>,
    pub draw: Arc<dyn DrawPublication>,
    unknown: Mutex<HashMap<EventId, Instant>>,
}

impl Restorer {
    pub fn new(
        queue: Arc<dyn PlaceRestorer>,
        records: Arc<dyn EventRecords>,
        draw: Arc<dyn DrawPublication>,
    ) -> Self {
        Self {
            queue,
            records,
            draw,
            unknown: Mutex::new(HashMap::new()),
        }
    }

    fn recently_unknown(&self, event: &EventId) -> bool {
        let unknown = self.unknown.lock().unwrap_or_else(|p| p.into_inner());
        unknown
            .get(event)
            .is_some_and(|since| since.elapsed() < REMEMBER_UNKNOWN_EVENTS)
    }

    fn remember_unknown(&self, event: &EventId) {
        let mut unknown = self.unknown.lock().unwrap_or_else(|p| p.into_inner());
        if unknown.len() >= UNKNOWN_EVENTS_KEPT {
            unknown.clear();
        }
        unknown.insert(event.clone(), Instant::now());
    }

    /// Re-loads `event` into the cache from its durable record if the cache lost it. `false`
    /// when there is no such event at all.
    pub async fn restore_event(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        if self.recently_unknown(event) {
            return Ok(false);
        }
        let Some(record) = self.records.event(event).await? else {
            self.remember_unknown(event);
            return Ok(false);
        };
        if self.queue.restore_event(event, &record, now).await? {
            tracing::warn!(event = %event, serving = record.cursor.serving, "event re-loaded into the cache from DynamoDB");
            // The alarm's metric, whoever found the event missing first (a join or a poll
            // often does, before the admitter).
            crate::metrics::emit(
                &[("EventId", event.as_str())],
                &[("EventMissingInCache", 1.0, crate::metrics::Unit::Count)],
            );
        }
        Ok(true)
    }

    /// Puts the holder of `ticket` back, if the cache lost them (see the module doc).
    pub async fn restore_ticket(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket: QueueTicket,
        now: SystemTime,
    ) -> Result<TicketRestore, LineupError> {
        // `serving` is where admission stood when the event was restored: numbers up to it were
        // called before the loss; numbers past it were waiting, and go back to the queue even if
        // admission has passed them since (they are then next in line).
        let Some(context) = self.queue.restore_context(event, customer).await? else {
            return Ok(TicketRestore::Nothing);
        };
        // Put back already (and since left), or a ticket made in the cache as it is now: nothing
        // to restore, and nothing durable to read for it.
        if context.already_restored || ticket.issued_at >= context.restored_at {
            return Ok(TicketRestore::Nothing);
        }
        let serving = context.serving;
        let Some(record) = self.records.event(event).await? else {
            return Ok(TicketRestore::Nothing);
        };
        let number = match ticket.number {
            Some(number) => Some(number),
            // A pre-queue ticket: the number is in the published draw, if there is one yet.
            None => {
                self.draw
                    .drawn_number(event, &record.seed.entrant(customer))
                    .await?
            }
        };
        let place = match number {
            None if now < record.settings.opens_at => RestoredPlace::PreQueue,
            // The pre-queue closed but its draw is not published: nothing to go by.
            None => return Ok(TicketRestore::Nothing),
            Some(number) if number > serving => RestoredPlace::Queue { number },
            Some(number) => {
                // Called before the loss: admitted for as long as it could have lasted.
                let called_at = record.cursor.called_at(number).unwrap_or(now);
                let expires_at = called_at + record.settings.claim_window + record.settings.session;
                if expires_at <= now {
                    return Ok(TicketRestore::Expired);
                }
                RestoredPlace::Admitted { expires_at }
            }
        };
        let outcome = self
            .queue
            .restore_place(event, customer, ticket.issued_at, place)
            .await?;
        if outcome == RestoreOutcome::Restored {
            tracing::info!(event = %event, ?place, "customer put back from their ticket");
            return Ok(TicketRestore::Restored);
        }
        Ok(TicketRestore::Nothing)
    }
}
