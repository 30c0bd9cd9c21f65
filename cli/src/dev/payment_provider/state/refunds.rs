//! Refunds: made within what is left of a payment, fetched, listed newest first a page at a time,
//! and settled later for the cards whose refunds are not immediate.

use std::collections::BTreeMap;
use std::time::SystemTime;

use lineup::application::ports::payments::RefundStatus;
use serde_json::{json, Value};

use super::super::cards::TestCard;
use super::super::errors::StripeError;
use super::{merge_metadata, new_id, unix, Books, Effect, FollowUp, Reply};

/// `POST /v1/refunds`, its parameters read.
#[derive(Debug, Clone, Default)]
pub struct NewRefund {
    pub payment_intent: String,
    /// `None`: what is left of the payment.
    pub amount: Option<i64>,
    pub metadata: Vec<(String, String)>,
    pub reason: Option<String>,
}

pub(super) struct Refund {
    id: String,
    pub(super) amount: i64,
    pub(super) currency: String,
    charge: String,
    pub(super) payment_intent: String,
    metadata: BTreeMap<String, String>,
    reason: Option<String>,
    status: RefundStatus,
    failure_reason: Option<&'static str>,
    /// The card refunded to (its behaviour decides the refund's).
    card: TestCard,
    created: u64,
}

impl Refund {
    pub(super) fn object(&self) -> Value {
        let mut object = json!({
            "id": self.id,
            "object": "refund",
            "amount": self.amount,
            "balance_transaction": format!("txn_{}", &self.id[3..]),
            "charge": self.charge,
            "created": self.created,
            "currency": self.currency,
            "metadata": self.metadata,
            "payment_intent": self.payment_intent,
            "reason": self.reason,
            "receipt_number": null,
            "source_transfer_reversal": null,
            "status": self.status.as_str(),
            "transfer_reversal": null,
        });
        if let Some(reason) = self.failure_reason {
            object["failure_reason"] = reason.into();
        }
        object
    }

    /// Whether its money is (or is going) back to the customer.
    pub(super) fn counts(&self) -> bool {
        !matches!(self.status, RefundStatus::Failed | RefundStatus::Canceled)
    }
}

impl Books {
    /// `POST /v1/refunds`: never more than what is left of the payment.
    pub fn refund(&mut self, new: NewRefund, now: SystemTime) -> Result<Reply, StripeError> {
        let missing = || {
            StripeError::missing("payment_intent", &new.payment_intent).with_param("payment_intent")
        };
        let intent = self.intents.get(&new.payment_intent).ok_or_else(missing)?;
        let Some((charge, card)) = intent.paid_by.clone() else {
            return Err(StripeError::unexpected_state(format!(
                "This PaymentIntent ({}) does not have a successful charge to refund.",
                intent.id
            ))
            .with_param("payment_intent"));
        };
        let refunded: i64 = self
            .refunds
            .values()
            .filter(|refund| refund.payment_intent == intent.id && refund.counts())
            .map(|refund| refund.amount)
            .sum();
        let left = intent.amount - refunded;
        if left <= 0 {
            return Err(StripeError::invalid(
                "charge_already_refunded",
                format!("Charge {charge} has already been refunded."),
            ));
        }
        let amount = new.amount.unwrap_or(left);
        if amount > left {
            return Err(StripeError::invalid(
                "amount_too_large",
                format!(
                    "Refund amount ({amount} {}) is greater than unrefunded amount on charge \
                     ({left} {})",
                    intent.currency, intent.currency
                ),
            )
            .with_param("amount"));
        }
        let mut metadata = BTreeMap::new();
        merge_metadata(&mut metadata, &new.metadata)?;
        let refund = Refund {
            id: new_id("re"),
            amount,
            currency: intent.currency.clone(),
            charge,
            payment_intent: intent.id.clone(),
            metadata,
            reason: new.reason,
            status: if card == TestCard::PendingRefund {
                RefundStatus::Pending
            } else {
                RefundStatus::Succeeded
            },
            failure_reason: None,
            card,
            created: unix(now),
        };
        let object = refund.object();
        let mut reply = Reply::ok(object.clone()).with(Effect::Event {
            kind: "refund.created",
            object,
        });
        if matches!(card, TestCard::PendingRefund | TestCard::RefundFails) {
            reply = reply.with(Effect::Later(FollowUp::RefundSettles {
                refund: refund.id.clone(),
            }));
        }
        self.refund_order.push(refund.id.clone());
        self.refunds.insert(refund.id.clone(), refund);
        Ok(reply)
    }

    /// `GET /v1/refunds/{id}`.
    pub fn refund_of(&self, id: &str) -> Result<Reply, StripeError> {
        self.refunds
            .get(id)
            .map(|refund| Reply::ok(refund.object()))
            .ok_or_else(|| StripeError::missing("refund", id))
    }

    /// `GET /v1/refunds`: newest first, `limit` to a page, after `starting_after`.
    pub fn list_refunds(
        &self,
        payment_intent: Option<&str>,
        limit: usize,
        starting_after: Option<&str>,
    ) -> Result<Reply, StripeError> {
        if let Some(payment_intent) = payment_intent {
            if !self.intents.contains_key(payment_intent) {
                return Err(StripeError::missing("payment_intent", payment_intent)
                    .with_param("payment_intent"));
            }
        }
        let listed: Vec<&Refund> = self
            .refund_order
            .iter()
            .rev()
            .filter_map(|id| self.refunds.get(id))
            .filter(|refund| payment_intent.is_none_or(|pi| refund.payment_intent == pi))
            .collect();
        let start = match starting_after {
            None => 0,
            Some(after) => {
                listed
                    .iter()
                    .position(|refund| refund.id == after)
                    .ok_or_else(|| {
                        StripeError::missing("refund", after).with_param("starting_after")
                    })?
                    + 1
            }
        };
        let page: Vec<Value> = listed
            .iter()
            .skip(start)
            .take(limit)
            .map(|refund| refund.object())
            .collect();
        let has_more = listed.len() > start + page.len();
        Ok(Reply::ok(json!({
            "object": "list",
            "data": page,
            "has_more": has_more,
            "url": "/v1/refunds",
        })))
    }

    /// A pending refund succeeds; a refund of a `pm_card_refundFail` payment fails.
    pub(super) fn settle_refund(&mut self, refund: &str) -> Vec<Effect> {
        let Some(refund) = self.refunds.get_mut(refund) else {
            return Vec::new();
        };
        match (refund.card, refund.status) {
            (TestCard::PendingRefund, RefundStatus::Pending) => {
                refund.status = RefundStatus::Succeeded;
            }
            (TestCard::RefundFails, RefundStatus::Succeeded) => {
                refund.status = RefundStatus::Failed;
                refund.failure_reason = Some("expired_or_canceled_card");
            }
            _ => return Vec::new(),
        }
        vec![Effect::Event {
            kind: "refund.updated",
            object: refund.object(),
        }]
    }
}
