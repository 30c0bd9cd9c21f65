//! Confirming a payment, exactly once, and each payment for one order only.
//!
//! One transaction writes the idempotency record, the payment record (`PAYMENT#<paymentId>`, so a
//! payment settles at most one order, ever), the order PAID, the customer's count of seats bought
//! (checked against the event's ticket limit), every seat SOLD (only while still this order's, or
//! free again), and the `ticket_issued` outbox event. If a seat now belongs to someone else, or
//! the ticket limit was reached meanwhile, a second transaction records REFUND_REQUIRED instead.
//!
//! Money that cannot buy the order (the order was settled by another payment, or the amount is
//! wrong) is never dropped: its payment record and a `refund_required` outbox event keyed by the
//! payment id are written together, and the provider gets a 4xx. A repetition finds the
//! idempotency or payment record and gets the first answer back; the same payment presented for
//! another order is refused and records nothing.

use std::time::Duration;

use aws_sdk_dynamodb::types::{CancellationReason, Put, TransactWriteItem, Update};
use sha2::{Digest, Sha256};

use crate::adapters::dynamo::items::{
    from_item, idempotency_key, idempotency_pk, n, order_key, payment_key, payment_pk, s, seat_key,
    tickets_bought_key, to_item, Item,
};
use crate::adapters::dynamo::{
    built, condition_failed, store_error, transact, DynamoLedger, TransactionOutcome,
};
use crate::application::error::{LineupError, PaymentRefused};
use crate::application::ports::ledger::{
    stricter_limit, Confirmation, Order, OrderStatus, PaymentConfirmation, PaymentOutcome,
    TicketLimits,
};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind};
use crate::domain::clock::{rfc3339, unix_millis};
use crate::domain::seat::SeatStatus;

/// Idempotency records and outbox items are kept this long (DynamoDB TTL may delete them after;
/// nothing relies on when). Payment records are kept for ever: a payment id is never reusable.
const RECORD_LIFETIME: Duration = Duration::from_secs(7 * 24 * 60 * 60);

#[derive(serde::Serialize, serde::Deserialize)]
struct IdempotencyItem {
    pk: String,
    order_id: String,
    request_digest: String,
    outcome: PaymentOutcome,
    created_at: u64,
    ttl: u64,
}

/// What a payment did, under its id: the order it was presented for and the answer it got.
#[derive(serde::Serialize, serde::Deserialize)]
struct PaymentItem {
    pk: String,
    payment_id: String,
    order_id: String,
    amount: i64,
    currency: String,
    outcome: PaymentOutcome,
    created_at: u64,
}

#[derive(serde::Serialize)]
struct OutboxItem<'a> {
    #[serde(flatten)]
    event: &'a OutboxEvent,
    ttl: u64,
}

/// The records every confirmation transaction starts with, in this order: a failed condition
/// on one of them says the request (or the payment) was seen before.
const IDEMPOTENCY_ITEM: usize = 0;
const PAYMENT_ITEM: usize = 1;
const ORDER_ITEM: usize = 2;
const TICKETS_BOUGHT_ITEM: usize = 3;

