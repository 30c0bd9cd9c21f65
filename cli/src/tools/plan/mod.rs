//! `lineup plan`: for the peak of an on-sale, the load on each AWS service beside its default
//! quota (CloudFront, WAF, API Gateway, each function's Lambda concurrency, Redis ECPUs and
//! memory, DynamoDB units per table and on the hottest key, SQS messages), what must be raised
//! and to what, and the cost per million queued customers, service by service.
//!
//! The plan, as [`plan`] reads: describe the on-sale (`on_sale.rs`), walk its crowd through it
//! second by second (`crowd.rs`), price each action in resources from what BENCHMARKS.md
//! measured (`operations.rs`), keep each resource's peak and total (`load_profile.rs`), hold the
//! peaks against the quotas and the template's defaults (`quota_check.rs`) and the totals against
//! the prices (`cost.rs`); prices and quotas live in `aws_figures.json`, with their sources.

mod aws_figures;
mod cost;
mod crowd;
mod error;
mod load;
mod load_profile;
mod on_sale;
mod operations;
mod quota_check;
pub mod report;
mod stack_defaults;
mod status_polling;

use std::time::Duration;

pub use aws_figures::AwsFigures;
pub use error::PlanError;
use lineup::application::hold::BEST_AVAILABLE_ATTEMPTS;
use on_sale::{Behaviour, OnSale};
use operations::Operations;
use report::{OnSaleSummary, Plan, SaleSummary};

/// `lineup plan` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanArgs {
    /// Customers who join the queue.
    #[arg(long)]
    pub waiting: u64,
    /// Seats on sale.
    #[arg(long)]
    pub seats: u64,
    /// Admissions per second the event is configured for.
    #[arg(long)]
    pub rate: f64,
    /// Admitted customers shopping at once, at most.
    #[arg(long, default_value_t = 5_000)]
    pub max_active: u64,
    /// How long an admission lasts.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub session: Duration,
    /// How long an admitted customer takes to pay or give up, on average (frees their slot).
    #[arg(long, default_value = "3m", value_parser = humantime::parse_duration)]
    pub shopping_time: Duration,
    /// The customers arrive evenly over this long.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub arrival_window: Duration,
    /// The queue opens this long after the first arrival (earlier arrivals are the pre-queue).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub opens_after: Duration,
    /// Requests a second a big pre-queue's opening may take at CloudFront (the template's
    /// `EdgeOpeningRequestsPerSecond`).
    #[arg(long, default_value_t = lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND)]
    pub edge_budget: u64,
    /// Seat-map (availability) reads per admitted customer, at CloudFront (BENCHMARKS.md §8: 3.1).
    #[arg(long, default_value_t = Behaviour::default().seat_maps_per_admitted)]
    pub seat_maps_per_customer: f64,
    /// Hold requests per admitted customer, won or lost (BENCHMARKS.md §8: 2.1).
    #[arg(long, default_value_t = Behaviour::default().holds_per_admitted)]
    pub holds_per_customer: f64,
    /// Share of hold requests asking for the best available seats rather than naming seats.
    #[arg(long, default_value_t = Behaviour::default().best_available_share)]
    pub best_available_share: f64,
    /// Hold transactions per best-available request, 1 to 4 (BENCHMARKS.md §7: 2.62, a crowd of
    /// 1,000 on 100 seats: the worst case).
    #[arg(long, default_value_t = Behaviour::default().transactions_per_best_available)]
    pub transactions_per_best_available: f64,
    /// Order-status reads per admitted customer (BENCHMARKS.md §8: 0.5).
    #[arg(long, default_value_t = Behaviour::default().order_reads_per_admitted)]
    pub order_reads_per_customer: f64,
    /// Share of admitted customers who pay, while seats last (BENCHMARKS.md §8: 0.86 of winning
    /// holds).
    #[arg(long, default_value_t = Behaviour::default().pay_share)]
    pub pay_share: f64,
    /// Orders ending unpaid per paid order (BENCHMARKS.md §8: 40 of 237).
    #[arg(long, default_value_t = Behaviour::default().unpaid_orders_per_paid)]
    pub unpaid_per_paid: f64,
    /// Seats per order (BENCHMARKS.md §7: 1–4, evenly).
    #[arg(long, default_value_t = Behaviour::default().seats_per_order)]
    pub seats_per_order: f64,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

