//! How the crowd moves through an on-sale, step by step (one second, longer only for on-sales
//! of days): arrivals, the pre-queue reading the status until the opening, the draw, admissions
//! at the event's rate within its cap on active customers, and the sell-out that closes the
//! queue. Each step records the crowd's own actions per second; `load_profile.rs` turns them
//! into what each AWS service sees. This is a fluid model: customers are amounts, not people.

use super::on_sale::OnSale;
use super::status_polling;

/// The expiry sweep runs once a minute: a sold-out queue is closed within a minute.
const CLOSE_AFTER_SELL_OUT_SECONDS: f64 = 60.0;
/// Steps a plan may take before they get longer than a second.
const MAX_STEPS: f64 = 400_000.0;

/// One step of the on-sale: the crowd's actions, per second, during it.
#[derive(Debug, Clone, PartialEq)]
pub struct CrowdMoment {
    /// When the step starts, in seconds from the opening (negative before it).
    pub seconds_from_opening: f64,
    pub step_seconds: f64,
    /// Joins (the refused ones after a close included).
    pub joins: f64,
    /// Reads of the public status, at CloudFront.
    pub status_reads: f64,
    /// Pre-queue customers fetching their number from the published draw (one chunk each).
    pub draw_chunk_reads: f64,
    /// Customers admitted (each then claims their access token once).
    pub admissions: f64,
    /// Customers in the queue at the end of the step.
    pub waiting: f64,
    /// Admitted customers shopping at the end of the step.
    pub active: f64,
    /// The queue is open (status served, admitter and sweep ticking).
    pub queue_open: bool,
}

/// What happened to the crowd, in totals.
#[derive(Debug, Clone, PartialEq)]
pub struct SaleOutcome {
    pub pre_queue: f64,
    pub sold_out_after_seconds: Option<f64>,
    /// When the queue closed (sold out) or emptied, from the opening.
    pub ended_after_seconds: f64,
    pub admitted: f64,
    pub paid_orders: f64,
    /// Customers who joined but were never admitted (the queue closed before their turn).
    pub never_admitted: f64,
    /// Customers still waiting at the close, who read the status once more and stop.
    pub waiting_at_close: f64,
    pub peak_waiting: f64,
}

#[derive(Debug, Clone)]
pub struct Crowd {
    pub moments: Vec<CrowdMoment>,
    pub outcome: SaleOutcome,
}

/// Walks the on-sale from the first arrival to the moment nobody waits any more.
pub fn simulate(on_sale: &OnSale) -> Crowd {
    let step = step_seconds(on_sale);
    let first_arrival = -on_sale.opens_after_seconds;
    let last_arrival = first_arrival + on_sale.arrival_window_seconds;
    let time_in_store = on_sale.shopping_seconds.min(on_sale.session_seconds);
    let pre_queue = on_sale.pre_queue();

    let mut moments = Vec::new();
    let mut t = first_arrival;
    let (mut waiting, mut active, mut admitted, mut paid_orders) = (0.0, 0.0, 0.0, 0.0);
    let mut peak_waiting: f64 = 0.0;
    let mut sold_out_at: Option<f64> = None;
    let mut closed_at: Option<f64> = None;
    let mut waiting_at_close = 0.0;

    loop {
        let queue_open = closed_at.is_none();
        let arriving =
            on_sale.arrivals_per_second() * overlap(t, t + step, first_arrival, last_arrival);
        if queue_open {
            waiting += arriving;
        }

        // Shoppers finish (pay, give up or lapse) and free their slots; the admitter fills
        // the free slots at the event's rate until the seats are sold.
        let leaving = active * (step / time_in_store).min(1.0);
        let admitting = if t >= 0.0 && queue_open && sold_out_at.is_none() {
            let free_slots = (on_sale.max_active - active + leaving).max(0.0);
            (on_sale.admit_rate * step).min(free_slots).min(waiting)
        } else {
            0.0
        };
        active += admitting - leaving;
        waiting -= admitting;
        admitted += admitting;
        paid_orders += admitting * on_sale.behaviour.pay_share;
        if sold_out_at.is_none() && paid_orders >= on_sale.orders_to_sell_out() {
            sold_out_at = Some(t + step);
        }
        peak_waiting = peak_waiting.max(waiting);

        let status_reads = if !queue_open {
            0.0
        } else if t + step <= 0.0 {
            // Before the opening everyone's ETA is the time left, the same for all: they read
            // together, every 5 s in the last 50 s.
            let time_left = -(t + step / 2.0);
            waiting / status_polling::interval(time_left)
        } else if t < status_polling::SHORTEST_INTERVAL_SECONDS {
            // The pre-queue keeps its 5 s cadence until its first read after the draw.
            waiting / status_polling::SHORTEST_INTERVAL_SECONDS
        } else {
            status_polling::reads_per_second(waiting, admitting / step)
        };
        // At the draw each pre-queue customer fetches their number on their next read, within
        // the 5 s interval they were reading at.
        let draw_chunk_reads = pre_queue
            * overlap(t, t + step, 0.0, status_polling::SHORTEST_INTERVAL_SECONDS)
            / status_polling::SHORTEST_INTERVAL_SECONDS;

        moments.push(CrowdMoment {
            seconds_from_opening: t,
            step_seconds: step,
            joins: arriving / step,
            status_reads,
            draw_chunk_reads,
            admissions: admitting / step,
            waiting,
            active,
            queue_open,
        });
        t += step;

        if queue_open {
            let sold_out_and_swept =
                sold_out_at.is_some_and(|at| t >= at + CLOSE_AFTER_SELL_OUT_SECONDS);
            let everyone_in = t >= last_arrival && waiting < 0.5;
            if sold_out_and_swept || (everyone_in && t > 0.0) {
                closed_at = Some(t);
                waiting_at_close = waiting;
                waiting = 0.0;
            }
        }
        if closed_at.is_some() && t >= last_arrival {
            break;
        }
    }

    let waiting_customers = on_sale.waiting;
    Crowd {
        moments,
        outcome: SaleOutcome {
            pre_queue,
            sold_out_after_seconds: sold_out_at,
            ended_after_seconds: closed_at.unwrap_or(t),
            admitted,
            paid_orders: paid_orders.min(on_sale.orders_to_sell_out()),
            never_admitted: (waiting_customers - admitted).max(0.0),
            waiting_at_close,
            peak_waiting,
        },
    }
}

