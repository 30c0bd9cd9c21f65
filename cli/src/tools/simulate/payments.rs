//! The money, once the crowd is done: every payment the provider took for the event's orders
//! must end either sold (its order PAID by it, the seats SOLD to that order) or refunded in full
//! at the provider, never both, and no payment's refunds may pass what it took. Reconciliation
//! settles a payment whose webhook was lost (`--lose-webhooks`) within one period, and the refund
//! queue's consumer gives back what could not buy its order, so the simulation waits for that
//! first (at most two reconcile periods and a margin), then checks it. What the provider has is
//! read through the Stripe adapter itself, at `lineup dev`'s Stripe-shaped provider.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt, TryStreamExt};
use lineup::adapters::stripe::{StripeApiKey, StripeProvider};
use lineup::application::ports::ledger::OrderStatus;
use lineup::application::ports::payments::{PaymentProvider, PaymentStatus, RefundStatus};
use lineup::domain::ids::{EventId, PaymentId};
use lineup::domain::seat::SeatStatus;
use serde::Serialize;

use super::invariants::{InvariantCheck, Problems};
use super::stack::Stack;
use super::stored::{Reconciled, StoredOrder, StoredSeat};
use super::SimulateError;
use crate::dev::payment_provider::ProviderStats;

/// The margin beyond two reconcile periods the wait allows (a run's own time, the refund
/// queue's consumer, the ticket pump).
pub const SETTLEMENT_MARGIN: Duration = Duration::from_secs(15);
/// How often the wait reads the orders and the provider again.
const READ_INTERVAL: Duration = Duration::from_secs(1);
/// Provider calls in flight at once while reading.
const PROVIDER_CALLS: usize = 8;

const PAID: &str = OrderStatus::Paid.as_str();
const SOLD: &str = SeatStatus::Sold.as_str();

/// How long the wait allows after the crowd: one reconcile period for a lost webhook's payment
/// to be looked at again, one more for a run that was under way when it came, and a margin.
pub fn settlement_limit(reconcile_period: Duration) -> Duration {
    reconcile_period * 2 + SETTLEMENT_MARGIN
}

/// A payment the provider took (`succeeded`) for one of the event's orders, as the provider has
/// it, with its refunds there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenPayment {
    pub payment_id: String,
    /// The order whose checkout made it.
    pub order_id: String,
    /// What it took, in minor units.
    pub amount: i64,
    /// What its succeeded refunds gave back.
    pub refunded: i64,
    /// What its refunds give back or are giving back (all but the failed and cancelled ones).
    pub refunds_asked: i64,
    /// How many refunds it has (all but the failed and cancelled ones).
    pub refunds: usize,
}

/// What the provider says of the payments the event's orders made at checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderView {
    pub taken: Vec<TakenPayment>,
    /// Orders whose checkout payment took no money (never confirmed, cancelled with its hold).
    pub not_taken: usize,
    /// (order, payment) the order names but the provider does not have.
    pub unknown: Vec<(String, String)>,
}

/// How a taken payment ended, as the tables and the provider show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Its order is PAID by it and the order's seats are SOLD to the order.
    Sold,
    /// Its refunds at the provider gave all of it back.
    Refunded,
    /// Both: the customer has the seats and the money.
    Both,
    /// Neither (yet).
    Neither,
}

impl Ending {
    fn settled(self) -> bool {
        self != Self::Neither
    }
}

/// The orders and seats, by id, to judge payments against.
struct Tables<'a> {
    orders: HashMap<&'a str, &'a StoredOrder>,
    seats: HashMap<&'a str, &'a StoredSeat>,
}

impl<'a> Tables<'a> {
    fn of(orders: &'a [StoredOrder], seats: &'a [StoredSeat]) -> Self {
        Self {
            orders: orders.iter().map(|o| (o.order_id.as_str(), o)).collect(),
            seats: seats.iter().map(|s| (s.seat_id.as_str(), s)).collect(),
        }
    }

