//! `MemoryLedger`: the seat ledger (seats, holds, orders, payments, the outbox, the expiry sweep)
//! in memory, so `hold`, `confirm`, `expire` and the seeding can be unit-tested without DynamoDB.
//! Each port call is one step under one mutex, and decides as the DynamoDB adapter's
//! conditional writes and transactions do (`adapters/dynamo/{hold,confirm,orders,seats,expire}.rs`):
//! the same conditions, the same order of reading a cancelled transaction's reasons, the same
//! errors and outcomes. Where the adapter makes several requests (release, the settlement's
//! tidying, the sweep), the fake makes them in one step: a played outage fails a whole call,
//! never half of one.
//!
//! It plays an outage ([`MemoryLedger::go_down`], [`MemoryLedger::fail_next`]: calls fail with
//! [`LineupError::Unavailable`] from [`Store::Seats`], changing nothing) and a hand-edited order
//! the adapter cannot read ([`MemoryLedger::corrupt_order`]). [`Outage`] is shared by the other
//! fakes of this folder that play outages the same way.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use crate::application::error::{HoldRefused, LineupError, PaymentRefused, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::ledger::{
    stricter_limit, Attached, CheckoutLedger, Confirmation, HoldRequest, HoldSweeper, OpenPayments,
    Order, OrderStatus, OrderTerms, PaymentConfirmation, PaymentFor, PaymentLedger, PaymentOutcome,
    SeatLedger, SweepReport, TicketLimits, HOLD_DURATION,
};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind};
use crate::application::ports::payments::ProviderRefund;
use crate::application::ports::refunds::{
    Recorded, RefundLedger, RefundRecord, RefundRequest, RefundState, REFUND_LEASE,
};
use crate::application::rebuild::SeatStates;
use crate::application::seeding::SeatWriter;
use crate::domain::clock::{from_unix_millis, rfc3339, unix_millis};
use crate::domain::ids::{CustomerId, EventId, GroupName, OrderId, PaymentId, SeatId};
use crate::domain::layout::SeatLayout;
use crate::domain::seat::{NewSeat, SeatStatus};
use crate::domain::seat_allocation::{SeatAllocations, SeatReservation};

/// A seat item (`SeatItem`): times in Unix milliseconds, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredSeat {
    pub(crate) section: String,
    pub(crate) row: String,
    pub(crate) price: i64,
    pub(crate) currency: String,
    pub(crate) status: SeatStatus,
    /// The order holding it, or (once SOLD) the order it was sold to.
    pub(crate) held_by: Option<String>,
    pub(crate) hold_expires_at_ms: Option<u64>,
    /// The group the seat is set aside for, and until when (Unix ms): `reserved_for` and
    /// `reserved_until`.
    pub(crate) reserved: Option<(String, u64)>,
    pub(crate) layout_version: String,
    pub(crate) layout_index: u32,
}

impl StoredSeat {
    fn new(seat: &NewSeat, version: &str, index: u32) -> Self {
        Self {
            section: seat.section.clone(),
            row: seat.row.clone(),
            price: seat.price,
            currency: seat.currency.clone(),
            status: SeatStatus::Available,
            held_by: None,
            hold_expires_at_ms: None,
            reserved: None,
            layout_version: version.to_owned(),
            layout_index: index,
        }
    }

    /// HELD by `order` → AVAILABLE (`free_seat`), only if lapsed before `lapsed_before` when
    /// given. `false` when the seat was no longer this order's.
    fn free(&mut self, order: &str, lapsed_before: Option<u64>) -> bool {
        let lapsed = lapsed_before.is_none_or(|before| {
            self.hold_expires_at_ms
                .is_some_and(|expires| expires < before)
        });
        if self.status == SeatStatus::Held && self.held_by.as_deref() == Some(order) && lapsed {
            self.status = SeatStatus::Available;
            self.held_by = None;
            self.hold_expires_at_ms = None;
            return true;
        }
        false
    }
}

/// An order item: the order, and what the settlement adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredOrder {
    pub(crate) order: Order,
    pub(crate) created_at_ms: u64,
    pub(crate) payment_id: Option<String>,
    pub(crate) settled_at_ms: Option<u64>,
    /// Hand-edited into a shape the adapter cannot read (`into_order` fails).
    pub(crate) corrupt: bool,
}

/// The customer's hold lock (`HOLD#<event>#<customer>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HoldLock {
    pub(crate) order_id: String,
    pub(crate) expires_at_ms: u64,
}

/// An idempotency record (`IDEMPOTENCY#<key>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdempotencyRecord {
    pub(crate) order_id: String,
    pub(crate) request_digest: String,
    pub(crate) outcome: PaymentOutcome,
}

/// A payment record (`PAYMENT#<paymentId>`): a payment settles at most one order, ever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PaymentRecord {
    pub(crate) order_id: String,
    pub(crate) amount: i64,
    pub(crate) currency: String,
    pub(crate) outcome: PaymentOutcome,
    /// How much of it refunds have taken.
    pub(crate) refunded: i64,
}

/// `REFUND#<refund id>`: a refund as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredRefund {
    pub(crate) record: RefundRecord,
    pub(crate) lease_until_ms: Option<u64>,
}

/// Everything the three tables hold. Compared whole to show a refused request changed nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LedgerTables {
    pub(crate) seats: BTreeMap<(EventId, SeatId), StoredSeat>,
    pub(crate) orders: BTreeMap<String, StoredOrder>,
    pub(crate) hold_locks: BTreeMap<(EventId, CustomerId), HoldLock>,
    /// `TICKETS#<event>#<customer>`: `paid_seats`.
    pub(crate) paid_seats: BTreeMap<(EventId, CustomerId), u32>,
    pub(crate) idempotency: BTreeMap<String, IdempotencyRecord>,
    pub(crate) payments: BTreeMap<String, PaymentRecord>,
    /// `REFUND#`: refunds by Lineup's refund id.
    pub(crate) refunds: BTreeMap<String, StoredRefund>,
    /// The outbox table, in the order written (its key is `outbox_id`).
    pub(crate) outbox: Vec<OutboxEvent>,
}

