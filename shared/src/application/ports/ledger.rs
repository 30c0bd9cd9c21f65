//! The seat ledger: seats, holds, orders and payments, where "never a seat sold twice" is kept.
//! The ports here are what the use cases need; [`crate::adapters::dynamo::DynamoLedger`] implements them with
//! DynamoDB conditional writes and transactions (never a read-then-write).

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::application::error::{LineupError, PaymentRefused};
use crate::domain::ids::{CustomerId, EventId, GroupName, OrderId, PaymentId, SeatId};
use crate::domain::seat::Seat;

/// How long a hold keeps its seats.
pub const HOLD_DURATION: Duration = Duration::from_secs(5 * 60);
/// How many seats one hold may take.
pub const MAX_SEATS_PER_HOLD: usize = 4;
/// How much longer than [`HOLD_DURATION`] a hold is kept while its payment is in progress (3-D
/// Secure, a bank taking its time): a hold never lasts longer than the two together.
pub const PAYMENT_GRACE: Duration = Duration::from_secs(10 * 60);

/// Where an order stands; stored in the orders table as the serde name (`PENDING`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    /// Seats held, waiting for payment.
    Pending,
    /// A payment settled it: its seats are sold to it.
    Paid,
    /// The hold lapsed unpaid (set by the `expire` sweep).
    Expired,
    /// The customer gave the seats back.
    Released,
    /// Paid after the hold lapsed and a seat went to someone else (or the event was
    /// cancelled): the money is to go back.
    RefundRequired,
    /// The money went back (the `refund` function, once the provider said so).
    Refunded,
}

impl OrderStatus {
    /// The name stored in the orders table and shown in answers (the serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Paid => "PAID",
            Self::Expired => "EXPIRED",
            Self::Released => "RELEASED",
            Self::RefundRequired => "REFUND_REQUIRED",
            Self::Refunded => "REFUNDED",
        }
    }
}

/// An order: one hold of a customer's seats and, once paid, their sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// The order's UUID, made by the hold.
    pub order_id: OrderId,
    /// The event the seats are of.
    pub event_id: EventId,
    /// The customer who holds (or bought) the seats.
    pub customer_id: CustomerId,
    /// The seats held, 1 to [`MAX_SEATS_PER_HOLD`].
    pub seat_ids: Vec<SeatId>,
    /// The price of the seats together, in minor units of `currency`: what the payment must be.
    pub amount: i64,
    /// Three-letter currency code (ISO 4217) of `amount`.
    pub currency: String,
    /// Where the order stands.
    pub status: OrderStatus,
    /// When the seats were held.
    pub created_at: SystemTime,
    /// When the hold lapses unpaid: [`HOLD_DURATION`] after it was made (less under
    /// `lineup dev --hold-seconds`).
    pub expires_at: SystemTime,
    /// The event's per-customer ticket limit when the seats were held (checked again when the
    /// order is paid, so a late payment cannot pass it either).
    pub ticket_limit: Option<u32>,
    /// The end of the admission the seats were held under (its score in the active set): paying
    /// ends that admission, and only that one.
    pub admission_expires_at: Option<SystemTime>,
    /// The provider's payment checkout made for the order (`POST /orders/{orderId}/payment`):
    /// one per order, whatever the retries.
    pub checkout_payment: Option<PaymentId>,
    /// When its event was cancelled (`lineup event cancel`), if that happened while the order
    /// was not paid: it can no longer be paid, and a payment for it is refunded.
    pub event_cancelled_at: Option<SystemTime>,
}

impl Order {
    /// The seat ids as plain strings, as responses and events carry them.
    pub fn seat_id_strings(&self) -> Vec<String> {
        self.seat_ids
            .iter()
            .map(|seat| seat.as_str().to_owned())
            .collect()
    }
}

