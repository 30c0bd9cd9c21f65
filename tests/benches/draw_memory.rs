//! The pre-queue draw's memory and time at 1, 5 and 20 million entrants: the admitter's own
//! draw (`lineup::application::admit::pre_queue_draw::draw`, bucket files on the local disk),
//! beside the in-memory draw it replaced (every entrant held at once), each size in a process
//! of its own so its peak resident memory (`VmHWM`) is its own. The pre-queue is generated page
//! by page (36-character ids, as Cognito's `sub`), the chunks and the numbers go to sinks that
//! keep only a fingerprint: the figures are the draw's, not a store's. At 1 million the bounded
//! draw's summary and chunks are compared, byte for byte, with the in-memory draw's.
//!
//! Needs no Redis and no AWS. Run:
//! `cargo bench -p lineup-tests --bench draw_memory -- 1000000 5000000 20000000`
//! (`--baseline` also runs the in-memory draw for each size up to 5 million; it needs about
//! 260 bytes an entrant). Bucket files go to `target/draw-bench`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use lineup::application::admit::pre_queue_draw::{self, DrawLimits, DrawOutcome, DrawPorts};
use lineup::application::admit::{EntrantPages, PreQueueSize};
use lineup::application::error::LineupError;
use lineup::application::ports::event_records::{DrawPublication, DrawPublished};
use lineup::application::ports::queue::PreQueueDraw;
use lineup::domain::draw::{self, DrawChunk, DrawSeed, DrawSummary};
use lineup::domain::ids::{CustomerId, EventId};

/// The system allocator, counting the bytes in use and the most there were.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = IN_USE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                IN_USE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: f64 = 1024.0 * 1024.0;
/// The page size the Redis adapter asks `SSCAN` for.
const PAGE: u64 = 5_000;

fn seed() -> DrawSeed {
    DrawSeed::parse(&"3c".repeat(32)).expect("a seed")
}

/// Customer `i`: 36 characters shaped like a UUID, from a mix of `i` (the order of a set).
fn customer(i: u64) -> CustomerId {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let (a, b) = (mix(i), mix(i ^ 0xDEAD_BEEF));
    let id = format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    );
    CustomerId::parse(&id).expect("a valid id")
}

/// FNV-1a, 64 bits: a fingerprint of what was published, to compare two draws.
#[derive(Clone, Copy)]
struct Fingerprint(u64);

