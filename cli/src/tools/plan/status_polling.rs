//! How often waiting customers read the public status: the new waiting room's Retry-After,
//! a tenth of the customer's ETA, between 5 s and 300 s, where ETA = distance / admission
//! rate. The status is cached (CloudFront, 2 s at the origin), so these reads land on
//! CloudFront; what they cost the origin is one request per cache period.
//!
//! Customers waiting one behind another, admitted at `rate`, have ETAs spread evenly from 0 to
//! `waiting / rate`. Summing 1/interval over them is an integral over the ETA:
//! reads per second = rate × ∫₀ᴱ de / interval(e), and the same integral counts the reads one
//! customer makes while their own ETA falls from E to 0. Both are [`reads_while_eta_falls`].

/// The shortest wait between two reads.
pub const SHORTEST_INTERVAL_SECONDS: f64 = 5.0;
/// The longest.
pub const LONGEST_INTERVAL_SECONDS: f64 = 300.0;
/// The share of the ETA a customer waits before reading again.
pub const SHARE_OF_ETA: f64 = 0.1;

/// Seconds until the next read, for a customer this many seconds from their turn.
pub fn interval(eta_seconds: f64) -> f64 {
    (eta_seconds * SHARE_OF_ETA).clamp(SHORTEST_INTERVAL_SECONDS, LONGEST_INTERVAL_SECONDS)
}

/// Reads a customer makes while their ETA falls from `eta_seconds` to zero: every 5 s for the
/// last 50 s, a tenth of the ETA between 50 s and 3,000 s (10 reads for each factor of e), one
/// every 300 s beyond.
pub fn reads_while_eta_falls(eta_seconds: f64) -> f64 {
    let eta = eta_seconds.max(0.0);
    let short_below = SHORTEST_INTERVAL_SECONDS / SHARE_OF_ETA;
    let long_above = LONGEST_INTERVAL_SECONDS / SHARE_OF_ETA;
    let near = eta.min(short_below) / SHORTEST_INTERVAL_SECONDS;
    let middle = (eta.clamp(short_below, long_above) / short_below).ln() / SHARE_OF_ETA;
    let far = (eta - long_above).max(0.0) / LONGEST_INTERVAL_SECONDS;
    near + middle + far
}

/// Status reads per second from `waiting` customers queued one behind another and admitted at
/// `rate` a second. Nobody admitted (a full store, or sold out): everyone at the longest
/// interval.
pub fn reads_per_second(waiting: f64, rate: f64) -> f64 {
    if waiting <= 0.0 {
        0.0
    } else if rate <= 0.0 {
        waiting / LONGEST_INTERVAL_SECONDS
    } else {
        rate * reads_while_eta_falls(waiting / rate)
    }
}

/// The same while nobody is called for another `until_first_call` seconds (a paced opening):
/// every ETA is that much longer, so the customers' ETAs run from it to it plus
/// `waiting / rate`, and the integral is taken over that span.
pub fn reads_per_second_before_first_call(waiting: f64, rate: f64, until_first_call: f64) -> f64 {
    if waiting <= 0.0 {
        0.0
    } else if rate <= 0.0 {
        waiting / LONGEST_INTERVAL_SECONDS
    } else {
        let wait = until_first_call.max(0.0);
        rate * (reads_while_eta_falls(wait + waiting / rate) - reads_while_eta_falls(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-6 * expected.abs().max(1.0)
    }

    #[test]
    fn the_interval_is_a_tenth_of_the_eta_within_bounds() {
        assert_eq!(interval(0.0), 5.0);
        assert_eq!(interval(49.0), 5.0);
        assert_eq!(interval(200.0), 20.0);
        assert_eq!(interval(3_000.0), 300.0);
        assert_eq!(interval(86_400.0), 300.0);
    }

    #[test]
    fn status_reads_per_second_for_a_queue_worked_by_hand() {
        // 3,000 waiting, 10 admitted a second: ETAs 0..300 s.
        // Positions 0..500 (ETA under 50 s) read every 5 s: 500 / 5 = 100 a second.
        // Positions 500..3,000 read every p/(10 × 10) s: Σ 100/p ≈ 100 × ln(3000/500) = 179.18.
        let expected = 100.0 + 100.0 * 6.0_f64.ln();
        assert!(close(reads_per_second(3_000.0, 10.0), expected));
        // 1,000 waiting admitted at 1,000 a second: all within 1 s of their turn, every 5 s.
        assert!(close(reads_per_second(1_000.0, 1_000.0), 200.0));
        // A queue nobody leaves: 600 customers every 300 s.
        assert!(close(reads_per_second(600.0, 0.0), 2.0));
        assert_eq!(reads_per_second(0.0, 10.0), 0.0);
    }

    #[test]
    fn while_nobody_is_called_the_front_reads_as_if_further_back() {
        // No wait: the same as a running queue.
        assert!(close(
            reads_per_second_before_first_call(10_000.0, 100.0, 0.0),
            reads_per_second(10_000.0, 100.0)
        ));
        // 100 s before the first call, the front reads every 10 s, not every 5 s: fewer reads.
        let waiting = reads_per_second_before_first_call(10_000.0, 100.0, 100.0);
        assert!(waiting < reads_per_second(10_000.0, 100.0));
        // 1,000 customers, ETAs 100 to 110 s: about one read every 10.5 s each.
        let near = reads_per_second_before_first_call(1_000.0, 100.0, 100.0);
        assert!((near - 1_000.0 / 10.5).abs() < 1.0, "{near}");
    }

    #[test]
    fn a_customer_far_back_reads_once_every_five_minutes_beyond_the_first_fifty_reads() {
        // The last 50 s: 10 reads. 50 s..3,000 s: 10 × ln(60) = 40.94. Then 1 per 300 s.
        let last_hour = 10.0 + 10.0 * 60.0_f64.ln();
        assert!(close(reads_while_eta_falls(3_000.0), last_hour));
        assert!(close(reads_while_eta_falls(6_000.0), last_hour + 10.0));
        assert!(close(reads_while_eta_falls(25.0), 5.0));
    }
}
