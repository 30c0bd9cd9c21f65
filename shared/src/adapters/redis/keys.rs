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
    /// (absent: no proof-of-work asked at join), `code_required` (`1`: a new joiner needs an
    /// access code; absent: none), `draw_seed` (written once,
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
    /// `event`'s key names: `{ev:<id>}:<name>`. For a priority group's line
    /// ([`EventId::group_line`], `<event>.<group>`) the line's own keys are
    /// `{ev:<event>}:<name>:g:<group>`, under the event's hash tag (so a script may read the
    /// lines ahead of it), while the admissions (`active`, `offered`) and the seats are the
    /// event's: every line admits into the same slots and sells the same seats.
    pub fn new(event: &EventId) -> Self {
        let tag = format!("{{ev:{}}}", event.event());
        let shared = |name: &str| format!("{tag}:{name}");
        let line = |name: &str| match event.group() {
            Some(group) => format!("{tag}:{name}:g:{group}"),
            None => format!("{tag}:{name}"),
        };
        Self {
            settings: line("settings"),
            prequeue: line("prequeue"),
            entrants: line("entrants"),
            left: line("left"),
            queue: line("queue"),
            offered: shared("offered"),
            active: shared("active"),
            admission: line("admission"),
            restored: line("restored-places"),
            restore_lock: line("restore-lock"),
            numbers_lock: line("numbers-lock"),
            status: line("status"),
            draw_lock: line("draw-lock"),
            layout: shared("layout"),
            seats_available: shared("seats-available"),
            seats_sold: shared("seats-sold"),
            seats_pending: shared("seats-pending"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::GroupName;

    #[test]
    fn a_group_line_has_its_own_queue_under_the_events_tag_and_shares_its_admissions() {
        let event = EventId::parse("e1").unwrap();
        let general = EventKeys::new(&event);
        let fanclub = EventKeys::new(&event.group_line(&GroupName::parse("fanclub").unwrap()));
        assert_eq!(general.queue, "{ev:e1}:queue");
        assert_eq!(fanclub.queue, "{ev:e1}:queue:g:fanclub");
        assert_eq!(fanclub.settings, "{ev:e1}:settings:g:fanclub");
        assert_eq!(fanclub.status, "{ev:e1}:status:g:fanclub");
        assert_eq!(fanclub.active, general.active);
        assert_eq!(fanclub.offered, general.offered);
        assert_eq!(fanclub.seats_available, general.seats_available);
    }
}
