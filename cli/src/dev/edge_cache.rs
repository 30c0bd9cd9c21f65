//! What CloudFront does in front of the API, done locally: the public routes (status, published
//! draw) are answered from a cache kept as long as the origin's `Cache-Control` allows, with
//! concurrent misses for one path collapsed into one origin request, and, within
//! `stale-while-revalidate`, the stale copy served to everyone while one request refreshes it, as
//! CloudFront does; every request that reaches a function is counted per route, so `/dev/info`
//! and `lineup simulate` can show what the crowd costs the origin. Before any of it, the
//! distribution's viewer-request function ([`viewer_request`]: malformed ids, draw prefixes and
//! layout versions, paths that are not canonical, routes that do not exist, and ids of events
//! the store of live events ([`live_events`]) does not hold are answered at the edge, counted as
//! `edge`).

pub mod live_events;
pub mod viewer_request;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lambda_http::{Body, Response};
use serde::{Deserialize, Serialize};

/// One route's traffic: requests that reached the function, and requests the cache answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTraffic {
    pub origin: u64,
    pub edge: u64,
}

struct Stored {
    answer: Response<Body>,
    fresh_until: Instant,
    /// Past freshness, the copy may still be served while one request refreshes it.
    stale_until: Instant,
}

/// One path's copy, and the lock of whoever is refreshing it.
#[derive(Default)]
struct Slot {
    stored: Mutex<Option<Stored>>,
    refresh: tokio::sync::Mutex<()>,
}

impl Slot {
    /// A copy of the stored answer if it is `usable_until` later than now.
    fn copy_if(&self, usable_until: impl Fn(&Stored) -> Instant) -> Option<Response<Body>> {
        let stored = self.stored.lock().unwrap_or_else(|p| p.into_inner());
        stored
            .as_ref()
            .filter(|stored| usable_until(stored) > Instant::now())
            .map(|stored| copy(&stored.answer))
    }

    fn fresh(&self) -> Option<Response<Body>> {
        self.copy_if(|stored| stored.fresh_until)
    }

    fn stale_but_usable(&self) -> Option<Response<Body>> {
        self.copy_if(|stored| stored.stale_until)
    }

    fn keep(&self, answer: &Response<Body>) {
        let lifetimes = shared_max_age(answer).map(|age| {
            let fresh_until = Instant::now() + age;
            (fresh_until, fresh_until + stale_while_revalidate(answer))
        });
        *self.stored.lock().unwrap_or_else(|p| p.into_inner()) =
            lifetimes.map(|(fresh_until, stale_until)| Stored {
                answer: copy(answer),
                fresh_until,
                stale_until,
            });
    }
}

#[derive(Default)]
pub struct EdgeCache {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    traffic: Mutex<BTreeMap<String, RouteTraffic>>,
    /// What the viewer-request function knows of live events (by default nothing yet: every
    /// well-formed request goes on, as when the store does not answer).
    live_events: Arc<live_events::LiveEventSet>,
}

fn directives(answer: &Response<Body>) -> Vec<String> {
    answer
        .headers()
        .get(http::header::CACHE_CONTROL)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(',').map(|d| d.trim().to_owned()).collect())
        .unwrap_or_default()
}

fn seconds_of(directives: &[String], name: &str) -> Option<Duration> {
    directives
        .iter()
        .find_map(|directive| directive.strip_prefix(name)?.strip_prefix('='))
        .and_then(|seconds| seconds.parse().ok())
        .map(Duration::from_secs)
}

/// How long a shared cache may keep an answer: `max-age` of a `public` `Cache-Control`.
pub fn shared_max_age(answer: &Response<Body>) -> Option<Duration> {
    let directives = directives(answer);
    if !directives.iter().any(|d| d == "public") {
        return None;
    }
    seconds_of(&directives, "max-age").filter(|age| !age.is_zero())
}

/// How long past freshness a stale copy may be served while it is refreshed.
fn stale_while_revalidate(answer: &Response<Body>) -> Duration {
    seconds_of(&directives(answer), "stale-while-revalidate").unwrap_or_default()
}

fn copy(answer: &Response<Body>) -> Response<Body> {
    let mut copy = Response::new(answer.body().clone());
    *copy.status_mut() = answer.status();
    *copy.headers_mut() = answer.headers().clone();
    copy
}

impl EdgeCache {
    /// An edge whose function looks event ids up in `live_events`.
    pub fn knowing(live_events: Arc<live_events::LiveEventSet>) -> Self {
        Self {
            live_events,
            ..Self::default()
        }
    }

    /// The store of live events the viewer-request function reads.
    pub fn live_events(&self) -> &live_events::LiveEventSet {
        &self.live_events
    }

    fn count(&self, route: &str, at_origin: bool) {
        let mut traffic = self.traffic.lock().unwrap_or_else(|p| p.into_inner());
        let counts = traffic.entry(route.to_owned()).or_default();
        if at_origin {
            counts.origin += 1;
        } else {
            counts.edge += 1;
        }
    }