/// The order a payment is for, as Lineup writes it into the payment's metadata when it creates
/// the payment, and as the provider gives it back (signed) in its webhook: everything the
/// settlement transaction needs, so a sale is one DynamoDB request. The transaction checks each
/// field against the stored order; the metadata is never trusted alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderTerms {
    /// The order.
    pub order_id: OrderId,
    /// Its event.
    pub event_id: EventId,
    /// Its customer.
    pub customer_id: CustomerId,
    /// Its seats, in the order's order.
    pub seat_ids: Vec<SeatId>,
    /// Its price, in minor units of `currency` (ISO 4217).
    pub amount: i64,
    /// Its three-letter currency code, upper case.
    pub currency: String,
    /// The ticket limit its seats were held under.
    pub ticket_limit: Option<u32>,
    /// The end of the admission the seats were held under (paying ends that admission).
    pub admission_expires_at: Option<SystemTime>,
}

impl OrderTerms {
    /// The terms of a stored order.
    pub fn of(order: &Order) -> Self {
        Self {
            order_id: order.order_id.clone(),
            event_id: order.event_id.clone(),
            customer_id: order.customer_id.clone(),
            seat_ids: order.seat_ids.clone(),
            amount: order.amount,
            currency: order.currency.clone(),
            ticket_limit: order.ticket_limit,
            admission_expires_at: order.admission_expires_at,
        }
    }

    /// The seat ids as plain strings, as outbox events carry them.
    pub fn seat_id_strings(&self) -> Vec<String> {
        self.seat_ids
            .iter()
            .map(|seat| seat.as_str().to_owned())
            .collect()
    }
}

/// What the hold function asks for, already validated (1–4 distinct seats, prices known).
#[derive(Debug, Clone)]
pub struct HoldRequest {
    /// The event the seats are of.
    pub event: EventId,
    /// The signed-in caller, whose access token was checked.
    pub customer: CustomerId,
    /// The seats with the price the customer is shown (checked again inside the write).
    pub seats: Vec<Seat>,
    /// At most this many seats per customer for the event: the seats they bought plus this
    /// hold's. `None`: no limit.
    pub ticket_limit: Option<u32>,
    /// The priority group whose line admitted the customer (`None`: the event's own line): a
    /// seat set aside for another group, its window not ended, is refused
    /// ([`crate::domain::seat_allocation`]).
    pub group: Option<GroupName>,
    /// The end of the admission the hold is made under.
    pub admission_expires_at: SystemTime,
    /// The time of the request: the hold's lifetime counts from it.
    pub now: SystemTime,
}

/// Which order a payment is for, and how much of it the payment itself says.
#[derive(Debug, Clone)]
pub enum PaymentFor {
    /// Only the order's id (the generic webhook): the ledger reads the order first (a second
    /// DynamoDB request).
    Order(OrderId),
    /// The order's terms as the provider's signed payment carries them (Stripe's metadata): the
    /// sale is one DynamoDB request, its transaction checking every term against the stored
    /// order.
    Terms(OrderTerms),
}

impl PaymentFor {
    /// The order's id.
    pub fn order_id(&self) -> &OrderId {
        match self {
            Self::Order(order_id) => order_id,
            Self::Terms(terms) => &terms.order_id,
        }
    }
}

/// The payment provider's word that an order was paid, with the request's idempotency key.
#[derive(Debug, Clone)]
pub struct PaymentConfirmation {
    /// The order paid for.
    pub order: PaymentFor,
    /// The request's `Idempotency-Key` header: a retry with it gets the first answer.
    pub idempotency_key: String,
    /// A digest of the request (order and body): the same key with another request is refused.
    pub request_digest: String,
    /// The provider's id of the payment: it settles at most one order, ever.
    pub payment_id: PaymentId,
    /// What was paid, in minor units of `currency`: must equal the order's amount.
    pub amount: i64,
    /// Three-letter currency code (ISO 4217) of the payment.
    pub currency: String,
    /// When the webhook was received: the time the payment's records and outbox event carry.
    pub now: SystemTime,
}

