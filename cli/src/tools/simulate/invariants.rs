//! The promises a sale must keep, checked against what was stored and delivered: no seat sold
//! twice, the sold seats are exactly the paid orders' seats, one ticket per paid order, every
//! paid amount is the seats' prices, the customers' own view agrees, holds hold their own seats
//! and nothing once they end; and that the run itself was sound (something sold, no customer
//! met an answer the contract does not allow...), without which the rest proves nothing. Then
//! the queue's own promise, checked against what the customers were told: numbers were called
//! in order. Pure functions over plain data, so each check can be tested with a hand-made broken
//! case.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::SystemTime;

use lineup::application::ports::ledger::OrderStatus;
use lineup::application::ports::outbox::OutboxEventKind;
use lineup::domain::seat::SeatStatus;
use serde::Serialize;

use super::customer::{CustomerReport, Outcome, SeenOrder};
use super::desk::DeskCounts;
use super::payments::{self, PaymentFacts};
use super::stored::{StoredOrder, StoredSeat};
use crate::dev::ticket_desk::Ticket;

/// One invariant's verdict, with a line saying what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvariantCheck {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// Everything the checks look at.
pub struct Observed<'a> {
    pub seats: &'a [StoredSeat],
    pub orders: &'a [StoredOrder],
    pub desk: &'a [Ticket],
    /// The seeded price of every seat.
    pub prices: &'a HashMap<String, i64>,
    /// Orders whose final status customers saw (PAID, REFUND_REQUIRED, REFUNDED or RELEASED).
    pub seen: &'a [SeenOrder],
    pub run: &'a RunFacts,
    pub queue: &'a QueueFacts,
    /// The provider's side of the event's payments, and how the wait for them went.
    pub payments: &'a PaymentFacts,
}

/// What the customers were told of the queue: their numbers, the statuses they read, and claims
/// answered otherwise than a called number's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueFacts {
    /// (customer, queue number) of every customer who learnt one.
    pub numbers: Vec<(String, u64)>,
    /// Distinct statuses read (by `updatedAt` and `servingUpTo`), all customers together.
    pub statuses_read: usize,
    /// The highest `servingUpTo` read.
    pub highest_serving: u64,
    /// Customers who read a lower `servingUpTo` after a higher one: (customer, before, after),
    /// the first time for each.
    pub went_back: Vec<(String, u64, u64)>,
    /// Customers whose number the status showed called: (customer, number).
    pub called: Vec<(String, u64)>,
    /// Claims answered `waiting` after the status showed the number called: (customer, number,
    /// how many times).
    pub passed_over: Vec<(String, u64, u32)>,
    /// Pre-queue entrants the published draw did not list, whom the origin still said were in
    /// the pre-queue: (customer, how many times).
    pub left_out_of_draw: Vec<(String, u32)>,
    /// Customers a restore put back at the front of the queue after admission had passed their
    /// number, whose number no status published before the restore showed called: (customer,
    /// number, claims answered `waiting` since). Not passed over (see `Requeued`).
    pub requeued: Vec<(String, u64, u32)>,
}

impl QueueFacts {
    pub fn of(customers: &[CustomerReport]) -> Self {
        let mut facts = Self::default();
        let mut distinct: HashSet<(SystemTime, u64)> = HashSet::new();
        for customer in customers {
            let id = &customer.customer_id;
            let wait = &customer.wait;
            distinct.extend(wait.statuses.iter().copied());
            // In the order this customer read them: one customer's reads follow each other, so
            // a step back is the status going back, whatever the clocks behind `updatedAt`.
            let serving = wait.statuses.iter().map(|(_, serving)| *serving);
            if let Some((before, after)) = serving
                .clone()
                .zip(serving.skip(1))
                .find(|(before, after)| after < before)
            {
                facts.went_back.push((id.clone(), before, after));
            }
            if wait.left_out_of_draw > 0 {
                facts
                    .left_out_of_draw
                    .push((id.clone(), wait.left_out_of_draw));
            }
            let Some(number) = wait.number else {
                continue;
            };
            facts.numbers.push((id.clone(), number));
            if wait.called_at.is_some() {
                facts.called.push((id.clone(), number));
            }
            if wait.passed_over > 0 {
                facts
                    .passed_over
                    .push((id.clone(), number, wait.passed_over));
            }
        }
        // A customer a restore put back in the queue after admission passed its number: if its
        // number had been called before the loss, the restore had to admit it, and every
        // `waiting` since (the restore's own poll included) is a called number told to wait.
        // Otherwise admission passed it while it was on its way back, which the frontier after a
        // restore (`admit_tick.lua`) exists to prevent: still a number called out of order, so it
        // counts as passed over too (and is listed apart in the report).
        for customer in customers {
            let Some(requeued) = &customer.wait.requeued else {
                continue;
            };
            let called_before = distinct
                .iter()
                .filter(|(updated_at, _)| *updated_at < requeued.restored_at)
                .map(|(_, serving)| *serving)
                .max()
                .unwrap_or(0);
            let id = customer.customer_id.clone();
            if requeued.number <= called_before {
                facts
                    .passed_over
                    .push((id, requeued.number, requeued.told_to_wait + 1));
            } else if customer.outcome == Outcome::PassedOver {
                // At the front, yet never admitted in all its claims.
                facts
                    .passed_over
                    .push((id, requeued.number, requeued.told_to_wait));
            } else {
                facts
                    .passed_over
                    .push((id.clone(), requeued.number, requeued.told_to_wait.max(1)));
                facts
                    .requeued
                    .push((id, requeued.number, requeued.told_to_wait));
            }
        }
        facts.statuses_read = distinct.len();
        facts.highest_serving = distinct
            .iter()
            .map(|(_, serving)| *serving)
            .max()
            .unwrap_or(0);
        facts
    }
}

/// How the run itself went, beside what it stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFacts {
    /// Customers whose visit ended `Failed`: (customer, the answer that did it).
    pub failed: Vec<(String, String)>,
    /// Orders paid that never showed PAID or REFUND_REQUIRED to their customer.
    pub unconfirmed: Vec<String>,
    /// Customer tasks still going at `--timeout` (stopped).
    pub unfinished: usize,
    pub panicked: usize,
    /// Whether the ticket desk heard of every settled order.
    pub desk_caught_up: bool,
    /// 5xx answers, other than the 503s that were retried.
    pub server_errors: u64,
    /// Customers answered 404 `event_not_found` for their own event (which exists), who kept
    /// their ticket and asked again, as the page does: (customer, how many times). Before
    /// customers asked again, that answer ended the visit `Failed`, which failed this check;
    /// asking again must not hide it, so it is counted here and fails the check the same way,
    /// whether or not a later answer was better.
    pub event_not_found: Vec<(String, u32)>,
}

