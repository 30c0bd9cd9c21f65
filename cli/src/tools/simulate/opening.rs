//! The opening: the moment the whole pre-queue reads the status, finds the draw published and
//! fetches its chunk, which is the edge's peak of the on-sale (`lineup plan` models it). For the
//! first [`OPENING_WINDOW`] after the queue opened, this says how many requests a second the
//! customers sent through the edge (counted by the simulator, [`super::edge_traffic`]) and how
//! many reached the origin (the dev server's counts, read every second,
//! [`super::origin_traffic`]), at the peak and on average, by kind; and, for the whole wait,
//! the requests per waiting customer at both.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::customer::CustomerReport;
use super::edge_traffic::{EdgeCounter, KindCounts, RequestKind};
use super::origin_traffic::{is_wait_route, OriginTraffic, Sample};

/// How long after the opening the figures cover: the pre-queue's reads (within 10 s unless the
/// status paces a big pre-queue's over longer), its chunk fetches (within the status's
/// `chunkFetchWindowSeconds`, at most 30 s) and the first claims.
pub const OPENING_WINDOW: Duration = Duration::from_secs(60);

/// Requests over a stretch of time: how many, the busiest second's rate, the mean rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    pub requests: u64,
    pub peak_per_second: f64,
    pub mean_per_second: f64,
}

impl Rates {
    /// From the requests of each whole second, in order.
    pub fn of_seconds(per_second: &[u64]) -> Self {
        let requests = per_second.iter().sum();
        Self {
            requests,
            peak_per_second: per_second.iter().copied().max().unwrap_or(0) as f64,
            mean_per_second: if per_second.is_empty() {
                0.0
            } else {
                requests as f64 / per_second.len() as f64
            },
        }
    }

    /// From a counter read at moments, `(when, requests so far)` in order: the peak is the
    /// highest rate between two readings in a row (about a second apart), the mean the requests
    /// from the first reading to the last over the time between them.
    pub fn of_readings(readings: &[(Duration, u64)]) -> Self {
        let (Some(first), Some(last)) = (readings.first(), readings.last()) else {
            return Self::default();
        };
        let rate = |from: &(Duration, u64), to: &(Duration, u64)| {
            let seconds = to.0.saturating_sub(from.0).as_secs_f64();
            let requests = to.1.saturating_sub(from.1);
            (seconds > 0.0).then(|| requests as f64 / seconds)
        };
        Self {
            requests: last.1.saturating_sub(first.1),
            peak_per_second: readings
                .windows(2)
                .filter_map(|pair| rate(&pair[0], &pair[1]))
                .fold(0.0, f64::max),
            mean_per_second: rate(first, last).unwrap_or(0.0),
        }
    }
}

/// One side's requests at the opening, in all and by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RatesByKind {
    #[serde(flatten)]
    pub all: Rates,
    /// By [`RequestKind::name`]: `status`, `drawChunk`, `seatMap`, `queue`, `shopping`.
    pub by_kind: BTreeMap<&'static str, Rates>,
}

/// What the customers sent through the edge in the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeAtOpening {
    #[serde(flatten)]
    pub rates: RatesByKind,
    /// The requests of each second of the window, every kind.
    pub per_second: Vec<u64>,
}

/// What reached the functions in the window, from the dev server's counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginAtOpening {
    #[serde(flatten)]
    pub rates: RatesByKind,
    /// The counts were read this many times over the window (the last reading at or before the
    /// opening to the first at or after its end) ...
    pub readings: usize,
    /// ... from and to these moments, in seconds from the opening ...
    pub from_seconds: f64,
    pub to_seconds: f64,
    /// ... at most this far apart (the busiest second's rate is over such a gap).
    pub longest_gap_seconds: f64,
    /// Each reading: seconds from the opening, and the requests that reached the functions since
    /// the one before (every kind).
    pub per_reading: Vec<(f64, u64)>,
}

/// Requests per customer who joined, for the whole wait: the join, the claims and polls, the
/// status reads and the chunks (leaving not counted, as the same route gives an admission back).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PerWaitingCustomer {
    /// Sent through the edge, retries included.
    pub edge: f64,
    /// Reached the functions (`None` without the server's counts).
    pub origin: Option<f64>,
}

