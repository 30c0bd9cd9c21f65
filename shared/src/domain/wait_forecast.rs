//! The honest ETA and the chance of a ticket: how fast admission will go (the configured rate
//! while slots are free, then as fast as shoppers leave the active cap, Little's law), measured
//! by the admitter and published on the status, and the forecast each waiting client makes
//! from it for its own number (ADR 0029).
//!
//! The admitter counts, in its one script per tick (`admit_tick.lua`), the slots freed, the
//! slot-seconds held, the offers that lapsed unclaimed, the admissions and the numbers they
//! passed ([`PaceCounters`]); [`AdmissionPace::measure`] turns them into what the status shows
//! (`pace`): the admissions a second the cap sustains (`maxActive ÷ slotSeconds`), the slots
//! free now, the numbers passed per admission (leavers from the queue), the no-show share and
//! the seats sold per admission. A client then computes its ETA range ([`AdmissionPace::eta`])
//! and whether the sale will very likely be sold out before its turn
//! ([`AdmissionPace::likely_sold_out`]) from its number alone: the status stays one document for
//! everyone, cached at the edge.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The shortest mean slot time the forecast believes (a measurement below it is noise).
pub const MIN_SLOT_SECONDS: f64 = 1.0;
/// The ETA range: the likely ETA computed with the slot time this much shorter (the earliest)
/// and longer (the latest). The goal for the ETA's error is a quarter of the wait.
pub const ETA_RANGE_SHARE: f64 = 0.25;
/// A customer is told the sale will very likely be sold out before its turn when the seats the
/// customers ahead of it (and those shopping now) should buy are at least this many times the
/// seats left: a margin for the measurement's error, so "likely sold out" is said only when it
/// is likely.
pub const SOLD_OUT_MARGIN: f64 = 1.2;
/// The seats per admission are believed only after this many freed slots since they started
/// being counted: a few early buyers say little of the crowd.
pub const MIN_FREED_FOR_SEATS: u64 = 20;
/// The share of admissions assumed to hold their slot to the end of the session (a tab left
/// open after a hold lapsed, a customer who walked away) before the session's length has been
/// observed: the measurement cannot see them until their sessions end, and the first buyers
/// out say nothing of them. The assumption fades as the observed time nears a session's length
/// ([`AdmissionPace::measure`]); after that the measurement has them.
pub const PRIOR_HELD_TO_THE_END: f64 = 0.1;

/// What the admitter counted since admission started (`admit_tick.lua`'s pace counters).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PaceCounters {
    /// The active cap (`max_active`): shoppers and open offers at once.
    pub max_active: u64,
    /// Slots in use after the tick (shopping or holding an open offer).
    pub in_use: u64,
    /// Customers admitted (offered a slot).
    pub admitted: u64,
    /// Slots freed: purchases, leavers, lapsed offers and sessions.
    pub freed: u64,
    /// Slot-milliseconds held: the slots in use times the time between ticks, summed.
    pub slot_ms: f64,
    /// Offers that lapsed unclaimed.
    pub no_shows: u64,
    /// Queue numbers admission passed (leavers from the queue included).
    pub numbers: u64,
    /// The seats left when they were first counted since admission started, and the slots freed
    /// by then (`None`: not counted yet).
    pub seats_base: Option<(u64, u64)>,
    /// How long admission has been counted.
    pub observed: Duration,
    /// How long an admission lasts (the longest a claimed slot is held).
    pub session: Duration,
}

/// How fast admission goes, as the public status shows it (`pace`, camelCase JSON).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionPace {
    /// The configured admissions a second (the rate while slots are free).
    pub admits_per_second: f64,
    /// The active cap: shoppers and open offers at once.
    pub max_active: u64,
    /// Slots free after the last tick: the next this many admissions come at the rate.
    pub slots_free: u64,
    /// Slots in use after the last tick.
    pub slots_in_use: u64,
    /// How long an admission holds its slot on average, seconds (claiming, shopping, paying; a
    /// no-show the claim window), measured (Little's law: slot-seconds held ÷ (slots freed +
    /// half the slots in use)); absent before anything was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_seconds: Option<f64>,
    /// The admissions a second the cap sustains once full: `maxActive ÷ slotSeconds`, at most
    /// `admitsPerSecond`.
    pub sustained_admits_per_second: f64,
    /// Queue numbers passed per admission (at least 1: numbers whose holders left the queue are
    /// passed too).
    pub numbers_per_admission: f64,
    /// The share of offers that lapsed unclaimed; absent before any admission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_show_share: Option<f64>,
    /// Seats sold per admission (per freed slot: no-shows and buyers of nothing included);
    /// absent until enough slots were freed since the seats were first counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seats_per_admission: Option<f64>,
}

