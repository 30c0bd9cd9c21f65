//! PaymentIntents: made, fetched, given a card, confirmed (each test card's outcome), cancelled;
//! and what a publishable key may see of one.

use std::collections::BTreeMap;
use std::time::SystemTime;

use lineup::application::ports::payments::PaymentStatus;
use serde_json::{json, Value};

use super::super::cards::TestCard;
use super::super::errors::StripeError;
use super::{card, merge_metadata, new_id, unix, Books, Effect, FollowUp, Reply};

/// `POST /v1/payment_intents`, its parameters read.
#[derive(Debug, Clone, Default)]
pub struct NewIntent {
    /// In Stripe's unit of `currency`.
    pub amount: i64,
    /// Lower case.
    pub currency: String,
    pub metadata: Vec<(String, String)>,
    pub payment_method: Option<String>,
    pub confirm: bool,
    pub description: Option<String>,
    pub capture_method: Option<String>,
}

pub(super) struct Intent {
    pub(super) id: String,
    client_secret: String,
    pub(super) amount: i64,
    pub(super) currency: String,
    description: Option<String>,
    capture_method: String,
    metadata: BTreeMap<String, String>,
    pub(super) status: PaymentStatus,
    payment_method: Option<String>,
    last_payment_error: Option<Value>,
    latest_charge: Option<String>,
    next_action: Option<Value>,
    /// The charge that took the money, and the card it took it from.
    pub(super) paid_by: Option<(String, TestCard)>,
    created: u64,
    canceled_at: Option<u64>,
    cancellation_reason: Option<String>,
    /// Bumped by every confirmation, update and cancellation: a step scheduled for an earlier
    /// attempt is stale.
    attempt: u32,
}

impl Intent {
    pub(super) fn object(&self) -> Value {
        let received = if self.status == PaymentStatus::Succeeded {
            self.amount
        } else {
            0
        };
        json!({
            "id": self.id,
            "object": "payment_intent",
            "amount": self.amount,
            "amount_capturable": 0,
            "amount_received": received,
            "canceled_at": self.canceled_at,
            "cancellation_reason": self.cancellation_reason,
            "capture_method": self.capture_method,
            "client_secret": self.client_secret,
            "confirmation_method": "automatic",
            "created": self.created,
            "currency": self.currency,
            "customer": null,
            "description": self.description,
            "last_payment_error": self.last_payment_error,
            "latest_charge": self.latest_charge,
            "livemode": false,
            "metadata": self.metadata,
            "next_action": self.next_action,
            "payment_method": self.payment_method,
            "payment_method_types": ["card"],
            "processing": null,
            "status": self.status.as_str(),
        })
    }
}

/// The fields of a PaymentIntent a publishable key may see (Stripe.js, with the client secret).
const PUBLIC_FIELDS: &[&str] = &[
    "id",
    "object",
    "amount",
    "canceled_at",
    "cancellation_reason",
    "capture_method",
    "client_secret",
    "confirmation_method",
    "created",
    "currency",
    "description",
    "last_payment_error",
    "livemode",
    "next_action",
    "payment_method",
    "payment_method_types",
    "processing",
    "status",
];

/// An answer as a publishable key gets it: the PaymentIntents in it cut to `PUBLIC_FIELDS`
/// (no metadata, no charge).
pub fn public_view(mut body: Value) -> Value {
    fn cut(object: &mut Value) {
        if let Some(fields) = object.as_object_mut() {
            fields.retain(|name, _| PUBLIC_FIELDS.contains(&name.as_str()));
        }
    }
    if body["object"] == "payment_intent" {
        cut(&mut body);
    }
    if let Some(intent) = body.pointer_mut("/error/payment_intent") {
        cut(intent);
    }
    body
}

impl Books {
    pub(super) fn intent(&self, id: &str) -> Result<&Intent, StripeError> {
        self.intents
            .get(id)
            .ok_or_else(|| StripeError::missing("payment_intent", id))
    }

    pub(super) fn intent_mut(&mut self, id: &str) -> Result<&mut Intent, StripeError> {
        self.intents
            .get_mut(id)
            .ok_or_else(|| StripeError::missing("payment_intent", id))
    }

