//! A plan as people read it (a table per service, the flags, the cost, the assumptions) and as
//! scripts read it (`--json`, the same content).

use std::fmt::Write as _;

use serde::Serialize;

use super::cost::Costs;
use super::quota_check::{Check, Owner, Remedy, Verdict};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub on_sale: OnSaleSummary,
    pub sale: SaleSummary,
    pub checks: Vec<Check>,
    /// The flagged checks, as sentences.
    pub flags: Vec<String>,
    /// The same, by who acts on them: the template's defaults, the operator before the on-sale,
    /// AWS support (account quotas), the design.
    pub flags_by_owner: std::collections::BTreeMap<Owner, Vec<String>>,
    pub costs: Costs,
    pub region: String,
    pub assumptions: Vec<String>,
    /// Figures of aws_figures.json no search confirmed.
    pub unverified: Vec<String>,
    pub notes: Vec<String>,
}

/// What was asked for.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OnSaleSummary {
    pub waiting: f64,
    pub seats: f64,
    pub admit_rate: f64,
    pub max_active: f64,
    pub session_seconds: f64,
    pub shopping_seconds: f64,
    pub arrival_window_seconds: f64,
    pub opens_after_seconds: f64,
}

/// How it went, in the model.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SaleSummary {
    pub pre_queue: f64,
    pub sustainable_admit_rate: f64,
    pub sold_out_after_seconds: Option<f64>,
    pub queue_ended_after_seconds: f64,
    pub admitted: f64,
    pub paid_orders: f64,
    pub never_admitted: f64,
    pub peak_waiting: f64,
}

impl Plan {
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let on_sale = &self.on_sale;
        let sale = &self.sale;
        let _ = writeln!(
            out,
            "lineup plan: {} waiting for {} seats, admitted at {}/s (at most {} active, {} sessions)",
            count(on_sale.waiting),
            count(on_sale.seats),
            number(on_sale.admit_rate),
            count(on_sale.max_active),
            duration(on_sale.session_seconds),
        );
        let _ = writeln!(
            out,
            "Arrivals over {}, the queue opening {} in: {} in the pre-queue.",
            duration(on_sale.arrival_window_seconds),
            duration(on_sale.opens_after_seconds),
            count(sale.pre_queue),
        );
        let ending = match sale.sold_out_after_seconds {
            Some(seconds) => format!(
                "sold out {} after the opening, the queue closed at {}",
                duration(seconds),
                duration(sale.queue_ended_after_seconds)
            ),
            None => format!(
                "every customer admitted by {} after the opening",
                duration(sale.queue_ended_after_seconds)
            ),
        };
        let _ = writeln!(
            out,
            "Admission at {}/s sustained: {}; {} admitted, {} paid orders, {} never reached.",
            number(sale.sustainable_admit_rate),
            ending,
            count(sale.admitted),
            count(sale.paid_orders),
            count(sale.never_admitted),
        );
        for note in &self.notes {
            let _ = writeln!(out, "Note: {note}");
        }

        let _ = writeln!(
            out,
            "\nPeak load beside its limit (when: time from the opening)"
        );
        let mut service = "";
        for check in &self.checks {
            if check.service != service {
                service = check.service;
                let _ = writeln!(out, "\n{service}");
                let _ = writeln!(
                    out,
                    "  {:<70} {:>12} {:>8} {:>12}  flag",
                    "figure", "peak", "when", "limit"
                );
            }
            let limit = check
                .limit
                .as_ref()
                .map_or("none".to_owned(), |limit| number(limit.value));
            let when = check
                .at_seconds
                .filter(|_| check.peak > 0.0)
                .map_or("".to_owned(), clock);
            let _ = writeln!(
                out,
                "  {:<70} {:>12} {:>8} {:>12}  {}",
                format!("{} ({})", check.figure, check.unit),
                number(check.peak),
                when,
                limit,
                flag_text(check),
            );
        }

        let _ = writeln!(out, "\nFlagged: {}", self.flags.len());
        for (owner, flags) in &self.flags_by_owner {
            let heading = match owner {
                Owner::Template => "the template's defaults (change the default, or the parameter at deploy)",
                Owner::Operator => "the operator, before the on-sale",
                Owner::AwsSupport => {
                    "AWS support: file a Service Quotas increase (Service Quotas console, or `aws service-quotas request-service-quota-increase`) for the account and region, with the value asked"
                }
                Owner::PaymentProvider => "the payment provider: ask Stripe's support for a higher rate limit",
                Owner::Design => "the design (nothing to raise)",
            };
            let _ = writeln!(out, "  {heading}:");
            for flag in flags {
                let _ = writeln!(out, "  - {flag}");
            }
        }

