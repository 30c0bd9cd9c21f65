//! Cancelling an event's sales (`lineup event cancel`): every open order of the event is marked
//! `cancelled_at` so that no payment can make it PAID any more ([`DynamoLedger::stop_open_orders`]),
//! then every PAID order becomes REFUND_REQUIRED, each in one transaction with its payment's
//! `refund_required` outbox event, so the `refund` function gives every paid order its money
//! back, exactly once.
//!
//! Exactly once, however many runs, crashes or overlapping operators:
//! - the order moves only from PAID, and only while it still carries the payment found
//!   (`#status = PAID AND payment_id = :payment`): a second run, or an order a racing run took
//!   first, fails that condition and is skipped, writing nothing;
//! - the refund event is keyed as `confirm` keys a payment's refund (`refund-<sha256(payment
//!   id)[..20]>`, [`refund_outbox_id`]) and put only if new: one `refund_required` per payment
//!   whatever wrote it, and the `refund` function's record (keyed by that id) and the payment's
//!   refunded total do the rest.
//!
//! Both are one transaction, so an order is REFUND_REQUIRED if and only if its refund event
//! exists. The seats stay SOLD: the event is cancelled, nobody buys them again (and the
//! customers' counts of seats bought, `TICKETS#`, stay too). The order gets `cancelled_at`
//! (Unix milliseconds) beside its status, telling a cancellation from a late payment.
//!
//! Finding the orders is a Scan: the orders table has no index by event (its only index holds
//! PENDING orders). See [`DynamoLedger::paid_orders`] for what it costs.

use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::adapters::dynamo::confirm::refund_outbox_id;
use crate::adapters::dynamo::items::{from_item, n, order_key, s, to_item, Item, ORDER_PREFIX};
use crate::adapters::dynamo::{
    all_items, built, condition_failed, store_error, transact, DynamoLedger, TransactionOutcome,
};
use crate::application::error::LineupError;
use crate::application::ports::ledger::{OrderStatus, PaymentConfirmation, PaymentFor};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind};
use crate::domain::clock::{rfc3339, unix_millis};
use crate::domain::ids::{CustomerId, EventId, OrderId, PaymentId};

/// How long the outbox item is kept (DynamoDB TTL): the same 7 days as `confirm`'s outbox items.
const OUTBOX_LIFETIME: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How many orders' transactions are in flight at once (each touches only its own order and
/// its own outbox item, so they never conflict with each other).
pub const CANCELLATION_CONCURRENCY: usize = 16;

/// A PAID order of the event, as the scan found it: what its refund event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidOrder {
    /// The order.
    pub order_id: OrderId,
    /// Its event.
    pub event_id: EventId,
    /// Who paid (and gets the money back).
    pub customer_id: CustomerId,
    /// The payment that settled it: the one to refund.
    pub payment_id: PaymentId,
    /// Its seats (they stay SOLD).
    pub seat_ids: Vec<String>,
    /// What was paid, in minor units of `currency`.
    pub amount: i64,
    /// Three-letter currency code (ISO 4217).
    pub currency: String,
}

impl PaidOrder {
    /// The outbox id of this payment's refund event: `confirm`'s derivation, so a payment has
    /// one refund event whoever writes it.
    pub fn refund_outbox_id(&self, now: SystemTime) -> String {
        refund_outbox_id(&PaymentConfirmation {
            order: PaymentFor::Order(self.order_id.clone()),
            idempotency_key: String::new(),
            request_digest: String::new(),
            payment_id: self.payment_id.clone(),
            amount: self.amount,
            currency: self.currency.clone(),
            now,
        })
    }

    /// The `refund_required` event, as `confirm` writes one for a payment that bought nothing:
    /// the order's seats, its amount, the payment.
    pub fn refund_event(&self, now: SystemTime) -> OutboxEvent {
        OutboxEvent {
            outbox_id: self.refund_outbox_id(now),
            kind: OutboxEventKind::RefundRequired,
            event_id: self.event_id.as_str().to_owned(),
            order_id: self.order_id.as_str().to_owned(),
            customer_id: self.customer_id.as_str().to_owned(),
            seat_ids: self.seat_ids.clone(),
            amount: self.amount,
            currency: self.currency.clone(),
            payment_id: Some(self.payment_id.as_str().to_owned()),
            occurred_at: rfc3339(now),
        }
    }
}

