//! The honest ETA and the chance of a ticket: how fast admission will go (the configured rate
//! while slots are free, then as fast as shoppers leave the active cap, Little's law), measured
//! by the admitter and published on the status, and the forecast each waiting client makes
//! from it for its own number (ADR 0029).
//!
//! The admitter counts, in its one script per tick (`admit_tick.lua`), the slots freed, the
//! slot-seconds held, the offers that lapsed unclaimed, the sessions that ran to their end, the
//! admissions and the numbers they passed, and by windows of an eighth of a session the
//! admissions and the claimed slots still held ([`PaceCounters`], [`PaceWindows`]);
//! [`AdmissionPace::measure`] turns them into what the status shows (`pace`): the admissions a
//! second the cap sustains, the slots free now, the numbers passed per admission (leavers from
//! the queue), the no-show share, the seats sold per admission, and the forecast of the slots
//! (the share of admissions that hold their slot to the session's end, the others' slot time,
//! the slots in use that should be held to their deadline and the time to it). A client then
//! computes its ETA range ([`AdmissionPace::eta`]: a short simulation of the slots, which
//! foresees the pace's dip while the slots held to the end fill the cap)
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

/// The admit tick's windows ([`PaceWindows`]): the newest (under way) and the eight before it,
/// each an eighth of the session long.
pub const WINDOWS: usize = 9;
/// Before the share held to the end is measured, [`PRIOR_HELD_TO_THE_END`] counts as this many
/// admissions (a Beta prior): a few early sessions say little of the crowd.
pub const PRIOR_ADMISSIONS: f64 = 20.0;
/// The quick holders' slot times are taken as spread evenly up to this many times their mean (a
/// buyer's steps take about as long each time: few are much quicker or slower than the mean): a
/// claimed slot still held that long after its claim will be held to its deadline.
pub const QUICK_TIMES_TO_BE_HELD: f64 = 2.0;
/// The quick slot time is believed only after this many slots were freed before their deadline.
pub const MIN_QUICK_FREED: u64 = 5;
/// The steps of the ETA's forecast of the slots over its horizon (two sessions; then the pace
/// the model settles at).
pub const FORECAST_STEPS: usize = 480;
/// A number called is seen at the customer's next status read: near the front every 5 s
/// (`wait_policy::MIN_STATUS_INTERVAL`), so on average half of that after the call.
pub const CALL_SEEN_AFTER: Duration = Duration::from_millis(2_500);

/// The admit tick's windows (`pace_windows` of `admit_tick.lua`): for the newest window (under
/// way) and the eight before it, newest first, the admissions made in it and the claimed slots
/// of the sessions claimed in it still held (told by their deadlines, a session after).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PaceWindows {
    /// How long a window is (an eighth of the session).
    pub width: Duration,
    /// How far the tick is into the newest window.
    pub into_newest: Duration,
    /// Claimed slots still held, by the window of their claim, newest first.
    pub held: [u64; WINDOWS],
    /// Admissions made, by window, newest first.
    pub admitted: [u64; WINDOWS],
}

impl PaceWindows {
    /// `"<window ms>;<ms into the newest>;<held>,<admitted>;..."` (nine pairs, newest first);
    /// `None` for anything else (an empty field: not admitting).
    pub fn parse(field: &str) -> Option<Self> {
        let mut parts = field.split(';');
        let width = Duration::from_millis(parts.next()?.parse().ok()?);
        let into_newest = Duration::from_millis(parts.next()?.parse().ok()?);
        let mut windows = Self {
            width,
            into_newest,
            ..Self::default()
        };
        for j in 0..WINDOWS {
            let (held, admitted) = parts.next()?.split_once(',')?;
            windows.held[j] = held.parse().ok()?;
            windows.admitted[j] = admitted.parse().ok()?;
        }
        (parts.next().is_none() && !width.is_zero()).then_some(windows)
    }

