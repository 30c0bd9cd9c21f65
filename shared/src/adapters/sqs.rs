//! The SQS adapter of [`crate::application::ports::outbox::TicketPublisher`]: each outbox event becomes one message on the
//! FIFO ticket queue, deduplicated by its outbox id, so a record the stream hands over twice
//! (a retried batch) is dropped by SQS instead of reaching consumers twice.

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::ports::outbox::{OutboxEvent, TicketPublisher};

/// The ticket queue `outbox-stream` publishes to, read at cold start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherConfig {
    /// The URL of the FIFO ticket queue (`...fifo`), from `TICKET_QUEUE_URL`.
    pub queue_url: String,
}

/// Sends outbox events to a FIFO queue.
///
/// - Deduplication id = outbox id: SQS drops a second send of the same event within its
///   5-minute deduplication window. A re-send after that window is a duplicate the consumers
///   see, which the design allows (they key on `outboxId`); a gap is what it does not allow.
/// - Message group = order id: SQS delivers one group's messages strictly in order, one batch in
///   flight at a time, so the group is the unit of ordering and also of serialisation. Per order
///   keeps one order's events (ticket issued, then a refund) in order while different orders flow
///   in parallel. Not per on-sale event (`event_id`): every ticket of an on-sale would then queue
///   behind a single in-flight message, exactly when tens of thousands sell at once. (One group
///   per outbox event would order nothing at all.)
#[derive(Debug, Clone)]
pub struct SqsPublisher {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsPublisher {
    /// A publisher to the FIFO queue at `queue_url`, through `client`.
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// The URL of the queue it sends to.
    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }
}

#[async_trait]
impl TicketPublisher for SqsPublisher {
    async fn publish(&self, event: &OutboxEvent) -> Result<(), LineupError> {
        // Cannot fail: every field is a string, a list of strings, an integer or a unit enum
        // variant, all of which JSON represents.
        let body = serde_json::to_string(event).expect("an OutboxEvent always serialises to JSON");
        let sent = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .message_deduplication_id(&event.outbox_id)
            .message_group_id(&event.order_id)
            .send()
            .await
            .map_err(|error| LineupError::Unavailable {
                store: Store::TicketQueue,
                source: Box::new(aws_sdk_sqs::Error::from(error)),
            })?;
        tracing::debug!(
            outbox_id = %event.outbox_id,
            order_id = %event.order_id,
            message_id = sent.message_id().unwrap_or_default(),
            "outbox event sent to the ticket queue"
        );
        Ok(())
    }
}
