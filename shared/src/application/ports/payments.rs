//! The payment provider: where the money is. Lineup creates one payment per order (a Stripe
//! PaymentIntent) for the amount the server decides, cancels it when the hold ends unpaid,
//! refunds it when the money bought nothing, and fetches it by id when a webhook was lost.
//!
//! [`crate::adapters::stripe::StripeProvider`] implements the port over Stripe's REST API (and
//! the same API of `lineup dev`'s provider and of localstripe); the unit tests use
//! [`crate::application::fakes::payments::FakeProvider`].
//!
//! Every creating call carries an idempotency key Lineup derives from its own records (the order,
//! the refund), so a retried or raced call makes one payment or one refund at the provider.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::application::error::LineupError;
use crate::application::ports::ledger::OrderTerms;
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::ids::{CustomerId, EventId, OrderId, PaymentId, SeatId};

/// Where a provider payment stands: Stripe's PaymentIntent statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentStatus {
    /// Made, no card yet (or the last card was declined: the customer may try another).
    RequiresPaymentMethod,
    /// A card is attached; the payment waits to be confirmed.
    RequiresConfirmation,
    /// The customer's bank asks them something (3-D Secure): the money may still come.
    RequiresAction,
    /// The provider is taking the money (some methods take minutes or days).
    Processing,
    /// Authorised, to be captured (Lineup captures at once, so rarely seen).
    RequiresCapture,
    /// Cancelled: it will never take money.
    Canceled,
    /// The money is taken.
    Succeeded,
}

impl PaymentStatus {
    /// The money may still come without the customer starting again: a hold under such a
    /// payment is extended (up to a bound) rather than let lapse.
    pub const fn in_progress(self) -> bool {
        matches!(
            self,
            Self::RequiresAction | Self::Processing | Self::RequiresCapture
        )
    }

    /// The name Stripe uses (`requires_payment_method`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RequiresPaymentMethod => "requires_payment_method",
            Self::RequiresConfirmation => "requires_confirmation",
            Self::RequiresAction => "requires_action",
            Self::Processing => "processing",
            Self::RequiresCapture => "requires_capture",
            Self::Canceled => "canceled",
            Self::Succeeded => "succeeded",
        }
    }
}

/// The metadata keys [`OrderTerms`] is written under (Stripe: at most 50 keys of 40 characters,
/// values of 500).
pub mod metadata_keys {
    /// The order id.
    pub const ORDER: &str = "lineup_order";
    /// The event id.
    pub const EVENT: &str = "lineup_event";
    /// The customer id.
    pub const CUSTOMER: &str = "lineup_customer";
    /// The seat ids, comma-separated (seat ids never contain a comma).
    pub const SEATS: &str = "lineup_seats";
    /// The ticket limit, absent for none.
    pub const TICKET_LIMIT: &str = "lineup_ticket_limit";
    /// The admission's end, Unix milliseconds, absent for none.
    pub const ADMISSION_EXPIRES_AT: &str = "lineup_admission_expires_at";
    /// On a refund: Lineup's refund id (its idempotency key), to find it again.
    pub const REFUND: &str = "lineup_refund";
}

