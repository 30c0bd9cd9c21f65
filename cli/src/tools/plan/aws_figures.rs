//! The AWS prices and default quotas a plan is measured against, read from `aws_figures.json`
//! (compiled into the binary): the one place to update when AWS changes a price or a quota.
//! Every figure names its source and the date it was checked, or says it is unverified; loading
//! refuses a figure that does not.

use serde::Deserialize;

use super::error::PlanError;

const FIGURES_JSON: &str = include_str!("aws_figures.json");

/// `checked` of a figure no search confirmed.
pub const UNVERIFIED: &str = "unverified";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsFigures {
    pub about: String,
    pub region: String,
    pub prices: Prices,
    pub quotas: Quotas,
}

/// A price: what AWS charges for one unit of something.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub value: f64,
    pub unit: String,
    pub source: String,
    pub checked: String,
    #[serde(default)]
    pub confidence: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

/// A default quota: how much of something AWS gives an account (or a resource) before it is
/// asked for more, or for good when it is not `adjustable`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    pub value: f64,
    pub unit: String,
    pub adjustable: bool,
    pub source: String,
    pub checked: String,
    #[serde(default)]
    pub confidence: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub cloudfront_https_requests_per_10k: Price,
    pub cloudfront_data_transfer_per_gb: Price,
    pub waf_requests_per_million: Price,
    pub waf_web_acl_per_month: Price,
    pub waf_rule_per_month: Price,
    pub waf_bot_control_per_million: Price,
    pub waf_bot_control_per_month: Price,
    pub api_gateway_http_per_million: Price,
    pub lambda_arm_gb_second: Price,
    pub lambda_requests_per_million: Price,
    pub elasticache_valkey_ecpu_per_million: Price,
    pub elasticache_valkey_gb_hour: Price,
    pub elasticache_ecpu_per_simple_command: Price,
    pub dynamodb_on_demand_write_per_million: Price,
    pub dynamodb_on_demand_read_per_million: Price,
    pub sqs_fifo_requests_per_million: Price,
    pub secrets_manager_per_10k_calls: Price,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quotas {
    pub cloudfront_requests_per_second: Quota,
    pub cloudfront_gbps: Quota,
    pub waf_requests_per_second: Quota,
    pub api_gateway_requests_per_second: Quota,
    pub lambda_concurrent_executions: Quota,
    pub lambda_scaling_per_10_seconds: Quota,
    pub lambda_sync_response_bytes: Quota,
    pub elasticache_serverless_max_ecpu_per_second: Quota,
    pub elasticache_serverless_cold_ecpu_per_second: Quota,
    pub elasticache_serverless_max_storage_gb: Quota,
    pub dynamodb_on_demand_table_read_units: Quota,
    pub dynamodb_on_demand_table_write_units: Quota,
    pub dynamodb_new_table_read_units: Quota,
    pub dynamodb_new_table_write_units: Quota,
    pub dynamodb_partition_read_units: Quota,
    pub dynamodb_partition_write_units: Quota,
    pub sqs_fifo_high_throughput_per_second: Quota,
}

/// Where one figure of the file came from, for listing what is unverified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// `prices.<name>` or `quotas.<name>`.
    pub figure: String,
    pub source: String,
    pub checked: String,
}

impl AwsFigures {
    /// The compiled-in figures, each checked to carry its provenance.
    pub fn load() -> Result<AwsFigures, PlanError> {
        let figures: AwsFigures =
            serde_json::from_str(FIGURES_JSON).map_err(PlanError::FiguresUnreadable)?;
        for provenance in provenance_of_every_figure()? {
            check_provenance(&provenance)?;
        }
        Ok(figures)
    }

    /// The figures no search confirmed, by name.
    pub fn unverified() -> Result<Vec<Provenance>, PlanError> {
        Ok(provenance_of_every_figure()?
            .into_iter()
            .filter(|provenance| provenance.checked == UNVERIFIED)
            .collect())
    }
}

