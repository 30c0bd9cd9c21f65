//! Refunds as Lineup records them: one refund record per `refund_required` event (keyed by its
//! outbox id, itself derived from the payment), so a refund is asked of the provider once
//! whatever the redeliveries, and never for more than was paid (the payment's record keeps what
//! was refunded of it, and a refund is only recorded within what is left).
//!
//! [`crate::adapters::dynamo::DynamoLedger`] keeps the records in the orders table (`REFUND#`);
//! the unit tests use the in-memory ledger.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::application::error::LineupError;
use crate::application::ports::payments::{ProviderRefund, RefundStatus};
use crate::domain::ids::{OrderId, PaymentId};

/// How long one `refund` invocation owns a refund while it asks the provider: another
/// invocation (a redelivered message) waits this long before it may take over.
pub const REFUND_LEASE: Duration = Duration::from_secs(60);

/// Where a refund record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundState {
    /// Recorded; the provider has not (knowingly) been asked yet.
    Creating,
    /// The provider has it; the money is on its way back.
    Pending,
    /// The money is back.
    Succeeded,
    /// The provider could not return it: an operator must act (alarmed).
    Failed,
}

impl RefundState {
    /// The state a provider's refund status puts the record in.
    pub const fn of(status: RefundStatus) -> Self {
        match status {
            RefundStatus::Succeeded => Self::Succeeded,
            RefundStatus::Failed | RefundStatus::Canceled => Self::Failed,
            RefundStatus::Pending | RefundStatus::RequiresAction => Self::Pending,
        }
    }

    /// Nothing more will happen to it.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Creating => "creating",
            Self::Pending => "pending",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }
}

/// What is to be refunded: a `refund_required` event, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRequest {
    /// Lineup's id of the refund: the event's outbox id (one per payment), also the provider's
    /// idempotency key.
    pub refund_id: String,
    /// The payment to refund.
    pub payment_id: PaymentId,
    /// The order it was for (it ends REFUNDED when the money is back, if it was
    /// REFUND_REQUIRED).
    pub order_id: OrderId,
    /// How much, in minor units of `currency`.
    pub amount: i64,
    /// Three-letter currency code, upper case.
    pub currency: String,
}

/// A refund as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRecord {
    /// What was asked.
    pub request: RefundRequest,
    /// Where it stands.
    pub state: RefundState,
    /// What is refunded: the request's amount, or less when the payment had less left.
    pub amount: i64,
    /// The provider's refund, once known.
    pub provider_refund_id: Option<String>,
}

/// What [`RefundLedger::record`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The record, new or as an earlier delivery left it.
    Refund(RefundRecord),
    /// Nothing of the payment is left to refund (refunded in full already, by another record):
    /// nothing is recorded.
    NothingLeft,
    /// No record of the payment: a refund Lineup cannot check against what was paid, so it is
    /// not made (alarmed; an operator looks).
    UnknownPayment,
}

/// The refund function's side of the ledger.
#[async_trait]
pub trait RefundLedger: Send + Sync {
    /// Records the refund once (a redelivery gets the record back as it is), within what is
    /// left of the payment, in one transaction with the payment's refunded total.
    async fn record(
        &self,
        request: &RefundRequest,
        now: SystemTime,
    ) -> Result<Recorded, LineupError>;

    /// The refund recorded under `refund_id`, if any.
    async fn refund(&self, refund_id: &str) -> Result<Option<RefundRecord>, LineupError>;

    /// Takes the refund for [`REFUND_LEASE`] if it is still `creating` and nobody holds it (or
    /// their lease ran out). `false`: another invocation holds it.
    async fn lease(&self, refund_id: &str, now: SystemTime) -> Result<bool, LineupError>;

    /// Stores what the provider said (its refund's id and status); when the money is back, the
    /// order, if it was REFUND_REQUIRED for this payment, becomes REFUNDED.
    async fn settle(
        &self,
        record: &RefundRecord,
        refund: &ProviderRefund,
        now: SystemTime,
    ) -> Result<RefundRecord, LineupError>;

    /// Every refund the provider has but has not finished (`pending`): reconciliation asks the
    /// provider again, so a lost `refund.updated` webhook does not leave an order short of
    /// REFUNDED for good.
    async fn pending_refunds(&self) -> Result<Vec<RefundRecord>, LineupError>;
}

/// Hands a message that could not be done now back to its queue, to come again after `wait`.
#[async_trait]
pub trait RetryLater: Send + Sync {
    /// Makes the message (its receipt handle) visible again after `wait`.
    async fn retry_after(&self, receipt_handle: &str, wait: Duration) -> Result<(), LineupError>;
}