    /// `POST /v1/payment_intents`.
    pub fn create(&mut self, new: NewIntent, now: SystemTime) -> Result<Reply, StripeError> {
        let mut metadata = BTreeMap::new();
        merge_metadata(&mut metadata, &new.metadata)?;
        if let Some(method) = &new.payment_method {
            card(method)?;
        } else if new.confirm {
            return Err(StripeError::invalid(
                "parameter_missing",
                "A payment_method is required to create a PaymentIntent with confirm=true.",
            )
            .with_param("payment_method"));
        }
        let id = new_id("pi");
        let intent = Intent {
            client_secret: format!("{id}_secret_{}", &new_id("s")[2..]),
            id: id.clone(),
            amount: new.amount,
            currency: new.currency,
            description: new.description,
            capture_method: new.capture_method.unwrap_or_else(|| "automatic".into()),
            metadata,
            status: if new.payment_method.is_some() {
                PaymentStatus::RequiresConfirmation
            } else {
                PaymentStatus::RequiresPaymentMethod
            },
            payment_method: new.payment_method,
            last_payment_error: None,
            latest_charge: None,
            next_action: None,
            paid_by: None,
            created: unix(now),
            canceled_at: None,
            cancellation_reason: None,
            attempt: 0,
        };
        let object = intent.object();
        self.intents.insert(id.clone(), intent);
        if new.confirm {
            self.confirm(&id, None)
        } else {
            Ok(Reply::ok(object))
        }
    }

    /// `GET /v1/payment_intents/{id}`.
    pub fn retrieve(&self, id: &str) -> Result<Reply, StripeError> {
        Ok(Reply::ok(self.intent(id)?.object()))
    }

    /// What a publishable key must show to act on a PaymentIntent: its client secret.
    pub fn check_client_secret(&self, id: &str, client_secret: &str) -> Result<(), StripeError> {
        let intent = self.intent(id)?;
        if intent.client_secret == client_secret {
            Ok(())
        } else {
            Err(StripeError::invalid(
                "payment_intent_invalid_parameter",
                "The client_secret provided does not match the client_secret associated with \
                 the PaymentIntent.",
            )
            .with_param("client_secret"))
        }
    }

    /// `POST /v1/payment_intents/{id}`: a new payment method (back to `requires_confirmation`),
    /// metadata merged in.
    pub fn update(
        &mut self,
        id: &str,
        payment_method: Option<String>,
        metadata: &[(String, String)],
        description: Option<String>,
    ) -> Result<Reply, StripeError> {
        let intent = self.intent_mut(id)?;
        if let Some(method) = &payment_method {
            let open = matches!(
                intent.status,
                PaymentStatus::RequiresPaymentMethod
                    | PaymentStatus::RequiresConfirmation
                    | PaymentStatus::RequiresAction
            );
            if !open {
                return Err(StripeError::unexpected_state(format!(
                    "This PaymentIntent's payment_method could not be updated because it has a \
                     status of {}. You may only update the payment_method of a PaymentIntent \
                     with one of the following statuses: requires_payment_method, \
                     requires_confirmation, requires_action.",
                    intent.status.as_str()
                )));
            }
            card(method)?;
        }
        let mut merged = intent.metadata.clone();
        merge_metadata(&mut merged, metadata)?;
        intent.metadata = merged;
        if description.is_some() {
            intent.description = description;
        }
        if let Some(method) = payment_method {
            intent.payment_method = Some(method);
            intent.status = PaymentStatus::RequiresConfirmation;
            intent.next_action = None;
            intent.attempt += 1;
        }
        Ok(Reply::ok(intent.object()))
    }

