//! The admit loop. EventBridge fires the `admit` function at most once a minute, so one
//! invocation ticks every second (configurable) for about a minute, each tick admitting from the
//! head of every open event's queue. Cap and rate are enforced inside the Redis script, so two
//! overlapping invocations (EventBridge delivers at least once) admit no more than one would.
//!
//! Each tick, per event: asks the cache how far admission would go now (a plan), saves that as
//! the admission cursor in DynamoDB (one write, when it moved), then admits up to what was saved,
//! so a number the status shows as called is durably called and survives any cache loss; the
//! adapter publishes the public status with the tick. It also runs the pre-queue draw once the
//! pre-queue has closed (its numbers made durable before it is published; drawn in bounded
//! memory, [`pre_queue_draw`], [`bounded_draw`]; a draw published already stands), watches the
//! pre-queue's size against what the draw can take before opening, and, for an event
//! open in DynamoDB that the cache has lost, raises `EventMissingInCache` and re-loads it. If
//! DynamoDB cannot take the cursor, admission waits (nobody is called past what is durable).

pub mod bounded_draw;
pub mod pre_queue_draw;

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use serde::Serialize;
use tokio::time::{Instant, MissedTickBehavior};

use crate::application::error::LineupError;
use crate::application::ports::event_records::{AdmissionCursor, DrawPublication, EventRecords};
use crate::application::ports::queue::{Admitter, TickMode, TickReport};
use crate::application::rebuild::{AvailabilityRebuild, RebuildOutcome};
use crate::application::restore::Restorer;
use crate::domain::clock::Clock;
use crate::domain::event_settings::{EventSettings, QueueState};
use crate::domain::ids::EventId;

pub use pre_queue_draw::{DrawLimits, DrawQueue, EntrantPages, PreQueueSize};

/// DynamoDB's list of open events is read this often, not every tick: it only matters after
/// the cache lost an event, and re-loading it within seconds is enough.
const DURABLE_LIST_EVERY: Duration = Duration::from_secs(10);
/// Before opening, each event's pre-queue is counted this often for the draw's alarm.
const PRE_QUEUE_WATCH_EVERY: Duration = Duration::from_secs(10);

/// After this many ticks in a row fail entirely, the invocation gives up and reports the error
/// (the next scheduled invocation tries again).
const MAX_FAILED_TICKS_IN_A_ROW: u32 = 3;

/// What one invocation did: the function's JSON answer, and its log line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionSummary {
    /// Ticks run (each over every open event).
    pub ticks: u64,
    /// Customers admitted, all events and ticks together.
    pub admitted: u64,
    /// Per-event ticks that failed (the event is retried on the next tick).
    pub failed_event_ticks: u64,
}

/// The ports the admit loop works through.
pub struct AdmissionPorts<'a> {
    /// The queue's ticks: plan, admit, publish the status (Redis).
    pub admitter: &'a dyn Admitter,
    /// The pre-queue (its size before opening, its entrants once closed, a page at a time),
    /// and where their drawn numbers are written (Redis).
    pub draw: &'a dyn DrawQueue,
    /// The durable cursors and the list of open events (DynamoDB).
    pub records: &'a dyn EventRecords,
    /// Where the draw is published before anyone from it is admitted.
    pub publication: &'a dyn DrawPublication,
    /// Re-loads an event the cache lost.
    pub restorer: &'a Restorer,
    /// Checks each open event's seat availability projection, rebuilding a lost one (`None`:
    /// not checked, for an admitter of queues alone, as in the queue's tests).
    pub availability: Option<&'a AvailabilityRebuild<'a>>,
}