/// The first answer to a confirmation, stored with its idempotency key and replayed after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmAnswer {
    /// The order the payment was for.
    pub order_id: String,
    /// What the payment made of it (`PAID`, or `REFUND_REQUIRED` for a late payment).
    pub status: OrderStatus,
}

/// What became of a payment, stored once per payment id (and per idempotency key) in the same
/// transaction as its effect, so every redelivery gets the same answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentOutcome {
    /// The order is paid and its seats sold.
    Paid,
    /// Paid too late (a seat went to someone else, or the customer's ticket limit was reached
    /// meanwhile): the order is REFUND_REQUIRED.
    RefundRequired,
    /// The order had already been settled by another payment: this one is to be refunded.
    OrderNotPayable,
    /// The amount or currency (or, for a payment that carries them, the order's other terms)
    /// did not match the order: to be refunded.
    AmountMismatch,
    /// No such order: to be refunded.
    UnknownOrder,
    /// The idempotency key came before with another payment: this one is refused, and refunded.
    KeyReused,
}

/// What one expiry sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    /// Pending orders whose hold lapsed, now EXPIRED.
    pub orders_expired: u64,
    /// Seats of those orders put back to AVAILABLE.
    pub seats_released: u64,
    /// Orders that could not be expired this time (logged; the next sweep tries again).
    pub orders_failed: u64,
}

/// The hold function's side of the ledger: hold seats, read an order, release it.
#[async_trait]
pub trait SeatLedger: Send + Sync {
    /// Holds all the seats or none, in one transaction. Fails with 409 `seats_unavailable`
    /// (naming the seats taken) or 409 `hold_exists`.
    async fn hold(&self, request: &HoldRequest) -> Result<Order, LineupError>;

    /// The order with this id, whoever's it is (the caller checks the owner); `None`: no such
    /// order.
    async fn order(&self, order: &OrderId) -> Result<Option<Order>, LineupError>;

    /// Gives a pending order's seats back (the order as just read: its owner and seats).
    /// 409 `order_not_pending` unless it is still pending.
    async fn release(&self, order: &Order) -> Result<(), LineupError>;
}

/// What a confirmation did: the order's terms, the answer, and whether this request settled it
/// (a replay or redelivery gets the first answer, `settled_now` false).
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// The order's terms the payment was applied with.
    pub terms: OrderTerms,
    /// The answer to the provider (the stored one, on a replay).
    pub answer: ConfirmAnswer,
    /// `true` only for the request that settled the order (only then does a PAID answer end the
    /// customer's admission).
    pub settled_now: bool,
}

impl Confirmation {
    /// The answer to the provider for an outcome, whoever stored it: 200 with the order's
    /// status, or the refusal (404 `not_found`, 409 `order_not_payable` or
    /// `idempotency_key_reused`, 422 `payment_mismatch`). Every refusal of a signed payment has
    /// recorded it for a refund.
    pub fn of(
        terms: OrderTerms,
        outcome: PaymentOutcome,
        settled_now: bool,
    ) -> Result<Self, LineupError> {
        let status = match outcome {
            PaymentOutcome::Paid => OrderStatus::Paid,
            PaymentOutcome::RefundRequired => OrderStatus::RefundRequired,
            PaymentOutcome::OrderNotPayable => return Err(PaymentRefused::OrderNotPayable.into()),
            PaymentOutcome::UnknownOrder => {
                return Err(LineupError::NotFound(
                    "no such order; this payment will be refunded",
                ))
            }
            PaymentOutcome::KeyReused => return Err(PaymentRefused::IdempotencyKeyReused.into()),
            PaymentOutcome::AmountMismatch => {
                return Err(LineupError::PaymentMismatch(
                    "the payment does not match the order; it will be refunded".to_owned(),
                ))
            }
        };
        let answer = ConfirmAnswer {
            order_id: terms.order_id.as_str().to_owned(),
            status,
        };
        Ok(Self {
            terms,
            answer,
            settled_now,
        })
    }
}