/// The answer the adapter reads off an order item (`into_order`).
fn readable(stored: &StoredOrder) -> Result<Order, LineupError> {
    if stored.corrupt {
        return Err(LineupError::SeatStoreReply {
            operation: "order item",
            reply: format!("ORDER#{}", stored.order.order_id),
        });
    }
    Ok(stored.order.clone())
}

impl LedgerTables {
    fn read_order(&self, order: &OrderId) -> Result<Option<Order>, LineupError> {
        self.orders.get(order.as_str()).map(readable).transpose()
    }

    fn has_outbox(&self, outbox_id: &str) -> bool {
        self.outbox.iter().any(|event| event.outbox_id == outbox_id)
    }

    /// PENDING → `status` (`end_pending_order`): `false` unless pending (and the customer's, and
    /// lapsed before `lapsed_before`, when given).
    fn end_pending_order(
        &mut self,
        order: &OrderId,
        status: OrderStatus,
        customer: Option<&CustomerId>,
        lapsed_before: Option<u64>,
    ) -> bool {
        let Some(stored) = self.orders.get_mut(order.as_str()) else {
            return false;
        };
        let order = &mut stored.order;
        let ends = order.status == OrderStatus::Pending
            && customer.is_none_or(|customer| &order.customer_id == customer)
            && lapsed_before.is_none_or(|before| unix_millis(order.expires_at) < before);
        if ends {
            order.status = status;
        }
        ends
    }

    fn free_seat(
        &mut self,
        event: &EventId,
        seat: &SeatId,
        order: &OrderId,
        lapsed_before: Option<u64>,
    ) -> bool {
        self.seats
            .get_mut(&(event.clone(), seat.clone()))
            .is_some_and(|stored| stored.free(order.as_str(), lapsed_before))
    }

    /// Deletes the customer's hold lock if it is still this order's.
    fn free_hold_lock(&mut self, order: &Order) {
        self.free_hold_lock_of(&order.event_id, &order.customer_id, &order.order_id);
    }

    fn free_hold_lock_of(&mut self, event: &EventId, customer: &CustomerId, order: &OrderId) {
        let key = (event.clone(), customer.clone());
        if self
            .hold_locks
            .get(&key)
            .is_some_and(|lock| lock.order_id == order.as_str())
        {
            self.hold_locks.remove(&key);
        }
    }

    fn write_new_seat(
        &mut self,
        event: &EventId,
        seat: &NewSeat,
        version: &str,
        index: u32,
        reservation: Option<&SeatReservation>,
    ) {
        let mut stored = StoredSeat::new(seat, version, index);
        stored.reserved = reservation.map(|reserved| {
            (
                reserved.group.as_str().to_owned(),
                unix_millis(reserved.until),
            )
        });
        self.seats
            .insert((event.clone(), seat.seat_id.clone()), stored);
    }
}

/// Why one seat's condition failed in a hold's transaction, with the old item returned
/// (`ReturnValuesOnConditionCheckFailure::AllOld`; nothing for a seat not stored).
struct SeatFailure {
    stored_price: Option<i64>,
    held_by: Option<String>,
    /// Set aside, at the time of the hold, for another group than the customer's.
    reserved_for_another: bool,
}

/// What a settlement transaction's conditions found, item by item, in the adapter's order:
/// `[idempotency, payment, order, (Paid: seats bought, seats...), outbox]`.
#[derive(Debug, Default)]
struct Reasons {
    idempotency: bool,
    payment: bool,
    order: bool,
    /// Any item after the order failed (the seats bought, a seat, the outbox event).
    rest: bool,
}

impl Reasons {
    fn any(&self) -> bool {
        self.idempotency || self.payment || self.order || self.rest
    }

    /// The codes, as the adapter reports an unexpected cancellation.
    fn codes(&self) -> String {
        let code = |failed: bool| {
            if failed {
                "ConditionalCheckFailed"
            } else {
                "None"
            }
        };
        [self.idempotency, self.payment, self.order, self.rest]
            .map(code)
            .join(",")
    }
}

#[derive(Default)]
struct State {
    tables: LedgerTables,
    outage: Outage,
}

/// The ledger in memory. Every port call counts in [`MemoryLedger::calls`].
pub(crate) struct MemoryLedger {
    state: Mutex<State>,
    hold_duration: Duration,
}

impl Default for MemoryLedger {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            hold_duration: HOLD_DURATION,
        }
    }
}

