//! The seat map at stadium size: bytes on the wire for the layout and the availability of 20,000
//! and 80,000 seats (raw and gzip, as CloudFront compresses them), beside the single JSON list of
//! every seat it replaced; and DynamoDB requests for seat maps with 100 and 5,000 shoppers each
//! reading the map every 2 s (as the page does) straight at the origin (no CDN in front: the
//! worst case), counted by an SDK interceptor.
//!
//! Run: `scripts/bench.sh`, or with REDIS_URL and AWS_ENDPOINT_URL set:
//! `cargo bench -p lineup-tests --bench seat_map`

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use lineup::application::ports::availability::{Availability, AvailabilityDocument};
use lineup::application::status;
use lineup::domain::ids::EventId;
use lineup::domain::layout::SeatLayout;
use lineup_cli::venue::{layout, parse_sections, SEATS_PER_ROW};
use lineup_tests::on_sale::OnSale;
use lineup_tests::request_counter::counting_dynamodb;
use lineup_tests::*;

use futures::StreamExt;

const SECTIONS: &str = "Floor=150000,Lower=99000,Upper=55000";

fn venue(seats: usize) -> SeatLayout {
    let sections = parse_sections(SECTIONS).unwrap();
    SeatLayout::from_seats(&layout(seats, &sections, "KRW", SEATS_PER_ROW).unwrap()).unwrap()
}

/// gzip's size of `bytes` (Debian's gzip, default level: about what CloudFront's gzip gives).
fn gzipped(bytes: &[u8]) -> usize {
    let mut gzip = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip");
    gzip.stdin.take().unwrap().write_all(bytes).unwrap();
    gzip.wait_with_output().unwrap().stdout.len()
}

/// The replaced answer: every seat with its section, price, currency and status.
fn old_seat_map(layout: &SeatLayout) -> String {
    let seats: Vec<serde_json::Value> = layout
        .seats()
        .map(|(_, seat)| {
            serde_json::json!({
                "seatId": seat.seat_id.as_str(), "section": seat.section, "price": seat.price,
                "currency": seat.currency, "status": "AVAILABLE",
            })
        })
        .collect();
    serde_json::json!({ "seats": seats }).to_string()
}

fn bytes_on_the_wire() {
    println!("| seats | document | raw bytes | gzip bytes |");
    println!("|---:|---|---:|---:|");
    let event = EventId::parse("stadium").unwrap();
    for seats in [20_000, 80_000] {
        let layout = venue(seats);
        // Two seats in five taken, at random (a sale well under way; random bits are what gzip
        // compresses least).
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let statuses: Vec<bool> = (0..seats)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % 5 >= 2
            })
            .collect();
        let statuses = statuses.into_iter();
        let availability = Availability {
            summary: layout.summary(),
            available: lineup::application::ports::availability::bitset(statuses),
        };
        let document =
            serde_json::to_string(&AvailabilityDocument::new(&event, &availability)).unwrap();
        let layout_document = layout.to_document(&event);
        let old = old_seat_map(&layout);
        for (name, text) in [
            ("availability (`/seats`)", &document),
            ("layout (`/layout/{version}`, once)", &layout_document),
            ("before: the whole seat map, every read", &old),
        ] {
            println!(
                "| {seats} | {name} | {} | {} |",
                text.len(),
                gzipped(text.as_bytes())
            );
        }
    }
}

async fn reads_for_seat_maps(shoppers: usize, seats: usize) {
    const SECONDS: usize = 20;
    const EVERY_SECONDS: usize = 2;
    let sale = OnSale::with_layout_on(Some(venue(seats)), queue()).await;
    let (client, counter) = counting_dynamodb();
    let records = Arc::new(
        lineup::adapters::dynamo::event_records::DynamoEventRecords::new(
            client,
            sale.records.table(),
        ),
    );
    // One `status` instance, as every shopper's read reaching the origin would find it.
    let queue = queue();
    let api = lineup::wiring::backends::Queue::new(queue, records).status_api();
    let version = sale.layout.as_ref().unwrap().version().to_owned();
    let read = |route_key: &'static str, version: Option<&str>| {
        let mut event = route(
            &sample("seats.json"),
            &[("eventId", sale.event.as_str())],
            None,
        );
        event["routeKey"] = route_key.into();
        event["requestContext"]["routeKey"] = route_key.into();
        if let Some(version) = version {
            event["pathParameters"]["version"] = version.into();
        }
        let api = api.clone();
        async move { status::handle(&api, request(&event)).await.status() }
    };
    // The shoppers' reads, 64 in flight at once (one process standing in for many instances).
    let all = |route_key: &'static str, version: Option<&'static str>| {
        let read = &read;
        async move {
            let statuses: Vec<_> =
                futures::stream::iter((0..shoppers).map(|_| read(route_key, version)))
                    .buffer_unordered(64)
                    .collect()
                    .await;
            statuses
                .iter()
                .filter(|status| status.as_u16() != 200)
                .count()
        }
    };
    let version: &'static str = Box::leak(version.into_boxed_str());
    let started = Instant::now();
    // Each shopper fetches the layout once, then the availability every 2 s.
    let mut not_ok = all("GET /events/{eventId}/layout/{version}", Some(version)).await;
    let mut availability_reads = 0;
    for _ in 0..SECONDS / EVERY_SECONDS {
        not_ok += all("GET /events/{eventId}/seats", None).await;
        availability_reads += shoppers;
    }
    assert_eq!(not_ok, 0, "every read answered 200");
    let counted = counter.take();
    let total: u64 = counted.values().sum();
    println!(
        "| {shoppers} | {seats} | {} layout + {availability_reads} availability reads in {:.1} s | {total} ({counted:?}) | {:.2} |",
        shoppers,
        started.elapsed().as_secs_f64(),
        total as f64 / SECONDS as f64,
    );
}

#[tokio::main]
async fn main() {
    println!("bytes on the wire");
    bytes_on_the_wire();
    println!();
    println!(
        "DynamoDB requests for seat maps: each shopper reads the layout once and the availability every 2 s for 20 s, every read at the origin (against {})",
        lineup_tests::aws::endpoint_url()
    );
    println!("| shoppers | seats | reads | DynamoDB requests | per second |");
    println!("|---:|---:|---|---:|---:|");
    for shoppers in [100, 5_000] {
        reads_for_seat_maps(shoppers, 20_000).await;
    }
}