impl Fingerprint {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The closed pre-queue of `entrants`, generated a page at a time; the queue the numbers go to
/// keeps their count and sum.
struct GeneratedPreQueue {
    entrants: u64,
    numbers_written: AtomicU64,
    numbers_sum: AtomicU64,
}

#[async_trait]
impl EntrantPages for GeneratedPreQueue {
    async fn entrant_page(
        &self,
        _: &EventId,
        cursor: u64,
    ) -> Result<(u64, Vec<CustomerId>), LineupError> {
        let end = (cursor + PAGE).min(self.entrants);
        let next = if end == self.entrants { 0 } else { end };
        Ok((next, (cursor..end).map(customer).collect()))
    }
}

#[async_trait]
impl PreQueueSize for GeneratedPreQueue {
    async fn pre_queue_size(&self, _: &EventId) -> Result<u64, LineupError> {
        Ok(self.entrants)
    }
}

#[async_trait]
impl PreQueueDraw for GeneratedPreQueue {
    async fn lock_draw(&self, _: &EventId, _: Duration) -> Result<bool, LineupError> {
        Ok(true)
    }
    async fn draw_seed(&self, _: &EventId) -> Result<Option<DrawSeed>, LineupError> {
        Ok(Some(seed()))
    }
    async fn write_numbers(
        &self,
        _: &EventId,
        numbers: &[(CustomerId, u64)],
    ) -> Result<(), LineupError> {
        self.numbers_written
            .fetch_add(numbers.len() as u64, Ordering::Relaxed);
        let sum: u64 = numbers.iter().map(|(_, number)| number).sum();
        self.numbers_sum.fetch_add(sum, Ordering::Relaxed);
        Ok(())
    }
    async fn mark_drawn(
        &self,
        _: &EventId,
        _: std::time::SystemTime,
        _: std::time::SystemTime,
    ) -> Result<(), LineupError> {
        Ok(())
    }
}

/// Where the draw is published: a fingerprint of the chunks in the order they come, and the
/// summary.
struct Fingerprinted {
    chunks: Mutex<(Fingerprint, u64)>,
    summary: Mutex<Option<DrawSummary>>,
}

#[async_trait]
impl DrawPublication for Fingerprinted {
    async fn publish_chunks(&self, _: &EventId, chunks: &[DrawChunk]) -> Result<(), LineupError> {
        let mut kept = self.chunks.lock().expect("not poisoned");
        for chunk in chunks.iter().filter(|chunk| !chunk.entries.is_empty()) {
            let json = serde_json::to_vec(chunk).expect("a chunk serialises");
            kept.0.add(&json);
            kept.1 += 1;
        }
        Ok(())
    }
    async fn publish_summary(
        &self,
        _: &EventId,
        summary: &DrawSummary,
    ) -> Result<DrawPublished, LineupError> {
        *self.summary.lock().expect("not poisoned") = Some(summary.clone());
        Ok(DrawPublished::Published)
    }
    async fn draw_summary(&self, _: &EventId) -> Result<Option<DrawSummary>, LineupError> {
        Ok(self.summary.lock().expect("not poisoned").clone())
    }
    async fn draw_chunk(&self, _: &EventId, _: &str) -> Result<Option<DrawChunk>, LineupError> {
        Ok(None)
    }
}

/// The peak resident memory of this process so far, from `/proc/self/status`.
fn vm_hwm_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn published_at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The in-memory draw the admitter ran before: every customer, then every entrant hash, then
/// the draw and its chunks, all held at once. Returns the summary and the chunks' fingerprint.
fn in_memory_draw(event: &EventId, entrants: u64) -> (DrawSummary, Fingerprint, u64) {
    let seed = seed();
    let customers: Vec<CustomerId> = (0..entrants).map(customer).collect();
    let by_entrant: std::collections::HashMap<String, CustomerId> = customers
        .into_iter()
        .map(|customer| (seed.entrant(&customer), customer))
        .collect();
    let drawn = draw::numbers(&seed, by_entrant.keys().cloned());
    let (summary, chunks) = draw::publish(&drawn, event, &seed, published_at());
    let numbers: Vec<(CustomerId, u64)> = drawn
        .numbers
        .iter()
        .filter_map(|(entrant, number)| by_entrant.get(entrant).map(|c| (c.clone(), *number)))
        .collect();
    let mut fingerprint = Fingerprint::new();
    let mut stored = 0;
    for chunk in chunks.iter().filter(|chunk| !chunk.entries.is_empty()) {
        fingerprint.add(&serde_json::to_vec(chunk).expect("a chunk serialises"));
        stored += 1;
    }
    assert_eq!(numbers.len() as u64, entrants);
    (summary, fingerprint, stored)
}

/// One size, in this process: the bounded draw (`bounded`) or the in-memory one.
async fn one_size(entrants: u64, bounded: bool) {
    let event = EventId::parse("draw-bench").expect("an event id");
    if !bounded {
        let before = IN_USE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let started = Instant::now();
        let (summary, _, chunks) = in_memory_draw(&event, entrants);
        let elapsed = started.elapsed();
        println!(
            "| {entrants} | in memory (before) | {:.0} | {:.0} | 0 | {:.1} | {} chunks, digest {}… |",
            (PEAK.load(Ordering::Relaxed) - before) as f64 / MIB,
            vm_hwm_mib(),
            elapsed.as_secs_f64(),
            chunks,
            &summary.entrant_digest[..12],
        );
        return;
    }
    let queue = GeneratedPreQueue {
        entrants,
        numbers_written: AtomicU64::new(0),
        numbers_sum: AtomicU64::new(0),
    };
    let publication = Fingerprinted {
        chunks: Mutex::new((Fingerprint::new(), 0)),
        summary: Mutex::new(None),
    };
    let spill_dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/draw-bench");
    std::fs::create_dir_all(&spill_dir).expect("the spill directory");
    let limits = DrawLimits {
        disk_bytes: 8 * 1024 * 1024 * 1024,
        spill_dir,
    };
    let ports = DrawPorts {
        queue: &queue,
        publication: &publication,
    };
    let before = IN_USE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let started = Instant::now();
    let opening = pre_queue_draw::Opening {
        opens_at: published_at(),
        claim_window: Duration::from_secs(60),
        edge_budget: lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
    };
    let outcome = pre_queue_draw::draw(&ports, &event, entrants, &limits, &opening, published_at())
        .await
        .expect("the draw");
    let elapsed = started.elapsed();
    let heap_peak = (PEAK.load(Ordering::Relaxed) - before) as f64 / MIB;
    let hwm = vm_hwm_mib();
    let summary = publication
        .summary
        .lock()
        .expect("not poisoned")
        .clone()
        .expect("published");
    let (fingerprint, chunks) = *publication.chunks.lock().expect("not poisoned");
    assert_eq!(summary.entrants, entrants);
    assert_eq!(queue.numbers_written.load(Ordering::Relaxed), entrants);
    assert_eq!(
        queue.numbers_sum.load(Ordering::Relaxed),
        entrants * (entrants + 1) / 2,
        "numbers 1..=n, each once"
    );
    let DrawOutcome::Drawn {
        disk_peak_bytes, ..
    } = outcome
    else {
        panic!("not drawn: {outcome:?}");
    };
    let disk = disk_peak_bytes as f64 / MIB;
    let identical = if entrants <= 1_000_000 {
        let (reference, reference_chunks, stored) = in_memory_draw(&event, entrants);
        let same = serde_json::to_string(&reference).expect("json")
            == serde_json::to_string(&summary).expect("json")
            && reference_chunks.0 == fingerprint.0
            && stored == chunks;
        if same {
            "identical to the in-memory draw"
        } else {
            "DIFFERENT from the in-memory draw"
        }
    } else {
        "not compared"
    };
    println!(
        "| {entrants} | bounded (bucket files) | {heap_peak:.0} | {hwm:.0} | {disk:.0} | {:.1} | {chunks} chunks, digest {}…, {identical} |",
        elapsed.as_secs_f64(),
        &summary.entrant_digest[..12],
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Ok(one) = std::env::var("DRAW_MEMORY_ONE") {
        let (entrants, kind) = one.split_once(':').expect("entrants:kind");
        one_size(entrants.parse().expect("a count"), kind == "bounded").await;
        return;
    }
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let baseline = arguments.iter().any(|argument| argument == "--baseline");
    let mut sizes: Vec<u64> = arguments
        .iter()
        .filter_map(|argument| argument.parse().ok())
        .collect();
    if sizes.is_empty() {
        sizes = vec![1_000_000, 5_000_000, 20_000_000];
    }
    println!(
        "the admitter's limits by default: {} MiB of disk, {} entrants expected at most (36-character ids), the alarm at {}%",
        DrawLimits::default().disk_bytes / (1024 * 1024),
        DrawLimits::default().max_entrants(),
        pre_queue_draw::ALARM_AT_PERCENT,
    );
    println!("| entrants | draw | heap peak (MiB) | VmHWM (MiB) | disk at peak (MiB) | time (s) | published |");
    println!("|---:|---|---:|---:|---:|---:|---|");
    let me = std::env::current_exe().expect("this benchmark's path");
    for entrants in sizes {
        let mut kinds = vec!["bounded"];
        if baseline && entrants <= 5_000_000 {
            kinds.push("in-memory");
        }
        for kind in kinds {
            let status = Command::new(&me)
                .env("DRAW_MEMORY_ONE", format!("{entrants}:{kind}"))
                .status()
                .expect("run one size");
            assert!(status.success(), "{entrants} {kind}: {status}");
        }
    }
}