/// When a number is likely called, and the range around it, from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtaRange {
    /// The earliest it should be called.
    pub earliest: Duration,
    /// The likely wait.
    pub likely: Duration,
    /// The latest it should be called.
    pub latest: Duration,
}

impl EtaRange {
    /// Every bound moved later by `delay` (the time to a paced opening's first call).
    pub fn after(self, delay: Duration) -> Self {
        Self {
            earliest: self.earliest + delay,
            likely: self.likely + delay,
            latest: self.latest + delay,
        }
    }

    /// Called already: no wait.
    pub const NOW: EtaRange = EtaRange {
        earliest: Duration::ZERO,
        likely: Duration::ZERO,
        latest: Duration::ZERO,
    };
}

impl AdmissionPace {
    /// The pace from the admitter's counters, with `admits_per_second` configured and
    /// `seats_left` as last counted.
    pub fn measure(
        counters: &PaceCounters,
        admits_per_second: u32,
        seats_left: Option<u64>,
    ) -> Self {
        let rate = f64::from(admits_per_second.max(1));
        let slot_seconds = slot_seconds(counters);
        let sustained = match slot_seconds {
            Some(seconds) => (counters.max_active as f64 / seconds).min(rate),
            None => rate,
        };
        let numbers_per_admission = if counters.admitted > 0 {
            (counters.numbers as f64 / counters.admitted as f64).max(1.0)
        } else {
            1.0
        };
        let no_show_share = (counters.admitted > 0)
            .then(|| (counters.no_shows as f64 / counters.admitted as f64).min(1.0));
        let seats_per_admission = counters.seats_base.zip(seats_left).and_then(
            |((base_seats, base_freed), seats_left)| {
                let freed = counters.freed.checked_sub(base_freed)?;
                (freed >= MIN_FREED_FOR_SEATS)
                    .then(|| base_seats.saturating_sub(seats_left) as f64 / freed as f64)
            },
        );
        Self {
            admits_per_second: rate,
            max_active: counters.max_active,
            slots_free: counters.max_active.saturating_sub(counters.in_use),
            slots_in_use: counters.in_use,
            slot_seconds,
            sustained_admits_per_second: sustained.max(f64::MIN_POSITIVE),
            numbers_per_admission,
            no_show_share,
            seats_per_admission,
        }
    }

    /// How long until a number `distance` past `servingUpTo` is called: the admissions it takes
    /// (the distance ÷ the numbers per admission), the first ones into the free slots at the
    /// configured rate, the rest as the cap frees slots; the range with the slot time a quarter
    /// shorter and longer.
    pub fn eta(&self, distance: u64) -> EtaRange {
        if distance == 0 {
            return EtaRange::NOW;
        }
        let admissions = distance as f64 / positive(self.numbers_per_admission, 1.0);
        let rate = positive(self.admits_per_second, 1.0);
        let at = |slot_share: f64| {
            let sustained = match self.slot_seconds {
                Some(seconds) => (self.max_active as f64 / (seconds * slot_share)).min(rate),
                None => positive(self.sustained_admits_per_second, rate),
            };
            let into_free = admissions.min(self.slots_free as f64);
            let seconds = into_free / rate + (admissions - into_free) / positive(sustained, rate);
            Duration::from_secs_f64(seconds.clamp(0.0, 1e9))
        };
        EtaRange {
            earliest: at(1.0 - ETA_RANGE_SHARE),
            likely: at(1.0),
            latest: at(1.0 + ETA_RANGE_SHARE),
        }
    }

    /// Whether a customer `distance` numbers past `servingUpTo` will very likely find the sale
    /// sold out before its turn: the customers ahead of it (the distance ÷ the numbers per
    /// admission) and those holding slots now buy, at the measured seats per admission, at least
    /// [`SOLD_OUT_MARGIN`] times the `seats_left`. `false` while the seats per admission are not
    /// measured.
    pub fn likely_sold_out(&self, distance: u64, seats_left: u64) -> bool {
        let Some(seats_per_admission) = self.seats_per_admission else {
            return false;
        };
        let ahead = distance as f64 / positive(self.numbers_per_admission, 1.0);
        let demand = (ahead + self.slots_in_use as f64) * seats_per_admission;
        demand >= seats_left as f64 * SOLD_OUT_MARGIN
    }
}

