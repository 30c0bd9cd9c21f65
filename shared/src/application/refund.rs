//! The `refund` function: carries out every `refund_required` event, exactly once, from a queue
//! of its own (the ticket queue's consumers are left as they are).
//!
//! Exactly once, whatever the deliveries: the refund is recorded first (once per event, within
//! what is left of the payment: never more than was paid, checked here and not left to the
//! provider), then one invocation at a time holds it ([`REFUND_LEASE`]) while it asks the
//! provider, which it does with the record's id as the idempotency key, after looking for a
//! refund that id already made (an answer lost to a timeout, or a provider that ignores
//! idempotency keys, as localstripe does). A message whose refund another invocation holds, or
//! whose provider call failed, is handed back to the queue, to come again later (backing off);
//! after the queue's receive limit it lands in the dead-letter queue, which raises an alarm.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::application::error::LineupError;
use crate::application::metrics::{self, Unit};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind};
use crate::application::ports::payments::{NewRefund, PaymentProvider};
use crate::application::ports::refunds::{
    Recorded, RefundLedger, RefundRecord, RefundRequest, RefundState, RetryLater, REFUND_LEASE,
};
use crate::domain::clock::Clock;
use crate::domain::ids::{OrderId, PaymentId};

/// What the refund function works with.
pub struct RefundPorts<'a> {
    /// The refund records and the payments' refunded totals (DynamoDB).
    pub ledger: &'a dyn RefundLedger,
    /// Where the money is (Stripe).
    pub provider: &'a dyn PaymentProvider,
    /// Hands a message back to its queue for later (SQS).
    pub retries: &'a dyn RetryLater,
    /// The time records are written at.
    pub clock: &'a dyn Clock,
}

/// What became of one `refund_required` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundOutcome {
    /// The provider has the refund (pending, or done): the record as it is now.
    Asked(RefundRecord),
    /// Nothing of the payment is left to refund.
    NothingLeft,
    /// No record of the payment: nothing can be checked, so nothing is refunded (alarmed).
    UnknownPayment,
    /// Another invocation holds the refund: try again later.
    Busy,
    /// Not a `refund_required` event: nothing to do.
    NotARefund,
}

/// Carries out one outbox event (a `refund_required`; any other is ignored).
pub async fn carry_out(
    ports: &RefundPorts<'_>,
    event: &OutboxEvent,
) -> Result<RefundOutcome, LineupError> {
    let Some(request) = request_of(event)? else {
        return Ok(RefundOutcome::NotARefund);
    };
    let now = ports.clock.now();
    let record = match ports.ledger.record(&request, now).await? {
        Recorded::Refund(record) => record,
        Recorded::NothingLeft => {
            tracing::warn!(refund = %request.refund_id, payment = %request.payment_id, "nothing left of the payment to refund");
            return Ok(RefundOutcome::NothingLeft);
        }
        Recorded::UnknownPayment => {
            tracing::error!(refund = %request.refund_id, payment = %request.payment_id, "a refund of a payment Lineup has no record of; not made");
            metrics::emit(
                &[("Reason", "unknown_payment")],
                &[("RefundsRefused", 1.0, Unit::Count)],
            );
            return Ok(RefundOutcome::UnknownPayment);
        }
    };
    if record.state != RefundState::Creating {
        // Asked before (a redelivery): its status comes by webhook or reconciliation.
        return Ok(RefundOutcome::Asked(record));
    }
    if !ports.ledger.lease(&request.refund_id, now).await? {
        return Ok(RefundOutcome::Busy);
    }
    // A refund this record already made (its answer lost) is found, not made again.
    let made_before = ports
        .provider
        .refunds_of(&request.payment_id)
        .await?
        .into_iter()
        .find(|refund| refund.lineup_refund.as_deref() == Some(request.refund_id.as_str()));
    let refund = match made_before {
        Some(refund) => refund,
        None => {
            ports
                .provider
                .refund(&NewRefund {
                    payment_id: request.payment_id.clone(),
                    amount: record.amount,
                    currency: request.currency.clone(),
                    refund_id: request.refund_id.clone(),
                })
                .await?
        }
    };
    let record = ports
        .ledger
        .settle(&record, &refund, ports.clock.now())
        .await?;
    let state = record.state.as_str();
    tracing::info!(refund = %request.refund_id, payment = %request.payment_id, provider_refund = %refund.id, amount = record.amount, state, "refund asked of the provider");
    metrics::emit(&[("State", state)], &[("Refunds", 1.0, Unit::Count)]);
    if record.state == RefundState::Failed {
        tracing::error!(refund = %request.refund_id, payment = %request.payment_id, "the provider could not refund; an operator must act");
        metrics::emit(
            &[("Reason", "provider_failed")],
            &[("RefundsRefused", 1.0, Unit::Count)],
        );
    }
    Ok(RefundOutcome::Asked(record))
}

