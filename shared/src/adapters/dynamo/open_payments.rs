//! Orders whose payment is open (checkout tied one; the order is still pending), for
//! reconciliation and the Stripe webhook's non-settling events: listing them (the pending index,
//! filtered), keeping a hold while its payment is in progress, and ending one whose payment was
//! cancelled.

use std::time::SystemTime;

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use crate::adapters::dynamo::items::{
    from_item, hold_lock_key, n, order_key, pending_shard_key, s, seat_key, OrderItem,
    PENDING_INDEX, PENDING_SHARDS,
};
use crate::adapters::dynamo::{
    built, condition_failed, store_error, transact, DynamoLedger, TransactionOutcome,
};
use crate::application::error::LineupError;
use crate::application::ports::ledger::{OpenPayments, Order, OrderStatus};
use crate::domain::clock::unix_millis;
use crate::domain::ids::{EventId, OrderId, PaymentId};
use crate::domain::seat::SeatStatus;

#[async_trait::async_trait]
impl OpenPayments for DynamoLedger {
    async fn open_payments(&self, event: Option<&EventId>) -> Result<Vec<Order>, LineupError> {
        let mut open = Vec::new();
        for shard in 0..PENDING_SHARDS {
            let mut query = self
                .client
                .query()
                .table_name(&self.tables.orders)
                .index_name(PENDING_INDEX)
                .key_condition_expression("pending_shard = :shard")
                .expression_attribute_values(":shard", s(pending_shard_key(shard)));
            query = match event {
                Some(event) => query
                    .filter_expression(
                        "attribute_exists(checkout_payment_id) AND event_id = :event",
                    )
                    .expression_attribute_values(":event", s(event.as_str())),
                None => query.filter_expression("attribute_exists(checkout_payment_id)"),
            };
            let items: Vec<_> = query.into_paginator().items().send().collect().await;
            for item in items {
                let order: OrderItem = from_item(item.map_err(store_error)?)?;
                open.push(order.into_order()?);
            }
        }
        Ok(open)
    }

    async fn order(&self, order: &OrderId) -> Result<Option<Order>, LineupError> {
        self.read_order(order)
            .await?
            .map(|item| item.into_order())
            .transpose()
    }

    async fn extend_hold(
        &self,
        order: &Order,
        payment: &PaymentId,
        until: SystemTime,
    ) -> Result<bool, LineupError> {
        let until = n(unix_millis(until));
        let mut items = vec![update(
            Update::builder()
                .table_name(&self.tables.orders)
                .key("pk", order_key(&order.order_id))
                .update_expression("SET expires_at = :until")
                .condition_expression(
                    "#status = :pending AND checkout_payment_id = :payment AND expires_at < :until",
                )
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
                .expression_attribute_values(":payment", s(payment.as_str()))
                .expression_attribute_values(":until", until.clone()),
        )];
        for seat in &order.seat_ids {
            items.push(update(
                Update::builder()
                    .table_name(&self.tables.seats)
                    .key("pk", seat_key(&order.event_id, seat))
                    .update_expression("SET hold_expires_at = :until")
                    .condition_expression("#status = :held AND held_by = :order")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":held", s(SeatStatus::Held.as_str()))
                    .expression_attribute_values(":order", s(order.order_id.as_str()))
                    .expression_attribute_values(":until", until.clone()),
            ));
        }
        items.push(update(
            Update::builder()
                .table_name(&self.tables.orders)
                .key("pk", hold_lock_key(&order.event_id, &order.customer_id))
                .update_expression("SET expires_at = :until")
                .condition_expression("order_id = :order")
                .expression_attribute_values(":order", s(order.order_id.as_str()))
                .expression_attribute_values(":until", until),
        ));
        match transact(&self.client, items).await? {
            TransactionOutcome::Done(()) => Ok(true),
            // Settled, released, extended already, or a seat went to someone else.
            TransactionOutcome::Cancelled(reasons) if reasons.iter().any(condition_failed) => {
                Ok(false)
            }
            TransactionOutcome::Cancelled(reasons) => {
                let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
                Err(LineupError::SeatStoreReply {
                    operation: "extend hold",
                    reply: codes.join(","),
                })
            }
        }
    }

    async fn end_unpaid(
        &self,
        order: &Order,
        payment: &PaymentId,
        status: OrderStatus,
    ) -> Result<bool, LineupError> {
        // The order first, conditioned on its payment: a payment that settled it meanwhile wins.
        let ended = self
            .client
            .update_item()
            .table_name(&self.tables.orders)
            .key("pk", order_key(&order.order_id))
            .update_expression("SET #status = :new REMOVE pending_shard")
            .condition_expression("#status = :pending AND checkout_payment_id = :payment")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
            .expression_attribute_values(":payment", s(payment.as_str()))
            .expression_attribute_values(":new", s(status.as_str()))
            .send()
            .await;
        match ended {
            Ok(_) => {}
            Err(error) if crate::adapters::dynamo::is_condition_failure(&error) => {
                return Ok(false)
            }
            Err(error) => return Err(store_error(error)),
        }
        // Then each seat still its own, and the lock (what is left lapses on its own).
        for seat in &order.seat_ids {
            self.free_seat(&order.event_id, seat, &order.order_id, None)
                .await?;
        }
        self.free_hold_lock(order).await?;
        Ok(true)
    }
}

fn update(update: aws_sdk_dynamodb::types::builders::UpdateBuilder) -> TransactWriteItem {
    TransactWriteItem::builder()
        .update(built(update.build()))
        .build()
}
