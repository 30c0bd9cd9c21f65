//! Confirming a payment, exactly once, and each payment for one order only.
//!
//! One transaction writes the idempotency record, the payment record (`PAYMENT#<paymentId>`, so a
//! payment settles at most one order, ever), the order PAID, the customer's count of seats bought
//! (checked against the event's ticket limit), every seat SOLD (only while still this order's, or
//! free again), and the `ticket_issued` outbox event. If a seat now belongs to someone else, or
//! the ticket limit was reached meanwhile, or the event was cancelled while the order was open
//! (the order carries `cancelled_at`), a second transaction records REFUND_REQUIRED instead.
//!
//! Money that cannot buy the order (the order was settled by another payment, or the amount is
//! wrong) is never dropped: its payment record and a `refund_required` outbox event keyed by the
//! payment id are written together, and the provider gets a 4xx. A repetition finds the
//! idempotency or payment record and gets the first answer back; the same payment presented for
//! another order is refused and records nothing.

use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason, Put, TransactWriteItem, Update};
use sha2::{Digest, Sha256};

use crate::adapters::dynamo::items::{
    from_item, idempotency_key, idempotency_pk, n, order_key, payment_key, payment_pk, s, seat_key,
    tickets_bought_key, to_item, Item,
};
use crate::adapters::dynamo::{
    built, condition_failed, store_error, transact, DynamoLedger, TransactionOutcome,
};
use crate::application::error::{LineupError, PaymentRefused};
use crate::application::ports::ledger::OrderTerms;
use crate::application::ports::ledger::{
    stricter_limit, Confirmation, OrderStatus, PaymentConfirmation, PaymentFor, PaymentOutcome,
    TicketLimits,
};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind};
use crate::domain::clock::{rfc3339, unix_millis};
use crate::domain::ids::{CustomerId, EventId, OrderId};
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
    /// The order's event and customer (`unknown` for an order that does not exist).
    #[serde(default)]
    event_id: String,
    #[serde(default)]
    customer_id: String,
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

/// Why an order refused a payment.
enum Unpayable {
    /// Open, with the payment's terms, but its event was cancelled: the payment is refunded
    /// through the order (REFUND_REQUIRED), not recorded as unusable.
    EventCancelled,
    /// The payment cannot buy the order: recorded with this outcome, and refunded.
    Because(PaymentOutcome),
}

