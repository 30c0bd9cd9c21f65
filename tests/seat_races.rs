//! Many customers at once on the same seats, against the serialised moto server: a seat is never
//! held or sold twice, a hold is all or nothing, and the stored data says so.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;
use http::StatusCode;
use lineup::domain::ids::SeatId;
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::*;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_customers_race_for_one_seat_and_exactly_one_wins_ten_times_over() {
    logs();
    const RACERS: usize = 50;
    const ROUNDS: usize = 10;
    let sale = OnSale::with_seats(ROUNDS).await;
    let customers: Vec<_> = (0..RACERS * ROUNDS).map(customer).collect();
    let tokens = sale.admit(&customers).await;

    for round in 0..ROUNDS {
        let contested = seat(round + 1);
        let racers = (round * RACERS..(round + 1) * RACERS).map(|n| {
            let (customer, token, contested) = (&customers[n], &tokens[n], contested.clone());
            let sale = &sale;
            async move { sale.hold(customer, token, &[contested]).await }
        });
        let responses = join_all(racers).await;

        let winners: Vec<Value> = responses
            .iter()
            .filter(|r| r.status() == StatusCode::CREATED)
            .map(body)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {} winners", winners.len());
        for response in responses
            .iter()
            .filter(|r| r.status() != StatusCode::CREATED)
        {
            assert_eq!(
                response.status(),
                StatusCode::CONFLICT,
                "round {round}: {}",
                body(response)
            );
            assert_eq!(error_code(response), "seats_unavailable");
            assert_eq!(
                body(response)["error"]["seatIds"],
                serde_json::json!([contested.as_str()])
            );
        }

        let stored = sale.seats().await;
        let held = &stored[contested.as_str()];
        assert_eq!(held["status"], "HELD");
        assert_eq!(
            held["held_by"], winners[0]["orderId"],
            "round {round}: the seat is the winner's"
        );
        let orders = sale.orders().await;
        let for_seat = orders
            .values()
            .filter(|o| {
                o["seat_ids"]
                    .as_array()
                    .unwrap()
                    .contains(&contested.as_str().into())
            })
            .count();
        assert_eq!(for_seat, 1, "round {round}: one order for the seat");
    }
}

/// A deterministic spread of 1-4 distinct seats out of `seats` for customer `n`.
fn wish_list(n: usize, seats: usize) -> Vec<SeatId> {
    let mut state = (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        state ^= state >> 33;
        state = state.wrapping_mul(0xff51_afd7_ed55_8ccd);
        state ^= state >> 33;
        state
    };
    let count = 1 + (next() % 4) as usize;
    let mut wanted = BTreeSet::new();
    while wanted.len() < count {
        wanted.insert(1 + (next() % seats as u64) as usize);
    }
    wanted.into_iter().map(seat).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_customers_on_a_hundred_seats_then_every_winner_pays() {
    logs();
    const CUSTOMERS: usize = 300;
    const SEATS: usize = 100;
    let sale = OnSale::with_seats(SEATS).await;
    let customers: Vec<_> = (0..CUSTOMERS).map(customer).collect();
    let tokens = sale.admit(&customers).await;

    let holds = join_all((0..CUSTOMERS).map(|n| {
        let sale = &sale;
        let (customer, token) = (&customers[n], &tokens[n]);
        async move { (n, sale.hold(customer, token, &wish_list(n, SEATS)).await) }
    }))
    .await;

    let mut won = Vec::new();
    let mut refused = Vec::new();
    for (n, response) in &holds {
        match response.status() {
            StatusCode::CREATED => won.push((*n, body(response))),
            StatusCode::CONFLICT => {
                assert_eq!(error_code(response), "seats_unavailable", "customer {n}");
                let taken = body(response)["error"]["seatIds"]
                    .as_array()
                    .unwrap()
                    .clone();
                assert!(!taken.is_empty(), "a refusal names the seats taken");
                let asked: Vec<Value> = wish_list(*n, SEATS)
                    .iter()
                    .map(|s| s.as_str().into())
                    .collect();
                assert!(
                    taken.iter().all(|seat| asked.contains(seat)),
                    "customer {n}: named {taken:?}, asked {asked:?}"
                );
                refused.push(taken);
            }
            other => panic!("customer {n}: {other} {}", body(response)),
        }
    }
    assert!(won.len() >= SEATS / 4, "only {} holds won", won.len());

    // Every winner pays, all at once.
    let payments = sale.pay_all(won.iter().map(|(_, order)| order)).await;
    for response in &payments {
        assert_eq!(response.status(), StatusCode::OK, "{}", body(response));
        assert_eq!(body(response)["status"], "PAID");
    }

    // The invariants, over the stored data.
    let seats = sale.seats().await;
    let orders = sale.orders().await;
    assert_eq!(orders.len(), won.len(), "losers left no order behind");
    let mut sold_to: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (order_id, order) in &orders {
        assert_eq!(order["status"], "PAID", "order {order_id}");
        let order_seats: Vec<&str> = order["seat_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        for seat_id in &order_seats {
            // Every PAID order's seats are SOLD to it: all of them (no partial order).
            assert_eq!(
                seats[*seat_id]["status"], "SOLD",
                "seat {seat_id} of order {order_id}"
            );
            assert_eq!(
                seats[*seat_id]["held_by"],
                order_id.as_str(),
                "seat {seat_id} of order {order_id}"
            );
            sold_to
                .entry(seat_id.to_string())
                .or_default()
                .push(order_id.clone());
        }
        let price_total: i64 = order_seats
            .iter()
            .map(|s| seats[*s]["price"].as_i64().unwrap())
            .sum();
        assert_eq!(
            order["amount"].as_i64().unwrap(),
            price_total,
            "order {order_id} amount"
        );
    }
    for (seat_id, stored) in &seats {
        match stored["status"].as_str().unwrap() {
            // No seat sold twice; every SOLD seat belongs to exactly one PAID order.
            "SOLD" => assert_eq!(
                sold_to.get(seat_id).map(Vec::len),
                Some(1),
                "seat {seat_id}: {:?}",
                sold_to.get(seat_id)
            ),
            "AVAILABLE" => assert!(!sold_to.contains_key(seat_id), "seat {seat_id}"),
            other => panic!("seat {seat_id} left {other} after every winner paid"),
        }
    }

    // Every seat a refusal named as taken was indeed someone's: sold now that winners paid.
    for seat_id in refused.iter().flatten() {
        assert_eq!(
            seats[seat_id.as_str().unwrap()]["status"],
            "SOLD",
            "{seat_id} was named as taken"
        );
    }

    // One ticket_issued outbox event per paid order, naming its seats.
    let outbox = sale.outbox().await;
    assert_eq!(outbox.len(), orders.len());
    for event in &outbox {
        assert_eq!(event["type"], "ticket_issued");
        let order = &orders[event["orderId"].as_str().unwrap()];
        assert_eq!(event["seatIds"], order["seat_ids"]);
        assert_eq!(event["amount"], order["amount"]);
    }
    // Paying ended each winner's admission, freeing their slots.
    for (n, _) in &won {
        assert!(
            !sale.is_admitted(&customers[*n]).await,
            "customer {n} still admitted after paying"
        );
    }
}
