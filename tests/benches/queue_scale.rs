//! The queue at two million: how long two million joins take, what each waiting customer costs
//! in Redis memory, poll latency at the back versus the front, one admit tick that admits 5,000,
//! Redis round trips per operation (counted from `INFO commandstats`), and the polls a waiting
//! customer makes per hour under the `Retry-After` policy.
//!
//! Run: `scripts/bench.sh` (a private Redis), or with REDIS_URL set:
//! `cargo bench -p lineup-tests --bench queue_scale -- [customers]`

use std::collections::BTreeMap;

use std::time::{Duration, Instant, SystemTime};

use futures::future::join_all;
use lineup::application::ports::queue::{AdmissionRegistry, Admitter, WaitingLine};
use lineup::domain::event_settings::{EventSettings, QueueState};
use lineup::domain::ids::CustomerId;
use lineup::domain::wait_policy;
use lineup_tests::*;

const CONCURRENCY: usize = 64;

/// A 36-character customer id, as Cognito's `sub` is.
fn uuid_customer(n: usize) -> CustomerId {
    CustomerId::parse(&format!("{:08x}-0000-4000-8000-{:012x}", n, n)).unwrap()
}

async fn info_number(
    connection: &mut redis::aio::MultiplexedConnection,
    section: &str,
    field: &str,
) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(connection)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

/// `calls` per command from INFO commandstats (`cmdstat_evalsha:calls=..`).
async fn command_calls(
    connection: &mut redis::aio::MultiplexedConnection,
) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(connection)
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(name, calls)| (name.clone(), calls - before.get(name).copied().unwrap_or(0)))
        .filter(|(name, calls)| *calls > 0 && name.as_str() != "info")
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let customers: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let queue = queue();
    let mut raw = redis().await;
    let now = SystemTime::now();
    println!(
        "queue scale: {customers} customers, {CONCURRENCY} concurrent callers, Redis at {}",
        redis_url()
    );

    // 1. Joins, and memory per waiting customer.
    let event = fresh_event();
    let settings = EventSettings {
        state: QueueState::Open,
        max_active: 5_000,
        admit_per_second: 5_000,
        ..EventSettings::opening_at(now - Duration::from_secs(1))
    };
    configure(&queue, &event, settings.clone()).await;
    let _: () = redis::cmd("MEMORY")
        .arg("PURGE")
        .query_async(&mut raw)
        .await
        .unwrap_or(());
    let memory_before = info_number(&mut raw, "memory", "used_memory").await;
    let started = Instant::now();
    let tasks = (0..CONCURRENCY).map(|task| {
        let (queue, event) = (queue.clone(), event.clone());
        tokio::spawn(async move {
            for n in (task..customers).step_by(CONCURRENCY) {
                queue
                    .join(&event, &uuid_customer(n), SystemTime::now())
                    .await
                    .unwrap();
            }
        })
    });
    for task in join_all(tasks).await {
        task.unwrap();
    }
    let took = started.elapsed();
    let memory_after = info_number(&mut raw, "memory", "used_memory").await;
    let per_customer = (memory_after - memory_before) / customers as f64;
    println!();
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| {customers} joins | {:.1} s ({:.0} joins/s) |",
        took.as_secs_f64(),
        customers as f64 / took.as_secs_f64()
    );
    println!("| Redis memory per waiting customer (36-char id) | {per_customer:.1} bytes |");
    println!(
        "| Redis used_memory after | {:.1} MiB |",
        memory_after / 1_048_576.0
    );

    // 2. Poll latency, front and back, one call at a time.
    let mut front = Vec::new();
    let mut back = Vec::new();
    for round in 0..2_000 {
        for (position, samples) in [
            (round % 100, &mut front),
            (customers - 1 - round % 100, &mut back),
        ] {
            let customer = uuid_customer(position);
            let started = Instant::now();
            queue
                .standing(&event, &customer, SystemTime::now())
                .await
                .unwrap();
            samples.push(started.elapsed());
        }
    }
    front.sort();
    back.sort();
    for (name, samples) in [
        ("front (positions 0-99)", &front),
        ("back (last 100)", &back),
    ] {
        println!(
            "| poll latency at the {name}: p50 / p99 | {:.0} µs / {:.0} µs |",
            percentile(samples, 0.5).as_micros(),
            percentile(samples, 0.99).as_micros()
        );
    }

    // 3. Redis round trips per operation, counted (after each script's first use: a fresh Redis
    // answers the first EVALSHA with NOSCRIPT, costing one SCRIPT LOAD and a retry, once).
    queue
        .live_admission(
            &event,
            &uuid_customer(0),
            SystemTime::now(),
            SystemTime::now(),
        )
        .await
        .unwrap();
    let warm_up = fresh_event();
    configure(&queue, &warm_up, settings.clone()).await;
    queue.admit_tick(&warm_up, SystemTime::now()).await.unwrap();
    let before = command_calls(&mut raw).await;
    queue
        .join(&event, &uuid_customer(customers + 1), SystemTime::now())
        .await
        .unwrap();
    let join_calls = delta(&before, &command_calls(&mut raw).await);
    let before = command_calls(&mut raw).await;
    queue
        .standing(&event, &uuid_customer(customers / 2), SystemTime::now())
        .await
        .unwrap();
    let poll_calls = delta(&before, &command_calls(&mut raw).await);
    let before = command_calls(&mut raw).await;
    queue
        .live_admission(
            &event,
            &uuid_customer(0),
            SystemTime::now(),
            SystemTime::now(),
        )
        .await
        .unwrap();
    let hold_calls = delta(&before, &command_calls(&mut raw).await);

    // 4. One admit tick admitting 5,000.
    let before = command_calls(&mut raw).await;
    let started = Instant::now();
    let report = queue.admit_tick(&event, SystemTime::now()).await.unwrap();
    let tick = started.elapsed();
    let tick_calls = delta(&before, &command_calls(&mut raw).await);
    assert_eq!(report.admitted, 5_000);
    println!(
        "| one admit tick admitting {} | {:.1} ms |",
        report.admitted,
        tick.as_secs_f64() * 1e3
    );
    let round_trips = |calls: &BTreeMap<String, u64>| {
        calls.get("evalsha").copied().unwrap_or(0) + calls.get("eval").copied().unwrap_or(0)
    };
    for (name, calls) in [
        ("join", &join_calls),
        ("poll", &poll_calls),
        ("hold's token check", &hold_calls),
        ("admit tick (5,000)", &tick_calls),
    ] {
        let inside: u64 = calls
            .iter()
            .filter(|(c, _)| !c.starts_with("eval"))
            .map(|(_, n)| n)
            .sum();
        println!("| Redis round trips per {name} (commands run inside the script) | {} ({inside}: {calls:?}) |", round_trips(calls));
    }

    // 5. What a waiting customer asks for over the whole wait, at 30 admissions/s: status reads
    // (through the CDN) at a tenth of the ETA, 5 s to 5 min apart; origin requests: the join and
    // the claim.
    let rate = 30.0;
    for distance in [1_000u64, 100_000, 1_000_000] {
        let (mut at, mut reads, mut left) = (0.0f64, 0u64, distance as f64);
        while left > 0.0 {
            let wait =
                wait_policy::next_status_read(wait_policy::eta_for_distance(left as u64, rate));
            reads += 1;
            at += wait.as_secs_f64();
            left -= wait.as_secs_f64() * rate;
        }
        println!(
            "| {distance} numbers back at 30/s: wait {:.0} min, status reads (CDN) {reads}, origin requests 2 |",
            at / 60.0
        );
    }
}
