//! Stripe's JSON answers, as the adapter reads them: only the fields Lineup uses, every other
//! one ignored, and optional ones defaulted when absent or `null` (localstripe leaves out some
//! fields real Stripe sends, and adds others). Each answer converts into the port's type, with
//! the amount in ISO 4217 minor units and the currency upper-cased.

use std::collections::HashMap;

use serde::{Deserialize, Deserializer};

use crate::application::ports::payments::{
    metadata_keys, ClientSecret, PaymentStatus, ProviderPayment, ProviderRefund, RefundStatus,
};
use crate::domain::ids::{InvalidId, PaymentId};
use crate::domain::money::{self as amounts, AmountError};

/// `null` read as the type's default (an empty map, `None`).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A PaymentIntent (`/v1/payment_intents`).
#[derive(Debug, Deserialize)]
pub struct PaymentIntent {
    /// `pi_...`.
    pub id: String,
    /// Where it stands; a status Lineup does not know makes the answer unreadable.
    pub status: PaymentStatus,
    /// In Stripe's unit of `currency`.
    pub amount: i64,
    /// Lower case at Stripe.
    pub currency: String,
    /// What the customer's browser pays with; never logged.
    #[serde(default)]
    pub client_secret: Option<ClientSecret>,
    /// The metadata Lineup wrote.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: HashMap<String, String>,
    /// The last failed attempt (a declined card).
    #[serde(default)]
    pub last_payment_error: Option<LastPaymentError>,
}

/// A PaymentIntent's `last_payment_error`.
#[derive(Debug, Deserialize)]
pub struct LastPaymentError {
    /// Stripe's sentence ("Your card was declined.").
    #[serde(default)]
    pub message: Option<String>,
    /// Stripe's code (`card_declined`).
    #[serde(default)]
    pub code: Option<String>,
}

/// An id that may come expanded into its object (`"pi_..."` or `{"id": "pi_...", ...}`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Expandable {
    /// Not expanded: the id.
    Id(String),
    /// Expanded: the object, of which only the id is read.
    Object {
        /// The object's id.
        id: String,
    },
}

impl Expandable {
    /// The id, expanded or not.
    pub fn id(&self) -> &str {
        match self {
            Self::Id(id) | Self::Object { id } => id,
        }
    }
}

/// A refund (`/v1/refunds`).
#[derive(Debug, Deserialize)]
pub struct Refund {
    /// `re_...`.
    pub id: String,
    /// In Stripe's unit of `currency`.
    pub amount: i64,
    /// Lower case at Stripe.
    pub currency: String,
    /// Where it stands.
    pub status: RefundStatus,
    /// The payment refunded (absent on a refund of a bare charge).
    #[serde(default)]
    pub payment_intent: Option<Expandable>,
    /// The metadata Lineup wrote (`lineup_refund`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: HashMap<String, String>,
}

/// One page of a list (`GET /v1/refunds?...`).
#[derive(Debug, Deserialize)]
pub struct List<T> {
    /// This page's items.
    #[serde(
        default = "Vec::new",
        deserialize_with = "null_as_default",
        bound(deserialize = "T: Deserialize<'de>")
    )]
    pub data: Vec<T>,
    /// Whether a page follows (asked for with `starting_after=<the last id>`).
    #[serde(default)]
    pub has_more: bool,
}

/// The body of an error answer: `{"error": {...}}`.
#[derive(Debug, Deserialize)]
struct ErrorAnswer {
    error: ErrorObject,
}

/// Stripe's error object.
#[derive(Debug, Deserialize)]
struct ErrorObject {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// The most of a body that is not Stripe's error JSON (a proxy's page, a crash) kept as the
/// error's message.
const TEXT_MESSAGE_LIMIT: usize = 200;

/// An error answer from Stripe: its HTTP status and what its body says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Stripe answered HTTP {status} ({}, code {}): {}",
    .kind.as_deref().unwrap_or("no error type"),
    .code.as_deref().unwrap_or("none"),
    .message.as_deref().unwrap_or("no message")
)]
pub struct StripeError {
    /// The HTTP status.
    pub status: u16,
    /// Stripe's error `type` (`invalid_request_error`, `card_error`, `api_error`...); `None`
    /// when the body was not Stripe's error JSON.
    pub kind: Option<String>,
    /// Stripe's error `code` (`resource_missing`, `payment_intent_unexpected_state`...), when
    /// it gives one (localstripe mostly does not).
    pub code: Option<String>,
    /// Stripe's sentence, or the start of a body that was not JSON.
    pub message: Option<String>,
}