impl MemoryLedger {
    /// A ledger whose holds last [`HOLD_DURATION`], as deployed.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn enter(&self, operation: &'static str) -> Result<MutexGuard<'_, State>, LineupError> {
        let mut state = self.lock();
        state
            .outage
            .enter(Store::Seats, "memory ledger", operation)?;
        Ok(state)
    }

    // --- Setting up ---

    /// Writes the layout's seats, all AVAILABLE, as a first seeding does (no call counted, no
    /// outage).
    pub(crate) fn seed(&self, event: &EventId, layout: &SeatLayout) {
        let mut state = self.lock();
        for (index, seat) in layout.seats() {
            state
                .tables
                .write_new_seat(event, &seat, layout.version(), index, None);
        }
    }

    /// Sets the customer's count of seats bought for the event (`paid_seats`).
    pub(crate) fn set_paid_seats(&self, event: &EventId, customer: &CustomerId, seats: u32) {
        self.lock()
            .tables
            .paid_seats
            .insert((event.clone(), customer.clone()), seats);
    }

    /// The order's event was cancelled while it was open (`lineup event cancel` marks it).
    pub(crate) fn cancel_event_of(&self, order: &OrderId, at: SystemTime) {
        if let Some(stored) = self.lock().tables.orders.get_mut(order.as_str()) {
            stored.order.event_cancelled_at = Some(at);
        }
    }

    // --- Playing faults ---

    /// The order's item becomes unreadable, as after a bad hand edit: reading it fails with
    /// `SeatStoreReply` (500), and the sweep counts it as failed.
    pub(crate) fn corrupt_order(&self, order: &OrderId) {
        if let Some(stored) = self.lock().tables.orders.get_mut(order.as_str()) {
            stored.corrupt = true;
        }
    }

    // --- Looking inside ---

    /// Everything stored, to compare before and after.
    pub(crate) fn snapshot(&self) -> LedgerTables {
        self.lock().tables.clone()
    }

    pub(crate) fn seat(&self, event: &EventId, seat: &SeatId) -> Option<StoredSeat> {
        self.lock()
            .tables
            .seats
            .get(&(event.clone(), seat.clone()))
            .cloned()
    }

    pub(crate) fn seat_status(&self, event: &EventId, seat: &SeatId) -> Option<SeatStatus> {
        self.seat(event, seat).map(|seat| seat.status)
    }

    /// The seats of the event in `status`, in seat id order.
    pub(crate) fn seats_in(&self, event: &EventId, status: SeatStatus) -> Vec<SeatId> {
        self.lock()
            .tables
            .seats
            .iter()
            .filter(|((of, _), seat)| of == event && seat.status == status)
            .map(|((_, id), _)| id.clone())
            .collect()
    }

    /// Every order, as stored (whatever its status).
    pub(crate) fn orders(&self) -> Vec<Order> {
        self.lock()
            .tables
            .orders
            .values()
            .map(|stored| stored.order.clone())
            .collect()
    }

    pub(crate) fn stored_order(&self, order: &OrderId) -> Option<StoredOrder> {
        self.lock().tables.orders.get(order.as_str()).cloned()
    }

    pub(crate) fn hold_lock(&self, event: &EventId, customer: &CustomerId) -> Option<HoldLock> {
        self.lock()
            .tables
            .hold_locks
            .get(&(event.clone(), customer.clone()))
            .cloned()
    }

    pub(crate) fn paid_seats(&self, event: &EventId, customer: &CustomerId) -> Option<u32> {
        self.lock()
            .tables
            .paid_seats
            .get(&(event.clone(), customer.clone()))
            .copied()
    }

    /// Payment records by payment id.
    pub(crate) fn payments(&self) -> BTreeMap<String, PaymentRecord> {
        self.lock().tables.payments.clone()
    }

    /// Idempotency records by key.
    pub(crate) fn idempotency_records(&self) -> BTreeMap<String, IdempotencyRecord> {
        self.lock().tables.idempotency.clone()
    }

    /// The outbox events written, in order.
    pub(crate) fn outbox(&self) -> Vec<OutboxEvent> {
        self.lock().tables.outbox.clone()
    }
}

// --- Holding ---

impl LedgerTables {
    /// The hold's transaction (`hold_seats`), after the limit's pre-check.
    fn hold(
        &mut self,
        request: &HoldRequest,
        hold_duration: Duration,
    ) -> Result<Order, LineupError> {
        let mut distinct = HashSet::new();
        if !request
            .seats
            .iter()
            .all(|seat| distinct.insert(&seat.seat_id))
        {
            // DynamoDB refuses two operations on one item in a transaction (ValidationException).
            return Err(LineupError::Failed {
                store: Store::Seats,
                source: "Transaction request cannot include multiple operations on one item".into(),
            });
        }
        let order_id = OrderId::generate();
        let now = unix_millis(request.now);
        let expires = unix_millis(request.now + hold_duration);

        // Per seat: stored, at the price shown, AVAILABLE or HELD by a lapsed hold.
        let seat_reasons: Vec<Option<SeatFailure>> = request
            .seats
            .iter()
            .map(|seat| {
                let Some(stored) = self
                    .seats
                    .get(&(request.event.clone(), seat.seat_id.clone()))
                else {
                    return Some(SeatFailure {
                        stored_price: None,
                        held_by: None,
                        reserved_for_another: false,
                    });
                };
                let free = stored.status == SeatStatus::Available
                    || (stored.status == SeatStatus::Held
                        && stored
                            .hold_expires_at_ms
                            .is_some_and(|expires| expires < now));
                // Set aside for a group (ADR 0032): only its members, until its window ends.
                let reserved_for_another =
                    stored.reserved.as_ref().is_some_and(|(group, until)| {
                        *until > now && request.group.as_ref().map(GroupName::as_str) != Some(group)
                    });
                (stored.price != seat.price || !free || reserved_for_another).then(|| SeatFailure {
                    stored_price: Some(stored.price),
                    held_by: stored.held_by.clone(),
                    reserved_for_another,
                })
            })
            .collect();
        let lock_key = (request.event.clone(), request.customer.clone());
        // The lock: absent or lapsed; when it fails, the old item names the open hold's order.
        let lock_failure: Option<HoldLock> = self
            .hold_locks
            .get(&lock_key)
            .filter(|lock| lock.expires_at_ms >= now)
            .cloned();
        let limit_failed = request.ticket_limit.is_some_and(|limit| {
            let room = limit.saturating_sub(request.seats.len() as u32);
            self.paid_seats
                .get(&lock_key)
                .is_some_and(|paid| *paid > room)
        });

        let cancelled =
            seat_reasons.iter().any(Option::is_some) || lock_failure.is_some() || limit_failed;
        if !cancelled {
            let order = Order {
                order_id: order_id.clone(),
                event_id: request.event.clone(),
                customer_id: request.customer.clone(),
                seat_ids: request
                    .seats
                    .iter()
                    .map(|seat| seat.seat_id.clone())
                    .collect(),
                amount: request.seats.iter().map(|seat| seat.price).sum(),
                currency: request
                    .seats
                    .first()
                    .map(|seat| seat.currency.clone())
                    .unwrap_or_default(),
                status: OrderStatus::Pending,
                // As stored: milliseconds.
                created_at: from_unix_millis(now),
                expires_at: from_unix_millis(expires),
                ticket_limit: request.ticket_limit,
                admission_expires_at: Some(from_unix_millis(unix_millis(
                    request.admission_expires_at,
                ))),
                checkout_payment: None,
                event_cancelled_at: None,
            };
            for seat in &request.seats {
                let stored = self
                    .seats
                    .get_mut(&(request.event.clone(), seat.seat_id.clone()))
                    .expect("its condition passed: it is stored");
                stored.status = SeatStatus::Held;
                stored.held_by = Some(order_id.as_str().to_owned());
                stored.hold_expires_at_ms = Some(expires);
            }
            self.orders.insert(
                order_id.as_str().to_owned(),
                StoredOrder {
                    order: order.clone(),
                    created_at_ms: now,
                    payment_id: None,
                    settled_at_ms: None,
                    corrupt: false,
                },
            );
            self.hold_locks.insert(
                lock_key,
                HoldLock {
                    order_id: order_id.as_str().to_owned(),
                    expires_at_ms: expires,
                },
            );
            return Ok(order);
        }

        // Cancelled: the reasons read in the adapter's order.
        let own_order: Option<String> = lock_failure.map(|lock| lock.order_id);
        if let Some(existing) =
            self.same_hold_again(request, &seat_reasons, own_order.as_deref())?
        {
            return Ok(existing);
        }
        if let (Some(limit), true) = (request.ticket_limit, limit_failed) {
            return Err(HoldRefused::TicketLimitReached { limit }.into());
        }
        let failed = || {
            request
                .seats
                .iter()
                .zip(&seat_reasons)
                .filter_map(|(seat, reason)| reason.as_ref().map(|reason| (seat, reason)))
        };
        let repriced: Vec<String> = failed()
            .filter(|(seat, reason)| reason.stored_price.is_some_and(|price| price != seat.price))
            .map(|(seat, _)| seat.seat_id.as_str().to_owned())
            .collect();
        if !repriced.is_empty() {
            return Err(HoldRefused::PriceChanged(repriced).into());
        }
        let reserved: Vec<String> = failed()
            .filter(|(_, reason)| reason.reserved_for_another)
            .map(|(seat, _)| seat.seat_id.as_str().to_owned())
            .collect();
        if !reserved.is_empty() {
            return Err(HoldRefused::SeatsReserved(reserved).into());
        }
        let taken: Vec<String> = failed()
            .filter(|(_, reason)| {
                reason
                    .held_by
                    .as_deref()
                    .is_none_or(|by| Some(by) != own_order.as_deref())
            })
            .map(|(seat, _)| seat.seat_id.as_str().to_owned())
            .collect();
        if !taken.is_empty() {
            return Err(HoldRefused::SeatsUnavailable(taken).into());
        }
        if own_order.is_some() {
            return Err(HoldRefused::HoldExists {
                order_id: own_order,
            }
            .into());
        }
        Err(LineupError::SeatStoreReply {
            operation: "hold",
            reply: "a condition failed that the hold does not read".to_owned(),
        })
    }

