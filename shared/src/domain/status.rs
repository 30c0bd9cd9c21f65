//! The public status of an event: one small document, the same for everyone, written once per
//! admit tick and served through the CDN (`GET /events/{eventId}/status`). A waiting client
//! computes its distance (`its number − servingUpTo`) and its ETA from this alone, so the crowd's
//! waiting costs the origin about one request per cache period, not one per customer.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::domain::clock::rfc3339;
use crate::domain::wait_forecast::{AdmissionPace, EtaRange, PaceCounters};
use crate::domain::wait_policy;

/// How long the CDN (and browsers) may keep a status. Short: the status changes every tick.
pub const STATUS_MAX_AGE: Duration = Duration::from_secs(2);
/// A stale status may be served this long while a fresh one is fetched.
pub const STATUS_STALE_WHILE_REVALIDATE: Duration = Duration::from_secs(5);
/// ... and this long while the origin fails (a Redis failover): the crowd keeps reading the
/// last status instead of turning into a stampede of errors.
pub const STATUS_STALE_IF_ERROR: Duration = Duration::from_secs(60);

/// What the public sees of an event's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PublicState {
    /// Before opening: joining puts a customer in the pre-queue, drawn at opening.
    PreQueue,
    /// Admitting (or about to: the draw runs in the first seconds after opening).
    Open,
    /// An operator paused admission; places and the queue stay.
    Paused,
    /// Closed by an operator.
    Closed,
    /// Every seat is sold.
    SoldOut,
    /// The event is cancelled: nothing more is sold, every payment is refunded.
    Cancelled,
}

/// The draw's public part: the commitment always, the seed once the draw is published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrawStatus {
    /// The hash of the event's draw seed, shown from the event's first configuration on.
    pub commitment: String,
    /// Revealed once the draw is published (`GET /events/{eventId}/draw`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// How many were in the pre-queue when it closed; absent before opening.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrants: Option<u64>,
    /// The published draw's chunk names are this many leading hex digits of an entrant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_length: Option<usize>,
    /// Whether the draw is published (then `seed` is shown and the chunks can be fetched).
    pub published: bool,
}

/// The public status document (`GET /events/{eventId}/status`), camelCase JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventStatus {
    /// The event the status is of.
    pub event_id: String,
    /// What the public sees of the event's state.
    pub state: PublicState,
    /// When admission starts, RFC 3339 in UTC.
    pub opens_at: String,
    /// The highest queue number admitted so far: every number up to it has been called.
    pub serving_up_to: u64,
    /// How fast `servingUpTo` advances, numbers per second: measured (leavers included, their
    /// numbers are passed too) once there is a measurement, the configured admission rate before.
    pub advance_per_second: f64,
    /// `false` while `advancePerSecond` is only the configured rate.
    pub advance_measured: bool,
    /// The last queue number handed out.
    pub last_number: u64,
    /// Customers waiting with a number (leavers excluded).
    pub waiting: u64,
    /// An admitted customer must claim (poll the origin) within this many seconds.
    pub claim_window_seconds: u64,
    /// Seats not sold, as last counted (once a minute); absent before the first count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seats_left: Option<u64>,
    /// The pre-queue draw's public part.
    pub draw: DrawStatus,
    /// Once the draw is published: a pre-queue entrant fetches its chunk at a moment of its own
    /// within this many seconds of seeing it published (`wait_policy::chunk_fetch_window`), so
    /// the pre-queue's fetches do not all come in the first seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_fetch_window_seconds: Option<u64>,
    /// Before the opening, for a pre-queue too big for the edge to take in the usual 10 s
    /// (`wait_policy::opening_reads`): each entrant reads the status once after the opening,
    /// at a moment of its own within `openingReadSpreadSeconds` from this many seconds after
    /// it. Absent: within 10 s of the opening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening_read_delay_seconds: Option<u64>,
    /// See `openingReadDelaySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening_read_spread_seconds: Option<u64>,
    /// Once the draw of a paced pre-queue is in: no number is called before this time, RFC 3339
    /// in UTC (`wait_policy::first_call_at`), so every entrant holds its number first. Absent:
    /// numbers are called from the publication on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call_at: Option<String>,
    /// Set when the cache lost the event and it was re-loaded: a client holding a ticket issued
    /// before this time polls once with it, which puts it back at its number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_at: Option<String>,
    /// Once admission has started: how fast it goes, as the admitter measures it (the active
    /// cap, the slot time, no-shows, leavers, seats per admission), from which a waiting client
    /// computes its ETA range and whether the sale will likely be sold out before its turn
    /// (`wait_forecast`, ADR 0029).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<AdmissionPace>,
    /// For an event with priority groups ([`crate::domain::priority_group`]): its lines and the
    /// one being served. Absent: no groups. Names only, never who is in a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<GroupsServed>,
    /// When the admit tick wrote this status, RFC 3339 in UTC.
    pub updated_at: String,
}

