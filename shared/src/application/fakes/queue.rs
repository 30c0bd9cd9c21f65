//! `MemoryQueue`: the queue's ports in memory, so the admit loop, the restore, numbering and the
//! expiry sweep can be unit-tested without Redis. It follows what the Redis adapter and its Lua
//! scripts do (`admit_tick.lua`, `join.lua`, `restore_event.lua`, `restore_place.lua`,
//! `draw_numbers.lua`, `extend_numbers.lua`, `close.lua`...), kept small: a line of numbered
//! customers, the offered and active sets with their deadlines, the serving cursor and token
//! bucket, the numbering ceiling and the restored frontier. Where it simplifies, a comment says.
//!
//! It plays a cache loss ([`MemoryQueue::flush`]: everything forgotten, as `FLUSHALL`) and an
//! outage ([`MemoryQueue::go_down`], [`MemoryQueue::fail_next`]: calls fail with
//! [`LineupError::Unavailable`] from [`Store::Queue`], changing nothing).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;

use crate::application::admit::{EntrantPages, PreQueueSize};
use crate::application::error::{ChallengeRefused, LineupError, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::event_records::EventRecord;
use crate::application::ports::queue::{
    Admitter, EventSettingsStore, Joined, NumberRange, NumberRanges, PlaceRestorer, PreQueueDraw,
    RestoreContext, RestoreDone, RestoreOutcome, RestoredPlace, Standing, StatusBoard, TickMode,
    TickReport, WaitingLine,
};
use crate::domain::access_code::CodeShown;
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::draw::DrawSeed;
use crate::domain::event_settings::{ClosedReason, EventSettings, QueueState};
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::proof_of_work::WorkShown;
use crate::domain::status::StatusInputs;

/// As the Redis adapter's `RESTORE_GRACE`: after a restore, admission calls no number past the
/// restored `serving` for this long, then moves through the pre-loss numbers at the rate.
pub(crate) const RESTORE_GRACE: Duration = Duration::from_secs(15);
/// As the adapter's `FORGET_LAPSED_AFTER`: lapsed admissions and offers are dropped after this.
const FORGET_LAPSED_AFTER: Duration = Duration::from_secs(60 * 60);
/// As the adapter's `NUMBERS_TOP_UP_LOCK`.
const NUMBERS_TOP_UP_LOCK: Duration = Duration::from_secs(3);

/// The locks the adapter takes with `SET NX PX` (each its own key, outside the settings hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Lock {
    Restore,
    Draw,
    Numbers,
}

/// The restore marks `restore_event.lua` writes in the settings hash.
#[derive(Debug, Clone, Copy)]
struct Restored {
    at_ms: u64,
    serving: u64,
    lost_since_ms: Option<u64>,
    ceiling: u64,
}

/// One event's keys. The event "exists" (its settings hash does) while it is in the map; the
/// other keys go with it. Simplification: in Redis they are separate keys, and a write to one
/// of them while the settings hash is missing would create it alone (see `mark_drawn`).
struct EventState {
    settings: EventSettings,
    seed: DrawSeed,
    closed_reason: Option<String>,
    seats_left: Option<u64>,
    next_number: u64,
    number_ceiling: u64,
    number_block: u64,
    numbers_reserved_at_ms: Option<u64>,
    numbers_reserved_from: u64,
    /// Set when the pre-queue closed (the count of its entrants).
    entrants: Option<u64>,
    drawn: bool,
    /// A paced opening's first call (Unix ms): nobody is admitted before it.
    first_call_at_ms: Option<u64>,
    restored: Option<Restored>,
    /// The admission hash: the cursor and the token bucket (tokens, refilled at).
    serving: u64,
    bucket: Option<(f64, u64)>,
    /// The public status and its time.
    status: Option<(String, u64)>,
    /// The waiting line: customer → number (ordered by number when read).
    queue: HashMap<CustomerId, u64>,
    /// Claimed admissions: customer → end of the session (ms).
    active: HashMap<CustomerId, u64>,
    /// Called, not claimed yet: customer → claim deadline (ms).
    offered: HashMap<CustomerId, u64>,
    prequeue: BTreeSet<CustomerId>,
    entrant_set: BTreeSet<CustomerId>,
    left: BTreeSet<CustomerId>,
    restored_places: HashMap<CustomerId, RestoreDone>,
}