impl DynamoLedger {
    pub(crate) async fn confirm_payment(
        &self,
        payment: &PaymentConfirmation,
        limits: &dyn TicketLimits,
    ) -> Result<Confirmation, LineupError> {
        let mut order = self
            .read_order(&payment.order_id)
            .await?
            .ok_or(LineupError::NotFound("no such order"))?
            .into_order()?;
        // The limit in force now counts too (set or lowered since the hold). If the queue store
        // cannot say, the order's own limit still holds: a payment never waits on Redis.
        match limits.ticket_limit(&order.event_id).await {
            Ok(now) => order.ticket_limit = stricter_limit(order.ticket_limit, now),
            Err(error) => {
                tracing::warn!(order = %order.order_id, error = %error, source = ?std::error::Error::source(&error), "could not read the event's ticket limit; using the order's")
            }
        }
        if order.amount != payment.amount || order.currency != payment.currency {
            return self
                .record_unusable_payment(payment, &order, PaymentOutcome::AmountMismatch)
                .await;
        }

        for outcome in [PaymentOutcome::Paid, PaymentOutcome::RefundRequired] {
            let items = self.settlement_items(payment, &order, outcome)?;
            let reasons = match transact(&self.client, items).await? {
                TransactionOutcome::Done(()) => {
                    tracing::info!(order = %order.order_id, event = %order.event_id, payment = %payment.payment_id, outcome = ?outcome, "payment confirmed");
                    self.after_settlement(&order, outcome).await;
                    return Confirmation::of(order, outcome, true);
                }
                TransactionOutcome::Cancelled(reasons) => reasons,
            };
            if let Some(seen) = self.seen_before(payment, &order, &reasons).await? {
                return seen;
            }
            if reasons.get(ORDER_ITEM).is_some_and(condition_failed) {
                // Settled by another payment: this money cannot buy it.
                return self
                    .record_unusable_payment(payment, &order, PaymentOutcome::OrderNotPayable)
                    .await;
            }
            let too_late = outcome == PaymentOutcome::Paid
                && reasons[TICKETS_BOUGHT_ITEM.min(reasons.len())..]
                    .iter()
                    .any(condition_failed);
            if !too_late {
                return Err(unexpected(&reasons));
            }
            // A seat is someone else's now, or the customer reached the ticket limit with
            // another order meanwhile: go round again with the refund outcome.
            tracing::warn!(order = %order.order_id, "paid after a seat was taken or the ticket limit was reached; refund required");
        }
        Err(LineupError::SeatStoreReply {
            operation: "confirm",
            reply: "refund transaction cancelled on items it does not touch".to_owned(),
        })
    }

    /// When a cancelled transaction's idempotency or payment record already existed: the answer
    /// to give (the first one, or a refusal), `None` when neither was the cause.
    async fn seen_before(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
        reasons: &[CancellationReason],
    ) -> Result<Option<Result<Confirmation, LineupError>>, LineupError> {
        if reasons.get(IDEMPOTENCY_ITEM).is_some_and(condition_failed) {
            let record: IdempotencyItem = self
                .stored(idempotency_key(&payment.idempotency_key))
                .await?;
            if record.request_digest != payment.request_digest {
                return Ok(Some(Err(PaymentRefused::IdempotencyKeyReused.into())));
            }
            return Ok(Some(Confirmation::of(order.clone(), record.outcome, false)));
        }
        if reasons.get(PAYMENT_ITEM).is_some_and(condition_failed) {
            let record: PaymentItem = self.stored(payment_key(&payment.payment_id)).await?;
            let redelivery = record.order_id == order.order_id.as_str()
                && record.amount == payment.amount
                && record.currency == payment.currency;
            if !redelivery {
                tracing::warn!(payment = %payment.payment_id, order = %order.order_id, first_order = %record.order_id, "a payment was presented for a second order");
                return Ok(Some(Err(PaymentRefused::PaymentAlreadyUsed.into())));
            }
            return Ok(Some(Confirmation::of(order.clone(), record.outcome, false)));
        }
        Ok(None)
    }

    /// Records money that cannot buy the order (its payment record and a `refund_required`
    /// outbox event, together) and answers with the refusal.
    async fn record_unusable_payment(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
        outcome: PaymentOutcome,
    ) -> Result<Confirmation, LineupError> {
        let mut items = self.payment_records(payment, order, outcome)?;
        items.push(self.refund_event(payment, order, Vec::new(), payment.amount)?);
        match transact(&self.client, items).await? {
            TransactionOutcome::Done(()) => {
                tracing::warn!(order = %order.order_id, payment = %payment.payment_id, outcome = ?outcome, "payment cannot buy the order; refund recorded");
                Confirmation::of(order.clone(), outcome, true)
            }
            TransactionOutcome::Cancelled(reasons) => self
                .seen_before(payment, order, &reasons)
                .await?
                .unwrap_or_else(|| Err(unexpected(&reasons))),
        }
    }