impl RunFacts {
    /// The customers' part; the caller adds the rest.
    pub fn of(customers: &[CustomerReport]) -> Self {
        let mut facts = Self::default();
        for customer in customers {
            match &customer.outcome {
                Outcome::Failed => facts.failed.push((
                    customer.customer_id.clone(),
                    customer
                        .problem
                        .as_ref()
                        .map_or_else(|| "no problem recorded".to_owned(), |p| p.kind()),
                )),
                Outcome::PaymentUnconfirmed { order_id } => {
                    facts.unconfirmed.push(order_id.clone())
                }
                _ => {}
            }
            if customer.wait.event_not_found > 0 {
                facts
                    .event_not_found
                    .push((customer.customer_id.clone(), customer.wait.event_not_found));
            }
        }
        facts
    }
}

// The stored status names, as the ledger defines them.
const PENDING: &str = OrderStatus::Pending.as_str();
const PAID: &str = OrderStatus::Paid.as_str();
const REFUND_REQUIRED: &str = OrderStatus::RefundRequired.as_str();
/// A REFUND_REQUIRED order once its money is back (the refund queue's consumer).
const REFUNDED: &str = OrderStatus::Refunded.as_str();
const RELEASED: &str = OrderStatus::Released.as_str();
const EXPIRED: &str = OrderStatus::Expired.as_str();
const HELD: &str = SeatStatus::Held.as_str();
const SOLD: &str = SeatStatus::Sold.as_str();
/// At most this many instances of each kind of problem in a detail line.
const EXAMPLES: usize = 3;

/// What broke an invariant, by kind (in the order first seen), each kind with its instances.
#[derive(Default)]
pub(super) struct Problems(Vec<(&'static str, Vec<String>)>);

impl Problems {
    pub(super) fn add(&mut self, kind: &'static str, instance: String) {
        match self.0.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, instances)) => instances.push(instance),
            None => self.0.push((kind, vec![instance])),
        }
    }

    /// `3 problem(s): 2 × a kind (first; second); 1 × another kind (third)`.
    fn describe(&self) -> String {
        let total: usize = self.0.iter().map(|(_, instances)| instances.len()).sum();
        let kinds: Vec<String> = self
            .0
            .iter()
            .map(|(kind, instances)| {
                let mut shown: Vec<&str> = instances
                    .iter()
                    .take(EXAMPLES)
                    .map(String::as_str)
                    .collect();
                if instances.len() > EXAMPLES {
                    shown.push("…");
                }
                format!("{} × {kind} ({})", instances.len(), shown.join("; "))
            })
            .collect();
        format!("{total} problem(s): {}", kinds.join("; "))
    }

    /// Passed with `ok` as the detail when there is no problem.
    fn verdict(self, name: &'static str, ok: String) -> InvariantCheck {
        let passed = self.0.is_empty();
        InvariantCheck {
            name,
            passed,
            detail: if passed { ok } else { self.describe() },
        }
    }

    /// As [`Self::verdict`], a failure's detail followed by `context` (the counts the problems
    /// are among).
    pub(super) fn verdict_noting(
        self,
        name: &'static str,
        ok: String,
        context: &str,
    ) -> InvariantCheck {
        let passed = self.0.is_empty();
        InvariantCheck {
            name,
            passed,
            detail: if passed {
                ok
            } else {
                format!("{} — {context}", self.describe())
            },
        }
    }
}

pub fn check_all(observed: &Observed<'_>) -> Vec<InvariantCheck> {
    vec![
        no_seat_sold_twice(observed),
        sold_seats_are_the_paid_seats(observed),
        one_ticket_per_paid_order(observed),
        paid_amounts_match_prices(observed),
        customers_view_agrees(observed),
        the_run_was_sound(observed),
        holds_hold_their_own_seats(observed),
        called_in_number_order(observed),
        payments::every_payment_taken_ends_sold_or_refunded(
            observed.orders,
            observed.seats,
            observed.payments,
        ),
        payments::no_refund_exceeds_its_payment(observed.orders, observed.seats, observed.payments),
    ]
}

fn paid_orders<'a>(observed: &Observed<'a>) -> impl Iterator<Item = &'a StoredOrder> {
    observed.orders.iter().filter(|order| order.status == PAID)
}

fn orders_by_id<'a>(observed: &Observed<'a>) -> HashMap<&'a str, &'a StoredOrder> {
    observed
        .orders
        .iter()
        .map(|order| (order.order_id.as_str(), order))
        .collect()
}

/// (1) Each SOLD seat's `held_by` names exactly one PAID order that has the seat, and no seat is
/// in two PAID orders.
pub fn no_seat_sold_twice(observed: &Observed<'_>) -> InvariantCheck {
    let orders = orders_by_id(observed);
    let mut problems = Problems::default();
    let mut sold = 0;
    for seat in observed.seats.iter().filter(|seat| seat.status == SOLD) {
        sold += 1;
        let seat_id = &seat.seat_id;
        match seat.held_by.as_deref().map(|id| (id, orders.get(id))) {
            None => problems.add(
                "SOLD seat without an owner",
                format!("{seat_id} is SOLD to no order"),
            ),
            Some((id, None)) => problems.add(
                "SOLD seat owned by an unknown order",
                format!("{seat_id} is SOLD to unknown order {id}"),
            ),
            Some((id, Some(order))) if order.status != PAID => problems.add(
                "SOLD seat owned by an unpaid order",
                format!("{seat_id} is SOLD to order {id}, which is {}", order.status),
            ),
            Some((id, Some(order))) if !order.seat_ids.contains(seat_id) => problems.add(
                "SOLD seat owned by an order without it",
                format!("{seat_id} is SOLD to order {id}, which does not have it"),
            ),
            Some(_) => {}
        }
    }
    let mut owners: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for order in paid_orders(observed) {
        for seat in &order.seat_ids {
            owners.entry(seat).or_default().push(&order.order_id);
        }
    }
    for (seat, orders) in owners.iter().filter(|(_, orders)| orders.len() > 1) {
        problems.add(
            "seat in several PAID orders",
            format!(
                "{seat} is in {} PAID orders: {}",
                orders.len(),
                orders.join(", ")
            ),
        );
    }
    problems.verdict(
        "no seat sold twice",
        format!("{sold} SOLD seats, each owned by exactly one PAID order"),
    )
}