/// The refund an outbox event asks for; `None` for any other event.
fn request_of(event: &OutboxEvent) -> Result<Option<RefundRequest>, LineupError> {
    if event.kind != OutboxEventKind::RefundRequired {
        return Ok(None);
    }
    let payment = event.payment_id.as_deref().ok_or_else(|| {
        LineupError::invalid(
            "invalid_refund",
            "a refund_required event without a paymentId",
        )
    })?;
    Ok(Some(RefundRequest {
        refund_id: event.outbox_id.clone(),
        payment_id: PaymentId::parse(payment)?,
        order_id: OrderId::parse(&event.order_id)?,
        amount: event.amount,
        currency: event.currency.clone(),
    }))
}

/// One message of an SQS batch, as much of it as the handler reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueMessage {
    /// SQS's id of the message: named in a partial batch failure.
    pub message_id: String,
    /// What hands it back to the queue.
    pub receipt_handle: String,
    /// The outbox event, as JSON.
    pub body: String,
    /// `ApproximateReceiveCount` and the rest.
    #[serde(default)]
    pub attributes: std::collections::HashMap<String, String>,
}

/// An SQS event: the batch Lambda hands over.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueBatch {
    /// The messages.
    pub records: Vec<QueueMessage>,
}

/// The answer in Lambda's partial batch response shape: the messages to hand over again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueBatchResponse {
    /// Empty when every message was done.
    pub batch_item_failures: Vec<QueueItemFailure>,
}

/// One message to hand over again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueItemFailure {
    /// The message's `messageId`.
    pub item_identifier: String,
}

/// The wait before a message that failed `receives` times comes again: 30 s, doubling, at most
/// 15 minutes (the queue's receive limit then sends it to the dead-letter queue).
pub fn backoff(receives: u32) -> Duration {
    let doublings = receives.saturating_sub(1).min(5);
    (REFUND_LEASE / 2 * 2u32.pow(doublings)).min(Duration::from_secs(15 * 60))
}

/// Carries out a batch: every message independently; those not done are handed back to the
/// queue, to come again after [`backoff`].
pub async fn handle_batch(ports: &RefundPorts<'_>, batch: QueueBatch) -> QueueBatchResponse {
    let mut failures = Vec::new();
    for message in &batch.records {
        let done = match serde_json::from_str::<OutboxEvent>(&message.body) {
            // A message that is not an outbox event can never be done: it goes to the
            // dead-letter queue after its receives, and is logged now.
            Err(error) => {
                tracing::error!(message = %message.message_id, error = %error, "a refund queue message that is not an outbox event");
                false
            }
            Ok(event) => match carry_out(ports, &event).await {
                Ok(RefundOutcome::Busy) => false,
                Ok(_) => true,
                Err(error) => {
                    tracing::warn!(message = %message.message_id, error = %error, source = ?std::error::Error::source(&error), "refund not done; it comes again later");
                    false
                }
            },
        };
        if !done {
            let receives = message
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|count| count.parse().ok())
                .unwrap_or(1);
            if let Err(error) = ports
                .retries
                .retry_after(&message.receipt_handle, backoff(receives))
                .await
            {
                // It comes again after the queue's visibility timeout instead.
                tracing::warn!(message = %message.message_id, error = %error, "could not delay the message's next delivery");
            }
            failures.push(QueueItemFailure {
                item_identifier: message.message_id.clone(),
            });
        }
    }
    QueueBatchResponse {
        batch_item_failures: failures,
    }
}
