//! Seat contention against the serialised moto server: 1,000 customers at once on 100 seats
//! (1–4 seats each), each picking exact seats, then every winner pays, then a sweep of lapsed
//! holds; and the same crowd again on fresh seats asking for "best available" in a section
//! instead. Prints holds per second, the conflict rate, and the DynamoDB requests per hold,
//! confirm and expired order, counted by an SDK interceptor on every request sent.
//!
//! moto's absolute numbers say nothing about AWS: it runs every DynamoDB request one at a time
//! behind one lock, in Python, with transaction costs growing with table size; DynamoDB runs
//! transactions on different items in parallel across partitions. The counts, conflict rate and
//! invariants carry over; the throughput does not.
//!
//! Run: `scripts/bench.sh`, or with REDIS_URL and AWS_ENDPOINT_URL set:
//! `cargo bench -p lineup-tests --bench contention -- [customers]`

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use http::StatusCode;
use lineup::adapters::dynamo::DynamoLedger;
use lineup::application::ports::ledger::{HoldSweeper, HOLD_DURATION};
use lineup::domain::clock::Clock;
use lineup::domain::ids::SeatId;
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::request_counter::{counting_dynamodb, RequestCounter};
use lineup_tests::*;

/// The on-sale's ledger, rebuilt on a client that counts its requests.
fn counting(sale: &mut OnSale) -> RequestCounter {
    let (client, counter) = counting_dynamodb();
    let ledger = Arc::new(DynamoLedger::new(client, sale.tables.clone()));
    sale.ledger = ledger.clone();
    sale.hold_api.ledger = ledger.clone();
    sale.confirm_api.ledger = ledger;
    counter
}

fn wish_list(n: usize, seats: usize) -> Vec<SeatId> {
    let mut state = (n as u64 + 7).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        state ^= state >> 31;
        state = state.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        state ^ (state >> 29)
    };
    let count = 1 + (next() % 4) as usize;
    let mut wanted = BTreeSet::new();
    while wanted.len() < count {
        wanted.insert(1 + (next() % seats as u64) as usize);
    }
    wanted.into_iter().map(seat).collect()
}

fn per(counts: &BTreeMap<String, u64>, operations: u64) -> String {
    let total: u64 = counts.values().sum();
    let detail: Vec<String> = counts
        .iter()
        .map(|(op, n)| format!("{op} {:.2}", *n as f64 / operations as f64))
        .collect();
    format!(
        "{:.2} ({})",
        total as f64 / operations as f64,
        detail.join(", ")
    )
}