/// (2) The SOLD seats are exactly the union of the PAID orders' seats.
pub fn sold_seats_are_the_paid_seats(observed: &Observed<'_>) -> InvariantCheck {
    let sold: BTreeSet<&str> = observed
        .seats
        .iter()
        .filter(|seat| seat.status == SOLD)
        .map(|seat| seat.seat_id.as_str())
        .collect();
    let paid: BTreeSet<&str> = paid_orders(observed)
        .flat_map(|order| order.seat_ids.iter().map(String::as_str))
        .collect();
    let mut problems = Problems::default();
    for seat in sold.difference(&paid) {
        problems.add(
            "SOLD seat in no PAID order",
            format!("{seat} is SOLD but in no PAID order"),
        );
    }
    for seat in paid.difference(&sold) {
        problems.add(
            "paid seat not SOLD",
            format!("{seat} is in a PAID order but not SOLD"),
        );
    }
    problems.verdict(
        "sold seats = the paid orders' seats",
        format!(
            "{} SOLD seats = the {} seats of {} PAID orders",
            sold.len(),
            paid.len(),
            paid_orders(observed).count()
        ),
    )
}

/// (3) Exactly one distinct `ticket_issued` outbox event (by outbox id) per PAID order, matching
/// the order, and one `refund_required` per REFUND_REQUIRED order (or REFUNDED: the same, its
/// money back since); no event for an order in any other state. SQS messages are counted for information only: delivery is at-least-once (FIFO
/// deduplication lasts five minutes, and moto forgets a message's deduplication id once it is
/// deleted), so a second message with the same outbox id is allowed; consumers are idempotent
/// on `outboxId`.
pub fn one_ticket_per_paid_order(observed: &Observed<'_>) -> InvariantCheck {
    let desk: HashMap<&str, &Ticket> = observed
        .desk
        .iter()
        .map(|ticket| (ticket.order_id.as_str(), ticket))
        .collect();
    let mut problems = Problems::default();
    let mut settled = (0, 0);
    for order in observed.orders {
        let (kind, missing) = match order.status.as_str() {
            PAID => {
                settled.0 += 1;
                (
                    OutboxEventKind::TicketIssued,
                    "PAID order without a ticket_issued event",
                )
            }
            REFUND_REQUIRED | REFUNDED => {
                settled.1 += 1;
                (
                    OutboxEventKind::RefundRequired,
                    "REFUND_REQUIRED order without a refund_required event",
                )
            }
            _ => continue,
        };
        let id = &order.order_id;
        let Some(entry) = desk.get(id.as_str()) else {
            problems.add(
                missing,
                format!(
                    "{} order {id} has no {} event",
                    order.status,
                    kind_name(kind)
                ),
            );
            continue;
        };
        let event = &entry.ticket;
        if event.kind != kind {
            problems.add(
                "settled order with an event of another type",
                format!(
                    "{} order {id} got a {} event",
                    order.status,
                    kind_name(event.kind)
                ),
            );
        }
        if entry.outbox_ids.len() != 1 {
            problems.add(
                "settled order with several outbox events",
                format!(
                    "{} order {id} got {} distinct outbox events ({})",
                    order.status,
                    entry.outbox_ids.len(),
                    entry.outbox_ids.join(", ")
                ),
            );
        }
        if event.seat_ids != order.seat_ids
            || event.amount != order.amount
            || event.currency != order.currency
            || event.customer_id != order.customer_id
        {
            problems.add(
                "event unlike its order",
                format!(
                    "the {} event of order {id} says seats {:?}, {} {} for {}; the order: {:?}, \
                     {} {} for {}",
                    kind_name(event.kind),
                    event.seat_ids,
                    event.amount,
                    event.currency,
                    event.customer_id,
                    order.seat_ids,
                    order.amount,
                    order.currency,
                    order.customer_id
                ),
            );
        }
    }
    let orders = orders_by_id(observed);
    for entry in observed.desk {
        let status = orders
            .get(entry.order_id.as_str())
            .map(|order| order.status.as_str());
        let allowed = matches!(
            (entry.ticket.kind, status),
            (OutboxEventKind::TicketIssued, Some(PAID))
                | (
                    OutboxEventKind::RefundRequired,
                    Some(REFUND_REQUIRED | REFUNDED)
                )
        );
        if !allowed {
            problems.add(
                "event for an order in another state",
                format!(
                    "{} event(s) {} ({}) delivered for order {}, which is {}",
                    entry.outbox_ids.len(),
                    entry.outbox_ids.join(", "),
                    kind_name(entry.ticket.kind),
                    entry.order_id,
                    status.unwrap_or("not in the orders table")
                ),
            );
        }
    }
    let counts = DeskCounts::of(observed.desk);
    problems.verdict(
        "one ticket_issued event per paid order",
        format!(
            "{} PAID orders got one ticket_issued outbox event each, {} REFUND_REQUIRED (or \
             REFUNDED since) one refund_required each, matching the orders (for information: {} SQS messages, {} \
             deliveries)",
            settled.0, settled.1, counts.messages, counts.deliveries
        ),
    )
}

fn kind_name(kind: OutboxEventKind) -> &'static str {
    match kind {
        OutboxEventKind::TicketIssued => "ticket_issued",
        OutboxEventKind::RefundRequired => "refund_required",
    }
}

/// (4) Every PAID order's amount is the sum of its seats' prices.
pub fn paid_amounts_match_prices(observed: &Observed<'_>) -> InvariantCheck {
    let mut problems = Problems::default();
    let mut total = 0;
    for order in paid_orders(observed) {
        let prices: Option<i64> = order
            .seat_ids
            .iter()
            .map(|seat| observed.prices.get(seat).copied())
            .sum();
        match prices {
            Some(expected) if expected == order.amount => total += order.amount,
            Some(expected) => problems.add(
                "PAID amount unlike the seats' prices",
                format!(
                    "PAID order {} is {} for seats worth {expected}",
                    order.order_id, order.amount
                ),
            ),
            None => problems.add(
                "PAID order with seats the event does not have",
                format!(
                    "PAID order {} has seats {:?}",
                    order.order_id, order.seat_ids
                ),
            ),
        }
    }
    problems.verdict(
        "paid amounts = the seats' prices",
        format!(
            "{} PAID orders, {total} in all, each the sum of its seats' prices",
            paid_orders(observed).count()
        ),
    )
}