/// The opening's figures (`waitingRoom.opening` in the JSON report).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Opening {
    /// Customers who joined before the opening.
    pub pre_queue: usize,
    /// The queue opened this long after the first arrivals could come.
    pub opened_after_seconds: f64,
    /// The figures cover this long from the opening: [`OPENING_WINDOW`], or less if the crowd
    /// was done sooner.
    pub window_seconds: u64,
    /// Pre-queue entrants who found their number in the draw within the window ...
    pub pre_queue_numbered_in_window: usize,
    /// ... and how long after the opening the last of all of them did.
    pub last_pre_queue_number_after_seconds: Option<f64>,
    pub edge: EdgeAtOpening,
    /// `None` when the server's counts could not be read.
    pub origin: Option<OriginAtOpening>,
    pub requests_per_waiting_customer: PerWaitingCustomer,
}

/// When things happened, on the simulator's clock.
pub struct Moments {
    /// When the crowd was let in: the origin of the arrivals and of the traffic samples.
    pub crowd_start: Instant,
    pub opening: Instant,
    pub crowd_end: Instant,
}

impl Opening {
    pub fn of(
        moments: &Moments,
        customers: &[CustomerReport],
        edge: &EdgeCounter,
        samples: Option<&[Sample]>,
        origin: Option<&OriginTraffic>,
    ) -> Self {
        let window = moments
            .crowd_end
            .saturating_duration_since(moments.opening)
            .min(OPENING_WINDOW);
        let window_seconds = window.as_secs_f64().ceil() as u64;
        let waits = || customers.iter().map(|customer| &customer.wait);
        let numbered_after = || {
            waits()
                .filter(|wait| wait.pre_queue)
                .filter_map(|wait| wait.numbered_at)
                .map(|at| at.saturating_duration_since(moments.opening))
        };
        let joined = customers.iter().filter(|c| c.joined).count();
        let edge_wait_requests: u64 = edge
            .per_route()
            .iter()
            .filter(|(route, _)| is_wait_route(route))
            .map(|(_, n)| n)
            .sum();
        let opening_from_start = moments
            .opening
            .saturating_duration_since(moments.crowd_start);
        Self {
            pre_queue: waits().filter(|wait| wait.pre_queue).count(),
            opened_after_seconds: opening_from_start.as_secs_f64(),
            window_seconds,
            pre_queue_numbered_in_window: numbered_after().filter(|after| *after < window).count(),
            last_pre_queue_number_after_seconds: numbered_after()
                .max()
                .map(|after| after.as_secs_f64()),
            edge: edge_at_opening(&edge.per_second(moments.opening, window_seconds)),
            origin: samples.and_then(|samples| {
                origin_at_opening(samples, opening_from_start, opening_from_start + window)
            }),
            requests_per_waiting_customer: PerWaitingCustomer {
                edge: edge_wait_requests as f64 / joined.max(1) as f64,
                origin: origin.map(|origin| origin.wait_requests_per_customer),
            },
        }
    }

    pub fn render(&self, line: &mut impl FnMut(String)) {
        line(format!(
            "  The opening: the first {} s after the queue opened ({:.1} s after the first \
             arrivals), {} customers in the pre-queue; {} of them found their number in the \
             draw within it{}",
            self.window_seconds,
            self.opened_after_seconds,
            self.pre_queue,
            self.pre_queue_numbered_in_window,
            match self.last_pre_queue_number_after_seconds {
                Some(after) => format!(", the last {after:.1} s after the opening"),
                None => String::new(),
            }
        ));
        line(format!(
            "    {:<46} {:>9} {:>9} {:>9}",
            "requests a second", "peak", "mean", "requests"
        ));
        let row = |line: &mut dyn FnMut(String), name: &str, rates: &Rates| {
            line(format!(
                "    {:<46} {:>9.0} {:>9.1} {:>9}",
                name, rates.peak_per_second, rates.mean_per_second, rates.requests
            ));
        };
        let by_kind = |line: &mut dyn FnMut(String), rates: &RatesByKind| {
            for kind in RequestKind::ALL {
                if let Some(kind_rates) = rates.by_kind.get(kind.name()) {
                    row(line, &format!("  {}", kind_label(kind)), kind_rates);
                }
            }
        };
        row(
            line,
            "edge: sent by the customers (simulator's count)",
            &self.edge.rates.all,
        );
        by_kind(line, &self.edge.rates);
        match &self.origin {
            Some(origin) => {
                row(
                    line,
                    "origin: reached the functions (dev's count)",
                    &origin.rates.all,
                );
                by_kind(line, &origin.rates);
                line(format!(
                    "    (the origin's counts read {} times from {:+.1} s to {:+.1} s of the \
                     opening, at most {:.1} s apart: its peak is over such a gap)",
                    origin.readings,
                    origin.from_seconds,
                    origin.to_seconds,
                    origin.longest_gap_seconds
                ));
            }
            None => line("    origin: no figures (the server's counts could not be read)".into()),
        }
        let per_customer = &self.requests_per_waiting_customer;
        line(format!(
            "  requests per waiting customer for the whole wait (join, claims, status, chunks; \
             leaving not counted): {:.2} at the edge, {} at the origin",
            per_customer.edge,
            per_customer
                .origin
                .map_or("unknown".to_owned(), |origin| format!("{origin:.2}"))
        ));
    }
}

