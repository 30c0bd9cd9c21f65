//! What the customers asked of the edge: every request a simulated customer sends to the dev
//! server's CDN-facing URL (the contract's routes, cached or not, each retry included), counted
//! by the simulator itself per tenth of a second and per kind, and per route for the whole run.
//! The dev server's own counts ([`super::origin_traffic`]) say what reached the functions; these
//! say what the crowd asked of CloudFront, which is what its request quota and its bill count.
//! The simulator's own calls (`/dev/*`) and the payment provider's confirm (Stripe's, not
//! Lineup's) are not counted.

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::api_client::routes;

/// What a request was for, as the opening's figures split them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RequestKind {
    /// `GET /events/{eventId}/status`: cached at the edge.
    Status,
    /// `GET /events/{eventId}/draw/{prefix}`: a published draw's chunk, cached at the edge.
    DrawChunk,
    /// The seat map's availability and layout: the other cached routes.
    SeatMap,
    /// Join, poll (the claim) and leave: never cached, every one reaches the origin.
    Queue,
    /// Holds, orders and payments: never cached either.
    Shopping,
}

impl RequestKind {
    pub const ALL: [RequestKind; 5] = [
        Self::Status,
        Self::DrawChunk,
        Self::SeatMap,
        Self::Queue,
        Self::Shopping,
    ];

    /// The kind of a request of the contract's route `key` (`GET /events/{eventId}/status`);
    /// `None` for a route that is not the contract's.
    pub fn of(key: &str) -> Option<Self> {
        KIND_OF_ROUTE.get(key).copied()
    }

    /// The camelCase name the JSON report uses, for the text report too.
    pub fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::DrawChunk => "drawChunk",
            Self::SeatMap => "seatMap",
            Self::Queue => "queue",
            Self::Shopping => "shopping",
        }
    }
}

/// Every contract route's kind, by route key, worked out once.
static KIND_OF_ROUTE: LazyLock<HashMap<String, RequestKind>> = LazyLock::new(|| {
    let queue = [routes::join().key, routes::poll().key, routes::leave().key];
    crate::dev::routes::routes()
        .into_iter()
        .map(|route| {
            let key = route.key();
            let kind = if key == routes::status().key {
                RequestKind::Status
            } else if key == routes::draw_chunk().key {
                RequestKind::DrawChunk
            } else if route.cached() {
                RequestKind::SeatMap
            } else if queue.contains(&key.as_str()) {
                RequestKind::Queue
            } else {
                RequestKind::Shopping
            };
            (key, kind)
        })
        .collect()
});

/// Requests of each kind in one stretch of time.
pub type KindCounts = BTreeMap<RequestKind, u64>;

/// The counts are kept per this long: fine enough to cut whole seconds from any moment.
const TICK: Duration = Duration::from_millis(100);

/// The customers' requests to the edge, counted as they are sent.
pub struct EdgeCounter {
    /// The moment tick 0 starts.
    since: Instant,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    /// Requests per kind in each [`TICK`] since `since`.
    per_tick: Vec<KindCounts>,
    /// Requests per route key, the whole run.
    per_route: BTreeMap<&'static str, u64>,
}

impl Default for EdgeCounter {
    fn default() -> Self {
        Self {
            since: Instant::now(),
            counts: Mutex::default(),
        }
    }
}

impl EdgeCounter {
    /// One request of the route `key` sent now (ignored unless it is one of the contract's).
    pub fn count(&self, key: &'static str) {
        self.count_at(key, Instant::now());
    }

    fn count_at(&self, key: &'static str, sent: Instant) {
        let Some(kind) = RequestKind::of(key) else {
            return;
        };
        let tick =
            (sent.saturating_duration_since(self.since).as_millis() / TICK.as_millis()) as usize;
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if counts.per_tick.len() <= tick {
            counts.per_tick.resize_with(tick + 1, KindCounts::new);
        }
        *counts.per_tick[tick].entry(kind).or_default() += 1;
        *counts.per_route.entry(key).or_default() += 1;
    }

    /// The requests of each of the `seconds` whole seconds from `from` (to a tenth of a second:
    /// each second is the ten ticks that start in it).
    pub fn per_second(&self, from: Instant, seconds: u64) -> Vec<KindCounts> {
        let first_tick =
            (from.saturating_duration_since(self.since).as_millis() / TICK.as_millis()) as usize;
        let ticks_per_second = (Duration::from_secs(1).as_millis() / TICK.as_millis()) as usize;
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        (0..seconds as usize)
            .map(|second| {
                let start = first_tick + second * ticks_per_second;
                let mut total = KindCounts::new();
                for tick in counts.per_tick.iter().skip(start).take(ticks_per_second) {
                    for (kind, n) in tick {
                        *total.entry(*kind).or_default() += n;
                    }
                }
                total
            })
            .collect()
    }

    /// Requests per route key over the whole run.
    pub fn per_route(&self) -> BTreeMap<&'static str, u64> {
        self.counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .per_route
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_contract_route_has_its_kind_and_the_simulators_own_calls_none() {
        assert_eq!(
            RequestKind::of(routes::status().key),
            Some(RequestKind::Status)
        );
        assert_eq!(
            RequestKind::of(routes::draw_chunk().key),
            Some(RequestKind::DrawChunk)
        );
        for route in [routes::seats(), routes::layout()] {
            assert_eq!(RequestKind::of(route.key), Some(RequestKind::SeatMap));
        }
        for route in [routes::join(), routes::poll(), routes::leave()] {
            assert_eq!(RequestKind::of(route.key), Some(RequestKind::Queue));
        }
        for route in [
            routes::hold(),
            routes::release(),
            routes::order(),
            routes::payment(),
        ] {
            assert_eq!(RequestKind::of(route.key), Some(RequestKind::Shopping));
        }
        for own in [routes::DEV_INFO, routes::PAY, routes::TICKETS] {
            assert_eq!(RequestKind::of(own), None, "{own}");
        }
    }

    #[test]
    fn whole_seconds_are_cut_from_any_moment_to_a_tenth() {
        let counter = EdgeCounter::default();
        let at = |millis| counter.since + Duration::from_millis(millis);
        let status = routes::status().key;
        for millis in [100, 450, 1_449, 1_450, 2_449, 2_450] {
            counter.count_at(status, at(millis));
        }
        counter.count_at(routes::join().key, at(500));
        counter.count_at(routes::DEV_INFO, at(500));
        // Seconds from 0.4 s: [0.4, 1.4), [1.4, 2.4), [2.4, 3.4).
        let seconds = counter.per_second(at(400), 3);
        let of = |second: usize, kind| seconds[second].get(&kind).copied().unwrap_or(0);
        assert_eq!(
            [0, 1, 2].map(|s| of(s, RequestKind::Status)),
            [1, 2, 2],
            "{seconds:?}"
        );
        assert_eq!(of(0, RequestKind::Queue), 1);
        assert_eq!(counter.per_route().get(status), Some(&6));
        assert_eq!(counter.per_route().get(routes::DEV_INFO), None);
    }
}
