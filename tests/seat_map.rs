//! The seat map at stadium scale: the layout apart from availability, the availability kept from
//! the seats table's stream (and rebuilt after a cache loss), and best-available holds, against
//! real Redis and the serialised moto server. Invariants are checked over the stored data.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::future::join_all;
use http::StatusCode;
use lineup::adapters::redis::keys::EventKeys;
use lineup::application::ports::availability::{bit, AvailabilityBoard};
use lineup::application::ports::ledger::{HoldSweeper, HOLD_DURATION};
use lineup::application::rebuild::{AvailabilityRebuild, RebuildOutcome, SeatStates};
use lineup::domain::clock::Clock;
use lineup::domain::ids::{CustomerId, SeatId};
use lineup::domain::layout::SeatLayout;
use lineup::domain::seat::NewSeat;
use lineup_tests::on_sale::OnSale;
use lineup_tests::*;
use serde_json::{json, Value};

/// `Floor`: `rows` rows of `per_row` seats (`F-<row>-<seat>`) at 10,000; `Balcony`: one row of
/// four at 5,000.
fn venue(rows: usize, per_row: usize) -> SeatLayout {
    let seat = |section: &str, row: String, id: String, price| NewSeat {
        seat_id: SeatId::parse(&id).unwrap(),
        section: section.to_owned(),
        row,
        price,
        currency: "KRW".to_owned(),
    };
    let mut seats = Vec::new();
    for r in 0..rows {
        for s in 0..per_row {
            seats.push(seat("Floor", format!("R{r}"), format!("F-{r}-{s}"), 10_000));
        }
    }
    for s in 0..4 {
        seats.push(seat("Balcony", "A".into(), format!("B-A-{s}"), 5_000));
    }
    SeatLayout::from_seats(&seats).unwrap()
}

async fn on_sale(rows: usize, per_row: usize) -> OnSale {
    OnSale::with_layout_on(Some(venue(rows, per_row)), queue()).await
}

fn ids(seats: &[&str]) -> Vec<SeatId> {
    seats.iter().map(|id| SeatId::parse(id).unwrap()).collect()
}

/// The projection's two bitsets as stored in Redis.
async fn bitsets(sale: &OnSale) -> (Vec<u8>, Vec<u8>) {
    let keys = EventKeys::new(&sale.event);
    let mut redis = redis().await;
    let get = |key: String| {
        let mut redis = redis.clone();
        async move {
            redis::cmd("GET")
                .arg(key)
                .query_async::<Option<Vec<u8>>>(&mut redis)
                .await
                .unwrap()
                .expect("the bitset exists")
        }
    };
    let pair = (get(keys.seats_available).await, get(keys.seats_sold).await);
    let _: () = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    pair
}

/// Item by item: a seat's available bit is set exactly when the table says AVAILABLE, its sold
/// bit exactly when SOLD.
async fn assert_projection_is_the_table(sale: &OnSale, when: &str) {
    let stored = sale.seats().await;
    let (available, sold) = bitsets(sale).await;
    let layout = sale.layout.as_ref().unwrap();
    assert_eq!(stored.len(), layout.seat_count(), "{when}");
    let mut statuses = BTreeMap::new();
    for (index, seat) in layout.seats() {
        let status = stored[seat.seat_id.as_str()]["status"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            (bit(&available, index), bit(&sold, index)),
            (status == "AVAILABLE", status == "SOLD"),
            "{when}: seat {} is {status} in the table",
            seat.seat_id
        );
        *statuses.entry(status).or_insert(0u64) += 1;
    }
    let counts = sale
        .queue
        .availability_board()
        .counts(&sale.event)
        .await
        .unwrap()
        .expect("counts");
    assert_eq!(
        (counts.available, counts.held, counts.sold),
        (
            statuses.get("AVAILABLE").copied().unwrap_or(0),
            statuses.get("HELD").copied().unwrap_or(0),
            statuses.get("SOLD").copied().unwrap_or(0)
        ),
        "{when}"
    );
}

