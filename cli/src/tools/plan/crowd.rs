//! How the crowd moves through an on-sale, step by step (one second, longer only for on-sales
//! of days): arrivals, the pre-queue reading the status until the opening, the draw, admissions
//! at the event's rate within its cap on active customers, and the sell-out that closes the
//! queue. Each step records the crowd's own actions per second; `load_profile.rs` turns them
//! into what each AWS service sees. This is a fluid model: customers are amounts, not people.

use super::on_sale::OnSale;
use super::status_polling;
use lineup::domain::wait_policy;

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
    // The page's opening (`lineup::domain::wait_policy`): each pre-queue entrant reads the
    // status once at a moment of its own within `opening_spread`, `opening_delay` after the
    // opening, then fetches its chunk at a moment of its own within `fetch_window` of that
    // read. A pre-queue too big for 10 s is paced to the edge budget: its reads start when the
    // draw should be out, and nobody is called before `first_call` (the draw published at
    // `opening_delay`, as estimated).
    let reads = wait_policy::opening_reads(pre_queue as u64, on_sale.edge_budget);
    let (opening_delay, opening_spread) = (reads.delay.as_secs_f64(), reads.spread.as_secs_f64());
    let chunks = super::operations::draw_chunks(pre_queue) as u64;
    let claim_window = lineup::domain::event_settings::EventSettings::DEFAULT_CLAIM_WINDOW;
    let fetch_window = wait_policy::chunk_fetch_window(chunks, claim_window).as_secs_f64();
    let opens = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    let first_call = wait_policy::first_call_at(
        opens,
        opens + reads.delay,
        pre_queue as u64,
        claim_window,
        on_sale.edge_budget,
    )
    .duration_since(opens)
    .unwrap_or_default()
    .as_secs_f64();

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
        let admitting = if t >= first_call && queue_open && sold_out_at.is_none() {
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
            // Before the opening everyone's ETA is the time left: a (jittered) tenth of it, at
            // least a minute, while that read comes before the opening; in the last minute
            // nobody reads (the one read is just after the opening).
            let time_left = -(t + step / 2.0);
            let interval = status_polling::interval(time_left)
                .max(wait_policy::MIN_PRE_QUEUE_INTERVAL.as_secs_f64());
            if interval < time_left {
                waiting / interval
            } else {
                0.0
            }
        } else if t < opening_delay + opening_spread {
            // The pre-queue's one read after the opening, spread over `opening_spread`; those who
            // read it already (they hold their numbers) and whoever else waits (joined since
            // the opening) read as usual: at the event's rate's pace (while nobody is called
            // yet, an ETA shorter than theirs: more reads, not fewer).
            let share_read =
                overlap(0.0, t, opening_delay, opening_delay + opening_spread) / opening_spread;
            let unread = pre_queue * (1.0 - share_read);
            pre_queue * overlap(t, t + step, opening_delay, opening_delay + opening_spread)
                / opening_spread
                / step
                + status_polling::reads_per_second_before_first_call(
                    (waiting - unread).max(0.0),
                    on_sale.admit_rate,
                    first_call - t,
                )
        } else if t < first_call {
            // Everyone holds a number; nobody is called yet: every ETA counts the wait too.
            status_polling::reads_per_second_before_first_call(
                waiting,
                on_sale.admit_rate,
                first_call - t,
            )
        } else {
            status_polling::reads_per_second(waiting, admitting / step)
        };
        // Each pre-queue entrant fetches its number at its read's moment plus a moment within
        // the fetch window: the sum of two uniform delays.
        let draw_chunk_reads = pre_queue
            * opening_fetch_share(
                t - opening_delay,
                t + step - opening_delay,
                opening_spread,
                fetch_window,
            )
            / step;

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

