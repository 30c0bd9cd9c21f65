//! Reading an order, and the single-item writes that end one: PENDING to a final status, and
//! freeing the customer's hold lock. Used by the release, the sale and the expiry sweep.

use crate::adapters::dynamo::items::{from_item, hold_lock_key, n, order_key, s, OrderItem};
use crate::adapters::dynamo::{is_condition_failure, store_error, DynamoLedger};
use crate::application::error::LineupError;
use crate::application::ports::ledger::{Order, OrderStatus};
use crate::domain::ids::{CustomerId, EventId, OrderId};

impl DynamoLedger {
    pub(crate) async fn read_order(
        &self,
        order: &OrderId,
    ) -> Result<Option<OrderItem>, LineupError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.orders)
            .key("pk", order_key(order))
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?;
        output.item.map(from_item).transpose()
    }

    /// Deletes the customer's hold lock if it is still this order's (a newer hold's lock is left
    /// alone), so the customer may hold again at once.
    pub(crate) async fn free_hold_lock(&self, order: &Order) -> Result<(), LineupError> {
        self.free_hold_lock_of(&order.event_id, &order.customer_id, &order.order_id)
            .await
    }

    /// The customer's hold lock for the event, removed if it is still this order's.
    pub(crate) async fn free_hold_lock_of(
        &self,
        event: &EventId,
        customer: &CustomerId,
        order: &OrderId,
    ) -> Result<(), LineupError> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.tables.orders)
            .key("pk", hold_lock_key(event, customer))
            .condition_expression("order_id = :order")
            .expression_attribute_values(":order", s(order.as_str()))
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(()),
            Err(error) if is_condition_failure(&error) => Ok(()),
            Err(error) => Err(store_error(error)),
        }
    }

    /// PENDING → `status`, removing the order from the pending index. `Ok(false)` when the order
    /// was not pending (or not the customer's, or not lapsed by `lapsed_before`).
    pub(crate) async fn end_pending_order(
        &self,
        order_id: &OrderId,
        status: OrderStatus,
        customer: Option<&CustomerId>,
        lapsed_before: Option<u64>,
    ) -> Result<bool, LineupError> {
        let mut condition = "#status = :pending".to_owned();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.tables.orders)
            .key("pk", order_key(order_id))
            .update_expression("SET #status = :new REMOVE pending_shard")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
            .expression_attribute_values(":new", s(status.as_str()));
        if let Some(customer) = customer {
            condition.push_str(" AND customer_id = :customer");
            update = update.expression_attribute_values(":customer", s(customer.as_str()));
        }
        if let Some(before) = lapsed_before {
            // The sweep: never an order with a payment (reconciliation cancels it first).
            condition
                .push_str(" AND expires_at < :now AND attribute_not_exists(checkout_payment_id)");
            update = update.expression_attribute_values(":now", n(before));
        }
        match update.condition_expression(condition).send().await {
            Ok(_) => Ok(true),
            Err(error) if is_condition_failure(&error) => Ok(false),
            Err(error) => Err(store_error(error)),
        }
    }
}
