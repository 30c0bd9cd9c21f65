//! Per-event on-sale settings, kept in Redis beside the event's queue so that every queue script
//! reads them in the same atomic step as the queue itself.
//!
//! The event's pre-queue draw seed lives in the same Redis hash but is deliberately not part of
//! [`EventSettings`]: it is made once, by the store, the first time the event is configured, and
//! never changed or shown by an operator's command (re-rolling it would re-shuffle a pre-queue;
//! showing it before opening would let anyone compute every customer's draw). See
//! [`crate::queue::redis`].

use std::time::{Duration, SystemTime};

/// Whether the queue takes new customers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Joins are accepted. Before `opens_at` they go to the pre-queue.
    Open,
    /// Sold out or closed by an operator: joins get 409 `queue_closed`, waiting polls say `closed`.
    Closed,
}

impl QueueState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "open" => Some(Self::Open),
            "closed" => Some(Self::Closed),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSettings {
    pub state: QueueState,
    /// When admission starts. Customers who join earlier form the pre-queue, placed ahead of
    /// everyone who joins later in an order drawn from the event's seed and each customer id
    /// (so trying again never changes a place).
    pub opens_at: SystemTime,
    /// At most this many admitted customers shop at once.
    pub max_active: u32,
    /// Admissions per second: a token bucket refilled at this rate, holding at most one
    /// second's worth, so over any span of `d` seconds at most `rate × (d + 1)` are admitted.
    pub admit_per_second: u32,
    /// How long an admission lasts before its slot is given to the next customer.
    pub session: Duration,
    /// At most this many seats per customer for the event (paid, or held and not lapsed);
    /// `None`: no limit. Stored as the settings hash's `ticket_limit` field (absent when `None`),
    /// which the hold path reads in the same atomic step as the hold.
    pub ticket_limit: Option<u32>,
}

impl EventSettings {
    pub const DEFAULT_MAX_ACTIVE: u32 = 5_000;
    pub const DEFAULT_ADMIT_PER_SECOND: u32 = 50;
    pub const DEFAULT_SESSION: Duration = Duration::from_secs(10 * 60);

    /// An open event with the default caps, opening at `opens_at`.
    pub fn opening_at(opens_at: SystemTime) -> Self {
        Self {
            state: QueueState::Open,
            opens_at,
            max_active: Self::DEFAULT_MAX_ACTIVE,
            admit_per_second: Self::DEFAULT_ADMIT_PER_SECOND,
            session: Self::DEFAULT_SESSION,
            ticket_limit: None,
        }
    }
}