    /// Whether the payment's order is PAID by it and holds its seats (each SOLD to it).
    fn sold(&self, payment: &TakenPayment) -> bool {
        let Some(order) = self.orders.get(payment.order_id.as_str()) else {
            return false;
        };
        order.status == PAID
            && order.payment_id.as_deref() == Some(payment.payment_id.as_str())
            && !order.seat_ids.is_empty()
            && order.seat_ids.iter().all(|seat| {
                self.seats.get(seat.as_str()).is_some_and(|seat| {
                    seat.status == SOLD && seat.held_by.as_deref() == Some(order.order_id.as_str())
                })
            })
    }

    fn ending(&self, payment: &TakenPayment) -> Ending {
        match (self.sold(payment), payment.refunded >= payment.amount) {
            (true, true) => Ending::Both,
            (true, false) => Ending::Sold,
            (false, true) => Ending::Refunded,
            (false, false) => Ending::Neither,
        }
    }

    /// Where the payment's order stands, for a problem's line.
    fn order_state(&self, payment: &TakenPayment) -> String {
        match self.orders.get(payment.order_id.as_str()) {
            None => "not in the orders table".to_owned(),
            Some(order) => {
                let settled_by = match order.payment_id.as_deref() {
                    None => String::new(),
                    Some(id) if id == payment.payment_id => " by it".to_owned(),
                    Some(other) => format!(" by another payment, {other}"),
                };
                let unsold = order
                    .seat_ids
                    .iter()
                    .filter(|seat| {
                        !self.seats.get(seat.as_str()).is_some_and(|seat| {
                            seat.status == SOLD
                                && seat.held_by.as_deref() == Some(order.order_id.as_str())
                        })
                    })
                    .count();
                if order.status == PAID && unsold > 0 {
                    format!(
                        "{}{settled_by}, {unsold} of its {} seats not SOLD to it",
                        order.status,
                        order.seat_ids.len()
                    )
                } else {
                    format!("{}{settled_by}", order.status)
                }
            }
        }
    }
}

/// The payments side of `lineup dev`: its Stripe-shaped provider, through the Stripe adapter.
pub struct Provider(StripeProvider);

impl Provider {
    /// The provider of the dev server at `api` (its `/v1` routes), with the development key.
    pub fn at(api: &str) -> Result<Self, SimulateError> {
        let key = StripeApiKey::new(crate::local_aws::secrets::DEV_STRIPE_API_KEY)
            .map_err(|_| SimulateError::ProviderKey)?;
        StripeProvider::open(api.to_owned(), key)
            .map(Self)
            .map_err(SimulateError::HttpClient)
    }

    /// What the provider has of every checkout payment of `orders`: taken or not, and each
    /// taken one's refunds.
    pub async fn view(&self, orders: &[StoredOrder]) -> Result<ProviderView, SimulateError> {
        let read: Vec<Read> = stream::iter(orders.iter().filter_map(|order| {
            order
                .checkout_payment_id
                .as_deref()
                .map(|payment| (order.order_id.as_str(), payment))
        }))
        .map(|(order, payment)| self.read(order, payment))
        .buffer_unordered(PROVIDER_CALLS)
        .try_collect()
        .await?;
        let mut view = ProviderView::default();
        for read in read {
            match read {
                Read::Taken(payment) => view.taken.push(payment),
                Read::NotTaken => view.not_taken += 1,
                Read::Unknown(order, payment) => view.unknown.push((order, payment)),
            }
        }
        view.taken.sort_by(|a, b| a.order_id.cmp(&b.order_id));
        view.unknown.sort();
        Ok(view)
    }

