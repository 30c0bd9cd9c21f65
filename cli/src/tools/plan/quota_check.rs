//! Each service's peak beside the limit it must stay under: an AWS default quota, a default of
//! the stack's template, or (for one event's Redis slot) what BENCHMARKS.md measured. A peak
//! above 80% of its limit is flagged with what to raise and to what (the peak over 0.8, rounded
//! up), or, for a limit nobody can raise, with what to change instead.

use serde::Serialize;

use super::aws_figures::{AwsFigures, Quota};
use super::load::{HotKey, Metric, Table};
use super::load_profile::LoadProfile;
use super::operations::{Operations, ONE_EVENT_SLOT_ECPU_PER_SECOND, PENDING_SHARDS};
use super::stack_defaults::{warm_writes, Function, Route};

/// A peak above this share of its limit is flagged.
pub const FLAG_ABOVE: f64 = 0.8;
/// Stripe's API rate limit in live mode, requests a second (docs: "Rate limits").
const STRIPE_LIVE_REQUESTS_PER_SECOND: f64 = 100.0;
/// Lambda keeps this many concurrent executions unreserved.
const UNRESERVED_CONCURRENCY: f64 = 100.0;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub service: &'static str,
    pub figure: String,
    pub unit: &'static str,
    pub peak: f64,
    /// When the peak comes, in seconds from the opening.
    pub at_seconds: Option<f64>,
    pub limit: Option<Limit>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    pub value: f64,
    /// `aws_figures.json quotas.<name>`, `template.yaml <Parameter>` or `BENCHMARKS.md §n`.
    pub source: String,
    pub remedy: Remedy,
    /// The share of the limit above which the peak is flagged.
    #[serde(skip)]
    pub flag_above: f64,
}

/// How a limit is raised.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Remedy {
    /// A Service Quotas request.
    QuotaIncrease,
    /// A template parameter at deploy time.
    StackParameter { parameter: String },
    /// Warm throughput set on the table or index before the on-sale.
    PreWarm,
    /// An ECPU-per-second minimum set on the cache before the on-sale.
    PreScale,
    /// The payment provider raises it on request (Stripe's rate limits).
    ProviderIncrease,
    /// It cannot be raised: change the design instead.
    Redesign { advice: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Verdict {
    Within {
        utilisation: f64,
    },
    Raise {
        to: f64,
        utilisation: f64,
    },
    Exceeds {
        utilisation: f64,
    },
    /// No limit of its own yet (a route the template does not have).
    NoLimit,
}

impl Verdict {
    pub fn is_flag(&self) -> bool {
        matches!(self, Verdict::Raise { .. } | Verdict::Exceeds { .. })
    }
}

/// Who acts on a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Owner {
    /// A default of the stack's template: the template is wrong for this on-sale (its default
    /// should be changed, or the parameter set at deploy).
    Template,
    /// The operator, before the on-sale (pre-warming tables, pre-scaling the cache).
    Operator,
    /// AWS support: an account quota only a Service Quotas request raises.
    AwsSupport,
    /// The payment provider (Stripe's support raises its rate limits).
    PaymentProvider,
    /// Nobody can raise it: the design must change.
    Design,
}

impl Check {
    /// Who acts on this check if it is flagged.
    pub fn owner(&self) -> Owner {
        match self.limit.as_ref().map(|limit| &limit.remedy) {
            Some(Remedy::StackParameter { .. }) => Owner::Template,
            Some(Remedy::PreWarm | Remedy::PreScale) => Owner::Operator,
            Some(Remedy::QuotaIncrease) => Owner::AwsSupport,
            Some(Remedy::ProviderIncrease) => Owner::PaymentProvider,
            Some(Remedy::Redesign { .. }) | None => Owner::Design,
        }
    }
}

/// The peak over `FLAG_ABOVE`, rounded up to two significant figures.
pub fn headroom(peak: f64) -> f64 {
    round_up_to_two_figures(peak / FLAG_ABOVE)
}