    /// `POST /v1/payment_intents/{id}/confirm`: pays with the payment method given or attached.
    pub fn confirm(
        &mut self,
        id: &str,
        payment_method: Option<String>,
    ) -> Result<Reply, StripeError> {
        let intent = self.intent_mut(id)?;
        if !matches!(
            intent.status,
            PaymentStatus::RequiresPaymentMethod | PaymentStatus::RequiresConfirmation
        ) {
            return Err(StripeError::unexpected_state(format!(
                "You cannot confirm this PaymentIntent because it has a status of {}.",
                intent.status.as_str()
            )));
        }
        let Some(method) = payment_method.or_else(|| intent.payment_method.clone()) else {
            return Err(StripeError::unexpected_state(
                "You cannot confirm this PaymentIntent because it's missing a payment method. \
                 You can either update the PaymentIntent with a payment method and then confirm \
                 it again, or confirm it again directly with a payment method.",
            )
            .with_param("payment_method"));
        };
        let card = card(&method)?;
        intent.attempt += 1;
        intent.payment_method = Some(method.clone());
        intent.last_payment_error = None;
        intent.next_action = None;
        let event = |kind, intent: &Intent| Effect::Event {
            kind,
            object: intent.object(),
        };
        Ok(match card {
            TestCard::Succeeds | TestCard::PendingRefund | TestCard::RefundFails => {
                succeed(intent, card);
                Reply::ok(intent.object()).with(event("payment_intent.succeeded", intent))
            }
            TestCard::Declines => {
                let charge = new_id("ch");
                intent.status = PaymentStatus::RequiresPaymentMethod;
                intent.payment_method = None;
                intent.latest_charge = Some(charge.clone());
                intent.last_payment_error = Some(json!({
                    "type": "card_error",
                    "code": "card_declined",
                    "decline_code": "generic_decline",
                    "message": "Your card was declined.",
                    "charge": charge,
                    "payment_method": {"id": method, "object": "payment_method", "type": "card"},
                }));
                let declined =
                    StripeError::card_declined("Your card was declined.", &charge, intent.object());
                Reply::from(declined).with(event("payment_intent.payment_failed", intent))
            }
            TestCard::ThreeDSecure | TestCard::Processing => {
                let (status, kind) = if card == TestCard::ThreeDSecure {
                    intent.next_action = Some(json!({
                        "type": "use_stripe_sdk",
                        "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": ""},
                    }));
                    (
                        PaymentStatus::RequiresAction,
                        "payment_intent.requires_action",
                    )
                } else {
                    (PaymentStatus::Processing, "payment_intent.processing")
                };
                intent.status = status;
                Reply::ok(intent.object())
                    .with(event(kind, intent))
                    .with(Effect::Later(FollowUp::PaymentCompletes {
                        payment_intent: intent.id.clone(),
                        attempt: intent.attempt,
                    }))
            }
        })
    }

    /// `POST /v1/payment_intents/{id}/cancel`: only a payment that has not taken money, and is
    /// not being taken.
    pub fn cancel(
        &mut self,
        id: &str,
        reason: Option<String>,
        now: SystemTime,
    ) -> Result<Reply, StripeError> {
        let intent = self.intent_mut(id)?;
        let cancelable = matches!(
            intent.status,
            PaymentStatus::RequiresPaymentMethod
                | PaymentStatus::RequiresConfirmation
                | PaymentStatus::RequiresAction
                | PaymentStatus::RequiresCapture
        );
        if !cancelable {
            return Err(StripeError::unexpected_state(format!(
                "You cannot cancel this PaymentIntent because it has a status of {}. Only a \
                 PaymentIntent with one of the following statuses may be canceled: \
                 requires_payment_method, requires_capture, requires_confirmation, \
                 requires_action.",
                intent.status.as_str()
            )));
        }
        intent.status = PaymentStatus::Canceled;
        intent.canceled_at = Some(unix(now));
        intent.cancellation_reason = reason;
        intent.next_action = None;
        intent.attempt += 1;
        let object = intent.object();
        Ok(Reply::ok(object.clone()).with(Effect::Event {
            kind: "payment_intent.canceled",
            object,
        }))
    }

    /// The customer completed 3-D Secure, or the bank settled: the payment succeeds if it still
    /// waits on `attempt`.
    pub(super) fn complete_payment(&mut self, payment_intent: &str, attempt: u32) -> Vec<Effect> {
        let Some(intent) = self.intents.get_mut(payment_intent) else {
            return Vec::new();
        };
        let waiting = matches!(
            intent.status,
            PaymentStatus::RequiresAction | PaymentStatus::Processing
        );
        if intent.attempt != attempt || !waiting {
            return Vec::new();
        }
        let card = intent
            .payment_method
            .as_deref()
            .and_then(TestCard::named)
            .unwrap_or(TestCard::Succeeds);
        succeed(intent, card);
        vec![Effect::Event {
            kind: "payment_intent.succeeded",
            object: intent.object(),
        }]
    }
}

/// The money taken: a charge made from `card`.
fn succeed(intent: &mut Intent, card: TestCard) {
    let charge = new_id("ch");
    intent.status = PaymentStatus::Succeeded;
    intent.next_action = None;
    intent.latest_charge = Some(charge.clone());
    intent.paid_by = Some((charge, card));
}