/// Read from the file itself rather than the typed structs, so no figure can be forgotten.
fn provenance_of_every_figure() -> Result<Vec<Provenance>, PlanError> {
    let file: serde_json::Value =
        serde_json::from_str(FIGURES_JSON).map_err(PlanError::FiguresUnreadable)?;
    let mut all = Vec::new();
    for group in ["prices", "quotas"] {
        let figures =
            file[group]
                .as_object()
                .ok_or_else(|| PlanError::FigureWithoutProvenance {
                    figure: group.to_owned(),
                    problem: "is not an object of figures".to_owned(),
                })?;
        for (name, figure) in figures {
            let text = |field: &str| figure[field].as_str().unwrap_or_default().to_owned();
            all.push(Provenance {
                figure: format!("{group}.{name}"),
                source: text("source"),
                checked: text("checked"),
            });
        }
    }
    Ok(all)
}

fn check_provenance(provenance: &Provenance) -> Result<(), PlanError> {
    let problem = if !provenance.source.starts_with("https://") {
        Some("has no https source")
    } else if provenance.checked != UNVERIFIED && !is_iso_date(&provenance.checked) {
        Some("has a `checked` that is neither a YYYY-MM-DD date nor \"unverified\"")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(PlanError::FigureWithoutProvenance {
            figure: provenance.figure.clone(),
            problem: problem.to_owned(),
        }),
        None => Ok(()),
    }
}

fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, byte)| match i {
            4 | 7 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_every_figure_has_a_source_and_a_date() {
        let figures = AwsFigures::load().expect("aws_figures.json loads");
        assert_eq!(figures.region, "us-east-1");
        let all = provenance_of_every_figure().unwrap();
        assert!(all.len() >= 30, "only {} figures", all.len());
        for provenance in &all {
            assert!(
                provenance.source.starts_with("https://"),
                "{provenance:?} has no source"
            );
            assert!(
                provenance.checked == UNVERIFIED || is_iso_date(&provenance.checked),
                "{provenance:?} has no date"
            );
        }
        // A dated figure says whether AWS itself or a third party confirmed it.
        let file: serde_json::Value = serde_json::from_str(FIGURES_JSON).unwrap();
        for group in ["prices", "quotas"] {
            for (name, figure) in file[group].as_object().unwrap() {
                if figure["checked"] != UNVERIFIED {
                    let confidence = figure["confidence"].as_str();
                    assert!(
                        matches!(confidence, Some("aws" | "secondary")),
                        "{group}.{name} is dated but its confidence is {confidence:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn figures_the_plan_leans_on_have_the_values_read_at_the_source() {
        let figures = AwsFigures::load().unwrap();
        assert_eq!(
            figures.quotas.api_gateway_requests_per_second.value,
            10_000.0
        );
        assert_eq!(figures.quotas.lambda_concurrent_executions.value, 1_000.0);
        assert_eq!(
            figures.quotas.cloudfront_requests_per_second.value,
            250_000.0
        );
        assert_eq!(figures.quotas.dynamodb_partition_write_units.value, 1_000.0);
        assert!(!figures.quotas.dynamodb_partition_write_units.adjustable);
        // The November 2024 on-demand price cut, not the old $1.25.
        assert_eq!(
            figures.prices.dynamodb_on_demand_write_per_million.value,
            0.625
        );
    }

    #[test]
    fn unverified_figures_are_listed_by_name() {
        let unverified = AwsFigures::unverified().unwrap();
        let names: Vec<&str> = unverified.iter().map(|p| p.figure.as_str()).collect();
        assert!(names.contains(&"prices.cloudfront_https_requests_per_10k"));
        assert!(names.contains(&"quotas.sqs_fifo_high_throughput_per_second"));
        assert!(!names.contains(&"quotas.api_gateway_requests_per_second"));
    }

    #[test]
    fn dates_are_recognised_strictly() {
        assert!(is_iso_date("2026-12-01"));
        for not_a_date in ["2026-1-01", "01-12-2026", "2026/12/01", "today", ""] {
            assert!(!is_iso_date(not_a_date), "{not_a_date} passed");
        }
    }
}