/// The per-customer ticket limit an event has now (operators may set or lower it mid-sale). A
/// sale is checked against the stricter of this and the limit its seats were held under, so
/// seats held before a limit was set cannot be paid past it later.
#[async_trait]
pub trait TicketLimits: Send + Sync {
    /// The event's limit of tickets per customer now; `None`: no limit.
    async fn ticket_limit(&self, event: &EventId) -> Result<Option<u32>, LineupError>;
}

/// The payment webhook's side of the ledger.
#[async_trait]
pub trait PaymentLedger: Send + Sync {
    /// Marks the order paid and its seats sold, once per idempotency key and payment, writing the
    /// outbox event in the same transaction, within the stricter of the order's ticket limit and
    /// the event's limit now (`limits`; if it cannot be read, the order's). Returns the first
    /// answer on a replay.
    async fn confirm(
        &self,
        payment: &PaymentConfirmation,
        limits: &dyn TicketLimits,
    ) -> Result<Confirmation, LineupError>;
}

/// What became of tying a provider payment to an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attached {
    /// The order now names this payment.
    Attached,
    /// The order already names another payment (a racing checkout made it first): that one.
    Other(PaymentId),
    /// The order is no longer pending (paid, released, expired): no payment is tied to it.
    NotPending,
}

/// The checkout function's side of the ledger.
#[async_trait]
pub trait CheckoutLedger: Send + Sync {
    /// Ties `payment` to the customer's pending order, once: a second payment is never tied.
    async fn attach_payment(
        &self,
        order: &Order,
        payment: &PaymentId,
        now: SystemTime,
    ) -> Result<Attached, LineupError>;
}

/// Orders whose payment is open: tied by checkout, the order still pending. What reconciliation
/// and the Stripe webhook's non-settling events work on.
#[async_trait]
pub trait OpenPayments: Send + Sync {
    /// Every pending order with a payment tied to it (of `event`, when given).
    async fn open_payments(&self, event: Option<&EventId>) -> Result<Vec<Order>, LineupError>;

    /// The order with this id, whoever's it is.
    async fn order(&self, order: &OrderId) -> Result<Option<Order>, LineupError>;

    /// Keeps the hold (the order, its seats, the customer's hold lock) until `until`, if the order
    /// is still pending with this payment and every seat still its own. `false`: it was not.
    async fn extend_hold(
        &self,
        order: &Order,
        payment: &PaymentId,
        until: SystemTime,
    ) -> Result<bool, LineupError>;

    /// Ends a pending order whose payment was cancelled (`status`: EXPIRED or RELEASED), its
    /// seats back on sale and the customer's hold lock freed. `false`: it was no longer
    /// pending with this payment.
    async fn end_unpaid(
        &self,
        order: &Order,
        payment: &PaymentId,
        status: OrderStatus,
    ) -> Result<bool, LineupError>;
}

/// The stricter of two ticket limits (`None`: no limit).
pub fn stricter_limit(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The `expire` function's side of the ledger: lapsed holds back on sale.
#[async_trait]
pub trait HoldSweeper: Send + Sync {
    /// Returns lapsed holds' seats to AVAILABLE and marks their orders EXPIRED.
    async fn expire_lapsed(&self, now: SystemTime) -> Result<SweepReport, LineupError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::seat::SeatStatus;

    #[test]
    fn the_stricter_limit_wins_and_none_means_no_limit() {
        assert_eq!(stricter_limit(None, None), None);
        assert_eq!(stricter_limit(Some(4), None), Some(4));
        assert_eq!(stricter_limit(None, Some(2)), Some(2));
        assert_eq!(stricter_limit(Some(4), Some(2)), Some(2));
    }

    #[test]
    fn status_names_are_the_serde_names() {
        for status in [SeatStatus::Available, SeatStatus::Held, SeatStatus::Sold] {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
        for status in [
            OrderStatus::Pending,
            OrderStatus::Paid,
            OrderStatus::Expired,
            OrderStatus::Released,
            OrderStatus::RefundRequired,
            OrderStatus::Refunded,
        ] {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
    }
}
