//! Per-event on-sale settings. Their durable home is the event's record in DynamoDB
//! ([`crate::application::ports::event_records`]); a copy lives in Redis beside the event's queue so that every queue
//! script reads them in the same atomic step as the queue itself, and is re-loaded from DynamoDB
//! when the cache loses it.
//!
//! The event's draw seed is deliberately not part of [`EventSettings`]: it is made once, the
//! first time the event is configured, and never changed or shown by an operator's command
//! (showing it before the draw would let anyone compute the draw). See [`crate::domain::draw`].

use std::time::{Duration, SystemTime};

use crate::domain::priority_group::PriorityGroups;
use crate::domain::proof_of_work::ChallengeDifficulty;

/// Whether the queue takes new customers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Joins are accepted. Before `opens_at` they go to the pre-queue.
    Open,
    /// An operator stopped admission for a while: joins and places stay, nobody is admitted.
    Paused,
    /// Sold out or closed by an operator: joins get 409 `queue_closed`, waiting polls say `closed`.
    Closed,
}

impl QueueState {
    /// The name stored in the settings (`open`, `paused`, `closed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Paused => "paused",
            Self::Closed => "closed",
        }
    }

    /// The state named by [`QueueState::as_str`]; `None` for any other text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "open" => Some(Self::Open),
            "paused" => Some(Self::Paused),
            "closed" => Some(Self::Closed),
            _ => None,
        }
    }
}

/// Why a closed queue is closed (stored beside the state as `closed_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosedReason {
    /// Every seat is sold (the expiry sweep closes it).
    SoldOut,
    /// An operator closed it: customers already admitted may still buy.
    Closed,
    /// An operator cancelled the event (`lineup event cancel`): nothing more is sold, every
    /// hold is refused, every payment is refunded. It is never opened again.
    Cancelled,
}

impl ClosedReason {
    /// The name stored (`sold_out`, `closed`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SoldOut => "sold_out",
            Self::Closed => "closed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The reason named by [`ClosedReason::as_str`]; `None` for any other text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "sold_out" => Some(Self::SoldOut),
            "closed" => Some(Self::Closed),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }
}

/// An event's on-sale settings, as an operator configures them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSettings {
    /// Whether the queue takes customers and admits them.
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
    /// How long an admitted customer has to claim the admission (their client sees its number
    /// called on the status, then polls the origin) before the slot goes to the next number.
    pub claim_window: Duration,
    /// At most this many seats per customer for the event (paid, or held and not lapsed);
    /// `None`: no limit. Stored as the settings hash's `ticket_limit` field (absent when `None`),
    /// which the hold path reads in the same atomic step as the hold.
    pub ticket_limit: Option<u32>,
    /// The proof-of-work every new joiner must show ([`crate::domain::proof_of_work`]); 0 (the
    /// default) asks none. Stored as the settings hash's `challenge_difficulty` field (absent
    /// when 0), which the join script reads in the same atomic step as the join.
    pub challenge_difficulty: ChallengeDifficulty,
    /// Whether a new joiner must bring an access code ([`crate::domain::access_code`]; which
    /// accounts a code let in is durable, in DynamoDB). Stored as the settings hash's
    /// `code_required` field (`1`, absent when not required), which the join script reads in
    /// the same atomic step as the join.
    pub code_required: bool,
    /// The event's priority groups, first admitted first ([`crate::domain::priority_group`]);
    /// none: everyone waits in one line. Kept in the event's durable record (read by joins, a
    /// few seconds old at most); the cache holds only their names, in order (the settings
    /// hash's `group_lines`), for the admit tick to know which lines go first.
    pub groups: PriorityGroups,
}

impl EventSettings {
    /// `max_active` when the operator sets none.
    pub const DEFAULT_MAX_ACTIVE: u32 = 5_000;
    /// `admit_per_second` when the operator sets none.
    pub const DEFAULT_ADMIT_PER_SECOND: u32 = 50;
    /// `session` when the operator sets none: ten minutes to shop.
    pub const DEFAULT_SESSION: Duration = Duration::from_secs(10 * 60);
    /// A client near the front reads the status every 5 s through a CDN that keeps it 2 s, so it
    /// sees its number called within about 8 s; a minute leaves room for a slow network.
    pub const DEFAULT_CLAIM_WINDOW: Duration = Duration::from_secs(60);

    /// An open event with the default caps, opening at `opens_at`.
    pub fn opening_at(opens_at: SystemTime) -> Self {
        Self {
            state: QueueState::Open,
            opens_at,
            max_active: Self::DEFAULT_MAX_ACTIVE,
            admit_per_second: Self::DEFAULT_ADMIT_PER_SECOND,
            session: Self::DEFAULT_SESSION,
            claim_window: Self::DEFAULT_CLAIM_WINDOW,
            ticket_limit: None,
            challenge_difficulty: ChallengeDifficulty::NONE,
            code_required: false,
            groups: PriorityGroups::none(),
        }
    }

    /// The settings of one of its lines: the event's own for its general line; for a group's
    /// line, the event's caps, rate, session and state (every line admits into the same slots),
    /// opening at the group's opening, with no groups of its own.
    pub fn for_line(&self, line: &crate::domain::ids::EventId) -> Self {
        let Some(group) = line
            .group()
            .and_then(|name| self.groups.get(&name).cloned())
        else {
            return self.clone();
        };
        Self {
            opens_at: group.opens_at,
            groups: PriorityGroups::none(),
            ..self.clone()
        }
    }
}
