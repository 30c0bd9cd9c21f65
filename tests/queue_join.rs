//! Joining: the place is kept on re-join, positions follow arrival exactly under concurrency,
//! and the pre-queue is shuffled ahead of later arrivals, by a draw that is a pure function of
//! the event's seed and the customer, so trying again never changes a place, and that no
//! pre-opening answer reveals.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use http::StatusCode;
use lineup::clock::{Clock, FixedClock, SystemClock};
use lineup::event_settings::EventSettings;
use lineup::http::{join, poll};
use lineup::ids::{CustomerId, EventId};
use lineup::queue::keys::EventKeys;
use lineup::queue::redis::RedisQueue;
use lineup::queue::{Admitter, Standing, WaitingLine};
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
        assert!(
            body.get("position").is_none(),
            "no position before opening: {body}"
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

const OPENS_IN: Duration = Duration::from_secs(3_600);

/// An event opening in an hour (the clock starts at `start`), with a pre-queue of `customers`
/// joined in that order through the join route; every answer withholds the position.
async fn pre_queue(
    queue: &Arc<RedisQueue>,
    start: SystemTime,
    customers: impl IntoIterator<Item = CustomerId>,
) -> EventId {
    let event = fresh_event();
    configure(queue, &event, EventSettings::opening_at(start + OPENS_IN)).await;
    let api = api(queue.clone(), Arc::new(FixedClock::at(start)));
    for customer in customers {
        let response = join::handle(&api, join_request(&event, &customer)).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        assert!(body(&response).get("position").is_none());
    }
    event
}

/// Where `customer` stands once the event has opened (the clock is a parameter of `standing`).
async fn place_after_opening(
    queue: &RedisQueue,
    event: &EventId,
    customer: &CustomerId,
    start: SystemTime,
) -> u64 {
    let opened = start + OPENS_IN + Duration::from_secs(1);
    match queue.standing(event, customer, opened).await.unwrap() {
        Some(Standing::Waiting { position, .. }) => position,
        other => panic!("{customer:?} is not waiting after opening: {other:?}"),
    }
}

/// The queue's order once opened: customer numbers, front first, read through each standing.
async fn order_after_opening(
    queue: &RedisQueue,
    event: &EventId,
    customers: usize,
    start: SystemTime,
) -> Vec<usize> {
    let mut order = vec![usize::MAX; customers];
    for n in 0..customers {
        let position = place_after_opening(queue, event, &customer(n), start).await;
        order[position as usize] = n;
    }
    assert!(
        !order.contains(&usize::MAX),
        "positions 0..{customers} each once"
    );
    order
}

async fn draw_seed(event: &EventId) -> Option<String> {
    let mut redis = redis().await;
    redis::cmd("HGET")
        .arg(EventKeys::new(event).settings)
        .arg("draw_seed")
        .query_async(&mut redis)
        .await
        .unwrap()
}

async fn score(event: &EventId, customer: &CustomerId) -> Option<f64> {
    let mut redis = redis().await;
    redis::cmd("ZSCORE")
        .arg(EventKeys::new(event).queue)
        .arg(customer.as_str())
        .query_async(&mut redis)
        .await
        .unwrap()
}

#[tokio::test]
async fn leaving_and_rejoining_before_opening_never_changes_the_place() {
    const OTHERS: usize = 30;
    let queue = queue();
    let start = SystemTime::now();
    let event = pre_queue(&queue, start, (0..OTHERS).map(customer)).await;
    let api = api(queue.clone(), Arc::new(FixedClock::at(start)));
    let mallory = customer(1_000);

    let joined = join::handle(&api, join_request(&event, &mallory)).await;
    assert_eq!(joined.status(), StatusCode::CREATED);
    let queue_id = body(&joined)["queueId"].as_str().unwrap().to_owned();
    let place = place_after_opening(&queue, &event, &mallory, start).await;
    let drawn = score(&event, &mallory).await.expect("queued");

    for attempt in 1..=50 {
        let left = poll::handle(&api, leave_request(&event, &mallory, &queue_id)).await;
        assert_eq!(left.status(), StatusCode::NO_CONTENT, "attempt {attempt}");
        assert_eq!(
            score(&event, &mallory).await,
            None,
            "left, attempt {attempt}"
        );

        let rejoined = join::handle(&api, join_request(&event, &mallory)).await;
        assert_eq!(rejoined.status(), StatusCode::CREATED, "attempt {attempt}");
        let answer = body(&rejoined);
        assert!(answer.get("position").is_none(), "{answer}");
        assert_eq!(
            answer["etaSeconds"],
            OPENS_IN.as_secs(),
            "the ETA counts to the opening, whatever the place: {answer}"
        );
        assert_eq!(
            place_after_opening(&queue, &event, &mallory, start).await,
            place,
            "attempt {attempt} moved the place"
        );
        assert_eq!(score(&event, &mallory).await, Some(drawn));
    }

    // The poll before opening shows no more than the join did.
    let polled = poll::handle(&api, poll_request(&event, &mallory, &queue_id)).await;
    assert_eq!(polled.status(), StatusCode::OK);
    let polled = body(&polled);
    assert_eq!(polled["status"], "waiting");
    assert!(polled.get("position").is_none(), "{polled}");
    assert!(polled["opensAt"].is_string(), "{polled}");

    // After opening the same place is shown, and the others are where they were.
    let opened = FixedClock::at(start + OPENS_IN + Duration::from_secs(1));
    let api = lineup_tests::api(queue.clone(), Arc::new(opened));
    let polled = body(&poll::handle(&api, poll_request(&event, &mallory, &queue_id)).await);
    assert_eq!(polled["position"], place, "{polled}");
    assert!(polled.get("opensAt").is_none(), "{polled}");
}

#[tokio::test]
async fn the_pre_queue_order_is_a_function_of_the_seed_and_the_customers_alone() {
    const CUSTOMERS: usize = 30;
    let queue = queue();
    let start = SystemTime::now();

    let first = pre_queue(&queue, start, (0..CUSTOMERS).map(customer)).await;
    let order = order_after_opening(&queue, &first, CUSTOMERS, start).await;
    let seed = draw_seed(&first).await.expect("configuring made a seed");
    assert_eq!(seed.len(), 64, "32 bytes, hex: {seed}");
    assert!(seed.bytes().all(|b| b.is_ascii_hexdigit()), "{seed}");

    // Re-configuring the event (an operator's `event set`) keeps the seed and so the order.
    configure(
        &queue,
        &first,
        EventSettings {
            admit_per_second: 7,
            ..EventSettings::opening_at(start + OPENS_IN)
        },
    )
    .await;
    assert_eq!(draw_seed(&first).await.as_deref(), Some(seed.as_str()));

    // Another event, another seed: the same customers, in the same arrival order, draw another
    // order (equal by chance with probability 1/30!).
    // (Its own seed: per event, random, so no process-wide key such as the signing key.)
    let second = pre_queue(&queue, start, (0..CUSTOMERS).map(customer)).await;
    assert_ne!(draw_seed(&second).await.as_deref(), Some(seed.as_str()));
    assert_ne!(
        order_after_opening(&queue, &second, CUSTOMERS, start).await,
        order,
        "the draw ignores the seed"
    );

    // The first event's seed, the customers arriving in reverse: exactly the first order.
    let third = fresh_event();
    configure(&queue, &third, EventSettings::opening_at(start + OPENS_IN)).await;
    let mut redis = redis().await;
    let () = redis::cmd("HSET")
        .arg(EventKeys::new(&third).settings)
        .arg("draw_seed")
        .arg(&seed)
        .query_async(&mut redis)
        .await
        .unwrap();
    let api = api(queue.clone(), Arc::new(FixedClock::at(start)));
    for n in (0..CUSTOMERS).rev() {
        let response = join::handle(&api, join_request(&third, &customer(n))).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    assert_eq!(
        order_after_opening(&queue, &third, CUSTOMERS, start).await,
        order,
        "the same seed and customers give the same order, whatever the arrival order"
    );
    assert_ne!(
        order,
        (0..CUSTOMERS).collect::<Vec<_>>(),
        "the pre-queue is shuffled, not in arrival order"
    );

    // Admission follows that order: the first event now admits 7 a second (re-configured above),
    // so its first tick after opening admits exactly the 7 at the front of the drawn order.
    let opened = start + OPENS_IN + Duration::from_secs(1);
    let tick = queue.admit_tick(&first, opened).await.unwrap();
    assert_eq!(tick.admitted, 7);
    let mut admitted: Vec<String> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&first).active)
        .arg(0)
        .arg(-1)
        .query_async(&mut redis)
        .await
        .unwrap();
    admitted.sort();
    let mut front: Vec<String> = order[..7]
        .iter()
        .map(|n| customer(*n).as_str().to_owned())
        .collect();
    front.sort();
    assert_eq!(admitted, front);
}