/// Which priority group is being served, as one line's status shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupsServed {
    /// The line this status is of: a group's name, or `general` for everyone else.
    pub line: String,
    /// Every line, first admitted first: the groups, then `general`.
    pub order: Vec<String>,
    /// The line being served: the first line ahead of this one with anyone waiting (or still
    /// drawing its pre-queue), else this one. Nobody in a line behind it is called meanwhile.
    pub serving: String,
}

impl DrawStatus {
    /// What this status says of the draw, as `draw::verify_status` compares it with the
    /// published summary.
    pub fn of_draw(&self) -> crate::domain::draw::StatusOfDraw {
        crate::domain::draw::StatusOfDraw {
            published: self.published,
            entrants: self.entrants,
            seed: self.seed.clone(),
            commitment: self.commitment.clone(),
            prefix_length: self.prefix_length,
        }
    }
}

impl EventStatus {
    /// The client's arithmetic, written once here for the web page, the simulation and tests:
    /// the seconds until `number` is called: the likely end of [`EventStatus::eta_range`] (at the
    /// status's advance rate if it has no `pace`).
    pub fn eta(&self, number: u64) -> Duration {
        self.eta_range(number).likely
    }

    /// When `number` is likely called, and the range around it: the pace's model
    /// ([`AdmissionPace::eta`]: free slots at the rate, then as the cap frees slots), or, before
    /// any pace is published, the distance at the advance rate (a range of one point).
    pub fn eta_range(&self, number: u64) -> EtaRange {
        let distance = number.saturating_sub(self.serving_up_to);
        match &self.pace {
            Some(pace) => pace.eta(distance),
            None => {
                let eta = wait_policy::eta_for_distance(distance, self.advance_per_second);
                EtaRange {
                    earliest: eta,
                    likely: eta,
                    latest: eta,
                }
            }
        }
    }

    /// [`EventStatus::eta_range`] as of `now`: after the first call of a paced opening if that
    /// is still to come.
    pub fn eta_range_at(&self, number: u64, now: SystemTime) -> EtaRange {
        let range = self.eta_range(number);
        if range.likely.is_zero() {
            return range;
        }
        range.after(self.until(self.first_call_at.as_deref(), now))
    }

    /// Whether the holder of `number` should be told the sale will very likely be sold out
    /// before its turn ([`AdmissionPace::likely_sold_out`]): from the seats left, the numbers
    /// ahead and the measured seats per admission. `false` without a pace or a count of seats.
    pub fn likely_sold_out(&self, number: u64) -> bool {
        let distance = number.saturating_sub(self.serving_up_to);
        match (&self.pace, self.seats_left) {
            (Some(pace), Some(seats_left)) if distance > 0 => {
                pace.likely_sold_out(distance, seats_left)
            }
            _ => false,
        }
    }

    /// The seconds until `number` is called, as of `now`: [`EventStatus::eta`], after the first
    /// call of a paced opening if that is still to come (`firstCallAt`).
    pub fn eta_at(&self, number: u64, now: SystemTime) -> Duration {
        let eta = self.eta(number);
        if eta.is_zero() {
            return eta;
        }
        self.until(self.first_call_at.as_deref(), now) + eta
    }

    /// When to read the status again, for a client holding `number`: the policy's interval for
    /// the earliest its number may be called (the ETA range's lower end: a queue going faster
    /// than told is noticed, and a called customer claims, and frees its slot, soon), as
    /// `Retry-After` would say it (see [`EventStatus::next_read_jittered`] for when a client
    /// actually reads).
    pub fn next_read(&self, number: u64, now: SystemTime) -> Duration {
        match self.state {
            PublicState::PreQueue => wait_policy::next_status_read(self.until_opening(now)),
            _ => wait_policy::next_status_read(self.eta_range_at(number, now).earliest),
        }
    }

