//! What the on-sale costs, service by service: its totals (`load_profile.rs`) at the prices in
//! `aws_figures.json`, then per million queued customers. Monthly charges that do not grow with
//! the crowd (a web ACL, the cache's minimum) are listed apart, not spread over customers.

use serde::Serialize;

use super::aws_figures::AwsFigures;
use super::load::{Metric, Table};
use super::load_profile::LoadProfile;
use super::stack_defaults::Function;

/// Bytes in a billed GB (AWS bills data transfer per GiB).
const BYTES_PER_GB: f64 = 1_073_741_824.0;
/// The smallest data a Valkey serverless cache is billed for, GB.
const VALKEY_MINIMUM_GB: f64 = 0.1;
const HOURS_PER_MONTH: f64 = 730.0;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCost {
    pub service: &'static str,
    /// USD for the whole on-sale.
    pub on_sale: f64,
    pub per_million_queued: f64,
    /// What the amount is made of.
    pub made_of: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixedMonthlyCost {
    pub what: String,
    pub usd_per_month: f64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Costs {
    pub services: Vec<ServiceCost>,
    pub total_on_sale: f64,
    pub total_per_million_queued: f64,
    pub fixed_monthly: Vec<FixedMonthlyCost>,
}

pub fn costs(profile: &LoadProfile, figures: &AwsFigures, queued: f64) -> Costs {
    let prices = &figures.prices;
    let total = |metric: Metric| profile.total[metric];

    let viewer_requests = total(Metric::CloudFrontRequests);
    let transferred_gb = total(Metric::CloudFrontBytes) / BYTES_PER_GB;
    let cloudfront = viewer_requests / 10_000.0 * prices.cloudfront_https_requests_per_10k.value
        + transferred_gb * prices.cloudfront_data_transfer_per_gb.value;

    let bot_control = total(Metric::BotControlRequests);
    let waf = viewer_requests / 1e6 * prices.waf_requests_per_million.value
        + bot_control / 1e6 * prices.waf_bot_control_per_million.value;

    let api_billed = total(Metric::ApiBilledRequests);
    let api_gateway = api_billed / 1e6 * prices.api_gateway_http_per_million.value;

    let invocations: f64 = Function::ALL
        .iter()
        .map(|function| total(Metric::LambdaInvocations(*function)))
        .sum();
    let gb_seconds: f64 = Function::ALL
        .iter()
        .map(|function| total(Metric::LambdaBusySeconds(*function)) * function.memory_mb() / 1024.0)
        .sum();
    let lambda = invocations / 1e6 * prices.lambda_requests_per_million.value
        + gb_seconds * prices.lambda_arm_gb_second.value;

    let ecpus = total(Metric::RedisEcpu);
    let elasticache = ecpus / 1e6 * prices.elasticache_valkey_ecpu_per_million.value
        + profile.redis_gb_hours * prices.elasticache_valkey_gb_hour.value;

    let read_units: f64 = Table::ALL
        .iter()
        .map(|table| total(Metric::ReadUnits(*table)))
        .sum();
    let write_units: f64 = Table::ALL
        .iter()
        .map(|table| total(Metric::WriteUnits(*table)))
        .sum();
    let dynamodb = read_units / 1e6 * prices.dynamodb_on_demand_read_per_million.value
        + write_units / 1e6 * prices.dynamodb_on_demand_write_per_million.value;

    let sqs_requests = total(Metric::SqsRequests);
    let sqs = sqs_requests / 1e6 * prices.sqs_fifo_requests_per_million.value;

    let secret_calls = total(Metric::SecretsCalls);
    let secrets = secret_calls / 10_000.0 * prices.secrets_manager_per_10k_calls.value;

    let per_million = |usd: f64| usd / queued * 1e6;
    let service = |service, on_sale: f64, made_of: String| ServiceCost {
        service,
        on_sale,
        per_million_queued: per_million(on_sale),
        made_of,
    };
    let services = vec![
        service(
            "CloudFront",
            cloudfront,
            format!(
                "{} HTTPS requests, {} GB out",
                millions(viewer_requests),
                round(transferred_gb)
            ),
        ),
        service(
            "WAF",
            waf,
            format!(
                "{} requests inspected, {} by Bot Control",
                millions(viewer_requests),
                millions(bot_control)
            ),
        ),
        service(
            "API Gateway",
            api_gateway,
            format!("{} requests billed (512 KB units)", millions(api_billed)),
        ),
        service(
            "Lambda",
            lambda,
            format!(
                "{} invocations, {} GB-s arm64",
                millions(invocations),
                round(gb_seconds)
            ),
        ),
        service(
            "ElastiCache",
            elasticache,
            format!(
                "{} ECPUs, {} GB-hours",
                millions(ecpus),
                round(profile.redis_gb_hours)
            ),
        ),
        service(
            "DynamoDB",
            dynamodb,
            format!(
                "{} read units, {} write units",
                millions(read_units),
                millions(write_units)
            ),
        ),
        service(
            "SQS",
            sqs,
            format!("{} FIFO requests", millions(sqs_requests)),
        ),
        service(
            "Secrets Manager",
            secrets,
            format!("{} GetSecretValue calls", round(secret_calls)),
        ),
    ];
    let total_on_sale: f64 = services.iter().map(|cost| cost.on_sale).sum();

    let fixed_monthly = vec![
        FixedMonthlyCost {
            what: "WAF web ACL".to_owned(),
            usd_per_month: prices.waf_web_acl_per_month.value,
        },
        FixedMonthlyCost {
            what: "WAF rule or rule group, each".to_owned(),
            usd_per_month: prices.waf_rule_per_month.value,
        },
        FixedMonthlyCost {
            what: "WAF Bot Control subscription".to_owned(),
            usd_per_month: prices.waf_bot_control_per_month.value,
        },
        FixedMonthlyCost {
            what: "ElastiCache Valkey's 100 MB minimum".to_owned(),
            usd_per_month: VALKEY_MINIMUM_GB
                * HOURS_PER_MONTH
                * prices.elasticache_valkey_gb_hour.value,
        },
    ];

    Costs {
        services,
        total_on_sale,
        total_per_million_queued: per_million(total_on_sale),
        fixed_monthly,
    }
}

fn millions(count: f64) -> String {
    format!("{:.2}M", count / 1e6)
}

fn round(amount: f64) -> String {
    if amount >= 100.0 {
        format!("{amount:.0}")
    } else {
        format!("{amount:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::plan::load::Load;

    fn profile_with(total: Load, redis_gb_hours: f64) -> LoadProfile {
        LoadProfile {
            peak: Load::default(),
            peak_at: Load::default(),
            total,
            peak_redis_bytes: 0.0,
            redis_gb_hours,
        }
    }

    fn cost_of<'a>(costs: &'a Costs, service: &str) -> &'a ServiceCost {
        costs
            .services
            .iter()
            .find(|cost| cost.service == service)
            .unwrap()
    }

    #[test]
    fn each_service_is_priced_from_the_data_file_worked_by_hand() {
        let figures = AwsFigures::load().unwrap();
        let mut total = Load::default();
        // 2,000,000 status reads of 600 bytes at CloudFront.
        total[Metric::CloudFrontRequests] = 2_000_000.0;
        total[Metric::CloudFrontBytes] = 1_200_000_000.0;
        // 1,000,000 join invocations of 20 ms at 256 MB.
        total[Metric::LambdaInvocations(Function::Join)] = 1_000_000.0;
        total[Metric::LambdaBusySeconds(Function::Join)] = 20_000.0;
        // 4,000,000 write units.
        total[Metric::WriteUnits(Table::Seats)] = 4_000_000.0;
        let costs = costs(&profile_with(total, 0.5), &figures, 1_000_000.0);

        // 200 × $0.01 + 1.2e9 / 2^30 GB × $0.085 = $2.00 + $0.095.
        let cloudfront = cost_of(&costs, "CloudFront").on_sale;
        assert!(
            (cloudfront - (2.0 + 1.117_587 * 0.085)).abs() < 1e-4,
            "{cloudfront}"
        );
        // 2 million inspected × $0.60.
        assert!((cost_of(&costs, "WAF").on_sale - 1.2).abs() < 1e-9);
        // $0.20 + 5,000 GB-s × $0.0000133334.
        assert!((cost_of(&costs, "Lambda").on_sale - (0.2 + 0.066_667)).abs() < 1e-5);
        // 4 million write units × $0.625.
        assert!((cost_of(&costs, "DynamoDB").on_sale - 2.5).abs() < 1e-9);
        // 0.5 GB-hours × $0.084.
        assert!((cost_of(&costs, "ElastiCache").on_sale - 0.042).abs() < 1e-9);
        // One million queued: per million is the on-sale's cost.
        assert!((costs.total_per_million_queued - costs.total_on_sale).abs() < 1e-9);
    }
}
