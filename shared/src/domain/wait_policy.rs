//! How long a waiting customer is told to wait: the ETA, and when to look again.
//!
//! Two million clients asking every second would be two million requests per second. A waiting
//! client reads the public status, which the CDN serves, and the interval grows with the wait:
//! 5 s near the front, a tenth of the ETA further back, at most 5 minutes. It calls the origin
//! only to join and to claim.
//!
//! No cadence is shared by the crowd: each client moves every read it schedules itself by a
//! random share of ±[`STATUS_READ_JITTER`] ([`jittered`]); before opening, the pre-queue does not
//! read every 5 s through the last minute but once just after the opening, at a moment of its own
//! within [`OPENING_READ_SPREAD`] ([`next_pre_queue_read`]); and once the draw is published each
//! entrant fetches its chunk at a moment of its own within [`chunk_fetch_window`], short enough
//! that the first numbers called still claim within the claim window. The randomness is the
//! client's: these functions take its uniform sample `u` in `[0, 1)`, so they stay pure.
//!
//! A pre-queue too big for those 10 s (each entrant reads the status once and fetches its chunk
//! once: two requests) is paced for the edge instead ([`opening_reads`]): its reads are spread
//! over as long as the edge's budget ([`EDGE_OPENING_REQUESTS_PER_SECOND`]) needs, starting when
//! the draw should be published, and nobody is called before all of them can have their numbers
//! ([`first_call_at`]), so no claim window is shortened.

use std::time::{Duration, SystemTime};

/// The shortest interval between two status reads: a client near the front.
pub const MIN_STATUS_INTERVAL: Duration = Duration::from_secs(5);
/// The longest a waiting client goes without reading the status.
pub const MAX_STATUS_INTERVAL: Duration = Duration::from_secs(300);
/// Each read a client schedules from this policy comes uniformly within this share of the
/// interval either side of it (5 s near the front: 4–6 s), so a crowd that read together once
/// drifts apart instead of reading in lockstep. (A server-given `Retry-After` is a floor: the
/// client adds up to 20 % to it, as the API's description asks.)
pub const STATUS_READ_JITTER: f64 = 0.2;
/// Before opening a pre-queue entrant reads the status at most this often: nothing it needs
/// changes until the opening (an operator's change reaches it within the minute), and a whole
/// pre-queue reading a tenth of the time left would read together every 5-6 s in the last
/// minute, the crowd's largest cost at the edge.
pub const MIN_PRE_QUEUE_INTERVAL: Duration = Duration::from_secs(60);
/// Before opening, a pre-queue entrant reads the status once just after the opening, at a
/// moment of its own within this long of it, instead of every 5 s through the last minute.
pub const OPENING_READ_SPREAD: Duration = Duration::from_secs(10);
/// The chunk misses per second the draw's route is planned to take at the opening: with
/// `16^prefixLength` chunks, each fetched from the origin once (then cached for good), spreading
/// the fetches over `chunks / 50` seconds keeps the cold fill at this pace.
pub const CHUNK_MISSES_PER_SECOND: u64 = 50;
/// The shortest chunk fetch window (a small draw: 16 or 256 chunks).
pub const MIN_CHUNK_FETCH_WINDOW: Duration = Duration::from_secs(5);
/// The longest chunk fetch window, whatever the claim window.
pub const MAX_CHUNK_FETCH_WINDOW: Duration = Duration::from_secs(30);
/// The chunk fetch window is at most this share of the claim window: the rest covers seeing the
/// publication (a status read apart, plus the status's cache age) and a few retries (see
/// [`chunk_fetch_window`]).
pub const CHUNK_FETCH_SHARE_OF_CLAIM_WINDOW: u32 = 3;

