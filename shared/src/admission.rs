//! The admit loop. EventBridge fires the `admit` function at most once a minute, so one
//! invocation ticks every second (configurable) for about a minute, each tick admitting from the
//! head of every open event's queue. Cap and rate are enforced inside the Redis script, so two
//! overlapping invocations (EventBridge delivers at least once) admit no more than one would.

use std::time::Duration;

use futures::future::join_all;
use serde::Serialize;
use tokio::time::{Instant, MissedTickBehavior};

use crate::clock::Clock;
use crate::queue::Admitter;
use crate::LineupError;

/// After this many ticks in a row fail entirely, the invocation gives up and reports the error
/// (the next scheduled invocation tries again).
const MAX_FAILED_TICKS_IN_A_ROW: u32 = 3;

/// What one invocation did: the function's JSON answer, and its log line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionSummary {
    pub ticks: u64,
    pub admitted: u64,
    /// Per-event ticks that failed (the event is retried on the next tick).
    pub failed_event_ticks: u64,
}

pub struct AdmissionLoop<'a> {
    pub admitter: &'a dyn Admitter,
    pub clock: &'a dyn Clock,
    pub tick: Duration,
}

impl AdmissionLoop<'_> {
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

    /// One tick over every open event, the events in parallel. Fails when listing the events
    /// fails or when every event's tick failed.
    pub async fn tick_once(&self, summary: &mut AdmissionSummary) -> Result<(), LineupError> {
        let events = self.admitter.open_events().await?;
        let now = self.clock.now();
        let reports = join_all(
            events
                .iter()
                .map(|event| self.admitter.admit_tick(event, now)),
        )
        .await;
        summary.ticks += 1;
        let mut last_failure = None;
        let mut failed = 0;
        for (event, report) in events.iter().zip(reports) {
            match report {
                Ok(report) => {
                    summary.admitted += report.admitted;
                    crate::metrics::emit(
                        &[("EventId", event.as_str())],
                        &[
                            (
                                "Admitted",
                                report.admitted as f64,
                                crate::metrics::Unit::Count,
                            ),
                            (
                                "ActiveShoppers",
                                report.active as f64,
                                crate::metrics::Unit::Count,
                            ),
                            (
                                "QueueLength",
                                report.waiting as f64,
                                crate::metrics::Unit::Count,
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
        // One event failing is that event's problem; every event failing is the tick's.
        match last_failure {
            Some(error) if failed == events.len() as u64 => Err(error),
            _ => Ok(()),
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

/// The `admit` function's handler: checks that it was given an EventBridge scheduled event,
/// then runs the loop for the configured time, or less if the invocation's deadline is nearer.
pub async fn admit_for_invocation(
    admitter: &dyn Admitter,
    clock: &dyn Clock,
    config: &crate::config::AdmitConfig,
    invocation: lambda_runtime::LambdaEvent<serde_json::Value>,
) -> Result<AdmissionSummary, LineupError> {
    expect_scheduled_event(invocation.payload, "admit")?;
    // Lambda's deadline is Unix milliseconds, always ahead at the start of an invocation. One
    // that is already past is not a real deadline (local emulators send a relative 600000):
    // then only ADMIT_RUN_MS bounds the run.
    let deadline = crate::clock::from_unix_millis(invocation.context.deadline);
    let run_for = match deadline.duration_since(clock.now()) {
        Ok(left) => config.run.min(left.saturating_sub(DEADLINE_MARGIN)),
        Err(_) => {
            tracing::warn!(
                deadline_ms = invocation.context.deadline,
                "invocation deadline already past; running for ADMIT_RUN_MS"
            );
            config.run
        }
    };
    let admission = AdmissionLoop {
        admitter,
        clock,
        tick: config.tick,
    };
    let summary = admission.run(run_for).await?;
    tracing::info!(
        ticks = summary.ticks,
        admitted = summary.admitted,
        failed_event_ticks = summary.failed_event_ticks,
        "admission run finished"
    );
    Ok(summary)
}