/// Metadata that is not a Lineup order's (missing or malformed keys): the payment was not made
/// by Lineup, or not in this shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the payment's metadata does not name a Lineup order ({0})")]
pub struct NotAnOrder(pub &'static str);

impl OrderTerms {
    /// The metadata pairs written on the provider's payment (the amount and currency are the
    /// payment's own fields).
    pub fn metadata(&self) -> Vec<(&'static str, String)> {
        let seats: Vec<&str> = self.seat_ids.iter().map(SeatId::as_str).collect();
        let mut pairs = vec![
            (metadata_keys::ORDER, self.order_id.as_str().to_owned()),
            (metadata_keys::EVENT, self.event_id.as_str().to_owned()),
            (
                metadata_keys::CUSTOMER,
                self.customer_id.as_str().to_owned(),
            ),
            (metadata_keys::SEATS, seats.join(",")),
        ];
        if let Some(limit) = self.ticket_limit {
            pairs.push((metadata_keys::TICKET_LIMIT, limit.to_string()));
        }
        if let Some(at) = self.admission_expires_at {
            pairs.push((
                metadata_keys::ADMISSION_EXPIRES_AT,
                unix_millis(at).to_string(),
            ));
        }
        pairs
    }

    /// The terms a payment's metadata names, with the payment's amount and currency.
    pub fn from_metadata(
        metadata: &HashMap<String, String>,
        amount: i64,
        currency: &str,
    ) -> Result<Self, NotAnOrder> {
        let field = |key: &'static str| metadata.get(key).ok_or(NotAnOrder(key));
        let order_id = OrderId::parse(field(metadata_keys::ORDER)?)
            .map_err(|_| NotAnOrder(metadata_keys::ORDER))?;
        let event_id = EventId::parse(field(metadata_keys::EVENT)?)
            .map_err(|_| NotAnOrder(metadata_keys::EVENT))?;
        let customer_id = CustomerId::parse(field(metadata_keys::CUSTOMER)?)
            .map_err(|_| NotAnOrder(metadata_keys::CUSTOMER))?;
        let seat_ids = field(metadata_keys::SEATS)?
            .split(',')
            .map(SeatId::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| NotAnOrder(metadata_keys::SEATS))?;
        let ticket_limit = match metadata.get(metadata_keys::TICKET_LIMIT) {
            None => None,
            Some(raw) => Some(
                raw.parse()
                    .map_err(|_| NotAnOrder(metadata_keys::TICKET_LIMIT))?,
            ),
        };
        let admission_expires_at = match metadata.get(metadata_keys::ADMISSION_EXPIRES_AT) {
            None => None,
            Some(raw) => {
                Some(from_unix_millis(raw.parse().map_err(|_| {
                    NotAnOrder(metadata_keys::ADMISSION_EXPIRES_AT)
                })?))
            }
        };
        if seat_ids.is_empty() || amount < 0 {
            return Err(NotAnOrder(metadata_keys::SEATS));
        }
        Ok(Self {
            order_id,
            event_id,
            customer_id,
            seat_ids,
            amount,
            currency: currency.to_ascii_uppercase(),
            ticket_limit,
            admission_expires_at,
        })
    }
}

/// What the customer's browser pays a payment with (Stripe's `client_secret`): given only to the
/// order's owner, never printed, even in a debug log.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientSecret(String);

impl From<String> for ClientSecret {
    fn from(secret: String) -> Self {
        Self(secret)
    }
}

impl std::ops::Deref for ClientSecret {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSecret(<redacted>)")
    }
}

/// A payment at the provider, as Lineup reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPayment {
    /// The provider's id (`pi_...`).
    pub id: PaymentId,
    /// Where it stands.
    pub status: PaymentStatus,
    /// What it takes, in minor units of `currency` (ISO 4217: converted from the provider's
    /// unit by the adapter).
    pub amount: i64,
    /// Three-letter currency code, upper case.
    pub currency: String,
    /// What the customer's browser needs to pay it (Stripe's `client_secret`); never logged.
    pub client_secret: Option<ClientSecret>,
    /// The metadata Lineup wrote on it.
    pub metadata: HashMap<String, String>,
    /// The provider's sentence about the last failed attempt (a declined card), if any.
    pub last_error: Option<String>,
}

impl ProviderPayment {
    /// The order the payment is for, from its metadata.
    pub fn terms(&self) -> Result<OrderTerms, NotAnOrder> {
        OrderTerms::from_metadata(&self.metadata, self.amount, &self.currency)
    }
}

/// What Lineup asks the provider to take for an order.
#[derive(Debug, Clone)]
pub struct NewPayment {
    /// The order, written into the payment's metadata.
    pub terms: OrderTerms,
    /// The key that makes a retried creation return the first payment
    /// (`lineup-checkout-<orderId>`).
    pub idempotency_key: String,
}

/// Where a refund stands: Stripe's refund statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    /// Asked for; the money is on its way back.
    Pending,
    /// The customer must do something (rare: some methods).
    RequiresAction,
    /// The money is back with the customer.
    Succeeded,
    /// The provider could not return it (an operator must act).
    Failed,
    /// Cancelled before it went through.
    Canceled,
}

impl RefundStatus {
    /// The name Stripe uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::RequiresAction => "requires_action",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
        }
    }
}

/// A refund at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRefund {
    /// The provider's id (`re_...`).
    pub id: String,
    /// The payment refunded.
    pub payment_id: PaymentId,
    /// How much, in minor units of `currency`.
    pub amount: i64,
    /// Three-letter currency code, upper case.
    pub currency: String,
    /// Where it stands.
    pub status: RefundStatus,
    /// Lineup's refund id written in its metadata (absent on refunds made by hand).
    pub lineup_refund: Option<String>,
}

