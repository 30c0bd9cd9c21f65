//! The SQS adapters: [`SqsPublisher`] (of [`crate::application::ports::outbox::TicketPublisher`])
//! makes each outbox event one message on the FIFO ticket queue, and each `refund_required` one
//! more on the refund queue, deduplicated by its outbox id, so a record the stream hands over
//! twice (a retried batch) is dropped by SQS instead of reaching consumers twice;
//! [`SqsRetries`] (of [`crate::application::refund::RetryLater`]) hands a refund message back to
//! its queue for later.

use std::time::Duration;

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind, TicketPublisher};
use crate::application::ports::refunds::RetryLater;

/// The queues `outbox-stream` publishes to, read at cold start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherConfig {
    /// The URL of the FIFO ticket queue (`...fifo`), from `TICKET_QUEUE_URL`.
    pub queue_url: String,
    /// The URL of the FIFO refund queue the `refund` function consumes, from
    /// `REFUND_QUEUE_URL`; `None`: refunds go to the ticket queue only.
    pub refund_queue_url: Option<String>,
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
    refund_queue_url: Option<String>,
}

impl SqsPublisher {
    /// A publisher to the FIFO queue at `queue_url`, through `client`.
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
            refund_queue_url: None,
        }
    }

    /// Also sends every `refund_required` to the refund queue at `url` (the `refund` function's).
    pub fn with_refund_queue(mut self, url: impl Into<String>) -> Self {
        self.refund_queue_url = Some(url.into());
        self
    }

    /// The URL of the queue it sends to.
    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }
}

#[async_trait]
impl TicketPublisher for SqsPublisher {
    async fn publish(&self, event: &OutboxEvent) -> Result<(), LineupError> {
        self.send(&self.queue_url, event).await?;
        if let (OutboxEventKind::RefundRequired, Some(refunds)) =
            (event.kind, &self.refund_queue_url)
        {
            // If this fails the record is retried, and the ticket queue drops its copy (same
            // deduplication id): both queues get the event, each once.
            self.send(refunds, event).await?;
        }
        Ok(())
    }
}

impl SqsPublisher {
    async fn send(&self, queue_url: &str, event: &OutboxEvent) -> Result<(), LineupError> {
        // Cannot fail: every field is a string, a list of strings, an integer or a unit enum
        // variant, all of which JSON represents.
        let body = serde_json::to_string(event).expect("an OutboxEvent always serialises to JSON");
        let sent = self
            .client
            .send_message()
            .queue_url(queue_url)
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
            queue = queue_url,
            "outbox event sent"
        );
        Ok(())
    }
}

/// Hands refund messages back to the refund queue for later (`ChangeMessageVisibility`).
#[derive(Debug, Clone)]
pub struct SqsRetries {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsRetries {
    /// For the queue at `queue_url`.
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

#[async_trait]
impl RetryLater for SqsRetries {
    async fn retry_after(&self, receipt_handle: &str, wait: Duration) -> Result<(), LineupError> {
        // SQS takes at most 12 hours.
        let seconds = wait.as_secs().min(12 * 60 * 60) as i32;
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(seconds)
            .send()
            .await
            .map_err(|error| LineupError::Unavailable {
                store: Store::TicketQueue,
                source: Box::new(aws_sdk_sqs::Error::from(error)),
            })?;
        Ok(())
    }
}
