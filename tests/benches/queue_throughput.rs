//! Join and poll throughput through the handlers, 64 concurrent callers, against the local Redis
//! at `REDIS_URL`, each beside its baseline measured in the same run (the machine is shared and
//! noisy, so only ratios mean much):
//!
//! - `redis-benchmark -t zadd` (64 connections): what Redis itself does for the cheapest write;
//! - raw `ZADD` / `ZRANK` from Rust, 64 tasks on the adapter's kind of connection (one
//!   multiplexed connection, as a Lambda instance has);
//! - the queue port (one Lua script per call), then the full handler (parse the API Gateway
//!   event, validate, script, sign the queue id, serialise the response).
//!
//! Run: `scripts/bench.sh` (starts a private Redis), or with REDIS_URL set:
//! `cargo bench -p lineup-tests --bench queue_throughput -- [joins]`

use std::process::Command;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use futures::future::join_all;
use http::StatusCode;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::queue::WaitingLine;
use lineup::application::{join, poll};
use lineup::domain::clock::SystemClock;
use lineup::domain::ids::EventId;
use lineup_tests::*;

const CONCURRENCY: usize = 64;

/// Runs `total` operations spread over `CONCURRENCY` tasks; returns operations per second.
async fn throughput<F, Fut>(total: usize, operation: F) -> f64
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let operation = Arc::new(operation);
    let started = Instant::now();
    let tasks = (0..CONCURRENCY).map(|task| {
        let operation = operation.clone();
        tokio::spawn(async move {
            for n in (task..total).step_by(CONCURRENCY) {
                operation(n).await;
            }
        })
    });
    for task in join_all(tasks).await {
        task.expect("benchmark task");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn redis_benchmark_zadd(port: &str, total: usize) -> f64 {
    let output = Command::new("redis-benchmark")
        .args([
            "-p",
            port,
            "-c",
            &CONCURRENCY.to_string(),
            "-n",
            &total.to_string(),
            "-t",
            "zadd",
            "--csv",
        ])
        .output()
        .expect("redis-benchmark is installed (package redis-tools)");
    let text = String::from_utf8_lossy(&output.stdout);
    // "test","rps",...  then  "ZADD","123456.79",...
    text.lines()
        .find(|line| line.starts_with("\"ZADD\""))
        .and_then(|line| line.split(',').nth(1))
        .and_then(|rps| rps.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("unexpected redis-benchmark output: {text}"))
}

#[tokio::main]
async fn main() {
    let total: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let url = redis_url();
    let port = url
        .rsplit(':')
        .next()
        .unwrap_or("6379")
        .trim_end_matches('/')
        .to_owned();
    let queue: Arc<RedisQueue> = queue();
    let api = Arc::new(api(queue.clone(), Arc::new(SystemClock)).await);
    let raw = redis().await;

    println!("queue throughput: {total} operations per figure, {CONCURRENCY} concurrent callers, Redis at {url}");
    let zadd_benchmark = redis_benchmark_zadd(&port, total);

    let raw_event = fresh_event();
    let raw_zadd = {
        let (raw, key) = (raw.clone(), format!("{{ev:{raw_event}}}:raw"));
        throughput(total, move |n| {
            let (mut raw, key) = (raw.clone(), key.clone());
            async move {
                let _: i64 = redis::cmd("ZADD")
                    .arg(&key)
                    .arg("NX")
                    .arg(n)
                    .arg(customer(n).as_str())
                    .query_async(&mut raw)
                    .await
                    .unwrap();
            }
        })
        .await
    };
    let raw_zrank = {
        let (raw, key) = (raw.clone(), format!("{{ev:{raw_event}}}:raw"));
        throughput(total, move |n| {
            let (mut raw, key) = (raw.clone(), key.clone());
            async move {
                let _: Option<i64> = redis::cmd("ZRANK")
                    .arg(&key)
                    .arg(customer(n).as_str())
                    .query_async(&mut raw)
                    .await
                    .unwrap();
            }
        })
        .await
    };

    let port_event = open_event(&queue, SystemTime::now()).await;
    let port_join = {
        let (queue, event) = (queue.clone(), port_event.clone());
        throughput(total, move |n| {
            let (queue, event) = (queue.clone(), event.clone());
            async move {
                queue
                    .join(&event, &customer(n), SystemTime::now())
                    .await
                    .unwrap();
            }
        })
        .await
    };
    let port_poll = {
        let (queue, event) = (queue.clone(), port_event.clone());
        throughput(total, move |n| {
            let (queue, event) = (queue.clone(), event.clone());
            async move {
                queue
                    .standing(&event, &customer(n), SystemTime::now())
                    .await
                    .unwrap();
            }
        })
        .await
    };

    let handler_event: EventId = open_event(&queue, SystemTime::now()).await;
    let handler_join = {
        let (api, event) = (api.clone(), handler_event.clone());
        throughput(total, move |n| {
            let (api, event) = (api.clone(), event.clone());
            async move {
                let response = join::handle(&api, join_request(&event, &customer(n))).await;
                assert_eq!(response.status(), StatusCode::CREATED);
            }
        })
        .await
    };
    let handler_poll = {
        let (api, event) = (api.clone(), handler_event.clone());
        throughput(total, move |n| {
            let (api, event) = (api.clone(), event.clone());
            async move {
                let id = ticket_at(&event, &customer(n), None, SystemTime::now());
                let response = poll::handle(&api, poll_request(&event, &customer(n), &id)).await;
                assert_eq!(response.status(), StatusCode::OK);
            }
        })
        .await
    };

    println!();
    println!("| operation | ops/s | ratio to redis-benchmark ZADD | ratio to raw Rust baseline |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, ops: f64, baseline: Option<(f64, &str)>| {
        let to_rust = baseline
            .map(|(b, what)| format!("{:.2} (of {what})", ops / b))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {name} | {ops:.0} | {:.2} | {to_rust} |",
            ops / zadd_benchmark
        );
    };
    row(
        "redis-benchmark -t zadd (64 connections)",
        zadd_benchmark,
        None,
    );
    row(
        "raw ZADD NX, Rust, 1 multiplexed connection",
        raw_zadd,
        None,
    );
    row("raw ZRANK, Rust, 1 multiplexed connection", raw_zrank, None);
    row(
        "join, queue port (Lua script)",
        port_join,
        Some((raw_zadd, "raw ZADD")),
    );
    row(
        "poll, queue port (Lua script)",
        port_poll,
        Some((raw_zrank, "raw ZRANK")),
    );
    row(
        "join, handler (event JSON in, response out)",
        handler_join,
        Some((raw_zadd, "raw ZADD")),
    );
    row(
        "poll, handler (event JSON in, response out)",
        handler_poll,
        Some((raw_zrank, "raw ZRANK")),
    );
}