fn round_up_to_two_figures(value: f64) -> f64 {
    if value <= 0.0 {
        return 0.0;
    }
    let unit = 10f64.powf(value.log10().floor() - 1.0);
    // Tolerate the float noise of an exact multiple.
    ((value / unit) - 1e-9).ceil() * unit
}

fn judge(peak: f64, limit: &Option<Limit>) -> Verdict {
    let Some(limit) = limit else {
        return Verdict::NoLimit;
    };
    let utilisation = peak / limit.value;
    if utilisation <= limit.flag_above {
        Verdict::Within { utilisation }
    } else if let Remedy::Redesign { .. } = limit.remedy {
        Verdict::Exceeds { utilisation }
    } else if limit.flag_above >= 1.0 {
        Verdict::Raise {
            to: round_up_to_two_figures(peak),
            utilisation,
        }
    } else {
        Verdict::Raise {
            to: headroom(peak),
            utilisation,
        }
    }
}

fn check(
    service: &'static str,
    figure: impl Into<String>,
    unit: &'static str,
    peak: f64,
    at_seconds: Option<f64>,
    limit: Option<Limit>,
) -> Check {
    Check {
        service,
        figure: figure.into(),
        unit,
        peak,
        at_seconds,
        verdict: judge(peak, &limit),
        limit,
    }
}

fn aws(name: &str, quota: &Quota) -> Limit {
    Limit {
        value: quota.value,
        source: format!("aws_figures.json quotas.{name}"),
        remedy: if quota.adjustable {
            Remedy::QuotaIncrease
        } else {
            Remedy::Redesign {
                advice: "a hard limit".to_owned(),
            }
        },
        flag_above: FLAG_ABOVE,
    }
}

fn aws_with(name: &str, quota: &Quota, remedy: Remedy) -> Limit {
    Limit {
        remedy,
        ..aws(name, quota)
    }
}

fn redesign(advice: &str) -> Remedy {
    Remedy::Redesign {
        advice: advice.to_owned(),
    }
}

fn template(parameter: &str, value: f64) -> Limit {
    Limit {
        value,
        source: format!("template.yaml {parameter}"),
        remedy: Remedy::StackParameter {
            parameter: parameter.to_owned(),
        },
        flag_above: FLAG_ABOVE,
    }
}

/// Every check of a plan, service by service.
pub fn checks(profile: &LoadProfile, figures: &AwsFigures, operations: &Operations) -> Vec<Check> {
    let quotas = &figures.quotas;
    let peak = |metric: Metric| profile.peak[metric];
    let at = |metric: Metric| Some(profile.peak_at[metric]);
    let mut checks = Vec::new();

    // CloudFront, and the WAF in front of it, see every viewer request.
    let requests = Metric::CloudFrontRequests;
    checks.push(check(
        "CloudFront",
        "requests (distribution)",
        "req/s",
        peak(requests),
        at(requests),
        Some(aws(
            "cloudfront_requests_per_second",
            &quotas.cloudfront_requests_per_second,
        )),
    ));
    checks.push(check(
        "CloudFront",
        "data transfer out (distribution)",
        "Gbps",
        peak(Metric::CloudFrontBytes) * 8.0 / 1e9,
        at(Metric::CloudFrontBytes),
        Some(aws("cloudfront_gbps", &quotas.cloudfront_gbps)),
    ));
    // The WAF has no request-rate limit of its own here: a web ACL on CloudFront inspects what
    // the distribution serves, at CloudFront's rate (AWS WAF's quotas; a regional web ACL's
    // per-second quota does not apply), so CloudFront's check above is the WAF's too.

    checks.push(check(
        "API Gateway",
        "requests (account, all routes)",
        "req/s",
        peak(Metric::ApiRequests),
        at(Metric::ApiRequests),
        Some(aws(
            "api_gateway_requests_per_second",
            &quotas.api_gateway_requests_per_second,
        )),
    ));
    for route in Route::ALL {
        let metric = Metric::RouteRequests(route);
        let limit = route
            .throttle()
            .map(|(parameter, rate)| template(parameter, rate));
        checks.push(check(
            "API Gateway",
            format!("route {}", route.key()),
            "req/s",
            peak(metric),
            at(metric),
            limit,
        ));
    }

    checks.extend(lambda_checks(profile, figures, operations));
    checks.extend(redis_checks(profile, figures));
    checks.extend(dynamodb_checks(profile, figures, operations));

    // Stripe takes 100 requests a second in live mode (25 in test mode) per account, reads and
    // writes each: checkout's PaymentIntents are the bulk (refunds and reconciliation are few).
    checks.push(check(
        "Stripe",
        "API requests with Lineup's key (live mode)",
        "req/s",
        peak(Metric::ProviderRequests),
        at(Metric::ProviderRequests),
        Some(Limit {
            value: STRIPE_LIVE_REQUESTS_PER_SECOND,
            source: "Stripe's documented live-mode rate limit".to_owned(),
            remedy: Remedy::ProviderIncrease,
            flag_above: FLAG_ABOVE,
        }),
    ));

    checks.push(check(
        "SQS",
        "ticket queue SendMessage (high-throughput FIFO)",
        "msg/s",
        peak(Metric::SqsSends),
        at(Metric::SqsSends),
        Some(aws(
            "sqs_fifo_high_throughput_per_second",
            &quotas.sqs_fifo_high_throughput_per_second,
        )),
    ));
    checks
}

