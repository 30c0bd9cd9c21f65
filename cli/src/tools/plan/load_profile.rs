//! What the on-sale asks of each service, second by second: the crowd's actions (`crowd.rs`)
//! priced in resources (`operations.rs`). Keeps, for every metric, its peak and when it came
//! (each service peaks at its own moment: joins while the crowd arrives, status reads just
//! before the opening, holds and payments while admissions run), and the on-sale's totals, which
//! the costs are made of.

use super::crowd::Crowd;
use super::load::{Load, Metric};
use super::on_sale::OnSale;
use super::operations::{
    availability_invocations, Operations, AVAILABILITY_CACHE_SECONDS, CURRENT_LAYOUT_SECONDS,
    LAYOUTS_PER_ADMITTED, REDIS_BYTES_PER_WAITING_CUSTOMER, SECRET_REFRESH_SECONDS,
    SECRET_VERSIONS_READ, STATUS_CACHE_SECONDS,
};
use super::stack_defaults::Function;

#[derive(Debug, Clone)]
pub struct LoadProfile {
    /// Each metric's largest amount per second.
    pub peak: Load,
    /// When each peak came, in seconds from the opening.
    pub peak_at: Load,
    /// Each metric over the whole on-sale.
    pub total: Load,
    /// Redis memory at its fullest.
    pub peak_redis_bytes: f64,
    /// Redis data stored over the on-sale, in GB-hours.
    pub redis_gb_hours: f64,
}