#[tokio::main]
async fn main() {
    let customers: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000);
    const SEATS: usize = 100;
    println!(
        "contention: {customers} customers on {SEATS} seats, against {}",
        lineup_tests::aws::endpoint_url()
    );
    let mut sale = OnSale::with_seats(SEATS).await;
    let counter = counting(&mut sale);
    let people: Vec<_> = (0..customers).map(customer).collect();
    let tokens = sale.admit(&people).await;
    // Warm the layout catalogue, as a warm Lambda instance has it.
    warm_catalogue(&sale).await;
    counter.take();

    let started = Instant::now();
    let holds = join_all((0..customers).map(|n| {
        let sale = &sale;
        let (who, token) = (&people[n], &tokens[n]);
        async move { sale.hold(who, token, &wish_list(n, SEATS)).await }
    }))
    .await;
    let took = started.elapsed();
    let hold_requests = counter.take();
    let won: Vec<_> = holds
        .iter()
        .filter(|r| r.status() == StatusCode::CREATED)
        .map(body)
        .collect();
    let conflicts = holds
        .iter()
        .filter(|r| r.status() == StatusCode::CONFLICT)
        .count();
    for other in holds
        .iter()
        .filter(|r| ![StatusCode::CREATED, StatusCode::CONFLICT].contains(&r.status()))
    {
        println!("a hold answered {}: {}", other.status(), body(other));
    }

    let started = Instant::now();
    let paid = sale.pay_all(&won).await;
    let pay_took = started.elapsed();
    assert!(paid.iter().all(|r| r.status() == StatusCode::OK));
    let confirm_requests = counter.take();

    // Lapsed holds, swept.
    let mut lapsing = OnSale::with_seats(50).await;
    let sweep_counter = counting(&mut lapsing);
    let lapsing_people: Vec<_> = (0..50).map(customer).collect();
    let lapsing_tokens = lapsing.admit(&lapsing_people).await;
    for n in 0..50 {
        let response = lapsing
            .hold(&lapsing_people[n], &lapsing_tokens[n], &[seat(n + 1)])
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    lapsing
        .clock
        .advance(HOLD_DURATION + Duration::from_secs(1));
    sweep_counter.take();
    let report = lapsing
        .ledger
        .expire_lapsed(lapsing.clock.now())
        .await
        .unwrap();
    let sweep_requests = sweep_counter.take();
    assert_eq!(report.orders_expired, 50);

    println!();
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| holds attempted | {customers} in {:.1} s: {:.0} holds/s |",
        took.as_secs_f64(),
        customers as f64 / took.as_secs_f64()
    );
    println!(
        "| won / lost (409) | {} / {conflicts}: conflict rate {:.1} % |",
        won.len(),
        100.0 * conflicts as f64 / customers as f64
    );
    println!(
        "| confirms | {} in {:.1} s: {:.0}/s |",
        won.len(),
        pay_took.as_secs_f64(),
        won.len() as f64 / pay_took.as_secs_f64()
    );
    println!(
        "| DynamoDB requests per hold attempt | {} |",
        per(&hold_requests, customers as u64)
    );
    println!(
        "| DynamoDB requests per confirm | {} |",
        per(&confirm_requests, won.len() as u64)
    );
    println!(
        "| DynamoDB requests per expired order (1 seat, 50 in one sweep) | {} |",
        per(&sweep_requests, 50)
    );

    // The same crowd, the same party sizes, on fresh seats: best available in a section.
    let mut sale = OnSale::with_seats(SEATS).await;
    let counter = counting(&mut sale);
    let tokens = sale.admit(&people).await;
    warm_catalogue(&sale).await;
    counter.take();
    let started = Instant::now();
    let holds = join_all((0..customers).map(|n| {
        let sale = &sale;
        let (who, token) = (&people[n], &tokens[n]);
        let section = if n % 2 == 0 { "Floor" } else { "Balcony" };
        let quantity = wish_list(n, SEATS).len();
        async move { sale.hold_best(who, token, section, quantity).await }
    }))
    .await;
    let took = started.elapsed();
    let best_requests = counter.take();
    let won = holds
        .iter()
        .filter(|r| r.status() == StatusCode::CREATED)
        .count();
    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    for refused in holds.iter().filter(|r| r.status() != StatusCode::CREATED) {
        // 409s by code; a 503 (moto's queue past the client's timeout) says to retry later.
        *refusals.entry(error_code(refused)).or_default() += 1;
    }
    let seats_held = sale
        .seats()
        .await
        .values()
        .filter(|item| item["status"] == "HELD")
        .count();
    println!();
    println!("best available, the same crowd on fresh seats (each request tries up to 4 holds):");
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| requests | {customers} in {:.1} s: {:.0} requests/s |",
        took.as_secs_f64(),
        customers as f64 / took.as_secs_f64()
    );
    println!(
        "| won / refused | {won} / {}: refusal rate {:.1} % ({}) |",
        customers - won,
        100.0 * (customers - won) as f64 / customers as f64,
        refusals
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let transactions = best_requests
        .get("TransactWriteItems")
        .copied()
        .unwrap_or(0);
    println!(
        "| hold transactions tried / won: conflict rate per try | {transactions} / {won}: {:.1} % |",
        100.0 * transactions.saturating_sub(won as u64) as f64 / transactions.max(1) as f64
    );
    println!("| seats held at the end | {seats_held} of {SEATS} |");
    println!(
        "| DynamoDB requests per best-available request | {} |",
        per(&best_requests, customers as u64)
    );
}

/// Loads the current layout into the hold function's catalogue, as a warm instance has it.
async fn warm_catalogue(sale: &OnSale) {
    let version = sale.layout.as_ref().expect("seats").version().to_owned();
    sale.hold_api
        .catalogue
        .layout(sale.records.as_ref(), &sale.event, &version)
        .await
        .expect("the layout");
}