impl PlanArgs {
    fn on_sale(&self) -> Result<OnSale, PlanError> {
        let on_sale = OnSale {
            waiting: self.waiting as f64,
            seats: self.seats as f64,
            admit_rate: self.rate,
            max_active: self.max_active as f64,
            session_seconds: self.session.as_secs_f64(),
            shopping_seconds: self.shopping_time.as_secs_f64(),
            arrival_window_seconds: self.arrival_window.as_secs_f64(),
            opens_after_seconds: self.opens_after.as_secs_f64(),
            edge_budget: self.edge_budget.max(1),
            behaviour: Behaviour {
                seat_maps_per_admitted: self.seat_maps_per_customer,
                holds_per_admitted: self.holds_per_customer,
                best_available_share: self.best_available_share,
                transactions_per_best_available: self.transactions_per_best_available,
                order_reads_per_admitted: self.order_reads_per_customer,
                pay_share: self.pay_share,
                unpaid_orders_per_paid: self.unpaid_per_paid,
                seats_per_order: self.seats_per_order,
            },
        };
        let behaviour = &on_sale.behaviour;
        let ratios = [
            behaviour.seat_maps_per_admitted,
            behaviour.holds_per_admitted,
            behaviour.order_reads_per_admitted,
            behaviour.unpaid_orders_per_paid,
        ];
        let problem = if !(1..=1_000_000_000).contains(&self.waiting) {
            Some("--waiting must be between 1 and 1,000,000,000".to_owned())
        } else if self.seats == 0 {
            Some("--seats must be at least 1".to_owned())
        } else if !(self.rate.is_finite() && self.rate >= 0.01) {
            Some("--rate must be at least 0.01".to_owned())
        } else if self.max_active == 0 {
            Some("--max-active must be at least 1".to_owned())
        } else if on_sale.session_seconds < 1.0 || on_sale.shopping_seconds < 1.0 {
            Some("--session and --shopping-time must be at least 1s".to_owned())
        } else if on_sale.arrival_window_seconds < 1.0 {
            Some("--arrival-window must be at least 1s".to_owned())
        } else if !(behaviour.pay_share > 0.0 && behaviour.pay_share <= 1.0) {
            Some("--pay-share must be above 0 and at most 1".to_owned())
        } else if !(behaviour.seats_per_order >= 1.0 && behaviour.seats_per_order.is_finite()) {
            Some("--seats-per-order must be at least 1".to_owned())
        } else if !(0.0..=1.0).contains(&behaviour.best_available_share) {
            Some("--best-available-share must be between 0 and 1".to_owned())
        } else if !(1.0..=BEST_AVAILABLE_ATTEMPTS as f64)
            .contains(&behaviour.transactions_per_best_available)
        {
            Some(format!(
                "--transactions-per-best-available must be between 1 and {BEST_AVAILABLE_ATTEMPTS} \
                 (the most a request tries)"
            ))
        } else if ratios
            .iter()
            .any(|ratio| !(ratio.is_finite() && *ratio >= 0.0))
        {
            Some("the per-customer ratios must be 0 or more".to_owned())
        } else {
            None
        };
        match problem {
            Some(problem) => Err(PlanError::InvalidArguments(problem)),
            None => Ok(on_sale),
        }
    }
}

/// Makes the plan and renders it as the arguments ask (text, or JSON with `--json`).
pub fn run(args: &PlanArgs) -> Result<String, PlanError> {
    let plan = plan(args)?;
    if args.json {
        plan.to_json().map_err(PlanError::Json)
    } else {
        Ok(plan.to_text())
    }
}

