//! The on-sale a plan is for: how many wait, for how many seats, how fast they are let in, when
//! they arrive, and what an admitted customer does. Everything a plan computes follows from
//! this and from the per-operation counts in `operations.rs`.

/// How admitted customers behave, as ratios. The defaults come from the whole-on-sale runs in
/// BENCHMARKS.md §8 (the larger one: 5,000 customers, 500 seats, 980 admitted) and the
/// contention run in §7; each field says which figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    /// Seat-map (availability) reads per admitted customer, at CloudFront. §8: 3,070 reads by
    /// 980 admitted = 3.1. (Each customer also fetches the layout once: not a behaviour.)
    pub seat_maps_per_admitted: f64,
    /// Hold requests (won or lost) per admitted customer. §8: 279 won + 1,778 lost by 980
    /// admitted = 2.1 (the CI run: 1,159 by 570 = 2.0). Lost holds are the contention of §7.
    pub holds_per_admitted: f64,
    /// The share of hold requests that ask for the best available seats in a section rather than
    /// name seats. Not measured (§8's crowd names seats): half.
    pub best_available_share: f64,
    /// Hold transactions per best-available request (it tries up to 4 blocks; an exact hold is
    /// one). §7 "Best available against exact seats": 2,622 transactions for 1,000 requests =
    /// 2.62, with 1,000 customers on 100 seats: a crowd on a sold-out section, the worst case.
    pub transactions_per_best_available: f64,
    /// Order-status reads per admitted customer. §8: 481 by 980 = 0.5.
    pub order_reads_per_admitted: f64,
    /// Admitted customers who pay, while seats last. §8: of 279 winning holds, 237 were paid and
    /// 2 refunded = 0.86; at the opening almost every admitted customer finds seats to hold.
    pub pay_share: f64,
    /// Orders that end unpaid (released, or lapsed and swept) per paid order. §8: 13 released +
    /// 27 lapsed against 237 paid = 0.17.
    pub unpaid_orders_per_paid: f64,
    /// Seats in an order. §7's customers ask for 1–4 seats, evenly: 2.5.
    pub seats_per_order: f64,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            seat_maps_per_admitted: 3.1,
            holds_per_admitted: 2.1,
            best_available_share: 0.5,
            transactions_per_best_available: 2.62,
            order_reads_per_admitted: 0.5,
            pay_share: 0.85,
            unpaid_orders_per_paid: 0.17,
            seats_per_order: 2.5,
        }
    }
}

/// An on-sale, in plain numbers (seconds, customers, seats).
#[derive(Debug, Clone, PartialEq)]
pub struct OnSale {
    /// Customers who join the queue.
    pub waiting: f64,
    pub seats: f64,
    /// Admissions per second the event is configured for.
    pub admit_rate: f64,
    /// Admitted customers shopping at once, at most.
    pub max_active: f64,
    /// How long an admission lasts.
    pub session_seconds: f64,
    /// How long an admitted customer takes, on average, to pay or give up: what frees their
    /// slot. Not measured (the §8 crowd thinks for 1 s); a hold lasts 5 minutes, so a payer is
    /// done within a few minutes of being let in.
    pub shopping_seconds: f64,
    /// The customers arrive evenly over this long.
    pub arrival_window_seconds: f64,
    /// The queue opens this long after the first arrival: those who come earlier are the
    /// pre-queue, drawn at the opening.
    pub opens_after_seconds: f64,
    /// Requests a second a big pre-queue's opening may take at CloudFront (the admit function's
    /// `EdgeOpeningRequestsPerSecond`): its reads are spread to it and the first call waits.
    pub edge_budget: u64,
    pub behaviour: Behaviour,
}

impl OnSale {
    /// Customers who arrive before the opening.
    pub fn pre_queue(&self) -> f64 {
        let before_opening = self.opens_after_seconds.min(self.arrival_window_seconds);
        self.waiting * before_opening / self.arrival_window_seconds
    }

    /// Customers arriving per second during the arrival window.
    pub fn arrivals_per_second(&self) -> f64 {
        self.waiting / self.arrival_window_seconds
    }

    /// Admissions per second the event can keep up: the configured rate, unless the cap on
    /// active customers fills faster than shoppers finish.
    pub fn sustainable_admit_rate(&self) -> f64 {
        let time_in_store = self.shopping_seconds.min(self.session_seconds);
        self.admit_rate.min(self.max_active / time_in_store)
    }

    /// Paid orders that sell every seat.
    pub fn orders_to_sell_out(&self) -> f64 {
        self.seats / self.behaviour.seats_per_order
    }
}

impl Behaviour {
    /// Hold transactions per hold request, exact and best available together.
    pub fn transactions_per_hold(&self) -> f64 {
        1.0 - self.best_available_share
            + self.best_available_share * self.transactions_per_best_available
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// 100,000 customers over 10 minutes, the opening 5 minutes in, 50,000 seats at 100/s.
    pub(crate) fn example() -> OnSale {
        OnSale {
            waiting: 100_000.0,
            seats: 50_000.0,
            admit_rate: 100.0,
            max_active: 5_000.0,
            session_seconds: 600.0,
            shopping_seconds: 180.0,
            arrival_window_seconds: 600.0,
            opens_after_seconds: 300.0,
            edge_budget: lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
            behaviour: Behaviour::default(),
        }
    }

    #[test]
    fn half_the_crowd_arrives_before_an_opening_half_way_through_the_window() {
        let on_sale = example();
        assert_eq!(on_sale.pre_queue(), 50_000.0);
        let all_early = OnSale {
            opens_after_seconds: 900.0,
            ..example()
        };
        assert_eq!(all_early.pre_queue(), 100_000.0);
    }

    #[test]
    fn the_active_cap_limits_the_sustained_admission_rate() {
        // 5,000 slots freed every 180 s: 27.8 a second, below the configured 100.
        let capped = example();
        assert!((capped.sustainable_admit_rate() - 27.777).abs() < 0.01);
        let roomy = OnSale {
            max_active: 20_000.0,
            ..example()
        };
        assert_eq!(roomy.sustainable_admit_rate(), 100.0);
        // 50,000 seats at 2.5 a paid order.
        assert_eq!(roomy.orders_to_sell_out(), 20_000.0);
    }

    #[test]
    fn best_available_requests_bring_more_transactions_per_hold() {
        // Half exact (1 each), half best available (2.62 each): 1.81.
        let behaviour = Behaviour::default();
        assert!((behaviour.transactions_per_hold() - 1.81).abs() < 1e-9);
        let exact_only = Behaviour {
            best_available_share: 0.0,
            ..Behaviour::default()
        };
        assert_eq!(exact_only.transactions_per_hold(), 1.0);
        let best_only = Behaviour {
            best_available_share: 1.0,
            ..Behaviour::default()
        };
        assert_eq!(best_only.transactions_per_hold(), 2.62);
    }
}
