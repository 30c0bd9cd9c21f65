//! What EventBridge and SQS run in AWS, run here as loops: admission (every tick, as one long
//! `admit` invocation does), the expiry sweep (every few seconds locally; every minute in AWS,
//! which is why `lineup dev` can shorten holds and still show them lapse), reconciliation of
//! open payments (every 10 s locally; every minute in AWS) and the refund queue's consumer (the
//! `refund` function).
//!
//! All run through outages: a failed round is logged and the next one tried at the next tick,
//! so when Redis is lost and a new, empty server answers on its port (a failover), they carry on
//! with it (the admitter re-loads open events from DynamoDB). While one keeps failing, its log
//! says so once, then once every [`FAILURES_SAID_EVERY`], then when it works again.

use std::fmt::Display;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::DynamoLedger;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::adapters::sqs::SqsRetries;
use lineup::adapters::stripe::StripeProvider;
use lineup::application::admit::{AdmissionLoop, AdmissionSummary};
use lineup::application::reconcile::{reconcile, ReconcilePorts};
use lineup::application::refund::{handle_batch, QueueBatch, QueueMessage, RefundPorts};
use lineup::domain::clock::SystemClock;
use lineup::wiring::backends::{Admit, Expire, Queue};

/// Admits from every open event's queue once per `tick`, until the task is dropped.
pub async fn admit_forever(
    queue: RedisQueue,
    records: DynamoEventRecords,
    seats: DynamoLedger,
    tick: Duration,
    edge_budget: u64,
) {
    let admit = Admit::new(
        Queue::new(Arc::new(queue), Arc::new(records)),
        Some(Arc::new(seats)),
    );
    let rebuild = admit.rebuild();
    let ports = admit.ports(rebuild.as_ref());
    let mut admission = AdmissionLoop::new(ports, &SystemClock, tick);
    admission.edge_budget = edge_budget;
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

/// Looks at every open payment again through the provider once per `every`, as the
/// `reconcile` function does every minute in AWS.
pub async fn reconcile_forever(ledger: DynamoLedger, provider: StripeProvider, every: Duration) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failures = Failures::new("reconciliation");
    let ports = ReconcilePorts {
        orders: &ledger,
        ledger: &ledger,
        refunds: &ledger,
        provider: &provider,
        clock: &SystemClock,
    };
    loop {
        interval.tick().await;
        match reconcile(&ports, None).await {
            Ok(_) => failures.succeeded(),
            Err(run_error) => failures.failed(&run_error),
        }
    }
}

/// The `refund` function's event source mapping: receives from the refund queue, carries each
/// batch out, and deletes what was done (what was not comes back after its backoff).
pub async fn refund_forever(
    ledger: DynamoLedger,
    provider: StripeProvider,
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
) {
    let retries = SqsRetries::new(sqs.clone(), queue_url.clone());
    let ports = RefundPorts {
        ledger: &ledger,
        provider: &provider,
        retries: &retries,
        clock: &SystemClock,
    };
    let mut failures = Failures::new("refund queue");
    loop {
        let received = sqs
            .receive_message()
            .queue_url(&queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(60)
            .wait_time_seconds(1)
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .send()
            .await;
        let messages = match received {
            Ok(output) => {
                failures.succeeded();
                output.messages.unwrap_or_default()
            }
            Err(receive_error) => {
                failures.failed(&receive_error);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if messages.is_empty() {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let batch = QueueBatch {
            records: messages
                .iter()
                .map(|message| QueueMessage {
                    message_id: message.message_id().unwrap_or_default().to_owned(),
                    receipt_handle: message.receipt_handle().unwrap_or_default().to_owned(),
                    body: message.body().unwrap_or_default().to_owned(),
                    attributes: message
                        .attributes()
                        .map(|attributes| {
                            attributes
                                .iter()
                                .map(|(name, value)| (name.as_str().to_owned(), value.clone()))
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect(),
        };
        let answer = handle_batch(&ports, batch.clone()).await;
        for message in &batch.records {
            let failed = answer
                .batch_item_failures
                .iter()
                .any(|failure| failure.item_identifier == message.message_id);
            if failed {
                continue;
            }
            if let Err(delete_error) = sqs
                .delete_message()
                .queue_url(&queue_url)
                .receipt_handle(&message.receipt_handle)
                .send()
                .await
            {
                // It comes again; the refund record makes the second time a no-op.
                tracing::warn!(error = %delete_error, "refund queue: could not delete a message");
            }
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