pub fn plan(args: &PlanArgs) -> Result<Plan, PlanError> {
    let on_sale = args.on_sale()?;
    let figures = AwsFigures::load()?;
    let operations = Operations::for_on_sale(&on_sale);
    let crowd = crowd::simulate(&on_sale);
    let profile = load_profile::profile(&crowd, &operations, &on_sale);
    let checks = quota_check::checks(&profile, &figures, &operations);
    let costs = cost::costs(&profile, &figures, on_sale.waiting);
    let outcome = &crowd.outcome;

    let flags = checks
        .iter()
        .filter(|check| check.verdict.is_flag())
        .map(report::flag_sentence)
        .collect();
    let mut flags_by_owner = std::collections::BTreeMap::<_, Vec<String>>::new();
    for check in checks.iter().filter(|check| check.verdict.is_flag()) {
        flags_by_owner
            .entry(check.owner())
            .or_default()
            .push(report::flag_sentence(check));
    }
    let unverified = AwsFigures::unverified()?
        .into_iter()
        .map(|provenance| provenance.figure)
        .collect();

    Ok(Plan {
        on_sale: OnSaleSummary {
            waiting: on_sale.waiting,
            seats: on_sale.seats,
            admit_rate: on_sale.admit_rate,
            max_active: on_sale.max_active,
            session_seconds: on_sale.session_seconds,
            shopping_seconds: on_sale.shopping_seconds,
            arrival_window_seconds: on_sale.arrival_window_seconds,
            opens_after_seconds: on_sale.opens_after_seconds,
        },
        sale: SaleSummary {
            pre_queue: outcome.pre_queue,
            sustainable_admit_rate: on_sale.sustainable_admit_rate(),
            sold_out_after_seconds: outcome.sold_out_after_seconds,
            queue_ended_after_seconds: outcome.ended_after_seconds,
            admitted: outcome.admitted,
            paid_orders: outcome.paid_orders,
            never_admitted: outcome.never_admitted,
            peak_waiting: outcome.peak_waiting,
        },
        checks,
        flags,
        flags_by_owner,
        costs,
        region: figures.region.clone(),
        assumptions: assumptions(&on_sale, &operations),
        unverified,
        notes: notes(&on_sale, &operations),
    })
}

/// Warnings about the arguments, and about what the model cannot show as a peak.
fn notes(on_sale: &OnSale, operations: &Operations) -> Vec<String> {
    let mut notes = Vec::new();
    let sustainable = on_sale.sustainable_admit_rate();
    if sustainable < on_sale.admit_rate {
        notes.push(format!(
            "--rate {} is more than --max-active {} sustains with {} of shopping each: after \
             the first slots fill, admission runs at {}/s (raise --max-active to {} for the full rate)",
            report::number(on_sale.admit_rate),
            report::count(on_sale.max_active),
            report::duration(on_sale.shopping_seconds),
            report::number(sustainable),
            report::count((on_sale.admit_rate * on_sale.shopping_seconds).ceil()),
        ));
    }
    let publication = operations.draw_publication[load::Metric::WriteUnits(load::Table::Events)];
    if on_sale.pre_queue() > 0.0 {
        notes.push(format!(
            "Publishing the draw writes {} chunks ({} write units) under the event's one key: at a \
             partition's 1,000 units a second that takes {} unless DynamoDB has split the key",
            report::count(operations.draw_chunks),
            report::count(publication),
            report::duration(publication / 1_000.0),
        ));
    }
    notes
}

