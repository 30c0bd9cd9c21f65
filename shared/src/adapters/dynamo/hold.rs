//! Holding seats (one transaction: every seat's conditional update, the order, the customer's
//! hold lock and, under a ticket limit, the check of the seats they bought) and releasing them.

use aws_sdk_dynamodb::types::{
    CancellationReason, ConditionCheck, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};

use crate::adapters::dynamo::items::{
    hold_lock_key, n, order_pk, pending_shard, s, seat_key, tickets_bought_key, to_item, OrderItem,
};
use crate::adapters::dynamo::{
    built, condition_failed, transact, DynamoLedger, TransactionOutcome,
};
use crate::application::error::{HoldRefused, LineupError};
use crate::application::ports::ledger::{HoldRequest, Order, OrderStatus};
use crate::domain::clock::unix_millis;
use crate::domain::ids::{CustomerId, EventId, GroupName, OrderId};
use crate::domain::seat::SeatStatus;

impl DynamoLedger {
    pub(crate) async fn hold_seats(&self, request: &HoldRequest) -> Result<Order, LineupError> {
        match self.try_hold(request).await {
            // The lock names an order that is no longer pending (a sale leaves its lock behind,
            // so that the sale stays one request): free it, and try once more.
            Err(LineupError::HoldRefused(HoldRefused::HoldExists {
                order_id: Some(lock_order),
            })) if self.settled(&lock_order).await? => {
                let lock_order =
                    OrderId::parse(&lock_order).map_err(|_| LineupError::SeatStoreReply {
                        operation: "hold",
                        reply: "a hold lock names a malformed order".to_owned(),
                    })?;
                self.free_hold_lock_of(&request.event, &request.customer, &lock_order)
                    .await?;
                self.try_hold(request).await
            }
            other => other,
        }
    }

    /// The order exists and is no longer pending.
    async fn settled(&self, order: &str) -> Result<bool, LineupError> {
        let Ok(order) = OrderId::parse(order) else {
            return Ok(false);
        };
        Ok(self
            .read_order(&order)
            .await?
            .is_some_and(|item| item.status != OrderStatus::Pending))
    }

