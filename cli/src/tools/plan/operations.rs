//! What one customer action costs each AWS service: requests, bytes, Lambda time, Redis ECPUs,
//! DynamoDB units, SQS messages. The counts are BENCHMARKS.md's (round trips and write units per
//! operation, §4; scripts' Redis time, §1 and §3; memory per waiting customer, §2). The Lambda
//! durations and response sizes were not measured in AWS: they are estimates, each named as one.

use super::load::{HotKey, Load, Metric, Table};
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

/// ElastiCache charges a read or write 1 ECPU per KB it transfers, or its vCPU time if that is
/// more (aws_figures.json `prices.elasticache_ecpu_per_simple_command`; a test holds the two
/// equal). Only the availability's bits are over 1 KB.
pub const ECPU_PER_KB_TRANSFERRED: f64 = 1.0;

/// ECPUs of `apply_changes.lua` per seat change: its two `SETBIT`s, on the line of
/// [`script_ecpu`] (0.13 a command). The script's own cost (`HGET`, `EXISTS`) is per batch.
pub fn seat_change_ecpu() -> f64 {
    2.0 * (script_ecpu(5.0) - script_ecpu(4.0))
}

// ---- Sizes (estimates, from the shapes in openapi.yaml and the items in tables.rs, but the seat
// map's and the layout's, measured: BENCHMARKS.md §7, "The seat map at stadium size").
/// A cached status answer with its headers.
pub const STATUS_RESPONSE_BYTES: f64 = 600.0;
/// A join, claim, hold, order or webhook answer with its headers.
pub const SMALL_RESPONSE_BYTES: f64 = 700.0;
/// Sections in the venue: `lineup seed` makes three.
pub const SECTIONS: f64 = 3.0;
/// The availability document (`GET /seats`): a bit a seat, base64 (4/3), per section, so
/// seats / 6 bytes; ~80 bytes per section (its name and counts) and ~150 for the rest (event,
/// layout version and path, totals). 20,000 seats: 3,723 (measured 3,659); 80,000: 13,723
/// (measured 13,673). Uncompressed: CloudFront compresses it, but random bits gzip only to
/// about the raw bits (2,689 and 10,113 measured), so this is an upper bound, not far above.
pub const AVAILABILITY_BYTES_PER_SEAT: f64 = 1.0 / 8.0 * 4.0 / 3.0;
pub const AVAILABILITY_BYTES_PER_SECTION: f64 = 80.0;
pub const AVAILABILITY_FIXED_BYTES: f64 = 150.0;
/// The layout document (`GET /layout/{version}`), per seat, uncompressed: 262,659 bytes at
/// 20,000 seats, 1,094,435 at 80,000 (13.7 a seat); gzip takes it to about 2.6 a seat, so this
/// is an upper bound on what CloudFront sends. Stored as is in the events table, in parts.
pub const LAYOUT_BYTES_PER_SEAT: f64 = 13.7;
/// A layout part's most bytes (`LAYOUT_PART_BYTES`, shared/src/adapters/dynamo/event_records.rs).
pub const LAYOUT_PART_BYTES: f64 = 350_000.0;
/// Layouts fetched per admitted customer: the one version of the on-sale, once (immutable,
/// kept by the page).
pub const LAYOUTS_PER_ADMITTED: f64 = 1.0;
/// One entry of a published draw chunk, `["<32 hex digits>",12345]`: ~48 bytes (shared/src/domain/draw.rs:
/// 256 entries are about 12 KB).
pub const DRAW_ENTRY_BYTES: f64 = 48.0;
/// A draw summary, and an admission cursor with its checkpoints (the events table's items).
const DRAW_SUMMARY_BYTES: f64 = 500.0;
const ADMISSION_CURSOR_BYTES: f64 = 3_000.0;
/// How long the status may be cached (`STATUS_MAX_AGE`, shared/src/domain/status.rs). Draw chunks never
/// change: each is fetched from the origin once.
pub const STATUS_CACHE_SECONDS: f64 = 2.0;
/// How long the availability may be cached (`max-age=1`, `AvailabilityDocument::cache_control`,
/// shared/src/application/ports/availability.rs; stale-while-revalidate lets one request refresh it while
/// the others get the stale copy): behind Origin Shield, one origin request a second per event.
pub const AVAILABILITY_CACHE_SECONDS: f64 = 1.0;
/// How long a `hold` instance trusts an event's current layout before an exact hold reads the
/// availability again for it (`CURRENT_MAX_AGE`, shared/src/application/layout_catalogue.rs).
pub const CURRENT_LAYOUT_SECONDS: f64 = 2.0;
/// `pending_by_expiry` keys in all (`PENDING_SHARDS`).
pub const PENDING_SHARDS: f64 = 8.0;

