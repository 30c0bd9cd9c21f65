//! Confirming a payment, exactly once: one transaction writes the idempotency record, the order
//! PAID, every seat SOLD (only while still this order's, or free again), and the outbox event.
//! If a seat now belongs to someone else, a second transaction records REFUND_REQUIRED instead.
//! A repeated request finds its idempotency record and gets the first answer back.

use std::time::Duration;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use super::hold::status_name;
use super::items::{from_item, idempotency_key, n, order_key, s, seat_key, to_item};
use super::{built, condition_failed, store_error, transact, DynamoLedger, TransactionOutcome};
use crate::clock::{rfc3339, unix_millis};
use crate::ledger::{ConfirmAnswer, Order, OrderStatus, PaymentConfirmation};
use crate::outbox::{OutboxEvent, OutboxEventKind};
use crate::LineupError;

/// Idempotency records and outbox items are kept this long (DynamoDB TTL may delete them after;
/// nothing relies on when).
const RECORD_LIFETIME: Duration = Duration::from_secs(7 * 24 * 60 * 60);

#[derive(serde::Serialize, serde::Deserialize)]
struct IdempotencyItem {
    pk: String,
    order_id: String,
    request_digest: String,
    answer_status: OrderStatus,
    created_at: u64,
    ttl: u64,
}

#[derive(serde::Serialize)]
struct OutboxItem<'a> {
    #[serde(flatten)]
    event: &'a OutboxEvent,
    ttl: u64,
}

impl DynamoLedger {
    pub(crate) async fn confirm_payment(
        &self,
        payment: &PaymentConfirmation,
    ) -> Result<(Order, ConfirmAnswer), LineupError> {
        let order = self
            .read_order(&payment.order_id)
            .await?
            .ok_or(LineupError::NotFound("no such order"))?
            .into_order()?;
        if order.amount != payment.amount || order.currency != payment.currency {
            // A replay of an earlier request still gets its first answer (or 409 if it differs).
            if let Some(answer) = self.stored_answer(payment).await? {
                return Ok((order, answer));
            }
            return Err(LineupError::PaymentMismatch(format!(
                "the order is {} {}, the payment {} {}",
                order.amount, order.currency, payment.amount, payment.currency
            )));
        }

        for outcome in [OrderStatus::Paid, OrderStatus::RefundRequired] {
            let items = self.confirmation_items(payment, &order, outcome)?;
            match transact(&self.client, items).await? {
                TransactionOutcome::Done(()) => {
                    tracing::info!(order = %order.order_id, event = %order.event_id, status = status_name(outcome), "payment confirmed");
                    let answer = ConfirmAnswer {
                        order_id: order.order_id.as_str().to_owned(),
                        status: outcome,
                    };
                    return Ok((order, answer));
                }
                TransactionOutcome::Cancelled(reasons) => {
                    // Items: [idempotency, order, seats..., outbox].
                    if reasons.first().is_some_and(condition_failed) {
                        let answer = self.stored_answer(payment).await?.ok_or(
                            LineupError::UnexpectedReply {
                                operation: "confirm",
                                reply: "idempotency record vanished".to_owned(),
                            },
                        )?;
                        return Ok((order, answer));
                    }
                    if reasons.get(1).is_some_and(condition_failed) {
                        return Err(LineupError::Conflict {
                            code: "order_not_payable",
                            message: "this order was already settled by another payment".to_owned(),
                            seat_ids: Vec::new(),
                        });
                    }
                    let seats = 2..2 + order.seat_ids.len();
                    let seat_taken = outcome == OrderStatus::Paid
                        && reasons
                            .get(seats)
                            .is_some_and(|seats| seats.iter().any(condition_failed));
                    if !seat_taken {
                        let codes: Vec<&str> =
                            reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
                        return Err(LineupError::UnexpectedReply {
                            operation: "confirm",
                            reply: codes.join(","),
                        });
                    }
                    // A seat is someone else's now: go round again with the refund outcome.
                    tracing::warn!(order = %order.order_id, "a seat was taken after the hold lapsed; refund required");
                }
            }
        }
        Err(LineupError::UnexpectedReply {
            operation: "confirm",
            reply: "refund transaction cancelled on seats it does not touch".to_owned(),
        })
    }