    async fn try_hold(&self, request: &HoldRequest) -> Result<Order, LineupError> {
        let order_id = OrderId::generate();
        let now = unix_millis(request.now);
        let expires_at = unix_millis(request.now + self.hold_duration);

        // Per seat: taken only if AVAILABLE, or HELD by a hold that has lapsed (correctness never
        // waits for the expiry sweep), only at the price the customer was shown, and, if the
        // seat is set aside for a priority group (ADR 0032), only by a customer admitted through
        // that group's line or once the group's window has ended.
        let reserved_condition = match &request.group {
            Some(_) => {
                "(attribute_not_exists(reserved_until) OR reserved_until <= :now \
                 OR reserved_for = :group)"
            }
            None => "(attribute_not_exists(reserved_until) OR reserved_until <= :now)",
        };
        let seat_condition = format!(
            "attribute_exists(pk) AND price = :price AND \
             (#status = :available OR (#status = :held AND hold_expires_at < :now)) AND \
             {reserved_condition}"
        );
        let mut items: Vec<TransactWriteItem> = request
            .seats
            .iter()
            .map(|seat| {
                let update = Update::builder()
                    .table_name(&self.tables.seats)
                    .key("pk", seat_key(&request.event, &seat.seat_id))
                    .update_expression(
                        "SET #status = :held, held_by = :order, hold_expires_at = :expires",
                    )
                    .condition_expression(&seat_condition)
                    .set_expression_attribute_values(request.group.as_ref().map(|group| {
                        std::collections::HashMap::from([(":group".to_owned(), s(group.as_str()))])
                    }))
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":held", s(SeatStatus::Held.as_str()))
                    .expression_attribute_values(":available", s(SeatStatus::Available.as_str()))
                    .expression_attribute_values(":order", s(order_id.as_str()))
                    .expression_attribute_values(":expires", n(expires_at))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":price", n(seat.price))
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    );
                TransactWriteItem::builder()
                    .update(built(update.build()))
                    .build()
            })
            .collect();

        let order = OrderItem {
            pk: order_pk(&order_id),
            order_id: order_id.as_str().to_owned(),
            event_id: request.event.as_str().to_owned(),
            customer_id: request.customer.as_str().to_owned(),
            seat_ids: request
                .seats
                .iter()
                .map(|seat| seat.seat_id.as_str().to_owned())
                .collect(),
            amount: request.seats.iter().map(|seat| seat.price).sum(),
            currency: request
                .seats
                .first()
                .map(|seat| seat.currency.clone())
                .unwrap_or_default(),
            status: OrderStatus::Pending,
            created_at: now,
            expires_at,
            pending_shard: Some(pending_shard(&order_id)),
            payment_id: None,
            ticket_limit: request.ticket_limit,
            admission_expires_at: Some(unix_millis(request.admission_expires_at)),
            checkout_payment_id: None,
            cancelled_at: None,
        };
        let put_order = Put::builder()
            .table_name(&self.tables.orders)
            .set_item(Some(to_item(&order)?))
            .condition_expression("attribute_not_exists(pk)");
        items.push(
            TransactWriteItem::builder()
                .put(built(put_order.build()))
                .build(),
        );

        // One open hold per customer per event: the lock is free if absent or lapsed. So the
        // customer's other unlapsed holds count towards the ticket limit by not existing.
        let lock = Put::builder()
            .table_name(&self.tables.orders)
            .item("pk", hold_lock_key(&request.event, &request.customer))
            .item("order_id", s(order_id.as_str()))
            .item("expires_at", n(expires_at))
            .condition_expression("attribute_not_exists(pk) OR expires_at < :now")
            .expression_attribute_values(":now", n(now))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        items.push(
            TransactWriteItem::builder()
                .put(built(lock.build()))
                .build(),
        );
        let lock_index = items.len() - 1;

        // The ticket limit: the seats bought so far plus these, checked in the same transaction
        // (the sale adds to the same count), so two admissions racing cannot pass it.
        let limit_index = match request.ticket_limit {
            None => None,
            Some(limit) => {
                let wanted = request.seats.len() as u32;
                let Some(room) = limit.checked_sub(wanted) else {
                    return Err(HoldRefused::TicketLimitReached { limit }.into());
                };
                items.push(tickets_bought_check(
                    &self.tables.orders,
                    &request.event,
                    &request.customer,
                    room,
                ));
                Some(items.len() - 1)
            }
        };

        match transact(&self.client, items).await? {
            TransactionOutcome::Done(()) => order.into_order(),
            TransactionOutcome::Cancelled(reasons) => {
                let seat_reasons = &reasons[..request.seats.len().min(reasons.len())];
                let lock_reason = reasons.get(lock_index);
                if let Some(existing) = self
                    .same_hold_again(request, seat_reasons, lock_reason)
                    .await?
                {
                    return Ok(existing);
                }
                if let (Some(limit), Some(index)) = (request.ticket_limit, limit_index) {
                    if reasons.get(index).is_some_and(condition_failed) {
                        return Err(HoldRefused::TicketLimitReached { limit }.into());
                    }
                }
                // A seat whose price is not the one shown: the caller's catalogue is stale.
                let repriced: Vec<String> = request
                    .seats
                    .iter()
                    .zip(seat_reasons)
                    .filter(|(seat, reason)| {
                        condition_failed(reason)
                            && stored_price(reason).is_some_and(|price| price != seat.price)
                    })
                    .map(|(seat, _)| seat.seat_id.as_str().to_owned())
                    .collect();
                if !repriced.is_empty() {
                    return Err(HoldRefused::PriceChanged(repriced).into());
                }
                // A seat set aside for another group (its window not ended): not taken, not
                // for this customer yet.
                let reserved: Vec<String> = request
                    .seats
                    .iter()
                    .zip(seat_reasons)
                    .filter(|(_, reason)| {
                        condition_failed(reason)
                            && reserved_for_another(reason, request.group.as_ref(), now)
                    })
                    .map(|(seat, _)| seat.seat_id.as_str().to_owned())
                    .collect();
                if !reserved.is_empty() {
                    return Err(HoldRefused::SeatsReserved(reserved).into());
                }
                // Seats the customer's own open hold has are not "taken by someone": that case
                // is `hold_exists` below.
                let own_order = open_hold_order(lock_reason);
                let taken: Vec<String> = request
                    .seats
                    .iter()
                    .zip(seat_reasons)
                    .filter(|(_, reason)| {
                        condition_failed(reason)
                            && held_by(reason).is_none_or(|by| Some(by) != own_order)
                    })
                    .map(|(seat, _)| seat.seat_id.as_str().to_owned())
                    .collect();
                if !taken.is_empty() {
                    return Err(HoldRefused::SeatsUnavailable(taken).into());
                }
                if lock_reason.is_some_and(condition_failed) {
                    return Err(HoldRefused::HoldExists {
                        order_id: own_order.map(str::to_owned),
                    }
                    .into());
                }
                // Only the codes: the returned items name other customers' orders.
                let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("-")).collect();
                Err(LineupError::SeatStoreReply {
                    operation: "hold",
                    reply: codes.join(","),
                })
            }
        }
    }

    /// A hold that was already made for exactly this request: the customer's open hold holds
    /// exactly these seats. That is a retry after an answer was lost (a timeout after the write
    /// succeeded), so it gets the order back instead of a 409 naming the customer's own seats.
    async fn same_hold_again(
        &self,
        request: &HoldRequest,
        seat_reasons: &[CancellationReason],
        lock_reason: Option<&CancellationReason>,
    ) -> Result<Option<Order>, LineupError> {
        let Some(lock_order) = open_hold_order(lock_reason) else {
            return Ok(None);
        };
        let all_seats_are_its = seat_reasons.len() == request.seats.len()
            && seat_reasons
                .iter()
                .all(|reason| condition_failed(reason) && held_by(reason) == Some(lock_order));
        if !all_seats_are_its {
            return Ok(None);
        }
        let Ok(order_id) = OrderId::parse(lock_order) else {
            return Ok(None);
        };
        let Some(order) = self.read_order(&order_id).await? else {
            return Ok(None);
        };
        let order = order.into_order()?;
        let mut asked: Vec<&str> = request
            .seats
            .iter()
            .map(|seat| seat.seat_id.as_str())
            .collect();
        let mut held: Vec<&str> = order.seat_ids.iter().map(|seat| seat.as_str()).collect();
        asked.sort_unstable();
        held.sort_unstable();
        let same = asked == held
            && order.status == OrderStatus::Pending
            && order.customer_id == request.customer;
        Ok(same.then_some(order))
    }

    /// Release (of an order the caller has read and found to be theirs): the order goes PENDING →
    /// RELEASED (still conditioned on the owner, and on being pending), then
    /// each seat it still holds goes back to AVAILABLE, and the customer's hold lock is freed.
    /// Seats are released one by one after the order, each conditioned on still being held by
    /// this order: if the function stops half-way, the rest lapse on their own five minutes later.
    pub(crate) async fn release_order(&self, order: &Order) -> Result<(), LineupError> {
        let (order_id, customer) = (&order.order_id, &order.customer_id);
        let ended = self
            .end_pending_order(order_id, OrderStatus::Released, Some(customer), None)
            .await?;
        if !ended {
            return Err(LineupError::OrderNotPending);
        }
        // The order is RELEASED: its seats and its lock go back in parallel, each conditioned on
        // still being this order's (a seat re-taken after a lapse is left alone).
        let seats = futures::future::try_join_all(
            order
                .seat_ids
                .iter()
                .map(|seat| self.free_seat(&order.event_id, seat, order_id, None)),
        );
        let lock = self.free_hold_lock(order);
        futures::try_join!(seats, lock).map(|_| ())
    }
}