/// The share of the pre-queue fetching its chunk within `[from, to)` seconds of the opening:
/// the mass there of U(0, `spread`) + U(0, `window`) (a trapezoid), summed over tenths of a
/// second.
fn opening_fetch_share(from: f64, to: f64, spread: f64, window: f64) -> f64 {
    let (short, long) = (spread.min(window).max(1e-9), spread.max(window).max(1e-9));
    let density = |x: f64| {
        if x < 0.0 || x > short + long {
            0.0
        } else {
            x.min(short).min(short + long - x) / (short * long)
        }
    };
    let start = from.max(0.0);
    let end = to.min(short + long);
    if end <= start {
        return 0.0;
    }
    let slices = ((end - start) / 0.1).ceil().max(1.0);
    let width = (end - start) / slices;
    (0..slices as usize)
        .map(|i| density(start + (i as f64 + 0.5) * width) * width)
        .sum()
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
        // The draw's fetches: each entrant's read within 10 s of the opening, then its fetch
        // within the 6 s window of 256 chunks: the first second takes 1/120 of them, seconds 6
        // to 10 a tenth each (5,000 a second), the last ends at 16 s.
        let at = |second: f64| {
            crowd
                .moments
                .iter()
                .find(|m| m.seconds_from_opening == second)
                .unwrap()
                .draw_chunk_reads
        };
        assert!((at(0.0) - 50_000.0 / 120.0).abs() < 0.5, "{}", at(0.0));
        assert!((at(7.0) - 5_000.0).abs() < 0.5, "{}", at(7.0));
        assert!(at(16.0) < 1.0);
    }

    #[test]
    fn the_pre_queue_reads_once_just_after_the_opening_not_every_five_seconds_before() {
        let crowd = simulate(&example());
        let at = |second: f64| {
            crowd
                .moments
                .iter()
                .find(|m| m.seconds_from_opening == second)
                .unwrap()
                .status_reads
        };
        // In the last 50 s before the opening nobody reads; just after it the 50,000 read
        // once each within 10 s: 5,000 a second. Those who read already hold their numbers and
        // read as everyone waiting does, with the few who joined since: at second 3, the
        // 15,000 who read and the 500 who joined, less the 300 admitted, at 100 a second.
        assert_eq!(at(-10.0), 0.0);
        let numbered = status_polling::reads_per_second(15_000.0 + 500.0 - 300.0, 100.0);
        assert!(
            (at(3.0) - 5_000.0 - numbered).abs() < 60.0,
            "{} vs {}",
            at(3.0),
            5_000.0 + numbered
        );
        // 4 minutes before, mid-step: ETA 239.5 s, a tenth 23.95 s: once a minute.
        let early = crowd
            .moments
            .iter()
            .find(|m| m.seconds_from_opening == -240.0)
            .unwrap();
        let waiting_early = 100_000.0 / 600.0 * 61.0;
        assert!((early.status_reads - waiting_early / 60.0).abs() < 0.01);
    }

    #[test]
    fn a_pre_queue_too_big_for_ten_seconds_is_paced_and_called_after_it() {
        // 10 M waiting, half before the opening: 5 M entrants, two requests each at 125,000 a
        // second: read over 80 s from 40 s after the opening (the draw's estimate), chunks
        // within 20 s, the first call 13 s later: 153 s after the opening.
        let big = OnSale {
            waiting: 10_000_000.0,
            seats: 80_000.0,
            admit_rate: 500.0,
            max_active: 20_000.0,
            ..example()
        };
        let crowd = simulate(&big);
        let first_admission = crowd
            .moments
            .iter()
            .find(|m| m.admissions > 0.0)
            .unwrap()
            .seconds_from_opening;
        assert_eq!(first_admission, 153.0);
        // No chunk is fetched before the draw's estimate; the pre-queue's reads and chunk
        // fetches together stay within the budget.
        let at = |second: f64| {
            crowd
                .moments
                .iter()
                .find(|m| m.seconds_from_opening == second)
                .unwrap()
        };
        assert!(at(10.0).draw_chunk_reads == 0.0);
        for second in 40..140 {
            let moment = at(f64::from(second));
            let opening_requests = moment.draw_chunk_reads + 5_000_000.0 / 80.0;
            assert!(
                opening_requests <= 125_000.0 * 1.01,
                "{second}: {opening_requests}"
            );
        }
        assert!((total(&crowd, |m| m.draw_chunk_reads) - 5_000_000.0).abs() < 10.0);
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