fn kind_label(kind: RequestKind) -> &'static str {
    match kind {
        RequestKind::Status => "status reads",
        RequestKind::DrawChunk => "draw chunks",
        RequestKind::SeatMap => "seat map (availability, layout)",
        RequestKind::Queue => "join, claim and leave (origin only)",
        RequestKind::Shopping => "holds, orders, payments (origin only)",
    }
}

/// The edge's figures from each second's counts by kind.
fn edge_at_opening(per_second: &[KindCounts]) -> EdgeAtOpening {
    let all: Vec<u64> = per_second
        .iter()
        .map(|kinds| kinds.values().sum())
        .collect();
    let by_kind = RequestKind::ALL
        .into_iter()
        .map(|kind| {
            let counts: Vec<u64> = per_second
                .iter()
                .map(|kinds| kinds.get(&kind).copied().unwrap_or(0))
                .collect();
            (kind.name(), Rates::of_seconds(&counts))
        })
        .filter(|(_, rates)| rates.requests > 0)
        .collect();
    EdgeAtOpening {
        rates: RatesByKind {
            all: Rates::of_seconds(&all),
            by_kind,
        },
        per_second: all,
    }
}

/// The origin's figures from the readings that cover `from`–`to` (moments from the crowd's
/// start): the last at or before `from`, those between, the first at or after `to`.
fn origin_at_opening(samples: &[Sample], from: Duration, to: Duration) -> Option<OriginAtOpening> {
    let first = samples.iter().rposition(|s| s.at <= from).unwrap_or(0);
    let last = samples
        .iter()
        .position(|s| s.at >= to)
        .unwrap_or(samples.len().checked_sub(1)?);
    let covering = samples.get(first..=last)?;
    if covering.len() < 2 {
        return None;
    }
    let origin_of = |sample: &Sample, kind: Option<RequestKind>| -> u64 {
        sample
            .traffic
            .iter()
            .filter(|(route, _)| kind.is_none() || RequestKind::of(route) == kind)
            .map(|(_, counts)| counts.origin)
            .sum()
    };
    let readings = |kind| -> Vec<(Duration, u64)> {
        covering
            .iter()
            .map(|sample| (sample.at, origin_of(sample, kind)))
            .collect()
    };
    let by_kind = RequestKind::ALL
        .into_iter()
        .map(|kind| (kind.name(), Rates::of_readings(&readings(Some(kind)))))
        .filter(|(_, rates)| rates.requests > 0)
        .collect();
    let seconds_from_opening = |at: Duration| at.as_secs_f64() - from.as_secs_f64();
    let all = readings(None);
    let per_reading = all
        .iter()
        .zip(all.iter().skip(1))
        .map(|(before, after)| {
            (
                seconds_from_opening(after.0),
                after.1.saturating_sub(before.1),
            )
        })
        .collect();
    Some(OriginAtOpening {
        rates: RatesByKind {
            all: Rates::of_readings(&all),
            by_kind,
        },
        readings: covering.len(),
        from_seconds: seconds_from_opening(covering[0].at),
        to_seconds: seconds_from_opening(covering[covering.len() - 1].at),
        longest_gap_seconds: covering
            .windows(2)
            .map(|pair| pair[1].at.saturating_sub(pair[0].at).as_secs_f64())
            .fold(0.0, f64::max),
        per_reading,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::edge_cache::RouteTraffic;

    #[test]
    fn the_peak_is_the_busiest_second_and_the_mean_over_every_second_of_the_window() {
        let rates = Rates::of_seconds(&[0, 1_200, 3_000, 800, 0, 0]);
        assert_eq!(rates.requests, 5_000);
        assert_eq!(rates.peak_per_second, 3_000.0);
        assert!((rates.mean_per_second - 5_000.0 / 6.0).abs() < 1e-9);
        // Quiet seconds count in the mean: a window is not shortened to its busy part.
        assert_eq!(Rates::of_seconds(&[0, 0, 10, 0]).mean_per_second, 2.5);
        assert_eq!(Rates::of_seconds(&[]), Rates::default());
    }

    #[test]
    fn a_counter_read_at_moments_gives_the_rate_between_readings() {
        let at = |millis| Duration::from_millis(millis);
        // 10 requests in the first second, 30 in the next half second, none for 1.5 s.
        let readings = [
            (at(0), 100),
            (at(1_000), 110),
            (at(1_500), 140),
            (at(3_000), 140),
        ];
        let rates = Rates::of_readings(&readings);
        assert_eq!(rates.requests, 40);
        assert_eq!(rates.peak_per_second, 60.0);
        assert!((rates.mean_per_second - 40.0 / 3.0).abs() < 1e-9);
        assert_eq!(Rates::of_readings(&readings[..1]).mean_per_second, 0.0);
        assert_eq!(Rates::of_readings(&[]), Rates::default());
    }

    fn sample(at_millis: u64, status_origin: u64, join_origin: u64) -> Sample {
        let count = |origin| RouteTraffic { origin, edge: 0 };
        Sample {
            at: Duration::from_millis(at_millis),
            traffic: [
                (
                    "GET /events/{eventId}/status".to_owned(),
                    count(status_origin),
                ),
                (
                    "POST /events/{eventId}/queue".to_owned(),
                    count(join_origin),
                ),
            ]
            .into(),
        }
    }

    #[test]
    fn the_origin_window_is_covered_by_the_readings_either_side_of_it() {
        let samples = [
            sample(0, 0, 0),
            sample(9_500, 5, 900),
            sample(10_600, 6, 1_000),
            sample(11_700, 7, 1_000),
            sample(12_500, 8, 1_000),
            sample(13_400, 8, 1_000),
        ];
        // The window 10 s to 12 s from the crowd's start.
        let origin =
            origin_at_opening(&samples, Duration::from_secs(10), Duration::from_secs(12)).unwrap();
        assert_eq!(origin.readings, 4, "9.5 s to 12.5 s");
        assert!((origin.from_seconds + 0.5).abs() < 1e-9);
        assert!((origin.to_seconds - 2.5).abs() < 1e-9);
        assert!((origin.longest_gap_seconds - 1.1).abs() < 1e-9);
        let since_last: Vec<u64> = origin.per_reading.iter().map(|(_, n)| *n).collect();
        assert_eq!(since_last, [101, 1, 1]);
        assert_eq!(origin.rates.all.requests, 103);
        assert!((origin.rates.all.peak_per_second - 101.0 / 1.1).abs() < 1e-9);
        let joins = origin.rates.by_kind["queue"];
        assert_eq!(joins.requests, 100);
        assert_eq!(origin.rates.by_kind["status"].requests, 3);
        assert!(!origin.rates.by_kind.contains_key("drawChunk"));
    }

    #[test]
    fn the_edge_by_kind_adds_up_to_all() {
        let second = |status, chunks| -> KindCounts {
            [
                (RequestKind::Status, status),
                (RequestKind::DrawChunk, chunks),
            ]
            .into()
        };
        let edge = edge_at_opening(&[second(100, 0), second(2_000, 500), second(50, 900)]);
        assert_eq!(edge.per_second, [100, 2_500, 950]);
        assert_eq!(edge.rates.all.peak_per_second, 2_500.0);
        assert_eq!(edge.rates.by_kind["drawChunk"].peak_per_second, 900.0);
        assert_eq!(edge.rates.by_kind["status"].requests, 2_150);
        assert!(!edge.rates.by_kind.contains_key("queue"));
    }
}
