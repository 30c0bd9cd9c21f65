//! What the crowd cost the origin: the requests that reached the functions, per route, as
//! `lineup dev`'s CDN stand-in counts them (`GET /dev/info`'s `traffic`), read before, every
//! second during, and after the crowd. So the figures are what the functions served, not what
//! the customers sent ([`super::edge_traffic`] counts that): a status read the cache answered
//! costs the origin nothing. (The counts are the server's, for every event: run against a dev
//! server nobody else is using.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::api_client::{routes, Api, CallError};
use crate::dev::edge_cache::RouteTraffic;
use crate::dev::DevInfo;

/// Requests per route key so far.
pub type Traffic = BTreeMap<String, RouteTraffic>;

/// How often the traffic is read during the crowd: every second, so that the opening's busiest
/// second shows ([`super::opening`]).
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The status's load is measured over windows this long (the readings thinned to them): long
/// enough to hold several status cache periods, so one window's rate says something.
pub const STATUS_WINDOW: Duration = Duration::from_secs(10);

/// The server's traffic counts now.
pub async fn read(api: &Api) -> Result<Traffic, CallError> {
    let answer = api.dev_info().await?;
    if answer.status != reqwest::StatusCode::OK {
        return Err(answer.unexpected());
    }
    Ok(answer.json::<DevInfo>()?.traffic)
}

/// The traffic read at one moment of the crowd's run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Since the crowd was let in (halfway through the request that read it).
    pub at: Duration,
    pub traffic: Traffic,
}

/// Reads the traffic every [`SAMPLE_EVERY`] until stopped.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<Vec<Sample>>,
    started: Instant,
}

impl Sampler {
    /// Starts sampling; `before` is the traffic read just before the crowd was let in at
    /// `started`.
    pub fn start(api: Arc<Api>, before: Traffic, started: Instant) -> Self {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut samples = vec![Sample {
                at: Duration::ZERO,
                traffic: before,
            }];
            loop {
                tokio::select! {
                    () = tokio::time::sleep(SAMPLE_EVERY) => {}
                    _ = stopped.wait_for(|stop| *stop) => return samples,
                }
                // A failed read only widens the window around it.
                let asked = started.elapsed();
                if let Ok(traffic) = read(&api).await {
                    samples.push(Sample {
                        at: (asked + started.elapsed()) / 2,
                        traffic,
                    });
                }
            }
        });
        Self {
            stop,
            task,
            started,
        }
    }

    /// Stops sampling and adds `after`, the traffic read once the crowd was done.
    pub async fn finish(self, after: Traffic) -> Vec<Sample> {
        self.stop.send_replace(true);
        let mut samples = self.task.await.unwrap_or_default();
        samples.push(Sample {
            at: self.started.elapsed(),
            traffic: after,
        });
        samples
    }
}

/// One route's requests over the crowd's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteCount {
    pub route: String,
    /// Reached the function.
    pub origin: u64,
    /// Answered by the CDN stand-in.
    pub edge: u64,
}

/// The status route's load on the origin.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusLoad {
    /// The status's cache lifetime: about one origin request per period is the target.
    pub cache_seconds: f64,
    /// Origin requests per second while customers were reading the status (the
    /// [`STATUS_WINDOW`]s with a read).
    pub origin_per_second: f64,
    /// The highest of those windows.
    pub peak_origin_per_second: f64,
    /// Reads per second (origin and edge) over the same windows: the crowd's demand.
    pub reads_per_second: f64,
    pub window_seconds: f64,
    /// How long customers were reading (the windows with a read, added up).
    pub reading_seconds: f64,
}

/// What the crowd cost the origin.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginTraffic {
    pub routes: Vec<RouteCount>,
    /// The waiting routes' origin requests (join, poll and claim, status, draw) per customer who
    /// joined. Leaving (`DELETE`) is left out: the same route gives an admission back.
    pub wait_requests_per_customer: f64,
    pub status: StatusLoad,
}

/// Whether a route is one a waiting customer uses: join, poll (the claim), and the public routes
/// the CDN serves (status, draw).
pub fn is_wait_route(key: &str) -> bool {
    key == routes::join().key
        || key == routes::poll().key
        || crate::dev::routes::routes()
            .iter()
            .any(|route| route.cached() && route.key() == key)
}

impl OriginTraffic {
    /// From the samples (the first before the crowd, the last after it) and the number of
    /// customers who joined.
    pub fn of(samples: &[Sample], joined: usize) -> Option<Self> {
        let (first, last) = (samples.first()?, samples.last()?);
        let difference = |route: &str| {
            let at = |sample: &Sample| sample.traffic.get(route).copied().unwrap_or_default();
            let (before, after) = (at(first), at(last));
            RouteCount {
                route: route.to_owned(),
                origin: after.origin.saturating_sub(before.origin),
                edge: after.edge.saturating_sub(before.edge),
            }
        };
        let routes: Vec<RouteCount> = last
            .traffic
            .keys()
            .map(|route| difference(route))
            .filter(|count| count.origin + count.edge > 0)
            .collect();
        let wait_origin: u64 = routes
            .iter()
            .filter(|count| is_wait_route(&count.route))
            .map(|count| count.origin)
            .sum();
        Some(Self {
            routes,
            wait_requests_per_customer: wait_origin as f64 / joined.max(1) as f64,
            status: StatusLoad::of(samples),
        })
    }
}