    async fn read(&self, order: &str, payment: &str) -> Result<Read, SimulateError> {
        let failed = |source| SimulateError::Provider {
            payment: payment.to_owned(),
            source,
        };
        let Ok(id) = PaymentId::parse(payment) else {
            return Ok(Read::Unknown(order.to_owned(), payment.to_owned()));
        };
        let Some(found) = self.0.payment(&id).await.map_err(failed)? else {
            return Ok(Read::Unknown(order.to_owned(), payment.to_owned()));
        };
        if found.status != PaymentStatus::Succeeded {
            return Ok(Read::NotTaken);
        }
        let refunds = self.0.refunds_of(&id).await.map_err(failed)?;
        let given_back =
            |status: RefundStatus| !matches!(status, RefundStatus::Failed | RefundStatus::Canceled);
        let asked: Vec<_> = refunds.iter().filter(|r| given_back(r.status)).collect();
        Ok(Read::Taken(TakenPayment {
            payment_id: payment.to_owned(),
            order_id: order.to_owned(),
            amount: found.amount,
            refunded: refunds
                .iter()
                .filter(|r| r.status == RefundStatus::Succeeded)
                .map(|r| r.amount)
                .sum(),
            refunds_asked: asked.iter().map(|r| r.amount).sum(),
            refunds: asked.len(),
        }))
    }
}

enum Read {
    Taken(TakenPayment),
    NotTaken,
    Unknown(String, String),
}

/// How the wait for settlement went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settlement {
    /// How long after the crowd every payment taken was first seen sold or refunded (the end of
    /// that reading); `None`: not within `limit`.
    pub after_crowd: Option<Duration>,
    /// How long the wait allowed after the crowd.
    pub limit: Duration,
    /// `lineup dev`'s reconcile period.
    pub period: Duration,
}

/// Reads the event's orders and the provider every second until every payment taken has ended
/// sold or refunded in full, or until `limit` after `crowd_end`.
pub async fn wait_for_settlement(
    stack: &Stack,
    provider: &Provider,
    event: &EventId,
    crowd_end: Instant,
    period: Duration,
) -> Result<Settlement, SimulateError> {
    let limit = settlement_limit(period);
    loop {
        let reading = stack.read_once(event).await?;
        let view = provider.view(&reading.orders).await?;
        let tables = Tables::of(&reading.orders, &reading.seats);
        let settled = view.taken.iter().all(|p| tables.ending(p).settled());
        let waited = crowd_end.elapsed();
        if settled || waited >= limit {
            return Ok(Settlement {
                after_crowd: settled.then_some(waited),
                limit,
                period,
            });
        }
        tokio::time::sleep(READ_INTERVAL.min(limit - waited)).await;
    }
}

/// Everything the two checks look at, beside the orders and seats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentFacts {
    pub provider: ProviderView,
    pub settlement: Settlement,
}

/// Counts of how the payments taken ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Endings {
    sold: usize,
    refunded: usize,
    both: usize,
    neither: usize,
}