/// The requests a second the whole pre-queue's opening may take at the edge: half of
/// CloudFront's default 250,000 a second for a distribution, leaving the rest to everyone else
/// waiting (their status reads), joins still arriving, the admitted and other events (`lineup
/// plan` at 20 M waiting: about 100,000 a second of those at the opening). The admit function's
/// `EDGE_OPENING_REQUESTS_PER_SECOND` sets another (after a raised quota).
pub const EDGE_OPENING_REQUESTS_PER_SECOND: u64 = 125_000;
/// What each pre-queue entrant asks the edge at the opening: one status read that shows the draw
/// published, one chunk.
pub const REQUESTS_PER_ENTRANT_AT_OPENING: u64 = 2;
/// The draw's time per entrant, for when the draw should be published: `cargo bench --bench
/// draw_memory` measured about 4 µs on one core (BENCHMARKS.md §11, 1 M to 20 M), doubled for
/// the admit function's 1,024 MB (a share of a vCPU). An estimate too short only makes the
/// readers who came before the publication read again (every 5 s); too long, a later first call.
pub const DRAW_MICROSECONDS_PER_ENTRANT: u64 = 8;
/// The longest the pre-queue's opening reads are spread over, whatever its size (at the default
/// budget, 67 M entrants).
pub const MAX_OPENING_READ_SPREAD: Duration = Duration::from_secs(900);
/// After the last pre-queue read the opening schedules, how long before the first call: the
/// status's cache age (`max-age` 2 + `stale-while-revalidate` 5) and one jittered 5 s read (6 s)
/// by which a reader who found the draw not yet published sees it.
pub const FIRST_CALL_MARGIN: Duration = Duration::from_secs(13);

/// When the pre-queue reads the status after the opening: at a moment of each entrant's own
/// within `spread`, `delay` after the opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpeningReads {
    /// From the opening to the first read: when the draw should be published (zero unless
    /// paced).
    pub delay: Duration,
    /// The reads come uniformly within this long.
    pub spread: Duration,
}

impl OpeningReads {
    /// The reads of a pre-queue the edge takes within [`OPENING_READ_SPREAD`]: right after the
    /// opening, within 10 s.
    pub const UNPACED: OpeningReads = OpeningReads {
        delay: Duration::ZERO,
        spread: OPENING_READ_SPREAD,
    };

    /// Whether the pre-queue is too big for the 10 s spread (then the first call waits for its
    /// reads: [`first_call_at`]).
    pub fn paced(&self) -> bool {
        self.spread > OPENING_READ_SPREAD
    }
}

/// How a pre-queue of `entrants` reads the status after the opening, with `edge_budget`
/// requests a second at the edge for it: within [`OPENING_READ_SPREAD`] if that is enough,
/// else spread over `2 × entrants / edge_budget` seconds (at most [`MAX_OPENING_READ_SPREAD`])
/// from when the draw should be published ([`draw_time_estimate`]). 10 M entrants at the
/// default budget: from 80 s after the opening, over 160 s.
pub fn opening_reads(entrants: u64, edge_budget: u64) -> OpeningReads {
    let requests = entrants.saturating_mul(REQUESTS_PER_ENTRANT_AT_OPENING);
    let spread = Duration::from_secs(requests.div_ceil(edge_budget.max(1)));
    if spread <= OPENING_READ_SPREAD {
        return OpeningReads::UNPACED;
    }
    OpeningReads {
        delay: draw_time_estimate(entrants),
        spread: spread.min(MAX_OPENING_READ_SPREAD),
    }
}

/// How long the draw of `entrants` should take, at [`DRAW_MICROSECONDS_PER_ENTRANT`].
pub fn draw_time_estimate(entrants: u64) -> Duration {
    Duration::from_secs(
        entrants
            .saturating_mul(DRAW_MICROSECONDS_PER_ENTRANT)
            .div_ceil(1_000_000),
    )
}

/// When the first numbers of a draw of `entrants`, published at `published_at` for an opening
/// at `opens_at`, may be called: at once for a pre-queue the edge takes in 10 s (as before); a
/// paced one not before every entrant's scheduled read ([`opening_reads`], counted from the
/// opening or the publication, whichever is later), its chunk fetch window and
/// [`FIRST_CALL_MARGIN`]. Every entrant then holds its number before anyone is called, and the
/// claim windows start as they always do.
pub fn first_call_at(
    opens_at: SystemTime,
    published_at: SystemTime,
    entrants: u64,
    claim_window: Duration,
    edge_budget: u64,
) -> SystemTime {
    let reads = opening_reads(entrants, edge_budget);
    if !reads.paced() {
        return published_at;
    }
    let last_read = (opens_at + reads.delay).max(published_at) + reads.spread;
    let chunks = 16u64.pow(crate::domain::draw::prefix_len(entrants) as u32);
    last_read + chunk_fetch_window(chunks, claim_window) + FIRST_CALL_MARGIN
}

