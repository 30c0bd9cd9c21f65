//! What one customer action costs each AWS service: requests, bytes, Lambda time, Redis ECPUs,
//! DynamoDB units, SQS messages. The counts are BENCHMARKS.md's (round trips and write units per
//! operation, §4; scripts' Redis time, §1 and §3; memory per waiting customer, §2). The Lambda
//! durations and response sizes were not measured in AWS: they are estimates, each named as one.

use super::load::{Load, Metric, Table};
use super::on_sale::OnSale;
use super::stack_defaults::{Function, Route};

// ---- Redis: ECPUs per script.
// ElastiCache charges a script the vCPU time it takes relative to a simple command. BENCHMARKS.md
// §1 ran the scripts and the raw commands against the same Redis, CPU-bound: the throughput
// ratio is the vCPU ratio.
/// §1: raw `ZADD NX` from Rust, one multiplexed connection.
const RAW_ZADD_PER_SECOND: f64 = 288_806.0;
/// §1: raw `ZRANK`, the same way.
const RAW_ZRANK_PER_SECOND: f64 = 323_863.0;
/// §1: the join script (7 commands inside).
const JOIN_SCRIPTS_PER_SECOND: f64 = 81_511.0;
/// §1: the poll script, `standing.lua` (4 commands inside).
const STANDING_SCRIPTS_PER_SECOND: f64 = 102_295.0;
/// §3: one admit tick moved 5,000 customers in 12.2 ms of Redis time.
const ADMIT_TICK_SECONDS_PER_ADMISSION: f64 = 0.0122 / 5_000.0;

/// ECPUs of the join script: 288,806 / 81,511 = 3.54.
pub fn join_script_ecpu() -> f64 {
    RAW_ZADD_PER_SECOND / JOIN_SCRIPTS_PER_SECOND
}

/// ECPUs of `standing.lua` (the claim, and the status origin's read): 3.17.
pub fn standing_script_ecpu() -> f64 {
    RAW_ZRANK_PER_SECOND / STANDING_SCRIPTS_PER_SECOND
}

/// ECPUs of a script running `commands` commands, on the straight line through the two
/// measured scripts (4 commands: 3.17; 7: 3.54): 2.66 + 0.13 a command. Used for the scripts
/// §1 did not time: `is_admitted.lua` (1 command, the hold's check) and `leave.lua` (2, when a
/// payment ends the admission).
pub fn script_ecpu(commands: f64) -> f64 {
    let per_command = (join_script_ecpu() - standing_script_ecpu()) / 3.0;
    standing_script_ecpu() + (commands - 4.0) * per_command
}

/// ECPUs the admit tick spends per customer it admits: 12.2 ms / 5,000 at 288,806 ZADDs a
/// second = 0.70.
pub fn admit_tick_ecpu_per_admission() -> f64 {
    ADMIT_TICK_SECONDS_PER_ADMISSION * RAW_ZADD_PER_SECOND
}

/// §2: Redis memory per waiting customer (36-character ids, 2,000,000 waiting).
pub const REDIS_BYTES_PER_WAITING_CUSTOMER: f64 = 141.7;

/// §1 and §2: what one Redis core ran for one event (all of an event's keys share one hash
/// tag, so one slot, one shard, one engine thread): 288,806 single commands a second. Measured
/// on this project's 2-core machine, not on ElastiCache.
pub const ONE_EVENT_SLOT_ECPU_PER_SECOND: f64 = RAW_ZADD_PER_SECOND;

// ---- Sizes (estimates, from the shapes in openapi.yaml and the items in tables.rs).
/// A cached status answer with its headers.
pub const STATUS_RESPONSE_BYTES: f64 = 600.0;
/// A join, claim, hold, order or webhook answer with its headers.
pub const SMALL_RESPONSE_BYTES: f64 = 700.0;
/// One seat in the seat map's JSON (`{"seatId":"A-001","section":"Balcony","price":12000,
/// "currency":"KRW","status":"AVAILABLE"}`, as openapi.yaml's example): ~90 bytes, uncompressed.
pub const SEAT_MAP_BYTES_PER_SEAT: f64 = 90.0;
/// One seat item in DynamoDB, every attribute projected into `seat_map`: ~200 bytes.
pub const SEAT_ITEM_BYTES: f64 = 200.0;
/// One entry of a published draw chunk, `["<32 hex digits>",12345]`: ~48 bytes (shared/src/draw.rs:
/// 256 entries are about 12 KB).
pub const DRAW_ENTRY_BYTES: f64 = 48.0;
/// A draw summary, and an admission cursor with its checkpoints (the events table's items).
const DRAW_SUMMARY_BYTES: f64 = 500.0;
const ADMISSION_CURSOR_BYTES: f64 = 3_000.0;
/// How long the status may be cached (`STATUS_MAX_AGE`, shared/src/status.rs). Draw chunks never
/// change: each is fetched from the origin once.
pub const STATUS_CACHE_SECONDS: f64 = 2.0;
/// `seat_map` index keys per event (`SEAT_MAP_SHARDS`) and `pending_by_expiry` keys in all.
pub const INDEX_SHARDS: f64 = 8.0;
/// The hold function keeps an event's seat map this long per warm instance
/// (`SEAT_MAP_MAX_AGE`, shared/src/ledger/catalogue.rs).
pub const SEAT_MAP_CACHE_SECONDS: f64 = 2.0;

