//! The simulation's result: what the crowd did, what its waiting cost the edge and the origin
//! (at the opening and for the whole wait) and how right the ETAs were, what the tables and the ticket desk hold, how fast each route answered, and the
//! invariants' verdicts. Printed for people, written as JSON for scripts (`--report-json`).

use std::collections::BTreeMap;

use serde::Serialize;

pub use super::chaos::ChaosReport;
use super::customer::{CustomerReport, Outcome};
pub use super::eta_accuracy::{EtaAccuracy, EtaError};
pub use super::invariants::InvariantCheck;
pub use super::latency::RouteLatency;
pub use super::opening::Opening;
pub use super::origin_traffic::OriginTraffic;
pub use super::payments::PaymentsReport;
pub use super::sold_out_forecast::SoldOutForecast;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulationReport {
    pub api: String,
    pub event_id: String,
    /// Pass it as `--seed` to run the same crowd again.
    pub seed: u64,
    pub settings: RunSettings,
    pub customers: CustomerCounts,
    pub waiting_room: WaitingRoom,
    pub holds: HoldCounts,
    pub stored: StoredCounts,
    pub tickets: TicketCounts,
    /// The payments taken and how they ended, the events lost, what reconciliation settled and
    /// what was refunded.
    pub payments: PaymentsReport,
    /// From the first arrival to the last customer's end.
    pub customers_seconds: f64,
    /// The whole run, setup and checks included.
    pub total_seconds: f64,
    /// 503 answers seen (each retried after its `Retry-After`).
    pub unavailable_answers: u64,
    pub latency: Vec<RouteLatency>,
    /// Answers the contract does not allow at that point, grouped.
    pub problems: Vec<Problem>,
    pub invariants: Vec<InvariantCheck>,
    pub notes: Vec<String>,
    /// What `--chaos` did to the dev server's Redis, and what each fault cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chaos: Option<ChaosReport>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSettings {
    pub users: usize,
    pub seats: usize,
    pub max_active: u32,
    pub admit_per_second: u32,
    pub session_seconds: u64,
    pub hold_seconds: u64,
    pub ramp_seconds: f64,
    /// How long after the first arrivals the queue opened.
    pub pre_queue_seconds: f64,
    pub think_ms: u64,
}

/// How the customers' visits ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerCounts {
    /// Joins accepted.
    pub queued: usize,
    /// Joins refused with 409 `queue_closed`.
    pub turned_away: usize,
    pub admitted: usize,
    pub gave_up: usize,
    pub left_while_waiting: usize,
    pub vanished_while_waiting: usize,
    pub left_when_admitted: usize,
    pub vanished_when_admitted: usize,
    pub no_seats_left: usize,
    pub holds_refused: usize,
    pub closed_while_waiting: usize,
    pub admission_expired: usize,
    pub admission_ended: usize,
    pub entry_lost: usize,
    /// Called, but told to wait on when claiming (the order check fails then).
    pub passed_over: usize,
    /// In the pre-queue, but not in its draw (the order check fails then).
    pub left_out_of_draw: usize,
    pub hold_exists: usize,
    pub paid: usize,
    pub refunded: usize,
    pub let_hold_lapse: usize,
    pub released: usize,
    pub release_refused: usize,
    pub payment_unconfirmed: usize,
    /// Late payers whose payment had been cancelled with their lapsed hold (no money taken).
    pub late_payment_refused: usize,
    pub failed: usize,
    /// Still going when the run's time limit struck.
    pub unfinished: usize,
}

/// The wait: the pre-queue and the numbers, what the customers sent, what reached the origin,
/// and the ETAs' errors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingRoom {
    /// Customers who joined before opening and found their number in the draw (or tried to).
    pub pre_queue_entrants: usize,
    /// Customers who learnt a queue number (from the join's answer, or the draw).
    pub numbered: usize,
    /// What the waiting customers sent: status reads and chunk fetches (through the CDN), polls
    /// of the origin after the join (claims, and polls on doubt).
    pub status_reads: u64,
    pub chunk_reads: u64,
    pub origin_polls: u64,
    /// Status and chunk reads answered 429 or 5xx, or not at all, each read again after a
    /// backoff (beside the reads above).
    pub reads_backed_off: u64,
    /// A pre-queue entrant fetched its chunk at a moment of its own within this many seconds of
    /// seeing the draw published (the status's `chunkFetchWindowSeconds`, the largest seen).
    pub chunk_fetch_window_seconds: Option<u64>,
    /// `None` when the server's traffic could not be read.
    pub origin: Option<OriginTraffic>,
    /// The requests a second at the edge and at the origin in the first minute after the
    /// opening, and the requests per waiting customer at both.
    pub opening: Option<Opening>,
    pub eta: EtaAccuracy,
    /// How often the status's "likely sold out" was right.
    pub sold_out_forecast: SoldOutForecast,
}