// ---- The seats table's stream (template.yaml, `AvailabilityFunction`'s `SeatsStream`).
/// Records per invocation at most.
const AVAILABILITY_BATCH_SIZE: f64 = 500.0;
/// How long Lambda gathers records before invoking with fewer.
const AVAILABILITY_BATCHING_WINDOW_SECONDS: f64 = 1.0;
/// The stream's shards, one invocation at a time each (parallelization factor 1). An estimate:
/// an on-demand table starts with about 4 partitions (its 4,000 write units), each a shard.
pub const SEATS_STREAM_SHARDS: f64 = 4.0;

// ---- Lambda durations, seconds (estimates: BENCHMARKS.md measured handler CPU and local Redis
// latency, §1 and §8: join p99 3.9 ms, poll p99 8.3 ms, but no AWS durations; these add an
// in-VPC TLS round trip to the cache and 10-30 ms per DynamoDB call, rounded up).
const JOIN_SECONDS: f64 = 0.020;
const CLAIM_SECONDS: f64 = 0.020;
const STATUS_ORIGIN_SECONDS: f64 = 0.020;
/// Two GetItems (the summary, the chunk).
const DRAW_CHUNK_ORIGIN_SECONDS: f64 = 0.030;
/// The availability: one Redis read, then each section's bits re-packed (a bit at a time, at
/// 256 MB's seventh of a vCPU).
const SEAT_MAP_ORIGIN_SECONDS: f64 = 0.020;
const SEAT_MAP_ORIGIN_SECONDS_PER_SEAT: f64 = 0.000_000_1;
/// A layout: one Query, its parts' pages read one after another.
const LAYOUT_QUERY_SECONDS: f64 = 0.030;
const LAYOUT_QUERY_SECONDS_PER_PART: f64 = 0.020;
/// A `hold` instance indexing a layout it loaded (parsing each seat).
const LAYOUT_INDEX_SECONDS_PER_SEAT: f64 = 0.000_002;
/// An exact hold: the token check and one transaction.
const HOLD_SECONDS: f64 = 0.050;
/// Each further best-available attempt: an availability read and another transaction.
const BEST_AVAILABLE_ATTEMPT_SECONDS: f64 = 0.030;
const ORDER_READ_SECONDS: f64 = 0.020;
const CONFIRM_SECONDS: f64 = 0.080;
/// Checkout: the order read, the provider's PaymentIntent made (Stripe answers in ~300-800 ms),
/// its id stored.
const CHECKOUT_SECONDS: f64 = 0.6;
const OUTBOX_SECONDS_PER_MESSAGE: f64 = 0.010;
/// The stream mapping's batch size (template.yaml).
const OUTBOX_MESSAGES_PER_INVOCATION: f64 = 25.0;
/// `availability`: a batch's Redis script, and decoding each record.
const AVAILABILITY_SECONDS_PER_BATCH: f64 = 0.005;
const AVAILABILITY_SECONDS_PER_RECORD: f64 = 0.000_01;
const EXPIRE_SECONDS_PER_ORDER: f64 = 0.020;
/// `admit` ticks for 55 s of every minute; `expire` sweeps for about 2 s a minute.
const ADMIT_BUSY_SHARE: f64 = 55.0 / 60.0;
const EXPIRE_BUSY_SHARE: f64 = 2.0 / 60.0;

// ---- Secrets and queue requests.
/// Each warm instance of an HTTP function reads its secrets' two versions at cold start and
/// every 5 minutes (shared/src/application/rotating.rs).
pub const SECRET_VERSIONS_READ: f64 = 2.0;
pub const SECRET_REFRESH_SECONDS: f64 = 300.0;
/// A ticket message is sent by `outbox-stream`, then received and deleted by the consumer.
const SQS_REQUESTS_PER_MESSAGE: f64 = 3.0;

