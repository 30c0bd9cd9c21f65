//! After a cache loss: putting an event and its customers back.
//!
//! Redis holds the queue, and a failover or flush can lose it. What survives is durable: each
//! event's settings, admission cursor and number ceiling in DynamoDB
//! ([`crate::application::ports::event_records`]), the published draw, and every customer's signed ticket (their
//! number, [`crate::domain::signing::QueueTicket`]) and access token. Whoever finds an event missing
//! re-loads it, numbering past every number ever handed out ([`crate::application::numbering`]); a customer
//! presenting a ticket issued before that is put back once: in the queue at their number if it
//! had not been called, admitted until their session would have ended (extended by the outage)
//! if it had, in the pre-queue if the event has not opened. A ticket issued after the restore is
//! not trusted to restore anything: its place was made in the cache as it is now, so if the
//! cache does not know it, its holder left.
//!
//! **Bounded cost.** A crowd finding the event missing at once makes one durable read: the
//! first takes the restore duty (a lock in the cache), the others are told to retry in a moment
//! (503 `queue_recovering`). Each instance keeps the records it read for [`RECORD_MAX_AGE`] (and
//! unknown events as unknown), one read at a time, and what was done for each customer is
//! remembered in the cache, so a repeat poll reads nothing durable.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::application::error::LineupError;
use crate::application::known_events::{KnownEvents, RECORD_MAX_AGE};
use crate::application::numbering::Numbering;
use crate::application::ports::event_records::{
    DrawPublication, EventRecord, EventRecords, GroupMembers, LayoutStore,
};
use crate::application::ports::queue::{
    NumberRanges, PlaceRestorer, RestoreDone, RestoreOutcome, RestoredPlace,
};
use crate::domain::draw::{DrawChunk, DrawSummary};
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::signing::QueueTicket;

/// How long the instance that takes the restore duty has it before another may.
const RESTORE_LOCK: Duration = Duration::from_secs(3);

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

/// The published draw as one instance read it: immutable once published, so kept (chunks up to
/// [`CHUNKS_KEPT`]); a draw not yet published is asked again after a few seconds.
#[derive(Default)]
struct DrawCache {
    summaries: Mutex<HashMap<EventId, (Option<DrawSummary>, Instant)>>,
    chunks: Mutex<HashMap<(EventId, String), Option<DrawChunk>>>,
}

/// The most draw chunks an instance keeps (about 12 KB each).
const CHUNKS_KEPT: usize = 4_096;

impl DrawCache {
    async fn number(
        &self,
        draw: &dyn DrawPublication,
        event: &EventId,
        entrant: &str,
    ) -> Result<Option<u64>, LineupError> {
        let known = self
            .summaries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(event)
            .filter(|(summary, at)| summary.is_some() || at.elapsed() < RECORD_MAX_AGE)
            .map(|(summary, _)| summary.clone());
        let summary = match known {
            Some(summary) => summary,
            None => {
                let summary = draw.draw_summary(event).await?;
                let mut summaries = self.summaries.lock().unwrap_or_else(|p| p.into_inner());
                if summaries.len() >= CHUNKS_KEPT {
                    summaries.clear();
                }
                summaries.insert(event.clone(), (summary.clone(), Instant::now()));
                summary
            }
        };
        let Some(summary) = summary else {
            return Ok(None);
        };
        let Some(prefix) = entrant.get(..summary.prefix_length) else {
            return Ok(None);
        };
        let key = (event.clone(), prefix.to_owned());
        let known = self
            .chunks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let chunk = match known {
            Some(chunk) => chunk,
            None => {
                let chunk = draw.draw_chunk(event, prefix).await?;
                let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
                if chunks.len() >= CHUNKS_KEPT {
                    chunks.clear();
                }
                chunks.insert(key, chunk.clone());
                chunk
            }
        };
        Ok(chunk.and_then(|chunk| chunk.number_of(entrant)))
    }
}

/// Puts events and customers back after a cache loss; one per instance, shared by its requests.
pub struct Restorer {
    /// The cache's side of a restore: the lock, the event, each customer's place.
    pub queue: Arc<dyn PlaceRestorer>,
    /// The durable records events are re-loaded from.
    pub records: Arc<dyn EventRecords>,
    /// The published draw, where a pre-queue entrant's number is found.
    pub draw: Arc<dyn DrawPublication>,
    /// Durable ranges of queue numbers (their top-ups, and the draw's reservation).
    pub numbers: Numbering,
    /// The records this instance read lately (shared with whoever asks whether an event exists).
    pub known: Arc<KnownEvents>,
    /// Who was imported into the event's priority groups (a join looks its caller up).
    pub members: Arc<dyn GroupMembers>,
    drawn: DrawCache,
}

impl Restorer {
    /// A restorer over one queue store (also its number ranges) and one records store (also
    /// its layouts), with nothing read yet.
    pub fn new<Q, R>(queue: Arc<Q>, records: Arc<R>, draw: Arc<dyn DrawPublication>) -> Self
    where
        Q: PlaceRestorer + NumberRanges + 'static,
        R: EventRecords + LayoutStore + GroupMembers + 'static,
    {
        Self {
            queue: queue.clone(),
            members: records.clone(),
            records: records.clone(),
            draw,
            numbers: Numbering {
                ranges: queue,
                records: records.clone(),
            },
            known: Arc::new(KnownEvents::new(records.clone(), records)),
            drawn: DrawCache::default(),
        }
    }