impl WaitingRoom {
    pub fn tally(
        customers: &[CustomerReport],
        origin: Option<OriginTraffic>,
        opening: Option<Opening>,
    ) -> Self {
        let waits = || customers.iter().map(|customer| &customer.wait);
        Self {
            pre_queue_entrants: waits().filter(|wait| wait.pre_queue).count(),
            numbered: waits().filter(|wait| wait.number.is_some()).count(),
            status_reads: waits().map(|wait| u64::from(wait.status_reads)).sum(),
            chunk_reads: waits().map(|wait| u64::from(wait.chunk_reads)).sum(),
            origin_polls: waits().map(|wait| u64::from(wait.origin_polls)).sum(),
            reads_backed_off: waits().map(|wait| u64::from(wait.reads_backed_off)).sum(),
            chunk_fetch_window_seconds: waits()
                .filter_map(|wait| wait.chunk_fetch_window_seconds)
                .max(),
            origin,
            opening,
            eta: EtaAccuracy::of(waits()),
            sold_out_forecast: SoldOutForecast::tally(customers),
        }
    }

    fn render(&self, line: &mut impl FnMut(String)) {
        line("Waiting room".to_owned());
        line(format!(
            "  {} customers had a number; {} joined the pre-queue, to find theirs in the \
             published draw (each chunk fetched at a moment of the entrant's own within {})",
            self.numbered,
            self.pre_queue_entrants,
            match self.chunk_fetch_window_seconds {
                Some(window) => format!("the status's {window} s"),
                None => "no window: the status gave none".to_owned(),
            }
        ));
        line(format!(
            "  sent while waiting: {} status reads and {} chunk fetches (through the CDN; {} \
             more refused or unanswered, read again after a backoff), {} polls of the origin \
             after joining (claims)",
            self.status_reads, self.chunk_reads, self.reads_backed_off, self.origin_polls
        ));
        if let Some(opening) = &self.opening {
            opening.render(line);
        }
        match &self.origin {
            Some(origin) => render_origin(origin, line),
            None => line("  (no origin figures: the server's traffic could not be read)".into()),
        }
        let eta = &self.eta;
        let error = |name: &str, error: &Option<EtaError>| match error {
            Some(e) => format!(
                "  ETA error {name}: p50 {:.1} s, p90 {:.1} s; relative to the wait p50 {:.2}, \
                 p90 {:.2}{} ({} predictions, {:.0} % too early)",
                e.p50_seconds,
                e.p90_seconds,
                e.p50_relative,
                e.p90_relative,
                match e.short_waits_p90_seconds {
                    Some(short) => format!("; waits under 4 min p90 {short:.1} s"),
                    None => String::new(),
                } + &match e.long_waits_p90_relative {
                    Some(long) => format!(", of 4 min or more p90 {long:.2} of the wait"),
                    None => String::new(),
                },
                e.predictions,
                e.early_share * 100.0
            ),
            None => format!("  ETA error {name}: no prediction to check"),
        };
        line(format!(
            "  ETA error |predicted − called| over the {} customers who saw their number called:",
            eta.called
        ));
        line(error("at join    ", &eta.at_join));
        line(error("along wait ", &eta.along_the_wait));
        let forecast = &self.sold_out_forecast;
        line(format!(
            "  \"likely sold out\": told {} of the {} who waited with a number (and did not leave \
             of their own accord: {} did), {} of them got nothing{}; {} not told got nothing",
            forecast.told,
            forecast.waited,
            forecast.left_of_their_own,
            forecast.told_and_got_nothing,
            match forecast.told_right_share() {
                Some(share) => format!(" ({:.0} % right)", share * 100.0),
                None => String::new(),
            },
            forecast.not_told_and_got_nothing
        ));
    }
}

