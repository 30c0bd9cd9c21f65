//! A load: how much of each AWS resource something uses. The same shape serves for one
//! operation (a join costs 1 CloudFront request, 3.5 ECPUs...), for a second of the on-sale
//! (amounts per second) and for the whole on-sale (totals), so they add and scale alike.

use std::ops::{Index, IndexMut};

use serde::Serialize;

use super::stack_defaults::{Function, Route};

/// The DynamoDB tables and indexes, each with its own throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Table {
    /// Seat items, one key each; no index (docs/decisions/0017 dropped `seat_map`): its stream
    /// feeds the seat map in Redis.
    Seats,
    Orders,
    /// The orders table's sparse `pending_by_expiry` index: 8 keys in all.
    PendingIndex,
    Outbox,
    /// Events, their admission cursor and their published draw's summary (every record of an
    /// event under one key, `EVENT#<eventId>`), the draw's chunks (each under its own key), and
    /// the seat layouts (each version in 32 copies, each copy's parts under its own key).
    Events,
}

/// A partition key whose reads are checked on their own (a partition's limit is hard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotKey {
    /// The published draw's chunks (all of them; each chunk's key sees its share).
    DrawChunks,
    /// A layout version's parts, read once by each new `hold` instance and once for CloudFront
    /// (all copies; each copy's key sees its share).
    Layout,
}

impl HotKey {
    pub const ALL: [HotKey; 2] = [HotKey::DrawChunks, HotKey::Layout];

    fn index(self) -> usize {
        self as usize
    }
}