    /// The first answer stored under this idempotency key; 409 if the key came with another request.
    async fn stored_answer(
        &self,
        payment: &PaymentConfirmation,
    ) -> Result<Option<ConfirmAnswer>, LineupError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.orders)
            .key("pk", idempotency_key(&payment.idempotency_key))
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        let record: IdempotencyItem = from_item(item)?;
        if record.request_digest != payment.request_digest {
            return Err(LineupError::Conflict {
                code: "idempotency_key_reused",
                message: "this Idempotency-Key was already used with another request".to_owned(),
                seat_ids: Vec::new(),
            });
        }
        Ok(Some(ConfirmAnswer {
            order_id: record.order_id,
            status: record.answer_status,
        }))
    }

    fn confirmation_items(
        &self,
        payment: &PaymentConfirmation,
        order: &Order,
        outcome: OrderStatus,
    ) -> Result<Vec<TransactWriteItem>, LineupError> {
        let now = unix_millis(payment.now);
        let ttl = unix_millis(payment.now + RECORD_LIFETIME) / 1000;
        let mut items = Vec::new();

        let record = IdempotencyItem {
            pk: format!("IDEMPOTENCY#{}", payment.idempotency_key),
            order_id: order.order_id.as_str().to_owned(),
            request_digest: payment.request_digest.clone(),
            answer_status: outcome,
            created_at: now,
            ttl,
        };
        let put_record = Put::builder()
            .table_name(&self.tables.orders)
            .set_item(Some(to_item(&record)?))
            .condition_expression("attribute_not_exists(pk)");
        items.push(
            TransactWriteItem::builder()
                .put(built(put_record.build()))
                .build(),
        );

        // The order: payable while PENDING, or lapsed/released (a late payment still counts).
        let settle = Update::builder()
            .table_name(&self.tables.orders)
            .key("pk", order_key(&order.order_id))
            .update_expression("SET #status = :new, payment_id = :payment, settled_at = :now REMOVE pending_shard")
            .condition_expression(
                "#status IN (:pending, :expired, :released) AND amount = :amount AND currency = :currency",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":new", s(status_name(outcome)))
            .expression_attribute_values(":payment", s(&payment.payment_id))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":pending", s("PENDING"))
            .expression_attribute_values(":expired", s("EXPIRED"))
            .expression_attribute_values(":released", s("RELEASED"))
            .expression_attribute_values(":amount", n(payment.amount))
            .expression_attribute_values(":currency", s(&payment.currency));
        items.push(
            TransactWriteItem::builder()
                .update(built(settle.build()))
                .build(),
        );

        if outcome == OrderStatus::Paid {
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
                    .expression_attribute_values(":sold", s("SOLD"))
                    .expression_attribute_values(":held", s("HELD"))
                    .expression_attribute_values(":available", s("AVAILABLE"))
                    .expression_attribute_values(":order", s(order.order_id.as_str()));
                items.push(
                    TransactWriteItem::builder()
                        .update(built(sell.build()))
                        .build(),
                );
            }
        }

        let event = OutboxEvent {
            outbox_id: uuid::Uuid::new_v4().to_string(),
            kind: match outcome {
                OrderStatus::Paid => OutboxEventKind::TicketIssued,
                _ => OutboxEventKind::RefundRequired,
            },
            event_id: order.event_id.as_str().to_owned(),
            order_id: order.order_id.as_str().to_owned(),
            customer_id: order.customer_id.as_str().to_owned(),
            seat_ids: order.seat_id_strings(),
            amount: order.amount,
            currency: order.currency.clone(),
            occurred_at: rfc3339(payment.now),
        };
        let put_outbox = Put::builder()
            .table_name(&self.tables.outbox)
            .set_item(Some(to_item(&OutboxItem { event: &event, ttl })?))
            .condition_expression("attribute_not_exists(outboxId)");
        items.push(
            TransactWriteItem::builder()
                .put(built(put_outbox.build()))
                .build(),
        );
        Ok(items)
    }
}