    /// How long ago window `j`'s sessions were claimed, on average, seconds: its middle (the
    /// newest: half of what has passed of it).
    fn age(&self, j: usize) -> f64 {
        let into = self.into_newest.as_secs_f64();
        if j == 0 {
            into / 2.0
        } else {
            into + (j as f64 - 0.5) * self.width.as_secs_f64()
        }
    }

    /// How long ago window `j`'s youngest session was claimed, seconds.
    fn youngest_age(&self, j: usize) -> f64 {
        if j == 0 {
            0.0
        } else {
            self.into_newest.as_secs_f64() + (j - 1) as f64 * self.width.as_secs_f64()
        }
    }
}

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
    /// Sessions that ran to their end (the slot held to its deadline).
    pub ended: u64,
    /// This tick's windows (`None`: not from an admitting tick, or an older admitter).
    pub windows: Option<PaceWindows>,
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
    /// The forecast of the slots (present together with `heldToTheEndShare`,
    /// `quickSlotSeconds` and `heldToDeadline`): how long a session lasts, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_seconds: Option<f64>,
    /// The share of admissions that hold their slot to the session's end (a hold left to lapse,
    /// a tab left open): measured among the sessions claimed long enough ago, with
    /// [`PRIOR_HELD_TO_THE_END`] as a prior worth [`PRIOR_ADMISSIONS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_to_the_end_share: Option<f64>,
    /// The mean time the other admissions hold their slot (buyers, leavers, no-shows), seconds:
    /// the slot time of the slots freed before their deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick_slot_seconds: Option<f64>,
    /// The slots in use now expected to be held to their deadline: `[seconds until the
    /// deadline, slots]` by the window of their claim, newest first (a slot held long after
    /// the quick holders left is likely one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_to_deadline: Option<[[f64; 2]; WINDOWS]>,
}