    /// The customer's open hold holds exactly these seats: a retry after a lost answer gets it.
    fn same_hold_again(
        &self,
        request: &HoldRequest,
        seat_reasons: &[Option<SeatFailure>],
        lock_order: Option<&str>,
    ) -> Result<Option<Order>, LineupError> {
        let Some(lock_order) = lock_order else {
            return Ok(None);
        };
        let all_seats_are_its = seat_reasons.iter().all(|reason| {
            reason
                .as_ref()
                .is_some_and(|reason| reason.held_by.as_deref() == Some(lock_order))
        });
        if !all_seats_are_its {
            return Ok(None);
        }
        let Ok(order_id) = OrderId::parse(lock_order) else {
            return Ok(None);
        };
        let Some(order) = self.read_order(&order_id)? else {
            return Ok(None);
        };
        let mut asked: Vec<&str> = request
            .seats
            .iter()
            .map(|seat| seat.seat_id.as_str())
            .collect();
        let mut held: Vec<&str> = order.seat_ids.iter().map(SeatId::as_str).collect();
        asked.sort_unstable();
        held.sort_unstable();
        let same = asked == held
            && order.status == OrderStatus::Pending
            && order.customer_id == request.customer;
        Ok(same.then_some(order))
    }
}

/// Outages are played on the whole fake.
impl Faulty for MemoryLedger {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

#[async_trait]
impl SeatLedger for MemoryLedger {
    async fn hold(&self, request: &HoldRequest) -> Result<Order, LineupError> {
        // Checked before the transaction is sent: no store call.
        if let Some(limit) = request.ticket_limit {
            if limit < request.seats.len() as u32 {
                return Err(HoldRefused::TicketLimitReached { limit }.into());
            }
        }
        let mut state = self.enter("hold")?;
        match state.tables.hold(request, self.hold_duration) {
            // As the adapter: a lock left by a settled order is freed, and the hold tried again.
            Err(LineupError::HoldRefused(HoldRefused::HoldExists {
                order_id: Some(lock_order),
            })) if state
                .tables
                .orders
                .get(&lock_order)
                .is_some_and(|stored| stored.order.status != OrderStatus::Pending) =>
            {
                let lock_order = OrderId::parse(&lock_order).expect("the fake stores valid ids");
                state
                    .tables
                    .free_hold_lock_of(&request.event, &request.customer, &lock_order);
                state.tables.hold(request, self.hold_duration)
            }
            other => other,
        }
    }

    async fn order(&self, order: &OrderId) -> Result<Option<Order>, LineupError> {
        let state = self.enter("order")?;
        state.tables.read_order(order)
    }