    /// Whether the event exists durably (from the instance's recent reads): a route that finds
    /// it missing in the cache answers 503 for an event that exists, 404 for one that does not.
    pub async fn exists(&self, event: &EventId) -> Result<bool, LineupError> {
        self.known.exists(event).await
    }

    /// Re-loads `event` into the cache from its durable record if the cache lost it. `false`
    /// when there is no such event at all; [`LineupError::CacheRecovering`] while another caller
    /// is re-loading it.
    pub async fn restore_event(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        // A made-up id costs one read per instance every few seconds, and takes no lock (which
        // would make other instances answer it 503 instead of 404).
        if !self.known.exists(event).await? {
            return Ok(false);
        }
        if !self.queue.lock_restore(event, RESTORE_LOCK).await? {
            return Err(LineupError::CacheRecovering);
        }
        // Read after the loss was seen (never from the instance's memory): the number ceiling
        // must cover every number the lost cache handed out.
        let Some(record) = self.records.event(event).await? else {
            self.known.remember(event, None);
            return Ok(false);
        };
        self.known.remember(event, Some(record.clone()));
        let record = self.with_published_draw(event, record).await?;
        if self.queue.restore_event(event, &record, now).await? {
            tracing::warn!(event = %event, serving = record.cursor.serving, number_ceiling = record.number_ceiling, "event re-loaded into the cache from DynamoDB");
            // The alarm's metric, whoever found the event missing first (a join or a poll
            // often does, before the admitter).
            crate::application::metrics::emit(
                &[("EventId", event.as_str())],
                &[(
                    "EventMissingInCache",
                    1.0,
                    crate::application::metrics::Unit::Count,
                )],
            );
        }
        Ok(true)
    }

    /// A draw published before the loss stands. The cursor is saved after a tick that drew, so a
    /// draw that failed after its publication (its numbers half written, or the cache lost before
    /// they were) leaves a cursor that says "not drawn": re-loaded as it says, the next tick
    /// would draw again from what the cache has left of the entrant list (nothing, after a loss)
    /// and try to publish that. So the event is re-loaded as drawn, with the published count,
    /// and the entrants come back from their tickets with the published numbers. One read, only
    /// for an event whose cursor is not drawn.
    async fn with_published_draw(
        &self,
        event: &EventId,
        mut record: EventRecord,
    ) -> Result<EventRecord, LineupError> {
        if record.cursor.drawn {
            return Ok(record);
        }
        if let Some(published) = self.draw.draw_summary(event).await? {
            tracing::warn!(event = %event, entrants = published.entrants, "the cache was lost after the draw was published: re-loaded as drawn, from the published draw");
            record.cursor.drawn = true;
            record.cursor.entrants = Some(published.entrants);
        }
        Ok(record)
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
        // called before the loss (or about to be); numbers past it were waiting, and go back to
        // the queue even if admission has passed them since (they are then next in line; admission moves
        // through the pre-loss numbers slowly enough that this is rare: `admit_tick.lua`).
        let Some(context) = self.queue.restore_context(event, customer).await? else {
            return Ok(TicketRestore::Nothing);
        };
        match context.done {
            Some(RestoreDone::Expired) => return Ok(TicketRestore::Expired),
            // Put back already (and since left): nothing to restore, nothing durable to read.
            Some(_) => return Ok(TicketRestore::Nothing),
            None => {}
        }
        // A ticket made in the cache as it is now.
        if ticket.issued_at >= context.restored_at {
            return Ok(TicketRestore::Nothing);
        }
        let Some(record) = self.known.record(event).await? else {
            return Ok(TicketRestore::Nothing);
        };
        let number = match ticket.number {
            Some(number) => Some(number),
            // A pre-queue ticket: the number is in the published draw, if there is one yet.
            None => {
                self.drawn
                    .number(self.draw.as_ref(), event, &record.seed.entrant(customer))
                    .await?
            }
        };
        let place = match number {
            None if now < record.settings.opens_at => RestoredPlace::PreQueue,
            // The pre-queue closed but its draw is not published: nothing to go by.
            None => return Ok(TicketRestore::Nothing),
            Some(number) if number > context.serving => RestoredPlace::Queue { number },
            Some(number) => {
                // Called before the loss: admitted for as long as it could have lasted (the
                // claim window and a session from the call), plus the part of the outage that
                // fell inside that time (the customer could not claim while the cache was lost).
                let called_at = record.cursor.called_at(number).unwrap_or(now);
                let window_end = called_at + record.settings.claim_window + record.settings.session;
                let outage_start = context.lost_since.unwrap_or(context.restored_at);
                let lost_inside = context
                    .restored_at
                    .min(window_end)
                    .duration_since(outage_start.max(called_at))
                    .unwrap_or_default();
                let expires_at = window_end + lost_inside;
                if expires_at <= now {
                    RestoredPlace::Expired
                } else {
                    RestoredPlace::Admitted { expires_at }
                }
            }
        };
        let outcome = self
            .queue
            .restore_place(event, customer, ticket.issued_at, place)
            .await?;
        match outcome {
            RestoreOutcome::Restored => {
                tracing::info!(event = %event, ?place, "customer put back from their ticket");
                Ok(TicketRestore::Restored)
            }
            RestoreOutcome::Expired => Ok(TicketRestore::Expired),
            RestoreOutcome::AlreadyRestored | RestoreOutcome::NotRestorable => {
                Ok(TicketRestore::Nothing)
            }
        }
    }
}