    /// How the pre-queue reads after the opening, as this status says
    /// (`openingReadDelaySeconds`, `openingReadSpreadSeconds`).
    pub fn opening_reads(&self) -> wait_policy::OpeningReads {
        match (
            self.opening_read_delay_seconds,
            self.opening_read_spread_seconds,
        ) {
            (Some(delay), Some(spread)) => wait_policy::OpeningReads {
                delay: Duration::from_secs(delay),
                spread: Duration::from_secs(spread).min(wait_policy::MAX_OPENING_READ_SPREAD),
            },
            _ => wait_policy::OpeningReads::UNPACED,
        }
    }

    /// How long after seeing the draw published a pre-queue entrant with the uniform sample `u`
    /// fetches its chunk: `u` of `chunkFetchWindowSeconds` (at once if the status has none).
    pub fn chunk_fetch_delay(&self, u: f64) -> Duration {
        let u = if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) };
        Duration::from_secs(self.chunk_fetch_window_seconds.unwrap_or(0)).mul_f64(u)
    }

    /// When a client holding `number` (0: none yet) reads the status again, given its uniform
    /// sample `u` in `[0, 1)`: the policy's interval moved within ±20 %
    /// (`wait_policy::jittered`); before opening, the pre-queue's reads
    /// (`wait_policy::next_pre_queue_read`): a jittered tenth of the time to the opening, at
    /// least a minute, or once just after it, within 10 s. What the web page does
    /// (`web/status.js`).
    pub fn next_read_jittered(&self, number: u64, now: SystemTime, u: f64) -> Duration {
        match self.state {
            PublicState::PreQueue => {
                wait_policy::next_pre_queue_read(self.until_opening(now), u, self.opening_reads())
            }
            _ => wait_policy::jittered(self.next_read(number, now), u),
        }
    }

    /// How long until `opensAt` (zero once past, or if it does not parse).
    fn until_opening(&self, now: SystemTime) -> Duration {
        self.until(Some(&self.opens_at), now)
    }

    /// How long until the RFC 3339 time `at` (zero once past, if absent or if it does not
    /// parse).
    fn until(&self, at: Option<&str>, now: SystemTime) -> Duration {
        at.and_then(crate::domain::clock::parse_rfc3339)
            .and_then(|at| at.duration_since(now).ok())
            .unwrap_or_default()
    }

    /// The `Cache-Control` of a status answer.
    pub fn cache_control() -> String {
        format!(
            "public, max-age={}, stale-while-revalidate={}, stale-if-error={}",
            STATUS_MAX_AGE.as_secs(),
            STATUS_STALE_WHILE_REVALIDATE.as_secs(),
            STATUS_STALE_IF_ERROR.as_secs()
        )
    }
}

/// What the admit tick read about the event, from which the status is made.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusInputs {
    /// The queue's state in the settings.
    pub state: crate::domain::event_settings::QueueState,
    /// Why a closed queue closed: `sold_out` (the public state is then `sold_out`) or `closed`;
    /// `None` unless closed.
    pub closed_reason: Option<String>,
    /// When admission starts (before it, the public state is `pre_queue`).
    pub opens_at: SystemTime,
    /// The highest queue number called so far.
    pub serving: u64,
    /// How fast `serving` advances, numbers per second; `None` until measured.
    pub measured_advance: Option<f64>,
    /// The configured admissions per second, shown while nothing is measured.
    pub configured_rate: u32,
    /// The last queue number handed out.
    pub last_number: u64,
    /// Customers waiting with a number.
    pub waiting: u64,
    /// How long an admitted customer has to claim the admission.
    pub claim_window: Duration,
    /// Seats not sold, as last counted; `None` before the first count.
    pub seats_left: Option<u64>,
    /// The commitment to the event's draw seed.
    pub commitment: String,
    /// Set once the pre-queue closed.
    pub entrants: Option<u64>,
    /// The revealed seed, once the draw is published.
    pub revealed_seed: Option<String>,
    /// When the event was re-loaded after a cache loss, if it was.
    pub restored_at: Option<SystemTime>,
    /// Before the opening: how many are in the pre-queue (the edge's opening is paced to it).
    pub pre_queue: Option<u64>,
    /// The requests a second the pre-queue's opening may take at the edge
    /// (`wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND` unless configured).
    pub edge_budget: u64,
    /// Once drawn: when the first number may be called (`wait_policy::first_call_at`).
    pub first_call_at: Option<SystemTime>,
    /// What the admitter counted of admission's pace (`None`: nothing yet, or not from a tick).
    pub pace: Option<PaceCounters>,
}

