//! CloudWatch metrics in Embedded Metric Format: one JSON line on stdout per data point, which
//! Lambda's log pipeline turns into metrics with no API call and no extra latency. The
//! dashboard in `template.yaml` reads them from the `Lineup` namespace.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// The CloudWatch namespace every Lineup metric is published in.
pub const NAMESPACE: &str = "Lineup";

/// A data point's CloudWatch unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// How many times something happened.
    Count,
    /// A duration, in milliseconds.
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
        }
    }
}

/// The EMF line for `metrics`, all sharing one set of `dimensions` (and also published without
/// dimensions, as a total).
pub fn render(
    dimensions: &[(&str, &str)],
    metrics: &[(&str, f64, Unit)],
    at: SystemTime,
) -> String {
    let timestamp = at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut line = Map::new();
    line.insert(
        "_aws".to_owned(),
        json!({
            "Timestamp": timestamp,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                // Per dimension values, and once more with none: the across-events total that
                // alarms watch.
                "Dimensions": [dimensions.iter().map(|(name, _)| *name).collect::<Vec<_>>(), Vec::<&str>::new()],
                "Metrics": metrics.iter().map(|(name, _, unit)| json!({ "Name": name, "Unit": unit.as_str() })).collect::<Vec<_>>(),
            }],
        }),
    );
    for (name, value) in dimensions {
        line.insert((*name).to_owned(), Value::from(*value));
    }
    for (name, value, _) in metrics {
        line.insert((*name).to_owned(), Value::from(*value));
    }
    Value::Object(line).to_string()
}

/// Whether [`emit`] writes anything: on in Lambda; `lineup dev` turns it off, since nothing
/// collects metric lines locally and they would drown its console.
static EMITTING: AtomicBool = AtomicBool::new(true);

/// Stops [`emit`] from writing (for local runs).
pub fn silence() {
    EMITTING.store(false, Ordering::Relaxed);
}

/// Writes the EMF line to stdout, where Lambda picks it up.
pub fn emit(dimensions: &[(&str, &str)], metrics: &[(&str, f64, Unit)]) {
    if EMITTING.load(Ordering::Relaxed) {
        println!("{}", render(dimensions, metrics, SystemTime::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_declares_its_metrics_and_carries_their_values() {
        let at = UNIX_EPOCH + std::time::Duration::from_millis(1_795_942_800_000);
        let line: Value = serde_json::from_str(&render(
            &[("EventId", "demo")],
            &[
                ("Admitted", 50.0, Unit::Count),
                ("QueueLength", 1200.0, Unit::Count),
            ],
            at,
        ))
        .unwrap();
        assert_eq!(line["_aws"]["Timestamp"], 1_795_942_800_000u64);
        let declared = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(declared["Namespace"], "Lineup");
        assert_eq!(declared["Dimensions"], json!([["EventId"], []]));
        assert_eq!(
            declared["Metrics"][1],
            json!({ "Name": "QueueLength", "Unit": "Count" })
        );
        assert_eq!(line["EventId"], "demo");
        assert_eq!(line["Admitted"], 50.0);
        assert_eq!(line["QueueLength"], 1200.0);
    }
}