/// How the pre-queue reads after the opening (`wait_policy::opening_reads`), in words.
fn opening_assumption(on_sale: &OnSale) -> String {
    let pre_queue = on_sale.pre_queue() as u64;
    let reads = lineup::domain::wait_policy::opening_reads(pre_queue, on_sale.edge_budget);
    if reads.paced() {
        format!(
            "The opening is paced for the edge ({} requests a second, --edge-budget): the \
             pre-queue's one status read and its chunk come within {} s starting {} s after the \
             opening (when the draw should be out), and nobody is called before all of them \
             can hold their numbers.",
            report::count(on_sale.edge_budget as f64),
            reads.spread.as_secs(),
            reads.delay.as_secs(),
        )
    } else {
        "The pre-queue reads the status once within 10 s of the opening (the edge takes it: \
         two requests each within its budget); numbers are called from the draw's publication."
            .to_owned()
    }
}

/// What the plan takes for granted, in the words it is printed with.
fn assumptions(on_sale: &OnSale, operations: &Operations) -> Vec<String> {
    let behaviour = &on_sale.behaviour;
    vec![
        format!(
            "Arrivals even over the window; the pre-queue ({}) learns its numbers at the draw \
             from the published draw ({} chunks of {} bytes), one chunk per customer, fetched \
             within the chunk window after its one status read after the opening.",
            report::count(on_sale.pre_queue()),
            report::count(operations.draw_chunks),
            report::count(operations.draw_chunk_bytes),
        ),
        opening_assumption(on_sale),
        "Waiting customers read the public status through CloudFront every clamp(ETA/10, 5 s, \
         300 s) (each read jittered ±20 %, which averages out), ETA = distance / admission rate \
         (plus the wait for the first call, while nobody is called); before the opening, a \
         tenth of the time left but at most once a minute, and no read in the last minute."
            .to_owned(),
        "The `status` function serves the status (cached 2 s behind Origin Shield: 0.5 origin \
         requests a second), the draw's chunks (immutable: each fetched from the origin once, \
         at the chunk route's throttle), the seat map's availability (cached 1 s: \
         one origin request a second while shoppers read it, whatever their number) and the \
         layout (immutable: fetched from the origin once)."
            .to_owned(),
        format!(
            "Admission at min(rate, max-active / shopping time) = {}/s; a sell-out closes the \
             queue within a minute (the sweep); those still waiting read once more and stop.",
            report::number(on_sale.sustainable_admit_rate()),
        ),
        format!(
            "Per admitted customer (BENCHMARKS.md §7, §8): one layout, {} seat-map reads, {} \
             holds ({} of them best available, {} transactions each: §7's crowd on a sold-out \
             section, the worst case; {:.2} transactions a hold), {} order reads; {} pay while \
             seats last, {} seats an order, {} orders end unpaid per paid one.",
            behaviour.seat_maps_per_admitted,
            behaviour.holds_per_admitted,
            behaviour.best_available_share,
            behaviour.transactions_per_best_available,
            behaviour.transactions_per_hold(),
            behaviour.order_reads_per_admitted,
            behaviour.pay_share,
            behaviour.seats_per_order,
            behaviour.unpaid_orders_per_paid,
        ),
        format!(
            "Redis ECPUs: a script costs its vCPU time relative to one ZADD, taken from \
             BENCHMARKS.md §1's throughput ratios (measured before the new waiting room's \
             scripts): join {:.2}, claim {:.2}, the hold's check {:.2}, the payment's leave \
             {:.2}, the admit tick {:.2} per admission, a seat change {:.2} (two SETBITs, in \
             one script per stream batch); a status read 1. A read of the availability \
             transfers its bits (a byte per 8 seats), 1 ECPU a KB: {:.2} here, once a second at \
             the origin, at each best-available attempt, and every 2 s per warm hold instance. \
             One event's keys share a slot: its ceiling is one engine thread.",
            operations::join_script_ecpu(),
            operations::standing_script_ecpu(),
            operations::script_ecpu(1.0),
            operations::script_ecpu(2.0),
            operations::admit_tick_ecpu_per_admission(),
            operations::seat_change_ecpu(),
            operations::availability_read_ecpu(on_sale.seats),
        ),
        format!(
            "Lambda (arm64, 256 MB, template.yaml): durations are estimates, not measurements: \
             join, claim, status 20 ms; a draw chunk 30 ms; the availability 20 ms + 0.1 µs a \
             seat; the layout 30 ms + 20 ms a part ({} here); hold 50 ms, and 30 ms more per \
             further best-available attempt; a new hold instance indexes the layout, 2 µs a \
             seat; order read 20 ms; checkout 600 ms (Stripe makes the PaymentIntent: one request with \
             Lineup's key), the payment webhook 80 ms; payments come between half and one and a \
             half shopping times after the admission, evenly; 10 ms a ticket message; availability 5 ms a \
             batch + 0.01 ms a seat change, a batch per stream shard ({} assumed) per second, or \
             per 500 changes; concurrency = requests/s × duration.",
            report::count(operations.layout_parts),
            operations::SEATS_STREAM_SHARDS,
        ),
        "DynamoDB units per BENCHMARKS.md §4 less the `seat_map` index ADR 0017 dropped: a hold \
         transaction 2n+5 writes (lost ones billed as if they wrote), a payment 1 read + 2n+7 \
         writes, an unpaid order 2+n; no seat is read from the table. Each new hold instance \
         and the origin read the layout once (an eventually consistent Query of its parts, under \
         one of its 32 copies' keys, picked at random); each draw chunk is read once, under its \
         own key, and a `status` instance reads the draw's summary once. The seats table's \
         stream is read by Lambda for free."
            .to_owned(),
        format!(
            "Sizes, uncompressed (CloudFront compresses; these are upper bounds): the \
             availability seats/6 + 80 a section ({} assumed) + 150 bytes ({} bytes for this \
             venue), the layout 13.7 bytes a seat ({} MB), as BENCHMARKS.md §7 measured; a \
             status answer 600 bytes; other answers 700 bytes.",
            operations::SECTIONS,
            report::count(operations.availability_bytes),
            report::number(operations.layout_bytes / 1_048_576.0),
        ),
        "Everything goes through CloudFront and the WAF, the payment webhook too; Bot Control \
         (off by default) is counted, on the join, queue and holds routes. A web ACL on \
         CloudFront inspects at the distribution's rate: it has no request-rate quota of its own \
         to check (CloudFront's is the one). Free tiers and volume \
         discounts are ignored; CloudWatch Logs and the Secrets Manager endpoint's hourly charge \
         are not modelled."
            .to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        args: PlanArgs,
    }

    fn args(line: &[&str]) -> PlanArgs {
        Command::try_parse_from(["plan"].iter().chain(line))
            .expect("arguments parse")
            .args
    }

    fn flagged(plan: &Plan, service: &str, figure_starts: &str) -> bool {
        plan.checks.iter().any(|check| {
            check.service == service
                && check.figure.starts_with(figure_starts)
                && check.verdict.is_flag()
        })
    }

    #[test]
    fn ten_million_waiting_flags_api_gateway_lambda_and_redis() {
        let plan = plan(&args(&[
            "--waiting",
            "10000000",
            "--seats",
            "50000",
            "--rate",
            "100",
            "--max-active",
            "20000",
        ]))
        .unwrap();
        // 10,000,000 joins over 10 minutes: 16,667 a second, above API Gateway's 10,000 and the
        // join route's 1,500.
        assert!(flagged(&plan, "API Gateway", "requests (account"));
        assert!(flagged(
            &plan,
            "API Gateway",
            "route POST /events/{eventId}/queue"
        ));
        // At 20 ms a join: 333 concurrent joins, above the 200 reserved.
        assert!(flagged(&plan, "Lambda", "concurrency: join"));
        // 16,667 joins × 3.54 ECPUs = 59,000 a second, above an empty cache's 30,000.
        assert!(flagged(&plan, "ElastiCache", "ECPU an empty cache"));
        // The 5,000,000 pre-queue entrants' two requests each are paced to 125,000 a second:
        // CloudFront's 250,000 is not reached (it was, at a million a second, before).
        assert!(!flagged(&plan, "CloudFront", "requests"));
        // The WAF on CloudFront inspects at CloudFront's rate: no limit of its own to flag.
        assert!(!plan.checks.iter().any(|check| check.service == "WAF"));
        assert!(!plan.flags.is_empty());
        let join = plan
            .checks
            .iter()
            .find(|check| check.figure == "requests (account, all routes)")
            .unwrap();
        assert!(join.peak > 16_666.0);
        assert!(matches!(join.verdict, quota_check::Verdict::Raise { to, .. } if to >= 21_000.0));
    }

    #[test]
    fn ten_thousand_waiting_in_a_small_venue_flags_nothing() {
        let plan = plan(&args(&[
            "--waiting",
            "10000",
            "--seats",
            "2000",
            "--rate",
            "20",
        ]))
        .unwrap();
        assert!(plan.flags.is_empty(), "flagged: {:#?}", plan.flags);
        assert!(plan.sale.sold_out_after_seconds.is_some());
    }

    #[test]
    fn the_json_output_has_the_plans_parts() {
        let text = run(&args(&[
            "--waiting",
            "100000",
            "--seats",
            "50000",
            "--rate",
            "100",
            "--json",
        ]))
        .unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        for part in [
            "onSale",
            "sale",
            "checks",
            "flags",
            "costs",
            "assumptions",
            "unverified",
        ] {
            assert!(json.get(part).is_some(), "no {part} in {json}");
        }
        assert_eq!(json["onSale"]["waiting"], 100_000.0);
        let check = &json["checks"][0];
        for field in [
            "service",
            "figure",
            "unit",
            "peak",
            "atSeconds",
            "limit",
            "verdict",
        ] {
            assert!(check.get(field).is_some(), "no {field} in {check}");
        }
        assert!(check["verdict"]["kind"].is_string());
        assert!(check["limit"]["source"]
            .as_str()
            .unwrap()
            .contains("aws_figures.json"));
        let services: Vec<&str> = json["costs"]["services"]
            .as_array()
            .unwrap()
            .iter()
            .map(|cost| cost["service"].as_str().unwrap())
            .collect();
        assert_eq!(
            services,
            [
                "CloudFront",
                "WAF",
                "API Gateway",
                "Lambda",
                "ElastiCache",
                "DynamoDB",
                "SQS",
                "Secrets Manager"
            ]
        );
        assert!(json["costs"]["totalPerMillionQueued"].as_f64().unwrap() > 0.0);
        assert!(json["unverified"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(
                "prices.cloudfront_https_requests_per_10k"
            )));
    }

    #[test]
    fn the_text_output_names_every_service_and_the_cost() {
        let text = run(&args(&[
            "--waiting",
            "100000",
            "--seats",
            "50000",
            "--rate",
            "25",
        ]))
        .unwrap();
        // The WAF on CloudFront has no rate of its own to check (its cost is in the table).
        assert!(!text.contains("\nWAF\n"));
        for service in [
            "CloudFront",
            "API Gateway",
            "Lambda",
            "ElastiCache",
            "DynamoDB",
            "SQS",
        ] {
            assert!(
                text.contains(&format!("\n{service}\n")),
                "no {service} table"
            );
        }
        assert!(text.contains("per million"));
        assert!(text.contains("Unverified figures"));
    }

    #[test]
    fn nonsense_arguments_are_refused() {
        for line in [
            &["--waiting", "0", "--seats", "10", "--rate", "1"][..],
            &["--waiting", "10", "--seats", "0", "--rate", "1"],
            &["--waiting", "10", "--seats", "10", "--rate", "0"],
            &[
                "--waiting",
                "10",
                "--seats",
                "10",
                "--rate",
                "1",
                "--pay-share",
                "1.5",
            ],
            &[
                "--waiting",
                "10",
                "--seats",
                "10",
                "--rate",
                "1",
                "--seats-per-order",
                "0.5",
            ],
            &[
                "--waiting",
                "10",
                "--seats",
                "10",
                "--rate",
                "1",
                "--best-available-share",
                "1.5",
            ],
            &[
                "--waiting",
                "10",
                "--seats",
                "10",
                "--rate",
                "1",
                "--transactions-per-best-available",
                "5",
            ],
            &[
                "--waiting",
                "10",
                "--seats",
                "10",
                "--rate",
                "1",
                "--transactions-per-best-available",
                "0.5",
            ],
        ] {
            assert!(
                matches!(plan(&args(line)), Err(PlanError::InvalidArguments(_))),
                "{line:?} was accepted"
            );
        }
    }

    fn check<'a>(plan: &'a Plan, figure_starts: &str) -> &'a quota_check::Check {
        plan.checks
            .iter()
            .find(|check| check.figure.starts_with(figure_starts))
            .unwrap_or_else(|| panic!("no check {figure_starts}"))
    }

    #[test]
    fn the_seat_map_is_read_at_cloudfront_and_set_by_availability() {
        let plan = plan(&args(&[
            "--waiting",
            "100000",
            "--seats",
            "50000",
            "--rate",
            "100",
            "--max-active",
            "20000",
        ]))
        .unwrap();
        // No index any more, and nothing about it.
        assert!(plan
            .checks
            .iter()
            .all(|check| !check.figure.contains("seat_map")));
        // Nothing read from the seats table.
        assert!(plan
            .checks
            .iter()
            .all(|check| !check.figure.starts_with("seats table: reads")));
        // The seat map's origin: one request a second, under the status routes' throttle.
        let seat_map = check(&plan, "route GET /events/{eventId}/seats");
        assert_eq!(seat_map.peak, 1.0);
        assert_eq!(seat_map.limit.as_ref().unwrap().value, 100.0);
        // The largest answer is the layout, 685,000 bytes.
        let layout = check(&plan, "seat layout response");
        assert!((layout.peak - 685_000.0 / 1_048_576.0).abs() < 1e-9);
        // The ninth function keeps up within its 10 reserved.
        let availability = check(&plan, "concurrency: availability");
        assert!(availability.peak > 0.0 && availability.peak < 1.0);
        assert_eq!(availability.limit.as_ref().unwrap().value, 10.0);
        // Only the payment provider's rate: 85 PaymentIntents a second at 100 admitted a second,
        // 85% of Stripe's live-mode 100.
        assert_eq!(plan.flags.len(), 1, "flagged: {:#?}", plan.flags);
        assert!(flagged(&plan, "Stripe", "API requests"));
    }

    #[test]
    fn a_huge_venue_flags_the_layouts_size_and_its_key() {
        let plan = plan(&args(&[
            "--waiting",
            "100000",
            "--seats",
            "400000",
            "--rate",
            "500",
            "--max-active",
            "1000000",
        ]))
        .unwrap();
        // 400,000 seats: a 5.2 MB layout, 87% of Lambda's 6 MB.
        assert!(flagged(&plan, "Lambda", "seat layout response"));
        // 669 read units a layout, read by each of about 80 new hold instances at the opening:
        // spread over the layout's 32 copies, no key is past a partition's 3,000 units.
        assert!(!flagged(&plan, "DynamoDB", "events table: layout reads"));
    }

    #[test]
    fn a_rate_the_active_cap_cannot_sustain_is_noted() {
        let plan = plan(&args(&[
            "--waiting",
            "100000",
            "--seats",
            "50000",
            "--rate",
            "100",
        ]))
        .unwrap();
        assert!(plan.notes[0].contains("27.8/s"), "{}", plan.notes[0]);
        assert!(plan.notes[0].contains("18,000"), "{}", plan.notes[0]);
    }
}