impl StatusInputs {
    /// The document every waiting client reads, as of `now`.
    pub fn status(&self, event: &str, now: SystemTime) -> EventStatus {
        use crate::domain::event_settings::{ClosedReason, QueueState};
        let state = match self.state {
            QueueState::Closed => match self.closed_reason.as_deref().and_then(ClosedReason::parse)
            {
                Some(ClosedReason::SoldOut) => PublicState::SoldOut,
                Some(ClosedReason::Cancelled) => PublicState::Cancelled,
                Some(ClosedReason::Closed) | None => PublicState::Closed,
            },
            QueueState::Paused => PublicState::Paused,
            QueueState::Open if now < self.opens_at => PublicState::PreQueue,
            QueueState::Open => PublicState::Open,
        };
        let published = self.revealed_seed.is_some();
        let opening_reads = self
            .pre_queue
            .filter(|_| state == PublicState::PreQueue)
            .map(|entrants| wait_policy::opening_reads(entrants, self.edge_budget))
            .filter(wait_policy::OpeningReads::paced);
        let prefix_length =
            published.then(|| crate::domain::draw::prefix_len(self.entrants.unwrap_or_default()));
        EventStatus {
            event_id: event.to_owned(),
            state,
            opens_at: rfc3339(self.opens_at),
            serving_up_to: self.serving,
            advance_per_second: self
                .measured_advance
                .unwrap_or(f64::from(self.configured_rate)),
            advance_measured: self.measured_advance.is_some(),
            last_number: self.last_number,
            waiting: self.waiting,
            claim_window_seconds: self.claim_window.as_secs(),
            seats_left: self.seats_left,
            draw: DrawStatus {
                commitment: self.commitment.clone(),
                seed: self.revealed_seed.clone(),
                entrants: self.entrants,
                prefix_length,
                published,
            },
            chunk_fetch_window_seconds: prefix_length.map(|length| {
                let chunks = 16u64.pow(length as u32);
                wait_policy::chunk_fetch_window(chunks, self.claim_window).as_secs()
            }),
            opening_read_delay_seconds: opening_reads.map(|reads| reads.delay.as_secs()),
            opening_read_spread_seconds: opening_reads.map(|reads| reads.spread.as_secs()),
            first_call_at: self
                .first_call_at
                .filter(|_| published && state != PublicState::PreQueue)
                .map(rfc3339),
            restored_at: self.restored_at.map(rfc3339),
            pace: self
                .pace
                .filter(|counters| counters.max_active > 0)
                .filter(|_| matches!(state, PublicState::Open | PublicState::Paused))
                .map(|counters| {
                    AdmissionPace::measure(&counters, self.configured_rate, self.seats_left)
                }),
            groups: None,
            updated_at: rfc3339(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event_settings::QueueState;

    fn inputs(now: SystemTime) -> StatusInputs {
        StatusInputs {
            state: QueueState::Open,
            closed_reason: None,
            opens_at: now - Duration::from_secs(60),
            serving: 1_200,
            measured_advance: Some(40.0),
            configured_rate: 50,
            last_number: 90_000,
            waiting: 80_000,
            claim_window: Duration::from_secs(60),
            seats_left: Some(3_000),
            commitment: "c".repeat(64),
            entrants: Some(5_000),
            revealed_seed: Some("s".repeat(64)),
            restored_at: None,
            pre_queue: None,
            edge_budget: wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
            first_call_at: None,
            pace: None,
        }
    }

    #[test]
    fn the_state_says_what_a_customer_can_expect() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut given = inputs(now);
        assert_eq!(given.status("gala", now).state, PublicState::Open);
        given.opens_at = now + Duration::from_secs(1);
        assert_eq!(given.status("gala", now).state, PublicState::PreQueue);
        given.state = QueueState::Paused;
        assert_eq!(given.status("gala", now).state, PublicState::Paused);
        given.state = QueueState::Closed;
        assert_eq!(given.status("gala", now).state, PublicState::Closed);
        given.closed_reason = Some("sold_out".into());
        assert_eq!(given.status("gala", now).state, PublicState::SoldOut);
        given.closed_reason = Some("cancelled".into());
        assert_eq!(given.status("gala", now).state, PublicState::Cancelled);
    }

    #[test]
    fn a_client_computes_its_eta_and_next_read_from_the_status_alone() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let status = inputs(now).status("gala", now);
        // 4,000 numbers to go at 40 a second.
        assert_eq!(status.eta(5_200), Duration::from_secs(100));
        assert_eq!(status.next_read(5_200, now), Duration::from_secs(10));
        // Far back: at most every 5 minutes; at the front: every 5 s.
        assert_eq!(status.next_read(1_000_000, now), Duration::from_secs(300));
        assert_eq!(status.next_read(1_210, now), Duration::from_secs(5));
        // Called already.
        assert_eq!(status.eta(1_000), Duration::ZERO);
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["servingUpTo"], 1_200);
        assert_eq!(json["state"], "open");
        assert_eq!(json["draw"]["published"], true);
        assert_eq!(json["draw"]["prefixLength"], 2);
    }