/// The ticket limit's check: the customer has bought at most `room` seats of the event so far.
pub(crate) fn tickets_bought_check(
    orders_table: &str,
    event: &EventId,
    customer: &CustomerId,
    room: u32,
) -> TransactWriteItem {
    let check = ConditionCheck::builder()
        .table_name(orders_table)
        .key("pk", tickets_bought_key(event, customer))
        .condition_expression("attribute_not_exists(paid_seats) OR paid_seats <= :room")
        .expression_attribute_values(":room", n(room));
    TransactWriteItem::builder()
        .condition_check(built(check.build()))
        .build()
}

/// The order of the customer's open hold, when the hold lock's condition is what failed.
fn open_hold_order(lock_reason: Option<&CancellationReason>) -> Option<&str> {
    lock_reason
        .filter(|reason| condition_failed(reason))
        .and_then(|reason| reason.item())
        .and_then(|lock| lock.get("order_id"))
        .and_then(|id| id.as_s().ok())
        .map(String::as_str)
}

/// The stored price of a seat whose condition failed.
fn stored_price(reason: &CancellationReason) -> Option<i64> {
    reason
        .item()
        .and_then(|seat| seat.get("price"))
        .and_then(|price| price.as_n().ok())
        .and_then(|price| price.parse().ok())
}

/// Whether a seat whose condition failed is set aside, at `now` (Unix ms), for another group than
/// `group` (from the item returned with the failure).
fn reserved_for_another(reason: &CancellationReason, group: Option<&GroupName>, now: u64) -> bool {
    let Some(seat) = reason.item() else {
        return false;
    };
    let until: Option<u64> = seat
        .get("reserved_until")
        .and_then(|until| until.as_n().ok())
        .and_then(|until| until.parse().ok());
    let for_group = seat.get("reserved_for").and_then(|by| by.as_s().ok());
    until.is_some_and(|until| until > now)
        && for_group.map(String::as_str) != group.map(GroupName::as_str)
}

/// The order holding a seat whose condition failed (from the item returned with the failure).
fn held_by(reason: &CancellationReason) -> Option<&str> {
    reason
        .item()
        .and_then(|seat| seat.get("held_by"))
        .and_then(|by| by.as_s().ok())
        .map(String::as_str)
}
