//! `MemoryAdmissions`: what `hold` and `confirm` ask the queue (is this admission still live,
//! with the event's ticket limit; end it once paid; the ticket limit now), in memory, so those
//! use cases can be unit-tested without Redis. It answers as the Redis adapter and its scripts do
//! (`adapters/redis/queue.rs`, `is_admitted.lua`, `end_admission.lua`): an admission is the
//! customer's score in the active set (the end of their session, in milliseconds), live only if
//! the token's expiry is that very score and still ahead; an event the cache has lost answers
//! [`LineupError::CacheRecovering`]; after a restore, a token for an admission claimed before it
//! puts its holder back, once per customer; a cancelled event refuses every admission
//! ([`LineupError::EventCancelled`]).
//!
//! It plays a cache loss ([`MemoryAdmissions::forget_event`]) and an outage
//! ([`MemoryAdmissions::go_down`], [`MemoryAdmissions::fail_next`]: calls fail with
//! [`LineupError::Unavailable`] from [`Store::Queue`], changing nothing).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::ledger::TicketLimits;
use crate::application::ports::queue::{AdmissionRegistry, LiveAdmission};
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::ids::{CustomerId, EventId};

/// What the cache holds of one event for the shopping side.
#[derive(Default)]
struct EventAdmissions {
    ticket_limit: Option<u32>,
    /// The active set: customer → end of the admission (ms).
    active: HashMap<CustomerId, u64>,
    /// Restored from the durable record at this time, with this session length (the
    /// settings' `restored_at_ms`, `session_ms`).
    restored: Option<(u64, u64)>,
    /// Customers put back from their token since the restore.
    restored_from_token: BTreeSet<CustomerId>,
    /// `closed_reason` is `cancelled`.
    cancelled: bool,
}

#[derive(Default)]
struct State {
    events: HashMap<EventId, EventAdmissions>,
    outage: Outage,
}

/// Admissions and ticket limits in memory. Every port call counts in
/// [`MemoryAdmissions::calls`].
#[derive(Default)]
pub(crate) struct MemoryAdmissions {
    state: Mutex<State>,
}

impl MemoryAdmissions {
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
            .enter(Store::Queue, "memory queue", operation)?;
        Ok(state)
    }

    // --- Setting up ---

    /// The event exists in the cache, with this ticket limit (`None`: no limit).
    pub(crate) fn open_event(&self, event: &EventId, ticket_limit: Option<u32>) {
        self.lock()
            .events
            .entry(event.clone())
            .or_default()
            .ticket_limit = ticket_limit;
    }

    /// Sets (or removes) the event's ticket limit, as an operator's change does.
    pub(crate) fn set_ticket_limit(&self, event: &EventId, ticket_limit: Option<u32>) {
        self.open_event(event, ticket_limit);
    }

    /// `customer` claimed an admission to `event` that ends at `until` (their score in the
    /// active set; the token's expiry). Replaces any admission they had.
    pub(crate) fn admit(&self, event: &EventId, customer: &CustomerId, until: SystemTime) {
        self.lock()
            .events
            .entry(event.clone())
            .or_default()
            .active
            .insert(customer.clone(), unix_millis(until));
    }

    /// The customer left (or was otherwise removed from the active set).
    pub(crate) fn remove(&self, event: &EventId, customer: &CustomerId) {
        if let Some(known) = self.lock().events.get_mut(event) {
            known.active.remove(customer);
        }
    }

    /// The event is cancelled (`close.lua` with the reason `cancelled`).
    pub(crate) fn cancel_event(&self, event: &EventId) {
        if let Some(known) = self.lock().events.get_mut(event) {
            known.cancelled = true;
        }
    }

    // --- Playing faults ---

    /// A cache loss of one event: its settings and admissions forgotten.
    pub(crate) fn forget_event(&self, event: &EventId) {
        self.lock().events.remove(event);
    }

    /// The event re-loaded from its durable record at `at` (empty active set), with admissions
    /// of `session`: tokens of admissions claimed before `at` are honoured once per customer.
    pub(crate) fn restore_event(
        &self,
        event: &EventId,
        ticket_limit: Option<u32>,
        at: SystemTime,
        session: Duration,
    ) {
        self.lock().events.insert(
            event.clone(),
            EventAdmissions {
                ticket_limit,
                restored: Some((unix_millis(at), session.as_millis() as u64)),
                ..EventAdmissions::default()
            },
        );
    }

    // --- Looking inside ---

    /// When the customer's admission ends, if they are in the active set.
    pub(crate) fn admitted_until(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Option<SystemTime> {
        self.lock()
            .events
            .get(event)
            .and_then(|known| known.active.get(customer).copied())
            .map(from_unix_millis)
    }
}

/// Outages are played on the whole fake.
impl Faulty for MemoryAdmissions {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

#[async_trait]
impl AdmissionRegistry for MemoryAdmissions {
    /// `is_admitted.lua`.
    async fn live_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
        now: SystemTime,
    ) -> Result<Option<LiveAdmission>, LineupError> {
        let mut state = self.enter("live_admission")?;
        let Some(known) = state.events.get_mut(event) else {
            return Err(LineupError::CacheRecovering);
        };
        if known.cancelled {
            return Err(LineupError::EventCancelled);
        }
        let (expires, now) = (unix_millis(expires_at), unix_millis(now));
        let score = known.active.get(customer).copied();
        let live = LiveAdmission {
            expires_at,
            ticket_limit: known.ticket_limit,
        };
        if score.is_some_and(|score| score == expires && score > now) {
            return Ok(Some(live));
        }
        let from_before_the_restore = known.restored.is_some_and(|(restored_at, session)| {
            score.is_none() && expires > now && expires.saturating_sub(session) < restored_at
        });
        if from_before_the_restore && known.restored_from_token.insert(customer.clone()) {
            known.active.insert(customer.clone(), expires);
            return Ok(Some(live));
        }
        Ok(None)
    }

    /// `end_admission.lua`: only the admission that ends at `expires_at`.
    async fn end_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("end_admission")?;
        let Some(known) = state.events.get_mut(event) else {
            return Ok(false);
        };
        if known.active.get(customer) == Some(&unix_millis(expires_at)) {
            known.active.remove(customer);
            return Ok(true);
        }
        Ok(false)
    }
}

#[async_trait]
impl TicketLimits for MemoryAdmissions {
    /// A lost event knows no limit: that is not "no limit" ([`LineupError::CacheRecovering`]).
    async fn ticket_limit(&self, event: &EventId) -> Result<Option<u32>, LineupError> {
        let state = self.enter("ticket_limit")?;
        state
            .events
            .get(event)
            .map(|known| known.ticket_limit)
            .ok_or(LineupError::CacheRecovering)
    }
}