    /// The order (conditioned on its owner and on being pending) RELEASED, then its seats still
    /// held by it AVAILABLE, and its hold lock freed.
    async fn release(&self, order: &Order) -> Result<(), LineupError> {
        let mut state = self.enter("release")?;
        let tables = &mut state.tables;
        if !tables.end_pending_order(
            &order.order_id,
            OrderStatus::Released,
            Some(&order.customer_id),
            None,
        ) {
            return Err(LineupError::OrderNotPending);
        }
        for seat in &order.seat_ids {
            tables.free_seat(&order.event_id, seat, &order.order_id, None);
        }
        tables.free_hold_lock(order);
        Ok(())
    }
}

// --- Paying ---

/// The outbox id of a payment's refund event (as the adapter derives it).
fn refund_outbox_id(payment: &PaymentConfirmation) -> String {
    let digest = Sha256::digest(payment.payment_id.as_str().as_bytes());
    format!("refund-{}", hex::encode(&digest[..20]))
}

fn ticket_outbox_id(terms: &OrderTerms) -> String {
    format!("ticket-{}", terms.order_id)
}

fn outbox_event(
    kind: OutboxEventKind,
    outbox_id: String,
    payment: &PaymentConfirmation,
    terms: &OrderTerms,
    seat_ids: Vec<String>,
    amount: i64,
    currency: &str,
) -> OutboxEvent {
    OutboxEvent {
        outbox_id,
        kind,
        event_id: terms.event_id.as_str().to_owned(),
        order_id: terms.order_id.as_str().to_owned(),
        customer_id: terms.customer_id.as_str().to_owned(),
        seat_ids,
        amount,
        currency: currency.to_owned(),
        payment_id: Some(payment.payment_id.as_str().to_owned()),
        occurred_at: rfc3339(payment.now),
    }
}

/// The terms recorded for a payment whose order does not exist (as the adapter writes them).
fn unknown_order_terms(payment: &PaymentConfirmation, order_id: &OrderId) -> OrderTerms {
    OrderTerms {
        order_id: order_id.clone(),
        event_id: EventId::parse("unknown").expect("a valid id"),
        customer_id: CustomerId::parse("unknown").expect("a valid id"),
        seat_ids: Vec::new(),
        amount: payment.amount,
        currency: payment.currency.clone(),
        ticket_limit: None,
        admission_expires_at: None,
    }
}

impl LedgerTables {
    /// The idempotency and payment records, each written only if new: whether each exists.
    fn payment_records_exist(&self, payment: &PaymentConfirmation) -> (bool, bool) {
        (
            self.idempotency.contains_key(&payment.idempotency_key),
            self.payments.contains_key(payment.payment_id.as_str()),
        )
    }

    fn write_payment_record(
        &mut self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        outcome: PaymentOutcome,
    ) {
        self.payments.insert(
            payment.payment_id.as_str().to_owned(),
            PaymentRecord {
                order_id: terms.order_id.as_str().to_owned(),
                amount: payment.amount,
                currency: payment.currency.clone(),
                outcome,
                refunded: 0,
            },
        );
    }

    fn write_payment_records(
        &mut self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        outcome: PaymentOutcome,
    ) {
        self.idempotency.insert(
            payment.idempotency_key.clone(),
            IdempotencyRecord {
                order_id: terms.order_id.as_str().to_owned(),
                request_digest: payment.request_digest.clone(),
                outcome,
            },
        );
        self.write_payment_record(payment, terms, outcome);
    }

    /// The stored order's terms match these (the admission is not a condition).
    fn terms_match(&self, terms: &OrderTerms) -> Option<bool> {
        let stored = self.orders.get(terms.order_id.as_str())?;
        let stored = OrderTerms::of(&stored.order);
        Some(
            OrderTerms {
                admission_expires_at: terms.admission_expires_at,
                ..stored
            } == *terms,
        )
    }

    /// The order is open, with its terms, and its event was cancelled (`why_unpayable`).
    fn event_cancelled(&self, terms: &OrderTerms) -> bool {
        self.terms_match(terms) == Some(true)
            && self
                .orders
                .get(terms.order_id.as_str())
                .is_some_and(|stored| {
                    stored.order.event_cancelled_at.is_some()
                        && matches!(
                            stored.order.status,
                            OrderStatus::Pending | OrderStatus::Expired | OrderStatus::Released
                        )
                })
    }

    /// A settlement's conditions (`settlement_items`), item by item.
    fn settlement_reasons(
        &self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        limit_now: Option<u32>,
        outcome: PaymentOutcome,
    ) -> Reasons {
        let (idempotency, used) = self.payment_records_exist(payment);
        // Payable while PENDING, or lapsed/released (a late payment still counts), and every
        // term as stored.
        let payable = self
            .orders
            .get(terms.order_id.as_str())
            .is_some_and(|stored| {
                matches!(
                    stored.order.status,
                    OrderStatus::Pending | OrderStatus::Expired | OrderStatus::Released
                ) && stored.order.amount == payment.amount
                    && stored.order.currency == payment.currency
                    // A cancelled event's order is not sold; the refund takes it.
                    && (outcome != PaymentOutcome::Paid || stored.order.event_cancelled_at.is_none())
            })
            && self.terms_match(terms) == Some(true);
        let rest = match outcome {
            PaymentOutcome::Paid => {
                let seats = terms.seat_ids.len() as u32;
                let paid = self
                    .paid_seats
                    .get(&(terms.event_id.clone(), terms.customer_id.clone()))
                    .copied();
                let within_limit = limit_now.is_none_or(|limit| {
                    let room = i64::from(limit) - i64::from(seats);
                    // A negative room fails on any count, even none.
                    match paid {
                        None => room >= 0,
                        Some(paid) => i64::from(paid) <= room,
                    }
                });
                let seats_sellable = terms.seat_ids.iter().all(|seat| {
                    self.seats
                        .get(&(terms.event_id.clone(), seat.clone()))
                        .is_some_and(|stored| {
                            (stored.status == SeatStatus::Held
                                && stored.held_by.as_deref() == Some(terms.order_id.as_str()))
                                || stored.status == SeatStatus::Available
                        })
                });
                !within_limit || !seats_sellable || self.has_outbox(&ticket_outbox_id(terms))
            }
            _ => self.has_outbox(&refund_outbox_id(payment)),
        };
        Reasons {
            idempotency,
            payment: used,
            order: !payable,
            rest,
        }
    }