/// When to read the public status again, given the ETA: a tenth of it, within 5 s – 5 min. A
/// tenth keeps a client on time unless the pace jumps tenfold; the claim window covers the rest.
/// The interval itself, before the client's jitter ([`jittered`]): what `Retry-After` says.
pub fn next_status_read(eta: Duration) -> Duration {
    let tenth = Duration::from_secs(eta.as_secs().div_ceil(10));
    tenth.clamp(MIN_STATUS_INTERVAL, MAX_STATUS_INTERVAL)
}

/// `interval` moved by the client's uniform sample `u` in `[0, 1)` to somewhere uniformly within
/// ±[`STATUS_READ_JITTER`] of it (`u = 0.5`: the interval itself). A `u` outside `[0, 1]` is
/// taken as its nearest bound, a non-number as 0.5.
pub fn jittered(interval: Duration, u: f64) -> Duration {
    let u = if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) };
    interval.mul_f64(1.0 - STATUS_READ_JITTER + 2.0 * STATUS_READ_JITTER * u)
}

/// When a pre-queue entrant reads the status next, `until_opening` before the opening: the
/// jittered tenth of the time to it, but not sooner than [`MIN_PRE_QUEUE_INTERVAL`], while that
/// read comes before the opening; otherwise once after the opening, at `u` of the opening's
/// `reads.spread` past `reads.delay` ([`opening_reads`]: for most pre-queues within 10 s of the
/// opening). Before the opening nothing a pre-queue entrant needs changes, so reading every 5 s
/// through the last minute would only be the whole pre-queue reading in step.
pub fn next_pre_queue_read(until_opening: Duration, u: f64, reads: OpeningReads) -> Duration {
    let interval = next_status_read(until_opening).max(MIN_PRE_QUEUE_INTERVAL);
    let read = jittered(interval, u);
    if read < until_opening {
        read
    } else {
        let u = if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) };
        until_opening + reads.delay + reads.spread.mul_f64(u)
    }
}

