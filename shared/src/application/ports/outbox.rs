//! The transactional outbox. A sale writes its "ticket issued" (or "refund required") event in
//! the same DynamoDB transaction as the sale itself, into the outbox table; the table's stream
//! feeds `outbox-stream`, which publishes each event to SQS. So an event exists if and only if the
//! sale does, and a failure between the two steps delays the message, never loses it.
//!
//! - [`OutboxEvent`]: the event, as stored in the outbox table and as sent on SQS.
//! - [`TicketPublisher`]: the port `outbox-stream` publishes through; [`crate::adapters::sqs::SqsPublisher`] is its adapter.
//! - [`crate::application::outbox_stream`]: the DynamoDB Streams handler with partial batch failure reporting.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::application::error::LineupError;

/// What an outbox event says happened: its `type` field (`ticket_issued`, `refund_required`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboxEventKind {
    /// The order is paid and its seats are sold to it.
    TicketIssued,
    /// Money that bought nothing: paid after the hold lapsed and a seat went to someone else (or
    /// the ticket limit was reached), paid for an order another payment had settled, or the
    /// wrong amount. Refund it. One per payment (`paymentId`).
    RefundRequired,
}

/// One outbox event. The same camelCase shape is the outbox item (key `outboxId`, plus a `ttl`
/// attribute for DynamoDB TTL that is not part of the event) and the SQS message body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxEvent {
    /// Unique per event; also the SQS deduplication id, so a re-sent record is dropped by SQS.
    pub outbox_id: String,
    /// The JSON `type`: what happened.
    #[serde(rename = "type")]
    pub kind: OutboxEventKind,
    /// The event the order is for.
    pub event_id: String,
    /// The order paid (or paid for in vain).
    pub order_id: String,
    /// The customer who owns the order: who gets the tickets or the refund.
    pub customer_id: String,
    /// The order's seats (for `ticket_issued`, the seats sold).
    pub seat_ids: Vec<String>,
    /// In minor units of `currency` (cents, won...).
    pub amount: i64,
    /// Three-letter currency code (ISO 4217) of `amount`.
    pub currency: String,
    /// The provider's payment this event is about (the one to refund, for `refund_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    /// RFC 3339, UTC.
    pub occurred_at: String,
}

/// Where `outbox-stream` sends events. Implementations must be idempotent per `outbox_id`
/// (SQS FIFO deduplication does this for the SQS adapter).
#[async_trait]
pub trait TicketPublisher: Send + Sync {
    /// Sends one event; an error leaves its stream record to be retried.
    async fn publish(&self, event: &OutboxEvent) -> Result<(), LineupError>;
}
