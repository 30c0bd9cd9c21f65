//! How long a waiting customer is told to wait: the ETA, and when to look again.
//!
//! Two million clients asking every second would be two million requests per second. A waiting
//! client reads the public status, which the CDN serves, and the interval grows with the wait:
//! 5 s near the front, a tenth of the ETA further back, at most 5 minutes. It calls the origin
//! only to join and to claim.

use std::time::Duration;

/// The shortest interval between two status reads: a client near the front.
pub const MIN_STATUS_INTERVAL: Duration = Duration::from_secs(5);
/// The longest a waiting client goes without reading the status.
pub const MAX_STATUS_INTERVAL: Duration = Duration::from_secs(300);

/// When to read the public status again, given the ETA: a tenth of it, within 5 s – 5 min. A
/// tenth keeps a client on time unless the pace jumps tenfold; the claim window covers the rest.
pub fn next_status_read(eta: Duration) -> Duration {
    let tenth = Duration::from_secs(eta.as_secs().div_ceil(10));
    tenth.clamp(MIN_STATUS_INTERVAL, MAX_STATUS_INTERVAL)
}

/// Seconds until a number `distance` past `servingUpTo` is called, at `advance` numbers per
/// second (an unmeasured or nonsensical rate counts as one a second).
pub fn eta_for_distance(distance: u64, advance: f64) -> Duration {
    if distance == 0 {
        return Duration::ZERO;
    }
    let advance = if advance.is_finite() && advance > 0.0 {
        advance
    } else {
        1.0
    };
    Duration::from_secs_f64((distance as f64 / advance).min(1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_counts_the_numbers_to_go_at_the_advance_rate() {
        assert_eq!(eta_for_distance(0, 50.0), Duration::ZERO, "called already");
        assert_eq!(eta_for_distance(100, 50.0), Duration::from_secs(2));
        assert_eq!(
            eta_for_distance(10, 0.0),
            Duration::from_secs(10),
            "never divides by 0"
        );
        assert_eq!(eta_for_distance(10, f64::NAN), Duration::from_secs(10));
    }

    #[test]
    fn status_reads_grow_with_the_wait_within_bounds() {
        assert_eq!(next_status_read(Duration::ZERO), MIN_STATUS_INTERVAL);
        assert_eq!(
            next_status_read(Duration::from_secs(49)),
            MIN_STATUS_INTERVAL
        );
        assert_eq!(
            next_status_read(Duration::from_secs(200)),
            Duration::from_secs(20)
        );
        assert_eq!(
            next_status_read(Duration::from_secs(36_000)),
            MAX_STATUS_INTERVAL
        );
        let mut previous = Duration::ZERO;
        for eta_secs in (0..5_000).step_by(7) {
            let interval = next_status_read(Duration::from_secs(eta_secs));
            assert!(interval >= previous, "interval shrank at eta {eta_secs}s");
            previous = interval;
        }
    }
}