/// What Lineup asks the provider to give back.
#[derive(Debug, Clone)]
pub struct NewRefund {
    /// The payment to refund.
    pub payment_id: PaymentId,
    /// How much, in minor units of `currency` (checked by Lineup against what was paid).
    pub amount: i64,
    /// The payment's currency, upper case.
    pub currency: String,
    /// Lineup's refund id: the idempotency key, and written in the refund's metadata.
    pub refund_id: String,
}

/// What became of a cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancellation {
    /// Cancelled (or it already was): it will never take money.
    Canceled(ProviderPayment),
    /// It cannot be cancelled: it succeeded first (the order must be settled) or is processing
    /// (the webhook or reconciliation settles it). The payment as it is now.
    TooLate(ProviderPayment),
}

/// How long an unanswered provider call may take before Lineup gives up on it (and answers
/// 503, or retries on the next run).
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// The payment provider's API, as Lineup uses it.
#[async_trait]
pub trait PaymentProvider: Send + Sync {
    /// Creates the payment for an order (or returns the one its idempotency key made before).
    async fn create_payment(&self, payment: &NewPayment) -> Result<ProviderPayment, LineupError>;

    /// The payment as it is now; `None`: the provider has no such payment.
    async fn payment(&self, id: &PaymentId) -> Result<Option<ProviderPayment>, LineupError>;

    /// Cancels a payment that has not taken money.
    async fn cancel_payment(&self, id: &PaymentId) -> Result<Cancellation, LineupError>;

    /// Refunds (part of) a payment, once per `refund_id`.
    async fn refund(&self, refund: &NewRefund) -> Result<ProviderRefund, LineupError>;

    /// The refunds of a payment (to find one whose answer was lost before making it again).
    async fn refunds_of(&self, payment: &PaymentId) -> Result<Vec<ProviderRefund>, LineupError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms() -> OrderTerms {
        OrderTerms {
            order_id: OrderId::parse("0b0c6f5e-4d9b-4a8e-9d61-1f2e3d4c5b6a").unwrap(),
            event_id: EventId::parse("demo").unwrap(),
            customer_id: CustomerId::parse("customer-1").unwrap(),
            seat_ids: vec![
                SeatId::parse("A-001").unwrap(),
                SeatId::parse("A-002").unwrap(),
            ],
            amount: 24_000,
            currency: "KRW".into(),
            ticket_limit: Some(4),
            admission_expires_at: Some(from_unix_millis(1_764_000_000_123)),
        }
    }

    #[test]
    fn terms_come_back_from_their_metadata_whole() {
        let metadata: HashMap<String, String> = terms()
            .metadata()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(
            OrderTerms::from_metadata(&metadata, 24_000, "krw").unwrap(),
            terms()
        );
    }

    #[test]
    fn metadata_that_is_not_an_order_is_named() {
        let mut metadata: HashMap<String, String> = terms()
            .metadata()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        metadata.remove(metadata_keys::CUSTOMER);
        assert_eq!(
            OrderTerms::from_metadata(&metadata, 24_000, "krw"),
            Err(NotAnOrder(metadata_keys::CUSTOMER))
        );
        metadata.insert(metadata_keys::CUSTOMER.into(), "customer-1".into());
        metadata.insert(metadata_keys::SEATS.into(), "A-001,,A-002".into());
        assert!(OrderTerms::from_metadata(&metadata, 24_000, "krw").is_err());
        metadata.insert(metadata_keys::SEATS.into(), "A-001".into());
        metadata.insert(metadata_keys::TICKET_LIMIT.into(), "many".into());
        assert!(OrderTerms::from_metadata(&metadata, 24_000, "krw").is_err());
    }

    #[test]
    fn only_payments_that_may_still_take_money_extend_a_hold() {
        assert!(PaymentStatus::Processing.in_progress());
        assert!(PaymentStatus::RequiresAction.in_progress());
        assert!(!PaymentStatus::RequiresPaymentMethod.in_progress());
        assert!(!PaymentStatus::Succeeded.in_progress());
        assert!(!PaymentStatus::Canceled.in_progress());
    }
}
