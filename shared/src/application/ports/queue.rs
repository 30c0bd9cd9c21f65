//! The queue ports: what the use cases need from the waiting room, one small trait per capability.
//! [`crate::adapters::redis::queue::RedisQueue`] implements them all, each operation as one atomic Lua script.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::application::error::LineupError;
use crate::domain::access_code::CodeShown;
use crate::domain::draw::DrawSeed;
use crate::domain::event_settings::{ClosedReason, EventSettings};
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::proof_of_work::WorkShown;
use crate::domain::status::StatusInputs;

/// Where a customer stands in an event's queue.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Joined before opening: in the pre-queue, with no number until the draw at opening.
    PreQueue {
        /// When the pre-queue closes and the draw gives out numbers.
        opens_at: SystemTime,
        /// The customer's salted hash in the draw, to find their number once it is published.
        entrant: String,
    },
    /// Waiting with a queue number.
    Waiting {
        /// The customer's queue number: called once `serving` reaches it.
        number: u64,
        /// Customers still waiting ahead (0 = next); leavers are not counted.
        position: u64,
        /// The highest number admitted so far.
        serving: u64,
        /// How fast `serving` advances, numbers per second, once measured.
        measured_advance: Option<f64>,
        /// The event's configured admission rate, the fallback for the ETA.
        configured_rate: u32,
        /// When admission starts (or started): before it, nobody is called.
        opens_at: SystemTime,
    },
    /// Admitted: may shop until `expires_at`.
    Admitted {
        /// When the admission ends; also what identifies it in the active set.
        expires_at: SystemTime,
    },
    /// Was admitted, but the admission (or the time to claim it) lapsed unused.
    Expired,
    /// Was waiting when the event sold out or was closed.
    Closed,
}

/// What joining did.
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    /// `false` when the customer already had a place (or an admission) and kept it.
    pub newly_queued: bool,
    /// Where the customer stands after joining.
    pub standing: Standing,
    /// The range of numbers the queue may hand out is running low and this caller took the
    /// duty to reserve the next one ([`crate::application::numbering`]).
    pub top_up_numbers: bool,
}

/// What one admission tick did for one event, and what the event's public status is after it.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// Customers this tick admitted (0 for a plan or a publish-only tick).
    pub admitted: u64,
    /// Admitted customers shopping or still able to claim, after the tick.
    pub active: u64,
    /// Customers still waiting with a number after the tick.
    pub waiting: u64,
    /// The pre-queue closed and its draw has not been written yet: the admitter runs it.
    pub needs_draw: bool,
    /// The pre-queue's numbers are written (or it closed empty).
    pub drawn: bool,
    /// How long an admission lasts (the admitter keeps the cursor's checkpoints that long).
    pub session: Duration,
    /// What the public status was made from (the adapter also publishes it).
    pub status: StatusInputs,
}

/// The customer-facing side: join, look up, leave.
#[async_trait]
pub trait WaitingLine: Send + Sync {
    /// Puts `customer` in `event`'s queue, or keeps the place they already have. A customer
    /// who would be stored anew must have shown the event's proof-of-work: `work` is what the
    /// request showed (its proof checked by the caller); too little is
    /// [`LineupError::ChallengeRefused`], with nothing stored. Then, to an event that requires
    /// an access code, `code` must be [`CodeShown::lets_in`]: else [`LineupError::CodeRequired`],
    /// with nothing stored (the caller checks the code durably and joins again).
    async fn join_with_work(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
        work: WorkShown,
        code: CodeShown,
    ) -> Result<Joined, LineupError>;

    /// [`WaitingLine::join_with_work`] for callers that are not a customer's request (operators'
    /// tools, tests, benchmarks): no proof-of-work or access code is asked of them.
    async fn join(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Joined, LineupError> {
        self.join_with_work(event, customer, now, WorkShown::Exempt, CodeShown::Exempt)
            .await
    }

    /// `Ok(None)` when the customer has no entry (never joined, left, or long expired).
    async fn standing(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Option<Standing>, LineupError>;

    /// Leaves the queue or gives up the admission. `false` when there was nothing to leave.
    async fn leave(&self, event: &EventId, customer: &CustomerId) -> Result<bool, LineupError>;
}

/// Where a restored customer goes back to (see [`crate::application::restore`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RestoredPlace {
    /// Back in the queue at their number.
    Queue {
        /// The number their ticket carries.
        number: u64,
    },
    /// Back in the pre-queue (the cache was lost before opening).
    PreQueue,
    /// Their number was called before the loss: admitted, until `expires_at`.
    Admitted {
        /// When the restored admission ends.
        expires_at: SystemTime,
    },
    /// Their number was called before the loss and their time is over (remembered, so a
    /// repeat poll needs nothing durable).
    Expired,
}

/// Where an event stood when it was re-loaded after a cache loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreContext {
    /// When the event was re-loaded: tickets issued before it may be put back.
    pub restored_at: SystemTime,
    /// The highest number called before the loss (as durable: numbers are called only once the
    /// events table says admission may reach them).
    pub serving: u64,
    /// The last durable save before the loss: the cache may have been lost any time after it.
    pub lost_since: Option<SystemTime>,
    /// What was already done for the customer asked about since the restore (each customer is
    /// put back at most once).
    pub done: Option<RestoreDone>,
}