/// One invocation of the `admit` function: ticks every `tick` and remembers, between ticks,
/// what it saved and saw.
pub struct AdmissionLoop<'a> {
    /// What it ticks through.
    pub ports: AdmissionPorts<'a>,
    /// The time each tick runs at.
    pub clock: &'a dyn Clock,
    /// The time between ticks (`ADMIT_TICK_MS`, a second by default).
    pub tick: Duration,
    /// The local disk the pre-queue draw may use (by default `/tmp` as Lambda gives it).
    pub draw_limits: DrawLimits,
    /// The requests a second a big pre-queue's opening may take at the edge: its draw's first
    /// call waits for its reads (`wait_policy::first_call_at`). The statuses say the same
    /// through the queue adapter's budget (`RedisQueue::with_edge_budget`): set both alike.
    pub edge_budget: u64,
    /// When each event's pre-queue was last counted for the draw's alarm.
    pre_queue_watched: Mutex<HashMap<EventId, Instant>>,
    /// The cursor last saved per event, so a tick that moved nothing writes nothing.
    saved: Mutex<HashMap<EventId, AdmissionCursor>>,
    /// DynamoDB's open events as last read, and when.
    durable: Mutex<Option<(Instant, Vec<EventId>)>>,
    /// When the seat availability projections were last checked (`None`: check at the next
    /// tick, as after a restore).
    availability_checked: Mutex<Option<Instant>>,
    /// Events this invocation ticked and saw open: ticked again even when the cache's list of
    /// open events was lost with it, so a loss is noticed at the next tick.
    ticked_open: Mutex<BTreeSet<EventId>>,
}

impl<'a> AdmissionLoop<'a> {
    /// A loop with nothing saved or seen yet: its first tick reads what it needs.
    pub fn new(ports: AdmissionPorts<'a>, clock: &'a dyn Clock, tick: Duration) -> Self {
        Self {
            ports,
            clock,
            tick,
            draw_limits: DrawLimits::default(),
            edge_budget: crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
            pre_queue_watched: Mutex::new(HashMap::new()),
            saved: Mutex::new(HashMap::new()),
            durable: Mutex::new(None),
            availability_checked: Mutex::new(None),
            ticked_open: Mutex::new(BTreeSet::new()),
        }
    }

    /// Ticks until `run_for` has passed (the last tick starts before then).
    pub async fn run(&self, run_for: Duration) -> Result<AdmissionSummary, LineupError> {
        let deadline = Instant::now() + run_for;
        let mut interval = tokio::time::interval(self.tick);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut summary = AdmissionSummary::default();
        let mut failed_in_a_row = 0;
        let mut last_failure = None;
        loop {
            interval.tick().await;
            if Instant::now() >= deadline {
                // A run whose ticks all failed (too few to reach the limit before the time ran
                // out) is a failed run, not an empty success.
                return match last_failure {
                    Some(error) if failed_in_a_row > 0 => Err(error),
                    _ => Ok(summary),
                };
            }
            match self.tick_once(&mut summary).await {
                Ok(()) => failed_in_a_row = 0,
                Err(error) => {
                    failed_in_a_row += 1;
                    tracing::warn!(error = %error, source = ?std::error::Error::source(&error), failed_in_a_row, "admission tick failed");
                    if failed_in_a_row >= MAX_FAILED_TICKS_IN_A_ROW {
                        return Err(error);
                    }
                    last_failure = Some(error);
                }
            }
        }
    }