/// An order that could not be dealt with, and why (it stays as it was; a run again tries again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedOrder {
    /// The order's id (or its item's key, when the item could not be read).
    pub order_id: String,
    /// What went wrong.
    pub error: String,
}

/// The event's PAID orders as the scan found them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaidOrders {
    /// Those with everything a refund needs.
    pub orders: Vec<PaidOrder>,
    /// PAID items that could not be read as an order (no payment id, a malformed id...): an
    /// operator must look at them.
    pub unreadable: Vec<FailedOrder>,
}

impl PaidOrders {
    /// How many PAID orders the event has.
    pub fn count(&self) -> usize {
        self.orders.len() + self.unreadable.len()
    }
}

/// What [`DynamoLedger::stop_open_orders`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoppedOrders {
    /// Open orders the scan found, not marked yet.
    pub found: usize,
    /// Marked now: a payment for them is refunded, not sold.
    pub marked: Vec<String>,
    /// No longer open when their turn came (paid meanwhile: the PAID scan takes them).
    pub skipped: Vec<String>,
    /// Left unmarked because something failed (run the cancellation again).
    pub failed: Vec<FailedOrder>,
}

/// What one order's transaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundRequirement {
    /// The order is REFUND_REQUIRED now, and its refund event is in the outbox.
    Recorded,
    /// The order was no longer PAID with that payment (a run before, or a racing one, took it):
    /// nothing written.
    NoLongerPaid,
}

/// Where a cancellation stands, after each order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CancellationProgress {
    /// Orders dealt with so far (recorded, skipped or failed).
    pub done: usize,
    /// PAID orders found.
    pub total: usize,
    /// `refund_required` events recorded so far.
    pub recorded: usize,
    /// Orders no longer PAID when their turn came.
    pub skipped: usize,
    /// Orders that failed so far.
    pub failed: usize,
}

/// What cancelling an event's paid orders did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CancellationReport {
    /// PAID orders the scan found.
    pub found: usize,
    /// Orders now REFUND_REQUIRED, each with its `refund_required` event recorded.
    pub recorded: Vec<String>,
    /// Orders no longer PAID when their transaction ran (nothing written).
    pub skipped: Vec<String>,
    /// Orders left PAID because something failed (run the cancellation again).
    pub failed: Vec<FailedOrder>,
}

impl CancellationReport {
    /// Every order found was recorded or skipped.
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty()
    }

    fn progress(&self) -> CancellationProgress {
        CancellationProgress {
            done: self.recorded.len() + self.skipped.len() + self.failed.len(),
            total: self.found,
            recorded: self.recorded.len(),
            skipped: self.skipped.len(),
            failed: self.failed.len(),
        }
    }
}

/// The part of an order item the scan reads.
#[derive(Deserialize)]
struct ScannedOrder {
    order_id: String,
    event_id: String,
    customer_id: String,
    seat_ids: Vec<String>,
    amount: i64,
    currency: String,
    #[serde(default)]
    payment_id: Option<String>,
}

impl ScannedOrder {
    fn into_paid_order(self) -> Result<PaidOrder, String> {
        let payment = self
            .payment_id
            .ok_or_else(|| "a PAID order without a payment_id".to_owned())?;
        Ok(PaidOrder {
            order_id: OrderId::parse(&self.order_id).map_err(|error| error.to_string())?,
            event_id: EventId::parse(&self.event_id).map_err(|error| error.to_string())?,
            customer_id: CustomerId::parse(&self.customer_id).map_err(|error| error.to_string())?,
            payment_id: PaymentId::parse(&payment).map_err(|error| error.to_string())?,
            seat_ids: self.seat_ids,
            amount: self.amount,
            currency: self.currency,
        })
    }
}

/// The outbox item: the event's camelCase shape plus `ttl`, as `confirm` writes it.
#[derive(Serialize)]
struct OutboxItem<'a> {
    #[serde(flatten)]
    event: &'a OutboxEvent,
    ttl: u64,
}

/// The transaction's items, in this order.
const ORDER_ITEM: usize = 0;
const OUTBOX_ITEM: usize = 1;