/// The mean slot time, seconds: slot-seconds held ÷ (slots freed + half the slots in use). Those
/// still holding a slot have on average held it for about half of their time, so counting them
/// as half a departure each keeps the estimate near the truth once a session's length has been
/// observed (slots freed alone would overstate it while few have left, admissions alone
/// understate it). Before that, the slots held to the session's end are not seen yet (the
/// first out are the quick buyers): [`PRIOR_HELD_TO_THE_END`] of the admissions are assumed to
/// hold the whole session, an assumption that fades linearly over the first session.
fn slot_seconds(counters: &PaceCounters) -> Option<f64> {
    let held = counters.slot_ms / 1_000.0;
    let completed = counters.freed as f64 + counters.in_use as f64 / 2.0;
    if held <= 0.0 || completed <= 0.0 {
        return None;
    }
    let measured = held / completed;
    let session = counters.session.as_secs_f64();
    let unseen = if session > 0.0 {
        1.0 - (counters.observed.as_secs_f64() / session).min(1.0)
    } else {
        0.0
    };
    let assumed_tail = unseen * PRIOR_HELD_TO_THE_END * (session - measured).max(0.0);
    Some((measured + assumed_tail).max(MIN_SLOT_SECONDS))
}

/// `value` if it is a positive number, else `fallback`.
fn positive(value: f64, fallback: f64) -> f64 {
    if value.is_finite() && value > 0.0 {
        value
    } else {
        fallback
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cap-limited sale in its stride: 100 slots, each admission holding one for 30 s (900
    /// gone after 30 s each, the 100 in use for 15 s so far), 1,000 admitted over 1,100 numbers
    /// (leavers passed), 50 no-shows.
    fn stride() -> PaceCounters {
        PaceCounters {
            max_active: 100,
            in_use: 100,
            admitted: 1_000,
            freed: 900,
            slot_ms: (900.0 * 30.0 + 100.0 * 15.0) * 1_000.0,
            no_shows: 50,
            numbers: 1_100,
            seats_base: Some((2_000, 100)),
            observed: Duration::from_secs(600),
            session: Duration::from_secs(120),
        }
    }

    fn seconds(duration: Duration) -> f64 {
        (duration.as_secs_f64() * 1_000.0).round() / 1_000.0
    }

    #[test]
    fn the_pace_is_measured_from_the_counters_by_littles_law() {
        let pace = AdmissionPace::measure(&stride(), 50, Some(1_600));
        assert_eq!(
            pace.slot_seconds,
            Some(30.0),
            "28,500 slot-s over 900 + 100/2"
        );
        assert!((pace.sustained_admits_per_second - 100.0 / 30.0).abs() < 1e-9);
        assert_eq!(pace.admits_per_second, 50.0);
        assert_eq!((pace.slots_free, pace.slots_in_use), (0, 100));
        assert!((pace.numbers_per_admission - 1.1).abs() < 1e-9);
        assert_eq!(pace.no_show_share, Some(0.05));
        // 400 seats sold while 800 slots were freed.
        assert_eq!(pace.seats_per_admission, Some(0.5));
        // Slots that outlast the rate: the rate is the pace.
        let mut quick = stride();
        quick.slot_ms /= 100.0;
        let pace = AdmissionPace::measure(&quick, 50, None);
        assert_eq!(pace.sustained_admits_per_second, 50.0);
        assert_eq!(pace.seats_per_admission, None, "no seats counted");
    }

    #[test]
    fn before_anyone_leaves_those_holding_slots_count_as_half_gone() {
        // 10 s into the sale, 100 admitted, none gone: each has held its slot ~10 s, so the
        // slot time is at least 20 s (not 10, as over the admissions; not unknown, as over the
        // departures).
        let mut early = PaceCounters {
            max_active: 100,
            in_use: 100,
            admitted: 100,
            slot_ms: 100.0 * 10_000.0,
            numbers: 100,
            observed: Duration::from_secs(10),
            ..PaceCounters::default()
        };
        assert_eq!(
            AdmissionPace::measure(&early, 50, None).slot_seconds,
            Some(20.0),
            "no session length: nothing assumed"
        );
        // With 2-minute sessions, a tenth are assumed to hold theirs to the end, an assumption
        // that fades over the first two minutes: 10 s in, 20 + 11/12 × 0.1 × (120 − 20) s.
        early.session = Duration::from_secs(120);
        let assumed = AdmissionPace::measure(&early, 50, None)
            .slot_seconds
            .unwrap();
        assert!(
            (assumed - (20.0 + 11.0 / 12.0 * 10.0)).abs() < 1e-9,
            "{assumed}"
        );
        early.observed = Duration::from_secs(120);
        assert_eq!(
            AdmissionPace::measure(&early, 50, None).slot_seconds,
            Some(20.0),
            "a session observed: the measurement alone"
        );
        // Nothing held yet: the configured rate, unmeasured.
        let first = PaceCounters {
            max_active: 100,
            ..PaceCounters::default()
        };
        let pace = AdmissionPace::measure(&first, 50, None);
        assert_eq!(pace.slot_seconds, None);
        assert_eq!(pace.sustained_admits_per_second, 50.0);
        assert_eq!(pace.numbers_per_admission, 1.0);
        assert_eq!(pace.no_show_share, None);
    }

    #[test]
    fn a_cap_limited_queue_waits_for_slots_to_free_not_for_the_rate() {
        let pace = AdmissionPace::measure(&stride(), 50, None);
        // 1,100 numbers ahead: 1,000 admissions, at 100 / 30 s a second once the cap is full:
        // 300 s (the configured rate would have said 22 s).
        let eta = pace.eta(1_100);
        assert_eq!(seconds(eta.likely), 300.0);
        assert_eq!(seconds(eta.earliest), 225.0, "slots held a quarter shorter");
        assert_eq!(seconds(eta.latest), 375.0, "slots held a quarter longer");
        assert_eq!(pace.eta(0), EtaRange::NOW);
        // With 40 slots free, the first 40 admissions come at the rate (0.8 s), the other 960
        // as slots free (288 s).
        let mut freer = stride();
        freer.in_use = 60;
        let pace = AdmissionPace::measure(&freer, 50, None);
        let held = (900.0 * 30.0 + 100.0 * 15.0) / (900.0 + 30.0);
        let expected = 40.0 / 50.0 + 960.0 / (100.0 / held);
        assert!((pace.eta(1_100).likely.as_secs_f64() - expected).abs() < 1e-3);
    }

    #[test]
    fn a_rate_limited_queue_goes_at_the_rate() {
        // 10,000 slots held 30 s: 333 a second would fit, the rate is 50.
        let mut roomy = stride();
        roomy.max_active = 10_000;
        roomy.in_use = 10_000;
        let pace = AdmissionPace::measure(&roomy, 50, None);
        assert_eq!(pace.sustained_admits_per_second, 50.0);
        let eta = pace.eta(1_100);
        assert_eq!(seconds(eta.likely), 20.0);
        assert_eq!(eta.earliest, eta.likely, "the rate bounds both ends");
        assert_eq!(seconds(eta.latest), 20.0);
    }

    #[test]
    fn likely_sold_out_when_those_ahead_should_buy_the_seats_left_with_a_margin() {
        // Half a seat per admission, 100 slots in use.
        let pace = AdmissionPace::measure(&stride(), 50, Some(1_600));
        // 100 seats left: those shopping now should buy 50; 1,100 numbers ahead (1,000
        // admissions) 500 more.
        assert!(pace.likely_sold_out(1_100, 100));
        // 1,000 seats left: 550 should go before the turn, far from 1,200.
        assert!(!pace.likely_sold_out(1_100, 1_000));
        // 459 seats left: 550 ≥ 1.2 × 459 = 550.8? No: just short of the margin.
        assert!(!pace.likely_sold_out(1_100, 459));
        assert!(pace.likely_sold_out(1_100, 458));
        // Unmeasured seats per admission: never said.
        let unmeasured = AdmissionPace::measure(&stride(), 50, None);
        assert!(!unmeasured.likely_sold_out(1_000_000, 1));
        // Too few freed since the seats were first counted: not believed yet.
        let mut young = stride();
        young.seats_base = Some((2_000, 890));
        assert_eq!(
            AdmissionPace::measure(&young, 50, Some(1_990)).seats_per_admission,
            None
        );
    }

    #[test]
    fn the_pace_reads_back_from_its_json() {
        let pace = AdmissionPace::measure(&stride(), 50, Some(1_600));
        let json = serde_json::to_value(pace).unwrap();
        assert_eq!(json["maxActive"], 100);
        assert_eq!(json["slotSeconds"], 30.0);
        assert_eq!(json["seatsPerAdmission"], 0.5);
        assert_eq!(json["slotsFree"], 0);
        let read: AdmissionPace = serde_json::from_value(json).unwrap();
        assert_eq!(read, pace);
    }
}
