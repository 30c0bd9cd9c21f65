//! The promises a sale must keep, checked against what was stored and delivered: no seat sold
//! twice, the sold seats are exactly the paid orders' seats, one ticket message per paid order,
//! every paid amount is the seats' prices, and the customers' own view agrees. Pure functions
//! over plain data, so each check can be tested with a hand-made broken case.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::api_client::DeskEntry;
use super::customer::SeenOrder;
use super::stored::{StoredOrder, StoredSeat};

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
    pub desk: &'a [DeskEntry],
    /// The seeded price of every seat.
    pub prices: &'a HashMap<String, i64>,
    /// Orders whose final status customers saw (PAID or REFUND_REQUIRED).
    pub seen: &'a [SeenOrder],
}

const PAID: &str = "PAID";
const SOLD: &str = "SOLD";
/// At most this many instances of each kind of problem in a detail line.
const EXAMPLES: usize = 3;

/// What broke an invariant, by kind (in the order first seen), each kind with its instances.
#[derive(Default)]
struct Problems(Vec<(&'static str, Vec<String>)>);

impl Problems {
    fn add(&mut self, kind: &'static str, instance: String) {
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
}

pub fn check_all(observed: &Observed<'_>) -> Vec<InvariantCheck> {
    vec![
        no_seat_sold_twice(observed),
        sold_seats_are_the_paid_seats(observed),
        one_ticket_per_paid_order(observed),
        paid_amounts_match_prices(observed),
        customers_view_agrees(observed),
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

/// (3) Every PAID order has exactly one message, a `ticket_issued` matching the order; no
/// `ticket_issued` for an order that is not PAID; `refund_required` only for REFUND_REQUIRED.
pub fn one_ticket_per_paid_order(observed: &Observed<'_>) -> InvariantCheck {
    let desk: HashMap<&str, &DeskEntry> = observed
        .desk
        .iter()
        .map(|entry| (entry.order_id.as_str(), entry))
        .collect();
    let orders = orders_by_id(observed);
    let mut problems = Problems::default();
    for order in paid_orders(observed) {
        let id = &order.order_id;
        let Some(entry) = desk.get(id.as_str()) else {
            problems.add(
                "PAID order without a message",
                format!("PAID order {id} has no message"),
            );
            continue;
        };
        let ticket = &entry.ticket;
        if !ticket.is_ticket_issued() {
            problems.add(
                "PAID order with a message of another type",
                format!("PAID order {id} got a {} message", ticket.kind),
            );
        }
        if entry.messages != 1 {
            problems.add(
                "PAID order with several messages",
                format!("PAID order {id} got {} messages", entry.messages),
            );
        }
        if ticket.seat_ids != order.seat_ids
            || ticket.amount != order.amount
            || ticket.customer_id != order.customer_id
        {
            problems.add(
                "ticket unlike its order",
                format!(
                    "the ticket of order {id} says seats {:?}, {} for {}; the order: {:?}, {} \
                     for {}",
                    ticket.seat_ids,
                    ticket.amount,
                    ticket.customer_id,
                    order.seat_ids,
                    order.amount,
                    order.customer_id
                ),
            );
        }
    }
    for entry in observed.desk {
        let status = orders
            .get(entry.order_id.as_str())
            .map(|order| order.status.as_str());
        let allowed = match (entry.ticket.is_ticket_issued(), status) {
            (true, Some(PAID)) => true,
            (false, Some("REFUND_REQUIRED")) => entry.messages == 1,
            _ => false,
        };
        if !allowed {
            problems.add(
                "message for an order that is not PAID",
                format!(
                    "{} {} message(s) for order {}, which is {}",
                    entry.messages,
                    entry.ticket.kind,
                    entry.order_id,
                    status.unwrap_or("not in the orders table")
                ),
            );
        }
    }
    let issued = observed
        .desk
        .iter()
        .filter(|e| e.ticket.is_ticket_issued())
        .count();
    problems.verdict(
        "one ticket message per paid order",
        format!(
            "{issued} ticket_issued messages for {} PAID orders, one each, matching the orders",
            paid_orders(observed).count()
        ),
    )
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

/// (5) Every order a customer saw settled has that status in the table.
pub fn customers_view_agrees(observed: &Observed<'_>) -> InvariantCheck {
    let orders = orders_by_id(observed);
    let mut problems = Problems::default();
    for seen in observed.seen {
        match orders.get(seen.order_id.as_str()) {
            Some(order) if order.status == seen.status => {}
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
    let seen_paid = observed.seen.iter().filter(|s| s.status == PAID).count();
    let table_paid = paid_orders(observed).count();
    problems.verdict(
        "customers' view agrees with the tables",
        format!(
            "{seen_paid} orders customers saw PAID are PAID ({table_paid} PAID in the table); \
             {} seen REFUND_REQUIRED agree",
            observed.seen.len() - seen_paid
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::api_client::DeskTicket;
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
        }
    }

    fn ticket(order: &StoredOrder, kind: &str, messages: u64) -> DeskEntry {
        DeskEntry {
            order_id: order.order_id.clone(),
            messages,
            ticket: DeskTicket {
                outbox_id: format!("ob-{}", order.order_id),
                kind: kind.to_owned(),
                event_id: "sim".to_owned(),
                order_id: order.order_id.clone(),
                customer_id: order.customer_id.clone(),
                seat_ids: order.seat_ids.clone(),
                amount: order.amount,
                currency: order.currency.clone(),
            },
        }
    }

    fn seen(id: &str, status: &str) -> SeenOrder {
        SeenOrder {
            order_id: id.to_owned(),
            status: status.to_owned(),
        }
    }

    struct Data {
        seats: Vec<StoredSeat>,
        orders: Vec<StoredOrder>,
        desk: Vec<DeskEntry>,
        prices: HashMap<String, i64>,
        seen: Vec<SeenOrder>,
    }

    impl Data {
        /// A clean sale: o1 paid, o2 expired (A-3 back on sale), o3 refunded,
        /// o4 paid A-4.
        fn healthy() -> Self {
            let orders = vec![
                order("o1", "PAID", &["A-1", "A-2"], 200),
                order("o2", "EXPIRED", &["A-3"], 100),
                order("o3", "REFUND_REQUIRED", &["A-4"], 100),
                order("o4", "PAID", &["A-4"], 100),
            ];
            let desk = vec![
                ticket(&orders[0], "ticket_issued", 1),
                ticket(&orders[2], "refund_required", 1),
                ticket(&orders[3], "ticket_issued", 1),
            ];
            Self {
                seats: vec![
                    seat("A-1", "SOLD", Some("o1")),
                    seat("A-2", "SOLD", Some("o1")),
                    seat("A-3", "AVAILABLE", None),
                    seat("A-4", "SOLD", Some("o4")),
                    seat("A-5", "HELD", Some("o9")),
                ],
                orders,
                desk,
                prices: ["A-1", "A-2", "A-3", "A-4", "A-5"]
                    .iter()
                    .map(|s| ((*s).to_owned(), 100))
                    .collect(),
                seen: vec![seen("o1", "PAID"), seen("o3", "REFUND_REQUIRED")],
            }
        }

        fn check(&self) -> Vec<InvariantCheck> {
            check_all(&Observed {
                seats: &self.seats,
                orders: &self.orders,
                desk: &self.desk,
                prices: &self.prices,
                seen: &self.seen,
            })
        }

        /// Which checks fail, by number (1-5).
        fn failing(&self) -> Vec<usize> {
            self.check()
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.passed)
                .map(|(i, _)| i + 1)
                .collect()
        }
    }

    #[test]
    fn a_clean_sale_passes_everything() {
        let data = Data::healthy();
        let checks = data.check();
        assert!(checks.iter().all(|c| c.passed), "{checks:#?}");
        assert_eq!(
            checks[0].detail,
            "3 SOLD seats, each owned by exactly one PAID order"
        );
    }

    #[test]
    fn a_seat_in_two_paid_orders_fails_the_first() {
        let mut data = Data::healthy();
        data.orders.push(order("o5", "PAID", &["A-2"], 100));
        data.desk.push(ticket(&data.orders[4], "ticket_issued", 1));
        assert_eq!(data.failing(), vec![1]);
        let check = &data.check()[0];
        assert!(!check.passed);
        assert!(
            check.detail.contains("A-2 is in 2 PAID orders"),
            "{check:?}"
        );
    }

    #[test]
    fn a_seat_sold_to_an_unpaid_order_fails() {
        let mut data = Data::healthy();
        data.seats[2] = seat("A-3", "SOLD", Some("o2"));
        assert_eq!(data.failing(), vec![1, 2]);
        assert!(data.check()[0].detail.contains("which is EXPIRED"));
        assert!(data.check()[1]
            .detail
            .contains("A-3 is SOLD but in no PAID order"));
    }

    #[test]
    fn a_paid_seat_left_unsold_fails_the_second() {
        let mut data = Data::healthy();
        data.seats[1] = seat("A-2", "HELD", Some("o1"));
        assert_eq!(data.failing(), vec![2]);
        assert!(data.check()[1]
            .detail
            .contains("A-2 is in a PAID order but not SOLD"));
    }

    #[test]
    fn missing_duplicate_or_stray_messages_fail_the_third() {
        let mut data = Data::healthy();
        data.desk.remove(2);
        assert_eq!(data.failing(), vec![3]);
        assert!(data.check()[2]
            .detail
            .contains("PAID order o4 has no message"));

        let mut data = Data::healthy();
        data.desk[0].messages = 2;
        assert_eq!(data.failing(), vec![3]);
        assert!(data.check()[2].detail.contains("got 2 messages"));

        let mut data = Data::healthy();
        let expired = data.orders[1].clone();
        data.desk.push(ticket(&expired, "ticket_issued", 1));
        assert_eq!(data.failing(), vec![3]);
        assert!(data.check()[2].detail.contains("which is EXPIRED"));

        let mut data = Data::healthy();
        data.desk[0].ticket.seat_ids = vec!["A-1".to_owned()];
        assert_eq!(data.failing(), vec![3]);
    }

    #[test]
    fn problems_are_grouped_by_kind_with_a_few_instances_each() {
        let mut data = Data::healthy();
        data.desk.remove(2);
        data.desk[0].messages = 2;
        for n in 0..5 {
            let order = order(&format!("p{n}"), "PAID", &["A-9"], 100);
            data.orders.push(order);
        }
        let detail = &data.check()[2].detail;
        assert_eq!(
            detail,
            "7 problem(s): 1 × PAID order with several messages (PAID order o1 got 2 messages); \
             6 × PAID order without a message (PAID order o4 has no message; PAID order p0 has \
             no message; PAID order p1 has no message; …)"
        );
    }

    #[test]
    fn a_wrong_amount_fails_the_fourth() {
        let mut data = Data::healthy();
        data.orders[0].amount = 150;
        data.desk[0].ticket.amount = 150;
        assert_eq!(data.failing(), vec![4]);
        assert!(data.check()[3]
            .detail
            .contains("PAID order o1 is 150 for seats worth 200"));
    }

    #[test]
    fn a_customer_seeing_paid_what_the_table_does_not_fails_the_fifth() {
        let mut data = Data::healthy();
        data.seen.push(seen("o2", "PAID"));
        data.seen.push(seen("o404", "PAID"));
        assert_eq!(data.failing(), vec![5]);
        let detail = &data.check()[4].detail;
        assert!(detail.starts_with("2 problem(s)"), "{detail}");
        assert!(detail.contains("the table says EXPIRED"));
        assert!(detail.contains("no such order"));
    }
}