impl DynamoLedger {
    /// Every PAID order of `event`.
    ///
    /// **Cost.** A paginated, strongly consistent Scan of the whole orders table, filtered on
    /// `begins_with(pk, "ORDER#") AND event_id = :event AND #status = :paid`: DynamoDB bills
    /// what it reads, not what the filter keeps, so every item of every event is read (orders,
    /// hold locks, idempotency, payment, refund and ticket-count records): 1 read request unit
    /// per 4 KB, about 262,000 per GB of table, a few cents on demand (at $0.125-0.25 per
    /// million), read 1 MB per request, so about a minute or two per GB from one client.
    /// Acceptable for an operator's command run once per cancelled event; not for a function.
    /// (An index by event would make it a Query of the event's orders only.)
    pub async fn paid_orders(&self, event: &EventId) -> Result<PaidOrders, LineupError> {
        let items: Vec<Item> = all_items(
            self.client
                .scan()
                .table_name(&self.tables.orders)
                .consistent_read(true)
                .filter_expression(
                    "begins_with(#pk, :prefix) AND #event = :event AND #status = :paid",
                )
                .projection_expression(
                    "#pk, #order, #event, #customer, #seats, #amount, #currency, #status, #payment",
                )
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#order", "order_id")
                .expression_attribute_names("#event", "event_id")
                .expression_attribute_names("#customer", "customer_id")
                .expression_attribute_names("#seats", "seat_ids")
                .expression_attribute_names("#amount", "amount")
                .expression_attribute_names("#currency", "currency")
                .expression_attribute_names("#status", "status")
                .expression_attribute_names("#payment", "payment_id")
                .expression_attribute_values(":prefix", s(ORDER_PREFIX))
                .expression_attribute_values(":event", s(event.as_str()))
                .expression_attribute_values(":paid", s(OrderStatus::Paid.as_str()))
                .into_paginator()
                .items()
                .send(),
        )
        .await?;
        let mut found = PaidOrders::default();
        for item in items {
            let key = match item.get("pk") {
                Some(AttributeValue::S(pk)) => pk.trim_start_matches(ORDER_PREFIX).to_owned(),
                _ => "?".to_owned(),
            };
            let read = from_item::<ScannedOrder>(item)
                .map_err(|error| error.to_string())
                .and_then(ScannedOrder::into_paid_order);
            match read {
                Ok(order) => found.orders.push(order),
                Err(error) => {
                    tracing::error!(order = %key, error = %error, "a PAID order that cannot be read");
                    found.unreadable.push(FailedOrder {
                        order_id: key,
                        error,
                    });
                }
            }
        }
        Ok(found)
    }

