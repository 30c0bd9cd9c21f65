//! The queue ports: what the use cases need from the waiting room, one small trait per capability.
//! [`redis::RedisQueue`] implements them all, each operation as one atomic Lua script.

pub mod connection;
pub mod keys;
pub mod redis;

use std::time::SystemTime;

use async_trait::async_trait;

use crate::event_settings::EventSettings;
use crate::ids::{CustomerId, EventId};
use crate::LineupError;

/// Where a customer stands in an event's queue.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Waiting; `position` customers are ahead (0 = next).
    Waiting {
        position: u64,
        /// Admissions per second measured over the last windows, if any were measured yet.
        measured_rate: Option<f64>,
        /// The event's configured admission rate, the fallback for the ETA.
        configured_rate: u32,
        opens_at: SystemTime,
    },
    /// Admitted: may shop until `expires_at`.
    Admitted { expires_at: SystemTime },
    /// Was admitted, but the admission lapsed unused.
    Expired,
    /// Was waiting when the event sold out or was closed.
    Closed,
}

/// What joining did.
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    /// `false` when the customer already had a place (or an admission) and kept it.
    pub newly_queued: bool,
    pub standing: Standing,
}

/// What one admission tick did for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TickReport {
    pub admitted: u64,
    /// Live admissions after the tick.
    pub active: u64,
    /// Customers still waiting after the tick.
    pub waiting: u64,
}

/// The customer-facing side: join, look up, leave.
#[async_trait]
pub trait WaitingLine: Send + Sync {
    /// Puts `customer` in `event`'s queue, or keeps the place they already have.
    async fn join(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Joined, LineupError>;

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

/// The scheduled side: move customers from the head of the queue into the active set.
#[async_trait]
pub trait Admitter: Send + Sync {
    async fn open_events(&self) -> Result<Vec<EventId>, LineupError>;

    /// One tick: drop long-lapsed admissions, then admit up to the free slots and the rate budget.
    async fn admit_tick(&self, event: &EventId, now: SystemTime)
        -> Result<TickReport, LineupError>;
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
    async fn configure(&self, event: &EventId, settings: &EventSettings)
        -> Result<(), LineupError>;

    async fn settings(&self, event: &EventId) -> Result<Option<EventSettings>, LineupError>;

    /// Closes the event's queue (sold out): joins get 409, waiting customers' polls say `closed`.
    /// `false` when there is no such event.
    async fn close(&self, event: &EventId) -> Result<bool, LineupError>;
}