fn lambda_checks(
    profile: &LoadProfile,
    figures: &AwsFigures,
    operations: &Operations,
) -> Vec<Check> {
    let quotas = &figures.quotas;
    let mut checks = Vec::new();
    let mut reservations_needed = 0.0;
    for function in Function::ALL {
        let metric = Metric::LambdaBusySeconds(function);
        let concurrency = profile.peak[metric];
        let reserved = function.reserved_concurrency();
        let limit = template(function.concurrency_parameter(), reserved);
        let verdict = judge(concurrency, &Some(limit.clone()));
        reservations_needed += match verdict {
            Verdict::Raise { to, .. } => to,
            _ => reserved,
        };
        checks.push(check(
            "Lambda",
            format!("concurrency: {}", function.name()),
            "concurrent",
            concurrency,
            Some(profile.peak_at[metric]),
            Some(limit),
        ));
    }
    // The model's loads start at full strength (the first arrival, the opening), so the busiest
    // function needs its peak's instances within the first 10 seconds.
    let (busiest, instances) = Function::ALL
        .iter()
        .map(|function| {
            (
                *function,
                profile.peak[Metric::LambdaBusySeconds(*function)].ceil(),
            )
        })
        .fold((Function::Join, 0.0), |most, next| {
            if next.1 > most.1 {
                next
            } else {
                most
            }
        });
    checks.push(check(
        "Lambda",
        format!("new instances in the first 10 s ({})", busiest.name()),
        "instances",
        instances,
        Some(profile.peak_at[Metric::LambdaBusySeconds(busiest)]),
        Some(aws_with(
            "lambda_scaling_per_10_seconds",
            &quotas.lambda_scaling_per_10_seconds,
            redesign("ramp the load up (stagger the opening) or keep instances warm"),
        )),
    ));
    // Reservations may take all but 100 of the account's concurrency.
    checks.push(check(
        "Lambda",
        "reservations needed + 100 unreserved (account)",
        "concurrent",
        reservations_needed + UNRESERVED_CONCURRENCY,
        None,
        Some(Limit {
            flag_above: 1.0,
            ..aws(
                "lambda_concurrent_executions",
                &quotas.lambda_concurrent_executions,
            )
        }),
    ));
    // The largest answer a function gives: the layout, whole (the availability is a byte per 6
    // seats).
    checks.push(check(
        "Lambda",
        "seat layout response (status, synchronous)",
        "MB",
        operations.layout_bytes / 1_048_576.0,
        None,
        Some(Limit {
            value: quotas.lambda_sync_response_bytes.value / 1_048_576.0,
            ..aws_with(
                "lambda_sync_response_bytes",
                &quotas.lambda_sync_response_bytes,
                redesign("serve the layout in parts (a section a document)"),
            )
        }),
    ));
    checks
}