/// What each customer action costs, for one on-sale (the seat map's and the layout's sizes
/// depend on the venue, the writes on the seats in an order).
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
    /// GET seats (the availability), at CloudFront only: public, cached a second.
    pub seat_map_read: Load,
    /// What the availability costs the origin (`status`, one Redis read of the bits), once per
    /// cache period while anyone reads it.
    pub seat_map_origin_fetch: Load,
    /// GET layout/{version}, at CloudFront only: immutable, once per admitted customer.
    pub layout_read: Load,
    /// What the layout costs the origin (`status`, one Query of its parts), once per version.
    pub layout_origin_fetch: Load,
    /// A new `hold` instance loading the layout (one Query of its parts) and indexing it, once
    /// per version.
    pub hold_layout_load: Load,
    /// A warm `hold` instance checking the event's current layout version (an availability
    /// read), at most once per 2 s, when it serves an exact hold.
    pub hold_layout_check: Load,
    /// POST holds naming seats: the token check and one transaction (a cancelled transaction is
    /// counted as if it wrote: cautious).
    pub exact_hold: Load,
    /// POST holds asking for the best available: the token check, then per attempt an
    /// availability read and a transaction (the behaviour's transactions per request).
    pub best_available_hold: Load,
    /// GET orders/{id}.
    pub order_read: Load,
    /// The payment provider's webhook: GetItem, the sale's transaction, the admission ended.
    pub payment: Load,
    /// The ticket-issued message: stream, `outbox-stream`, SQS.
    pub ticket_message: Load,
    /// An order that ends unpaid: the sweep frees its seats.
    pub unpaid_order_end: Load,
    /// One `availability` invocation: a batch of the seats table's stream, one Redis script
    /// (reading the stream from Lambda is free).
    pub availability_batch: Load,
    /// One seat change in that batch (a hold, a sale, a seat freed): two bits set.
    pub seat_change: Load,
    /// Every second the queue is open: `admit` ticking (and publishing the status, saving the
    /// cursor), `expire` sweeping.
    pub queue_open_second: Load,
    /// The availability document's bytes (uncompressed).
    pub availability_bytes: f64,
    /// The layout document's bytes (uncompressed), and the parts it is stored in.
    pub layout_bytes: f64,
    pub layout_parts: f64,
    /// Chunks the draw is published in (`prefix_len`, shared/src/domain/draw.rs).
    pub draw_chunks: f64,
    pub draw_chunk_bytes: f64,
}

/// The draw's chunks for this many entrants: 16^prefix length, about 256 entrants each at most.
pub fn draw_chunks(entrants: f64) -> f64 {
    let prefix_length = lineup::domain::draw::prefix_len(entrants.ceil() as u64);
    16f64.powi(prefix_length as i32)
}

/// The availability document's bytes for a venue of `seats`.
pub fn availability_document_bytes(seats: f64) -> f64 {
    seats * AVAILABILITY_BYTES_PER_SEAT
        + SECTIONS * AVAILABILITY_BYTES_PER_SECTION
        + AVAILABILITY_FIXED_BYTES
}

/// ECPUs of one availability read (`read_availability.lua`: the layout summary's `HGET` and the
/// bits' `GET`): the bits are a byte per 8 seats, raw, so a venue over about 20,000 seats is
/// charged by the KB, not by the script's vCPU time.
pub fn availability_read_ecpu(seats: f64) -> f64 {
    let summary_bytes = SECTIONS * AVAILABILITY_BYTES_PER_SECTION + AVAILABILITY_FIXED_BYTES;
    let transferred_kb = (seats / 8.0 + summary_bytes) / 1024.0;
    script_ecpu(2.0).max(transferred_kb * ECPU_PER_KB_TRANSFERRED)
}

/// `availability` invocations a second for this many seat changes a second: each shard is
/// invoked when it has a full batch, or when the batching window ends with fewer (the changes
/// spread evenly over the shards).
pub fn availability_invocations(seat_changes_per_second: f64) -> f64 {
    let per_shard = seat_changes_per_second / SEATS_STREAM_SHARDS;
    if per_shard <= 0.0 {
        return 0.0;
    }
    let by_window = per_shard.min(1.0 / AVAILABILITY_BATCHING_WINDOW_SECONDS);
    SEATS_STREAM_SHARDS * (per_shard / AVAILABILITY_BATCH_SIZE).max(by_window)
}