fn render_origin(origin: &OriginTraffic, line: &mut impl FnMut(String)) {
    line(format!(
        "  origin requests per waiting customer for the whole wait: {:.2} (join, claim, status, \
         draw; leaving not counted)",
        origin.wait_requests_per_customer
    ));
    let status = &origin.status;
    line(format!(
        "  status at the origin: {:.2}/s while customers read it ({:.0} s), peak {:.2}/s in a \
         {:.0} s window; one per {:.0} s cache period is {:.2}/s; the crowd read it {:.1}/s",
        status.origin_per_second,
        status.reading_seconds,
        status.peak_origin_per_second,
        status.window_seconds,
        status.cache_seconds,
        1.0 / status.cache_seconds,
        status.reads_per_second
    ));
    line(format!(
        "  {:<42} {:>8} {:>8}",
        "route (requests during the crowd)", "origin", "CDN"
    ));
    for route in &origin.routes {
        line(format!(
            "  {:<42} {:>8} {:>8}",
            route.route, route.origin, route.edge
        ));
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HoldCounts {
    pub won: u64,
    /// 409 `seats_unavailable`.
    pub lost: u64,
    pub price_changed: u64,
    /// Given back by their customer (`DELETE` of the hold).
    pub released: usize,
    /// Left to lapse by their customer.
    pub lapsed: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredCounts {
    pub seats_total: usize,
    pub seats_sold: usize,
    pub seats_held: usize,
    pub seats_available: usize,
    pub orders: usize,
    pub orders_by_status: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TicketCounts {
    /// Distinct orders with a `ticket_issued` event.
    pub issued_orders: usize,
    /// Distinct orders with a `refund_required` event.
    pub refund_orders: usize,
    /// Distinct outbox events the desk received for the event.
    pub outbox_events: usize,
    /// Distinct SQS messages that carried them.
    pub messages: usize,
    /// Receipts of those messages (SQS delivers at least once).
    pub deliveries: u64,
    /// Whether the desk reached the paid and refunded counts before the wait timed out.
    pub desk_caught_up: bool,
    pub waited_seconds: f64,
}

/// One kind of unexpected answer, how often, and one body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub kind: String,
    pub count: usize,
    pub example: Option<String>,
}

impl CustomerCounts {
    pub fn tally(customers: &[CustomerReport], unfinished: usize) -> Self {
        let mut counts = Self {
            unfinished,
            ..Self::default()
        };
        for customer in customers {
            counts.queued += usize::from(customer.joined);
            counts.admitted += usize::from(customer.admitted);
            counts.gave_up += usize::from(customer.outcome.gave_up());
            let slot = match &customer.outcome {
                Outcome::TurnedAway => &mut counts.turned_away,
                Outcome::LeftWhileWaiting => &mut counts.left_while_waiting,
                Outcome::VanishedWhileWaiting => &mut counts.vanished_while_waiting,
                Outcome::ClosedWhileWaiting => &mut counts.closed_while_waiting,
                Outcome::AdmissionExpired => &mut counts.admission_expired,
                Outcome::EntryLost => &mut counts.entry_lost,
                Outcome::PassedOver => &mut counts.passed_over,
                Outcome::LeftOutOfDraw => &mut counts.left_out_of_draw,
                Outcome::LeftWhenAdmitted => &mut counts.left_when_admitted,
                Outcome::VanishedWhenAdmitted => &mut counts.vanished_when_admitted,
                Outcome::NoSeatsLeft => &mut counts.no_seats_left,
                Outcome::HoldsRefused => &mut counts.holds_refused,
                Outcome::AdmissionEnded => &mut counts.admission_ended,
                Outcome::HoldExists => &mut counts.hold_exists,
                Outcome::Paid { .. } => &mut counts.paid,
                Outcome::RefundRequired { .. } => &mut counts.refunded,
                Outcome::LetHoldLapse { .. } => &mut counts.let_hold_lapse,
                Outcome::Released { .. } => &mut counts.released,
                Outcome::ReleaseRefused { .. } => &mut counts.release_refused,
                Outcome::PaymentUnconfirmed { .. } => &mut counts.payment_unconfirmed,
                Outcome::LatePaymentRefused { .. } => &mut counts.late_payment_refused,
                Outcome::Failed => &mut counts.failed,
            };
            *slot += 1;
        }
        counts
    }
}

impl HoldCounts {
    pub fn tally(customers: &[CustomerReport]) -> Self {
        let mut counts = Self::default();
        for customer in customers {
            counts.won += u64::from(customer.holds_won);
            counts.lost += u64::from(customer.holds_lost);
            counts.price_changed += u64::from(customer.price_changes);
            match customer.outcome {
                Outcome::Released { .. } | Outcome::ReleaseRefused { .. } => counts.released += 1,
                Outcome::LetHoldLapse { .. } => counts.lapsed += 1,
                _ => {}
            }
        }
        counts
    }
}

impl Problem {
    /// The customers' unexpected answers, grouped by kind, most frequent first.
    pub fn group(customers: &[CustomerReport]) -> Vec<Self> {
        let mut groups: BTreeMap<String, Self> = BTreeMap::new();
        for problem in customers.iter().filter_map(|c| c.problem.as_ref()) {
            let kind = problem.kind();
            let entry = groups.entry(kind.clone()).or_insert_with(|| Self {
                kind,
                count: 0,
                example: problem.body().map(str::to_owned),
            });
            entry.count += 1;
        }
        let mut problems: Vec<Self> = groups.into_values().collect();
        problems.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(&b.kind)));
        problems
    }
}

impl SimulationReport {
    /// Whether every invariant held.
    pub fn invariants_hold(&self) -> bool {
        !self.invariants.is_empty() && self.invariants.iter().all(|check| check.passed)
    }

    /// Whether every fault `--chaos` planned was done (true without `--chaos`).
    pub fn chaos_carried_out(&self) -> bool {
        self.chaos.as_ref().is_none_or(ChaosReport::carried_out)
    }

    /// The human-readable report, on stdout.
    pub fn print(&self) {
        print!("{}", self.render());
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        let s = &self.settings;
        let c = &self.customers;
        let h = &self.holds;
        let st = &self.stored;
        let t = &self.tickets;
        line(String::new());
        line(format!(
            "Lineup simulation of event {} against {} (seed {})",
            self.event_id, self.api, self.seed
        ));
        line(format!(
            "  {} users, {} seats; queue: {} active at most, {} admissions/s, {} s sessions; \
             holds last {} s; arrivals over {:.1} s, the queue opening after {:.1} s; think ~{} \
             ms",
            s.users,
            s.seats,
            s.max_active,
            s.admit_per_second,
            s.session_seconds,
            s.hold_seconds,
            s.ramp_seconds,
            s.pre_queue_seconds,
            s.think_ms
        ));
        line(String::new());
        line("Customers".to_owned());
        line(format!(
            "  queued {:>6}   (joins accepted; {} turned away: queue closed)",
            c.queued, c.turned_away
        ));
        line(format!("  admitted {:>4}", c.admitted));
        line(format!(
            "  gave up {:>5}   (left while waiting {}, vanished while waiting {}, left when \
             admitted {}, vanished when admitted {}, no seats left {}, holds refused {})",
            c.gave_up,
            c.left_while_waiting,
            c.vanished_while_waiting,
            c.left_when_admitted,
            c.vanished_when_admitted,
            c.no_seats_left,
            c.holds_refused
        ));
        line(format!(
            "  sold out while waiting {}, admission expired {}, admission ended before holding \
             {}, entry lost {}, passed over {}, left out of the draw {}, hold_exists {}, payment \
             unconfirmed {}, late payment refused (cancelled with the hold) {}, failed {}, \
             unfinished {}",
            c.closed_while_waiting,
            c.admission_expired,
            c.admission_ended,
            c.entry_lost,
            c.passed_over,
            c.left_out_of_draw,
            c.hold_exists,
            c.payment_unconfirmed,
            c.late_payment_refused,
            c.failed,
            c.unfinished
        ));
        line(String::new());
        self.waiting_room.render(&mut line);
        let status = |name: &str| st.orders_by_status.get(name).copied().unwrap_or(0);
        line(String::new());
        line("Holds and orders".to_owned());
        line(format!(
            "  holds won {:>5}   lost {} (409 seats_unavailable), price_changed {}",
            h.won, h.lost, h.price_changed
        ));
        line(format!(
            "  holds released {}, holds left to lapse {}",
            h.released, h.lapsed
        ));
        line(format!(
            "  orders paid {:>3}   (customers saw {} PAID), refunds {} (REFUND_REQUIRED or \
             REFUNDED; customers saw {})",
            status("PAID"),
            c.paid,
            status("REFUND_REQUIRED") + status("REFUNDED"),
            c.refunded
        ));
        let statuses: Vec<String> = st
            .orders_by_status
            .iter()
            .map(|(status, n)| format!("{status} {n}"))
            .collect();
        line(format!(
            "  orders table: {} orders ({})",
            st.orders,
            statuses.join(", ")
        ));
        line(format!(
            "  seats sold {}/{}   (held {}, available {})",
            st.seats_sold, st.seats_total, st.seats_held, st.seats_available
        ));
        line(format!(
            "  tickets issued {} orders, refunds {} orders: {} outbox events in {} SQS messages, \
             {} deliveries; desk {} after {:.1} s",
            t.issued_orders,
            t.refund_orders,
            t.outbox_events,
            t.messages,
            t.deliveries,
            if t.desk_caught_up {
                "caught up"
            } else {
                "DID NOT catch up"
            },
            t.waited_seconds
        ));
        line(format!(
            "  duration {:.1} s of customers, {:.1} s in all; {} answers were 503 (retried)",
            self.customers_seconds, self.total_seconds, self.unavailable_answers
        ));
        line(String::new());
        self.payments.render(&mut line);
        line(String::new());
        line("Latency per route (ms)".to_owned());
        line(format!(
            "  {:<42} {:>7} {:>8} {:>8} {:>8} {:>8}",
            "route", "count", "p50", "p95", "p99", "max"
        ));
        for route in &self.latency {
            line(format!(
                "  {:<42} {:>7} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                route.route, route.count, route.p50_ms, route.p95_ms, route.p99_ms, route.max_ms
            ));
        }
        if !self.problems.is_empty() {
            line(String::new());
            line("Unexpected answers".to_owned());
            for problem in &self.problems {
                line(format!("  {:>5} × {}", problem.count, problem.kind));
                if let Some(example) = &problem.example {
                    line(format!("          e.g. {example}"));
                }
            }
        }
        if let Some(chaos) = &self.chaos {
            line(String::new());
            chaos.render(&mut line);
        }
        if !self.notes.is_empty() {
            line(String::new());
            line("Notes".to_owned());
            for note in &self.notes {
                line(format!("  - {note}"));
            }
        }
        line(String::new());
        line("Invariants".to_owned());
        for (n, check) in self.invariants.iter().enumerate() {
            line(format!(
                "  {} ({}) {}",
                if check.passed { "PASS" } else { "FAIL" },
                n + 1,
                check.name
            ));
            line(format!("         {}", check.detail));
        }
        line(format!(
            "  => {}",
            if self.invariants_hold() {
                "all invariants hold"
            } else {
                "INVARIANTS BROKEN"
            }
        ));
        if !self.chaos_carried_out() {
            line("  => A CHAOS FAULT WAS NOT DONE AS PLANNED (see Chaos above)".to_owned());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(invariants: Vec<InvariantCheck>) -> SimulationReport {
        SimulationReport {
            api: "http://127.0.0.1:3000".to_owned(),
            event_id: "sim-1".to_owned(),
            seed: 7,
            settings: RunSettings {
                users: 10,
                seats: 5,
                max_active: 3,
                admit_per_second: 2,
                session_seconds: 120,
                hold_seconds: 20,
                ramp_seconds: 1.0,
                pre_queue_seconds: 0.5,
                think_ms: 0,
            },
            customers: CustomerCounts::default(),
            waiting_room: WaitingRoom::tally(&[], None, None),
            holds: HoldCounts::default(),
            stored: StoredCounts::default(),
            tickets: TicketCounts::default(),
            payments: PaymentsReport::default(),
            customers_seconds: 1.0,
            total_seconds: 2.0,
            unavailable_answers: 0,
            latency: vec![RouteLatency::of(
                "GET /orders/{orderId}",
                &[std::time::Duration::from_millis(3)],
            )
            .unwrap()],
            problems: Vec::new(),
            invariants,
            notes: Vec::new(),
            chaos: None,
        }
    }

    fn check(name: &'static str, passed: bool, detail: &str) -> InvariantCheck {
        InvariantCheck {
            name,
            passed,
            detail: detail.to_owned(),
        }
    }

    #[test]
    fn a_broken_invariant_is_printed_as_fail_and_fails_the_run() {
        let broken = report(vec![
            check("no seat sold twice", true, "5 SOLD seats"),
            check(
                "one ticket message per paid order",
                false,
                "1 problem(s): x",
            ),
        ]);
        assert!(!broken.invariants_hold());
        let text = broken.render();
        assert!(text.contains("  PASS (1) no seat sold twice"), "{text}");
        assert!(
            text.contains("  FAIL (2) one ticket message per paid order\n         1 problem(s): x"),
            "{text}"
        );
        assert!(text.contains("INVARIANTS BROKEN"));

        let clean = report(vec![check("no seat sold twice", true, "5 SOLD seats")]);
        assert!(clean.invariants_hold());
        assert!(clean.render().contains("all invariants hold"));
        // No checks at all is no evidence: it does not pass.
        assert!(!report(Vec::new()).invariants_hold());
    }
}
