//! Redis key names. All keys of one event share the hash tag `{ev:<id>}`, so they live in one
//! cluster slot (ElastiCache cluster mode and Serverless need that for multi-key scripts), while
//! different events spread over shards.

use crate::domain::ids::EventId;

/// The set of events whose queues the admitter ticks. It is not under an event's hash tag: it is
/// read once per tick, on its own, never inside an event's script.
pub const OPEN_EVENTS: &str = "lineup:open-events";

/// The names of one event's keys, all under its hash tag `{ev:<id>}`.
#[derive(Debug, Clone)]
pub struct EventKeys {
    /// HASH: `state` (open, paused, closed), `opens_at_ms`, `max_active`, `admit_per_sec`,
    /// `session_ms`, `claim_ms`, `ticket_limit` (absent: no limit), `challenge_difficulty`
    /// (absent: no proof-of-work asked at join), `draw_seed` (written once,
    /// never changed), `draw_commitment` (its hash, public), `next_number` (the last queue number
    /// handed out), `number_ceiling` (the highest number that may be handed out: reserved in
    /// the events table first), `number_block`, `numbers_reserved_at_ms` and
    /// `numbers_reserved_from` (the last reservation: its size, when, and the counter then, to
    /// size the next), `entrants` (set when the pre-queue closed: how many were in it), `drawn` (set
    /// once the pre-queue's numbers are in the queue), `seats_left` (as the expiry sweep last
    /// counted), `closed_reason`, and, set only when the hash was re-loaded from DynamoDB after a
    /// cache loss, `restored_at_ms`, `restored_serving` and `restored_lost_since_ms`.
    pub settings: String,
    /// SET of customers who joined before opening (the pre-queue), until it closes.
    pub prequeue: String,
    /// SET: the pre-queue as it was when it closed (renamed from `prequeue`), what the draw reads.
    pub entrants: String,
    /// SET of entrants who left between the pre-queue's closing and the draw's numbers.
    pub left: String,
    /// ZSET of waiting customers; score = queue number.
    pub queue: String,
    /// ZSET of admitted customers who have not claimed yet; score = the claim deadline, Unix ms.
    pub offered: String,
    /// ZSET of admitted customers who claimed; score = the admission's expiry, Unix milliseconds.
    pub active: String,
    /// HASH of admission bookkeeping: the rate token bucket (`tokens`, `refilled_at_ms`),
    /// `serving` (the highest queue number admitted so far) and its measured advance.
    pub admission: String,
    /// HASH customer → what was done for them after a cache loss (`placed` from their ticket,
    /// `expired`, or `token`: re-admitted from their access token), each at most once.
    pub restored: String,
    /// STRING with a TTL: whoever holds it is re-loading the event from DynamoDB after a loss.
    pub restore_lock: String,
    /// STRING with a TTL: whoever holds it is reserving the next range of queue numbers.
    pub numbers_lock: String,
    /// STRING: the public status document, JSON, written once per admit tick.
    pub status: String,
    /// STRING with a TTL: whoever holds it is running the pre-queue draw.
    pub draw_lock: String,
    /// HASH: the current seat layout, `version` and `summary` (JSON, [`crate::domain::layout::LayoutSummary`]).
    pub layout: String,
    /// STRING bitset, one bit per seat in layout order: set when the seat is available.
    pub seats_available: String,
    /// STRING bitset: set when the seat is sold.
    pub seats_sold: String,
    /// HASH index → status code (`A`, `H`, `S`): stream changes that came while the bitsets were
    /// missing, laid over them when they are rebuilt.
    pub seats_pending: String,
}

impl EventKeys {
    /// `event`'s key names: `{ev:<id>}:<name>`.
    pub fn new(event: &EventId) -> Self {
        let tag = format!("{{ev:{event}}}");
        let key = |name: &str| format!("{tag}:{name}");
        Self {
            settings: key("settings"),
            prequeue: key("prequeue"),
            entrants: key("entrants"),
            left: key("left"),
            queue: key("queue"),
            offered: key("offered"),
            active: key("active"),
            admission: key("admission"),
            restored: key("restored-places"),
            restore_lock: key("restore-lock"),
            numbers_lock: key("numbers-lock"),
            status: key("status"),
            draw_lock: key("draw-lock"),
            layout: key("layout"),
            seats_available: key("seats-available"),
            seats_sold: key("seats-sold"),
            seats_pending: key("seats-pending"),
        }
    }
}
