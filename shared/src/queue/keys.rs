//! Redis key names. All keys of one event share the hash tag `{ev:<id>}`, so they live in one
//! cluster slot (ElastiCache cluster mode and Serverless need that for multi-key scripts), while
//! different events spread over shards.

use crate::ids::EventId;

/// The set of events whose queues the admitter ticks. It is not under an event's hash tag: it is
/// read once per tick, on its own, never inside an event's script.
pub const OPEN_EVENTS: &str = "lineup:open-events";

#[derive(Debug, Clone)]
pub struct EventKeys {
    /// HASH: state, opens_at_ms, max_active, admit_per_sec, session_ms, `ticket_limit` (absent:
    /// no limit), `draw_seed` (the pre-queue draw's seed: written once, when the event is first
    /// configured, never changed) and `seq` (the join counter).
    pub settings: String,
    /// ZSET of waiting customers; score = join sequence number (1, 2, ...), or for the pre-queue
    /// a negative draw in [-2^52, -1] computed from `draw_seed` and the customer id.
    pub queue: String,
    /// ZSET of admitted customers; score = the admission's expiry, Unix milliseconds.
    pub active: String,
    /// HASH of admission bookkeeping: the rate token bucket (`tokens`, `refilled_at_ms`) and the
    /// measured admission rate for ETAs.
    pub admission: String,
}

impl EventKeys {
    pub fn new(event: &EventId) -> Self {
        let tag = format!("{{ev:{event}}}");
        Self {
            settings: format!("{tag}:settings"),
            queue: format!("{tag}:queue"),
            active: format!("{tag}:active"),
            admission: format!("{tag}:admission"),
        }
    }
}