    /// One order, in one transaction: PAID (with this payment) → REFUND_REQUIRED with
    /// `cancelled_at`, and its `refund_required` outbox event, put only if new. Its seats stay
    /// SOLD.
    pub async fn require_refund(
        &self,
        order: &PaidOrder,
        now: SystemTime,
    ) -> Result<RefundRequirement, LineupError> {
        let event = order.refund_event(now);
        let ttl = unix_millis(now + OUTBOX_LIFETIME) / 1000;
        let update = Update::builder()
            .table_name(&self.tables.orders)
            .key("pk", order_key(&order.order_id))
            .update_expression("SET #status = :required, cancelled_at = :now")
            .condition_expression("#status = :paid AND payment_id = :payment AND event_id = :event")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":required", s(OrderStatus::RefundRequired.as_str()))
            .expression_attribute_values(":paid", s(OrderStatus::Paid.as_str()))
            .expression_attribute_values(":payment", s(order.payment_id.as_str()))
            .expression_attribute_values(":event", s(order.event_id.as_str()))
            .expression_attribute_values(":now", n(unix_millis(now)));
        let put = Put::builder()
            .table_name(&self.tables.outbox)
            .set_item(Some(to_item(&OutboxItem { event: &event, ttl })?))
            .condition_expression("attribute_not_exists(outboxId)");
        // In this order: ORDER_ITEM, OUTBOX_ITEM.
        let items = vec![
            TransactWriteItem::builder()
                .update(built(update.build()))
                .build(),
            TransactWriteItem::builder().put(built(put.build())).build(),
        ];
        match transact(&self.client, items).await? {
            TransactionOutcome::Done(()) => {
                tracing::debug!(order = %order.order_id, payment = %order.payment_id, refund = %event.outbox_id, "event cancelled: refund required");
                Ok(RefundRequirement::Recorded)
            }
            TransactionOutcome::Cancelled(reasons)
                if reasons.get(ORDER_ITEM).is_some_and(condition_failed) =>
            {
                tracing::info!(order = %order.order_id, "no longer PAID with this payment: skipped");
                Ok(RefundRequirement::NoLongerPaid)
            }
            // The order is still PAID, yet its payment's refund event exists: written by no
            // path of Lineup's (a payment that settled an order never gets one from confirm).
            TransactionOutcome::Cancelled(reasons)
                if reasons.get(OUTBOX_ITEM).is_some_and(condition_failed) =>
            {
                Err(LineupError::SeatStoreReply {
                    operation: "cancel",
                    reply: format!(
                        "the order is still PAID but its payment's refund event {} exists",
                        event.outbox_id
                    ),
                })
            }
            TransactionOutcome::Cancelled(reasons) => {
                let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
                Err(LineupError::SeatStoreReply {
                    operation: "cancel",
                    reply: codes.join(","),
                })
            }
        }
    }

    /// Marks every open order of `event` (PENDING, or EXPIRED/RELEASED, which a late payment
    /// could still buy) with `cancelled_at`: from then on a payment for it settles as
    /// REFUND_REQUIRED, never PAID (`confirm`'s order condition), and checkout makes no payment
    /// for it. Each is one conditional UpdateItem (still open, not marked yet): an order paid
    /// meanwhile fails it and is left to the PAID scan that follows; a run again marks only what
    /// is new. A Scan, as [`Self::paid_orders`] (same cost).
    pub async fn stop_open_orders(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<StoppedOrders, LineupError> {
        let items: Vec<Item> = all_items(self
            .client
            .scan()
            .table_name(&self.tables.orders)
            .consistent_read(true)
            .filter_expression(
                "begins_with(#pk, :prefix) AND #event = :event \
                 AND #status IN (:pending, :expired, :released) AND attribute_not_exists(#cancelled)",
            )
            .projection_expression("#pk")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#event", "event_id")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#cancelled", "cancelled_at")
            .expression_attribute_values(":prefix", s(ORDER_PREFIX))
            .expression_attribute_values(":event", s(event.as_str()))
            .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
            .expression_attribute_values(":expired", s(OrderStatus::Expired.as_str()))
            .expression_attribute_values(":released", s(OrderStatus::Released.as_str()))
            .into_paginator().items().send()).await?;
        let keys: Vec<String> = items
            .into_iter()
            .filter_map(|item| match item.get("pk") {
                Some(AttributeValue::S(pk)) => Some(pk.clone()),
                _ => None,
            })
            .collect();
        let mut stopped = StoppedOrders {
            found: keys.len(),
            ..StoppedOrders::default()
        };
        let mut outcomes = futures::stream::iter(keys)
            .map(|pk| async move {
                let marked = self
                    .client
                    .update_item()
                    .table_name(&self.tables.orders)
                    .key("pk", s(&pk))
                    .update_expression("SET cancelled_at = :now")
                    .condition_expression(
                        "#event = :event AND #status IN (:pending, :expired, :released) \
                         AND attribute_not_exists(cancelled_at)",
                    )
                    .expression_attribute_names("#event", "event_id")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":event", s(event.as_str()))
                    .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
                    .expression_attribute_values(":expired", s(OrderStatus::Expired.as_str()))
                    .expression_attribute_values(":released", s(OrderStatus::Released.as_str()))
                    .expression_attribute_values(":now", n(unix_millis(now)))
                    .send()
                    .await;
                (pk, marked)
            })
            .buffer_unordered(CANCELLATION_CONCURRENCY);
        while let Some((pk, marked)) = outcomes.next().await {
            let order_id = pk.trim_start_matches(ORDER_PREFIX).to_owned();
            match marked {
                Ok(_) => stopped.marked.push(order_id),
                Err(error)
                    if error
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                {
                    stopped.skipped.push(order_id);
                }
                Err(error) => {
                    let error = store_error(error);
                    tracing::warn!(order = %order_id, error = %error, source = ?std::error::Error::source(&error), "could not stop an open order of a cancelled event");
                    stopped.failed.push(FailedOrder {
                        order_id,
                        error: error.to_string(),
                    });
                }
            }
        }
        Ok(stopped)
    }

    /// Every PAID order of `event` to REFUND_REQUIRED with its `refund_required` event
    /// ([`Self::paid_orders`], then [`Self::require_refund`] for each,
    /// [`CANCELLATION_CONCURRENCY`] at a time). `progress` is told after each order. One
    /// order's failure does not stop the others: it is in the report's `failed`, still PAID,
    /// and a run again picks it up (and only it: the others are no longer PAID). Only the scan
    /// failing is an error.
    pub async fn cancel_paid_orders(
        &self,
        event: &EventId,
        now: SystemTime,
        progress: &mut (dyn FnMut(&CancellationProgress) + Send),
    ) -> Result<CancellationReport, LineupError> {
        let found = self.paid_orders(event).await?;
        self.require_refunds(found, now, progress).await
    }

    /// [`Self::require_refund`] for each order found (the unreadable ones are failures).
    pub async fn require_refunds(
        &self,
        found: PaidOrders,
        now: SystemTime,
        progress: &mut (dyn FnMut(&CancellationProgress) + Send),
    ) -> Result<CancellationReport, LineupError> {
        let mut report = CancellationReport {
            found: found.count(),
            failed: found.unreadable,
            ..CancellationReport::default()
        };
        progress(&report.progress());
        let mut outcomes = futures::stream::iter(found.orders)
            .map(|order| async move {
                let outcome = self.require_refund(&order, now).await;
                (order, outcome)
            })
            .buffer_unordered(CANCELLATION_CONCURRENCY);
        while let Some((order, outcome)) = outcomes.next().await {
            let id = order.order_id.as_str().to_owned();
            match outcome {
                Ok(RefundRequirement::Recorded) => report.recorded.push(id),
                Ok(RefundRequirement::NoLongerPaid) => report.skipped.push(id),
                Err(error) => {
                    tracing::warn!(order = %id, error = %error, source = ?std::error::Error::source(&error), "could not record the refund of a cancelled event's order; it stays PAID");
                    report.failed.push(FailedOrder {
                        order_id: id,
                        error: error.to_string(),
                    });
                }
            }
            progress(&report.progress());
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order() -> PaidOrder {
        PaidOrder {
            order_id: OrderId::parse("0b6f1b9e-2c1f-4b8e-9d4a-3e1c2b7a9f10").unwrap(),
            event_id: EventId::parse("gala").unwrap(),
            customer_id: CustomerId::parse("alice").unwrap(),
            payment_id: PaymentId::parse("pi_123").unwrap(),
            seat_ids: vec!["A-001".to_owned(), "A-002".to_owned()],
            amount: 24_000,
            currency: "KRW".to_owned(),
        }
    }

    #[test]
    fn the_refund_event_is_the_one_confirm_would_write_for_the_payment() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let event = order().refund_event(now);
        use sha2::Digest;
        let digest = hex::encode(&sha2::Sha256::digest(b"pi_123")[..20]);
        assert_eq!(event.outbox_id, format!("refund-{digest}"));
        // Whenever it is written, and whatever else the order carries: one id per payment.
        let mut other = order();
        other.amount = 1;
        assert_eq!(
            other.refund_event(now + Duration::from_secs(60)).outbox_id,
            event.outbox_id
        );
        assert_eq!(event.kind, OutboxEventKind::RefundRequired);
        assert_eq!(event.payment_id.as_deref(), Some("pi_123"));
        assert_eq!(event.seat_ids, vec!["A-001", "A-002"]);
        assert_eq!((event.amount, event.currency.as_str()), (24_000, "KRW"));
        let item = to_item(&OutboxItem {
            event: &event,
            ttl: 1,
        })
        .unwrap();
        for attribute in [
            "outboxId",
            "type",
            "eventId",
            "orderId",
            "customerId",
            "seatIds",
            "amount",
            "currency",
            "paymentId",
            "occurredAt",
            "ttl",
        ] {
            assert!(item.contains_key(attribute), "{attribute}");
        }
    }

    #[test]
    fn a_paid_item_without_a_payment_is_unreadable_not_refunded_blindly() {
        let scanned = ScannedOrder {
            order_id: "0b6f1b9e-2c1f-4b8e-9d4a-3e1c2b7a9f10".to_owned(),
            event_id: "gala".to_owned(),
            customer_id: "alice".to_owned(),
            seat_ids: vec!["A-001".to_owned()],
            amount: 1,
            currency: "KRW".to_owned(),
            payment_id: None,
        };
        assert!(scanned.into_paid_order().is_err());
    }
}