    /// Writes a settlement whose conditions all passed, then tidies up (`after_settlement`).
    fn settle(
        &mut self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        outcome: PaymentOutcome,
    ) {
        let now = unix_millis(payment.now);
        self.write_payment_records(payment, terms, outcome);
        let stored = self
            .orders
            .get_mut(terms.order_id.as_str())
            .expect("its condition passed: it is stored");
        stored.order.status = match outcome {
            PaymentOutcome::Paid => OrderStatus::Paid,
            _ => OrderStatus::RefundRequired,
        };
        stored.payment_id = Some(payment.payment_id.as_str().to_owned());
        stored.settled_at_ms = Some(now);
        if outcome == PaymentOutcome::Paid {
            *self
                .paid_seats
                .entry((terms.event_id.clone(), terms.customer_id.clone()))
                .or_default() += terms.seat_ids.len() as u32;
            for seat in &terms.seat_ids {
                let stored = self
                    .seats
                    .get_mut(&(terms.event_id.clone(), seat.clone()))
                    .expect("its condition passed: it is stored");
                stored.status = SeatStatus::Sold;
                stored.held_by = Some(terms.order_id.as_str().to_owned());
                stored.hold_expires_at_ms = None;
            }
            self.outbox.push(outbox_event(
                OutboxEventKind::TicketIssued,
                ticket_outbox_id(terms),
                payment,
                terms,
                terms.seat_id_strings(),
                terms.amount,
                &terms.currency,
            ));
        } else {
            self.outbox.push(outbox_event(
                OutboxEventKind::RefundRequired,
                refund_outbox_id(payment),
                payment,
                terms,
                terms.seat_id_strings(),
                terms.amount,
                &payment.currency,
            ));
        }
        // The tidying, after a refund-required settlement only: the seats go back on sale now,
        // and the hold lock goes (a sale leaves its lock to the customer's next hold).
        if outcome == PaymentOutcome::RefundRequired {
            for seat in &terms.seat_ids {
                self.free_seat(&terms.event_id, seat, &terms.order_id, None);
            }
            self.free_hold_lock_of(&terms.event_id, &terms.customer_id, &terms.order_id);
        }
    }

    /// When the idempotency or payment record already existed: the first answer, or a refusal
    /// (a reused key with a new payment records that payment for a refund first).
    fn seen_before(
        &mut self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        reasons: &Reasons,
    ) -> Option<Result<Confirmation, LineupError>> {
        if reasons.idempotency {
            let record = &self.idempotency[&payment.idempotency_key];
            if record.request_digest != payment.request_digest {
                if !self.payments.contains_key(payment.payment_id.as_str()) {
                    self.write_payment_record(payment, terms, PaymentOutcome::KeyReused);
                    self.outbox.push(outbox_event(
                        OutboxEventKind::RefundRequired,
                        refund_outbox_id(payment),
                        payment,
                        terms,
                        Vec::new(),
                        payment.amount,
                        &payment.currency,
                    ));
                }
                return Some(Err(PaymentRefused::IdempotencyKeyReused.into()));
            }
            return Some(Confirmation::of(terms.clone(), record.outcome, false));
        }
        if reasons.payment {
            let record = &self.payments[payment.payment_id.as_str()];
            let redelivery = record.order_id == terms.order_id.as_str()
                && record.amount == payment.amount
                && record.currency == payment.currency;
            if !redelivery {
                return Some(Err(PaymentRefused::PaymentAlreadyUsed.into()));
            }
            return Some(Confirmation::of(terms.clone(), record.outcome, false));
        }
        None
    }

    /// Money that cannot buy the order: its records and a `refund_required` event, together.
    fn record_unusable_payment(
        &mut self,
        payment: &PaymentConfirmation,
        terms: &OrderTerms,
        outcome: PaymentOutcome,
    ) -> Result<Confirmation, LineupError> {
        let (idempotency, used) = self.payment_records_exist(payment);
        let reasons = Reasons {
            idempotency,
            payment: used,
            order: false,
            rest: self.has_outbox(&refund_outbox_id(payment)),
        };
        if !reasons.any() {
            self.write_payment_records(payment, terms, outcome);
            self.outbox.push(outbox_event(
                OutboxEventKind::RefundRequired,
                refund_outbox_id(payment),
                payment,
                terms,
                Vec::new(),
                payment.amount,
                &payment.currency,
            ));
            return Confirmation::of(terms.clone(), outcome, true);
        }
        self.seen_before(payment, terms, &reasons)
            .unwrap_or_else(|| {
                Err(LineupError::SeatStoreReply {
                    operation: "confirm",
                    reply: reasons.codes(),
                })
            })
    }

    /// `confirm_payment` from the amount check on (the terms known, the limit applied).
    fn confirm(
        &mut self,
        payment: &PaymentConfirmation,
        terms: OrderTerms,
        limit_now: Option<u32>,
    ) -> Result<Confirmation, LineupError> {
        if terms.amount != payment.amount || terms.currency != payment.currency {
            return self.record_unusable_payment(payment, &terms, PaymentOutcome::AmountMismatch);
        }
        for outcome in [PaymentOutcome::Paid, PaymentOutcome::RefundRequired] {
            let reasons = self.settlement_reasons(payment, &terms, limit_now, outcome);
            if !reasons.any() {
                self.settle(payment, &terms, outcome);
                return Confirmation::of(terms, outcome, true);
            }
            if let Some(seen) = self.seen_before(payment, &terms, &reasons) {
                return seen;
            }
            if reasons.order {
                if outcome == PaymentOutcome::Paid && self.event_cancelled(&terms) {
                    continue;
                }
                let outcome = match self.terms_match(&terms) {
                    None => PaymentOutcome::UnknownOrder,
                    Some(true) => PaymentOutcome::OrderNotPayable,
                    Some(false) => PaymentOutcome::AmountMismatch,
                };
                return self.record_unusable_payment(payment, &terms, outcome);
            }
            let too_late = outcome == PaymentOutcome::Paid && reasons.rest;
            if !too_late {
                return Err(LineupError::SeatStoreReply {
                    operation: "confirm",
                    reply: reasons.codes(),
                });
            }
        }
        Err(LineupError::SeatStoreReply {
            operation: "confirm",
            reply: "refund transaction cancelled on items it does not touch".to_owned(),
        })
    }
}

#[async_trait]
impl PaymentLedger for MemoryLedger {
    async fn confirm(
        &self,
        payment: &PaymentConfirmation,
        limits: &dyn TicketLimits,
    ) -> Result<Confirmation, LineupError> {
        let terms = match &payment.order {
            PaymentFor::Order(order_id) => {
                let state = self.enter("confirm")?;
                match state.tables.read_order(order_id)? {
                    Some(order) => OrderTerms::of(&order),
                    None => {
                        drop(state);
                        let terms = unknown_order_terms(payment, order_id);
                        return self.lock().tables.record_unusable_payment(
                            payment,
                            &terms,
                            PaymentOutcome::UnknownOrder,
                        );
                    }
                }
            }
            PaymentFor::Terms(terms) => {
                drop(self.enter("confirm")?);
                terms.clone()
            }
        };
        // The limit in force now counts too; if it cannot be read, the order's own limit holds.
        let limit_now = match limits.ticket_limit(&terms.event_id).await {
            Ok(now) => stricter_limit(terms.ticket_limit, now),
            Err(error) => {
                tracing::warn!(order = %terms.order_id, error = %error, "could not read the event's ticket limit; using the order's");
                terms.ticket_limit
            }
        };
        self.lock().tables.confirm(payment, terms, limit_now)
    }
}

// --- Checkout ---

#[async_trait]
impl CheckoutLedger for MemoryLedger {
    async fn attach_payment(
        &self,
        order: &Order,
        payment: &PaymentId,
        _now: SystemTime,
    ) -> Result<Attached, LineupError> {
        let mut state = self.enter("attach_payment")?;
        let Some(stored) = state.tables.orders.get_mut(order.order_id.as_str()) else {
            return Ok(Attached::NotPending);
        };
        let stored = &mut stored.order;
        if let Some(other) = &stored.checkout_payment {
            return Ok(if other == payment {
                Attached::Attached
            } else {
                Attached::Other(other.clone())
            });
        }
        if stored.status != OrderStatus::Pending || stored.customer_id != order.customer_id {
            return Ok(Attached::NotPending);
        }
        stored.checkout_payment = Some(payment.clone());
        Ok(Attached::Attached)
    }
}

// --- Open payments ---

#[async_trait]
impl OpenPayments for MemoryLedger {
    async fn open_payments(&self, event: Option<&EventId>) -> Result<Vec<Order>, LineupError> {
        let state = self.enter("open_payments")?;
        Ok(state
            .tables
            .orders
            .values()
            .map(|stored| &stored.order)
            .filter(|order| {
                order.status == OrderStatus::Pending
                    && order.checkout_payment.is_some()
                    && event.is_none_or(|event| &order.event_id == event)
            })
            .cloned()
            .collect())
    }