impl StripeError {
    /// The error an answer with this status and body is.
    pub fn from_answer(status: u16, body: &[u8]) -> Self {
        match serde_json::from_slice::<ErrorAnswer>(body) {
            Ok(ErrorAnswer { error }) => Self {
                status,
                kind: error.kind,
                code: error.code,
                message: error.message,
            },
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                Self {
                    status,
                    kind: None,
                    code: None,
                    message: (!text.is_empty())
                        .then(|| text.chars().take(TEXT_MESSAGE_LIMIT).collect()),
                }
            }
        }
    }

    /// Stripe's word that the object asked for does not exist: a 404 with Stripe's error JSON
    /// and the code `resource_missing` (localstripe: no code). A 404 that is not Stripe's JSON
    /// (a wrong base URL, a proxy) is not taken for it.
    pub fn is_missing_resource(&self) -> bool {
        self.status == 404
            && self.kind.is_some()
            && self
                .code
                .as_deref()
                .is_none_or(|code| code == "resource_missing")
    }

    /// Whether the same request may succeed later: Stripe throttled it (429), it conflicted
    /// with a request under the same idempotency key still running (409), or Stripe failed on
    /// its side (5xx).
    pub fn is_retryable(&self) -> bool {
        matches!(self.status, 409 | 429) || self.status >= 500
    }
}

/// An answer that parsed but does not convert into the port's types.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The payment's id is not a usable [`PaymentId`].
    #[error("the payment id {id:?} is not usable")]
    PaymentId {
        /// The id as Stripe gave it.
        id: String,
        /// Why it is refused.
        #[source]
        source: InvalidId,
    },
    /// The amount or currency has no ISO 4217 equivalent.
    #[error("the amount of {id} has no ISO 4217 equivalent")]
    Amount {
        /// The object's id.
        id: String,
        /// Why.
        #[source]
        source: AmountError,
    },
}

fn payment_id(id: &str) -> Result<PaymentId, AnswerError> {
    PaymentId::parse(id).map_err(|source| AnswerError::PaymentId {
        id: id.to_owned(),
        source,
    })
}

fn iso_amount(id: &str, amount: i64, currency: &str) -> Result<i64, AnswerError> {
    amounts::from_stripe(amount, currency).map_err(|source| AnswerError::Amount {
        id: id.to_owned(),
        source,
    })
}

impl PaymentIntent {
    /// The payment as the port reads it.
    pub fn into_payment(self) -> Result<ProviderPayment, AnswerError> {
        let amount = iso_amount(&self.id, self.amount, &self.currency)?;
        Ok(ProviderPayment {
            id: payment_id(&self.id)?,
            status: self.status,
            amount,
            currency: self.currency.to_ascii_uppercase(),
            client_secret: self.client_secret,
            metadata: self.metadata,
            last_error: self
                .last_payment_error
                .and_then(|error| error.message.or(error.code)),
        })
    }
}