/// One hold transaction's write units, `n` seats (shared/src/adapters/dynamo/hold.rs): 2 a seat
/// (transactional), 2 each for the order and the customer's hold lock, and the order's
/// `pending_by_expiry` entry. §4's 3n+5 less the n `seat_map` index writes ADR 0017 dropped:
/// 2n+5. A ticket limit adds a ConditionCheck of the seats bought (2 more): not counted, no
/// limit by default.
fn add_hold_transaction(load: &mut Load, seats_in_order: f64, transactions: f64) {
    load[Metric::WriteUnits(Table::Seats)] += 2.0 * seats_in_order * transactions;
    load[Metric::WriteUnits(Table::Orders)] += 4.0 * transactions;
    load[Metric::WriteUnits(Table::PendingIndex)] += transactions;
}

impl Operations {
    pub fn for_on_sale(on_sale: &OnSale) -> Operations {
        let behaviour = &on_sale.behaviour;
        let seats_in_order = behaviour.seats_per_order;
        let draw_chunks = draw_chunks(on_sale.pre_queue());
        let draw_chunk_bytes = on_sale.pre_queue() / draw_chunks * DRAW_ENTRY_BYTES;
        let availability_bytes = availability_document_bytes(on_sale.seats);
        let layout_bytes = on_sale.seats * LAYOUT_BYTES_PER_SEAT;
        let layout_parts = (layout_bytes / LAYOUT_PART_BYTES).ceil().max(1.0);
        // An eventually consistent Query: half a unit per 4 KB read.
        let layout_read_units = (layout_bytes / 4096.0).ceil() * 0.5;
        let layout_query_seconds =
            LAYOUT_QUERY_SECONDS + layout_parts * LAYOUT_QUERY_SECONDS_PER_PART;

        // Bot Control (when on) looks at the join, queue and holds routes only (0015, 0017).
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

        // One eventually consistent GetItem of the chunk, under its own key: half a unit per
        // 4 KB. (The summary, under the event's key, is read once per `status` instance and
        // kept: `application::status::PublishedDraws`.)
        let mut draw_chunk_origin_fetch = Load::default();
        draw_chunk_origin_fetch.api_request(Route::DrawChunk, draw_chunk_bytes);
        draw_chunk_origin_fetch.invocation(Function::Status, DRAW_CHUNK_ORIGIN_SECONDS);
        let chunk_read_units = 0.5 * (draw_chunk_bytes / 4096.0).ceil();
        draw_chunk_origin_fetch[Metric::ReadUnits(Table::Events)] += chunk_read_units;
        draw_chunk_origin_fetch[Metric::KeyReadUnits(HotKey::DrawChunks)] += chunk_read_units;

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

        // The seat map is public: CloudFront answers the shoppers, the origin about once a
        // second (docs/decisions/0017). No DynamoDB read.
        let mut seat_map_read = Load::default();
        seat_map_read.viewer_request(availability_bytes);

        let mut seat_map_origin_fetch = Load::default();
        seat_map_origin_fetch.api_request(Route::SeatMap, availability_bytes);
        seat_map_origin_fetch.invocation(
            Function::Status,
            SEAT_MAP_ORIGIN_SECONDS + on_sale.seats * SEAT_MAP_ORIGIN_SECONDS_PER_SEAT,
        );
        seat_map_origin_fetch[Metric::RedisEcpu] += availability_read_ecpu(on_sale.seats);

        let mut layout_read = Load::default();
        layout_read.viewer_request(layout_bytes);

        let mut layout_origin_fetch = Load::default();
        layout_origin_fetch.api_request(Route::Layout, layout_bytes);
        layout_origin_fetch.invocation(Function::Status, layout_query_seconds);
        layout_origin_fetch[Metric::ReadUnits(Table::Events)] += layout_read_units;
        layout_origin_fetch[Metric::KeyReadUnits(HotKey::Layout)] += layout_read_units;

        let mut hold_layout_load = Load::default();
        hold_layout_load[Metric::LambdaBusySeconds(Function::Hold)] +=
            layout_query_seconds + on_sale.seats * LAYOUT_INDEX_SECONDS_PER_SEAT;
        hold_layout_load[Metric::ReadUnits(Table::Events)] += layout_read_units;
        hold_layout_load[Metric::KeyReadUnits(HotKey::Layout)] += layout_read_units;

        let mut hold_layout_check = Load::default();
        hold_layout_check[Metric::RedisEcpu] += availability_read_ecpu(on_sale.seats);

        let mut exact_hold = Load::default();
        exact_hold.viewer_request(SMALL_RESPONSE_BYTES);
        exact_hold[Metric::BotControlRequests] += 1.0;
        exact_hold.api_request(Route::Hold, SMALL_RESPONSE_BYTES);
        exact_hold.invocation(Function::Hold, HOLD_SECONDS);
        exact_hold[Metric::RedisEcpu] += script_ecpu(1.0);
        add_hold_transaction(&mut exact_hold, seats_in_order, 1.0);

        let attempts = behaviour.transactions_per_best_available;
        let mut best_available_hold = Load::default();
        best_available_hold.viewer_request(SMALL_RESPONSE_BYTES);
        best_available_hold[Metric::BotControlRequests] += 1.0;
        best_available_hold.api_request(Route::Hold, SMALL_RESPONSE_BYTES);
        best_available_hold.invocation(
            Function::Hold,
            HOLD_SECONDS + (attempts - 1.0).max(0.0) * BEST_AVAILABLE_ATTEMPT_SECONDS,
        );
        best_available_hold[Metric::RedisEcpu] +=
            script_ecpu(1.0) + attempts * availability_read_ecpu(on_sale.seats);
        add_hold_transaction(&mut best_available_hold, seats_in_order, attempts);

        let mut order_read = Load::default();
        order_read.viewer_request(SMALL_RESPONSE_BYTES);
        order_read.api_request(Route::OrderStatus, SMALL_RESPONSE_BYTES);
        order_read.invocation(Function::Hold, ORDER_READ_SECONDS);
        order_read[Metric::ReadUnits(Table::Orders)] += 1.0;

        // §4: a GetItem (1 read unit) and 3n+7 write units less the n index entries ADR 0017
        // dropped: 2n+7, the n seats twice, the order's records (4), its `pending_by_expiry`
        // entry removed (1), the outbox event (2). The provider calls through CloudFront too.
        // The customer's checkout (one PaymentIntent made at the provider, the order read and
        // its payment id stored), then the provider's webhook: the sale in one transaction (the
        // terms from the PaymentIntent's metadata: no read), the admission ended.
        let mut payment = Load::default();
        payment.viewer_request(SMALL_RESPONSE_BYTES);
        payment.api_request(Route::Checkout, SMALL_RESPONSE_BYTES);
        payment.invocation(Function::Checkout, CHECKOUT_SECONDS);
        payment[Metric::ProviderRequests] += 1.0;
        payment[Metric::ReadUnits(Table::Orders)] += 1.0;
        payment[Metric::WriteUnits(Table::Orders)] += 1.0;
        payment.viewer_request(SMALL_RESPONSE_BYTES);
        payment.api_request(Route::Webhook, SMALL_RESPONSE_BYTES);
        payment.invocation(Function::Confirm, CONFIRM_SECONDS);
        payment[Metric::RedisEcpu] += script_ecpu(2.0);
        payment[Metric::WriteUnits(Table::Seats)] += 2.0 * seats_in_order;
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

        // §4: 2+2n write units for a lapsed order, less the n index entries: 2+n.
        let mut unpaid_order_end = Load::default();
        unpaid_order_end[Metric::LambdaBusySeconds(Function::Expire)] += EXPIRE_SECONDS_PER_ORDER;
        unpaid_order_end[Metric::WriteUnits(Table::Seats)] += seats_in_order;
        unpaid_order_end[Metric::WriteUnits(Table::Orders)] += 1.0;
        unpaid_order_end[Metric::WriteUnits(Table::PendingIndex)] += 1.0;

        // `apply_changes.lua`: `HGET` the version and `EXISTS` the bits once a batch, two
        // `SETBIT`s a change. Its arguments are ~10 bytes a change: 5 KB for a full batch, under
        // its vCPU time.
        let mut availability_batch = Load::default();
        availability_batch.invocation(Function::Availability, AVAILABILITY_SECONDS_PER_BATCH);
        availability_batch[Metric::RedisEcpu] += script_ecpu(2.0);

        let mut seat_change = Load::default();
        seat_change[Metric::LambdaBusySeconds(Function::Availability)] +=
            AVAILABILITY_SECONDS_PER_RECORD;
        seat_change[Metric::RedisEcpu] += seat_change_ecpu();

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
        queue_open_second[Metric::ReadUnits(Table::PendingIndex)] += PENDING_SHARDS * 0.5 / 60.0;

        Operations {
            join,
            status_read,
            status_origin_fetch,
            draw_chunk_read,
            draw_chunk_origin_fetch,
            draw_publication,
            claim,
            seat_map_read,
            seat_map_origin_fetch,
            layout_read,
            layout_origin_fetch,
            hold_layout_load,
            hold_layout_check,
            exact_hold,
            best_available_hold,
            order_read,
            payment,
            ticket_message,
            unpaid_order_end,
            availability_batch,
            seat_change,
            queue_open_second,
            availability_bytes,
            layout_bytes,
            layout_parts,
            draw_chunks,
            draw_chunk_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::plan::aws_figures::AwsFigures;
    use crate::tools::plan::on_sale::tests::example;
    use crate::tools::plan::on_sale::Behaviour;

    fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
        (actual - expected).abs() <= tolerance
    }

    fn writes(load: &Load) -> f64 {
        Table::ALL
            .iter()
            .map(|table| load[Metric::WriteUnits(*table)])
            .sum()
    }

    #[test]
    fn script_ecpus_are_benchmarks_throughput_ratios() {
        assert!(close(join_script_ecpu(), 3.543, 0.001));
        assert!(close(standing_script_ecpu(), 3.166, 0.001));
        // The line through them: 1 command 2.79, 2 commands 2.92, 7 commands back at 3.54.
        assert!(close(script_ecpu(1.0), 2.789, 0.001));
        assert!(close(script_ecpu(7.0), join_script_ecpu(), 1e-9));
        assert!(close(admit_tick_ecpu_per_admission(), 0.7047, 0.0001));
        // Two SETBITs: 2 × 0.126.
        assert!(close(seat_change_ecpu(), 0.2515, 0.0001));
    }

    #[test]
    fn the_ecpu_per_kb_is_the_data_files() {
        let figures = AwsFigures::load().unwrap();
        assert_eq!(
            ECPU_PER_KB_TRANSFERRED,
            figures.prices.elasticache_ecpu_per_simple_command.value
        );
    }

    #[test]
    fn write_units_per_hold_and_payment_have_no_seat_map_index() {
        let exact_only = OnSale {
            behaviour: Behaviour {
                best_available_share: 0.0,
                ..Behaviour::default()
            },
            ..example()
        };
        let ops = Operations::for_on_sale(&exact_only);
        // n = 2.5 seats: a hold 2n+5 = 10, a payment 2n+7 = 12 and checkout's 1 (its payment
        // id stored), a lapse 2+n = 4.5.
        assert_eq!(writes(&ops.exact_hold), 10.0);
        assert_eq!(writes(&ops.payment), 13.0);
        assert_eq!(writes(&ops.unpaid_order_end), 4.5);
        // Checkout reads the order; the webhook's sale reads nothing (the PaymentIntent's
        // metadata carries the terms); one PaymentIntent made at the provider.
        assert_eq!(ops.payment[Metric::ReadUnits(Table::Orders)], 1.0);
        assert_eq!(ops.payment[Metric::ProviderRequests], 1.0);
        // The seat items only, twice each in the transaction: 5 of the 10.
        assert_eq!(ops.exact_hold[Metric::WriteUnits(Table::Seats)], 5.0);
    }

    #[test]
    fn a_best_available_hold_pays_for_each_attempt() {
        let ops = Operations::for_on_sale(&example());
        // 2.62 transactions of 10 units; one request at CloudFront and API Gateway.
        assert!(close(writes(&ops.best_available_hold), 26.2, 1e-9));
        assert_eq!(ops.best_available_hold[Metric::ApiRequests], 1.0);
        assert_eq!(ops.best_available_hold[Metric::CloudFrontRequests], 1.0);
        // 50 ms, and 30 ms for each of the 1.62 further attempts.
        assert!(close(
            ops.best_available_hold[Metric::LambdaBusySeconds(Function::Hold)],
            0.0986,
            1e-9
        ));
        // The token check, and 2.62 reads of the availability: 6,640 bytes at 50,000 seats.
        let read = availability_read_ecpu(50_000.0);
        assert!(close(read, 6_640.0 / 1024.0, 1e-9));
        assert!(close(
            ops.best_available_hold[Metric::RedisEcpu],
            script_ecpu(1.0) + 2.62 * read,
            1e-9
        ));
    }

    #[test]
    fn the_seat_map_documents_are_the_measured_sizes() {
        // BENCHMARKS.md §7, "The seat map at stadium size": 3,659 and 13,673 bytes.
        for (seats, measured) in [(20_000.0, 3_659.0), (80_000.0, 13_673.0)] {
            let modelled = availability_document_bytes(seats);
            assert!(
                (modelled / measured - 1.0).abs() < 0.03,
                "{seats} seats: {modelled} against {measured}"
            );
        }
        // The layouts: 262,659 and 1,094,435 bytes.
        for (seats, measured) in [(20_000.0, 262_659.0), (80_000.0, 1_094_435.0)] {
            let modelled = seats * LAYOUT_BYTES_PER_SEAT;
            assert!(
                (modelled / measured - 1.0).abs() < 0.05,
                "{seats} seats: {modelled} against {measured}"
            );
        }
        let ops = Operations::for_on_sale(&example());
        // 50,000 seats: 8,723 bytes of availability, at CloudFront only.
        assert!(close(ops.availability_bytes, 8_723.3, 0.1));
        assert_eq!(
            ops.seat_map_read[Metric::CloudFrontBytes],
            ops.availability_bytes
        );
        assert_eq!(ops.seat_map_read[Metric::ApiRequests], 0.0);
        assert_eq!(ops.seat_map_read[Metric::BotControlRequests], 0.0);
        // At the origin: `status`, one Redis read, no DynamoDB.
        assert_eq!(
            ops.seat_map_origin_fetch[Metric::RouteRequests(Route::SeatMap)],
            1.0
        );
        assert_eq!(
            ops.seat_map_origin_fetch[Metric::LambdaInvocations(Function::Status)],
            1.0
        );
        assert_eq!(
            ops.seat_map_origin_fetch[Metric::LambdaInvocations(Function::Hold)],
            0.0
        );
        for table in Table::ALL {
            assert_eq!(ops.seat_map_origin_fetch[Metric::ReadUnits(table)], 0.0);
        }
        // The layout: 685,000 bytes in 2 parts, 84 read units a Query (167 pages of 4 KB).
        assert_eq!(ops.layout_bytes, 685_000.0);
        assert_eq!(ops.layout_parts, 2.0);
        assert_eq!(
            ops.layout_origin_fetch[Metric::KeyReadUnits(HotKey::Layout)],
            84.0
        );
        assert_eq!(ops.layout_origin_fetch[Metric::ApiBilledRequests], 2.0);
        assert_eq!(
            ops.hold_layout_load[Metric::ReadUnits(Table::Events)],
            ops.layout_origin_fetch[Metric::ReadUnits(Table::Events)]
        );
    }

    #[test]
    fn availability_is_invoked_per_shard_per_second_until_batches_fill() {
        // No changes, no invocations; a few: each shard once a second at most.
        assert_eq!(availability_invocations(0.0), 0.0);
        assert!(close(availability_invocations(2.0), 2.0, 1e-9));
        assert!(close(availability_invocations(40.0), 4.0, 1e-9));
        // 4 shards of 1,000 changes a second: 2 full batches each.
        assert!(close(availability_invocations(4_000.0), 8.0, 1e-9));
    }

    #[test]
    fn the_caches_and_the_stream_are_the_codes_and_the_templates() {
        let cache_control =
            lineup::application::ports::availability::AvailabilityDocument::cache_control();
        assert!(
            cache_control.contains(&format!("max-age={AVAILABILITY_CACHE_SECONDS},")),
            "{cache_control}"
        );
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap();
        let mapping = template
            .split("\n  AvailabilityFunction:")
            .nth(1)
            .and_then(|rest| rest.split("\n  # ----").next())
            .unwrap();
        assert!(mapping.contains(&format!("BatchSize: {AVAILABILITY_BATCH_SIZE}\n")));
        assert!(mapping.contains(&format!(
            "MaximumBatchingWindowInSeconds: {AVAILABILITY_BATCHING_WINDOW_SECONDS}\n"
        )));
        assert!(mapping.contains("ParallelizationFactor: 1\n"));
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
        // A 9.4 KB chunk (3 × 0.5); the summary is kept by the `status` instance.
        assert_eq!(
            ops.draw_chunk_origin_fetch[Metric::ReadUnits(Table::Events)],
            1.5
        );
        // 256 chunks of 10 KB, and the summary's 1 KB.
        assert_eq!(
            ops.draw_publication[Metric::WriteUnits(Table::Events)],
            2_561.0
        );
    }
}
