//! Refund records (`REFUND#<refund id>` in the orders table), each written once, in one
//! transaction with its payment's refunded total (`PAYMENT#<payment id>`, `refunded`): the
//! total only grows by what is left of the payment, so refunds never pass what was paid, however
//! many records ask.
//!
//! A refund the provider has not finished (`pending`) is also in the orders table's sparse
//! index, under a partition of its own ([`PENDING_REFUNDS`], never one of the expiry sweep's
//! shards): reconciliation lists them there and asks the provider again.

use std::time::SystemTime;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

use crate::adapters::dynamo::items::{
    from_item, n, order_key, payment_key, s, to_item, Item, PENDING_INDEX, REFUND_PREFIX,
};
use crate::adapters::dynamo::{
    all_items, built, condition_failed, is_condition_failure, store_error, transact, DynamoLedger,
    TransactionOutcome,
};
use crate::application::error::LineupError;
use crate::application::ports::ledger::OrderStatus;
use crate::application::ports::payments::ProviderRefund;
use crate::application::ports::refunds::{
    Recorded, RefundLedger, RefundRecord, RefundRequest, RefundState, REFUND_LEASE,
};
use crate::domain::clock::unix_millis;
use crate::domain::ids::{OrderId, PaymentId};

/// The index partition (`pending_shard`) of refunds still pending at the provider. The sweep
/// and the open-payments listing read only their `PENDING#<n>` shards, so they never see these.
pub const PENDING_REFUNDS: &str = "REFUND-PENDING";

/// How many times the record is tried when another refund of the same payment moved its total
/// meanwhile.
const ATTEMPTS: usize = 4;

#[derive(Serialize, Deserialize)]
struct RefundItem {
    pk: String,
    refund_id: String,
    payment_id: String,
    order_id: String,
    /// What the event asked.
    requested: i64,
    /// What is refunded (at most what was left of the payment).
    amount: i64,
    currency: String,
    state: RefundState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider_refund_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease_until: Option<u64>,
    created_at: u64,
}

impl RefundItem {
    fn into_record(self) -> Result<RefundRecord, LineupError> {
        let unexpected = |_| LineupError::SeatStoreReply {
            operation: "refund item",
            reply: self.pk.clone(),
        };
        Ok(RefundRecord {
            request: RefundRequest {
                refund_id: self.refund_id.clone(),
                payment_id: PaymentId::parse(&self.payment_id).map_err(unexpected)?,
                order_id: OrderId::parse(&self.order_id).map_err(unexpected)?,
                amount: self.requested,
                currency: self.currency.clone(),
            },
            state: self.state,
            amount: self.amount,
            provider_refund_id: self.provider_refund_id,
        })
    }
}

/// The part of a payment record a refund reads.
#[derive(Deserialize)]
struct PaidItem {
    amount: i64,
    #[serde(default)]
    refunded: Option<i64>,
}

fn refund_pk(refund_id: &str) -> String {
    format!("{REFUND_PREFIX}{refund_id}")
}

impl DynamoLedger {
    async fn get(
        &self,
        pk: aws_sdk_dynamodb::types::AttributeValue,
    ) -> Result<Option<Item>, LineupError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.orders)
            .key("pk", pk)
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?;
        Ok(output.item)
    }

    async fn refund_record(&self, refund_id: &str) -> Result<Option<RefundRecord>, LineupError> {
        match self.get(s(refund_pk(refund_id))).await? {
            Some(item) => Ok(Some(from_item::<RefundItem>(item)?.into_record()?)),
            None => Ok(None),
        }
    }
}

#[async_trait::async_trait]
impl RefundLedger for DynamoLedger {
    async fn record(
        &self,
        request: &RefundRequest,
        now: SystemTime,
    ) -> Result<Recorded, LineupError> {
        for _ in 0..ATTEMPTS {
            if let Some(record) = self.refund_record(&request.refund_id).await? {
                return Ok(Recorded::Refund(record));
            }
            let Some(paid) = self.get(payment_key(&request.payment_id)).await? else {
                return Ok(Recorded::UnknownPayment);
            };
            let paid: PaidItem = from_item(paid)?;
            let refunded = paid.refunded.unwrap_or(0);
            // Never more than is left of what was paid.
            let amount = request.amount.min(paid.amount - refunded);
            if amount <= 0 {
                return Ok(Recorded::NothingLeft);
            }
            let item = RefundItem {
                pk: refund_pk(&request.refund_id),
                refund_id: request.refund_id.clone(),
                payment_id: request.payment_id.as_str().to_owned(),
                order_id: request.order_id.as_str().to_owned(),
                requested: request.amount,
                amount,
                currency: request.currency.clone(),
                state: RefundState::Creating,
                provider_refund_id: None,
                lease_until: None,
                created_at: unix_millis(now),
            };
            let put = Put::builder()
                .table_name(&self.tables.orders)
                .set_item(Some(to_item(&item)?))
                .condition_expression("attribute_not_exists(pk)");
            // The total moves only from the value just read: a refund of the same payment
            // recorded meanwhile makes this one read again.
            let total = Update::builder()
                .table_name(&self.tables.orders)
                .key("pk", payment_key(&request.payment_id))
                .update_expression("SET refunded = :new")
                .condition_expression(if paid.refunded.is_some() {
                    "refunded = :old"
                } else {
                    "attribute_exists(pk) AND attribute_not_exists(refunded)"
                })
                .expression_attribute_values(":new", n(refunded + amount));
            let total = match paid.refunded {
                Some(old) => total.expression_attribute_values(":old", n(old)),
                None => total,
            };
            let items = vec![
                TransactWriteItem::builder().put(built(put.build())).build(),
                TransactWriteItem::builder()
                    .update(built(total.build()))
                    .build(),
            ];
            match transact(&self.client, items).await? {
                TransactionOutcome::Done(()) => return Ok(Recorded::Refund(item.into_record()?)),
                // Recorded by a racing delivery (read it, next round), or the total moved.
                TransactionOutcome::Cancelled(reasons) if reasons.iter().any(condition_failed) => {
                    continue
                }
                TransactionOutcome::Cancelled(reasons) => {
                    let codes: Vec<&str> =
                        reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
                    return Err(LineupError::SeatStoreReply {
                        operation: "refund",
                        reply: codes.join(","),
                    });
                }
            }
        }
        Err(LineupError::SeatStoreReply {
            operation: "refund",
            reply: "the payment's refunded total kept moving".to_owned(),
        })
    }