    #[test]
    fn each_client_reads_at_a_moment_of_its_own() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let status = inputs(now).status("gala", now);
        // 4,000 numbers to go at 40 a second: every 10 s, within 8–12 s.
        assert_eq!(
            status.next_read_jittered(5_200, now, 0.0),
            Duration::from_secs(8)
        );
        assert_eq!(
            status.next_read_jittered(5_200, now, 1.0),
            Duration::from_secs(12)
        );
        // Before opening, 30 s to go: once, within 10 s after the opening, not every 5 s.
        let mut given = inputs(now);
        given.opens_at = now + Duration::from_secs(30);
        given.revealed_seed = None;
        let before = given.status("gala", now);
        assert_eq!(before.state, PublicState::PreQueue);
        assert_eq!(
            before.next_read(0, now),
            Duration::from_secs(5),
            "the policy's interval"
        );
        assert_eq!(
            before.next_read_jittered(0, now, 0.0),
            Duration::from_secs(30)
        );
        assert_eq!(
            before.next_read_jittered(0, now, 0.7),
            Duration::from_secs(37)
        );
    }

    #[test]
    fn the_chunk_fetch_window_comes_with_the_published_draw() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut given = inputs(now);
        // 5,000 entrants: 256 chunks, 6 s at 50 misses a second.
        let json = serde_json::to_value(given.status("gala", now)).unwrap();
        assert_eq!(json["chunkFetchWindowSeconds"], 6);
        // Two million: 65,536 chunks, capped at a third of the 60 s claim window.
        given.entrants = Some(2_000_000);
        assert_eq!(
            given.status("gala", now).chunk_fetch_window_seconds,
            Some(20)
        );
        given.claim_window = Duration::from_secs(30);
        assert_eq!(
            given.status("gala", now).chunk_fetch_window_seconds,
            Some(10)
        );
        // Not before the draw is published; a status without it still reads.
        given.revealed_seed = None;
        let json = serde_json::to_value(given.status("gala", now)).unwrap();
        assert!(json.get("chunkFetchWindowSeconds").is_none(), "{json}");
        let read: EventStatus = serde_json::from_value(json).unwrap();
        assert_eq!(read.chunk_fetch_window_seconds, None);
    }

    #[test]
    fn a_big_pre_queue_learns_its_paced_opening_and_waits_for_the_first_call() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut given = inputs(now);
        given.opens_at = now + Duration::from_secs(30);
        given.revealed_seed = None;
        given.entrants = None;
        // 500,000 in the pre-queue: the usual 10 s, nothing said.
        given.pre_queue = Some(500_000);
        let json = serde_json::to_value(given.status("gala", now)).unwrap();
        assert!(json.get("openingReadSpreadSeconds").is_none(), "{json}");
        // 10 M at 150,000 a second: from 80 s after the opening, over 134 s; each client's
        // read is in there.
        given.pre_queue = Some(10_000_000);
        given.edge_budget = 150_000;
        let before = given.status("gala", now);
        let json = serde_json::to_value(&before).unwrap();
        assert_eq!(json["openingReadDelaySeconds"], 80);
        assert_eq!(json["openingReadSpreadSeconds"], 134);
        assert_eq!(
            before.next_read_jittered(0, now, 0.0),
            Duration::from_secs(30 + 80)
        );
        assert_eq!(
            before.next_read_jittered(0, now, 1.0),
            Duration::from_secs(30 + 80 + 134)
        );
        // After the draw: the first call 200 s away; number 100 at 40 a second is 2.5 s past
        // it, and reads accordingly (a tenth of 202 s), not every 5 s while nothing moves.
        let opened = now + Duration::from_secs(60);
        given.opens_at = now;
        given.serving = 0;
        given.entrants = Some(10_000_000);
        given.revealed_seed = Some("s".repeat(64));
        given.first_call_at = Some(opened + Duration::from_secs(200));
        let after = given.status("gala", opened);
        assert_eq!(
            after.first_call_at.as_deref(),
            Some(rfc3339(opened + Duration::from_secs(200)).as_str())
        );
        assert!(after.opening_read_spread_seconds.is_none());
        assert_eq!(after.eta_at(100, opened), Duration::from_millis(202_500));
        assert_eq!(after.next_read(100, opened), Duration::from_secs(21));
        assert_eq!(
            after.eta_at(100, opened + Duration::from_secs(300)),
            after.eta(100)
        );
        // A client's chunk comes within the window the status gives.
        assert_eq!(after.chunk_fetch_window_seconds, Some(20));
        assert_eq!(after.chunk_fetch_delay(0.5), Duration::from_secs(10));
        assert_eq!(after.chunk_fetch_delay(f64::NAN), Duration::from_secs(10));
    }

    #[test]
    fn a_cap_limited_queue_is_told_the_pace_the_cap_allows_and_the_chance_of_a_ticket() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut given = inputs(now);
        // 200 slots, all in use, each held 40 s (1,000 freed after 40 s, 200 halfway): 5 a
        // second sustained, not the 50 configured nor the 40 measured in the opening burst.
        given.pace = Some(PaceCounters {
            max_active: 200,
            in_use: 200,
            admitted: 1_200,
            freed: 1_000,
            slot_ms: (1_000.0 * 40.0 + 200.0 * 20.0) * 1_000.0,
            no_shows: 60,
            numbers: 1_200,
            seats_base: Some((4_000, 0)),
            observed: Duration::from_secs(600),
            session: Duration::from_secs(300),
            ended: 0,
            windows: None,
        });
        given.seats_left = Some(1_000);
        let status = given.status("gala", now);
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["pace"]["slotSeconds"], 40.0);
        assert_eq!(json["pace"]["sustainedAdmitsPerSecond"], 5.0);
        assert_eq!(json["pace"]["seatsPerAdmission"], 3.0);
        assert_eq!(json["pace"]["noShowShare"], 0.05);
        // 4,000 numbers to go: 800 s (the advance rate alone said 100 s), within 600–1,000 s,
        // each seen 2.5 s later (at the next read).
        assert_eq!(status.eta(5_200), Duration::from_millis(802_500));
        let range = status.eta_range_at(5_200, now);
        assert_eq!(
            (range.earliest, range.latest),
            (
                Duration::from_millis(602_500),
                Duration::from_millis(1_002_500)
            )
        );
        assert_eq!(
            status.next_read(5_200, now),
            Duration::from_secs(61),
            "a tenth of the earliest (602.5 s), rounded up"
        );
        // 3 seats an admission, 1,000 left: 200 shopping and 200 ahead already want 1,200.
        assert!(status.likely_sold_out(1_400));
        assert!(
            !status.likely_sold_out(1_300),
            "600 + 300 seats: not 1.2 × 1,000"
        );
        assert!(!status.likely_sold_out(1_000), "called already");
        // Without a count of the seats left, never said.
        given.seats_left = None;
        assert!(!given.status("gala", now).likely_sold_out(1_000_000));
        // No pace before the opening, nor once the sale is over; a status without one reads.
        given.opens_at = now + Duration::from_secs(30);
        assert!(given.status("gala", now).pace.is_none());
        given.opens_at = now - Duration::from_secs(30);
        given.state = QueueState::Closed;
        given.closed_reason = Some("sold_out".into());
        let closed = serde_json::to_value(given.status("gala", now)).unwrap();
        assert!(closed.get("pace").is_none(), "{closed}");
        let read: EventStatus = serde_json::from_value(closed).unwrap();
        assert_eq!(read.pace, None);
    }

    #[test]
    fn the_seed_is_absent_until_published() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut given = inputs(now);
        given.revealed_seed = None;
        let json = serde_json::to_value(given.status("gala", now)).unwrap();
        assert!(json["draw"].get("seed").is_none(), "{json}");
        assert_eq!(json["draw"]["commitment"], "c".repeat(64));
    }
}