impl EventState {
    fn new(settings: EventSettings, seed: DrawSeed) -> Self {
        Self {
            settings,
            seed,
            closed_reason: None,
            seats_left: None,
            next_number: 0,
            number_ceiling: 0,
            number_block: 0,
            numbers_reserved_at_ms: None,
            numbers_reserved_from: 0,
            entrants: None,
            drawn: false,
            first_call_at_ms: None,
            restored: None,
            serving: 0,
            bucket: None,
            status: None,
            queue: HashMap::new(),
            active: HashMap::new(),
            offered: HashMap::new(),
            prequeue: BTreeSet::new(),
            entrant_set: BTreeSet::new(),
            left: BTreeSet::new(),
            restored_places: HashMap::new(),
        }
    }

    /// The line in order (a sorted set's order: by number, then member).
    fn line(&self) -> Vec<(u64, CustomerId)> {
        let mut line: Vec<(u64, CustomerId)> = self
            .queue
            .iter()
            .map(|(customer, number)| (*number, customer.clone()))
            .collect();
        line.sort();
        line
    }

    fn rank(&self, customer: &CustomerId) -> Option<u64> {
        self.line()
            .iter()
            .position(|(_, listed)| listed == customer)
            .map(|rank| rank as u64)
    }

    /// At opening the pre-queue closes: its members become the entrants, the numbers after
    /// theirs are for later joiners; an empty one is drawn at once (`admit_tick.lua`, `join.lua`).
    fn freeze_pre_queue(&mut self) {
        let entrants = self.prequeue.len() as u64;
        if entrants > 0 {
            self.entrant_set = std::mem::take(&mut self.prequeue);
        }
        self.next_number = self.next_number.max(entrants);
        self.entrants = Some(entrants);
        if entrants == 0 {
            self.drawn = true;
        }
    }

    fn waiting_standing(&self, customer: &CustomerId, number: u64) -> Standing {
        Standing::Waiting {
            number,
            position: self.rank(customer).unwrap_or_default(),
            serving: self.serving,
            // Simplification: the advance is never measured (the status falls back to the rate).
            measured_advance: None,
            configured_rate: self.settings.admit_per_second,
            opens_at: self.settings.opens_at,
        }
    }

    fn report(&self, admitted: u64, active: u64) -> TickReport {
        let waiting = self.queue.len() as u64;
        TickReport {
            admitted,
            active,
            waiting,
            needs_draw: self.entrants.is_some() && !self.drawn,
            drawn: self.drawn,
            session: self.settings.session,
            status: StatusInputs {
                state: self.settings.state,
                closed_reason: self.closed_reason.clone(),
                opens_at: self.settings.opens_at,
                serving: self.serving,
                measured_advance: None,
                configured_rate: self.settings.admit_per_second,
                last_number: self.next_number,
                waiting,
                claim_window: self.settings.claim_window,
                seats_left: self.seats_left,
                commitment: self.seed.commitment(),
                entrants: self.entrants,
                revealed_seed: (self.drawn && self.entrants.unwrap_or(0) > 0)
                    .then(|| self.seed.reveal().to_owned()),
                restored_at: self
                    .restored
                    .map(|restored| from_unix_millis(restored.at_ms)),
                pre_queue: self
                    .entrants
                    .is_none()
                    .then_some(self.prequeue.len() as u64),
                edge_budget: crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
                first_call_at: self.first_call_at_ms.map(from_unix_millis),
                pace: None,
            },
        }
    }

