//! Tying a provider payment to an order, once: one conditional update of the order, which names
//! the payment only if it is still pending, the customer's, and names no other payment.

use std::time::SystemTime;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;

use crate::adapters::dynamo::items::{from_item, order_key, s, OrderItem};
use crate::adapters::dynamo::{store_error, DynamoLedger};
use crate::application::error::LineupError;
use crate::application::ports::ledger::{Attached, CheckoutLedger, Order, OrderStatus};
use crate::domain::ids::PaymentId;

#[async_trait::async_trait]
impl CheckoutLedger for DynamoLedger {
    async fn attach_payment(
        &self,
        order: &Order,
        payment: &PaymentId,
        _now: SystemTime,
    ) -> Result<Attached, LineupError> {
        let updated = self
            .client
            .update_item()
            .table_name(&self.tables.orders)
            .key("pk", order_key(&order.order_id))
            .update_expression("SET checkout_payment_id = :payment")
            .condition_expression(
                "#status = :pending AND customer_id = :customer \
                 AND (attribute_not_exists(checkout_payment_id) OR checkout_payment_id = :payment)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":payment", s(payment.as_str()))
            .expression_attribute_values(":pending", s(OrderStatus::Pending.as_str()))
            .expression_attribute_values(":customer", s(order.customer_id.as_str()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let error = match updated {
            Ok(_) => return Ok(Attached::Attached),
            Err(error) => error,
        };
        // The order as it was when the condition failed.
        let old = match &error {
            SdkError::ServiceError(service) => match service.err() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed) => {
                    failed.item().cloned()
                }
                _ => return Err(store_error(error)),
            },
            _ => return Err(store_error(error)),
        };
        let Some(old) = old else {
            return Ok(Attached::NotPending);
        };
        let old: OrderItem = from_item(old)?;
        match old.checkout_payment_id {
            Some(other) if other != payment.as_str() => {
                Ok(Attached::Other(PaymentId::parse(&other).map_err(|_| {
                    LineupError::SeatStoreReply {
                        operation: "checkout",
                        reply: "an order names a malformed payment".to_owned(),
                    }
                })?))
            }
            _ => Ok(Attached::NotPending),
        }
    }
}
