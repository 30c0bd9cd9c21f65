//! The provider's books: its PaymentIntents (`intents`) and refunds (`refunds`), in memory,
//! and the rules that move them (Stripe's, for the part of the API Lineup uses). No HTTP and no
//! clock of its own, so the rules are tested alone (`tests`): each operation takes the time and
//! returns Stripe's answer with what follows from it ([`Effect`]: the events to send, the steps
//! the provider takes later), which the HTTP side ([`super::api`]) carries out.

mod intents;
mod refunds;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use lineup::application::ports::payments::PaymentStatus;
use serde_json::Value;

use self::intents::Intent;
pub use self::intents::{public_view, NewIntent};
pub use self::refunds::NewRefund;
use self::refunds::Refund;
use super::cards::TestCard;
use super::errors::StripeError;

/// Stripe's limits on metadata: keys per object, a key's and a value's length in characters.
const METADATA_KEYS: usize = 50;
const METADATA_KEY_LENGTH: usize = 40;
const METADATA_VALUE_LENGTH: usize = 500;

/// Stripe's answer to one request, and what follows from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub effects: Vec<Effect>,
}

impl Reply {
    fn ok(body: Value) -> Self {
        Self {
            status: StatusCode::OK,
            body,
            effects: Vec::new(),
        }
    }

    fn with(mut self, effect: Effect) -> Self {
        self.effects.push(effect);
        self
    }
}

impl From<StripeError> for Reply {
    fn from(error: StripeError) -> Self {
        Self {
            status: error.status,
            body: error.body(),
            effects: Vec::new(),
        }
    }
}

/// What an operation sets going.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A Stripe event (`payment_intent.succeeded`...) about `object`, as it is at the change.
    Event { kind: &'static str, object: Value },
    /// A step the provider takes by itself after its delay.
    Later(FollowUp),
}

/// The steps the provider takes by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowUp {
    /// The customer completed 3-D Secure, or the bank settled a processing payment: the payment
    /// succeeds if it still waits on that same attempt (not cancelled or re-confirmed since).
    PaymentCompletes {
        payment_intent: String,
        attempt: u32,
    },
    /// A pending refund succeeds; a refund of a `pm_card_refundFail` payment fails.
    RefundSettles { refund: String },
}

/// What `/dev/payments/stats` reports of the books.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BookStats {
    /// PaymentIntents made.
    pub payments: u64,
    /// Of them, succeeded (the money taken).
    pub succeeded: u64,
    /// Refunds made.
    pub refunds: u64,
    /// What the refunds not failed give back, in ISO 4217 minor units (Lineup's unit).
    pub refunded_amount: i64,
}

/// A new id: `prefix_` and 24 random characters.
pub fn new_id(prefix: &str) -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}_{}", &random[..24])
}

pub(super) fn unix(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// Metadata pairs merged in as Stripe does: an empty value unsets its key; Stripe's limits.
pub(super) fn merge_metadata(
    metadata: &mut BTreeMap<String, String>,
    pairs: &[(String, String)],
) -> Result<(), StripeError> {
    for (key, value) in pairs {
        if key.is_empty() || key.chars().count() > METADATA_KEY_LENGTH {
            return Err(StripeError::invalid_without_code(format!(
                "Metadata keys must be 1 to {METADATA_KEY_LENGTH} characters long: '{key}'"
            ))
            .with_param(format!("metadata[{key}]")));
        }
        if value.chars().count() > METADATA_VALUE_LENGTH {
            return Err(StripeError::invalid_without_code(format!(
                "Metadata values can have up to {METADATA_VALUE_LENGTH} characters, but you \
                 passed in a value that is {} characters",
                value.chars().count()
            ))
            .with_param(format!("metadata[{key}]")));
        }
        if value.is_empty() {
            metadata.remove(key);
        } else {
            metadata.insert(key.clone(), value.clone());
        }
    }
    if metadata.len() > METADATA_KEYS {
        return Err(StripeError::invalid_without_code(format!(
            "You can have at most {METADATA_KEYS} keys in metadata"
        ))
        .with_param("metadata"));
    }
    Ok(())
}

/// The test card a payment method id names, or Stripe's 400 for an unknown one.
pub(super) fn card(payment_method: &str) -> Result<TestCard, StripeError> {
    TestCard::named(payment_method).ok_or_else(|| {
        StripeError::invalid(
            "resource_missing",
            format!(
                "No such PaymentMethod: '{payment_method}' (lineup dev's provider knows \
                 pm_card_visa, pm_card_chargeCustomerFail, pm_card_chargeDeclined, \
                 pm_card_threeDSecure2Required, pm_card_processing, pm_card_pendingRefund, \
                 pm_card_refundFail)"
            ),
        )
        .with_param("payment_method")
    })
}

/// Every PaymentIntent and refund the provider has made.
#[derive(Default)]
pub struct Books {
    intents: HashMap<String, Intent>,
    refunds: HashMap<String, Refund>,
    /// Refund ids, oldest first.
    refund_order: Vec<String>,
}

impl Books {
    /// A step the provider takes by itself: what it sets going (nothing if it is stale).
    pub fn follow_up(&mut self, step: &FollowUp) -> Vec<Effect> {
        match step {
            FollowUp::PaymentCompletes {
                payment_intent,
                attempt,
            } => self.complete_payment(payment_intent, *attempt),
            FollowUp::RefundSettles { refund } => self.settle_refund(refund),
        }
    }

    /// The counts `/dev/payments/stats` reports.
    pub fn stats(&self) -> BookStats {
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        BookStats {
            payments: count(self.intents.len()),
            succeeded: count(
                self.intents
                    .values()
                    .filter(|intent| intent.status == PaymentStatus::Succeeded)
                    .count(),
            ),
            refunds: count(self.refunds.len()),
            refunded_amount: self
                .refunds
                .values()
                .filter(|refund| refund.counts())
                .map(|refund| {
                    lineup::domain::money::from_stripe(refund.amount, &refund.currency)
                        .unwrap_or(refund.amount)
                })
                .sum(),
        }
    }
}