    /// `admit_tick.lua`, in Rust.
    fn tick(&mut self, now: u64, mode: TickMode) -> TickReport {
        let planning = mode == TickMode::Plan;
        let mut limit = match mode {
            TickMode::Plan => None,
            TickMode::Admit { up_to } => up_to,
        };
        let rate = u64::from(self.settings.admit_per_second);
        // The restored frontier: no number past it until the lost cache's numbers are passed.
        if let Some(restored) = self.restored {
            let since = now
                .saturating_sub(restored.at_ms)
                .saturating_sub(RESTORE_GRACE.as_millis() as u64);
            let frontier = restored.serving + since * rate / 1000;
            if frontier < restored.ceiling {
                limit = Some(limit.map_or(frontier, |limit| limit.min(frontier)));
            }
        }

        let forget_before = now.saturating_sub(FORGET_LAPSED_AFTER.as_millis() as u64);
        self.active.retain(|_, until| *until >= forget_before);
        self.offered.retain(|_, until| *until >= forget_before);

        let opens_at = unix_millis(self.settings.opens_at);
        if self.settings.state != QueueState::Closed && now >= opens_at && self.entrants.is_none() {
            self.freeze_pre_queue();
        }

        let shopping = self.active.values().filter(|until| **until > now).count() as u64
            + self.offered.values().filter(|until| **until > now).count() as u64;

        let mut admitted = 0;
        if self.settings.state == QueueState::Open
            && now >= opens_at
            && self.drawn
            && now >= self.first_call_at_ms.unwrap_or(0)
        {
            let (mut tokens, mut refilled_at) = (rate as f64, now);
            if let Some((kept, at)) = self.bucket {
                (tokens, refilled_at) = (kept, at);
                if now > at {
                    tokens = (kept + (now - at) as f64 * rate as f64 / 1000.0).min(rate as f64);
                    refilled_at = now;
                }
            }
            let budget = (i64::from(self.settings.max_active) - shopping as i64)
                .min(tokens.floor() as i64)
                .max(0) as usize;
            let callable: Vec<(u64, CustomerId)> = self
                .line()
                .into_iter()
                .filter(|(number, _)| limit.is_none_or(|limit| *number <= limit))
                .collect();

            if planning {
                // Where this tick would leave `serving`, as a reply only: nothing is written
                // (neither `serving` nor the bucket).
                let mut report = self.report(0, shopping);
                if budget > 0 {
                    if let Some((number, _)) = callable.get(budget - 1).or(callable.last()) {
                        report.status.serving = self.serving.max(*number);
                    }
                }
                return report;
            }

            let deadline = now + self.settings.claim_window.as_millis() as u64;
            for (number, customer) in callable.into_iter().take(budget) {
                self.queue.remove(&customer);
                self.offered.insert(customer, deadline);
                self.serving = self.serving.max(number);
                admitted += 1;
            }
            self.bucket = Some((tokens - admitted as f64, refilled_at));
        }
        self.report(admitted, shopping + admitted)
    }
}

#[derive(Default)]
struct State {
    events: HashMap<EventId, EventState>,
    /// `lineup:open-events`.
    open_events: BTreeSet<EventId>,
    /// Locks and when they lapse (real time, as `PX`).
    locks: HashMap<(EventId, Lock), Instant>,
    outage: Outage,
    /// Operations that fail the next so many times (counted as calls too).
    failing: HashMap<&'static str, u32>,
}

impl State {
    fn take_lock(&mut self, event: &EventId, lock: Lock, for_how_long: Duration) -> bool {
        let now = Instant::now();
        match self.locks.get(&(event.clone(), lock)) {
            Some(until) if *until > now => false,
            _ => {
                self.locks.insert((event.clone(), lock), now + for_how_long);
                true
            }
        }
    }

    fn track_open(&mut self, event: &EventId, state: QueueState) {
        match state {
            QueueState::Open | QueueState::Paused => {
                self.open_events.insert(event.clone());
            }
            QueueState::Closed => {
                self.open_events.remove(event);
            }
        }
    }
}

/// The queue in memory. Every port call counts in [`MemoryQueue::calls`].
#[derive(Default)]
pub(crate) struct MemoryQueue {
    state: Mutex<State>,
}