fn order(response: &lambda_http::Response<lambda_http::Body>) -> Value {
    assert_eq!(response.status(), StatusCode::CREATED, "{}", body(response));
    body(response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_projection_converges_to_the_table_after_holds_releases_sales_and_lapses() {
    logs();
    let sale = on_sale(5, 8).await;
    let customers: Vec<CustomerId> = (1..=8).map(customer).collect();
    let tokens = sale.admit(&customers).await;
    let [a, b, c, d, e, f, g, _] = &customers[..] else {
        unreachable!()
    };
    let token = |n: usize| tokens[n].as_str();
    assert_projection_is_the_table(&sale, "seeded").await;

    // A sale, a release, a hold that lapses and is taken over before the sweep, one swept.
    let sold = order(&sale.hold(a, token(0), &ids(&["F-0-0", "F-0-1"])).await);
    let paid = sale
        .pay(
            sold["orderId"].as_str().unwrap(),
            sold["amount"].as_i64().unwrap(),
        )
        .await;
    assert_eq!(body(&paid)["status"], "PAID");
    let released = order(&sale.hold_best(b, token(1), "Floor", 2).await);
    let release = route(
        &sample("release.json"),
        &[
            ("eventId", sale.event.as_str()),
            ("orderId", released["orderId"].as_str().unwrap()),
        ],
        Some(b),
    );
    let answer = sale.send(request(&release)).await;
    assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    order(&sale.hold(c, token(2), &ids(&["F-1-0"])).await);
    order(&sale.hold(d, token(3), &ids(&["F-1-7", "B-A-0"])).await);
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    // e takes c's lapsed seat before the sweep; the sweep then frees d's seats only.
    order(&sale.hold(e, token(4), &ids(&["F-1-0"])).await);
    let swept = sale
        .ledger
        .expire_lapsed(sale.clock.now())
        .await
        .expect("sweep");
    assert_eq!(swept.seats_released, 2, "{swept:?}");
    order(&sale.hold_best(f, token(5), "Floor", 4).await);

    sale.sync_availability().await;
    assert_projection_is_the_table(&sale, "after the stream").await;

    // The cache loses the projection mid-sale. The rebuild reads the table; a hold lands after
    // its reads and before its install: the stream's change, kept aside, is laid over them.
    let keys = EventKeys::new(&sale.event);
    let _: () = redis::cmd("DEL")
        .arg(&[
            &keys.layout,
            &keys.seats_available,
            &keys.seats_sold,
            &keys.seats_pending,
        ])
        .query_async(&mut redis().await)
        .await
        .unwrap();
    let board = sale.queue.availability_board();
    let summary = sale.layout.as_ref().unwrap().summary();
    board.set_layout(&sale.event, &summary).await.unwrap();
    let read_before_the_hold = sale
        .ledger
        .seat_states(&sale.event, sale.layout.as_ref().unwrap())
        .await
        .unwrap();
    let late = order(&sale.hold(g, token(6), &ids(&["B-A-3"])).await);
    sale.sync_availability().await;
    assert!(
        board
            .install(&sale.event, &summary, &read_before_the_hold)
            .await
            .unwrap(),
        "installed"
    );
    assert_eq!(late["seatIds"], json!(["B-A-3"]));
    assert_projection_is_the_table(&sale, "rebuilt while a hold landed").await;

    // Lost altogether: the admitter's check rebuilds it from the table alone.
    let _: () = redis::cmd("DEL")
        .arg(&[&keys.layout, &keys.seats_available, &keys.seats_sold])
        .query_async(&mut redis().await)
        .await
        .unwrap();
    let rebuild = AvailabilityRebuild {
        board: &board,
        layouts: sale.records.as_ref(),
        states: sale.ledger.as_ref(),
    };
    assert_eq!(
        rebuild.ensure(&sale.event).await.unwrap(),
        RebuildOutcome::Rebuilt { seats: 44 }
    );
    assert_eq!(
        rebuild.ensure(&sale.event).await.unwrap(),
        RebuildOutcome::Ready
    );
    assert_projection_is_the_table(&sale, "rebuilt from the table").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_customers_racing_for_best_available_never_get_a_partial_hold_or_a_taken_seat() {
    logs();
    // 24 Floor seats in 3 rows of 8: at most 12 pairs, 50 customers want one each.
    let sale = on_sale(3, 8).await;
    let customers: Vec<CustomerId> = (0..50).map(customer).collect();
    let tokens = sale.admit(&customers).await;
    let racers = customers.iter().zip(&tokens).map(|(customer, token)| {
        let sale = &sale;
        async move { sale.hold_best(customer, token, "Floor", 2).await }
    });
    let answers = join_all(racers).await;

    let layout = sale.layout.as_ref().unwrap();
    let row_of: BTreeMap<String, (String, usize)> = layout
        .sections()
        .iter()
        .flat_map(|section| &section.rows)
        .flat_map(|row| {
            row.seats
                .iter()
                .enumerate()
                .map(|(at, seat)| (seat.clone(), (row.name.clone(), at)))
        })
        .collect();
    let mut won: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for answer in &answers {
        match answer.status() {
            StatusCode::CREATED => {
                let order = body(answer);
                let seats: Vec<String> = serde_json::from_value(order["seatIds"].clone()).unwrap();
                // Two seats, side by side in one Floor row.
                assert_eq!(seats.len(), 2, "{order}");
                let (row0, at0) = &row_of[&seats[0]];
                let (row1, at1) = &row_of[&seats[1]];
                assert!(seats.iter().all(|s| s.starts_with("F-")), "{order}");
                assert_eq!(row0, row1, "one row: {order}");
                assert_eq!(at0.abs_diff(*at1), 1, "adjacent: {order}");
                won.insert(order["orderId"].as_str().unwrap().to_owned(), seats);
            }
            StatusCode::CONFLICT => assert!(
                ["no_seats_together", "seats_unavailable"].contains(&error_code(answer).as_str()),
                "{}",
                body(answer)
            ),
            other => panic!("unexpected {other}: {}", body(answer)),
        }
    }
    assert!(!won.is_empty(), "someone got seats");
    assert!(won.len() <= 12);

    // No seat in two answers; the table holds exactly the answered orders' seats, each HELD by
    // its order, and no order the customers were not told of.
    let all: Vec<&String> = won.values().flatten().collect();
    assert_eq!(
        all.iter().collect::<BTreeSet<_>>().len(),
        all.len(),
        "a seat twice"
    );
    let stored = sale.seats().await;
    for (order_id, seats) in &won {
        for seat in seats {
            assert_eq!(stored[seat]["status"], "HELD");
            assert_eq!(stored[seat]["held_by"], order_id.as_str());
        }
    }
    let held = stored
        .values()
        .filter(|item| item["status"] == "HELD")
        .count();
    assert_eq!(held, all.len(), "no seat held but by an answered order");
    let orders = sale.orders().await;
    assert_eq!(
        orders.keys().cloned().collect::<BTreeSet<_>>(),
        won.keys().cloned().collect::<BTreeSet<_>>()
    );
    sale.sync_availability().await;
    assert_projection_is_the_table(&sale, "after the race").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn best_available_takes_the_front_row_middle_and_says_when_no_row_has_enough() {
    logs();
    let sale = on_sale(2, 6).await;
    let customers: Vec<CustomerId> = (1..=5).map(customer).collect();
    let tokens = sale.admit(&customers).await;

    // Front row (R0), the pair nearest its middle.
    let first = order(&sale.hold_best(&customers[0], &tokens[0], "Floor", 2).await);
    assert_eq!(first["seatIds"], json!(["F-0-2", "F-0-3"]));
    assert_eq!(first["amount"], 20_000);
    // The next request (same instance) skips them at once, although the availability it read
    // may not show them taken yet.
    let second = order(&sale.hold_best(&customers[1], &tokens[1], "Floor", 2).await);
    let second_seats: Vec<String> = serde_json::from_value(second["seatIds"].clone()).unwrap();
    assert!(
        second_seats.iter().all(|s| s.starts_with("F-0-")),
        "{second}"
    );

    // Four together: R0 has at most two left together; R1 (six free) has.
    let third = order(
        &sale
            .hold_best(&customers[2], &tokens[2], "Balcony", 4)
            .await,
    );
    assert_eq!(
        third["seatIds"],
        json!(["B-A-0", "B-A-1", "B-A-2", "B-A-3"])
    );
    sale.sync_availability().await;
    let before = sale.full_snapshot().await;
    let none = sale
        .hold_best(&customers[3], &tokens[3], "Balcony", 1)
        .await;
    assert_eq!(
        (none.status(), error_code(&none).as_str()),
        (StatusCode::CONFLICT, "no_seats_together"),
        "{}",
        body(&none)
    );

    // Bad requests: 400 with their codes, nothing changed.
    for (name, request_body, code) in [
        (
            "both",
            json!({"seatIds": ["F-1-0"], "section": "Floor", "quantity": 1}),
            "invalid_body",
        ),
        ("neither", json!({"quantity": 1}), "invalid_body"),
        (
            "zero",
            json!({"section": "Floor", "quantity": 0}),
            "invalid_quantity",
        ),
        (
            "five",
            json!({"section": "Floor", "quantity": 5}),
            "invalid_quantity",
        ),
        (
            "a string",
            json!({"section": "Floor", "quantity": "2"}),
            "invalid_quantity",
        ),
        (
            "no quantity",
            json!({"section": "Floor"}),
            "invalid_quantity",
        ),
        (
            "a number for a section",
            json!({"section": 7, "quantity": 1}),
            "invalid_section",
        ),
        (
            "a huge section",
            json!({"section": "x".repeat(500), "quantity": 1}),
            "invalid_section",
        ),
        (
            "no such section",
            json!({"section": "Pit", "quantity": 1}),
            "unknown_section",
        ),
    ] {
        let answer = sale
            .hold_with_body(&customers[4], &tokens[4], &request_body)
            .await;
        assert_eq!(
            (answer.status(), error_code(&answer).as_str()),
            (StatusCode::BAD_REQUEST, code),
            "{name}: {}",
            body(&answer)
        );
    }
    assert_eq!(
        sale.full_snapshot().await,
        before,
        "refusals change nothing"
    );
}

#[tokio::test]
async fn the_layout_and_the_seat_map_are_public_cacheable_and_refuse_made_up_versions() {
    logs();
    let sale = on_sale(2, 4).await;
    let api = public_api(sale.records.clone());
    let get = |route_key: &str, params: &[(&str, &str)]| {
        let request = public_request(route_key, params);
        let api = api.clone();
        async move { lineup::application::status::handle(&api, request).await }
    };
    let event = sale.event.as_str();
    let cache = |answer: &lambda_http::Response<lambda_http::Body>| {
        answer.headers()["cache-control"]
            .to_str()
            .unwrap()
            .to_owned()
    };

    let map = get("GET /events/{eventId}/seats", &[("eventId", event)]).await;
    assert_eq!(map.status(), StatusCode::OK);
    assert_eq!(
        cache(&map),
        "public, max-age=1, stale-while-revalidate=2, stale-if-error=30"
    );
    let version = sale.layout.as_ref().unwrap().version().to_owned();
    assert_eq!(body(&map)["layoutVersion"], version.as_str());
    assert_eq!(body(&map)["available"], 12);

    let current = get("GET /events/{eventId}/layout", &[("eventId", event)]).await;
    assert_eq!(current.status(), StatusCode::FOUND);
    assert_eq!(
        current.headers()["location"],
        format!("/events/{event}/layout/{version}").as_str()
    );
    assert_eq!(cache(&current), "public, max-age=5");

    let layout = get(
        "GET /events/{eventId}/layout/{version}",
        &[("eventId", event), ("version", &version)],
    )
    .await;
    assert_eq!(layout.status(), StatusCode::OK);
    assert_eq!(cache(&layout), "public, max-age=31536000, immutable");
    assert_eq!(body(&layout)["sections"][0]["rows"][1]["seats"][3], "F-1-3");
    assert_eq!(
        SeatLayout::from_document(layout.body()).unwrap(),
        *sale.layout.as_ref().unwrap()
    );

    // Made up: a well-formed unknown version (404), a malformed one (400), an unknown event;
    // each answer cached briefly so repeating it does not reach the origin.
    for (params, status, code) in [
        (
            vec![("eventId", event), ("version", "0123456789abcdef")],
            404,
            "not_found",
        ),
        (
            vec![("eventId", event), ("version", "../../etc")],
            400,
            "invalid_layout_version",
        ),
        (
            vec![("eventId", event), ("version", "0123456789ABCDEF")],
            400,
            "invalid_layout_version",
        ),
    ] {
        let answer = get("GET /events/{eventId}/layout/{version}", &params).await;
        assert_eq!(
            (answer.status().as_u16(), error_code(&answer).as_str()),
            (status, code)
        );
        assert_eq!(cache(&answer), "public, max-age=5");
    }
    let unknown = fresh_event();

    // A thousand made-up versions, and versions of a made-up event, reach neither the table nor
    // the single read real versions wait for: only the current version is ever read.
    let (counted, requests) = counting_records().await;
    let counted_api = lineup::application::status::StatusApi {
        layouts: counted,
        layout_documents: std::sync::Arc::default(),
        published_draws: std::sync::Arc::default(),
        ..api.clone()
    };
    let version_of = |event: &str, version: &str| {
        let request = public_request(
            "GET /events/{eventId}/layout/{version}",
            &[("eventId", event), ("version", version)],
        );
        let api = counted_api.clone();
        async move { lineup::application::status::handle(&api, request).await }
    };
    let made_up: Vec<String> = (0..1000u64).map(|n| format!("{n:016x}")).collect();
    let answers = join_all(made_up.iter().map(|version| version_of(event, version))).await;
    assert!(answers
        .iter()
        .all(|answer| answer.status() == StatusCode::NOT_FOUND));
    let unknown_event = version_of(unknown.as_str(), &version).await;
    assert_eq!(
        (unknown_event.status(), error_code(&unknown_event).as_str()),
        (StatusCode::NOT_FOUND, "event_not_found")
    );
    assert_eq!(
        requests.take(),
        BTreeMap::new(),
        "made-up versions read nothing from DynamoDB"
    );
    // The current version is read once, however many ask at once.
    let current = join_all((0..20).map(|_| version_of(event, &version))).await;
    assert!(current
        .iter()
        .all(|answer| answer.status() == StatusCode::OK));
    assert_eq!(
        requests.take().values().sum::<u64>(),
        1,
        "twenty concurrent reads of the current version make one table read"
    );

    for route_key in [
        "GET /events/{eventId}/seats",
        "GET /events/{eventId}/layout",
    ] {
        let answer = get(route_key, &[("eventId", unknown.as_str())]).await;
        assert_eq!(
            (answer.status(), error_code(&answer).as_str()),
            (StatusCode::NOT_FOUND, "event_not_found")
        );
        assert_eq!(cache(&answer), "public, max-age=5");
    }

    // Being rebuilt after a cache loss: 503, retry shortly, cached a second.
    let keys = EventKeys::new(&sale.event);
    let _: () = redis::cmd("DEL")
        .arg(&keys.seats_available)
        .query_async(&mut redis().await)
        .await
        .unwrap();
    let rebuilding = get("GET /events/{eventId}/seats", &[("eventId", event)]).await;
    assert_eq!(
        (rebuilding.status(), error_code(&rebuilding).as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "availability_rebuilding")
    );
    assert!(rebuilding.headers().contains_key("retry-after"));
    assert_eq!(cache(&rebuilding), "public, max-age=1");
}

/// A public route's API Gateway event with its path filled in from `params`.
fn public_request(route_key: &str, params: &[(&str, &str)]) -> lambda_http::Request {
    let mut event = route(&sample("seats.json"), params, None);
    let path = route_key
        .trim_start_matches("GET ")
        .replace("{eventId}", params[0].1)
        .replace("{version}", params.get(1).map_or("", |p| p.1));
    event["routeKey"] = route_key.into();
    event["requestContext"]["routeKey"] = route_key.into();
    event["rawPath"] = path.clone().into();
    event["requestContext"]["http"]["path"] = path.into();
    request(&event)
}
