//! The `outbox-stream` handler: publishes the outbox table's new items, in stream order, and
//! tells Lambda which records to hand over again (`ReportBatchItemFailures`).
//!
//! Lambda restarts a DynamoDB stream batch from the *lowest* sequence number reported failed,
//! and checkpoints everything before it. So once a record fails, this handler publishes nothing
//! after it in the batch, and reports that record and every later one: the shard's order is
//! kept, nothing past a failure is checkpointed, and the retry re-sends at most what SQS FIFO
//! deduplication (by outbox id) then drops.
//!
//! A record whose new image is not an outbox event (a "poison" record) is reported failed too,
//! not skipped: skipping would silently lose a sale's ticket event, the one thing the outbox must
//! never do. The cost is that it holds up its shard until the event source mapping's retry limits
//! (`MaximumRetryAttempts`, `MaximumRecordAgeInSeconds`) run out; Lambda then sends the batch's
//! position to the mapping's on-failure destination, and an operator replays the item from the
//! outbox table (before its TTL). It is logged at error level with the decode error as the
//! source, so it is seen at once rather than when the retries run out.

use serde_json::Value;

use aws_lambda_events::dynamodb::{Event, EventRecord};

use crate::application::error::{LineupError, Store};
use crate::application::ports::outbox::{OutboxEvent, TicketPublisher};
use crate::application::stream_batch::{failure, sequence_number, stream_event};
pub use crate::application::stream_batch::{BatchItemFailure, StreamBatchResponse};

/// What happened to one record.
enum Outcome {
    Published,
    /// Not a new outbox item (a MODIFY, or a REMOVE such as a TTL deletion): nothing to send.
    Skipped,
    Failed,
}

/// Publishes every INSERT record of `event`, in order, stopping at the first failure; the
/// failed record and all records after it are reported in `batchItemFailures`.
pub async fn publish_batch(publisher: &dyn TicketPublisher, event: Event) -> StreamBatchResponse {
    let total = event.records.len();
    let (mut published, mut skipped) = (0usize, 0usize);
    let mut batch_item_failures = Vec::new();
    let mut records = event.records.iter();
    for record in records.by_ref() {
        match publish_record(publisher, record).await {
            Outcome::Published => published += 1,
            Outcome::Skipped => skipped += 1,
            Outcome::Failed => {
                batch_item_failures.push(failure(record));
                break;
            }
        }
    }
    // Past a failure nothing is published: Lambda hands all of these over again anyway.
    batch_item_failures.extend(records.map(failure));
    if batch_item_failures.is_empty() {
        tracing::info!(
            records = total,
            published,
            skipped,
            "outbox batch published"
        );
    } else {
        tracing::warn!(
            records = total,
            published,
            skipped,
            failed = batch_item_failures.len(),
            first_failed = %batch_item_failures[0].item_identifier,
            "outbox batch partly published; Lambda retries from the first failed record"
        );
    }
    StreamBatchResponse {
        batch_item_failures,
    }
}

async fn publish_record(publisher: &dyn TicketPublisher, record: &EventRecord) -> Outcome {
    let sequence_number = sequence_number(record);
    if record.event_name != "INSERT" {
        tracing::debug!(
            sequence_number,
            event_name = %record.event_name,
            "not a new outbox item; skipped"
        );
        return Outcome::Skipped;
    }
    let event: OutboxEvent = match serde_dynamo::from_item(record.change.new_image.clone()) {
        Ok(event) => event,
        Err(decode_error) => {
            let error = LineupError::Failed {
                store: Store::Seats,
                source: Box::new(decode_error),
            };
            tracing::error!(
                sequence_number,
                stream_event_id = %record.event_id,
                error = &error as &(dyn std::error::Error + 'static),
                "poison outbox record: its NewImage is not an outbox event; reported failed so \
                 it reaches the on-failure destination once retries run out"
            );
            return Outcome::Failed;
        }
    };
    match publisher.publish(&event).await {
        Ok(()) => {
            // Outbox lag: from the sale's commit to the message on the queue.
            let lag = humantime::parse_rfc3339(&event.occurred_at)
                .ok()
                .and_then(|occurred| std::time::SystemTime::now().duration_since(occurred).ok())
                .map(|lag| lag.as_millis() as f64);
            let mut metrics = vec![(
                "TicketsPublished",
                1.0,
                crate::application::metrics::Unit::Count,
            )];
            if let Some(lag) = lag {
                metrics.push((
                    "OutboxLag",
                    lag,
                    crate::application::metrics::Unit::Milliseconds,
                ));
            }
            crate::application::metrics::emit(&[("EventId", event.event_id.as_str())], &metrics);
            Outcome::Published
        }
        Err(error) => {
            tracing::warn!(
                sequence_number,
                outbox_id = %event.outbox_id,
                order_id = %event.order_id,
                error = &error as &(dyn std::error::Error + 'static),
                "outbox event not published"
            );
            Outcome::Failed
        }
    }
}

/// The `outbox-stream` function's handler: checks that it was given a DynamoDB stream event,
/// then publishes the batch. Any other event (an SQS batch, `{}`) is refused with
/// `not_a_dynamodb_stream_event` instead of being taken for an empty batch.
pub async fn handle(
    publisher: &dyn TicketPublisher,
    invocation: lambda_runtime::LambdaEvent<Value>,
) -> Result<StreamBatchResponse, LineupError> {
    let event = stream_event(invocation.payload, "outbox-stream")?;
    Ok(publish_batch(publisher, event).await)
}