/// The samples at least `window` apart: the first, each one `window` or more after the last one
/// kept, and the last.
fn thinned(samples: &[Sample], window: Duration) -> Vec<&Sample> {
    let mut kept: Vec<&Sample> = Vec::new();
    for (n, sample) in samples.iter().enumerate() {
        let far_enough = kept
            .last()
            .is_none_or(|last| sample.at.saturating_sub(last.at) >= window);
        if far_enough || n + 1 == samples.len() {
            kept.push(sample);
        }
    }
    kept
}

impl StatusLoad {
    fn of(samples: &[Sample]) -> Self {
        let status = routes::status().key;
        let count = |sample: &Sample| sample.traffic.get(status).copied().unwrap_or_default();
        let (mut origin, mut reads, mut seconds, mut peak) = (0, 0, 0.0, 0.0_f64);
        for pair in thinned(samples, STATUS_WINDOW).windows(2) {
            let (before, after) = (count(pair[0]), count(pair[1]));
            let window = (pair[1].at.saturating_sub(pair[0].at)).as_secs_f64();
            let window_origin = after.origin.saturating_sub(before.origin);
            let window_reads = window_origin + after.edge.saturating_sub(before.edge);
            if window_reads == 0 || window <= 0.0 {
                continue;
            }
            origin += window_origin;
            reads += window_reads;
            seconds += window;
            peak = peak.max(window_origin as f64 / window);
        }
        let per_second = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        Self {
            cache_seconds: lineup::domain::status::STATUS_MAX_AGE.as_secs_f64(),
            origin_per_second: per_second(origin),
            peak_origin_per_second: peak,
            reads_per_second: per_second(reads),
            window_seconds: STATUS_WINDOW.as_secs_f64(),
            reading_seconds: seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "GET /events/{eventId}/status";
    const JOIN: &str = "POST /events/{eventId}/queue";
    const CLAIM: &str = "GET /events/{eventId}/queue/{queueId}";
    const LEAVE: &str = "DELETE /events/{eventId}/queue/{queueId}";

    fn sample(at: u64, counts: &[(&str, u64, u64)]) -> Sample {
        Sample {
            at: Duration::from_secs(at),
            traffic: counts
                .iter()
                .map(|(route, origin, edge)| {
                    (
                        (*route).to_owned(),
                        RouteTraffic {
                            origin: *origin,
                            edge: *edge,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn the_run_counts_what_reached_the_functions_since_before_it() {
        let samples = [
            // An earlier run's traffic is not this run's.
            sample(0, &[(JOIN, 7, 0), (STATUS, 100, 900)]),
            sample(10, &[(JOIN, 107, 0), (STATUS, 105, 1_900)]),
            sample(
                20,
                &[
                    (JOIN, 107, 0),
                    (CLAIM, 90, 0),
                    (LEAVE, 40, 0),
                    (STATUS, 110, 2_400),
                ],
            ),
        ];
        let traffic = OriginTraffic::of(&samples, 100).unwrap();
        let join = traffic.routes.iter().find(|r| r.route == JOIN).unwrap();
        assert_eq!((join.origin, join.edge), (100, 0));
        // Joins, claims and status reads that reached the origin, per customer: leaving is not
        // waiting.
        assert_eq!(
            traffic.wait_requests_per_customer,
            (100 + 90 + 10) as f64 / 100.0
        );
        assert!(traffic.routes.iter().any(|r| r.route == LEAVE));
    }

    #[test]
    fn the_status_rate_is_over_the_windows_someone_was_reading() {
        let samples = [
            sample(0, &[(STATUS, 0, 0)]),
            sample(10, &[(STATUS, 5, 2_000)]),
            sample(20, &[(STATUS, 8, 2_500)]),
            // Nobody reading: the origin saw nothing, and the window is not counted.
            sample(30, &[(STATUS, 8, 2_500)]),
        ];
        let load = OriginTraffic::of(&samples, 10).unwrap().status;
        assert_eq!(load.reading_seconds, 20.0);
        assert_eq!(load.origin_per_second, 8.0 / 20.0);
        assert_eq!(load.peak_origin_per_second, 0.5);
        assert_eq!(load.reads_per_second, 2_508.0 / 20.0);
        assert_eq!(load.cache_seconds, 2.0);
    }

    #[test]
    fn the_status_rate_is_over_ten_second_windows_whatever_the_sampling() {
        // Read every second: the same windows as read every ten.
        let samples: Vec<Sample> = (0..=30)
            .map(|second| {
                let origin = [0, 5, 8, 8][(second as usize).div_ceil(10)];
                let edge = [0, 2_000, 2_500, 2_500][(second as usize).div_ceil(10)];
                sample(second, &[(STATUS, origin, edge)])
            })
            .collect();
        let kept: Vec<u64> = thinned(&samples, STATUS_WINDOW)
            .iter()
            .map(|sample| sample.at.as_secs())
            .collect();
        assert_eq!(kept, [0, 10, 20, 30]);
        let load = OriginTraffic::of(&samples, 10).unwrap().status;
        assert_eq!(load.peak_origin_per_second, 0.5);
        assert_eq!(load.window_seconds, 10.0);
    }

    #[test]
    fn the_wait_routes_are_join_claim_and_the_cdn_routes() {
        for key in [JOIN, CLAIM, STATUS, "GET /events/{eventId}/draw/{prefix}"] {
            assert!(is_wait_route(key), "{key}");
        }
        assert!(is_wait_route("GET /events/{eventId}/draw"));
        for key in [
            LEAVE,
            "POST /events/{eventId}/holds",
            "GET /orders/{orderId}",
        ] {
            assert!(!is_wait_route(key), "{key}");
        }
    }

    #[test]
    fn no_samples_no_figures() {
        assert!(OriginTraffic::of(&[], 10).is_none());
    }
}
