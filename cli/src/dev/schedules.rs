//! The two schedules EventBridge runs in AWS, run here as loops: admission (every tick, as one
//! long `admit` invocation does) and the expiry sweep (every few seconds locally; every minute
//! in AWS, which is why `lineup dev` can shorten holds and still show them lapse).

use std::time::Duration;

use std::sync::Arc;

use lineup::admission::{AdmissionLoop, AdmissionPorts, AdmissionSummary};
use lineup::availability::rebuild::AvailabilityRebuild;
use lineup::clock::SystemClock;
use lineup::event_records::dynamo::DynamoEventRecords;
use lineup::expiry::Expiry;
use lineup::ledger::dynamo::DynamoLedger;
use lineup::place_restore::Restorer;
use lineup::queue::redis::RedisQueue;

/// Admits from every open event's queue once per `tick`, until the task is dropped.
pub async fn admit_forever(
    queue: RedisQueue,
    records: DynamoEventRecords,
    seats: DynamoLedger,
    tick: Duration,
) {
    let queue = Arc::new(queue);
    let records = Arc::new(records);
    let restorer = Restorer::new(queue.clone(), records.clone(), records.clone());
    let board = queue.availability_board();
    let availability = AvailabilityRebuild {
        board: &board,
        layouts: &*records,
        states: &seats,
    };
    let ports = AdmissionPorts {
        admitter: &*queue,
        draw: &*queue,
        records: &*records,
        publication: &*records,
        restorer: &restorer,
        availability: Some(&availability),
    };
    let admission = AdmissionLoop::new(ports, &SystemClock, tick);
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut summary = AdmissionSummary::default();
    loop {
        interval.tick().await;
        let before = summary.admitted;
        match admission.tick_once(&mut summary).await {
            Ok(()) if summary.admitted > before => {
                tracing::debug!(admitted = summary.admitted - before, "admission tick");
            }
            Ok(()) => {}
            Err(tick_error) => tracing::warn!(error = %tick_error, "admission tick failed"),
        }
    }
}

/// Sweeps lapsed holds and closes sold-out queues once per `every`, until the task is dropped.
pub async fn expire_forever(ledger: DynamoLedger, queue: RedisQueue, every: Duration) {
    let seats = queue.availability_board();
    let expiry = Expiry {
        sweeper: &ledger,
        seats: &seats,
        events: &queue,
        settings: &queue,
        clock: &SystemClock,
    };
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if let Err(sweep_error) = expiry.run().await {
            tracing::warn!(error = %sweep_error, "expiry sweep failed");
        }
    }
}