impl Endings {
    fn of(tables: &Tables<'_>, taken: &[TakenPayment]) -> Self {
        let mut endings = Self::default();
        for payment in taken {
            match tables.ending(payment) {
                Ending::Sold => endings.sold += 1,
                Ending::Refunded => endings.refunded += 1,
                Ending::Both => endings.both += 1,
                Ending::Neither => endings.neither += 1,
            }
        }
        endings
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// (9) Every payment taken (an order's checkout payment the provider says succeeded) ends sold
/// (its order PAID by it, the seats SOLD to the order) or refunded in full at the provider, and
/// was so within the wait after the crowd; no order names a payment the provider lacks.
pub fn every_payment_taken_ends_sold_or_refunded(
    orders: &[StoredOrder],
    seats: &[StoredSeat],
    facts: &PaymentFacts,
) -> InvariantCheck {
    let tables = Tables::of(orders, seats);
    let taken = &facts.provider.taken;
    let settlement = &facts.settlement;
    let mut problems = Problems::default();
    for payment in taken {
        if tables.ending(payment) == Ending::Neither {
            problems.add(
                "payment taken, neither sold nor refunded in full",
                format!(
                    "{} of order {} took {}: the order is {}, {} refunded",
                    payment.payment_id,
                    payment.order_id,
                    payment.amount,
                    tables.order_state(payment),
                    payment.refunded
                ),
            );
        }
    }
    for (order, payment) in &facts.provider.unknown {
        problems.add(
            "order names a payment the provider does not have",
            format!("order {order} names {payment}"),
        );
    }
    if settlement.after_crowd.is_none() {
        problems.add(
            "not settled within the wait",
            format!(
                "not every payment taken was sold or refunded in full {} after the crowd (2 × \
                 the {} reconcile period + {})",
                seconds(settlement.limit),
                seconds(settlement.period),
                seconds(SETTLEMENT_MARGIN)
            ),
        );
    }
    let endings = Endings::of(&tables, taken);
    let counts = format!(
        "{} payments taken: {} sold (order PAID by it, seats SOLD to it), {} refunded in full at \
         the provider, {} both, {} neither",
        taken.len(),
        endings.sold,
        endings.refunded,
        endings.both,
        endings.neither
    );
    let ok =
        format!(
        "{counts}; all so {} after the crowd (the wait allows {}: 2 × the {} reconcile period + \
         {})",
        settlement.after_crowd.map_or_else(|| "-".to_owned(), seconds),
        seconds(settlement.limit),
        seconds(settlement.period),
        seconds(SETTLEMENT_MARGIN)
    );
    problems.verdict_noting(
        "every payment taken ends sold or refunded in full",
        ok,
        &counts,
    )
}

/// (10) No payment's refunds at the provider (pending or done) add up to more than it took, and
/// no payment both sold its order and was refunded (in full, or in part: a sale keeps all of
/// its money).
pub fn no_refund_exceeds_its_payment(
    orders: &[StoredOrder],
    seats: &[StoredSeat],
    facts: &PaymentFacts,
) -> InvariantCheck {
    let tables = Tables::of(orders, seats);
    let taken = &facts.provider.taken;
    let mut problems = Problems::default();
    for payment in taken {
        if payment.refunds_asked > payment.amount {
            problems.add(
                "refunds exceed the payment",
                format!(
                    "{} (order {}) took {}; its {} refunds give back {}",
                    payment.payment_id,
                    payment.order_id,
                    payment.amount,
                    payment.refunds,
                    payment.refunds_asked
                ),
            );
        }
        let sold = tables.sold(payment);
        if sold && payment.refunded >= payment.amount {
            problems.add(
                "payment both sold and refunded in full",
                format!(
                    "{} sold order {} (PAID, seats SOLD) and was refunded {} of {}",
                    payment.payment_id, payment.order_id, payment.refunded, payment.amount
                ),
            );
        } else if sold && payment.refunds_asked > 0 {
            problems.add(
                "payment sold and refunded in part",
                format!(
                    "{} sold order {} (PAID, seats SOLD) and {} of its {} is being given back",
                    payment.payment_id, payment.order_id, payment.refunds_asked, payment.amount
                ),
            );
        }
    }
    let refunds: usize = taken.iter().map(|p| p.refunds).sum();
    let amount: i64 = taken.iter().map(|p| p.refunds_asked).sum();
    let counts = format!(
        "{refunds} refunds at the provider, {amount} in all, over {} payments taken",
        taken.len()
    );
    problems.verdict_noting(
        "no refund exceeds its payment",
        format!("{counts}: none past its payment, no payment both sold and refunded"),
        &counts,
    )
}

/// The run's payment figures, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentsReport {
    /// The share of Stripe events the provider lost for good during the run (`--lose-webhooks`).
    pub lose_webhooks: f64,
    /// This run's events, from the provider's stats before and after (another client of the
    /// same `lineup dev` meanwhile would be counted too).
    pub webhooks_sent: u64,
    pub webhooks_lost: u64,
    pub webhooks_duplicated: u64,
    /// Orders whose checkout made a payment.
    pub checkouts: usize,
    /// Of those, payments the provider took (`succeeded`).
    pub payments_taken: usize,
    /// Payments taken that ended sold, and refunded in full.
    pub sold: usize,
    pub refunded_in_full: usize,
    /// The event's orders settled by reconciliation (an `IDEMPOTENCY#reconcile:<paymentId>`
    /// record, written only by the transaction that settled them): their webhook had not come,
    /// lost or still on its way (a run between the confirm and its event, ~300 ms, wins too).
    pub settled_by_reconciliation: usize,
    /// Those, by what the order became (`PAID`, `REFUND_REQUIRED`).
    pub settled_by_reconciliation_as: BTreeMap<String, usize>,
    /// The refunds of the payments taken, at the provider (not failed or cancelled).
    pub refunds: RefundTotals,
    pub reconcile_period_seconds: f64,
    /// How long after the crowd every payment taken was sold or refunded in full: when the
    /// first reading that found it so ended (a reading of the orders and the provider takes
    /// about a second); `None`: not within the wait.
    pub settled_within_seconds: Option<f64>,
    /// How long the wait allowed (2 × the period + 15 s).
    pub settlement_limit_seconds: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundTotals {
    pub count: usize,
    pub amount: i64,
}

/// The provider's counts over the run: `after` less `before`.
pub fn stats_of_run(before: &ProviderStats, after: &ProviderStats) -> (u64, u64, u64) {
    (
        after.webhooks_sent.saturating_sub(before.webhooks_sent),
        after.webhooks_lost.saturating_sub(before.webhooks_lost),
        after
            .webhooks_duplicated
            .saturating_sub(before.webhooks_duplicated),
    )
}

impl PaymentsReport {
    /// The figures of one run. `reconciled`: every settlement reconciliation made (all events).
    pub fn of(
        lose_webhooks: f64,
        (before, after): (&ProviderStats, &ProviderStats),
        orders: &[StoredOrder],
        seats: &[StoredSeat],
        facts: &PaymentFacts,
        reconciled: &[Reconciled],
    ) -> Self {
        let tables = Tables::of(orders, seats);
        let taken = &facts.provider.taken;
        let endings = Endings::of(&tables, taken);
        let ours: Vec<&Reconciled> = reconciled
            .iter()
            .filter(|r| tables.orders.contains_key(r.order_id.as_str()))
            .collect();
        let mut settled_as = BTreeMap::new();
        for record in &ours {
            *settled_as.entry(record.outcome.clone()).or_insert(0) += 1;
        }
        let (sent, lost, duplicated) = stats_of_run(before, after);
        Self {
            lose_webhooks,
            webhooks_sent: sent,
            webhooks_lost: lost,
            webhooks_duplicated: duplicated,
            checkouts: orders
                .iter()
                .filter(|o| o.checkout_payment_id.is_some())
                .count(),
            payments_taken: taken.len(),
            sold: endings.sold + endings.both,
            refunded_in_full: endings.refunded + endings.both,
            settled_by_reconciliation: ours.len(),
            settled_by_reconciliation_as: settled_as,
            refunds: RefundTotals {
                count: taken.iter().map(|p| p.refunds).sum(),
                amount: taken.iter().map(|p| p.refunds_asked).sum(),
            },
            reconcile_period_seconds: facts.settlement.period.as_secs_f64(),
            settled_within_seconds: facts.settlement.after_crowd.map(|d| d.as_secs_f64()),
            settlement_limit_seconds: facts.settlement.limit.as_secs_f64(),
        }
    }

    pub fn render(&self, line: &mut impl FnMut(String)) {
        line("Payments".to_owned());
        line(format!(
            "  {} checkouts, {} payments taken: {} sold, {} refunded in full ({} refunds, {} in \
             all)",
            self.checkouts,
            self.payments_taken,
            self.sold,
            self.refunded_in_full,
            self.refunds.count,
            self.refunds.amount
        ));
        let settled_as: Vec<String> = self
            .settled_by_reconciliation_as
            .iter()
            .map(|(outcome, n)| format!("{outcome} {n}"))
            .collect();
        line(format!(
            "  webhooks: {} sent, {} lost for good (--lose-webhooks {}), {} sent twice; {} orders \
             settled by reconciliation{}",
            self.webhooks_sent,
            self.webhooks_lost,
            self.lose_webhooks,
            self.webhooks_duplicated,
            self.settled_by_reconciliation,
            if settled_as.is_empty() {
                String::new()
            } else {
                format!(" ({})", settled_as.join(", "))
            }
        ));
        line(format!(
            "  every payment settled {} after the crowd (reconcile period {:.0} s; the wait \
             allows {:.0} s)",
            self.settled_within_seconds
                .map_or_else(|| "NOT".to_owned(), |s| format!("{s:.1} s")),
            self.reconcile_period_seconds,
            self.settlement_limit_seconds
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: &str, status: &str, seats: &[&str], payment: Option<&str>) -> StoredOrder {
        StoredOrder {
            order_id: id.to_owned(),
            customer_id: format!("c-{id}"),
            status: status.to_owned(),
            seat_ids: seats.iter().map(|s| (*s).to_owned()).collect(),
            amount: 100 * seats.len() as i64,
            currency: "KRW".to_owned(),
            checkout_payment_id: Some(format!("pi-{id}")),
            payment_id: payment.map(str::to_owned),
        }
    }

    fn seat(id: &str, status: &str, held_by: Option<&str>) -> StoredSeat {
        StoredSeat {
            seat_id: id.to_owned(),
            status: status.to_owned(),
            held_by: held_by.map(str::to_owned),
            price: 100,
        }
    }

    fn taken(order: &str, amount: i64, refunded: i64) -> TakenPayment {
        TakenPayment {
            payment_id: format!("pi-{order}"),
            order_id: order.to_owned(),
            amount,
            refunded,
            refunds_asked: refunded,
            refunds: usize::from(refunded > 0),
        }
    }

    /// o1 sold A-1 and A-2 (its webhook came); o2 was paid late, A-3 had gone to o3, and was
    /// refunded in full; o3 sold A-3 (settled by reconciliation); o4 never paid.
    struct Sale {
        orders: Vec<StoredOrder>,
        seats: Vec<StoredSeat>,
        facts: PaymentFacts,
    }

    impl Sale {
        fn settled() -> Self {
            Self {
                orders: vec![
                    order("o1", "PAID", &["A-1", "A-2"], Some("pi-o1")),
                    order("o2", "REFUNDED", &["A-3"], Some("pi-o2")),
                    order("o3", "PAID", &["A-3"], Some("pi-o3")),
                    order("o4", "EXPIRED", &["A-4"], None),
                ],
                seats: vec![
                    seat("A-1", "SOLD", Some("o1")),
                    seat("A-2", "SOLD", Some("o1")),
                    seat("A-3", "SOLD", Some("o3")),
                    seat("A-4", "AVAILABLE", None),
                ],
                facts: PaymentFacts {
                    provider: ProviderView {
                        taken: vec![
                            taken("o1", 200, 0),
                            taken("o2", 100, 100),
                            taken("o3", 100, 0),
                        ],
                        not_taken: 1,
                        unknown: Vec::new(),
                    },
                    settlement: Settlement {
                        after_crowd: Some(Duration::from_millis(12_300)),
                        limit: Duration::from_secs(35),
                        period: Duration::from_secs(10),
                    },
                },
            }
        }

        fn checks(&self) -> [InvariantCheck; 2] {
            [
                every_payment_taken_ends_sold_or_refunded(&self.orders, &self.seats, &self.facts),
                no_refund_exceeds_its_payment(&self.orders, &self.seats, &self.facts),
            ]
        }

        /// Which of the two fail (1, 2).
        fn failing(&self) -> Vec<usize> {
            self.checks()
                .iter()
                .enumerate()
                .filter(|(_, check)| !check.passed)
                .map(|(n, _)| n + 1)
                .collect()
        }

        fn detail(&self, n: usize) -> String {
            self.checks()[n - 1].detail.clone()
        }
    }

    #[test]
    fn a_settled_sale_passes_both_and_says_how_it_ended() {
        let sale = Sale::settled();
        assert_eq!(sale.failing(), Vec::<usize>::new());
        assert_eq!(
            sale.detail(1),
            "3 payments taken: 2 sold (order PAID by it, seats SOLD to it), 1 refunded in full at \
             the provider, 0 both, 0 neither; all so 12.3 s after the crowd (the wait allows 35.0 \
             s: 2 × the 10.0 s reconcile period + 15.0 s)"
        );
        assert_eq!(
            sale.detail(2),
            "1 refunds at the provider, 100 in all, over 3 payments taken: none past its payment, \
             no payment both sold and refunded"
        );
        let [first, second] = sale.checks();
        assert_eq!(
            first.name,
            "every payment taken ends sold or refunded in full"
        );
        assert_eq!(second.name, "no refund exceeds its payment");
    }

    #[test]
    fn a_payment_whose_webhook_never_came_and_was_never_reconciled_fails_the_first() {
        let mut sale = Sale::settled();
        sale.orders[2].status = "PENDING".to_owned();
        sale.orders[2].payment_id = None;
        sale.seats[2] = seat("A-3", "HELD", Some("o3"));
        sale.facts.settlement.after_crowd = None;
        assert_eq!(sale.failing(), vec![1]);
        assert_eq!(
            sale.detail(1),
            "2 problem(s): 1 × payment taken, neither sold nor refunded in full (pi-o3 of order o3 \
             took 100: the order is PENDING, 0 refunded); 1 × not settled within the wait (not \
             every payment taken was sold or refunded in full 35.0 s after the crowd (2 × the \
             10.0 s reconcile period + 15.0 s)) — 3 payments taken: 1 sold (order PAID by it, \
             seats SOLD to it), 1 refunded in full at the provider, 0 both, 1 neither"
        );
    }

    #[test]
    fn a_refund_short_of_the_payment_or_a_paid_order_without_its_seats_fails_the_first() {
        let mut sale = Sale::settled();
        sale.facts.provider.taken[1] = taken("o2", 100, 60);
        assert_eq!(sale.failing(), vec![1]);
        assert!(sale
            .detail(1)
            .contains("pi-o2 of order o2 took 100: the order is REFUNDED by it, 60 refunded"));

        let mut sale = Sale::settled();
        sale.seats[1] = seat("A-2", "HELD", Some("o1"));
        assert_eq!(sale.failing(), vec![1]);
        assert!(sale.detail(1).contains(
            "pi-o1 of order o1 took 200: the order is PAID by it, 1 of its 2 seats not SOLD to it"
        ));

        // PAID, but by another payment: this one bought nothing and was not given back.
        let mut sale = Sale::settled();
        sale.orders[0].payment_id = Some("pi-other".to_owned());
        assert_eq!(sale.failing(), vec![1]);
        assert!(sale
            .detail(1)
            .contains("the order is PAID by another payment, pi-other"));
    }

    #[test]
    fn an_order_naming_a_payment_the_provider_lacks_fails_the_first() {
        let mut sale = Sale::settled();
        sale.facts
            .provider
            .unknown
            .push(("o4".to_owned(), "pi-o4".to_owned()));
        assert_eq!(sale.failing(), vec![1]);
        assert!(sale
            .detail(1)
            .starts_with("1 problem(s): 1 × order names a payment the provider does not have (order o4 names pi-o4)"));
    }

    #[test]
    fn refunds_past_the_payment_fail_the_second() {
        let mut sale = Sale::settled();
        sale.facts.provider.taken[1] = TakenPayment {
            refunds_asked: 150,
            refunds: 2,
            ..taken("o2", 100, 100)
        };
        assert_eq!(sale.failing(), vec![2]);
        assert_eq!(
            sale.detail(2),
            "1 problem(s): 1 × refunds exceed the payment (pi-o2 (order o2) took 100; its 2 \
             refunds give back 150) — 2 refunds at the provider, 150 in all, over 3 payments \
             taken"
        );
    }

    #[test]
    fn a_payment_both_sold_and_refunded_fails_the_second_only() {
        let mut sale = Sale::settled();
        sale.facts.provider.taken[0] = taken("o1", 200, 200);
        assert_eq!(sale.failing(), vec![2]);
        assert!(sale.detail(2).contains(
            "payment both sold and refunded in full (pi-o1 sold order o1 (PAID, seats SOLD) and \
             was refunded 200 of 200)"
        ));
        assert!(sale.detail(1).contains("1 both"), "{}", sale.detail(1));

        let mut sale = Sale::settled();
        sale.facts.provider.taken[2] = TakenPayment {
            refunds_asked: 40,
            refunds: 1,
            ..taken("o3", 100, 0)
        };
        assert_eq!(sale.failing(), vec![2]);
        assert!(sale
            .detail(2)
            .contains("payment sold and refunded in part (pi-o3 sold order o3"));
    }

    #[test]
    fn the_wait_allows_two_periods_and_a_margin() {
        assert_eq!(
            settlement_limit(Duration::from_secs(10)),
            Duration::from_secs(35)
        );
    }

    #[test]
    fn the_report_counts_this_run_s_webhooks_and_this_event_s_reconciliations() {
        let sale = Sale::settled();
        let before = ProviderStats {
            webhooks_sent: 10,
            webhooks_lost: 3,
            webhooks_duplicated: 1,
            webhooks_refused: 0,
            webhooks_undelivered: 0,
            payments: 5,
            succeeded: 5,
            refunds: 0,
            refunded_amount: 0,
        };
        let after = ProviderStats {
            webhooks_sent: 14,
            webhooks_lost: 5,
            webhooks_duplicated: 2,
            ..before
        };
        let record = |payment: &str, order: &str, outcome: &str| Reconciled {
            payment_id: payment.to_owned(),
            order_id: order.to_owned(),
            outcome: outcome.to_owned(),
        };
        let reconciled = [
            record("pi-o3", "o3", "PAID"),
            // Another event's.
            record("pi-x", "x9", "PAID"),
        ];
        let report = PaymentsReport::of(
            0.2,
            (&before, &after),
            &sale.orders,
            &sale.seats,
            &sale.facts,
            &reconciled,
        );
        assert_eq!(
            (
                report.webhooks_sent,
                report.webhooks_lost,
                report.webhooks_duplicated
            ),
            (4, 2, 1)
        );
        assert_eq!((report.checkouts, report.payments_taken), (4, 3));
        assert_eq!((report.sold, report.refunded_in_full), (2, 1));
        assert_eq!(report.settled_by_reconciliation, 1);
        assert_eq!(report.settled_by_reconciliation_as["PAID"], 1);
        assert_eq!(
            report.refunds,
            RefundTotals {
                count: 1,
                amount: 100
            }
        );
        assert_eq!(report.settled_within_seconds, Some(12.3));
        let json = serde_json::to_value(&report).unwrap();
        for field in [
            "webhooksLost",
            "settledByReconciliation",
            "refunds",
            "paymentsTaken",
            "reconcilePeriodSeconds",
            "settledWithinSeconds",
        ] {
            assert!(json.get(field).is_some(), "{field} in {json}");
        }
    }
}