impl MemoryQueue {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts the call, and fails it (changing nothing) during an outage.
    fn enter(&self, operation: &'static str) -> Result<MutexGuard<'_, State>, LineupError> {
        let mut state = self.lock();
        state
            .outage
            .enter(Store::Queue, "memory queue", operation)?;
        if let Some(left) = state.failing.get_mut(operation).filter(|left| **left > 0) {
            *left -= 1;
            return Err(LineupError::Unavailable {
                store: Store::Queue,
                source: Box::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("the memory queue timed out (a played fault, in {operation})"),
                )),
            });
        }
        Ok(state)
    }

    // --- Playing faults ---

    /// A cache loss: every key forgotten, as a `FLUSHALL` or a failover to an empty node.
    pub(crate) fn flush(&self) {
        let mut state = self.lock();
        state.events.clear();
        state.open_events.clear();
        state.locks.clear();
    }

    /// The next `calls` calls of `operation` (a port method's name) fail; other calls succeed.
    pub(crate) fn fail_next_of(&self, operation: &'static str, calls: u32) {
        self.lock().failing.insert(operation, calls);
    }

    /// The draw's lock lapses now, as when the admitter that took it died (120 s in Redis).
    pub(crate) fn lapse_draw_lock(&self, event: &EventId) {
        self.lock().locks.remove(&(event.clone(), Lock::Draw));
    }

    // --- Looking inside ---

    pub(crate) fn has_event(&self, event: &EventId) -> bool {
        self.lock().events.contains_key(event)
    }

    /// The highest number called (`None`: no such event in the cache).
    pub(crate) fn serving(&self, event: &EventId) -> Option<u64> {
        self.lock().events.get(event).map(|state| state.serving)
    }

    /// The waiting line in order: (number, customer).
    pub(crate) fn waiting(&self, event: &EventId) -> Vec<(u64, CustomerId)> {
        self.lock()
            .events
            .get(event)
            .map(EventState::line)
            .unwrap_or_default()
    }

    /// Everyone called: offered (not claimed yet) or active, lapsed or not.
    pub(crate) fn called(&self, event: &EventId) -> BTreeSet<CustomerId> {
        self.lock()
            .events
            .get(event)
            .map(|state| {
                state
                    .offered
                    .keys()
                    .chain(state.active.keys())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// When the customer's claimed admission ends, if they have one.
    pub(crate) fn active_until(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Option<SystemTime> {
        self.lock()
            .events
            .get(event)
            .and_then(|state| state.active.get(customer).copied())
            .map(from_unix_millis)
    }

    /// Whether `customer` is in the pre-queue (not yet closed).
    pub(crate) fn in_pre_queue(&self, event: &EventId, customer: &CustomerId) -> bool {
        self.lock()
            .events
            .get(event)
            .is_some_and(|state| state.prequeue.contains(customer))
    }

    /// What a restore did for `customer` (`{ev:E}:restored-places`).
    pub(crate) fn restore_done(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Option<RestoreDone> {
        self.lock()
            .events
            .get(event)
            .and_then(|state| state.restored_places.get(customer).copied())
    }

    /// The seats left as last recorded, and the closing reason.
    pub(crate) fn seats_left(&self, event: &EventId) -> Option<u64> {
        self.lock()
            .events
            .get(event)
            .and_then(|state| state.seats_left)
    }

    pub(crate) fn closed_reason(&self, event: &EventId) -> Option<String> {
        self.lock()
            .events
            .get(event)
            .and_then(|state| state.closed_reason.clone())
    }
}

/// Outages are played on the whole fake.
impl Faulty for MemoryQueue {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

#[async_trait]
impl EventSettingsStore for MemoryQueue {
    async fn configure(
        &self,
        event: &EventId,
        settings: &EventSettings,
        seed: &DrawSeed,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("configure")?;
        let known = state
            .events
            .entry(event.clone())
            .or_insert_with(|| EventState::new(settings.clone(), seed.clone()));
        known.settings = settings.clone();
        known.seed = seed.clone();
        if settings.state != QueueState::Closed {
            known.closed_reason = None;
        }
        state.track_open(event, settings.state);
        Ok(())
    }

    async fn settings(&self, event: &EventId) -> Result<Option<EventSettings>, LineupError> {
        let state = self.enter("settings")?;
        Ok(state.events.get(event).map(|known| known.settings.clone()))
    }

    async fn close(&self, event: &EventId, reason: ClosedReason) -> Result<bool, LineupError> {
        let mut state = self.enter("close")?;
        let closed = match state.events.get_mut(event) {
            Some(known) => {
                known.settings.state = QueueState::Closed;
                // A cancellation is final (`close.lua`).
                if known.closed_reason.as_deref() != Some(ClosedReason::Cancelled.as_str()) {
                    known.closed_reason = Some(reason.as_str().into());
                }
                true
            }
            None => false,
        };
        state.track_open(event, QueueState::Closed);
        Ok(closed)
    }

    async fn set_seats_left(&self, event: &EventId, seats_left: u64) -> Result<(), LineupError> {
        let mut state = self.enter("set_seats_left")?;
        if let Some(known) = state.events.get_mut(event) {
            known.seats_left = Some(seats_left);
        }
        Ok(())
    }
}

#[async_trait]
impl WaitingLine for MemoryQueue {
    /// `join.lua`.
    async fn join_with_work(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
        work: WorkShown,
        code: CodeShown,
    ) -> Result<Joined, LineupError> {
        let mut guard = self.enter("join")?;
        let state = &mut *guard;
        let Some(known) = state.events.get_mut(event) else {
            return Err(LineupError::EventNotFound);
        };
        let now_ms = unix_millis(now);
        let admitted_until = known.active.get(customer).copied();
        if let Some(until) = admitted_until.filter(|until| *until > now_ms) {
            return Ok(Joined {
                newly_queued: false,
                standing: Standing::Admitted {
                    expires_at: from_unix_millis(until),
                },
                top_up_numbers: false,
            });
        }
        let offer = known.offered.get(customer).copied();
        if offer.is_some_and(|deadline| deadline > now_ms) {
            let expires = now_ms + known.settings.session.as_millis() as u64;
            known.offered.remove(customer);
            known.active.insert(customer.clone(), expires);
            return Ok(Joined {
                newly_queued: false,
                standing: Standing::Admitted {
                    expires_at: from_unix_millis(expires),
                },
                top_up_numbers: false,
            });
        }
        if known.settings.state == QueueState::Closed {
            return Err(LineupError::QueueClosed);
        }
        if let Some(number) = known.queue.get(customer).copied() {
            return Ok(Joined {
                newly_queued: false,
                standing: known.waiting_standing(customer, number),
                top_up_numbers: false,
            });
        }
        let difficulty = known.settings.challenge_difficulty;
        if difficulty.bits() > work.bits()
            && !known.prequeue.contains(customer)
            && !known.entrant_set.contains(customer)
        {
            return Err(LineupError::ChallengeRefused(ChallengeRefused {
                difficulty,
                proof_offered: work.offered(),
                fresh: None,
            }));
        }
        if known.settings.code_required
            && !code.lets_in()
            && !known.prequeue.contains(customer)
            && !known.entrant_set.contains(customer)
        {
            return Err(LineupError::CodeRequired);
        }
        let pre_queue = |known: &EventState, newly_queued: bool| Joined {
            newly_queued,
            standing: Standing::PreQueue {
                opens_at: known.settings.opens_at,
                entrant: known.seed.entrant(customer),
            },
            top_up_numbers: false,
        };
        if now < known.settings.opens_at && known.entrants.is_none() {
            let newly_queued = known.prequeue.insert(customer.clone());
            return Ok(pre_queue(known, newly_queued));
        }
        if known.entrants.is_none() {
            known.freeze_pre_queue();
        }
        if !known.drawn && known.entrant_set.contains(customer) {
            known.left.remove(customer);
            return Ok(pre_queue(known, false));
        }
        let (ceiling, block) = (known.number_ceiling, known.number_block);
        let last = known.next_number;
        // Whether this caller takes the duty to reserve the next range.
        let top_up = |next: u64, locks: &mut State| {
            ceiling.saturating_sub(next) <= block / 2
                && locks.take_lock(event, Lock::Numbers, NUMBERS_TOP_UP_LOCK)
        };
        // (`state` is re-borrowed for the lock below: the event's entry is looked up again.)
        if last + 1 > ceiling {
            let top_up = top_up(last, state);
            return Err(LineupError::NumbersExhausted { top_up });
        }
        let reserve = top_up(last + 1, state);
        let known = state
            .events
            .get_mut(event)
            .expect("the event is still there");
        known.next_number = last + 1;
        let number = known.next_number;
        known.queue.insert(customer.clone(), number);
        if admitted_until.is_some() {
            known.active.remove(customer);
        }
        if offer.is_some() {
            known.offered.remove(customer);
        }
        Ok(Joined {
            newly_queued: true,
            standing: known.waiting_standing(customer, number),
            top_up_numbers: reserve,
        })
    }

    /// `standing.lua` (a live offer is claimed here).
    async fn standing(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Option<Standing>, LineupError> {
        let mut state = self.enter("standing")?;
        let Some(known) = state.events.get_mut(event) else {
            return Err(LineupError::EventNotFound);
        };
        let now_ms = unix_millis(now);
        let admitted_until = known.active.get(customer).copied();
        if let Some(until) = admitted_until.filter(|until| *until > now_ms) {
            return Ok(Some(Standing::Admitted {
                expires_at: from_unix_millis(until),
            }));
        }
        let offer = known.offered.get(customer).copied();
        if offer.is_some_and(|deadline| deadline > now_ms) {
            let expires = now_ms + known.settings.session.as_millis() as u64;
            known.offered.remove(customer);
            known.active.insert(customer.clone(), expires);
            return Ok(Some(Standing::Admitted {
                expires_at: from_unix_millis(expires),
            }));
        }
        let closed = known.settings.state == QueueState::Closed;
        if let Some(number) = known.queue.get(customer).copied() {
            if closed {
                return Ok(Some(Standing::Closed));
            }
            return Ok(Some(known.waiting_standing(customer, number)));
        }
        if known.prequeue.contains(customer)
            || (!known.drawn && known.entrant_set.contains(customer))
        {
            if closed {
                return Ok(Some(Standing::Closed));
            }
            return Ok(Some(Standing::PreQueue {
                opens_at: known.settings.opens_at,
                entrant: known.seed.entrant(customer),
            }));
        }
        if admitted_until.is_some() || offer.is_some() {
            return Ok(Some(Standing::Expired));
        }
        Ok(None)
    }

    /// `leave.lua`.
    async fn leave(&self, event: &EventId, customer: &CustomerId) -> Result<bool, LineupError> {
        let mut state = self.enter("leave")?;
        let Some(known) = state.events.get_mut(event) else {
            return Ok(false);
        };
        let mut removed = known.queue.remove(customer).is_some() as u32
            + known.active.remove(customer).is_some() as u32
            + known.offered.remove(customer).is_some() as u32
            + known.prequeue.remove(customer) as u32;
        if known.entrants.is_some() && !known.drawn && known.entrant_set.contains(customer) {
            removed += known.left.insert(customer.clone()) as u32;
        }
        Ok(removed > 0)
    }
}

#[async_trait]
impl Admitter for MemoryQueue {
    async fn open_events(&self) -> Result<Vec<EventId>, LineupError> {
        let state = self.enter("open_events")?;
        Ok(state.open_events.iter().cloned().collect())
    }

    /// `admit_tick.lua`, then (admitting) the status published as `publish_status.lua` does.
    async fn tick(
        &self,
        event: &EventId,
        now: SystemTime,
        mode: TickMode,
    ) -> Result<TickReport, LineupError> {
        let mut state = self.enter("tick")?;
        let Some(known) = state.events.get_mut(event) else {
            return Err(LineupError::EventNotFound);
        };
        let now_ms = unix_millis(now);
        let report = known.tick(now_ms, mode);
        if mode != TickMode::Plan {
            let newer = known.status.as_ref().is_some_and(|(_, at)| *at > now_ms);
            if !newer {
                let status = report.status.status(event.as_str(), now);
                let json = serde_json::to_string(&status).expect("a status serializes");
                known.status = Some((json, now_ms));
            }
        }
        Ok(report)
    }
}

#[async_trait]
impl StatusBoard for MemoryQueue {
    async fn status_json(&self, event: &EventId) -> Result<Option<String>, LineupError> {
        let state = self.enter("status_json")?;
        Ok(state
            .events
            .get(event)
            .and_then(|known| known.status.as_ref().map(|(json, _)| json.clone())))
    }
}

/// As `SSCAN`'s pages: [`FAKE_ENTRANT_PAGE`] customers a page, in id order, each page but the
/// first starting again with the last customer of the one before (`SSCAN` may return a member
/// twice; the draw must not count it twice). The cursor is the index of the page's first
/// customer.
#[async_trait]
impl EntrantPages for MemoryQueue {
    async fn entrant_page(
        &self,
        event: &EventId,
        cursor: u64,
    ) -> Result<(u64, Vec<CustomerId>), LineupError> {
        let state = self.enter("entrant_page")?;
        let Some(known) = state.events.get(event) else {
            return Ok((0, Vec::new()));
        };
        let start = cursor as usize;
        let page: Vec<CustomerId> = known
            .entrant_set
            .iter()
            .skip(start)
            .take(FAKE_ENTRANT_PAGE)
            .cloned()
            .collect();
        let end = start + page.len();
        let next = if end >= known.entrant_set.len() {
            0
        } else {
            (end - 1) as u64
        };
        Ok((next, page))
    }
}

/// Customers per page of [`MemoryQueue::entrant_page`]: small, so a few dozen entrants take
/// several pages.
const FAKE_ENTRANT_PAGE: usize = 7;

/// `HGET entrants` once closed, else the open pre-queue's size.
#[async_trait]
impl PreQueueSize for MemoryQueue {
    async fn pre_queue_size(&self, event: &EventId) -> Result<u64, LineupError> {
        let state = self.enter("pre_queue_size")?;
        Ok(state.events.get(event).map_or(0, |known| {
            known.entrants.unwrap_or(known.prequeue.len() as u64)
        }))
    }
}

#[async_trait]
impl PreQueueDraw for MemoryQueue {
    async fn lock_draw(
        &self,
        event: &EventId,
        for_how_long: Duration,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("lock_draw")?;
        Ok(state.take_lock(event, Lock::Draw, for_how_long))
    }

    async fn draw_seed(&self, event: &EventId) -> Result<Option<DrawSeed>, LineupError> {
        let state = self.enter("draw_seed")?;
        Ok(state.events.get(event).map(|known| known.seed.clone()))
    }

    /// `draw_numbers.lua`: `ZADD NX`, leavers skipped.
    async fn write_numbers(
        &self,
        event: &EventId,
        numbers: &[(CustomerId, u64)],
    ) -> Result<(), LineupError> {
        let mut state = self.enter("write_numbers")?;
        // Simplification: on a lost event Redis would create a queue key alone; here nothing.
        if let Some(known) = state.events.get_mut(event) {
            for (customer, number) in numbers {
                if !known.left.contains(customer) {
                    known.queue.entry(customer.clone()).or_insert(*number);
                }
            }
        }
        Ok(())
    }

    async fn mark_drawn(
        &self,
        event: &EventId,
        first_call_at: SystemTime,
        now: SystemTime,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("mark_drawn")?;
        // Simplification: the adapter's plain `HSET drawn 1` on a lost event would create a
        // settings hash with no state; here nothing happens.
        if let Some(known) = state.events.get_mut(event) {
            known.drawn = true;
            if first_call_at > now {
                known.first_call_at_ms = Some(unix_millis(first_call_at));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl PlaceRestorer for MemoryQueue {
    /// `restore_context.lua`.
    async fn restore_context(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Result<Option<RestoreContext>, LineupError> {
        let state = self.enter("restore_context")?;
        let Some(known) = state.events.get(event) else {
            return Ok(None);
        };
        Ok(known.restored.map(|restored| RestoreContext {
            restored_at: from_unix_millis(restored.at_ms),
            serving: restored.serving,
            lost_since: restored.lost_since_ms.map(from_unix_millis),
            done: known.restored_places.get(customer).copied(),
        }))
    }

    /// `restore_place.lua`: once per customer, only for a ticket older than the restore.
    async fn restore_place(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket_issued_at: SystemTime,
        place: RestoredPlace,
    ) -> Result<RestoreOutcome, LineupError> {
        let mut state = self.enter("restore_place")?;
        let Some(known) = state.events.get_mut(event) else {
            return Ok(RestoreOutcome::NotRestorable);
        };
        let Some(restored) = known.restored else {
            return Ok(RestoreOutcome::NotRestorable);
        };
        if unix_millis(ticket_issued_at) >= restored.at_ms {
            return Ok(RestoreOutcome::NotRestorable);
        }
        if known.restored_places.contains_key(customer) {
            return Ok(RestoreOutcome::AlreadyRestored);
        }
        let done = match place {
            RestoredPlace::Expired => RestoreDone::Expired,
            _ => RestoreDone::Placed,
        };
        known.restored_places.insert(customer.clone(), done);
        match place {
            RestoredPlace::Queue { number } => {
                known.queue.entry(customer.clone()).or_insert(number);
                known.next_number = known.next_number.max(number);
            }
            RestoredPlace::Admitted { expires_at } => {
                known
                    .active
                    .entry(customer.clone())
                    .or_insert(unix_millis(expires_at));
            }
            RestoredPlace::PreQueue => {
                known.prequeue.insert(customer.clone());
            }
            RestoredPlace::Expired => return Ok(RestoreOutcome::Expired),
        }
        Ok(RestoreOutcome::Restored)
    }

    /// `restore_event.lua`, only if the event is missing; then the open-events set follows.
    async fn restore_event(
        &self,
        event: &EventId,
        record: &EventRecord,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("restore_event")?;
        let restored = !state.events.contains_key(event);
        if restored {
            let cursor = &record.cursor;
            let ceiling = record.number_ceiling.max(cursor.next_number);
            let mut known = EventState::new(record.settings.clone(), record.seed.clone());
            known.closed_reason = record.closed_reason.clone();
            known.next_number = ceiling;
            known.number_ceiling = ceiling;
            known.number_block = 0;
            known.entrants = cursor.entrants;
            known.drawn = cursor.drawn;
            known.first_call_at_ms = cursor.first_call_at_ms;
            known.serving = cursor.serving;
            known.restored = Some(Restored {
                at_ms: unix_millis(now),
                serving: cursor.serving,
                lost_since_ms: cursor.saved_at_ms,
                ceiling,
            });
            state.events.insert(event.clone(), known);
        }
        state.track_open(event, record.settings.state);
        Ok(restored)
    }

    async fn lock_restore(
        &self,
        event: &EventId,
        for_how_long: Duration,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("lock_restore")?;
        Ok(state.take_lock(event, Lock::Restore, for_how_long))
    }
}

#[async_trait]
impl NumberRanges for MemoryQueue {
    async fn number_range(&self, event: &EventId) -> Result<Option<NumberRange>, LineupError> {
        let state = self.enter("number_range")?;
        Ok(state.events.get(event).map(|known| NumberRange {
            next_number: known.next_number,
            ceiling: known.number_ceiling,
            block: known.number_block,
            reserved_at: known.numbers_reserved_at_ms.map(from_unix_millis),
            reserved_from: known.numbers_reserved_from,
        }))
    }

    /// `extend_numbers.lua`: the ceiling only goes up; the top-up lock is freed either way.
    async fn extend_numbers(
        &self,
        event: &EventId,
        ceiling: u64,
        block: u64,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("extend_numbers")?;
        state.locks.remove(&(event.clone(), Lock::Numbers));
        let Some(known) = state.events.get_mut(event) else {
            return Ok(false);
        };
        known.number_ceiling = known.number_ceiling.max(ceiling);
        known.number_block = block;
        known.numbers_reserved_at_ms = Some(unix_millis(now));
        known.numbers_reserved_from = known.next_number;
        Ok(true)
    }
}