fn redis_checks(profile: &LoadProfile, figures: &AwsFigures) -> Vec<Check> {
    let quotas = &figures.quotas;
    let ecpu = profile.peak[Metric::RedisEcpu];
    let at = Some(profile.peak_at[Metric::RedisEcpu]);
    vec![
        check(
            "ElastiCache",
            "ECPU (cache maximum)",
            "ECPU/s",
            ecpu,
            at,
            Some(aws_with(
                "elasticache_serverless_max_ecpu_per_second",
                &quotas.elasticache_serverless_max_ecpu_per_second,
                redesign("split the on-sales over several caches"),
            )),
        ),
        check(
            "ElastiCache",
            "ECPU an empty cache serves before scaling",
            "ECPU/s",
            ecpu,
            at,
            Some(aws_with(
                "elasticache_serverless_cold_ecpu_per_second",
                &quotas.elasticache_serverless_cold_ecpu_per_second,
                Remedy::PreScale,
            )),
        ),
        check(
            "ElastiCache",
            "ECPU in one event's slot (one engine thread)",
            "ECPU/s",
            ecpu,
            at,
            Some(Limit {
                value: ONE_EVENT_SLOT_ECPU_PER_SECOND,
                source: "BENCHMARKS.md §1 (raw ZADD on one local core)".to_owned(),
                remedy: redesign("spread one event's queue over several hash tags"),
                flag_above: FLAG_ABOVE,
            }),
        ),
        check(
            "ElastiCache",
            "memory (141.7 bytes a waiting customer)",
            "GB",
            profile.peak_redis_bytes / 1e9,
            None,
            Some(aws_with(
                "elasticache_serverless_max_storage_gb",
                &quotas.elasticache_serverless_max_storage_gb,
                redesign("split the on-sales over several caches"),
            )),
        ),
    ]
}

/// Read or write units, with the quotas that bound them.
struct UnitKind<'a> {
    word: &'static str,
    metric: fn(Table) -> Metric,
    table_quota: (&'static str, &'a Quota),
    new_table_quota: (&'static str, &'a Quota),
}