/// How long after seeing the draw published a pre-queue entrant may wait before fetching its
/// chunk: each picks a moment uniformly within it. Long enough that the `chunks` cold misses come
/// at about [`CHUNK_MISSES_PER_SECOND`] (at least [`MIN_CHUNK_FETCH_WINDOW`]), and never more
/// than a third of the claim window nor [`MAX_CHUNK_FETCH_WINDOW`]: numbers are called from the
/// publication on, in an order nobody knows before fetching, so the holder of number 1 may fetch
/// last. Its claim comes at most publication + 13 s (a jittered 5 s read, 6 s, plus the status's
/// 7 s cache age: `max-age` 2 + `stale-while-revalidate` 5) + the window + its retries + one
/// more read (6 s); with the default 60 s claim window the window is 20 s, leaving 21 s for
/// retries.
pub fn chunk_fetch_window(chunks: u64, claim_window: Duration) -> Duration {
    let cap = MAX_CHUNK_FETCH_WINDOW.min(claim_window / CHUNK_FETCH_SHARE_OF_CLAIM_WINDOW);
    Duration::from_secs(chunks.div_ceil(CHUNK_MISSES_PER_SECOND))
        .max(MIN_CHUNK_FETCH_WINDOW)
        .min(cap)
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

    #[test]
    fn each_client_moves_its_read_within_a_fifth_either_side() {
        let five = Duration::from_secs(5);
        assert_eq!(jittered(five, 0.0), Duration::from_secs(4));
        assert_eq!(jittered(five, 0.5), five);
        assert_eq!(jittered(five, 1.0), Duration::from_secs(6));
        assert_eq!(jittered(five, -3.0), Duration::from_secs(4), "clamped");
        assert_eq!(jittered(five, f64::NAN), five);
        // A crowd's samples spread its reads over the whole ±20 %, evenly: no moment is shared.
        let reads: Vec<Duration> = (0..1_000)
            .map(|i| jittered(Duration::from_secs(100), f64::from(i) / 1_000.0))
            .collect();
        assert_eq!(reads.iter().min(), Some(&Duration::from_secs(80)));
        assert!(reads.iter().max().unwrap() >= &Duration::from_millis(119_900));
        let in_first_tenth = reads
            .iter()
            .filter(|read| **read < Duration::from_secs(84))
            .count();
        assert_eq!(
            in_first_tenth, 100,
            "uniform: a tenth of the crowd per tenth of the spread"
        );
    }

    #[test]
    fn the_pre_queue_reads_once_just_after_the_opening_not_every_five_seconds() {
        // Far from the opening: the jittered tenth, always before the opening.
        assert_eq!(
            next_pre_queue_read(Duration::from_secs(1_200), 0.5, OpeningReads::UNPACED),
            Duration::from_secs(120)
        );
        assert_eq!(
            next_pre_queue_read(Duration::from_secs(1_200), 0.0, OpeningReads::UNPACED),
            Duration::from_secs(96)
        );
        // Nearer: at most once a minute (jittered), never after the opening.
        assert_eq!(
            next_pre_queue_read(Duration::from_secs(300), 0.5, OpeningReads::UNPACED),
            MIN_PRE_QUEUE_INTERVAL
        );
        for until in (0..3_600).step_by(7) {
            let until = Duration::from_secs(until);
            for u in [0.0, 0.5, 1.0] {
                let read = next_pre_queue_read(until, u, OpeningReads::UNPACED);
                if read < until {
                    assert!(read >= MIN_PRE_QUEUE_INTERVAL.mul_f64(0.8), "{until:?} {u}");
                } else {
                    assert!(read <= until + OPENING_READ_SPREAD, "{until:?} {u}");
                }
            }
        }
        // In the last minute: once, after the opening, at the client's own moment within 10 s.
        let until = Duration::from_secs(30);
        assert_eq!(
            next_pre_queue_read(until, 0.0, OpeningReads::UNPACED),
            until
        );
        assert_eq!(
            next_pre_queue_read(until, 0.5, OpeningReads::UNPACED),
            until + OPENING_READ_SPREAD / 2
        );
        assert_eq!(
            next_pre_queue_read(until, 1.0, OpeningReads::UNPACED),
            until + OPENING_READ_SPREAD
        );
        assert_eq!(
            next_pre_queue_read(Duration::ZERO, 0.25, OpeningReads::UNPACED),
            OPENING_READ_SPREAD / 4,
            "at the opening itself"
        );
        // A crowd that joined in the same second reads over the whole spread, a tenth per second.
        let opening = Duration::from_secs(20);
        let mut per_second = [0u32; 10];
        for i in 0..10_000 {
            let read = next_pre_queue_read(opening, f64::from(i) / 10_000.0, OpeningReads::UNPACED)
                - opening;
            per_second[read.as_secs() as usize] += 1;
        }
        assert_eq!(per_second, [1_000; 10]);
    }

    #[test]
    fn a_pre_queue_the_edge_cannot_take_in_ten_seconds_is_paced_to_its_budget() {
        // Up to 750,000 entrants at 150,000 a second: the unpaced 10 s, as always.
        assert_eq!(opening_reads(0, 150_000), OpeningReads::UNPACED);
        assert_eq!(opening_reads(750_000, 150_000), OpeningReads::UNPACED);
        assert!(!opening_reads(750_000, 150_000).paced());
        // 10 M: two requests each over 134 s, from when the draw should be out (80 s).
        let ten_million = opening_reads(10_000_000, 150_000);
        assert!(ten_million.paced());
        assert_eq!(ten_million.delay, Duration::from_secs(80));
        assert_eq!(ten_million.spread, Duration::from_secs(134));
        let per_second = 2 * 10_000_000 / ten_million.spread.as_secs();
        assert!(per_second <= 150_000, "{per_second} a second");
        // A budget of zero does not divide by it; an absurd pre-queue is capped.
        assert_eq!(opening_reads(10, 0).spread, Duration::from_secs(20));
        assert_eq!(
            opening_reads(u64::MAX, 150_000).spread,
            MAX_OPENING_READ_SPREAD
        );
        // Each entrant's read after the opening: past the delay, within the spread.
        let until = Duration::from_secs(30);
        assert_eq!(
            next_pre_queue_read(until, 0.0, ten_million),
            until + Duration::from_secs(80)
        );
        assert_eq!(
            next_pre_queue_read(until, 1.0, ten_million),
            until + Duration::from_secs(80 + 134)
        );
    }

    #[test]
    fn nobody_is_called_before_a_paced_pre_queue_can_hold_its_numbers() {
        let opens = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let claim = Duration::from_secs(60);
        // Unpaced: called from the publication, as before.
        let published = opens + Duration::from_secs(3);
        assert_eq!(
            first_call_at(opens, published, 20_000, claim, 150_000),
            published
        );
        // 10 M: the last read 80 + 134 s after the opening, its chunk within 20 s (65,536
        // chunks, a third of the claim window), 13 s to see it: 247 s.
        let published = opens + Duration::from_secs(40);
        assert_eq!(
            first_call_at(opens, published, 10_000_000, claim, 150_000),
            opens + Duration::from_secs(80 + 134 + 20 + 13)
        );
        // A draw slower than estimated: counted from the publication instead.
        let late = opens + Duration::from_secs(100);
        assert_eq!(
            first_call_at(opens, late, 10_000_000, claim, 150_000),
            late + Duration::from_secs(134 + 20 + 13)
        );
        // A small budget paces a small pre-queue (how tests exercise it): 300 entrants at 10
        // a second, 60 s, the draw estimated at 1 s (rounded up), 16 chunks fetched within 5 s.
        assert_eq!(
            first_call_at(opens, opens, 300, claim, 10),
            opens + Duration::from_secs(1 + 60 + 5 + 13)
        );
        // Every scheduled read comes before the first call.
        let reads = opening_reads(10_000_000, 150_000);
        let last = opens + reads.delay + reads.spread;
        assert!(last < first_call_at(opens, published, 10_000_000, claim, 150_000));
    }

    #[test]
    fn chunks_are_fetched_within_a_window_the_first_numbers_can_afford() {
        let claim = Duration::from_secs(60);
        // A small draw: 16 chunks, the shortest window.
        assert_eq!(chunk_fetch_window(16, claim), MIN_CHUNK_FETCH_WINDOW);
        // 256 chunks at 50 misses a second: 6 s.
        assert_eq!(chunk_fetch_window(256, claim), Duration::from_secs(6));
        // 4,096 or 65,536 chunks: capped at a third of the claim window.
        assert_eq!(chunk_fetch_window(4_096, claim), Duration::from_secs(20));
        assert_eq!(chunk_fetch_window(65_536, claim), Duration::from_secs(20));
        // A long claim window: never past 30 s; a short one: a third of it, even below 5 s.
        assert_eq!(
            chunk_fetch_window(65_536, Duration::from_secs(600)),
            MAX_CHUNK_FETCH_WINDOW
        );
        assert_eq!(
            chunk_fetch_window(16, Duration::from_secs(9)),
            Duration::from_secs(3)
        );
        // The holder of number 1, called at the publication, fetching last: seeing the
        // publication (a jittered 5 s read and the status's 7 s cache age), the window, one more
        // read, and still 21 s of a 60 s claim window for retries.
        let see = jittered(MIN_STATUS_INTERVAL, 1.0) + Duration::from_secs(7);
        let claimed = see + chunk_fetch_window(65_536, claim) + jittered(MIN_STATUS_INTERVAL, 1.0);
        assert_eq!(claim - claimed, Duration::from_secs(21));
    }
}