    async fn order(&self, order: &OrderId) -> Result<Option<Order>, LineupError> {
        let state = self.enter("order")?;
        state.tables.read_order(order)
    }

    async fn extend_hold(
        &self,
        order: &Order,
        payment: &PaymentId,
        until: SystemTime,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("extend_hold")?;
        let tables = &mut state.tables;
        let until_ms = unix_millis(until);
        let order_ok = tables
            .orders
            .get(order.order_id.as_str())
            .is_some_and(|stored| {
                stored.order.status == OrderStatus::Pending
                    && stored.order.checkout_payment.as_ref() == Some(payment)
                    && unix_millis(stored.order.expires_at) < until_ms
            });
        let seats_ok = order.seat_ids.iter().all(|seat| {
            tables
                .seats
                .get(&(order.event_id.clone(), seat.clone()))
                .is_some_and(|stored| {
                    stored.status == SeatStatus::Held
                        && stored.held_by.as_deref() == Some(order.order_id.as_str())
                })
        });
        let lock_key = (order.event_id.clone(), order.customer_id.clone());
        let lock_ok = tables
            .hold_locks
            .get(&lock_key)
            .is_some_and(|lock| lock.order_id == order.order_id.as_str());
        if !(order_ok && seats_ok && lock_ok) {
            return Ok(false);
        }
        if let Some(stored) = tables.orders.get_mut(order.order_id.as_str()) {
            stored.order.expires_at = from_unix_millis(until_ms);
        }
        for seat in &order.seat_ids {
            if let Some(stored) = tables
                .seats
                .get_mut(&(order.event_id.clone(), seat.clone()))
            {
                stored.hold_expires_at_ms = Some(until_ms);
            }
        }
        if let Some(lock) = tables.hold_locks.get_mut(&lock_key) {
            lock.expires_at_ms = until_ms;
        }
        Ok(true)
    }

    async fn end_unpaid(
        &self,
        order: &Order,
        payment: &PaymentId,
        status: OrderStatus,
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("end_unpaid")?;
        let tables = &mut state.tables;
        let ours = tables
            .orders
            .get(order.order_id.as_str())
            .is_some_and(|stored| {
                stored.order.status == OrderStatus::Pending
                    && stored.order.checkout_payment.as_ref() == Some(payment)
            });
        if !ours || !tables.end_pending_order(&order.order_id, status, None, None) {
            return Ok(false);
        }
        for seat in &order.seat_ids {
            tables.free_seat(&order.event_id, seat, &order.order_id, None);
        }
        tables.free_hold_lock(order);
        Ok(true)
    }
}

// --- Refunds ---

#[async_trait]
impl RefundLedger for MemoryLedger {
    async fn record(
        &self,
        request: &RefundRequest,
        _now: SystemTime,
    ) -> Result<Recorded, LineupError> {
        let mut state = self.enter("record")?;
        let tables = &mut state.tables;
        if let Some(stored) = tables.refunds.get(&request.refund_id) {
            return Ok(Recorded::Refund(stored.record.clone()));
        }
        let Some(payment) = tables.payments.get_mut(request.payment_id.as_str()) else {
            return Ok(Recorded::UnknownPayment);
        };
        // Never more than is left of what was paid.
        let amount = request.amount.min(payment.amount - payment.refunded);
        if amount <= 0 {
            return Ok(Recorded::NothingLeft);
        }
        payment.refunded += amount;
        let record = RefundRecord {
            request: request.clone(),
            state: RefundState::Creating,
            amount,
            provider_refund_id: None,
        };
        tables.refunds.insert(
            request.refund_id.clone(),
            StoredRefund {
                record: record.clone(),
                lease_until_ms: None,
            },
        );
        Ok(Recorded::Refund(record))
    }

    async fn refund(&self, refund_id: &str) -> Result<Option<RefundRecord>, LineupError> {
        let state = self.enter("refund")?;
        Ok(state
            .tables
            .refunds
            .get(refund_id)
            .map(|stored| stored.record.clone()))
    }

    async fn lease(&self, refund_id: &str, now: SystemTime) -> Result<bool, LineupError> {
        let mut state = self.enter("lease")?;
        let now = unix_millis(now);
        let Some(stored) = state.tables.refunds.get_mut(refund_id) else {
            return Ok(false);
        };
        let free = stored.record.state == RefundState::Creating
            && stored.lease_until_ms.is_none_or(|until| until < now);
        if free {
            stored.lease_until_ms = Some(now + REFUND_LEASE.as_millis() as u64);
        }
        Ok(free)
    }