// ---- Lambda durations, seconds (estimates: BENCHMARKS.md measured handler CPU and local Redis
// latency, §1 and §8: join p99 3.9 ms, poll p99 8.3 ms, but no AWS durations; these add an
// in-VPC TLS round trip to the cache and 10-30 ms per DynamoDB call, rounded up).
const JOIN_SECONDS: f64 = 0.020;
const CLAIM_SECONDS: f64 = 0.020;
const STATUS_ORIGIN_SECONDS: f64 = 0.020;
/// Two GetItems (the summary, the chunk).
const DRAW_CHUNK_ORIGIN_SECONDS: f64 = 0.030;
const SEAT_MAP_SECONDS: f64 = 0.030;
/// Serialising the map at 256 MB (about a seventh of a vCPU).
const SEAT_MAP_SECONDS_PER_SEAT: f64 = 0.000_001;
/// Each 1 MB page of the 8 parallel queries, and parsing each seat.
const SEAT_MAP_RELOAD_SECONDS_PER_PAGE: f64 = 0.020;
const SEAT_MAP_RELOAD_SECONDS_PER_SEAT: f64 = 0.000_002;
const HOLD_SECONDS: f64 = 0.050;
const ORDER_READ_SECONDS: f64 = 0.020;
const CONFIRM_SECONDS: f64 = 0.080;
const OUTBOX_SECONDS_PER_MESSAGE: f64 = 0.010;
/// The stream mapping's batch size (template.yaml).
const OUTBOX_MESSAGES_PER_INVOCATION: f64 = 25.0;
const EXPIRE_SECONDS_PER_ORDER: f64 = 0.020;
/// `admit` ticks for 55 s of every minute; `expire` sweeps for about 2 s a minute.
const ADMIT_BUSY_SHARE: f64 = 55.0 / 60.0;
const EXPIRE_BUSY_SHARE: f64 = 2.0 / 60.0;

// ---- Secrets and queue requests.
/// Each warm instance of an HTTP function reads its secrets' two versions at cold start and
/// every 5 minutes (shared/src/secrets/).
pub const SECRET_VERSIONS_READ: f64 = 2.0;
pub const SECRET_REFRESH_SECONDS: f64 = 300.0;
/// A ticket message is sent by `outbox-stream`, then received and deleted by the consumer.
const SQS_REQUESTS_PER_MESSAGE: f64 = 3.0;

/// What each customer action costs, for one on-sale (the seat map's size depends on the venue,
/// the writes on the seats in an order).
#[derive(Debug, Clone)]
pub struct Operations {
    /// POST queue: CloudFront, Bot Control, API Gateway, `join`, the join script.
    pub join: Load,
    /// A read of the cached public status, at CloudFront only.
    pub status_read: Load,
    /// What the status costs the origin (`status`, one Redis read), once per cache period.
    pub status_origin_fetch: Load,
    /// A pre-queue customer's fetch of their draw chunk, at CloudFront.
    pub draw_chunk_read: Load,
    /// A chunk fetched from the origin (`status`: the summary and the chunk from the events
    /// table), once per chunk.
    pub draw_chunk_origin_fetch: Load,
    /// Publishing the draw at the opening: every chunk written under the event's key, once.
    pub draw_publication: Load,
    /// The one claim of an admitted customer (GET queue id), plus the admit tick's work.
    pub claim: Load,
    /// GET seats, served from the hold function's cached map.
    pub seat_map_read: Load,
    /// A hold instance reloading the map: 8 queries of the `seat_map` index.
    pub seat_map_reload: Load,
    /// POST holds, won or lost (a cancelled transaction is counted as if it wrote: cautious).
    pub hold: Load,
    /// GET orders/{id}.
    pub order_read: Load,
    /// The payment provider's webhook: GetItem, the sale's transaction, the admission ended.
    pub payment: Load,
    /// The ticket-issued message: stream, `outbox-stream`, SQS.
    pub ticket_message: Load,
    /// An order that ends unpaid: the sweep frees its seats.
    pub unpaid_order_end: Load,
    /// Every second the queue is open: `admit` ticking (and publishing the status, saving the
    /// cursor), `expire` sweeping.
    pub queue_open_second: Load,
    pub seat_map_response_bytes: f64,
    /// Chunks the draw is published in (`prefix_len`, shared/src/draw.rs).
    pub draw_chunks: f64,
    pub draw_chunk_bytes: f64,
}