    /// A record written by an earlier request (its condition failed, so it exists).
    async fn stored<T: for<'de> serde::Deserialize<'de>>(
        &self,
        key: aws_sdk_dynamodb::types::AttributeValue,
    ) -> Result<T, LineupError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.orders)
            .key("pk", key)
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?;
        let item: Item = output.item.ok_or(LineupError::SeatStoreReply {
            operation: "confirm",
            reply: "a record whose condition failed is not there".to_owned(),
        })?;
        from_item(item)
    }

    /// The idempotency record and the payment record, each written only if new.
    fn payment_records(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
        outcome: PaymentOutcome,
    ) -> Result<Vec<TransactWriteItem>, LineupError> {
        let now = unix_millis(payment.now);
        let ttl = unix_millis(payment.now + RECORD_LIFETIME) / 1000;
        let record = IdempotencyItem {
            pk: idempotency_pk(&payment.idempotency_key),
            order_id: order.order_id.as_str().to_owned(),
            request_digest: payment.request_digest.clone(),
            outcome,
            created_at: now,
            ttl,
        };
        let used = PaymentItem {
            pk: payment_pk(&payment.payment_id),
            payment_id: payment.payment_id.as_str().to_owned(),
            order_id: order.order_id.as_str().to_owned(),
            amount: payment.amount,
            currency: payment.currency.clone(),
            outcome,
            created_at: now,
        };
        Ok(vec![
            self.put_new(&self.tables.orders, to_item(&record)?, "pk"),
            self.put_new(&self.tables.orders, to_item(&used)?, "pk"),
        ])
    }

    fn put_new(&self, table: &str, item: Item, key: &str) -> TransactWriteItem {
        let put = Put::builder()
            .table_name(table)
            .set_item(Some(item))
            .condition_expression(format!("attribute_not_exists({key})"));
        TransactWriteItem::builder().put(built(put.build())).build()
    }

    /// Items: [idempotency, payment, order, (Paid: seats bought, seats...), outbox].
    fn settlement_items(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
        outcome: PaymentOutcome,
    ) -> Result<Vec<TransactWriteItem>, LineupError> {
        let now = unix_millis(payment.now);
        let mut items = self.payment_records(payment, order, outcome)?;
        let status = match outcome {
            PaymentOutcome::Paid => OrderStatus::Paid,
            _ => OrderStatus::RefundRequired,
        };

        // The order: payable while PENDING, or lapsed/released (a late payment still counts).
        let settle = Update::builder()
            .table_name(&self.tables.orders)
            .key("pk", order_key(&order.order_id))
            .update_expression("SET #status = :new, payment_id = :payment, settled_at = :now REMOVE pending_shard")
            .condition_expression(
                "#status IN (:pending, :expired, :released) AND amount = :amount AND currency = :currency",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":new", s(status.as_str()))
            .expression_attribute_values(":payment", s(payment.payment_id.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
            .expression_attribute_values(":expired", s(OrderStatus::Expired.as_str()))
            .expression_attribute_values(":released", s(OrderStatus::Released.as_str()))
            .expression_attribute_values(":amount", n(payment.amount))
            .expression_attribute_values(":currency", s(&payment.currency));
        items.push(
            TransactWriteItem::builder()
                .update(built(settle.build()))
                .build(),
        );

        if outcome == PaymentOutcome::Paid {
            items.push(self.count_seats_bought(order));
            for seat in &order.seat_ids {
                let sell = Update::builder()
                    .table_name(&self.tables.seats)
                    .key("pk", seat_key(&order.event_id, seat))
                    .update_expression(
                        "SET #status = :sold, held_by = :order REMOVE hold_expires_at",
                    )
                    .condition_expression(
                        "(#status = :held AND held_by = :order) OR #status = :available",
                    )
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":sold", s(SeatStatus::Sold.as_str()))
                    .expression_attribute_values(":held", s(SeatStatus::Held.as_str()))
                    .expression_attribute_values(":available", s(SeatStatus::Available.as_str()))
                    .expression_attribute_values(":order", s(order.order_id.as_str()));
                items.push(
                    TransactWriteItem::builder()
                        .update(built(sell.build()))
                        .build(),
                );
            }
            items.push(self.ticket_event(payment, order)?);
        } else {
            items.push(self.refund_event(payment, order, order.seat_id_strings(), order.amount)?);
        }
        Ok(items)
    }

    /// Adds the order's seats to the customer's count of seats bought for the event, within
    /// the ticket limit the order was held under (so a late payment cannot pass it either).
    fn count_seats_bought(&self, order: &Order) -> TransactWriteItem {
        let seats = order.seat_ids.len() as u32;
        let mut add = Update::builder()
            .table_name(&self.tables.orders)
            .key(
                "pk",
                tickets_bought_key(&order.event_id, &order.customer_id),
            )
            .update_expression("ADD paid_seats :seats")
            .expression_attribute_values(":seats", n(seats));
        if let Some(limit) = order.ticket_limit {
            let room = i64::from(limit) - i64::from(seats);
            // A negative room (the order alone passes the limit) fails on any count, even none.
            let condition = if room < 0 {
                "paid_seats <= :room"
            } else {
                "attribute_not_exists(paid_seats) OR paid_seats <= :room"
            };
            add = add
                .condition_expression(condition)
                .expression_attribute_values(":room", n(room));
        }
        TransactWriteItem::builder()
            .update(built(add.build()))
            .build()
    }

    fn ticket_event(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
    ) -> Result<TransactWriteItem, LineupError> {
        let event = OutboxEvent {
            // One ticket event per order, by construction.
            outbox_id: format!("ticket-{}", order.order_id),
            kind: OutboxEventKind::TicketIssued,
            event_id: order.event_id.as_str().to_owned(),
            order_id: order.order_id.as_str().to_owned(),
            customer_id: order.customer_id.as_str().to_owned(),
            seat_ids: order.seat_id_strings(),
            amount: order.amount,
            currency: order.currency.clone(),
            payment_id: Some(payment.payment_id.as_str().to_owned()),
            occurred_at: rfc3339(payment.now),
        };
        self.outbox_put(&event, payment)
    }

    /// The `refund_required` event of a payment: keyed by the payment id, so there is one per
    /// payment whatever happens.
    fn refund_event(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
        seat_ids: Vec<String>,
        amount: i64,
    ) -> Result<TransactWriteItem, LineupError> {
        let event = OutboxEvent {
            outbox_id: refund_outbox_id(payment),
            kind: OutboxEventKind::RefundRequired,
            event_id: order.event_id.as_str().to_owned(),
            order_id: order.order_id.as_str().to_owned(),
            customer_id: order.customer_id.as_str().to_owned(),
            seat_ids,
            amount,
            currency: payment.currency.clone(),
            payment_id: Some(payment.payment_id.as_str().to_owned()),
            occurred_at: rfc3339(payment.now),
        };
        self.outbox_put(&event, payment)
    }

    fn outbox_put(
        &self,
        event: &OutboxEvent,
        payment: &PaymentConfirmation,
    ) -> Result<TransactWriteItem, LineupError> {
        let ttl = unix_millis(payment.now + RECORD_LIFETIME) / 1000;
        Ok(self.put_new(
            &self.tables.outbox,
            to_item(&OutboxItem { event, ttl })?,
            "outboxId",
        ))
    }

    /// Tidying after a settlement, best effort (each step is conditioned on still being this
    /// order's, and what is left behind lapses on its own): the customer's hold lock goes, so
    /// they may hold again at once; a refunded order's seats go back on sale now rather than at
    /// the hold's lapse.
    async fn after_settlement(&self, order: &Order, outcome: PaymentOutcome) {
        let seats = async {
            if outcome == PaymentOutcome::RefundRequired {
                let frees = order
                    .seat_ids
                    .iter()
                    .map(|seat| self.free_seat(&order.event_id, seat, &order.order_id, None));
                futures::future::try_join_all(frees).await?;
            }
            Ok(())
        };
        if let Err(error) = futures::try_join!(seats, self.free_hold_lock(order)) {
            let error: LineupError = error;
            tracing::warn!(order = %order.order_id, error = %error, source = ?std::error::Error::source(&error), "could not tidy up after a settlement; the hold lapses on its own");
        }
    }
}

/// The outbox id of a payment's refund event: derived from the payment id (hashed: payment ids
/// may be longer than an SQS deduplication id allows).
fn refund_outbox_id(payment: &PaymentConfirmation) -> String {
    let digest = Sha256::digest(payment.payment_id.as_str().as_bytes());
    format!("refund-{}", hex::encode(&digest[..20]))
}

fn unexpected(reasons: &[CancellationReason]) -> LineupError {
    let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
    LineupError::SeatStoreReply {
        operation: "confirm",
        reply: codes.join(","),
    }
}