/// What a restore did for one customer, remembered until the next loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreDone {
    /// Put back from their ticket (in the queue, the pre-queue, or admitted).
    Placed,
    /// Their number was called before the loss and their time is over.
    Expired,
    /// Re-admitted from their access token.
    Token,
}

/// What happened to a restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The customer was put back at the place asked for.
    Restored,
    /// Recorded as expired: the customer's turn came and went.
    Expired,
    /// This customer was already put back once since the loss.
    AlreadyRestored,
    /// The event was not restored, or the ticket is newer than the restore.
    NotRestorable,
}

/// After a cache loss: what the restore of a customer needs to know, and the restore itself.
#[async_trait]
pub trait PlaceRestorer: Send + Sync {
    /// When the event was last re-loaded from its durable record (`None`: never; nothing was
    /// lost), how far admission had come then, and whether `customer` was already put back.
    async fn restore_context(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Result<Option<RestoreContext>, LineupError>;

    /// Puts `customer` back, once, if their ticket (issued at `ticket_issued_at`) predates the
    /// restore.
    async fn restore_place(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket_issued_at: SystemTime,
        place: RestoredPlace,
    ) -> Result<RestoreOutcome, LineupError>;

    /// Re-loads an event's settings and cursor from its durable record, if they are missing.
    /// `true` when this call restored them. The record must have been read after the loss was
    /// seen (its number ceiling covers every number the lost cache handed out).
    async fn restore_event(
        &self,
        event: &EventId,
        record: &crate::application::ports::event_records::EventRecord,
        now: SystemTime,
    ) -> Result<bool, LineupError>;

    /// Takes the duty to re-load `event` for a while (`false`: someone else has it), so a crowd
    /// finding the event missing at once makes one durable read, not one each.
    async fn lock_restore(
        &self,
        event: &EventId,
        for_how_long: Duration,
    ) -> Result<bool, LineupError>;
}

/// The range of queue numbers the cache may hand out, as the cache holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NumberRange {
    /// The last number handed out.
    pub next_number: u64,
    /// The highest number that may be handed out (reserved in the events table first).
    pub ceiling: u64,
    /// The size of the last reservation, when it was made, and the counter then.
    pub block: u64,
    /// When the last reservation was made; `None` when none was recorded.
    pub reserved_at: Option<SystemTime>,
    /// `next_number` at that reservation: the numbers handed out since measure the demand.
    pub reserved_from: u64,
}

/// The cache's side of durable number ranges ([`crate::application::numbering`]).
#[async_trait]
pub trait NumberRanges: Send + Sync {
    /// `None` when the cache does not have the event.
    async fn number_range(&self, event: &EventId) -> Result<Option<NumberRange>, LineupError>;

    /// Raises the ceiling to `ceiling` (already durable) and frees the top-up duty. `false` when
    /// the cache does not have the event.
    async fn extend_numbers(
        &self,
        event: &EventId,
        ceiling: u64,
        block: u64,
        now: SystemTime,
    ) -> Result<bool, LineupError>;
}

/// The public status documents the admit ticks write.
#[async_trait]
pub trait StatusBoard: Send + Sync {
    /// The event's status as last published (JSON), `None` for an event never ticked.
    async fn status_json(&self, event: &EventId) -> Result<Option<String>, LineupError>;
}

