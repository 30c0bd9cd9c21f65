//! Queue numbers that no cache loss can hand out twice.
//!
//! Redis hands out numbers (`join.lua`), but only up to a ceiling that was first saved in the
//! events table ([`EventRecords::reserve_numbers`]). A restore after a loss starts counting past
//! the durable ceiling, so every number handed out before the loss stays its holder's alone, and
//! no restore changes the order of numbers. The price is a gap: the reserved numbers the lost
//! cache had not handed out yet are never used. Ranges are sized to about
//! [`RANGE_HORIZON`] of joins at the rate the last range was used, so the gap is a few seconds
//! of joins (up to about one and a half ranges: the unused half of the last range and the new
//! one) and a reservation (one conditional write) happens about every [`RANGE_HORIZON`] at a
//! steady pace, however fast people join.
//!
//! When a range is half used, the join that notices takes the top-up duty (a lock in Redis) and
//! reserves the next one before answering; a join that finds the range used up reserves (or
//! waits for whoever is reserving) before it gets its number.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::application::error::LineupError;
use crate::application::ports::event_records::EventRecords;
use crate::application::ports::queue::{NumberRange, NumberRanges};
use crate::domain::ids::EventId;

/// A range holds about this long of joins at the rate the last one was used.
pub const RANGE_HORIZON: Duration = Duration::from_secs(4);
/// The smallest range (a quiet queue reserves rarely, and its gap after a loss is this at most).
pub const MIN_RANGE: u64 = 64;
/// The largest range (about 4 s of 250,000 joins a second).
pub const MAX_RANGE: u64 = 1_000_000;

/// The size of the next range: [`RANGE_HORIZON`] of joins at the pace the current range was
/// used since it was reserved, within [`MIN_RANGE`]..=[`MAX_RANGE`].
pub fn next_block(range: &NumberRange, now: SystemTime) -> u64 {
    let Some(reserved_at) = range.reserved_at else {
        return MIN_RANGE;
    };
    let elapsed = now
        .duration_since(reserved_at)
        .unwrap_or_default()
        .max(Duration::from_millis(100));
    let used = range.next_number.saturating_sub(range.reserved_from) as f64;
    let per_second = used / elapsed.as_secs_f64();
    let wanted = (per_second * RANGE_HORIZON.as_secs_f64()).ceil() as u64;
    wanted.clamp(MIN_RANGE, MAX_RANGE)
}

/// Reserves ranges of numbers: in the events table first, then in the cache.
pub struct Numbering {
    /// The cache's side: the range it holds, and raising its ceiling.
    pub ranges: Arc<dyn NumberRanges>,
    /// The events table, where a range is reserved before the cache may use it.
    pub records: Arc<dyn EventRecords>,
}

impl Numbering {
    /// Reserves the next range and raises the cache's ceiling to it. The caller holds the top-up
    /// duty (a join that was given it, see `join.lua`); the cache frees it.
    pub async fn top_up(&self, event: &EventId, now: SystemTime) -> Result<(), LineupError> {
        let range = self.range(event).await?;
        self.reserve_past(event, &range, range.ceiling.max(range.next_number), now)
            .await
    }

    /// Makes sure numbers up to `at_least` are durable before anything hands them out (the
    /// pre-queue's draw, before it is published), with a range past them for the joins after.
    /// A ceiling only ever goes up, so this and a join's top-up at once are both safe.
    pub async fn reserve_through(
        &self,
        event: &EventId,
        at_least: u64,
        now: SystemTime,
    ) -> Result<(), LineupError> {
        let range = self.range(event).await?;
        if range.ceiling >= at_least {
            return Ok(());
        }
        self.reserve_past(event, &range, at_least, now).await
    }

    async fn range(&self, event: &EventId) -> Result<NumberRange, LineupError> {
        self.ranges
            .number_range(event)
            .await?
            .ok_or(LineupError::CacheRecovering)
    }

    /// Reserves a range past `from` in the events table, then raises the cache's ceiling to
    /// what the table holds.
    async fn reserve_past(
        &self,
        event: &EventId,
        range: &NumberRange,
        from: u64,
        now: SystemTime,
    ) -> Result<(), LineupError> {
        let block = next_block(range, now);
        let ceiling = self.records.reserve_numbers(event, from + block).await?;
        if !self
            .ranges
            .extend_numbers(event, ceiling, block, now)
            .await?
        {
            return Err(LineupError::CacheRecovering);
        }
        tracing::info!(event = %event, ceiling, block, "queue numbers reserved");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
    }

    #[test]
    fn a_new_queue_starts_with_the_smallest_range() {
        assert_eq!(next_block(&NumberRange::default(), at(0)), MIN_RANGE);
    }

    #[test]
    fn ranges_follow_the_pace_of_joins() {
        // 6,000 joins in the 2 s since the last reservation: 3,000 a second, so 12,000 for 4 s.
        let range = NumberRange {
            next_number: 16_000,
            ceiling: 20_000,
            block: 8_000,
            reserved_at: Some(at(10)),
            reserved_from: 10_000,
        };
        assert_eq!(next_block(&range, at(12)), 12_000);
        // A quiet queue: 3 joins in a minute still gets the smallest range.
        let quiet = NumberRange {
            next_number: 103,
            ceiling: 164,
            block: 64,
            reserved_at: Some(at(0)),
            reserved_from: 100,
        };
        assert_eq!(next_block(&quiet, at(60)), MIN_RANGE);
        // A stampede is capped.
        let stampede = NumberRange {
            next_number: 5_000_000,
            ceiling: 5_000_000,
            block: 1_000_000,
            reserved_at: Some(at(0)),
            reserved_from: 0,
        };
        assert_eq!(next_block(&stampede, at(1)), MAX_RANGE);
    }

    #[test]
    fn a_clock_behind_the_last_reservation_does_not_divide_by_zero() {
        let range = NumberRange {
            next_number: 50,
            ceiling: 64,
            block: 64,
            reserved_at: Some(at(10)),
            reserved_from: 0,
        };
        assert_eq!(next_block(&range, at(5)), 2_000);
    }
}
