//! Joining: the place is kept on re-join, positions follow arrival exactly under concurrency,
//! and the pre-queue is shuffled ahead of later arrivals.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use http::StatusCode;
use lineup::clock::{FixedClock, SystemClock};
use lineup::event_settings::EventSettings;
use lineup::http::join;
use lineup::queue::keys::EventKeys;
use lineup_tests::*;

#[tokio::test]
async fn rejoining_keeps_the_same_queue_id_and_position() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock));
    let event = open_event(&queue, SystemTime::now()).await;
    for n in 0..3 {
        let response = join::handle(&api, join_request(&event, &customer(n))).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }

    let first = join::handle(&api, join_request(&event, &customer(99))).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = body(&first);
    assert_eq!(first["status"], "waiting");
    assert_eq!(first["position"], 3);

    // Again and again, one after the other...
    for _ in 0..5 {
        let again = join::handle(&api, join_request(&event, &customer(99))).await;
        assert_eq!(again.status(), StatusCode::OK);
        let again = body(&again);
        assert_eq!(again["queueId"], first["queueId"]);
        assert_eq!(again["position"], 3);
    }
    // ...and 20 times at once.
    let at_once =
        join_all((0..20).map(|_| join::handle(&api, join_request(&event, &customer(99))))).await;
    for response in at_once {
        assert_eq!(response.status(), StatusCode::OK);
        let again = body(&response);
        assert_eq!(again["queueId"], first["queueId"]);
        assert_eq!(again["position"], 3);
    }
    let mut redis = redis().await;
    let waiting: u64 = redis::cmd("ZCARD")
        .arg(EventKeys::new(&event).queue)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(waiting, 4, "re-joining never adds a second entry");
}

#[tokio::test]
async fn twenty_first_joins_at_once_of_one_customer_make_one_entry() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock));
    let event = open_event(&queue, SystemTime::now()).await;
    let responses =
        join_all((0..20).map(|_| join::handle(&api, join_request(&event, &customer(7))))).await;
    let created = responses
        .iter()
        .filter(|r| r.status() == StatusCode::CREATED)
        .count();
    assert_eq!(
        created, 1,
        "exactly one of the simultaneous first joins creates the entry"
    );
    for response in &responses {
        assert_eq!(body(response)["position"], 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_concurrent_joins_get_positions_0_to_9999_in_sequence_order() {
    const CUSTOMERS: usize = 10_000;
    const TASKS: usize = 64;
    let queue = queue();
    let api = Arc::new(api(queue.clone(), Arc::new(SystemClock)));
    let event = open_event(&queue, SystemTime::now()).await;

    let tasks = (0..TASKS).map(|task| {
        let (api, event) = (api.clone(), event.clone());
        tokio::spawn(async move {
            let mut positions = Vec::new();
            for n in (task..CUSTOMERS).step_by(TASKS) {
                let response = join::handle(&api, join_request(&event, &customer(n))).await;
                assert_eq!(response.status(), StatusCode::CREATED);
                positions.push((n, body(&response)["position"].as_u64().expect("a position")));
            }
            positions
        })
    });
    let mut positions: Vec<(usize, u64)> = join_all(tasks)
        .await
        .into_iter()
        .flat_map(|task| task.expect("task ran"))
        .collect();

    // Each position 0..9,999 exactly once.
    let mut seen: Vec<u64> = positions.iter().map(|(_, position)| *position).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..CUSTOMERS as u64).collect::<Vec<_>>());

    // In sequence order: the customer told position k holds rank k and the k+1-th sequence number.
    let mut redis = redis().await;
    let stored: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&event).queue)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut redis)
        .await
        .unwrap();
    positions.sort_by_key(|(_, position)| *position);
    for ((n, position), (member, score)) in positions.iter().zip(&stored) {
        assert_eq!(member, customer(*n).as_str(), "rank {position}");
        assert_eq!(
            *score,
            (*position + 1) as f64,
            "the sequence number behind rank {position}"
        );
    }
    assert_eq!(stored.len(), CUSTOMERS);
}

/// Spearman's rank correlation between arrival order and queue order.
fn rank_correlation(order: &[usize]) -> f64 {
    let n = order.len() as f64;
    let squared: f64 = order
        .iter()
        .enumerate()
        .map(|(rank, arrival)| ((rank as f64) - (*arrival as f64)).powi(2))
        .sum();
    1.0 - 6.0 * squared / (n * (n * n - 1.0))
}

#[tokio::test]
async fn pre_queue_joins_come_ahead_of_later_joins_in_shuffled_order() {
    const EARLY: usize = 1_000;
    const LATE: usize = 200;
    let queue = queue();
    let start = SystemTime::now();
    let clock = Arc::new(FixedClock::at(start));
    let api = api(queue.clone(), clock.clone());
    let event = fresh_event();
    configure(
        &queue,
        &event,
        EventSettings::opening_at(start + Duration::from_secs(3_600)),
    )
    .await;

    // Arrival order is customer number order.
    for n in 0..EARLY {
        let response = join::handle(&api, join_request(&event, &customer(n))).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body = body(&response);
        assert!(
            body["opensAt"].is_string(),
            "pre-queue joins are told when the sale opens: {body}"
        );
    }
    clock.advance(Duration::from_secs(3_601));
    for n in EARLY..EARLY + LATE {
        let response = join::handle(&api, join_request(&event, &customer(n))).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }

    let mut redis = redis().await;
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&event).queue)
        .arg(0)
        .arg(-1)
        .query_async(&mut redis)
        .await
        .unwrap();
    let order: Vec<usize> = members
        .iter()
        .map(|m| m.trim_start_matches("customer-").parse().unwrap())
        .collect();

    let (early, late) = order.split_at(EARLY);
    assert!(
        early.iter().all(|n| *n < EARLY),
        "every pre-queue customer is ahead of every later one"
    );
    assert_eq!(
        late,
        (EARLY..EARLY + LATE).collect::<Vec<_>>(),
        "later joins keep arrival order"
    );
    // A random permutation of 1,000 has |rho| < 0.2 with overwhelming probability (sd ~ 0.03);
    // arrival order would give exactly 1.
    let rho = rank_correlation(early);
    assert!(
        rho.abs() < 0.2,
        "pre-queue order follows arrival order (rho = {rho})"
    );
}