    async fn settle(
        &self,
        record: &RefundRecord,
        refund: &ProviderRefund,
        _now: SystemTime,
    ) -> Result<RefundRecord, LineupError> {
        let mut state = self.enter("settle")?;
        let tables = &mut state.tables;
        let Some(stored) = tables.refunds.get_mut(&record.request.refund_id) else {
            return Err(LineupError::SeatStoreReply {
                operation: "refund",
                reply: "no such refund record".to_owned(),
            });
        };
        // A final state stays (a late, older status never undoes it).
        if !stored.record.state.is_final() {
            stored.record.state = RefundState::of(refund.status);
        }
        stored.record.provider_refund_id = Some(refund.id.clone());
        stored.lease_until_ms = None;
        let settled = stored.record.clone();
        if settled.state == RefundState::Succeeded {
            if let Some(order) = tables.orders.get_mut(record.request.order_id.as_str()) {
                let ours = order.order.status == OrderStatus::RefundRequired
                    && order.payment_id.as_deref() == Some(record.request.payment_id.as_str());
                if ours {
                    order.order.status = OrderStatus::Refunded;
                }
            }
        }
        Ok(settled)
    }

    async fn pending_refunds(&self) -> Result<Vec<RefundRecord>, LineupError> {
        let state = self.enter("pending_refunds")?;
        Ok(state
            .tables
            .refunds
            .values()
            .filter(|stored| stored.record.state == RefundState::Pending)
            .map(|stored| stored.record.clone())
            .collect())
    }
}

// --- The sweep ---

#[async_trait]
impl HoldSweeper for MemoryLedger {
    /// Lapsed PENDING orders EXPIRED, then their seats still held by them (and lapsed)
    /// AVAILABLE. An order that cannot be read is counted as failed and left for the next sweep.
    async fn expire_lapsed(&self, now: SystemTime) -> Result<SweepReport, LineupError> {
        let mut state = self.enter("expire_lapsed")?;
        let tables = &mut state.tables;
        let now_ms = unix_millis(now);
        let lapsed: Vec<StoredOrder> = tables
            .orders
            .values()
            // An order with a payment is reconciliation's (its payment is cancelled first).
            .filter(|stored| {
                stored.order.status == OrderStatus::Pending
                    && unix_millis(stored.order.expires_at) < now_ms
                    && stored.order.checkout_payment.is_none()
            })
            .cloned()
            .collect();
        let mut report = SweepReport::default();
        for stored in lapsed {
            let order = match readable(&stored) {
                Ok(order) => order,
                Err(error) => {
                    report.orders_failed += 1;
                    tracing::warn!(error = %error, "could not expire an order");
                    continue;
                }
            };
            if !tables.end_pending_order(&order.order_id, OrderStatus::Expired, None, Some(now_ms))
            {
                continue;
            }
            report.orders_expired += 1;
            for seat in &order.seat_ids {
                if tables.free_seat(&order.event_id, seat, &order.order_id, Some(now_ms)) {
                    report.seats_released += 1;
                }
            }
        }
        Ok(report)
    }
}

// --- Seeding and the rebuild ---

#[async_trait]
impl SeatStates for MemoryLedger {
    /// Every seat of the layout in layout order; a seat not stored counts as held.
    async fn seat_states(
        &self,
        event: &EventId,
        layout: &SeatLayout,
    ) -> Result<Vec<SeatStatus>, LineupError> {
        let state = self.enter("seat_states")?;
        Ok(layout
            .seats()
            .map(|(_, seat)| {
                state
                    .tables
                    .seats
                    .get(&(event.clone(), seat.seat_id))
                    .map_or(SeatStatus::Held, |stored| stored.status)
            })
            .collect())
    }
}

#[async_trait]
impl SeatWriter for MemoryLedger {
    async fn write_new_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("write_new_seats")?;
        for (index, seat) in layout.seats() {
            let reservation = allocations.section(&seat.section);
            state
                .tables
                .write_new_seat(event, &seat, layout.version(), index, reservation);
        }
        Ok(())
    }

    async fn reserve_seats(
        &self,
        event: &EventId,
        seats: &[SeatId],
        reservation: Option<&SeatReservation>,
    ) -> Result<usize, LineupError> {
        let mut state = self.enter("reserve_seats")?;
        let mut written = 0;
        for seat in seats {
            if let Some(stored) = state.tables.seats.get_mut(&(event.clone(), seat.clone())) {
                stored.reserved = reservation.map(|reserved| {
                    (
                        reserved.group.as_str().to_owned(),
                        unix_millis(reserved.until),
                    )
                });
                written += 1;
            }
        }
        Ok(written)
    }

    /// Each seat put AVAILABLE unless in use (held by an unlapsed hold, or sold): a seat in use
    /// keeps its status, gets its new place, and is returned (in layout order).
    async fn seed_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
        now: SystemTime,
    ) -> Result<Vec<SeatId>, LineupError> {
        let mut state = self.enter("seed_seats")?;
        let now = unix_millis(now);
        let version = layout.version();
        let mut in_use = Vec::new();
        for (index, seat) in layout.seats() {
            let key = (event.clone(), seat.seat_id.clone());
            match state.tables.seats.get_mut(&key) {
                Some(stored)
                    if stored.status == SeatStatus::Sold
                        || (stored.status == SeatStatus::Held
                            && stored
                                .hold_expires_at_ms
                                .is_none_or(|expires| expires >= now)) =>
                {
                    stored.layout_version = version.to_owned();
                    stored.layout_index = index;
                    stored.reserved = allocations.section(&seat.section).map(|reserved| {
                        (
                            reserved.group.as_str().to_owned(),
                            unix_millis(reserved.until),
                        )
                    });
                    in_use.push(seat.seat_id);
                }
                _ => {
                    let reservation = allocations.section(&seat.section);
                    state
                        .tables
                        .write_new_seat(event, &seat, version, index, reservation)
                }
            }
        }
        Ok(in_use)
    }
}