pub fn profile(crowd: &Crowd, operations: &Operations, on_sale: &OnSale) -> LoadProfile {
    let behaviour = &on_sale.behaviour;
    let mut peak = Load::default();
    let mut peak_at = Load::default();
    let mut total = Load::default();
    let mut peak_redis_bytes: f64 = 0.0;
    let mut redis_gb_hours = 0.0;
    let mut duration_seconds = 0.0;
    let mut hold_instances: f64 = 0.0;
    let mut layout_fetched = false;
    // Customers pay after shopping, some faster, some slower: the payments of a second follow
    // the admissions of between half and one and a half shopping times before, evenly (each
    // moment: its start, admissions a second, length).
    let mut admissions: Vec<(f64, f64, f64)> = Vec::new();
    let shopping = on_sale.shopping_seconds.max(1.0);
    let paying_at = |admissions: &[(f64, f64, f64)], at: f64| {
        let (from, to) = (at - 1.5 * shopping, at - 0.5 * shopping);
        admissions
            .iter()
            .map(|(start, rate, step)| {
                let overlap = (to.min(start + step) - from.max(*start)).max(0.0);
                rate * overlap
            })
            .sum::<f64>()
            / (to - from)
    };

    // The pre-queue's chunk fetches spread over the page's window (`wait_policy`): each chunk
    // is a cold miss once, so the origin sees at most the chunks over the window a second.
    let chunk_fetch_window = lineup::domain::wait_policy::chunk_fetch_window(
        operations.draw_chunks as u64,
        lineup::domain::event_settings::EventSettings::DEFAULT_CLAIM_WINDOW,
    )
    .as_secs_f64();
    for moment in &crowd.moments {
        let mut second = Load::default();
        second.add(&operations.join, moment.joins);
        second.add(&operations.status_read, moment.status_reads);
        if moment.queue_open {
            second.add(&operations.status_origin_fetch, 1.0 / STATUS_CACHE_SECONDS);
            second.add(&operations.queue_open_second, 1.0);
        }
        // Each draw chunk is fetched from the origin once (it never changes; Origin Shield
        // collapses the edges' misses), while the pre-queue fetches its chunks.
        second.add(&operations.draw_chunk_read, moment.draw_chunk_reads);
        let chunk_fetches = moment
            .draw_chunk_reads
            .min(operations.draw_chunks / chunk_fetch_window);
        second.add(&operations.draw_chunk_origin_fetch, chunk_fetches);

        let admitted = moment.admissions;
        admissions.push((moment.seconds_from_opening, admitted, moment.step_seconds));
        let seat_maps = admitted * behaviour.seat_maps_per_admitted;
        let holds = admitted * behaviour.holds_per_admitted;
        let exact_holds = holds * (1.0 - behaviour.best_available_share);
        // Holds won now (one per order, paid or not); payments and lapses a shopping time later.
        let won_holds = admitted * behaviour.pay_share * (1.0 + behaviour.unpaid_orders_per_paid);
        let paying = paying_at(&admissions, moment.seconds_from_opening);
        let payments = paying * behaviour.pay_share;
        let unpaid = payments * behaviour.unpaid_orders_per_paid;
        second.add(&operations.claim, admitted);
        second.add(&operations.exact_hold, exact_holds);
        second.add(
            &operations.best_available_hold,
            holds * behaviour.best_available_share,
        );
        second.add(
            &operations.order_read,
            admitted * behaviour.order_reads_per_admitted,
        );
        second.add(&operations.payment, payments);
        second.add(&operations.ticket_message, payments);
        second.add(&operations.unpaid_order_end, unpaid);

        // The seat map and the layout are public: CloudFront answers the shoppers. The origin
        // sees the availability once per cache period while anyone reads it, whatever the
        // crowd, and the layout once (immutable), when the first customer fetches it.
        second.add(&operations.seat_map_read, seat_maps);
        second.add(
            &operations.seat_map_origin_fetch,
            seat_maps.min(1.0 / AVAILABILITY_CACHE_SECONDS),
        );
        let layouts = admitted * LAYOUTS_PER_ADMITTED;
        second.add(&operations.layout_read, layouts);
        if layouts > 0.0 && !layout_fetched {
            second.add(&operations.layout_origin_fetch, 1.0 / moment.step_seconds);
            layout_fetched = true;
        }

        // Each new `hold` instance loads the layout once; each warm one checks the current
        // version at most every 2 s when it serves an exact hold. (Instances stay warm through
        // the on-sale: the busiest second's are the ones there are.)
        let instances = second[Metric::LambdaBusySeconds(Function::Hold)].ceil();
        let new_instances = (instances - hold_instances).max(0.0);
        hold_instances = hold_instances.max(instances);
        second.add(
            &operations.hold_layout_load,
            new_instances / moment.step_seconds,
        );
        second.add(
            &operations.hold_layout_check,
            exact_holds.min(instances / CURRENT_LAYOUT_SECONDS),
        );

        // Every seat write is a record on the seats table's stream, which `availability` applies
        // to the bits in Redis: a winning hold (one per order, paid or not), a sale, a seat
        // freed. Cancelled transactions write nothing.
        let seat_changes = (won_holds + payments + unpaid) * behaviour.seats_per_order;
        second.add(
            &operations.availability_batch,
            availability_invocations(seat_changes),
        );
        second.add(&operations.seat_change, seat_changes);

        peak.keep_larger(&second, moment.seconds_from_opening, &mut peak_at);
        total.add(&second, moment.step_seconds);

        let redis_bytes = (moment.waiting + moment.active) * REDIS_BYTES_PER_WAITING_CUSTOMER;
        peak_redis_bytes = peak_redis_bytes.max(redis_bytes);
        redis_gb_hours += redis_bytes / 1e9 * moment.step_seconds / 3_600.0;
        duration_seconds += moment.step_seconds;
    }

    // The payments of those admitted in the last shopping times come after the crowd's last
    // moment: a second at a time, in the totals and as peak candidates.
    let end = crowd.moments.last().map_or(0.0, |moment| {
        moment.seconds_from_opening + moment.step_seconds
    });
    let tail_seconds = (1.5 * shopping).ceil() as usize;
    for second_after in 0..tail_seconds {
        let time = end + second_after as f64;
        let payments = paying_at(&admissions, time) * behaviour.pay_share;
        let unpaid = payments * behaviour.unpaid_orders_per_paid;
        let mut second = Load::default();
        second.add(&operations.payment, payments);
        second.add(&operations.ticket_message, payments);
        second.add(&operations.unpaid_order_end, unpaid);
        second.add(
            &operations.seat_change,
            (payments + unpaid) * behaviour.seats_per_order,
        );
        peak.keep_larger(&second, time, &mut peak_at);
        total.add(&second, 1.0);
    }

    // Those still waiting when the queue closes read the status once more, and stop. The draw
    // is written once, at the opening.
    total.add(&operations.status_read, crowd.outcome.waiting_at_close);
    if crowd.outcome.pre_queue > 0.0 {
        total.add(&operations.draw_publication, 1.0);
    }

    // Each warm instance of a function holding secrets reads them at cold start and every
    // 5 minutes; the peak concurrency is how many instances there were.
    let reads_per_secret = SECRET_VERSIONS_READ * (1.0 + duration_seconds / SECRET_REFRESH_SECONDS);
    total[Metric::SecretsCalls] += Function::ALL
        .iter()
        .map(|function| peak[Metric::LambdaBusySeconds(*function)].ceil() * function.secrets_read())
        .sum::<f64>()
        * reads_per_secret;

    LoadProfile {
        peak,
        peak_at,
        total,
        peak_redis_bytes,
        redis_gb_hours,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::plan::crowd::simulate;
    use crate::tools::plan::load::{HotKey, Table};
    use crate::tools::plan::on_sale::tests::example;
    use crate::tools::plan::stack_defaults::Route;

    fn profile_of(on_sale: &OnSale) -> LoadProfile {
        profile(
            &simulate(on_sale),
            &Operations::for_on_sale(on_sale),
            on_sale,
        )
    }

    #[test]
    fn joins_peak_at_the_arrival_rate_and_holds_at_the_admission_rate() {
        let roomy = OnSale {
            max_active: 1_000_000.0,
            ..example()
        };
        let profile = profile_of(&roomy);
        // 100,000 over 600 s.
        let joins = profile.peak[Metric::RouteRequests(Route::Join)];
        assert!((joins - 166.67).abs() < 0.01);
        // 100 admitted a second × 2.1 holds; payments 100 × 0.85 straight to API Gateway.
        assert!((profile.peak[Metric::RouteRequests(Route::Hold)] - 210.0).abs() < 1e-9);
        assert!((profile.peak[Metric::RouteRequests(Route::Webhook)] - 85.0).abs() < 1e-9);
        assert!(profile.peak_at[Metric::RouteRequests(Route::Hold)] >= 0.0);
        // Every join is one Lambda invocation, over the whole on-sale.
        assert!((profile.total[Metric::LambdaInvocations(Function::Join)] - 100_000.0).abs() < 1.0);
    }

    #[test]
    fn cloudfront_peaks_while_the_pre_queue_reads_once_and_fetches_its_numbers() {
        let profile = profile_of(&example());
        // 50,000 pre-queue customers, seconds 6 to 10 after the opening: 5,000 status reads
        // (one each within 10 s) and 5,000 chunk fetches a second (within 6 s of the read),
        // plus 166.7 joins, 100 claims, and the admitted customers' requests (100 layouts, 310
        // seat maps, 210 holds, 50 order reads); payments come a shopping time later. And the
        // reads of those who hold their numbers already: at second 9, the 45,000 who read and
        // the 1,500 who joined since, less the 900 admitted, at 100 a second.
        let peak = profile.peak[Metric::CloudFrontRequests];
        let numbered = super::super::status_polling::reads_per_second(45_600.0, 100.0);
        let expected =
            5_000.0 + 5_000.0 + 100_000.0 / 600.0 + 100.0 + 100.0 + 310.0 + 210.0 + 50.0 + numbered;
        assert!(
            (peak - expected).abs() < 200.0,
            "peak {peak}, expected about {expected}"
        );
        assert!((6.0..10.0).contains(&profile.peak_at[Metric::CloudFrontRequests]));
    }

    #[test]
    fn the_seat_maps_origin_load_does_not_grow_with_the_shoppers() {
        let origin_peak = |admit_rate: f64| {
            let on_sale = OnSale {
                admit_rate,
                max_active: 1_000_000.0,
                ..example()
            };
            let profile = profile_of(&on_sale);
            // The shoppers' reads reach CloudFront: 3.1 per admission.
            let viewer_bytes = profile.peak[Metric::CloudFrontBytes];
            assert!(viewer_bytes > admit_rate * 3.1 * 8_700.0);
            (
                profile.peak[Metric::RouteRequests(Route::SeatMap)],
                profile.total[Metric::RouteRequests(Route::SeatMap)],
                profile.peak[Metric::ReadUnits(Table::Seats)],
            )
        };
        // 10 or 100 admitted a second (31 or 310 seat-map reads): one origin request a second
        // either way, and no DynamoDB read of the seats.
        let (few_peak, few_total, few_seat_reads) = origin_peak(10.0);
        let (many_peak, many_total, many_seat_reads) = origin_peak(100.0);
        assert_eq!(few_peak, 1.0);
        assert_eq!(many_peak, 1.0);
        assert_eq!((few_seat_reads, many_seat_reads), (0.0, 0.0));
        // Over the on-sale: a request a second while admissions run (the bigger crowd sells out
        // sooner, so asks even less), never one per read.
        assert!(many_total <= few_total);
        assert!(many_total < 23_600.0 * 3.1 / 100.0);
    }

    #[test]
    fn each_hold_instance_and_the_origin_read_the_layout_once() {
        let profile = profile_of(&example());
        let per_read = Operations::for_on_sale(&example()).layout_origin_fetch
            [Metric::KeyReadUnits(HotKey::Layout)];
        let reads = profile.total[Metric::KeyReadUnits(HotKey::Layout)] / per_read;
        let instances = profile.peak[Metric::LambdaBusySeconds(Function::Hold)].ceil();
        // The origin's one read, and one per instance there ever was.
        assert!((reads - reads.round()).abs() < 1e-9, "{reads}");
        assert!(
            reads >= 2.0 && reads <= instances + 1.0,
            "{reads} for {instances}"
        );
        assert_eq!(profile.total[Metric::RouteRequests(Route::Layout)], 1.0);
    }

    #[test]
    fn availability_is_invoked_per_shard_until_its_batches_fill() {
        let at_rate = |admit_rate: f64| {
            let on_sale = OnSale {
                admit_rate,
                max_active: 1_000_000.0,
                ..example()
            };
            profile_of(&on_sale).peak[Metric::LambdaInvocations(Function::Availability)]
        };
        // 100 admitted a second: (99.45 orders held + 85 sold + 14.45 freed) × 2.5 seats = 497
        // changes a second over 4 shards, each invoked once a second by the batching window.
        assert!((at_rate(100.0) - 4.0).abs() < 1e-9);
        // 1,000 a second: the 100,000 are admitted in 100 s, winning 994.5 holds a second (×
        // 2.5 seats: 2,486 changes, 4.97 batches of 500), their payments and lapses coming
        // later, spread over the next shopping times: the holds' second is the peak.
        let got = at_rate(1_000.0);
        assert!((got - 2_486.25 / 500.0).abs() < 0.01, "{got}");
    }
}
