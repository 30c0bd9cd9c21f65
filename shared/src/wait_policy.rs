//! How long a waiting customer is told to wait: the ETA, and when to poll next.
//!
//! Two million clients polling every second would be two million requests per second. The poll
//! interval therefore grows with the wait: 5 s near the front, one tenth of the ETA further
//! back, at most 60 s. A customer's total polls are then about 10 plus a minute's worth per
//! minute of waiting beyond ten minutes, whatever their position.

use std::time::{Duration, SystemTime};

pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(5);
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(60);

/// Seconds until a customer with `position` customers ahead is admitted, at `rate` admissions
/// per second, plus the time left before the on-sale opens.
pub fn eta(position: u64, rate: f64, now: SystemTime, opens_at: SystemTime) -> Duration {
    let rate = if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    };
    let until_open = opens_at.duration_since(now).unwrap_or(Duration::ZERO);
    until_open + Duration::from_secs_f64(((position + 1) as f64 / rate).min(1e9))
}

/// When to poll next, given the ETA: a tenth of it, within 5–60 s, in whole seconds.
pub fn next_poll(eta: Duration) -> Duration {
    let tenth = Duration::from_secs(eta.as_secs().div_ceil(10));
    tenth.clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_counts_the_customers_ahead_and_the_wait_for_opening() {
        let now = SystemTime::now();
        assert_eq!(eta(0, 50.0, now, now), Duration::from_millis(20));
        assert_eq!(eta(99, 50.0, now, now), Duration::from_secs(2));
        let opens = now + Duration::from_secs(30);
        assert_eq!(eta(99, 50.0, now, opens), Duration::from_secs(32));
        // An unmeasured rate never divides by zero.
        assert_eq!(eta(9, 0.0, now, now), Duration::from_secs(10));
    }

    #[test]
    fn poll_interval_grows_with_the_wait_within_bounds() {
        assert_eq!(next_poll(Duration::ZERO), MIN_POLL_INTERVAL);
        assert_eq!(next_poll(Duration::from_secs(49)), MIN_POLL_INTERVAL);
        assert_eq!(next_poll(Duration::from_secs(200)), Duration::from_secs(20));
        assert_eq!(next_poll(Duration::from_secs(3_600)), MAX_POLL_INTERVAL);
        let mut previous = Duration::ZERO;
        for eta_secs in (0..2_000).step_by(7) {
            let interval = next_poll(Duration::from_secs(eta_secs));
            assert!(interval >= previous, "interval shrank at eta {eta_secs}s");
            previous = interval;
        }
    }
}