/// The draw's chunks for this many entrants: 16^prefix length, about 256 entrants each at most.
pub fn draw_chunks(entrants: f64) -> f64 {
    let prefix_length = lineup::draw::prefix_len(entrants.ceil() as u64);
    16f64.powi(prefix_length as i32)
}

impl Operations {
    pub fn for_on_sale(on_sale: &OnSale) -> Operations {
        let seats_in_order = on_sale.behaviour.seats_per_order;
        let seat_map_response_bytes = on_sale.seats * SEAT_MAP_BYTES_PER_SEAT;
        let draw_chunks = draw_chunks(on_sale.pre_queue());
        let draw_chunk_bytes = on_sale.pre_queue() / draw_chunks * DRAW_ENTRY_BYTES;

        // Bot Control (when on) looks at the join, queue and seat routes only (0015).
        let mut join = Load::default();
        join.viewer_request(SMALL_RESPONSE_BYTES);
        join[Metric::BotControlRequests] += 1.0;
        join.api_request(Route::Join, SMALL_RESPONSE_BYTES);
        join.invocation(Function::Join, JOIN_SECONDS);
        join[Metric::RedisEcpu] += join_script_ecpu();

        let mut status_read = Load::default();
        status_read.viewer_request(STATUS_RESPONSE_BYTES);

        // The status is one small document the admit tick writes: a simple GET, 1 ECPU.
        let mut status_origin_fetch = Load::default();
        status_origin_fetch.api_request(Route::Status, STATUS_RESPONSE_BYTES);
        status_origin_fetch.invocation(Function::Status, STATUS_ORIGIN_SECONDS);
        status_origin_fetch[Metric::RedisEcpu] += 1.0;

        let mut draw_chunk_read = Load::default();
        draw_chunk_read.viewer_request(draw_chunk_bytes);

        // Two eventually consistent GetItems: half a unit per 4 KB each.
        let mut draw_chunk_origin_fetch = Load::default();
        draw_chunk_origin_fetch.api_request(Route::DrawChunk, draw_chunk_bytes);
        draw_chunk_origin_fetch.invocation(Function::Status, DRAW_CHUNK_ORIGIN_SECONDS);
        draw_chunk_origin_fetch[Metric::ReadUnits(Table::Events)] +=
            0.5 * ((DRAW_SUMMARY_BYTES / 4096.0).ceil() + (draw_chunk_bytes / 4096.0).ceil());

        // A write unit per KB of each chunk.
        let mut draw_publication = Load::default();
        draw_publication[Metric::WriteUnits(Table::Events)] +=
            draw_chunks * (draw_chunk_bytes / 1024.0).ceil() + (DRAW_SUMMARY_BYTES / 1024.0).ceil();

        let mut claim = Load::default();
        claim.viewer_request(SMALL_RESPONSE_BYTES);
        claim[Metric::BotControlRequests] += 1.0;
        claim.api_request(Route::Claim, SMALL_RESPONSE_BYTES);
        claim.invocation(Function::Poll, CLAIM_SECONDS);
        claim[Metric::RedisEcpu] += standing_script_ecpu() + admit_tick_ecpu_per_admission();

        let mut seat_map_read = Load::default();
        seat_map_read.viewer_request(seat_map_response_bytes);
        seat_map_read[Metric::BotControlRequests] += 1.0;
        seat_map_read.api_request(Route::SeatMap, seat_map_response_bytes);
        seat_map_read.invocation(
            Function::Hold,
            SEAT_MAP_SECONDS + on_sale.seats * SEAT_MAP_SECONDS_PER_SEAT,
        );

        // Eventually consistent index reads: half a unit per 4 KB.
        let seat_map_bytes_stored = on_sale.seats * SEAT_ITEM_BYTES;
        let pages_per_shard = (seat_map_bytes_stored / INDEX_SHARDS / (1024.0 * 1024.0)).ceil();
        let mut seat_map_reload = Load::default();
        seat_map_reload[Metric::ReadUnits(Table::SeatMapIndex)] +=
            seat_map_bytes_stored / 4096.0 * 0.5;
        seat_map_reload[Metric::LambdaBusySeconds(Function::Hold)] += pages_per_shard
            * SEAT_MAP_RELOAD_SECONDS_PER_PAGE
            + on_sale.seats * SEAT_MAP_RELOAD_SECONDS_PER_SEAT;

        // §4: 3n+5 write units: 2(n+2) for the transaction (n seats, the order, the hold lock),
        // n `seat_map` index updates, 1 `pending_by_expiry` entry.
        let mut hold = Load::default();
        hold.viewer_request(SMALL_RESPONSE_BYTES);
        hold[Metric::BotControlRequests] += 1.0;
        hold.api_request(Route::Hold, SMALL_RESPONSE_BYTES);
        hold.invocation(Function::Hold, HOLD_SECONDS);
        hold[Metric::RedisEcpu] += script_ecpu(1.0);
        hold[Metric::WriteUnits(Table::Seats)] += 2.0 * seats_in_order;
        hold[Metric::WriteUnits(Table::SeatMapIndex)] += seats_in_order;
        hold[Metric::WriteUnits(Table::Orders)] += 4.0;
        hold[Metric::WriteUnits(Table::PendingIndex)] += 1.0;

        let mut order_read = Load::default();
        order_read.viewer_request(SMALL_RESPONSE_BYTES);
        order_read.api_request(Route::OrderStatus, SMALL_RESPONSE_BYTES);
        order_read.invocation(Function::Hold, ORDER_READ_SECONDS);
        order_read[Metric::ReadUnits(Table::Orders)] += 1.0;

        // §4: a GetItem (1 read unit) and 3n+7 write units: the n seats twice and their index
        // entries, the order's records (4), its `pending_by_expiry` entry removed (1), the
        // outbox event (2). The provider calls through CloudFront too.
        let mut payment = Load::default();
        payment.viewer_request(SMALL_RESPONSE_BYTES);
        payment.api_request(Route::Webhook, SMALL_RESPONSE_BYTES);
        payment.invocation(Function::Confirm, CONFIRM_SECONDS);
        payment[Metric::RedisEcpu] += script_ecpu(2.0);
        payment[Metric::ReadUnits(Table::Orders)] += 1.0;
        payment[Metric::WriteUnits(Table::Seats)] += 2.0 * seats_in_order;
        payment[Metric::WriteUnits(Table::SeatMapIndex)] += seats_in_order;
        payment[Metric::WriteUnits(Table::Orders)] += 4.0;
        payment[Metric::WriteUnits(Table::PendingIndex)] += 1.0;
        payment[Metric::WriteUnits(Table::Outbox)] += 2.0;

        // Reading the stream from Lambda is free; one SendMessage per ticket.
        let mut ticket_message = Load::default();
        ticket_message[Metric::LambdaInvocations(Function::OutboxStream)] +=
            1.0 / OUTBOX_MESSAGES_PER_INVOCATION;
        ticket_message[Metric::LambdaBusySeconds(Function::OutboxStream)] +=
            OUTBOX_SECONDS_PER_MESSAGE;
        ticket_message[Metric::SqsSends] += 1.0;
        ticket_message[Metric::SqsRequests] += SQS_REQUESTS_PER_MESSAGE;

        // §4: 2+2n write units for a lapsed order.
        let mut unpaid_order_end = Load::default();
        unpaid_order_end[Metric::LambdaBusySeconds(Function::Expire)] += EXPIRE_SECONDS_PER_ORDER;
        unpaid_order_end[Metric::WriteUnits(Table::Seats)] += seats_in_order;
        unpaid_order_end[Metric::WriteUnits(Table::SeatMapIndex)] += seats_in_order;
        unpaid_order_end[Metric::WriteUnits(Table::Orders)] += 1.0;
        unpaid_order_end[Metric::WriteUnits(Table::PendingIndex)] += 1.0;

        // One `admit` invocation and one sweep a minute; a tick a second (its script, §3; the
        // open-events set; the status it publishes) and the cursor it saves; 8 index queries a
        // sweep.
        let mut queue_open_second = Load::default();
        queue_open_second[Metric::LambdaInvocations(Function::Admit)] += 1.0 / 60.0;
        queue_open_second[Metric::LambdaBusySeconds(Function::Admit)] += ADMIT_BUSY_SHARE;
        queue_open_second[Metric::LambdaInvocations(Function::Expire)] += 1.0 / 60.0;
        queue_open_second[Metric::LambdaBusySeconds(Function::Expire)] += EXPIRE_BUSY_SHARE;
        queue_open_second[Metric::RedisEcpu] += script_ecpu(8.0) + 2.0;
        queue_open_second[Metric::WriteUnits(Table::Events)] +=
            (ADMISSION_CURSOR_BYTES / 1024.0).ceil();
        queue_open_second[Metric::ReadUnits(Table::PendingIndex)] += INDEX_SHARDS * 0.5 / 60.0;

        Operations {
            join,
            status_read,
            status_origin_fetch,
            draw_chunk_read,
            draw_chunk_origin_fetch,
            draw_publication,
            claim,
            seat_map_read,
            seat_map_reload,
            hold,
            order_read,
            payment,
            ticket_message,
            unpaid_order_end,
            queue_open_second,
            seat_map_response_bytes,
            draw_chunks,
            draw_chunk_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::on_sale::tests::example;

    fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
        (actual - expected).abs() <= tolerance
    }

    #[test]
    fn script_ecpus_are_benchmarks_throughput_ratios() {
        assert!(close(join_script_ecpu(), 3.543, 0.001));
        assert!(close(standing_script_ecpu(), 3.166, 0.001));
        // The line through them: 1 command 2.79, 2 commands 2.92, 7 commands back at 3.54.
        assert!(close(script_ecpu(1.0), 2.789, 0.001));
        assert!(close(script_ecpu(7.0), join_script_ecpu(), 1e-9));
        assert!(close(admit_tick_ecpu_per_admission(), 0.7047, 0.0001));
    }

    #[test]
    fn write_units_per_hold_and_payment_are_benchmarks_formulas() {
        let ops = Operations::for_on_sale(&example());
        let writes = |load: &Load| -> f64 {
            Table::ALL
                .iter()
                .map(|table| load[Metric::WriteUnits(*table)])
                .sum()
        };
        // n = 2.5 seats: a hold 3n+5 = 12.5, a payment 3n+7 = 14.5, a lapse 2+2n = 7.
        assert_eq!(writes(&ops.hold), 12.5);
        assert_eq!(writes(&ops.payment), 14.5);
        assert_eq!(writes(&ops.unpaid_order_end), 7.0);
        assert_eq!(ops.payment[Metric::ReadUnits(Table::Orders)], 1.0);
    }

    #[test]
    fn the_seat_map_grows_with_the_venue() {
        let ops = Operations::for_on_sale(&example());
        // 50,000 seats: 4.5 MB of JSON, 9 API Gateway billing units, 10 MB in the index.
        assert_eq!(ops.seat_map_response_bytes, 4_500_000.0);
        assert_eq!(ops.seat_map_read[Metric::ApiBilledRequests], 9.0);
        // 10,000,000 bytes / 4,096 × 0.5 = 1,220.7 read units per reload.
        assert!(close(
            ops.seat_map_reload[Metric::ReadUnits(Table::SeatMapIndex)],
            1_220.7,
            0.1
        ));
    }

    #[test]
    fn the_draw_keeps_its_chunks_under_about_256_entrants() {
        // Up to 4,096 entrants: 16 chunks; 50,000: 256 (prefix 2); 5,000,000: 65,536 (prefix 4).
        assert_eq!(draw_chunks(4_096.0), 16.0);
        assert_eq!(draw_chunks(50_000.0), 256.0);
        assert_eq!(draw_chunks(5_000_000.0), 65_536.0);
        let ops = Operations::for_on_sale(&example());
        // 50,000 pre-queue entrants in 256 chunks of 48-byte entries: 9,375 bytes a chunk.
        assert_eq!(ops.draw_chunks, 256.0);
        assert!(close(ops.draw_chunk_bytes, 9_375.0, 1e-9));
        // The summary (0.5 unit) and a 9.4 KB chunk (3 × 0.5).
        assert_eq!(
            ops.draw_chunk_origin_fetch[Metric::ReadUnits(Table::Events)],
            2.0
        );
        // 256 chunks of 10 KB, and the summary's 1 KB.
        assert_eq!(
            ops.draw_publication[Metric::WriteUnits(Table::Events)],
            2_561.0
        );
    }
}
