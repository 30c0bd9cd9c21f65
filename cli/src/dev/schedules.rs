//! The two schedules EventBridge runs in AWS, run here as loops: admission (every tick, as one
//! long `admit` invocation does) and the expiry sweep (every few seconds locally; every minute
//! in AWS, which is why `lineup dev` can shorten holds and still show them lapse).
//!
//! Both run through outages: a failed round is logged and the next one tried at the next tick,
//! so when Redis is lost and a new, empty server answers on its port (a failover), they carry on
//! with it (the admitter re-loads open events from DynamoDB). While one keeps failing, its log
//! says so once, then once every [`FAILURES_SAID_EVERY`], then when it works again.

use std::fmt::Display;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::DynamoLedger;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::admit::{AdmissionLoop, AdmissionSummary};
use lineup::domain::clock::SystemClock;
use lineup::wiring::backends::{Admit, Expire, Queue};

/// Admits from every open event's queue once per `tick`, until the task is dropped.
pub async fn admit_forever(
    queue: RedisQueue,
    records: DynamoEventRecords,
    seats: DynamoLedger,
    tick: Duration,
) {
    let admit = Admit::new(
        Queue::new(Arc::new(queue), Arc::new(records)),
        Some(Arc::new(seats)),
    );
    let rebuild = admit.rebuild();
    let ports = admit.ports(rebuild.as_ref());
    let admission = AdmissionLoop::new(ports, &SystemClock, tick);
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut summary = AdmissionSummary::default();
    let mut failures = Failures::new("admission tick");
    loop {
        interval.tick().await;
        let before = summary.admitted;
        match admission.tick_once(&mut summary).await {
            Ok(()) => {
                failures.succeeded();
                if summary.admitted > before {
                    tracing::debug!(admitted = summary.admitted - before, "admission tick");
                }
            }
            Err(tick_error) => failures.failed(&tick_error),
        }
    }
}

/// Sweeps lapsed holds and closes sold-out queues once per `every`, until the task is dropped.
pub async fn expire_forever(ledger: DynamoLedger, queue: RedisQueue, every: Duration) {
    let expire = Expire::new(Arc::new(ledger), Arc::new(queue));
    let expiry = expire.expiry(&SystemClock);
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failures = Failures::new("expiry sweep");
    loop {
        interval.tick().await;
        match expiry.run().await {
            Ok(_) => failures.succeeded(),
            Err(sweep_error) => failures.failed(&sweep_error),
        }
    }
}

/// While a loop keeps failing, its failures are said at most this often.
pub const FAILURES_SAID_EVERY: Duration = Duration::from_secs(30);

/// A loop's run of failures, said without flooding the log: the first, then one line every
/// [`FAILURES_SAID_EVERY`] with how many since, then the recovery.
#[derive(Debug)]
struct Failures {
    what: &'static str,
    /// Failures in a row, the first one's time, and when they were last said.
    run: Option<(u64, Instant, Instant)>,
}

impl Failures {
    fn new(what: &'static str) -> Self {
        Self { what, run: None }
    }

    fn failed(&mut self, error: &dyn Display) {
        let now = Instant::now();
        let what = self.what;
        match &mut self.run {
            None => {
                tracing::warn!(error = %error, "{what} failed; trying again every tick");
                self.run = Some((1, now, now));
            }
            Some((count, since, said)) => {
                *count += 1;
                if now.duration_since(*said) >= FAILURES_SAID_EVERY {
                    *said = now;
                    tracing::warn!(
                        error = %error,
                        failures = *count,
                        "{what} still failing after {:.0} s",
                        now.duration_since(*since).as_secs_f64()
                    );
                }
            }
        }
    }

    fn succeeded(&mut self) {
        if let Some((count, since, _)) = self.run.take() {
            tracing::info!(
                failures = count,
                "{} works again after {:.1} s",
                self.what,
                since.elapsed().as_secs_f64()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_failures_is_counted_until_a_round_works() {
        let mut failures = Failures::new("admission tick");
        failures.succeeded();
        assert!(failures.run.is_none(), "nothing to say without failures");
        failures.failed(&"the queue store is unavailable");
        failures.failed(&"the queue store is unavailable");
        assert_eq!(failures.run.map(|(count, _, _)| count), Some(2));
        failures.succeeded();
        assert!(failures.run.is_none());
    }
}