#[tokio::test]
async fn pre_queue_scores_are_whole_numbers_below_sequence_number_one() {
    const EARLY: usize = 500;
    let queue = queue();
    let start = SystemTime::now();
    let event = pre_queue(&queue, start, (0..EARLY).map(customer)).await;
    let clock = Arc::new(FixedClock::at(start));
    clock.advance(OPENS_IN);
    let late = customer(EARLY);
    queue.join(&event, &late, clock.now()).await.unwrap();

    let mut redis = redis().await;
    let stored: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&event).queue)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut redis)
        .await
        .unwrap();
    let (early, after) = stored.split_at(EARLY);
    let lowest = -(2f64.powi(52));
    for (member, score) in early {
        assert!(
            (lowest..=-1.0).contains(score) && score.fract() == 0.0,
            "{member}'s pre-queue score {score} is not a whole number in [-2^52, -1]"
        );
    }
    let mut distinct: Vec<i64> = early.iter().map(|(_, score)| *score as i64).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), EARLY, "52-bit draws do not collide");
    assert_eq!(
        after,
        [(late.as_str().to_owned(), 1.0)],
        "the first join after opening gets sequence number 1, behind the whole pre-queue"
    );
}

#[tokio::test]
async fn an_event_without_a_draw_seed_refuses_pre_queue_joins_until_configured() {
    let queue = queue();
    let start = SystemTime::now();
    let event = pre_queue(&queue, start, [customer(1)]).await;
    let seed = draw_seed(&event).await;
    let mut redis = redis().await;
    // An event configured before draw seeds existed.
    let _: i64 = redis::cmd("HDEL")
        .arg(EventKeys::new(&event).settings)
        .arg("draw_seed")
        .query_async(&mut redis)
        .await
        .unwrap();

    let api = api(queue.clone(), Arc::new(FixedClock::at(start)));
    let refused = join::handle(&api, join_request(&event, &customer(2))).await;
    assert_eq!(refused.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(score(&event, &customer(2)).await, None, "nothing was drawn");

    // Configuring it again (what `lineup event set` does) gives it a new seed.
    configure(&queue, &event, EventSettings::opening_at(start + OPENS_IN)).await;
    let new_seed = draw_seed(&event).await.expect("a new seed");
    assert_ne!(Some(new_seed), seed);
    let joined = join::handle(&api, join_request(&event, &customer(2))).await;
    assert_eq!(joined.status(), StatusCode::CREATED);
}