    async fn refund(&self, refund_id: &str) -> Result<Option<RefundRecord>, LineupError> {
        self.refund_record(refund_id).await
    }

    async fn lease(&self, refund_id: &str, now: SystemTime) -> Result<bool, LineupError> {
        let leased = self
            .client
            .update_item()
            .table_name(&self.tables.orders)
            .key("pk", s(refund_pk(refund_id)))
            .update_expression("SET lease_until = :until")
            .condition_expression(
                "#state = :creating AND (attribute_not_exists(lease_until) OR lease_until < :now)",
            )
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":creating", s(RefundState::Creating.as_str()))
            .expression_attribute_values(":now", n(unix_millis(now)))
            .expression_attribute_values(":until", n(unix_millis(now + REFUND_LEASE)))
            .send()
            .await;
        match leased {
            Ok(_) => Ok(true),
            Err(error) if is_condition_failure(&error) => Ok(false),
            Err(error) => Err(store_error(error)),
        }
    }

    async fn settle(
        &self,
        record: &RefundRecord,
        refund: &ProviderRefund,
        now: SystemTime,
    ) -> Result<RefundRecord, LineupError> {
        let request = &record.request;
        let state = RefundState::of(refund.status);
        // A final state stays: a late, older status never undoes it. A pending one is listed
        // for reconciliation (the index needs both of its keys); a final one leaves the list.
        let update = if state == RefundState::Pending {
            "SET #state = :state, provider_refund_id = :refund, pending_shard = :listed, \
             expires_at = :now REMOVE lease_until"
        } else {
            "SET #state = :state, provider_refund_id = :refund REMOVE lease_until, pending_shard"
        };
        let mut updated = self
            .client
            .update_item()
            .table_name(&self.tables.orders)
            .key("pk", s(refund_pk(&request.refund_id)))
            .update_expression(update)
            .condition_expression("#state IN (:creating, :pending)")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":state", s(state.as_str()))
            .expression_attribute_values(":refund", s(&refund.id))
            .expression_attribute_values(":creating", s(RefundState::Creating.as_str()))
            .expression_attribute_values(":pending", s(RefundState::Pending.as_str()));
        if state == RefundState::Pending {
            updated = updated
                .expression_attribute_values(":listed", s(PENDING_REFUNDS))
                .expression_attribute_values(":now", n(unix_millis(now)));
        }
        let updated = updated.send().await;
        match updated {
            Ok(_) => {}
            Err(error) if is_condition_failure(&error) => {}
            Err(error) => return Err(store_error(error)),
        }
        let settled =
            self.refund_record(&request.refund_id)
                .await?
                .ok_or(LineupError::SeatStoreReply {
                    operation: "refund",
                    reply: "a refund record vanished".to_owned(),
                })?;
        if settled.state == RefundState::Succeeded {
            // The order this payment settled as REFUND_REQUIRED has its money back.
            let ended = self
                .client
                .update_item()
                .table_name(&self.tables.orders)
                .key("pk", order_key(&request.order_id))
                .update_expression("SET #status = :refunded")
                .condition_expression("#status = :required AND payment_id = :payment")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":refunded", s(OrderStatus::Refunded.as_str()))
                .expression_attribute_values(":required", s(OrderStatus::RefundRequired.as_str()))
                .expression_attribute_values(":payment", s(request.payment_id.as_str()))
                .send()
                .await;
            match ended {
                Ok(_) => {}
                // Not this payment's order to end (money that could not buy it, say).
                Err(error) if is_condition_failure(&error) => {}
                Err(error) => return Err(store_error(error)),
            }
        }
        Ok(settled)
    }

    async fn pending_refunds(&self) -> Result<Vec<RefundRecord>, LineupError> {
        let items: Vec<Item> = all_items(
            self.client
                .query()
                .table_name(&self.tables.orders)
                .index_name(PENDING_INDEX)
                .key_condition_expression("pending_shard = :listed")
                .expression_attribute_values(":listed", s(PENDING_REFUNDS))
                .into_paginator()
                .items()
                .send(),
        )
        .await?;
        items
            .into_iter()
            .map(|item| from_item::<RefundItem>(item)?.into_record())
            // The index is eventually consistent: one settled meanwhile may still show.
            .filter(|record| !matches!(record, Ok(record) if record.state != RefundState::Pending))
            .collect()
    }
}
