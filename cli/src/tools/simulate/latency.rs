//! Response times per API route, recorded by every customer and summarised as percentiles, so
//! the report shows how each route behaved under the crowd (not one average for everything).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

/// Every request's duration, by route key (`POST /events/{eventId}/holds`, as in the contract).
#[derive(Debug, Default)]
pub struct LatencyRecorder {
    samples: Mutex<BTreeMap<&'static str, Vec<Duration>>>,
}

impl LatencyRecorder {
    pub fn record(&self, route: &'static str, took: Duration) {
        // A poisoned lock only means another customer panicked mid-push: the samples are intact.
        let mut samples = self
            .samples
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        samples.entry(route).or_default().push(took);
    }

    /// One summary per route, in route order.
    pub fn summaries(&self) -> Vec<RouteLatency> {
        let samples = self
            .samples
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        samples
            .iter()
            .filter_map(|(route, durations)| RouteLatency::of(route, durations))
            .collect()
    }
}

/// Percentiles of one route's response times, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteLatency {
    pub route: String,
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl RouteLatency {
    /// `None` for a route with no samples.
    pub fn of(route: &str, durations: &[Duration]) -> Option<Self> {
        let mut sorted = durations.to_vec();
        sorted.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Some(Self {
            route: route.to_owned(),
            count: sorted.len(),
            p50_ms: ms(percentile(&sorted, 50.0)?),
            p95_ms: ms(percentile(&sorted, 95.0)?),
            p99_ms: ms(percentile(&sorted, 99.0)?),
            max_ms: ms(*sorted.last()?),
        })
    }
}

/// The nearest-rank percentile of sorted samples: the smallest sample with at least `p` % of the
/// samples at or below it. `None` when there are no samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let index = rank.clamp(1, sorted.len()) - 1;
    sorted.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|v| Duration::from_millis(*v)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let sorted = ms(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&sorted, 50.0), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&sorted, 95.0), Some(Duration::from_millis(95)));
        assert_eq!(percentile(&sorted, 99.0), Some(Duration::from_millis(99)));
        assert_eq!(percentile(&sorted, 100.0), Some(Duration::from_millis(100)));
        assert_eq!(percentile(&sorted, 0.0), Some(Duration::from_millis(1)));
    }

    #[test]
    fn small_and_empty_samples() {
        assert_eq!(percentile(&[], 50.0), None);
        let one = ms(&[7]);
        assert_eq!(percentile(&one, 99.0), Some(Duration::from_millis(7)));
        let four = ms(&[10, 20, 30, 40]);
        assert_eq!(percentile(&four, 50.0), Some(Duration::from_millis(20)));
        assert_eq!(percentile(&four, 51.0), Some(Duration::from_millis(30)));
        assert_eq!(percentile(&four, 99.0), Some(Duration::from_millis(40)));
    }

    #[test]
    fn summaries_sort_the_samples_and_group_by_route() {
        let recorder = LatencyRecorder::default();
        for v in [30, 10, 20] {
            recorder.record("GET /orders/{orderId}", Duration::from_millis(v));
        }
        recorder.record("POST /events/{eventId}/queue", Duration::from_millis(5));
        let summaries = recorder.summaries();
        assert_eq!(summaries.len(), 2);
        let orders = &summaries[0];
        assert_eq!(orders.route, "GET /orders/{orderId}");
        assert_eq!(orders.count, 3);
        assert_eq!(orders.p50_ms, 20.0);
        assert_eq!(orders.max_ms, 30.0);
        assert_eq!(summaries[1].p99_ms, 5.0);
    }
}