impl Refund {
    /// The refund as the port reads it; `asked_for` is the payment it was asked for or listed
    /// under, taken when the answer does not name one.
    pub fn into_refund(self, asked_for: &PaymentId) -> Result<ProviderRefund, AnswerError> {
        let payment_id = match &self.payment_intent {
            Some(payment) => payment_id(payment.id())?,
            None => asked_for.clone(),
        };
        let amount = iso_amount(&self.id, self.amount, &self.currency)?;
        let mut metadata = self.metadata;
        Ok(ProviderRefund {
            id: self.id,
            payment_id,
            amount,
            currency: self.currency.to_ascii_uppercase(),
            status: self.status,
            lineup_refund: metadata.remove(metadata_keys::REFUND),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(json: &str) -> PaymentIntent {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_payment_intent_reads_leniently_and_converts() {
        // localstripe's shape: extra fields, an expanded charge, a decline.
        let payment = intent(
            r#"{"id":"pi_w1YURRfqkdQmst","object":"payment_intent","amount":12000,
                "currency":"krw","status":"requires_payment_method",
                "client_secret":"pi_w1YURRfqkdQmst_secret_x","charges":{"data":[]},
                "latest_charge":{"id":"ch_1","amount":12000},
                "metadata":{"lineup_order":"o"},
                "last_payment_error":{"charge":"ch_1","code":"card_declined",
                                      "message":"Your card was declined."}}"#,
        )
        .into_payment()
        .unwrap();
        assert_eq!(payment.id.as_str(), "pi_w1YURRfqkdQmst");
        assert_eq!(payment.status, PaymentStatus::RequiresPaymentMethod);
        assert_eq!(payment.amount, 12_000);
        assert_eq!(payment.currency, "KRW");
        assert_eq!(payment.metadata["lineup_order"], "o");
        assert_eq!(
            payment.last_error.as_deref(),
            Some("Your card was declined.")
        );
    }

    #[test]
    fn missing_and_null_optional_fields_are_defaulted() {
        let payment = intent(
            r#"{"id":"pi_1","amount":1900,"currency":"isk","status":"succeeded",
                "metadata":null,"last_payment_error":null,"latest_charge":"ch_1"}"#,
        )
        .into_payment()
        .unwrap();
        assert_eq!(payment.amount, 19, "ISK is two-decimal at Stripe");
        assert!(payment.metadata.is_empty());
        assert_eq!(payment.client_secret, None);
        assert_eq!(payment.last_error, None);
    }

    #[test]
    fn every_stripe_status_is_read_and_an_unknown_one_is_refused() {
        for status in [
            PaymentStatus::RequiresPaymentMethod,
            PaymentStatus::RequiresConfirmation,
            PaymentStatus::RequiresAction,
            PaymentStatus::Processing,
            PaymentStatus::RequiresCapture,
            PaymentStatus::Canceled,
            PaymentStatus::Succeeded,
        ] {
            let json = format!(
                r#"{{"id":"pi_1","amount":1,"currency":"usd","status":"{}"}}"#,
                status.as_str()
            );
            assert_eq!(intent(&json).status, status);
        }
        let unknown = r#"{"id":"pi_1","amount":1,"currency":"usd","status":"requires_source"}"#;
        assert!(serde_json::from_str::<PaymentIntent>(unknown).is_err());
    }

    #[test]
    fn an_answer_lineup_cannot_convert_is_an_answer_error() {
        let inexact = intent(r#"{"id":"pi_1","amount":150,"currency":"isk","status":"succeeded"}"#);
        assert!(matches!(
            inexact.into_payment(),
            Err(AnswerError::Amount { .. })
        ));
        let bad_id = intent(r#"{"id":"pi 1","amount":1,"currency":"usd","status":"succeeded"}"#);
        assert!(matches!(
            bad_id.into_payment(),
            Err(AnswerError::PaymentId { .. })
        ));
    }

    #[test]
    fn the_client_secret_is_not_in_the_debug_output() {
        let payment = intent(
            r#"{"id":"pi_1","amount":1,"currency":"usd","status":"succeeded",
                "client_secret":"pi_1_secret_abcdef"}"#,
        );
        assert!(!format!("{payment:?}").contains("secret_abcdef"));
    }

    #[test]
    fn a_refund_names_its_payment_and_lineup_refund() {
        let asked_for = PaymentId::parse("pi_asked").unwrap();
        let refund: Refund = serde_json::from_str(
            r#"{"id":"re_1","amount":5000,"currency":"krw","status":"succeeded",
                "payment_intent":"pi_1","charge":"ch_1",
                "metadata":{"lineup_refund":"rf_1"}}"#,
        )
        .unwrap();
        let refund = refund.into_refund(&asked_for).unwrap();
        assert_eq!(refund.payment_id.as_str(), "pi_1");
        assert_eq!(refund.amount, 5_000);
        assert_eq!(refund.currency, "KRW");
        assert_eq!(refund.status, RefundStatus::Succeeded);
        assert_eq!(refund.lineup_refund.as_deref(), Some("rf_1"));

        let by_hand: Refund = serde_json::from_str(
            r#"{"id":"re_2","amount":5,"currency":"usd","status":"pending","payment_intent":null}"#,
        )
        .unwrap();
        let by_hand = by_hand.into_refund(&asked_for).unwrap();
        assert_eq!(by_hand.payment_id, asked_for);
        assert_eq!(by_hand.lineup_refund, None);
    }

    #[test]
    fn error_answers_are_read_from_json_or_text() {
        let json = StripeError::from_answer(
            400,
            br#"{"error":{"type":"invalid_request_error","message":"Bad request"}}"#,
        );
        assert_eq!(json.kind.as_deref(), Some("invalid_request_error"));
        assert_eq!(json.code, None);
        assert_eq!(json.message.as_deref(), Some("Bad request"));

        let text = StripeError::from_answer(
            500,
            b"500 Internal Server Error\n\nServer got itself in trouble",
        );
        assert_eq!(text.kind, None);
        assert!(text
            .message
            .unwrap()
            .starts_with("500 Internal Server Error"));
        assert_eq!(StripeError::from_answer(502, b"").message, None);
    }

    #[test]
    fn only_stripe_s_own_404_means_no_such_object() {
        let stripe = StripeError::from_answer(
            404,
            br#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent"}}"#,
        );
        assert!(stripe.is_missing_resource());
        let localstripe = StripeError::from_answer(
            404,
            br#"{"error":{"type":"invalid_request_error","message":"Not Found"}}"#,
        );
        assert!(localstripe.is_missing_resource());
        assert!(!StripeError::from_answer(404, b"404: Not Found").is_missing_resource());
        let other_code = StripeError::from_answer(
            404,
            br#"{"error":{"type":"invalid_request_error","code":"url_invalid"}}"#,
        );
        assert!(!other_code.is_missing_resource());
    }

    #[test]
    fn throttling_conflicts_and_server_errors_are_retryable_other_refusals_not() {
        for status in [409, 429, 500, 502, 503] {
            assert!(
                StripeError::from_answer(status, b"").is_retryable(),
                "{status}"
            );
        }
        for status in [400, 401, 402, 403, 404] {
            assert!(
                !StripeError::from_answer(status, b"").is_retryable(),
                "{status}"
            );
        }
    }
}
