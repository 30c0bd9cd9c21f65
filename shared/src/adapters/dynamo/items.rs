//! The items as stored, and their keys. Attribute names are snake_case; times are Unix
//! milliseconds (numbers, so conditions can compare them).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use crate::application::error::LineupError;
use crate::application::ports::ledger::{Order, OrderStatus};
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::ids::{CustomerId, EventId, OrderId, PaymentId, SeatId};
use crate::domain::seat::SeatStatus;

pub(crate) type Item = HashMap<String, AttributeValue>;

/// Pending orders are found by the expiry sweep through a sparse GSI, spread over this many keys.
pub const PENDING_SHARDS: u32 = 8;

/// The orders table's GSI of pending orders: key `pending_shard`, sort key `expires_at`.
pub const PENDING_INDEX: &str = "pending_by_expiry";

pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(crate) fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// FNV-1a: a stable hash (the same in every process and version), for shard numbers.
fn stable_hash(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// The prefixes of the orders table's record kinds (declared in `template.yaml`). Every key is built
/// by the functions below, and readers (the simulation's checks) use the same prefixes.
pub const ORDER_PREFIX: &str = "ORDER#";
/// A customer's open-hold lock: `HOLD#<eventId>#<customerId>`.
pub const HOLD_LOCK_PREFIX: &str = "HOLD#";
/// A webhook's stored first answer: `IDEMPOTENCY#<Idempotency-Key>`.
pub const IDEMPOTENCY_PREFIX: &str = "IDEMPOTENCY#";
/// A payment's record, which settles at most one order: `PAYMENT#<paymentId>`.
pub const PAYMENT_PREFIX: &str = "PAYMENT#";
/// A refund as recorded, by Lineup's refund id (`REFUND#<refund id>`).
pub const REFUND_PREFIX: &str = "REFUND#";
/// A customer's count of seats bought for an event: `TICKETS#<eventId>#<customerId>`.
pub const TICKETS_BOUGHT_PREFIX: &str = "TICKETS#";
/// The pending index's partition keys: `PENDING#<shard>`.
pub const PENDING_SHARD_PREFIX: &str = "PENDING#";

/// A seat's key in the seats table: `<eventId>#<seatId>`.
pub fn seat_pk(event: &EventId, seat: &SeatId) -> String {
    format!("{event}#{seat}")
}

pub(crate) fn seat_key(event: &EventId, seat: &SeatId) -> AttributeValue {
    s(seat_pk(event, seat))
}

/// An order's key in the orders table: `ORDER#<orderId>`.
pub fn order_pk(order: &OrderId) -> String {
    format!("{ORDER_PREFIX}{order}")
}

pub(crate) fn order_key(order: &OrderId) -> AttributeValue {
    s(order_pk(order))
}

/// The record that makes "one open hold per customer per event" a condition, not a query.
pub(crate) fn hold_lock_key(event: &EventId, customer: &CustomerId) -> AttributeValue {
    s(format!("{HOLD_LOCK_PREFIX}{event}#{customer}"))
}

pub(crate) fn idempotency_pk(key: &str) -> String {
    format!("{IDEMPOTENCY_PREFIX}{key}")
}

pub(crate) fn idempotency_key(key: &str) -> AttributeValue {
    s(idempotency_pk(key))
}

/// The record that makes "a payment settles at most one order, ever" a condition.
pub(crate) fn payment_pk(payment: &PaymentId) -> String {
    format!("{PAYMENT_PREFIX}{payment}")
}

pub(crate) fn payment_key(payment: &PaymentId) -> AttributeValue {
    s(payment_pk(payment))
}

/// The count of seats a customer bought for an event (`paid_seats`), which the ticket limit is
/// checked against inside the hold and the sale.
pub(crate) fn tickets_bought_key(event: &EventId, customer: &CustomerId) -> AttributeValue {
    s(format!("{TICKETS_BOUGHT_PREFIX}{event}#{customer}"))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SeatItem {
    pub pk: String,
    pub event_id: String,
    pub seat_id: String,
    pub section: String,
    pub row: String,
    pub price: i64,
    pub currency: String,
    pub status: SeatStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_expires_at: Option<u64>,
    /// The priority group the seat is set aside for, until `reserved_until` (Unix ms): the
    /// hold's condition reads them (docs/decisions/0032-seat-allocations.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_for: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_until: Option<u64>,
    /// The layout the seat was seeded with, and the seat's index in it: what the stream hands
    /// the availability projection.
    pub layout_version: String,
    pub layout_index: u32,
}

impl SeatItem {
    pub fn new(
        event: &EventId,
        seat: &crate::domain::seat::NewSeat,
        version: &str,
        index: u32,
        reservation: Option<&crate::domain::seat_allocation::SeatReservation>,
    ) -> Self {
        Self {
            pk: seat_pk(event, &seat.seat_id),
            event_id: event.as_str().to_owned(),
            seat_id: seat.seat_id.as_str().to_owned(),
            section: seat.section.clone(),
            row: seat.row.clone(),
            price: seat.price,
            currency: seat.currency.clone(),
            status: SeatStatus::Available,
            held_by: None,
            hold_expires_at: None,
            reserved_for: reservation.map(|reserved| reserved.group.as_str().to_owned()),
            reserved_until: reservation.map(|reserved| unix_millis(reserved.until)),
            layout_version: version.to_owned(),
            layout_index: index,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OrderItem {
    pub pk: String,
    pub order_id: String,
    pub event_id: String,
    pub customer_id: String,
    pub seat_ids: Vec<String>,
    pub amount: i64,
    pub currency: String,
    pub status: OrderStatus,
    pub created_at: u64,
    pub expires_at: u64,
    /// Present only while PENDING: the sparse index the expiry sweep reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    /// The event's per-customer ticket limit when the seats were held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket_limit: Option<u32>,
    /// The end of the admission the seats were held under, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_expires_at: Option<u64>,
    /// The provider payment checkout made for the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout_payment_id: Option<String>,
    /// When the event was cancelled (Unix milliseconds), for an order open or paid then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<u64>,
}

pub(crate) fn pending_shard(order: &OrderId) -> String {
    pending_shard_key(stable_hash(order.as_str()) % PENDING_SHARDS)
}

pub(crate) fn pending_shard_key(shard: u32) -> String {
    format!("{PENDING_SHARD_PREFIX}{shard}")
}

impl OrderItem {
    pub fn into_order(self) -> Result<Order, LineupError> {
        let unexpected = |_| LineupError::SeatStoreReply {
            operation: "order item",
            reply: self.pk.clone(),
        };
        Ok(Order {
            order_id: OrderId::parse(&self.order_id).map_err(unexpected)?,
            event_id: EventId::parse(&self.event_id).map_err(unexpected)?,
            customer_id: CustomerId::parse(&self.customer_id).map_err(unexpected)?,
            seat_ids: self
                .seat_ids
                .iter()
                .map(|seat| SeatId::parse(seat))
                .collect::<Result<_, _>>()
                .map_err(unexpected)?,
            amount: self.amount,
            currency: self.currency.clone(),
            status: self.status,
            created_at: from_unix_millis(self.created_at),
            expires_at: from_unix_millis(self.expires_at),
            ticket_limit: self.ticket_limit,
            admission_expires_at: self.admission_expires_at.map(from_unix_millis),
            checkout_payment: self
                .checkout_payment_id
                .as_deref()
                .map(PaymentId::parse)
                .transpose()
                .map_err(unexpected)?,
            event_cancelled_at: self.cancelled_at.map(from_unix_millis),
        })
    }
}

pub(crate) fn to_item<T: Serialize>(value: &T) -> Result<Item, LineupError> {
    serde_dynamo::to_item(value).map_err(super::error::malformed)
}

pub(crate) fn from_item<T: for<'de> Deserialize<'de>>(item: Item) -> Result<T, LineupError> {
    serde_dynamo::from_item(item).map_err(super::error::malformed)
}