impl DynamoLedger {
    pub(crate) async fn confirm_payment(
        &self,
        payment: &PaymentConfirmation,
        limits: &dyn TicketLimits,
    ) -> Result<Confirmation, LineupError> {
        let terms = match &payment.order {
            // The generic webhook names only the order: read it (the second request).
            PaymentFor::Order(order_id) => match self.read_order(order_id).await? {
                Some(item) => OrderTerms::of(&item.into_order()?),
                None => return self.record_unknown_order(payment, order_id).await,
            },
            PaymentFor::Terms(terms) => terms.clone(),
        };
        // The limit in force now counts too (set or lowered since the hold). If the queue store
        // cannot say, the order's own limit still holds: a payment never waits on Redis.
        let limit_now = match limits.ticket_limit(&terms.event_id).await {
            Ok(now) => stricter_limit(terms.ticket_limit, now),
            Err(error) => {
                tracing::warn!(order = %terms.order_id, error = %error, source = ?std::error::Error::source(&error), "could not read the event's ticket limit; using the order's");
                terms.ticket_limit
            }
        };
        if terms.amount != payment.amount || terms.currency != payment.currency {
            return self
                .record_unusable_payment(payment, &terms, PaymentOutcome::AmountMismatch)
                .await;
        }

        for outcome in [PaymentOutcome::Paid, PaymentOutcome::RefundRequired] {
            let items = self.settlement_items(payment, &terms, limit_now, outcome)?;
            let reasons = match transact(&self.client, items).await? {
                TransactionOutcome::Done(()) => {
                    tracing::info!(order = %terms.order_id, event = %terms.event_id, payment = %payment.payment_id, outcome = ?outcome, "payment confirmed");
                    self.after_settlement(&terms, outcome).await;
                    return Confirmation::of(terms, outcome, true);
                }
                TransactionOutcome::Cancelled(reasons) => reasons,
            };
            if let Some(seen) = self.seen_before(payment, &terms, &reasons).await? {
                return seen;
            }
            if reasons.get(ORDER_ITEM).is_some_and(condition_failed) {
                // Why the order refused: only now is it read (never on the way to a sale).
                match self.why_unpayable(&terms).await? {
                    Unpayable::EventCancelled if outcome == PaymentOutcome::Paid => {
                        tracing::warn!(order = %terms.order_id, event = %terms.event_id, "paid after the event was cancelled; refund required");
                        continue;
                    }
                    Unpayable::EventCancelled => {
                        return Err(unexpected(&reasons));
                    }
                    Unpayable::Because(outcome) => {
                        return self.record_unusable_payment(payment, &terms, outcome).await;
                    }
                }
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
            tracing::warn!(order = %terms.order_id, "paid after a seat was taken or the ticket limit was reached; refund required");
        }
        Err(LineupError::SeatStoreReply {
            operation: "confirm",
            reply: "refund transaction cancelled on items it does not touch".to_owned(),
        })
    }

    /// Why the order item's condition failed: no such order, terms that differ from the
    /// payment's, already settled, or open when its event was cancelled.
    async fn why_unpayable(&self, terms: &OrderTerms) -> Result<Unpayable, LineupError> {
        let Some(item) = self.read_order(&terms.order_id).await? else {
            return Ok(Unpayable::Because(PaymentOutcome::UnknownOrder));
        };
        let order = item.into_order()?;
        let open = matches!(
            order.status,
            OrderStatus::Pending | OrderStatus::Expired | OrderStatus::Released
        );
        let cancelled = open && order.event_cancelled_at.is_some();
        let stored = OrderTerms::of(&order);
        // The admission is not a condition of the transaction: compare the rest.
        let same = OrderTerms {
            admission_expires_at: terms.admission_expires_at,
            ..stored
        } == *terms;
        Ok(if same && cancelled {
            Unpayable::EventCancelled
        } else if same {
            Unpayable::Because(PaymentOutcome::OrderNotPayable)
        } else {
            tracing::warn!(order = %terms.order_id, "a signed payment's terms differ from the order's");
            Unpayable::Because(PaymentOutcome::AmountMismatch)
        })
    }

    /// A signed payment for an order that does not exist: recorded under the order id it named
    /// (event and customer unknown), and refunded.
    async fn record_unknown_order(
        &self,
        payment: &PaymentConfirmation,
        order_id: &OrderId,
    ) -> Result<Confirmation, LineupError> {
        let terms = OrderTerms {
            order_id: order_id.clone(),
            event_id: EventId::parse(UNKNOWN).map_err(|_| unknown_id())?,
            customer_id: CustomerId::parse(UNKNOWN).map_err(|_| unknown_id())?,
            seat_ids: Vec::new(),
            amount: payment.amount,
            currency: payment.currency.clone(),
            ticket_limit: None,
            admission_expires_at: None,
        };
        self.record_unusable_payment(payment, &terms, PaymentOutcome::UnknownOrder)
            .await
    }

    /// When a cancelled transaction's idempotency or payment record already existed: the answer
    /// to give (the first one, or a refusal), `None` when neither was the cause.
    async fn seen_before(
        &self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        reasons: &[CancellationReason],
    ) -> Result<Option<Result<Confirmation, LineupError>>, LineupError> {
        if reasons.get(IDEMPOTENCY_ITEM).is_some_and(condition_failed) {
            let record: IdempotencyItem = self
                .stored(idempotency_key(&payment.idempotency_key))
                .await?;
            if record.request_digest != payment.request_digest {
                self.record_key_reused(payment, terms).await?;
                return Ok(Some(Err(PaymentRefused::IdempotencyKeyReused.into())));
            }
            return Ok(Some(Confirmation::of(terms.clone(), record.outcome, false)));
        }
        if reasons.get(PAYMENT_ITEM).is_some_and(condition_failed) {
            let record: PaymentItem = self.stored(payment_key(&payment.payment_id)).await?;
            let redelivery = record.order_id == terms.order_id.as_str()
                && record.amount == payment.amount
                && record.currency == payment.currency;
            if !redelivery {
                tracing::warn!(payment = %payment.payment_id, order = %terms.order_id, first_order = %record.order_id, "a payment was presented for a second order");
                return Ok(Some(Err(PaymentRefused::PaymentAlreadyUsed.into())));
            }
            return Ok(Some(Confirmation::of(terms.clone(), record.outcome, false)));
        }
        Ok(None)
    }

    /// Records money that cannot buy the order (its payment record and a `refund_required`
    /// outbox event, together) and answers with the refusal.
    async fn record_unusable_payment(
        &self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        outcome: PaymentOutcome,
    ) -> Result<Confirmation, LineupError> {
        let mut items = self.payment_records(payment, terms, outcome)?;
        items.push(self.refund_event(payment, terms, Vec::new(), payment.amount)?);
        match transact(&self.client, items).await? {
            TransactionOutcome::Done(()) => {
                tracing::warn!(order = %terms.order_id, payment = %payment.payment_id, outcome = ?outcome, "payment cannot buy the order; refund recorded");
                Confirmation::of(terms.clone(), outcome, true)
            }
            TransactionOutcome::Cancelled(reasons) => self
                .seen_before(payment, terms, &reasons)
                .await?
                .unwrap_or_else(|| Err(unexpected(&reasons))),
        }
    }

    /// A payment presented under an idempotency key another request used: it applies to
    /// nothing, but it is money, so its payment record and refund event are written (unless the
    /// payment was recorded before, under its first key).
    async fn record_key_reused(
        &self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
    ) -> Result<(), LineupError> {
        let mut items = self.payment_records(payment, terms, PaymentOutcome::KeyReused)?;
        items.remove(IDEMPOTENCY_ITEM);
        items.push(self.refund_event(payment, terms, Vec::new(), payment.amount)?);
        match transact(&self.client, items).await? {
            TransactionOutcome::Done(()) => {
                tracing::warn!(order = %terms.order_id, payment = %payment.payment_id, "a payment under a reused idempotency key; refund recorded");
                Ok(())
            }
            // Its payment record exists: it was recorded (and answered) under its first key.
            TransactionOutcome::Cancelled(reasons)
                if reasons.first().is_some_and(condition_failed) =>
            {
                Ok(())
            }
            TransactionOutcome::Cancelled(reasons) => Err(unexpected(&reasons)),
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
        terms: &OrderTerms,
        outcome: PaymentOutcome,
    ) -> Result<Vec<TransactWriteItem>, LineupError> {
        let now = unix_millis(payment.now);
        let ttl = unix_millis(payment.now + RECORD_LIFETIME) / 1000;
        let record = IdempotencyItem {
            pk: idempotency_pk(&payment.idempotency_key),
            order_id: terms.order_id.as_str().to_owned(),
            request_digest: payment.request_digest.clone(),
            outcome,
            created_at: now,
            ttl,
        };
        let used = PaymentItem {
            pk: payment_pk(&payment.payment_id),
            payment_id: payment.payment_id.as_str().to_owned(),
            order_id: terms.order_id.as_str().to_owned(),
            event_id: terms.event_id.as_str().to_owned(),
            customer_id: terms.customer_id.as_str().to_owned(),
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

    /// Items: [idempotency, payment, order, (Paid: seats bought, seats...), outbox]. The order's
    /// condition checks every term the payment carries against the stored order, so terms from
    /// a payment's metadata are never trusted alone.
    fn settlement_items(
        &self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        limit_now: Option<u32>,
        outcome: PaymentOutcome,
    ) -> Result<Vec<TransactWriteItem>, LineupError> {
        let now = unix_millis(payment.now);
        let mut items = self.payment_records(payment, terms, outcome)?;
        let status = match outcome {
            PaymentOutcome::Paid => OrderStatus::Paid,
            _ => OrderStatus::RefundRequired,
        };

        // The order: payable while PENDING, or lapsed/released (a late payment still counts);
        // sold only if its event was not cancelled meanwhile (the refund takes it then).
        let not_cancelled = if outcome == PaymentOutcome::Paid {
            " AND attribute_not_exists(cancelled_at)"
        } else {
            ""
        };
        let mut settle = Update::builder()
            .table_name(&self.tables.orders)
            .key("pk", order_key(&terms.order_id))
            .update_expression(
                "SET #status = :new, payment_id = :payment, settled_at = :now REMOVE pending_shard",
            )
            .condition_expression(format!(
                "#status IN (:pending, :expired, :released) AND amount = :amount \
                 AND currency = :currency AND event_id = :event AND customer_id = :customer \
                 AND seat_ids = :seats AND {}{not_cancelled}",
                if terms.ticket_limit.is_some() {
                    "ticket_limit = :limit"
                } else {
                    "attribute_not_exists(ticket_limit)"
                }
            ))
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":event", s(terms.event_id.as_str()))
            .expression_attribute_values(":customer", s(terms.customer_id.as_str()))
            .expression_attribute_values(
                ":seats",
                AttributeValue::L(terms.seat_ids.iter().map(|seat| s(seat.as_str())).collect()),
            )
            .expression_attribute_values(":new", s(status.as_str()))
            .expression_attribute_values(":payment", s(payment.payment_id.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
            .expression_attribute_values(":expired", s(OrderStatus::Expired.as_str()))
            .expression_attribute_values(":released", s(OrderStatus::Released.as_str()))
            .expression_attribute_values(":amount", n(payment.amount))
            .expression_attribute_values(":currency", s(&payment.currency));
        if let Some(limit) = terms.ticket_limit {
            settle = settle.expression_attribute_values(":limit", n(limit));
        }
        items.push(
            TransactWriteItem::builder()
                .update(built(settle.build()))
                .build(),
        );

        if outcome == PaymentOutcome::Paid {
            items.push(self.count_seats_bought(terms, limit_now));
            for seat in &terms.seat_ids {
                let sell = Update::builder()
                    .table_name(&self.tables.seats)
                    .key("pk", seat_key(&terms.event_id, seat))
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
                    .expression_attribute_values(":order", s(terms.order_id.as_str()));
                items.push(
                    TransactWriteItem::builder()
                        .update(built(sell.build()))
                        .build(),
                );
            }
            items.push(self.ticket_event(payment, terms)?);
        } else {
            let seats = terms
                .seat_ids
                .iter()
                .map(|seat| seat.as_str().to_owned())
                .collect();
            items.push(self.refund_event(payment, terms, seats, terms.amount)?);
        }
        Ok(items)
    }

    /// Adds the order's seats to the customer's count of seats bought for the event, within
    /// `limit` (the stricter of the order's and the event's now, so a late payment cannot pass
    /// either).
    fn count_seats_bought(&self, terms: &OrderTerms, limit: Option<u32>) -> TransactWriteItem {
        let seats = terms.seat_ids.len() as u32;
        let mut add = Update::builder()
            .table_name(&self.tables.orders)
            .key(
                "pk",
                tickets_bought_key(&terms.event_id, &terms.customer_id),
            )
            .update_expression("ADD paid_seats :seats")
            .expression_attribute_values(":seats", n(seats));
        if let Some(limit) = limit {
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
        terms: &OrderTerms,
    ) -> Result<TransactWriteItem, LineupError> {
        let event = OutboxEvent {
            // One ticket event per order, by construction.
            outbox_id: format!("ticket-{}", terms.order_id),
            kind: OutboxEventKind::TicketIssued,
            event_id: terms.event_id.as_str().to_owned(),
            order_id: terms.order_id.as_str().to_owned(),
            customer_id: terms.customer_id.as_str().to_owned(),
            seat_ids: terms.seat_id_strings(),
            amount: terms.amount,
            currency: terms.currency.clone(),
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
        terms: &OrderTerms,
        seat_ids: Vec<String>,
        amount: i64,
    ) -> Result<TransactWriteItem, LineupError> {
        let event = OutboxEvent {
            outbox_id: refund_outbox_id(payment),
            kind: OutboxEventKind::RefundRequired,
            event_id: terms.event_id.as_str().to_owned(),
            order_id: terms.order_id.as_str().to_owned(),
            customer_id: terms.customer_id.as_str().to_owned(),
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

    /// Tidying after a refund-required settlement, best effort (each step is conditioned on
    /// still being this order's, and what is left behind lapses on its own): the order's seats
    /// go back on sale now rather than at the hold's lapse, and the customer's hold lock goes.
    /// A sale does none of this: its one transaction is the whole request, and the lock it
    /// leaves behind is freed by the customer's next hold (`hold_seats`).
    async fn after_settlement(&self, terms: &OrderTerms, outcome: PaymentOutcome) {
        if outcome != PaymentOutcome::RefundRequired {
            return;
        }
        let frees = terms
            .seat_ids
            .iter()
            .map(|seat| self.free_seat(&terms.event_id, seat, &terms.order_id, None));
        let lock = self.free_hold_lock_of(&terms.event_id, &terms.customer_id, &terms.order_id);
        if let Err(error) = futures::try_join!(futures::future::try_join_all(frees), lock) {
            let error: LineupError = error;
            tracing::warn!(order = %terms.order_id, error = %error, source = ?std::error::Error::source(&error), "could not tidy up after a settlement; the hold lapses on its own");
        }
    }
}

/// The outbox id of a payment's refund event: derived from the payment id (hashed: payment ids
/// may be longer than an SQS deduplication id allows).
pub(crate) fn refund_outbox_id(payment: &PaymentConfirmation) -> String {
    let digest = Sha256::digest(payment.payment_id.as_str().as_bytes());
    format!("refund-{}", hex::encode(&digest[..20]))
}

/// The event and customer recorded for a payment whose order does not exist.
const UNKNOWN: &str = "unknown";

fn unknown_id() -> LineupError {
    LineupError::SeatStoreReply {
        operation: "confirm",
        reply: "the placeholder id is not a valid id".to_owned(),
    }
}

fn unexpected(reasons: &[CancellationReason]) -> LineupError {
    let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
    LineupError::SeatStoreReply {
        operation: "confirm",
        reply: codes.join(","),
    }
}