impl Table {
    pub const ALL: [Table; 5] = [
        Table::Seats,
        Table::Orders,
        Table::PendingIndex,
        Table::Outbox,
        Table::Events,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Seats => "seats table",
            Table::Orders => "orders table",
            Table::PendingIndex => "pending_by_expiry index",
            Table::Outbox => "outbox table",
            Table::Events => "events table",
        }
    }

    /// The table whose quota it counts against (an index counts with its table).
    pub fn base(self) -> Table {
        match self {
            Table::PendingIndex => Table::Orders,
            table => table,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One thing a load measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    CloudFrontRequests,
    CloudFrontBytes,
    /// Requests the WAF's Bot Control rule group analyses (scoped down to joins and claims).
    BotControlRequests,
    ApiRequests,
    /// API Gateway meters a request per 512 KB of it.
    ApiBilledRequests,
    RouteRequests(Route),
    LambdaInvocations(Function),
    /// Seconds a function's instances are busy: per second of the on-sale, its concurrency.
    LambdaBusySeconds(Function),
    RedisEcpu,
    ReadUnits(Table),
    WriteUnits(Table),
    /// Read units on one partition key (also counted in their table's `ReadUnits`).
    KeyReadUnits(HotKey),
    /// `SendMessage` calls on the ticket queue.
    SqsSends,
    /// Billed SQS requests: send, receive and delete.
    SqsRequests,
    SecretsCalls,
    /// Requests Lineup's key makes to the payment provider (Stripe): payments made, fetched,
    /// cancelled; refunds.
    ProviderRequests,
}

const ROUTES: usize = Route::ALL.len();
const FUNCTIONS: usize = Function::ALL.len();
const TABLES: usize = Table::ALL.len();
const HOT_KEYS: usize = HotKey::ALL.len();
const METRICS: usize = 5 + ROUTES + 2 * FUNCTIONS + 1 + 2 * TABLES + HOT_KEYS + 4;

impl Metric {
    fn index(self) -> usize {
        let routes = 5;
        let invocations = routes + ROUTES;
        let busy = invocations + FUNCTIONS;
        let redis = busy + FUNCTIONS;
        let reads = redis + 1;
        let writes = reads + TABLES;
        let keys = writes + TABLES;
        let sqs = keys + HOT_KEYS;
        match self {
            Metric::CloudFrontRequests => 0,
            Metric::CloudFrontBytes => 1,
            Metric::BotControlRequests => 2,
            Metric::ApiRequests => 3,
            Metric::ApiBilledRequests => 4,
            Metric::RouteRequests(route) => routes + route.index(),
            Metric::LambdaInvocations(function) => invocations + function.index(),
            Metric::LambdaBusySeconds(function) => busy + function.index(),
            Metric::RedisEcpu => redis,
            Metric::ReadUnits(table) => reads + table.index(),
            Metric::WriteUnits(table) => writes + table.index(),
            Metric::KeyReadUnits(key) => keys + key.index(),
            Metric::SqsSends => sqs,
            Metric::SqsRequests => sqs + 1,
            Metric::SecretsCalls => sqs + 2,
            Metric::ProviderRequests => sqs + 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Load([f64; METRICS]);

impl Default for Load {
    fn default() -> Self {
        Load([0.0; METRICS])
    }
}

impl Load {
    /// Adds `times` × `other`.
    pub fn add(&mut self, other: &Load, times: f64) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0.iter()) {
            *mine += theirs * times;
        }
    }

    /// Takes, metric by metric, the larger of the two, noting `when` for each that grew.
    pub fn keep_larger(&mut self, other: &Load, when: f64, peak_times: &mut Load) {
        for ((mine, theirs), at) in self
            .0
            .iter_mut()
            .zip(other.0.iter())
            .zip(peak_times.0.iter_mut())
        {
            if *theirs > *mine {
                *mine = *theirs;
                *at = when;
            }
        }
    }

    /// A request through API Gateway to a route, the response `response_bytes` long.
    pub fn api_request(&mut self, route: Route, response_bytes: f64) {
        const METERED_BYTES: f64 = 512.0 * 1024.0;
        self[Metric::ApiRequests] += 1.0;
        self[Metric::ApiBilledRequests] += (response_bytes / METERED_BYTES).ceil().max(1.0);
        self[Metric::RouteRequests(route)] += 1.0;
    }

    /// One invocation of a function, busy for `seconds`.
    pub fn invocation(&mut self, function: Function, seconds: f64) {
        self[Metric::LambdaInvocations(function)] += 1.0;
        self[Metric::LambdaBusySeconds(function)] += seconds;
    }

    /// A request at CloudFront (and so at the WAF in front of it).
    pub fn viewer_request(&mut self, response_bytes: f64) {
        self[Metric::CloudFrontRequests] += 1.0;
        self[Metric::CloudFrontBytes] += response_bytes;
    }
}

impl Index<Metric> for Load {
    type Output = f64;

    fn index(&self, metric: Metric) -> &f64 {
        &self.0[metric.index()]
    }
}

impl IndexMut<Metric> for Load {
    fn index_mut(&mut self, metric: Metric) -> &mut f64 {
        &mut self.0[metric.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_its_own_slot() {
        let mut metrics = vec![
            Metric::CloudFrontRequests,
            Metric::CloudFrontBytes,
            Metric::BotControlRequests,
            Metric::ApiRequests,
            Metric::ApiBilledRequests,
            Metric::RedisEcpu,
            Metric::SqsSends,
            Metric::SqsRequests,
            Metric::SecretsCalls,
            Metric::ProviderRequests,
        ];
        metrics.extend(Route::ALL.map(Metric::RouteRequests));
        metrics.extend(Function::ALL.map(Metric::LambdaInvocations));
        metrics.extend(Function::ALL.map(Metric::LambdaBusySeconds));
        metrics.extend(Table::ALL.map(Metric::ReadUnits));
        metrics.extend(Table::ALL.map(Metric::WriteUnits));
        metrics.extend(HotKey::ALL.map(Metric::KeyReadUnits));
        let mut slots: Vec<usize> = metrics.iter().map(|metric| metric.index()).collect();
        slots.sort_unstable();
        assert_eq!(slots, (0..METRICS).collect::<Vec<_>>());
    }

    #[test]
    fn api_gateway_meters_a_request_per_512_kb() {
        let mut load = Load::default();
        load.api_request(Route::Layout, 1_094_435.0);
        assert_eq!(load[Metric::ApiRequests], 1.0);
        assert_eq!(load[Metric::ApiBilledRequests], 3.0);
        load.api_request(Route::Join, 700.0);
        assert_eq!(load[Metric::ApiBilledRequests], 4.0);
        assert_eq!(load[Metric::RouteRequests(Route::Layout)], 1.0);
    }

    #[test]
    fn loads_add_scaled_and_peaks_remember_when() {
        let mut second = Load::default();
        second.viewer_request(600.0);
        let mut total = Load::default();
        total.add(&second, 3.0);
        assert_eq!(total[Metric::CloudFrontBytes], 1_800.0);

        let (mut peak, mut when) = (Load::default(), Load::default());
        peak.keep_larger(&second, -5.0, &mut when);
        peak.keep_larger(&total, 12.0, &mut when);
        peak.keep_larger(&second, 20.0, &mut when);
        assert_eq!(peak[Metric::CloudFrontRequests], 3.0);
        assert_eq!(when[Metric::CloudFrontRequests], 12.0);
        assert_eq!(when[Metric::RedisEcpu], 0.0);
    }
}