    /// Every event to tick: those the cache lists, and those DynamoDB says are open (which the
    /// cache may have lost). The cache failing fails the tick (no event can be ticked without
    /// it); DynamoDB failing only loses the second list for this tick.
    async fn events_to_tick(&self) -> Result<Vec<EventId>, LineupError> {
        let mut events: BTreeSet<EventId> = self
            .ports
            .admitter
            .open_events()
            .await?
            .into_iter()
            .collect();
        events.extend(self.durable_open_events().await);
        events.extend(
            self.ticked_open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        Ok(events.into_iter().collect())
    }

    /// DynamoDB's open events, read at most every [`DURABLE_LIST_EVERY`]; a failed read keeps
    /// the last list (and is tried again next tick).
    async fn durable_open_events(&self) -> Vec<EventId> {
        let known = self
            .durable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some((read_at, events)) = &known {
            if read_at.elapsed() < DURABLE_LIST_EVERY {
                return events.clone();
            }
        }
        match self.ports.records.open_events().await {
            Ok(events) => {
                *self.durable.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((Instant::now(), events.clone()));
                events
            }
            Err(error) => {
                tracing::warn!(error = %error, "could not list the open events in DynamoDB");
                known.map(|(_, events)| events).unwrap_or_default()
            }
        }
    }

    /// One event's tick: re-load it if the cache lost it, draw if due, make the plan durable,
    /// admit up to it.
    pub async fn tick_event(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<TickReport, LineupError> {
        let plan = match self.ports.admitter.tick(event, now, TickMode::Plan).await {
            Err(LineupError::EventNotFound) => {
                tracing::error!(event = %event, "event open in DynamoDB is missing in the cache");
                crate::application::metrics::emit(
                    &[("EventId", event.as_str())],
                    &[(
                        "EventMissingInCache",
                        1.0,
                        crate::application::metrics::Unit::Count,
                    )],
                );
                if !self.ports.restorer.restore_event(event, now).await? {
                    self.forget(event);
                    return Err(LineupError::EventNotFound);
                }
                // The seat map was most likely lost with it: check it at once, not in 10 s.
                *self
                    .availability_checked
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = None;
                self.ports.admitter.tick(event, now, TickMode::Plan).await?
            }
            plan => plan?,
        };
        // The pre-queue closed: draw it, then plan again (the draw's numbers come first).
        let plan = if plan.needs_draw {
            // The draw hands out numbers 1..=entrants: durable before anyone can see them (and
            // before the draw's lock is taken, which a failure here would keep for minutes).
            let entrants = plan.status.entrants.unwrap_or(0);
            self.ports
                .restorer
                .numbers
                .reserve_through(event, entrants, now)
                .await?;
            let ports = pre_queue_draw::DrawPorts {
                queue: self.ports.draw,
                publication: self.ports.publication,
            };
            let opening = pre_queue_draw::Opening {
                opens_at: plan.status.opens_at,
                claim_window: plan.status.claim_window,
                edge_budget: self.edge_budget,
            };
            let outcome =
                pre_queue_draw::draw(&ports, event, entrants, &self.draw_limits, &opening, now)
                    .await?;
            tracing::debug!(event = %event, ?outcome, "the draw's turn");
            self.ports.admitter.tick(event, now, TickMode::Plan).await?
        } else {
            if plan.status.entrants.is_none() && now < plan.status.opens_at {
                self.watch_pre_queue(event).await;
            }
            plan
        };
        let up_to = self.make_durable(event, &plan, now).await;
        let report = self
            .ports
            .admitter
            .tick(event, now, TickMode::Admit { up_to: Some(up_to) })
            .await?;
        if report.status.state == QueueState::Closed {
            self.forget(event);
            if let Err(error) = self.record_closing(event, &report).await {
                tracing::warn!(event = %event, error = %error, "could not record the closing");
            }
        } else {
            self.ticked_open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(event.clone());
        }
        Ok(report)
    }

    fn forget(&self, event: &EventId) {
        self.ticked_open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(event);
    }

    /// A queue closed in the cache alone (the expiry sweep closes sold-out events there) is
    /// closed in DynamoDB too, so a cache loss or an operator's `set` does not reopen it.
    async fn record_closing(
        &self,
        event: &EventId,
        report: &TickReport,
    ) -> Result<(), LineupError> {
        let Some(record) = self.ports.records.event(event).await? else {
            return Ok(());
        };
        if record.settings.state == QueueState::Closed {
            return Ok(());
        }
        let settings = EventSettings {
            state: QueueState::Closed,
            ..record.settings
        };
        self.ports
            .records
            .save_settings(event, &settings, report.status.closed_reason.as_deref())
            .await?;
        tracing::info!(event = %event, reason = ?report.status.closed_reason, "closing recorded in DynamoDB");
        Ok(())
    }

    /// Saves the cursor with the plan's `serving` if it moved (one write per tick per event at
    /// most) and returns how far admission may call: the plan once it is durable, else what was
    /// durable before (DynamoDB trouble holds admission back; the next tick tries again).
    async fn make_durable(&self, event: &EventId, plan: &TickReport, now: SystemTime) -> u64 {
        let before = match self.durable_cursor(event).await {
            Ok(cursor) => cursor,
            Err(error) => {
                tracing::warn!(event = %event, error = %error, "could not read the admission cursor; admitting nobody this tick");
                return 0;
            }
        };
        // Checkpoints are kept as long as a restored admission could still be running.
        let keep = plan.status.claim_window + plan.session + Duration::from_secs(60);
        let mut after = before.advanced(
            now,
            plan.status.serving,
            plan.status.last_number,
            plan.status.entrants,
            plan.drawn,
            keep,
        );
        // A paced opening's first call, durable with `drawn`: a restore keeps admission waiting.
        if let Some(first_call_at) = plan.status.first_call_at {
            after.first_call_at_ms = Some(crate::domain::clock::unix_millis(first_call_at));
        }
        let moved = after.serving != before.serving
            || after.entrants != before.entrants
            || after.drawn != before.drawn
            || after.first_call_at_ms != before.first_call_at_ms
            || after.checkpoints != before.checkpoints;
        if !moved {
            return before.serving;
        }
        after.saved_at_ms = Some(crate::domain::clock::unix_millis(now));
        match self.ports.records.save_cursor(event, &after).await {
            Ok(()) => {
                let up_to = after.serving;
                self.saved
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(event.clone(), after);
                up_to
            }
            Err(error) => {
                tracing::warn!(event = %event, error = %error, durable = before.serving, "could not save the admission cursor; admitting only up to what is durable");
                before.serving
            }
        }
    }

    /// The cursor as this admitter last saved it, else (its first tick of the event) as stored.
    async fn durable_cursor(&self, event: &EventId) -> Result<AdmissionCursor, LineupError> {
        let known = self
            .saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(event)
            .cloned();
        if let Some(cursor) = known {
            return Ok(cursor);
        }
        let cursor = self
            .ports
            .records
            .event(event)
            .await?
            .map(|record| record.cursor)
            .unwrap_or_default();
        self.saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(event.clone(), cursor.clone());
        Ok(cursor)
    }

    /// Before opening, at most every [`PRE_QUEUE_WATCH_EVERY`], how full the pre-queue is for
    /// the draw (one Redis read).
    async fn watch_pre_queue(&self, event: &EventId) {
        {
            let mut watched = self
                .pre_queue_watched
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if watched
                .get(event)
                .is_some_and(|at| at.elapsed() < PRE_QUEUE_WATCH_EVERY)
            {
                return;
            }
            watched.insert(event.clone(), Instant::now());
        }
        pre_queue_draw::watch_pre_queue(self.ports.draw, event, &self.draw_limits).await;
    }

    /// One tick over every open event, the events in parallel. Fails when listing the events
    /// fails or when every event's tick failed.
    pub async fn tick_once(&self, summary: &mut AdmissionSummary) -> Result<(), LineupError> {
        let events = self.events_to_tick().await?;
        let now = self.clock.now();
        let reports = join_all(events.iter().map(|event| self.tick_event(event, now))).await;
        summary.ticks += 1;
        let mut last_failure = None;
        let mut failed = 0;
        for (event, report) in events.iter().zip(reports) {
            match report {
                Ok(report) => {
                    summary.admitted += report.admitted;
                    crate::application::metrics::emit(
                        &[("EventId", event.as_str())],
                        &[
                            (
                                "Admitted",
                                report.admitted as f64,
                                crate::application::metrics::Unit::Count,
                            ),
                            (
                                "ActiveShoppers",
                                report.active as f64,
                                crate::application::metrics::Unit::Count,
                            ),
                            (
                                "QueueLength",
                                report.waiting as f64,
                                crate::application::metrics::Unit::Count,
                            ),
                        ],
                    );
                    if report.admitted > 0 {
                        tracing::info!(event = %event, admitted = report.admitted, active = report.active, waiting = report.waiting, "admitted");
                    }
                }
                Err(error) => {
                    failed += 1;
                    tracing::warn!(event = %event, error = %error, "admission tick failed for event");
                    last_failure = Some(error);
                }
            }
        }
        summary.failed_event_ticks += failed;
        self.check_availability(&events).await;
        // One event failing is that event's problem; every event failing is the tick's.
        match last_failure {
            Some(error) if failed == events.len() as u64 => Err(error),
            _ => Ok(()),
        }
    }
}

impl AdmissionLoop<'_> {
    /// Every [`DURABLE_LIST_EVERY`], makes sure each open event's seat availability projection
    /// exists (one Redis read each), rebuilding one the cache lost. Failures are logged: the next
    /// check tries again, and holds never depend on the projection being right.
    async fn check_availability(&self, events: &[EventId]) {
        let Some(availability) = self.ports.availability else {
            return;
        };
        {
            let mut checked = self
                .availability_checked
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if checked.is_some_and(|at| at.elapsed() < DURABLE_LIST_EVERY) {
                return;
            }
            *checked = Some(Instant::now());
        }
        let checks = events.iter().map(|event| availability.ensure(event));
        for (event, outcome) in events.iter().zip(join_all(checks).await) {
            match outcome {
                Ok(RebuildOutcome::Rebuilt { seats }) => {
                    crate::application::metrics::emit(
                        &[("EventId", event.as_str())],
                        &[(
                            "AvailabilityRebuilt",
                            1.0,
                            crate::application::metrics::Unit::Count,
                        )],
                    );
                    tracing::warn!(event = %event, seats, "seat availability was missing and is rebuilt");
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(event = %event, error = &error as &(dyn std::error::Error + 'static), "could not check the seat availability");
                }
            }
        }
    }
}

/// Refuses anything but an EventBridge scheduled event, so a function wired to the wrong trigger
/// says so clearly instead of doing its work on the wrong cue.
pub fn expect_scheduled_event(
    payload: serde_json::Value,
    function: &str,
) -> Result<(), LineupError> {
    let scheduled: aws_lambda_events::eventbridge::EventBridgeEvent = serde_json::from_value(payload)
        .map_err(|_| {
            LineupError::invalid(
                "not_a_scheduled_event",
                format!("{function} runs on an EventBridge scheduled event (detail-type \"Scheduled Event\")"),
            )
        })?;
    if scheduled.detail_type != "Scheduled Event" {
        return Err(LineupError::invalid(
            "not_a_scheduled_event",
            format!(
                "{function} runs on a \"Scheduled Event\", not {:?}",
                scheduled.detail_type
            ),
        ));
    }
    Ok(())
}

/// Time kept back from the Lambda deadline, so the invocation answers before it is killed.
const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

/// How one invocation of the `admit` function runs (its configuration).
#[derive(Debug, Clone, Copy)]
pub struct AdmitPace {
    /// How long it ticks (less if the invocation's deadline is nearer).
    pub run: Duration,
    /// The time between ticks.
    pub tick: Duration,
    /// What a big pre-queue's opening may take at the edge ([`AdmissionLoop::edge_budget`]).
    pub edge_budget: u64,
    /// The local disk the draw may use ([`DrawLimits::disk_bytes`]).
    pub draw_disk_bytes: u64,
}

impl AdmitPace {
    /// Ticking every `tick` for `run`, with the default edge budget and draw disk.
    pub fn new(run: Duration, tick: Duration) -> Self {
        Self {
            run,
            tick,
            edge_budget: crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
            draw_disk_bytes: pre_queue_draw::DEFAULT_DISK_BYTES,
        }
    }
}

/// The `admit` function's handler: checks that it was given an EventBridge scheduled event,
/// then runs the loop for the configured time, or less if the invocation's deadline is nearer.
pub async fn admit_for_invocation(
    ports: AdmissionPorts<'_>,
    clock: &dyn Clock,
    pace: &AdmitPace,
    invocation: lambda_runtime::LambdaEvent<serde_json::Value>,
) -> Result<AdmissionSummary, LineupError> {
    let AdmitPace {
        run,
        tick,
        edge_budget,
        draw_disk_bytes,
    } = *pace;
    expect_scheduled_event(invocation.payload, "admit")?;
    // Lambda's deadline is Unix milliseconds, always ahead at the start of an invocation. One
    // that is already past is not a real deadline (local emulators send a relative 600000):
    // then only ADMIT_RUN_MS bounds the run.
    let deadline = crate::domain::clock::from_unix_millis(invocation.context.deadline);
    let run_for = match deadline.duration_since(clock.now()) {
        Ok(left) => run.min(left.saturating_sub(DEADLINE_MARGIN)),
        Err(_) => {
            tracing::warn!(
                deadline_ms = invocation.context.deadline,
                "invocation deadline already past; running for ADMIT_RUN_MS"
            );
            run
        }
    };
    let mut admission = AdmissionLoop::new(ports, clock, tick);
    admission.edge_budget = edge_budget;
    admission.draw_limits.disk_bytes = draw_disk_bytes;
    let summary = admission.run(run_for).await?;
    tracing::info!(
        ticks = summary.ticks,
        admitted = summary.admitted,
        failed_event_ticks = summary.failed_event_ticks,
        "admission run finished"
    );
    Ok(summary)
}