fn dynamodb_checks(
    profile: &LoadProfile,
    figures: &AwsFigures,
    operations: &Operations,
) -> Vec<Check> {
    let quotas = &figures.quotas;
    let peak = |metric: Metric| profile.peak[metric];
    let at = |metric: Metric| Some(profile.peak_at[metric]);
    let reads = UnitKind {
        word: "reads",
        metric: Metric::ReadUnits,
        table_quota: (
            "dynamodb_on_demand_table_read_units",
            &quotas.dynamodb_on_demand_table_read_units,
        ),
        new_table_quota: (
            "dynamodb_new_table_read_units",
            &quotas.dynamodb_new_table_read_units,
        ),
    };
    let writes = UnitKind {
        word: "writes",
        metric: Metric::WriteUnits,
        table_quota: (
            "dynamodb_on_demand_table_write_units",
            &quotas.dynamodb_on_demand_table_write_units,
        ),
        new_table_quota: (
            "dynamodb_new_table_write_units",
            &quotas.dynamodb_new_table_write_units,
        ),
    };
    let mut checks = Vec::new();

    // A table and its index against the table's quota: the sum of their peaks, which come
    // together (both follow the admissions).
    for base in [Table::Seats, Table::Orders, Table::Outbox, Table::Events] {
        let parts: Vec<Table> = Table::ALL
            .into_iter()
            .filter(|part| part.base() == base)
            .collect();
        let with_index = if parts.len() > 1 {
            ", with its index"
        } else {
            ""
        };
        for kind in [&reads, &writes] {
            let sum: f64 = parts.iter().map(|part| peak((kind.metric)(*part))).sum();
            if sum > 0.0 {
                let (name, quota) = kind.table_quota;
                checks.push(check(
                    "DynamoDB",
                    format!("{}: {}{with_index}", base.name(), kind.word),
                    "units/s",
                    sum,
                    at((kind.metric)(base)),
                    Some(aws(name, quota)),
                ));
            }
        }
    }

    // A new on-demand table or index serves 4,000 writes and 12,000 reads a second at once
    // (its warm throughput). Loads under a unit a second are left out.
    for table in Table::ALL {
        for kind in [&reads, &writes] {
            let metric = (kind.metric)(table);
            if peak(metric) >= 1.0 {
                let (name, quota) = kind.new_table_quota;
                // The template's own warm throughput where it sets one.
                let limit = match warm_writes(table) {
                    Some((parameter, writes)) if kind.word == "writes" => {
                        template(parameter, writes)
                    }
                    _ => aws_with(name, quota, Remedy::PreWarm),
                };
                checks.push(check(
                    "DynamoDB",
                    format!("{}: {}, warm throughput", table.name(), kind.word),
                    "units/s",
                    peak(metric),
                    at(metric),
                    Some(limit),
                ));
            }
        }
    }

    // The hottest keys, each on one partition: the pending index's 8 keys share its load; each
    // draw chunk has a key of its own (each chunk is fetched from the origin once, so its key
    // sees the chunks' reads divided by their number); a layout's parts are stored in
    // `LAYOUT_COPIES` copies, each under its own key, a new hold instance reading one at random.
    let per_key = |metric: Metric| peak(metric) / PENDING_SHARDS;
    let pending_writes = Metric::WriteUnits(Table::PendingIndex);
    let chunk_reads = Metric::KeyReadUnits(HotKey::DrawChunks);
    checks.push(check(
        "DynamoDB",
        "events table: draw chunk reads, on a chunk's own key",
        "units/s",
        peak(chunk_reads) / operations.draw_chunks.max(1.0),
        at(chunk_reads),
        Some(aws_with(
            "dynamodb_partition_read_units",
            &quotas.dynamodb_partition_read_units,
            redesign("a chunk is read more than once a second at the origin: cache it longer"),
        )),
    ));
    let layout_reads = Metric::KeyReadUnits(HotKey::Layout);
    let copies = f64::from(lineup::adapters::dynamo::layouts::LAYOUT_COPIES);
    checks.push(check(
        "DynamoDB",
        format!("events table: layout reads (new hold instances), each of {copies} copies' keys"),
        "units/s",
        peak(layout_reads) / copies,
        at(layout_reads),
        Some(aws_with(
            "dynamodb_partition_read_units",
            &quotas.dynamodb_partition_read_units,
            redesign("store the layout in more copies (LAYOUT_COPIES)"),
        )),
    ));
    checks.push(check(
        "DynamoDB",
        "pending_by_expiry index: writes on the hottest key of 8",
        "units/s",
        per_key(pending_writes),
        at(pending_writes),
        Some(aws_with(
            "dynamodb_partition_write_units",
            &quotas.dynamodb_partition_write_units,
            redesign("more PENDING# shards"),
        )),
    ));
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(value: f64, remedy: Remedy) -> Option<Limit> {
        Some(Limit {
            value,
            source: "test".to_owned(),
            remedy,
            flag_above: FLAG_ABOVE,
        })
    }

    #[test]
    fn headroom_is_the_peak_over_eighty_percent_rounded_up_to_two_figures() {
        assert_eq!(headroom(16_667.0), 21_000.0);
        assert_eq!(headroom(8_000.0), 10_000.0);
        assert_eq!(headroom(1.0), 1.3);
        assert_eq!(headroom(0.0), 0.0);
    }

    #[test]
    fn a_peak_over_eighty_percent_is_flagged_with_what_to_raise_it_to() {
        assert_eq!(
            judge(7_999.0, &limit(10_000.0, Remedy::QuotaIncrease)),
            Verdict::Within {
                utilisation: 0.7999
            }
        );
        assert_eq!(
            judge(9_000.0, &limit(10_000.0, Remedy::QuotaIncrease)),
            Verdict::Raise {
                to: 12_000.0,
                utilisation: 0.9
            }
        );
        let hard = judge(1_500.0, &limit(1_000.0, redesign("shard it")));
        assert_eq!(hard, Verdict::Exceeds { utilisation: 1.5 });
        assert!(hard.is_flag());
        assert_eq!(judge(5.0, &None), Verdict::NoLimit);
    }
}