/// The admitter's side of the pre-queue draw.
#[async_trait]
pub trait PreQueueDraw: Send + Sync {
    /// Takes the draw for a while (`false`: another admitter has it).
    async fn lock_draw(&self, event: &EventId, for_how_long: Duration)
        -> Result<bool, LineupError>;
    /// The event's draw seed.
    async fn draw_seed(&self, event: &EventId) -> Result<Option<DrawSeed>, LineupError>;
    /// Puts the entrants in the queue at their numbers (those who left meanwhile excepted).
    async fn write_numbers(
        &self,
        event: &EventId,
        numbers: &[(CustomerId, u64)],
    ) -> Result<(), LineupError>;
    /// The draw is written: admission may start, at `first_call_at` if that is after `now` (a
    /// paced opening: `wait_policy::first_call_at`).
    async fn mark_drawn(
        &self,
        event: &EventId,
        first_call_at: SystemTime,
        now: SystemTime,
    ) -> Result<(), LineupError>;
}

/// What a tick does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickMode {
    /// Admits nobody: the report's `serving` is where admission would stand after admitting
    /// now (the admitter makes that durable first).
    Plan,
    /// Admits up to the free slots and the rate budget, calling no number past `up_to`
    /// (`None`: no bound, for tests driving a queue by hand; `Some(0)`: nobody, a tick that only
    /// publishes the status).
    Admit {
        /// The highest number the tick may call (already durable in the events table).
        up_to: Option<u64>,
    },
}

/// The scheduled side: move customers from the head of the queue into the active set.
#[async_trait]
pub trait Admitter: Send + Sync {
    /// The events the admit loop ticks: every configured event whose queue is not closed.
    async fn open_events(&self) -> Result<Vec<EventId>, LineupError>;

    /// One tick: drop long-lapsed admissions, then plan or admit (see [`TickMode`]), and publish
    /// the event's status.
    async fn tick(
        &self,
        event: &EventId,
        now: SystemTime,
        mode: TickMode,
    ) -> Result<TickReport, LineupError>;

    /// A tick that admits with no durable bound: for tests that drive a queue by hand. The admit
    /// loop ([`crate::application::admit`]) never uses it.
    async fn admit_tick(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<TickReport, LineupError> {
        self.tick(event, now, TickMode::Admit { up_to: None }).await
    }

    /// A tick that admits nobody: it publishes the status as it is (after an operator's change,
    /// or the sold-out closing).
    async fn publish_tick(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<TickReport, LineupError> {
        self.tick(event, now, TickMode::Admit { up_to: Some(0) })
            .await
    }
}

/// A live admission, read in the same step as the event's rules that bind the shopping it allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveAdmission {
    /// When the admission ends (also its score in the active set: what identifies it).
    pub expires_at: SystemTime,
    /// The event's per-customer ticket limit (`None`: no limit).
    pub ticket_limit: Option<u32>,
}

/// Admissions as the shopping side sees them: is this one still live, and end it.
#[async_trait]
pub trait AdmissionRegistry: Send + Sync {
    /// The admission that expires at `expires_at`, if `customer` still holds it at `now`, with
    /// the event's rules for shopping under it; `None` when it was left, paid, replaced or lapsed.
    /// After a cache loss, an admission claimed before the restore is put back from the signed
    /// token that names it (once per customer); while the cache has lost the event,
    /// [`LineupError::CacheRecovering`].
    async fn live_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
        now: SystemTime,
    ) -> Result<Option<LiveAdmission>, LineupError>;

    /// Ends the admission that expires at `expires_at` (its customer paid), freeing the slot at
    /// once. Only that admission: a newer one of the same customer, or their place in the queue
    /// after joining again, is left alone. `false` when it was no longer live.
    async fn end_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
    ) -> Result<bool, LineupError>;
}

/// Operators' side: create or change an event's on-sale settings.
#[async_trait]
pub trait EventSettingsStore: Send + Sync {
    /// `seed` is the event's draw seed from its durable record (made once, never changed).
    async fn configure(
        &self,
        event: &EventId,
        settings: &EventSettings,
        seed: &DrawSeed,
    ) -> Result<(), LineupError>;

    /// The event's settings as the queue holds them; `None` for an event it does not have.
    async fn settings(&self, event: &EventId) -> Result<Option<EventSettings>, LineupError>;

    /// Closes the event's queue: joins get 409, waiting customers' polls say `closed`, the
    /// status says `sold_out`, `closed` or `cancelled`; a cancelled event's admissions stop
    /// holding seats too. `false` when there is no such event.
    async fn close(&self, event: &EventId, reason: ClosedReason) -> Result<bool, LineupError>;

    /// Records the count of seats not sold, for the public status.
    async fn set_seats_left(&self, event: &EventId, seats_left: u64) -> Result<(), LineupError>;
}