/// The forecast of the slots, as the status publishes it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SlotForecast {
    session: f64,
    held_share: f64,
    quick: f64,
    held: [[f64; 2]; WINDOWS],
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
        let forecast = slot_forecast(counters);
        let sustained = match forecast {
            Some(forecast) => rate.min(
                counters.max_active as f64
                    / (forecast.held_share * forecast.session
                        + (1.0 - forecast.held_share) * forecast.quick),
            ),
            None => sustained,
        };
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
            session_seconds: forecast.map(|f| f.session),
            held_to_the_end_share: forecast.map(|f| f.held_share),
            quick_slot_seconds: forecast.map(|f| f.quick),
            held_to_deadline: forecast.map(|f| f.held),
        }
    }

    /// The published forecast of the slots, if the status has all of it.
    fn slot_forecast(&self) -> Option<SlotForecast> {
        Some(SlotForecast {
            session: positive(self.session_seconds?, 0.0),
            held_share: self.held_to_the_end_share?.clamp(0.0, 1.0),
            quick: positive(self.quick_slot_seconds?, 0.0),
            held: self.held_to_deadline?,
        })
        .filter(|f| f.session > 0.0 && f.quick > 0.0)
    }

    /// How long until a number `distance` past `servingUpTo` is seen called: the admissions it
    /// takes (the distance ÷ the numbers per admission), the first ones into the free slots at
    /// the configured rate, the rest as the cap frees slots, plus [`CALL_SEEN_AFTER`]. With the
    /// forecast of the slots ([`AdmissionPace::foreseen_seconds`]) the slots held to their
    /// deadlines free at them and the share held to the end of those admitted meanwhile is
    /// foreseen; without it, the cap frees slots at `maxActive ÷ slotSeconds` a second. The
    /// range: the quick (or mean) slot time a quarter shorter and longer.
    pub fn eta(&self, distance: u64) -> EtaRange {
        if distance == 0 {
            return EtaRange::NOW;
        }
        let admissions = distance as f64 / positive(self.numbers_per_admission, 1.0);
        let rate = positive(self.admits_per_second, 1.0);
        let seen = CALL_SEEN_AFTER.as_secs_f64();
        if let Some(forecast) = self.slot_forecast() {
            let at = |slot_share: f64| {
                let seconds = self.foreseen_seconds(admissions, &forecast, slot_share) + seen;
                Duration::from_secs_f64(seconds.clamp(0.0, 1e9))
            };
            return EtaRange {
                earliest: at(1.0 - ETA_RANGE_SHARE),
                likely: at(1.0),
                latest: at(1.0 + ETA_RANGE_SHARE),
            };
        }
        let at = |slot_share: f64| {
            let sustained = match self.slot_seconds {
                Some(seconds) => (self.max_active as f64 / (seconds * slot_share)).min(rate),
                None => positive(self.sustained_admits_per_second, rate),
            };
            let into_free = admissions.min(self.slots_free as f64);
            let seconds = into_free / rate + (admissions - into_free) / positive(sustained, rate);
            Duration::from_secs_f64((seconds + seen).clamp(0.0, 1e9))
        };
        EtaRange {
            earliest: at(1.0 - ETA_RANGE_SHARE),
            likely: at(1.0),
            latest: at(1.0 + ETA_RANGE_SHARE),
        }
    }

    /// Seconds until `admissions` more are admitted, by a forecast of the slots (`web/status.js`'s
    /// `foreseenSeconds`, the same arithmetic step by step): over two sessions in
    /// [`FORECAST_STEPS`] steps, the slots held to their deadline free then, the others (the
    /// quick holders) each step the step's share of their slot time (`quick_share` × the
    /// quick slot time); freed slots are filled at the configured rate, the share held to the
    /// end of those admitted to hold theirs a whole session, the rest to join the quick
    /// holders. Past the horizon, the pace the cap then sustains.
    fn foreseen_seconds(&self, admissions: f64, forecast: &SlotForecast, quick_share: f64) -> f64 {
        let rate = positive(self.admits_per_second, 1.0);
        let quick = forecast.quick * quick_share;
        let horizon = 2.0 * forecast.session;
        let step = horizon / FORECAST_STEPS as f64;
        let mut ending = vec![0.0; FORECAST_STEPS];
        let mut known = 0.0;
        for [seconds, slots] in forecast.held {
            let at = (seconds.max(0.0) / step).floor();
            if at < FORECAST_STEPS as f64 {
                ending[at as usize] += slots;
            }
            known += slots;
        }
        let mut quick_held = (self.slots_in_use as f64 - known).max(0.0);
        let mut free = self.slots_free as f64;
        let leave = (step / quick).min(1.0);
        let session_steps = FORECAST_STEPS / 2;
        let mut admitted = 0.0;
        for i in 0..FORECAST_STEPS {
            let left = quick_held * leave;
            quick_held -= left;
            free += left + ending[i];
            let admit = free.min(rate * step);
            if admit > 0.0 && admitted + admit >= admissions {
                return i as f64 * step + step * (admissions - admitted) / admit;
            }
            admitted += admit;
            free -= admit;
            quick_held += (1.0 - forecast.held_share) * admit;
            if i + session_steps < FORECAST_STEPS {
                ending[i + session_steps] += forecast.held_share * admit;
            }
        }
        let slot = forecast.held_share * forecast.session + (1.0 - forecast.held_share) * quick;
        let sustained = rate.min(self.max_active as f64 / slot);
        horizon + (admissions - admitted) / positive(sustained, rate)
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

/// The forecast of the slots from the admit tick's windows (`None` without them, or before
/// [`MIN_QUICK_FREED`] slots were freed before their deadline):
/// - the quick slot time: the slot time held, less the ended sessions' (a session each) and
///   the claimed slots' in use (their age), over the slots freed before their deadline;
/// - the share held to the end: the ended sessions and the slots still held
///   [`QUICK_TIMES_TO_BE_HELD`] quick slot times after their claim, of the admissions made
///   before then, with the prior [`PRIOR_HELD_TO_THE_END`] worth [`PRIOR_ADMISSIONS`] (and, within
///   the first session, at least the prior: the count can then only fall short);
/// - the slots in use expected to be held to their deadline, by window: a slot still held at
///   age `t` is a quick one with the odds `(1 − share) (1 − t ÷ (2 × quick))` to `share` (none
///   past [`QUICK_TIMES_TO_BE_HELD`] quick slot times).
fn slot_forecast(counters: &PaceCounters) -> Option<SlotForecast> {
    let windows = counters.windows?;
    let session = counters.session.as_secs_f64();
    if session <= 0.0 {
        return None;
    }
    let quick_freed = counters.freed.saturating_sub(counters.ended);
    if quick_freed < MIN_QUICK_FREED {
        return None;
    }
    let in_use_age: f64 = (0..WINDOWS)
        .map(|j| windows.held[j] as f64 * windows.age(j))
        .sum();
    let quick_held = counters.slot_ms / 1_000.0 - counters.ended as f64 * session - in_use_age;
    let quick = round_to(
        (quick_held / quick_freed as f64).max(MIN_SLOT_SECONDS),
        100.0,
    );
    let old = |j: usize| windows.youngest_age(j) >= QUICK_TIMES_TO_BE_HELD * quick;
    let still_held: u64 = (0..WINDOWS)
        .filter(|&j| old(j))
        .map(|j| windows.held[j])
        .sum();
    let admitted_since: u64 = (0..WINDOWS)
        .filter(|&j| !old(j))
        .map(|j| windows.admitted[j])
        .sum();
    let admitted_before = counters.admitted.saturating_sub(admitted_since) as f64;
    let measured_share = round_to(
        ((counters.ended + still_held) as f64 + PRIOR_HELD_TO_THE_END * PRIOR_ADMISSIONS)
            / (admitted_before + PRIOR_ADMISSIONS),
        10_000.0,
    )
    .min(1.0);
    // Within the first session the count can only fall short (a slot admitted before the cut
    // but claimed after it is not seen: all of an opening's burst when it falls at a window's
    // end), never run over: the prior is then the least it says.
    let held_share = if counters.observed < counters.session {
        measured_share.max(PRIOR_HELD_TO_THE_END)
    } else {
        measured_share
    };
    let mut held = [[0.0; 2]; WINDOWS];
    for (j, entry) in held.iter_mut().enumerate() {
        let age = windows.age(j);
        let quick_odds =
            (1.0 - held_share) * (1.0 - age / (QUICK_TIMES_TO_BE_HELD * quick)).max(0.0);
        let chance = if held_share > 0.0 {
            held_share / (held_share + quick_odds)
        } else {
            0.0
        };
        *entry = [
            round_to((session - age).max(0.0), 10.0),
            round_to(windows.held[j] as f64 * chance, 100.0),
        ];
    }
    Some(SlotForecast {
        session,
        held_share,
        quick,
        held,
    })
}

/// `value` rounded to `1 ÷ per` (the published precision).
fn round_to(value: f64, per: f64) -> f64 {
    (value * per).round() / per
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
            ended: 0,
            windows: None,
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
        // 300 s (the configured rate would have said 22 s), seen 2.5 s later.
        let eta = pace.eta(1_100);
        assert_eq!(seconds(eta.likely), 302.5);
        assert_eq!(seconds(eta.earliest), 227.5, "slots held a quarter shorter");
        assert_eq!(seconds(eta.latest), 377.5, "slots held a quarter longer");
        assert_eq!(pace.eta(0), EtaRange::NOW);
        // With 40 slots free, the first 40 admissions come at the rate (0.8 s), the other 960
        // as slots free (288 s).
        let mut freer = stride();
        freer.in_use = 60;
        let pace = AdmissionPace::measure(&freer, 50, None);
        let held = (900.0 * 30.0 + 100.0 * 15.0) / (900.0 + 30.0);
        let expected = 40.0 / 50.0 + 960.0 / (100.0 / held) + 2.5;
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
        assert_eq!(
            seconds(eta.likely),
            22.5,
            "20 s, and the call seen 2.5 s later"
        );
        assert_eq!(eta.earliest, eta.likely, "the rate bounds both ends");
        assert_eq!(seconds(eta.latest), 22.5);
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

    /// The windows of a sale 50 s in with 2-minute sessions (15 s windows, 5 s into the newest):
    /// 40 slots, the first 40 admitted at once and 90 since, the slots still held by the
    /// window of their claim (the oldest four held ever since: held to the end).
    fn first_session() -> PaceCounters {
        let windows = PaceWindows {
            width: Duration::from_secs(15),
            into_newest: Duration::from_secs(5),
            held: [10, 18, 6, 4, 0, 0, 0, 0, 0],
            admitted: [12, 38, 30, 50, 0, 0, 0, 0, 0],
        };
        PaceCounters {
            max_active: 40,
            in_use: 40,
            admitted: 130,
            freed: 90,
            // 90 freed after 10 s each; those in use for their age (2.5, 12.5, 27.5 and 42.5 s).
            slot_ms: (90.0 * 10.0 + 10.0 * 2.5 + 18.0 * 12.5 + 6.0 * 27.5 + 4.0 * 42.5) * 1_000.0,
            no_shows: 0,
            numbers: 130,
            seats_base: None,
            observed: Duration::from_secs(50),
            session: Duration::from_secs(120),
            ended: 0,
            windows: Some(windows),
        }
    }

    #[test]
    fn the_windows_read_back_from_the_tick_and_nothing_else_does() {
        let field = "15000;5000;10,12;18,38;6,30;4,50;0,0;0,0;0,0;0,0;0,0";
        assert_eq!(PaceWindows::parse(field), first_session().windows);
        assert_eq!(PaceWindows::parse(""), None, "not admitting");
        assert_eq!(
            PaceWindows::parse("15000;5000;10,12"),
            None,
            "too few windows"
        );
        assert_eq!(
            PaceWindows::parse(&format!("{field};1,1")),
            None,
            "too many windows"
        );
        assert_eq!(
            PaceWindows::parse(&field.replacen("15000", "0", 1)),
            None,
            "no width"
        );
        assert_eq!(PaceWindows::parse(&field.replace("18,38", "18")), None);
    }

    #[test]
    fn the_slots_held_long_after_the_quick_left_are_foreseen_held_to_their_deadline() {
        let pace = AdmissionPace::measure(&first_session(), 50, None);
        // The quick slot time: the 90 freed held 10 s each (what those in use held is theirs).
        assert_eq!(pace.quick_slot_seconds, Some(10.0));
        assert_eq!(pace.session_seconds, Some(120.0));
        // Claimed 20 s (2 × 10 s) ago or more: the two oldest windows, 10 of their 80
        // admissions still held; with the prior (2 of 20): 12 of 100.
        assert_eq!(pace.held_to_the_end_share, Some(0.12));
        let held = pace.held_to_deadline.unwrap();
        // The oldest window (claimed ~42.5 s ago, past twice the quick slot time): every slot
        // held to its deadline, ~77.5 s on; and the next (~27.5 s ago).
        assert_eq!(held[3], [77.5, 4.0]);
        assert_eq!(held[2], [92.5, 6.0]);
        // The newest (claimed ~2.5 s ago): about the share held to the end, 10 × 0.12 ÷
        // (0.12 + 0.88 × (1 − 2.5 ÷ 20)).
        let newest = 10.0 * 0.12 / (0.12 + 0.88 * (1.0 - 2.5 / 20.0));
        assert!((held[0][1] - newest).abs() < 0.01, "{held:?}");
        assert_eq!(held[0][0], 117.5);
        // Without the windows (an older admitter): no forecast, the model of the mean.
        let mut older = first_session();
        older.windows = None;
        let pace = AdmissionPace::measure(&older, 50, None);
        assert_eq!(pace.held_to_the_end_share, None);
        assert_eq!(pace.held_to_deadline, None);
        // Nor before a few slots were freed before their deadline.
        let mut young = first_session();
        young.freed = MIN_QUICK_FREED - 1;
        assert_eq!(
            AdmissionPace::measure(&young, 50, None).quick_slot_seconds,
            None
        );
        // Within the first session, never less than the prior: the slots claimed after the cut
        // are not seen (here the two oldest windows' four and six); after it, as counted.
        let mut unseen = first_session();
        unseen.windows.as_mut().unwrap().held = [10, 18, 0, 0, 0, 0, 0, 0, 0];
        unseen.in_use = 28;
        unseen.slot_ms = (90.0 * 10.0 + 10.0 * 2.5 + 18.0 * 12.5) * 1_000.0;
        assert_eq!(
            AdmissionPace::measure(&unseen, 50, None).held_to_the_end_share,
            Some(PRIOR_HELD_TO_THE_END),
            "2 of 100 counted, within the first session"
        );
        unseen.observed = Duration::from_secs(130);
        assert_eq!(
            AdmissionPace::measure(&unseen, 50, None).held_to_the_end_share,
            Some(0.02)
        );
        // Sessions that ended count as held to the end: 20 more of 20 more admitted before.
        let mut later = first_session();
        later.ended = 20;
        later.freed += 20;
        later.admitted += 20;
        later.slot_ms += 20.0 * 120.0 * 1_000.0;
        let pace = AdmissionPace::measure(&later, 50, None);
        assert_eq!(pace.quick_slot_seconds, Some(10.0));
        assert_eq!(pace.held_to_the_end_share, Some(0.2667), "32 of 120");
    }

    #[test]
    fn the_forecast_foresees_the_pace_dip_while_slots_are_held_to_their_deadline() {
        let pace = AdmissionPace::measure(&first_session(), 50, None);
        // The forecast settles at the cap over the mean slot time (0.12 × 120 + 0.88 × 10 s).
        let settled = 40.0 / (0.12 * 120.0 + 0.88 * 10.0);
        assert!((pace.sustained_admits_per_second - settled).abs() < 1e-9);
        // The first admissions come as the quick holders leave (~26 of them, 10 s each), faster
        // than the settled pace: the first 10 in well under 10 ÷ 1.72 s.
        let soon = pace.eta(10).likely.as_secs_f64() - 2.5;
        assert!(soon < 10.0 / settled * 0.8, "{soon}");
        // Far back the pace is the settled one (past the horizon), give or take the first
        // session's dip and bounce: 2,000 admissions.
        let far = pace.eta(2_000).likely.as_secs_f64();
        assert!((far - 2_000.0 / settled).abs() < 0.1 * far, "{far}");
        // The range: the quick slot time a quarter shorter and longer.
        let range = pace.eta(300);
        assert!(range.earliest < range.likely && range.likely < range.latest);
        // A held slot's deadline is when it frees: with every slot in use held to a deadline
        // 60 s away (and nothing held to the end from now on), nobody is called before then.
        let mut stuck = pace;
        stuck.held_to_deadline = Some([[60.0, 40.0 / 9.0]; WINDOWS]);
        stuck.held_to_the_end_share = Some(0.0);
        let first = stuck.eta(1).likely.as_secs_f64() - 2.5;
        assert!((60.0..60.5).contains(&first), "{first}");
        // With free slots and a quick crowd the rate is the pace, as without the forecast.
        let mut roomy = pace;
        roomy.max_active = 10_000;
        roomy.slots_free = 9_960;
        assert!((roomy.eta(1_000).likely.as_secs_f64() - (20.0 + 2.5)).abs() < 1e-6);
    }
}