        let costs = &self.costs;
        let _ = writeln!(
            out,
            "\nCost ({}, USD): this on-sale and per million queued customers",
            self.region
        );
        let _ = writeln!(
            out,
            "  {:<16} {:>12} {:>14}  made of",
            "service", "on-sale", "per million"
        );
        for cost in &costs.services {
            let _ = writeln!(
                out,
                "  {:<16} {:>12} {:>14}  {}",
                cost.service,
                dollars(cost.on_sale),
                dollars(cost.per_million_queued),
                cost.made_of
            );
        }
        let _ = writeln!(
            out,
            "  {:<16} {:>12} {:>14}",
            "total",
            dollars(costs.total_on_sale),
            dollars(costs.total_per_million_queued)
        );
        let fixed: Vec<String> = costs
            .fixed_monthly
            .iter()
            .map(|cost| format!("{} {}", cost.what, dollars(cost.usd_per_month)))
            .collect();
        let _ = writeln!(
            out,
            "  Not in it, monthly whatever the crowd: {}.",
            fixed.join("; ")
        );

        let _ = writeln!(out, "\nAssumptions");
        for assumption in &self.assumptions {
            let _ = writeln!(out, "  - {assumption}");
        }
        let _ = writeln!(
            out,
            "\nUnverified figures (cli/src/tools/plan/aws_figures.json): {}",
            self.unverified.join(", ")
        );
        out
    }
}

/// The flag column of a check.
pub fn flag_text(check: &Check) -> String {
    match &check.verdict {
        Verdict::Within { utilisation } => format!("ok ({:.0}%)", utilisation * 100.0),
        Verdict::NoLimit => "no throttle of its own yet".to_owned(),
        Verdict::Raise { to, utilisation } => {
            let remedy = check.limit.as_ref().map(|limit| &limit.remedy);
            let action = match remedy {
                Some(Remedy::StackParameter { parameter }) => format!("set {parameter} to"),
                Some(Remedy::PreWarm) => "pre-warm to".to_owned(),
                Some(Remedy::PreScale) => "pre-scale to".to_owned(),
                _ => "raise to".to_owned(),
            };
            format!("{} {} ({:.0}%)", action, number(*to), utilisation * 100.0)
        }
        Verdict::Exceeds { utilisation } => {
            let advice = match check.limit.as_ref().map(|limit| &limit.remedy) {
                Some(Remedy::Redesign { advice }) => advice.as_str(),
                _ => "",
            };
            format!("HARD LIMIT ({:.0}%): {advice}", utilisation * 100.0)
        }
    }
}

/// A flagged check as a sentence.
pub fn flag_sentence(check: &Check) -> String {
    let source = check.limit.as_ref().map_or(String::new(), |limit| {
        format!(", limit {} from {}", number(limit.value), limit.source)
    });
    format!(
        "{}: {} peaks at {} {}{}: {}",
        check.service,
        check.figure,
        number(check.peak),
        check.unit,
        source,
        flag_text(check)
    )
}

/// A whole count: 1,234,567.
pub fn count(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// A figure with as many decimals as it needs to be read: 12,345 / 12.3 / 0.14.
pub fn number(value: f64) -> String {
    if value.abs() >= 100.0 {
        count(value)
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn dollars(value: f64) -> String {
    if value >= 100.0 {
        format!("${}", count(value))
    } else {
        format!("${value:.2}")
    }
}

/// Seconds as `5 min`, `1 h 05 min`, `45 s`.
pub fn duration(seconds: f64) -> String {
    let seconds = seconds.max(0.0).round() as u64;
    match (seconds / 3_600, seconds % 3_600 / 60, seconds % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s:02} s"),
        (h, m, _) => format!("{h} h {m:02} min"),
    }
}

/// Seconds from the opening as a clock: `-0:50`, `+3:56`, `+27:46:40`.
pub fn clock(seconds: f64) -> String {
    let sign = if seconds < 0.0 { '-' } else { '+' };
    let whole = seconds.abs().round() as u64;
    let (h, m, s) = (whole / 3_600, whole % 3_600 / 60, whole % 60);
    if h > 0 {
        format!("{sign}{h}:{m:02}:{s:02}")
    } else {
        format!("{sign}{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(count(1_234_567.0), "1,234,567");
        assert_eq!(count(999.0), "999");
        assert_eq!(number(16_666.67), "16,667");
        assert_eq!(number(12.34), "12.3");
        assert_eq!(number(0.1417), "0.14");
        assert_eq!(number(20.0), "20");
        assert_eq!(number(0.0), "0");
        assert_eq!(duration(300.0), "5 min");
        assert_eq!(duration(236.0), "3 min 56 s");
        assert_eq!(duration(3_900.0), "1 h 05 min");
        assert_eq!(clock(-50.0), "-0:50");
        assert_eq!(clock(236.0), "+3:56");
        assert_eq!(clock(100_000.0), "+27:46:40");
    }
}