/// (5) Every order a customer saw settled has that status in the table (or, seen
/// REFUND_REQUIRED, REFUNDED: its money came back since).
pub fn customers_view_agrees(observed: &Observed<'_>) -> InvariantCheck {
    let orders = orders_by_id(observed);
    let mut problems = Problems::default();
    for seen in observed.seen {
        match orders.get(seen.order_id.as_str()) {
            Some(order) if order.status == seen.status => {}
            Some(order) if seen.status == REFUND_REQUIRED && order.status == REFUNDED => {}
            Some(order) => problems.add(
                "order seen otherwise than stored",
                format!(
                    "a customer saw order {} {}, the table says {}",
                    seen.order_id, seen.status, order.status
                ),
            ),
            None => problems.add(
                "order seen but not stored",
                format!(
                    "a customer saw order {} {}, the table has no such order",
                    seen.order_id, seen.status
                ),
            ),
        }
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for order in observed.seen {
        *seen.entry(order.status.as_str()).or_default() += 1;
    }
    let seen: Vec<String> = seen
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    problems.verdict(
        "customers' view agrees with the tables",
        format!(
            "the orders customers saw settled are so stored ({}; {} PAID in the table)",
            if seen.is_empty() {
                "none".to_owned()
            } else {
                seen.join(", ")
            },
            paid_orders(observed).count()
        ),
    )
}

/// (6) The run itself was sound, without which the other checks prove little (they all pass on
/// an empty sale): something was sold; no customer met an answer the contract does not allow
/// (every 5xx among them); every payment settled as PAID or REFUND_REQUIRED; every customer
/// finished; the ticket desk caught up; the seat table has the seats seeded.
pub fn the_run_was_sound(observed: &Observed<'_>) -> InvariantCheck {
    let run = observed.run;
    let orders = orders_by_id(observed);
    let seeded = observed.prices.len();
    let paid = paid_orders(observed).count();
    let mut problems = Problems::default();
    if observed.seats.len() != seeded {
        problems.add(
            "seat table unlike the seeding",
            format!("{} seats stored for {seeded} seeded", observed.seats.len()),
        );
    }
    if paid == 0 && seeded > 0 {
        problems.add(
            "nothing sold",
            format!("no order was paid, with {seeded} seats on sale"),
        );
    }
    for (customer, what) in &run.failed {
        problems.add("customer ended Failed", format!("{customer}: {what}"));
    }
    for order in &run.unconfirmed {
        let stored = orders
            .get(order.as_str())
            .map_or("not in the orders table", |order| order.status.as_str());
        problems.add(
            "payment never confirmed",
            format!(
                "order {order} was paid but never showed PAID or REFUND_REQUIRED (stored: \
                 {stored})"
            ),
        );
    }
    if run.unfinished > 0 {
        problems.add(
            "customers unfinished",
            format!("{} customers were still going at --timeout", run.unfinished),
        );
    }
    if run.panicked > 0 {
        problems.add(
            "customer tasks panicked",
            format!("{} customer tasks panicked", run.panicked),
        );
    }
    if !run.desk_caught_up {
        problems.add(
            "ticket desk behind",
            "the ticket desk did not hear of every settled order in time".to_owned(),
        );
    }
    if run.server_errors > 0 {
        problems.add(
            "5xx answers",
            format!("{} answers were 5xx (not 503)", run.server_errors),
        );
    }
    for (customer, times) in &run.event_not_found {
        problems.add(
            "customer told its event does not exist",
            format!(
                "{customer} was answered 404 event_not_found {times} time(s) (kept its ticket and \
                 asked again)"
            ),
        );
    }
    problems.verdict(
        "the run itself was sound",
        format!(
            "{paid} orders paid, {seeded} seats stored as seeded; no customer failed, every \
             payment settled, every customer finished, no 5xx; the ticket desk caught up"
        ),
    )
}

/// (7) A hold holds its own seats while it lasts, and nothing once it ended: every HELD seat is
/// held by a PENDING order that lists it; no RELEASED or EXPIRED order still holds (or owns) a
/// seat; the seats of every hold a customer saw released are no longer that order's.
pub fn holds_hold_their_own_seats(observed: &Observed<'_>) -> InvariantCheck {
    let orders = orders_by_id(observed);
    let ended = |status: &str| status == RELEASED || status == EXPIRED;
    let mut problems = Problems::default();
    let mut held = 0;
    for seat in observed.seats.iter().filter(|seat| seat.status == HELD) {
        held += 1;
        let seat_id = &seat.seat_id;
        match seat.held_by.as_deref().map(|id| (id, orders.get(id))) {
            None => problems.add(
                "HELD seat without a holder",
                format!("{seat_id} is HELD by no order"),
            ),
            Some((id, None)) => problems.add(
                "HELD seat held by an unknown order",
                format!("{seat_id} is HELD by unknown order {id}"),
            ),
            // Reported below, with the ended orders' other seats.
            Some((_, Some(order))) if ended(&order.status) => {}
            Some((id, Some(order))) if order.status != PENDING => problems.add(
                "HELD seat of a settled order",
                format!("{seat_id} is HELD by order {id}, which is {}", order.status),
            ),
            Some((id, Some(order))) if !order.seat_ids.contains(seat_id) => problems.add(
                "HELD seat held by an order without it",
                format!("{seat_id} is HELD by order {id}, which does not list it"),
            ),
            Some(_) => {}
        }
    }
    let mut taken_by: HashMap<&str, Vec<&StoredSeat>> = HashMap::new();
    for seat in observed.seats {
        if let (HELD | SOLD, Some(holder)) = (seat.status.as_str(), seat.held_by.as_deref()) {
            taken_by.entry(holder).or_default().push(seat);
        }
    }
    let mut reported: HashSet<(&str, &str)> = HashSet::new();
    let mut ended_orders = 0;
    for order in observed.orders.iter().filter(|o| ended(&o.status)) {
        ended_orders += 1;
        for seat in taken_by.get(order.order_id.as_str()).into_iter().flatten() {
            reported.insert((&seat.seat_id, &order.order_id));
            problems.add(
                "ended hold still holding a seat",
                format!(
                    "{} is {} by order {}, which is {}",
                    seat.seat_id, seat.status, order.order_id, order.status
                ),
            );
        }
    }
    let released: Vec<&SeenOrder> = observed
        .seen
        .iter()
        .filter(|seen| seen.status == RELEASED)
        .collect();
    for seen in &released {
        let still: Vec<&StoredSeat> = taken_by
            .get(seen.order_id.as_str())
            .into_iter()
            .flatten()
            .filter(|seat| seen.seat_ids.contains(&seat.seat_id))
            .copied()
            .collect();
        for seat in still {
            if reported.insert((&seat.seat_id, &seen.order_id)) {
                problems.add(
                    "released seat still held",
                    format!(
                        "{} is still {} by order {}, which its customer released",
                        seat.seat_id, seat.status, seen.order_id
                    ),
                );
            }
        }
    }
    problems.verdict(
        "holds hold their own seats, and nothing once ended",
        format!(
            "{held} HELD seats, each in the PENDING order holding it; {ended_orders} RELEASED or \
             EXPIRED orders hold no seat; the seats of the {} holds customers released are free \
             of them",
            released.len()
        ),
    )
}

/// (8) Customers were called in the order of their numbers: each number was held by one
/// customer; every pre-queue entrant still waiting at opening got a number from the draw;
/// `servingUpTo`, the highest number called, never went back from one status a customer read to
/// the next; and every customer whose number the status showed called was admitted (or found its
/// admission lapsed) on claiming, never told to wait on (which would mean a later number went
/// first).
pub fn called_in_number_order(observed: &Observed<'_>) -> InvariantCheck {
    let queue = observed.queue;
    let mut problems = Problems::default();
    let mut holders: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for (customer, number) in &queue.numbers {
        holders.entry(*number).or_default().push(customer);
    }
    for (number, customers) in holders.iter().filter(|(_, c)| c.len() > 1) {
        problems.add(
            "number held by several customers",
            format!("number {number} was given to {}", customers.join(", ")),
        );
    }
    for (customer, before, after) in &queue.went_back {
        problems.add(
            "servingUpTo went back",
            format!("{customer} read servingUpTo {after} after reading {before}"),
        );
    }
    for (customer, times) in &queue.left_out_of_draw {
        problems.add(
            "pre-queue entrant left out of the draw",
            format!(
                "{customer} joined before opening, is not in the published draw, and was told \
                 {times} time(s) after it that it was still in the pre-queue"
            ),
        );
    }
    for (customer, number, times) in &queue.passed_over {
        problems.add(
            "called number told to wait",
            format!(
                "{customer} (number {number}) claimed after the status showed it called and was \
                 told to wait, {times} time(s)"
            ),
        );
    }
    let ok = format!(
        "{} numbers, each held by one customer; no pre-queue entrant left out of the draw; \
         servingUpTo never went back in what a customer read ({} statuses, up to {}); none of \
         the {} customers who saw their number called was told to wait on",
        holders.len(),
        queue.statuses_read,
        queue.highest_serving,
        queue.called.len()
    );
    problems.verdict("customers were called in number order", ok)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::api_client::CallError;
    use super::*;

    fn seat(id: &str, status: &str, held_by: Option<&str>) -> StoredSeat {
        StoredSeat {
            seat_id: id.to_owned(),
            status: status.to_owned(),
            held_by: held_by.map(str::to_owned),
            price: 100,
        }
    }

    fn order(id: &str, status: &str, seats: &[&str], amount: i64) -> StoredOrder {
        StoredOrder {
            order_id: id.to_owned(),
            customer_id: format!("c-{id}"),
            status: status.to_owned(),
            seat_ids: seats.iter().map(|s| (*s).to_owned()).collect(),
            amount,
            currency: "KRW".to_owned(),
            checkout_payment_id: None,
            payment_id: None,
        }
    }

    /// `order`, paid (at checkout, and settled) by `pi-<id>`.
    fn paid(mut order: StoredOrder) -> StoredOrder {
        order.checkout_payment_id = Some(format!("pi-{}", order.order_id));
        order.payment_id = order.checkout_payment_id.clone();
        order
    }

    /// What the provider has of `order`'s payment: taken, `refunded` of it given back.
    fn taken(order: &StoredOrder, refunded: i64) -> payments::TakenPayment {
        payments::TakenPayment {
            payment_id: format!("pi-{}", order.order_id),
            order_id: order.order_id.clone(),
            amount: order.amount,
            refunded,
            refunds_asked: refunded,
            refunds: usize::from(refunded > 0),
        }
    }

    /// What the desk shows for an order whose one outbox event (`kind`) arrived once.
    fn ticket(order: &StoredOrder, kind: &str) -> Ticket {
        let outbox_id = format!("ob-{}", order.order_id);
        serde_json::from_value(serde_json::json!({
            "orderId": order.order_id,
            "messages": 1,
            "deliveries": 1,
            "outboxIds": [outbox_id],
            "ticket": {
                "outboxId": outbox_id,
                "type": kind,
                "eventId": "sim",
                "orderId": order.order_id,
                "customerId": order.customer_id,
                "seatIds": order.seat_ids,
                "amount": order.amount,
                "currency": order.currency,
                "occurredAt": "2026-12-01T10:00:00Z",
            },
        }))
        .expect("the desk's JSON")
    }

    fn seen(id: &str, status: &str, seats: &[&str]) -> SeenOrder {
        SeenOrder {
            order_id: id.to_owned(),
            status: status.to_owned(),
            seat_ids: seats.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    struct Data {
        seats: Vec<StoredSeat>,
        orders: Vec<StoredOrder>,
        desk: Vec<Ticket>,
        prices: HashMap<String, i64>,
        seen: Vec<SeenOrder>,
        run: RunFacts,
        queue: QueueFacts,
        payments: PaymentFacts,
    }

    impl Data {
        /// A clean sale: o1 paid, o2 expired (A-3 back on sale), o3 paid late and
        /// was refunded (A-4 had gone to o4), o4 paid A-4, o5 holds A-5, o6 was released (A-6
        /// back on sale).
        fn healthy() -> Self {
            let orders = vec![
                paid(order("o1", "PAID", &["A-1", "A-2"], 200)),
                order("o2", "EXPIRED", &["A-3"], 100),
                paid(order("o3", "REFUND_REQUIRED", &["A-4"], 100)),
                paid(order("o4", "PAID", &["A-4"], 100)),
                order("o5", "PENDING", &["A-5"], 100),
                order("o6", "RELEASED", &["A-6"], 100),
            ];
            let payments = PaymentFacts {
                provider: payments::ProviderView {
                    taken: vec![
                        taken(&orders[0], 0),
                        taken(&orders[2], 100),
                        taken(&orders[3], 0),
                    ],
                    not_taken: 0,
                    unknown: Vec::new(),
                },
                settlement: payments::Settlement {
                    after_crowd: Some(std::time::Duration::from_secs(1)),
                    limit: std::time::Duration::from_secs(35),
                    period: std::time::Duration::from_secs(10),
                },
            };
            let desk = vec![
                ticket(&orders[0], "ticket_issued"),
                ticket(&orders[2], "refund_required"),
                ticket(&orders[3], "ticket_issued"),
            ];
            Self {
                seats: vec![
                    seat("A-1", "SOLD", Some("o1")),
                    seat("A-2", "SOLD", Some("o1")),
                    seat("A-3", "AVAILABLE", None),
                    seat("A-4", "SOLD", Some("o4")),
                    seat("A-5", "HELD", Some("o5")),
                    seat("A-6", "AVAILABLE", None),
                ],
                orders,
                desk,
                prices: ["A-1", "A-2", "A-3", "A-4", "A-5", "A-6"]
                    .iter()
                    .map(|s| ((*s).to_owned(), 100))
                    .collect(),
                seen: vec![
                    seen("o1", "PAID", &["A-1", "A-2"]),
                    seen("o3", "REFUND_REQUIRED", &["A-4"]),
                    seen("o6", "RELEASED", &["A-6"]),
                ],
                run: RunFacts {
                    desk_caught_up: true,
                    ..RunFacts::default()
                },
                queue: QueueFacts {
                    numbers: vec![("c1".into(), 1), ("c2".into(), 2), ("c3".into(), 3)],
                    statuses_read: 3,
                    highest_serving: 3,
                    went_back: Vec::new(),
                    called: vec![("c1".into(), 1), ("c2".into(), 2)],
                    passed_over: Vec::new(),
                    left_out_of_draw: Vec::new(),
                    requeued: Vec::new(),
                },
                payments,
            }
        }

        /// Seats seeded, the queue opened, and nobody bought anything.
        fn nothing_sold() -> Self {
            let mut data = Self::healthy();
            data.orders.clear();
            data.desk.clear();
            data.seen.clear();
            data.payments.provider.taken.clear();
            for seat in &mut data.seats {
                seat.status = "AVAILABLE".to_owned();
                seat.held_by = None;
            }
            data
        }

        fn check(&self) -> Vec<InvariantCheck> {
            check_all(&Observed {
                seats: &self.seats,
                orders: &self.orders,
                desk: &self.desk,
                prices: &self.prices,
                seen: &self.seen,
                run: &self.run,
                queue: &self.queue,
                payments: &self.payments,
            })
        }

        /// Which checks fail, by number (1-10).
        fn failing(&self) -> Vec<usize> {
            self.check()
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.passed)
                .map(|(i, _)| i + 1)
                .collect()
        }

        /// Check `n`'s detail line.
        fn detail(&self, n: usize) -> String {
            self.check()[n - 1].detail.clone()
        }
    }

    #[test]
    fn a_clean_sale_passes_everything() {
        let data = Data::healthy();
        let checks = data.check();
        assert_eq!(checks.len(), 10);
        assert!(checks.iter().all(|c| c.passed), "{checks:#?}");
        assert_eq!(
            checks[0].detail,
            "3 SOLD seats, each owned by exactly one PAID order"
        );
        assert_eq!(
            checks[2].detail,
            "2 PAID orders got one ticket_issued outbox event each, 1 REFUND_REQUIRED (or \
             REFUNDED since) one refund_required each, matching the orders (for information: 3 \
             SQS messages, 3 deliveries)"
        );
        assert_eq!(
            checks[4].detail,
            "the orders customers saw settled are so stored (1 PAID, 1 REFUND_REQUIRED, 1 \
             RELEASED; 2 PAID in the table)"
        );
        assert_eq!(checks[5].name, "the run itself was sound");
        assert_eq!(
            checks[7].detail,
            "3 numbers, each held by one customer; no pre-queue entrant left out of the draw; \
             servingUpTo never went back in what a customer read (3 statuses, up to 3); none of \
             the 2 customers who saw their number called was told to wait on"
        );
    }

    #[test]
    fn a_seat_in_two_paid_orders_fails_the_first() {
        let mut data = Data::healthy();
        data.orders.push(order("o7", "PAID", &["A-2"], 100));
        data.desk.push(ticket(&data.orders[6], "ticket_issued"));
        assert_eq!(data.failing(), vec![1]);
        let detail = data.detail(1);
        assert!(detail.contains("A-2 is in 2 PAID orders"), "{detail}");
    }

    #[test]
    fn a_seat_sold_to_an_expired_order_fails() {
        let mut data = Data::healthy();
        data.seats[2] = seat("A-3", "SOLD", Some("o2"));
        assert_eq!(data.failing(), vec![1, 2, 7]);
        assert!(data.detail(1).contains("which is EXPIRED"));
        assert!(data.detail(2).contains("A-3 is SOLD but in no PAID order"));
        assert!(data
            .detail(7)
            .contains("A-3 is SOLD by order o2, which is EXPIRED"));
    }

    #[test]
    fn a_paid_seat_left_held_fails_the_second_and_the_holds() {
        let mut data = Data::healthy();
        data.seats[1] = seat("A-2", "HELD", Some("o1"));
        // And o1's payment bought nothing whole: neither sold nor refunded.
        assert_eq!(data.failing(), vec![2, 7, 9]);
        assert!(data
            .detail(2)
            .contains("A-2 is in a PAID order but not SOLD"));
        assert!(data
            .detail(7)
            .contains("A-2 is HELD by order o1, which is PAID"));
    }

    #[test]
    fn missing_duplicate_or_stray_events_fail_the_third() {
        let mut data = Data::healthy();
        data.desk.remove(2);
        assert_eq!(data.failing(), vec![3]);
        assert!(data
            .detail(3)
            .contains("PAID order o4 has no ticket_issued event"));

        let mut data = Data::healthy();
        data.desk[0].outbox_ids.push("ob-again".to_owned());
        assert_eq!(data.failing(), vec![3]);
        assert!(data
            .detail(3)
            .contains("PAID order o1 got 2 distinct outbox events (ob-o1, ob-again)"));

        let mut data = Data::healthy();
        let expired = data.orders[1].clone();
        data.desk.push(ticket(&expired, "ticket_issued"));
        assert_eq!(data.failing(), vec![3]);
        assert!(data
            .detail(3)
            .contains("1 event(s) ob-o2 (ticket_issued) delivered for order o2, which is EXPIRED"));

        let mut data = Data::healthy();
        data.desk[0].ticket.seat_ids = vec!["A-1".to_owned()];
        assert_eq!(data.failing(), vec![3]);
        assert!(data
            .detail(3)
            .contains("the ticket_issued event of order o1"));

        let mut data = Data::healthy();
        let paid = data.orders[3].clone();
        data.desk[2] = ticket(&paid, "refund_required");
        assert_eq!(data.failing(), vec![3]);
        assert!(data
            .detail(3)
            .contains("PAID order o4 got a refund_required event"));
    }

    #[test]
    fn a_refund_without_its_event_fails_the_third() {
        let mut data = Data::healthy();
        data.desk.remove(1);
        assert_eq!(data.failing(), vec![3]);
        assert!(data
            .detail(3)
            .contains("REFUND_REQUIRED order o3 has no refund_required event"));
    }

    #[test]
    fn an_order_refunded_since_its_customer_saw_it_refund_required_passes() {
        let mut data = Data::healthy();
        data.orders[2].status = "REFUNDED".to_owned();
        assert_eq!(data.failing(), Vec::<usize>::new());
        // But a refund_required event for an order never refunded is still a stray.
        let mut data = Data::healthy();
        data.orders[2].status = "EXPIRED".to_owned();
        assert_eq!(data.failing(), vec![3, 5]);
    }

    #[test]
    fn the_payment_checks_are_the_ninth_and_tenth() {
        let mut data = Data::healthy();
        data.payments.provider.taken[1].refunded = 0;
        data.payments.provider.taken[1].refunds_asked = 0;
        assert_eq!(data.failing(), vec![9]);
        let mut data = Data::healthy();
        data.payments.provider.taken[0].refunded = 200;
        data.payments.provider.taken[0].refunds_asked = 200;
        assert_eq!(data.failing(), vec![10]);
    }

    #[test]
    fn sqs_delivering_a_message_again_is_allowed_and_shown() {
        let mut data = Data::healthy();
        data.desk[0].messages = 2;
        data.desk[0].deliveries = 3;
        assert_eq!(data.failing(), Vec::<usize>::new());
        assert!(data
            .detail(3)
            .contains("(for information: 4 SQS messages, 5 deliveries)"));
    }

    #[test]
    fn problems_are_grouped_by_kind_with_a_few_instances_each() {
        let mut data = Data::healthy();
        data.desk.remove(2);
        data.desk[0].outbox_ids.push("ob-again".to_owned());
        for n in 0..5 {
            let order = order(&format!("p{n}"), "PAID", &["A-9"], 100);
            data.orders.push(order);
        }
        assert_eq!(
            data.detail(3),
            "7 problem(s): 1 × settled order with several outbox events (PAID order o1 got 2 \
             distinct outbox events (ob-o1, ob-again)); 6 × PAID order without a ticket_issued \
             event (PAID order o4 has no ticket_issued event; PAID order p0 has no \
             ticket_issued event; PAID order p1 has no ticket_issued event; …)"
        );
    }

    #[test]
    fn a_wrong_amount_fails_the_fourth() {
        let mut data = Data::healthy();
        data.orders[0].amount = 150;
        data.desk[0].ticket.amount = 150;
        assert_eq!(data.failing(), vec![4]);
        assert!(data
            .detail(4)
            .contains("PAID order o1 is 150 for seats worth 200"));
    }

    #[test]
    fn a_customer_seeing_paid_what_the_table_does_not_fails_the_fifth() {
        let mut data = Data::healthy();
        data.seen.push(seen("o2", "PAID", &["A-3"]));
        data.seen.push(seen("o404", "PAID", &["A-9"]));
        assert_eq!(data.failing(), vec![5]);
        let detail = data.detail(5);
        assert!(detail.starts_with("2 problem(s)"), "{detail}");
        assert!(detail.contains("the table says EXPIRED"));
        assert!(detail.contains("no such order"));
    }

    #[test]
    fn an_empty_sale_passes_the_five_but_not_the_sixth() {
        let data = Data::nothing_sold();
        assert_eq!(data.failing(), vec![6]);
        assert_eq!(
            data.detail(6),
            "1 problem(s): 1 × nothing sold (no order was paid, with 6 seats on sale)"
        );
    }

    #[test]
    fn each_way_the_run_goes_wrong_fails_the_sixth_and_says_which() {
        type Spoil = fn(&mut Data);
        let cases: Vec<(Spoil, &str)> = vec![
            (
                |d| {
                    d.run.failed.push((
                        "sim-1-00007".to_owned(),
                        "POST /events/{eventId}/holds: HTTP 500 internal".to_owned(),
                    ))
                },
                "1 × customer ended Failed (sim-1-00007: POST /events/{eventId}/holds: HTTP 500 \
                 internal)",
            ),
            (
                |d| d.run.unconfirmed.push("o5".to_owned()),
                "1 × payment never confirmed (order o5 was paid but never showed PAID or \
                 REFUND_REQUIRED (stored: PENDING))",
            ),
            (
                |d| d.run.unfinished = 4,
                "1 × customers unfinished (4 customers were still going at --timeout)",
            ),
            (
                |d| d.run.panicked = 1,
                "1 × customer tasks panicked (1 customer tasks panicked)",
            ),
            (
                |d| d.run.desk_caught_up = false,
                "1 × ticket desk behind (the ticket desk did not hear of every settled order in \
                 time)",
            ),
            (
                |d| d.run.server_errors = 2,
                "1 × 5xx answers (2 answers were 5xx (not 503))",
            ),
            (
                |d| {
                    d.seats.pop();
                },
                "1 × seat table unlike the seeding (5 seats stored for 6 seeded)",
            ),
        ];
        for (spoil, expected) in cases {
            let mut data = Data::healthy();
            spoil(&mut data);
            assert_eq!(data.failing(), vec![6], "{expected}");
            assert_eq!(data.detail(6), format!("1 problem(s): {expected}"));
        }
    }

    #[test]
    fn held_seats_outside_a_pending_order_fail_the_seventh() {
        let cases: Vec<(Option<&str>, &str)> = vec![
            (None, "A-6 is HELD by no order"),
            (Some("o404"), "A-6 is HELD by unknown order o404"),
            (
                Some("o5"),
                "A-6 is HELD by order o5, which does not list it",
            ),
            (Some("o4"), "A-6 is HELD by order o4, which is PAID"),
            (Some("o2"), "A-6 is HELD by order o2, which is EXPIRED"),
        ];
        for (holder, expected) in cases {
            let mut data = Data::healthy();
            data.seats[5] = seat("A-6", "HELD", holder);
            assert_eq!(data.failing(), vec![7], "{expected}");
            let detail = data.detail(7);
            assert!(detail.starts_with("1 problem(s)"), "{detail}");
            assert!(detail.contains(expected), "{detail}");
        }
    }

    #[test]
    fn a_released_hold_still_holding_its_seat_fails_the_seventh_once() {
        let mut data = Data::healthy();
        data.seats[5] = seat("A-6", "HELD", Some("o6"));
        assert_eq!(data.failing(), vec![7]);
        assert_eq!(
            data.detail(7),
            "1 problem(s): 1 × ended hold still holding a seat (A-6 is HELD by order o6, which \
             is RELEASED)"
        );
    }

    #[test]
    fn a_release_the_customer_saw_but_the_seats_did_not_fails_the_seventh() {
        // The table still says PENDING (the fifth check sees that), and the seat is still its.
        let mut data = Data::healthy();
        data.orders[5].status = "PENDING".to_owned();
        data.seats[5] = seat("A-6", "HELD", Some("o6"));
        assert_eq!(data.failing(), vec![5, 7]);
        assert!(data
            .detail(7)
            .contains("A-6 is still HELD by order o6, which its customer released"));
    }

    fn customer(id: &str, outcome: Outcome, problem: Option<CallError>) -> CustomerReport {
        CustomerReport {
            customer_id: id.to_owned(),
            outcome,
            joined: true,
            admitted: true,
            wait: super::super::waiting::WaitLog::default(),
            holds_won: 0,
            holds_lost: 0,
            price_changes: 0,
            seen: Vec::new(),
            problem,
            took: Duration::ZERO,
        }
    }

    #[test]
    fn run_facts_name_the_failed_customers_and_the_unconfirmed_payments() {
        let server_error = CallError::Unexpected {
            route: "GET /orders/{orderId}",
            status: 500,
            code: Some("internal".to_owned()),
            body: String::new(),
            retry_after: None,
        };
        let customers = [
            customer("c1", Outcome::Failed, Some(server_error)),
            customer(
                "c2",
                Outcome::PaymentUnconfirmed {
                    order_id: "o9".to_owned(),
                },
                None,
            ),
            customer(
                "c3",
                Outcome::Paid {
                    order_id: "o1".to_owned(),
                    seats: 2,
                },
                None,
            ),
        ];
        let facts = RunFacts::of(&customers);
        assert_eq!(
            facts.failed,
            vec![(
                "c1".to_owned(),
                "GET /orders/{orderId}: HTTP 500 internal".to_owned()
            )]
        );
        assert_eq!(facts.unconfirmed, vec!["o9".to_owned()]);
    }

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000 + seconds)
    }

    #[test]
    fn a_number_given_twice_fails_the_eighth() {
        let mut data = Data::healthy();
        data.queue.numbers.push(("c9".into(), 2));
        assert_eq!(data.failing(), vec![8]);
        assert_eq!(
            data.detail(8),
            "1 problem(s): 1 × number held by several customers (number 2 was given to c2, c9)"
        );
    }

    #[test]
    fn serving_going_back_fails_the_eighth() {
        let mut data = Data::healthy();
        data.queue.went_back.push(("c3".into(), 1009, 967));
        assert_eq!(data.failing(), vec![8]);
        assert_eq!(
            data.detail(8),
            "1 problem(s): 1 × servingUpTo went back (c3 read servingUpTo 967 after reading 1009)"
        );
    }

    #[test]
    fn a_called_customer_told_to_wait_fails_the_eighth() {
        let mut data = Data::healthy();
        data.queue.passed_over.push(("c2".into(), 2, 3));
        assert_eq!(data.failing(), vec![8]);
        assert!(data.detail(8).contains(
            "c2 (number 2) claimed after the status showed it called and was told to wait, 3 \
             time(s)"
        ));
    }

    #[test]
    fn a_customer_told_its_event_does_not_exist_fails_the_sixth_even_if_it_asked_again() {
        let mut data = Data::healthy();
        data.run.event_not_found.push(("c4".into(), 2));
        assert_eq!(data.failing(), vec![6]);
        assert_eq!(
            data.detail(6),
            "1 problem(s): 1 × customer told its event does not exist (c4 was answered 404 \
             event_not_found 2 time(s) (kept its ticket and asked again))"
        );
        let mut told = customer("c4", Outcome::LeftWhenAdmitted, None);
        told.wait.event_not_found = 2;
        assert_eq!(
            RunFacts::of(&[told]).event_not_found,
            vec![("c4".into(), 2)]
        );
    }

    #[test]
    fn a_customer_whose_number_admission_passed_while_it_was_away_is_passed_over() {
        use super::super::waiting::{Requeued, WaitLog};
        // Statuses published before the restore (at 10) showed up to 5 called; after it, 9.
        let mut reader = customer("c1", Outcome::LeftWhenAdmitted, None);
        reader.wait = WaitLog {
            number: Some(3),
            statuses: vec![(at(4), 5), (at(12), 9)],
            ..WaitLog::default()
        };
        let requeued = |id: &str, number: u64, outcome: Outcome| {
            let mut c = customer(id, outcome, None);
            c.wait = WaitLog {
                number: Some(number),
                called_at: Some(std::time::Instant::now()),
                requeued: Some(Requeued {
                    restored_at: at(10),
                    number,
                    told_to_wait: 2,
                }),
                ..WaitLog::default()
            };
            c
        };
        let facts = QueueFacts::of(&[
            reader,
            // 7 was not shown called before the restore, but admission passed it while it was
            // on its way back: still out of order.
            requeued("c7", 7, Outcome::LeftWhenAdmitted),
            // 5 was: the restore had to admit it (its own poll counts too).
            requeued("c5", 5, Outcome::LeftWhenAdmitted),
            // 8, never admitted in all its claims.
            requeued("c8", 8, Outcome::PassedOver),
        ]);
        assert_eq!(facts.requeued, vec![("c7".into(), 7, 2)]);
        assert_eq!(
            facts.passed_over,
            vec![
                ("c7".into(), 7, 2),
                ("c5".into(), 5, 3),
                ("c8".into(), 8, 2)
            ]
        );
        let mut data = Data::healthy();
        data.queue.passed_over = facts.passed_over;
        assert_eq!(data.failing(), vec![8]);
    }

    #[test]
    fn an_entrant_the_draw_left_out_fails_the_eighth() {
        let mut data = Data::healthy();
        data.queue.left_out_of_draw.push(("c7".into(), 3));
        assert_eq!(data.failing(), vec![8]);
        assert_eq!(
            data.detail(8),
            "1 problem(s): 1 × pre-queue entrant left out of the draw (c7 joined before opening, \
             is not in the published draw, and was told 3 time(s) after it that it was still in \
             the pre-queue)"
        );
    }

    #[test]
    fn queue_facts_come_from_what_each_customer_was_told() {
        use super::super::waiting::WaitLog;
        let mut called = customer("c1", Outcome::LeftWhenAdmitted, None);
        called.wait = WaitLog {
            number: Some(4),
            called_at: Some(std::time::Instant::now()),
            statuses: vec![(at(1), 2), (at(3), 4)],
            passed_over: 1,
            ..WaitLog::default()
        };
        // Read 7 after 8: a step back, whatever the (stale) `updatedAt` of the second says.
        let mut waiting = customer("c2", Outcome::VanishedWhileWaiting, None);
        waiting.wait = WaitLog {
            number: Some(9),
            statuses: vec![(at(3), 4), (at(9), 8), (at(5), 7), (at(11), 6)],
            ..WaitLog::default()
        };
        let mut left_out = customer("c4", Outcome::LeftOutOfDraw, None);
        left_out.wait = WaitLog {
            pre_queue: true,
            left_out_of_draw: 3,
            ..WaitLog::default()
        };
        let turned_away = customer("c3", Outcome::TurnedAway, None);
        let facts = QueueFacts::of(&[called, waiting, turned_away, left_out]);
        assert_eq!(facts.left_out_of_draw, vec![("c4".into(), 3)]);
        assert_eq!(facts.numbers, vec![("c1".into(), 4), ("c2".into(), 9)]);
        assert_eq!(facts.called, vec![("c1".into(), 4)]);
        assert_eq!(facts.passed_over, vec![("c1".into(), 4, 1)]);
        assert_eq!(facts.went_back, vec![("c2".into(), 8, 7)]);
        // (at 3, 4) was read by both: 5 distinct statuses.
        assert_eq!((facts.statuses_read, facts.highest_serving), (5, 8));
    }
}