    /// Traffic per route key (`GET /events/{eventId}/status`) so far.
    pub fn traffic(&self) -> BTreeMap<String, RouteTraffic> {
        self.traffic
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A request of `route` the viewer-request function answered: never the origin.
    pub fn refused(&self, route: &str) {
        self.count(route, false);
    }

    /// A route the cache does not serve: always the origin.
    pub async fn pass<F>(&self, route: &str, origin: F) -> Response<Body>
    where
        F: std::future::Future<Output = Response<Body>>,
    {
        self.count(route, true);
        origin.await
    }

    /// A cached route: from the cache while fresh; else one request asks `origin` while the
    /// others get the stale copy (within `stale-while-revalidate`) or, with none, wait for that
    /// one answer; kept for its `max-age`.
    pub async fn serve<F>(&self, route: &str, path: &str, origin: F) -> Response<Body>
    where
        F: std::future::Future<Output = Response<Body>>,
    {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(path.to_owned())
            .or_default()
            .clone();
        if let Some(hit) = slot.fresh() {
            self.count(route, false);
            return hit;
        }
        let _refreshing = match slot.refresh.try_lock() {
            Ok(refreshing) => refreshing,
            Err(_) => {
                // Another request is refreshing: its stale copy now, or its answer once it has it.
                if let Some(stale) = slot.stale_but_usable() {
                    self.count(route, false);
                    return stale;
                }
                let refreshing = slot.refresh.lock().await;
                if let Some(hit) = slot.fresh() {
                    self.count(route, false);
                    return hit;
                }
                refreshing
            }
        };
        // This request refreshes (unless one just did).
        if let Some(hit) = slot.fresh() {
            self.count(route, false);
            return hit;
        }
        self.count(route, true);
        let answer = origin.await;
        slot.keep(&answer);
        answer
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn answer(cache_control: &str) -> Response<Body> {
        let mut answer = Response::new(Body::Text("{}".into()));
        answer.headers_mut().insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_str(cache_control).unwrap(),
        );
        answer
    }

    #[test]
    fn only_public_answers_with_an_age_are_kept() {
        let age = |value| shared_max_age(&answer(value));
        assert_eq!(
            age("public, max-age=2, stale-while-revalidate=5"),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            age("public, max-age=31536000, immutable"),
            Some(Duration::from_secs(31_536_000))
        );
        assert_eq!(age("private, max-age=60"), None);
        assert_eq!(age("public, max-age=0"), None);
        assert_eq!(age("no-store"), None);
        assert_eq!(
            stale_while_revalidate(&answer("public, max-age=2, stale-while-revalidate=5")),
            Duration::from_secs(5)
        );
        assert_eq!(
            stale_while_revalidate(&answer("public, max-age=2")),
            Duration::ZERO
        );
    }

    fn versioned(version: &str) -> Response<Body> {
        let mut answer = answer("public, max-age=1, stale-while-revalidate=30");
        *answer.body_mut() = Body::Text(version.to_owned());
        answer
    }

    #[tokio::test]
    async fn while_one_request_refreshes_the_others_get_the_stale_copy_at_once() {
        let cache = Arc::new(EdgeCache::default());
        cache
            .serve("GET /status", "/s", async { versioned("v1") })
            .await;
        tokio::time::sleep(Duration::from_millis(1_100)).await; // v1 is now stale
        let refresher = {
            let cache = cache.clone();
            tokio::spawn(async move {
                cache
                    .serve("GET /status", "/s", async {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        versioned("v2")
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        let meanwhile = cache
            .serve("GET /status", "/s", async {
                unreachable!("one refresh at a time")
            })
            .await;
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "not held up"
        );
        assert!(matches!(meanwhile.body(), Body::Text(text) if text == "v1"));
        let refreshed = refresher.await.unwrap();
        assert!(matches!(refreshed.body(), Body::Text(text) if text == "v2"));
        assert_eq!(
            cache.traffic()["GET /status"],
            RouteTraffic { origin: 2, edge: 1 }
        );
    }

    #[tokio::test]
    async fn a_crowd_at_once_costs_the_origin_one_request_per_period() {
        let cache = Arc::new(EdgeCache::default());
        let asked = Arc::new(AtomicU64::new(0));
        let mut crowd = tokio::task::JoinSet::new();
        for _ in 0..200 {
            let (cache, asked) = (cache.clone(), asked.clone());
            crowd.spawn(async move {
                cache
                    .serve("GET /status", "/events/gala/status", async {
                        asked.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        answer("public, max-age=60")
                    })
                    .await
            });
        }
        while let Some(done) = crowd.join_next().await {
            assert_eq!(done.unwrap().status(), 200);
        }
        assert_eq!(
            asked.load(Ordering::SeqCst),
            1,
            "concurrent misses collapse"
        );
        let traffic = cache.traffic()["GET /status"];
        assert_eq!(
            traffic,
            RouteTraffic {
                origin: 1,
                edge: 199
            }
        );

        // A different path is a different object; an uncacheable answer is asked every time.
        for _ in 0..3 {
            cache
                .serve("GET /status", "/events/other/status", async {
                    answer("no-store")
                })
                .await;
        }
        assert_eq!(cache.traffic()["GET /status"].origin, 4);
    }
}