/// One second, unless the on-sale would take more than `MAX_STEPS` of them.
fn step_seconds(on_sale: &OnSale) -> f64 {
    let drain = on_sale.waiting / on_sale.sustainable_admit_rate();
    let span = on_sale.arrival_window_seconds + drain + CLOSE_AFTER_SELL_OUT_SECONDS;
    (span / MAX_STEPS).ceil().max(1.0)
}

/// Seconds of `[from, to)` inside `[start, end)`.
fn overlap(from: f64, to: f64, start: f64, end: f64) -> f64 {
    (to.min(end) - from.max(start)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::plan::on_sale::tests::example;
    use crate::tools::plan::on_sale::OnSale;

    fn total(crowd: &Crowd, action: impl Fn(&CrowdMoment) -> f64) -> f64 {
        crowd
            .moments
            .iter()
            .map(|moment| action(moment) * moment.step_seconds)
            .sum()
    }

    #[test]
    fn everyone_joins_once_and_the_pre_queue_fetches_its_numbers_at_the_draw() {
        let crowd = simulate(&example());
        assert!((total(&crowd, |m| m.joins) - 100_000.0).abs() < 1.0);
        assert!((total(&crowd, |m| m.draw_chunk_reads) - 50_000.0).abs() < 1.0);
        assert_eq!(crowd.outcome.pre_queue, 50_000.0);
        // The draw's fetches land in the first 5 s after the opening: 10,000 a second.
        let at_draw = crowd
            .moments
            .iter()
            .find(|m| m.seconds_from_opening == 0.0)
            .unwrap();
        assert_eq!(at_draw.draw_chunk_reads, 10_000.0);
    }

    #[test]
    fn the_pre_queue_reads_every_five_seconds_just_before_the_opening() {
        let crowd = simulate(&example());
        // 10 s before opening: 50,000 - 10 s of arrivals (166.7/s) waiting, every 5 s.
        let moment = crowd
            .moments
            .iter()
            .find(|m| m.seconds_from_opening == -10.0)
            .unwrap();
        let waiting = 100_000.0 / 600.0 * 291.0;
        assert!((moment.status_reads - waiting / 5.0).abs() < 0.01);
        // 4 minutes before, mid-step: ETA 239.5 s, every 23.95 s.
        let early = crowd
            .moments
            .iter()
            .find(|m| m.seconds_from_opening == -240.0)
            .unwrap();
        let waiting_early = 100_000.0 / 600.0 * 61.0;
        assert!((early.status_reads - waiting_early / 23.95).abs() < 0.01);
    }

    #[test]
    fn admission_runs_at_the_rate_until_the_active_cap_fills_then_at_what_shoppers_free() {
        let roomy = OnSale {
            max_active: 1_000_000.0,
            ..example()
        };
        let crowd = simulate(&roomy);
        let first = crowd
            .moments
            .iter()
            .find(|m| m.seconds_from_opening == 0.0)
            .unwrap();
        assert_eq!(first.admissions, 100.0);
        // 20,000 paid orders sell the 50,000 seats: 20,000 / (100 × 0.85) = 235.3 s.
        let sold_out = crowd.outcome.sold_out_after_seconds.unwrap();
        assert_eq!(sold_out, 236.0);
        assert_eq!(crowd.outcome.ended_after_seconds, 296.0);
        assert!((crowd.outcome.admitted - 23_600.0).abs() < 1.0);
        assert!((crowd.outcome.paid_orders - 20_000.0).abs() < 1e-6);
        assert!((crowd.outcome.never_admitted - 76_400.0).abs() < 1.0);

        let capped = simulate(&example());
        let late = capped
            .moments
            .iter()
            .find(|m| m.seconds_from_opening == 600.0)
            .unwrap();
        // 5,000 slots, 180 s each: 27.8 a second once full.
        assert!((late.admissions - 5_000.0 / 180.0).abs() < 0.5);
    }

    #[test]
    fn a_queue_with_seats_for_all_closes_when_it_empties() {
        let small = OnSale {
            waiting: 1_000.0,
            seats: 1_000_000.0,
            ..example()
        };
        let crowd = simulate(&small);
        assert_eq!(crowd.outcome.sold_out_after_seconds, None);
        assert!((crowd.outcome.admitted - 1_000.0).abs() < 1.0);
        assert!(crowd.outcome.never_admitted < 1.0);
        assert!(crowd.outcome.ended_after_seconds >= 300.0);
    }
}
