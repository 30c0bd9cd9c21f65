//! Joining: the place is kept on re-join, numbers follow arrival exactly under concurrency, and
//! the pre-queue is drawn at opening, ahead of later arrivals, by the verifiable draw (the
//! committed seed and the closed entrant list alone decide it), which no pre-opening answer
//! reveals and leaving and joining again cannot change.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use http::StatusCode;
use lineup::adapters::redis::keys::EventKeys;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::event_records::DrawPublication;
use lineup::application::ports::queue::{EventSettingsStore, Standing, WaitingLine};
use lineup::application::{join, poll};
use lineup::domain::clock::{FixedClock, SystemClock};
use lineup::domain::draw;
use lineup::domain::draw::DrawSeed;
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::{CustomerId, EventId};
use lineup_tests::*;

#[tokio::test]
async fn rejoining_keeps_the_same_number() {
    let queue = queue();
    let api = api(queue.clone(), Arc::new(SystemClock)).await;
    let event = open_event(&queue, SystemTime::now()).await;
    for n in 0..3 {
        let response = join::handle(&api, join_request(&event, &customer(n))).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }

    let first = join::handle(&api, join_request(&event, &customer(99))).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = body(&first);
    assert_eq!(first["status"], "waiting");
    assert_eq!(first["number"], 4);
    assert_eq!(first["position"], 3);
    assert_eq!(first["servingUpTo"], 0);
    assert!(
        first["queueId"].as_str().unwrap().starts_with("4."),
        "the ticket states the number: {first}"
    );

    // Again and again, one after the other...
    for _ in 0..5 {
        let again = join::handle(&api, join_request(&event, &customer(99))).await;
        assert_eq!(again.status(), StatusCode::OK);
        let again = body(&again);
        assert_eq!(
            (&again["number"], &again["position"]),
            (&first["number"], &first["position"])
        );
    }
    // ...and 20 times at once.
    let at_once =
        join_all((0..20).map(|_| join::handle(&api, join_request(&event, &customer(99))))).await;
    for response in at_once {
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(body(&response)["number"], 4);
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
    let api = api(queue.clone(), Arc::new(SystemClock)).await;
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
        assert_eq!(body(response)["number"], 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_concurrent_joins_get_numbers_1_to_10000_in_arrival_order() {
    const CUSTOMERS: usize = 10_000;
    const TASKS: usize = 64;
    let queue = queue();
    let api = Arc::new(api(queue.clone(), Arc::new(SystemClock)).await);
    let event = open_event(&queue, SystemTime::now()).await;

    let tasks = (0..TASKS).map(|task| {
        let (api, event) = (api.clone(), event.clone());
        tokio::spawn(async move {
            let mut numbers = Vec::new();
            for n in (task..CUSTOMERS).step_by(TASKS) {
                let response = join::handle(&api, join_request(&event, &customer(n))).await;
                assert_eq!(response.status(), StatusCode::CREATED);
                let answer = body(&response);
                let number = answer["number"].as_u64().expect("a number");
                // Nobody has left: the customers ahead are exactly the numbers before.
                assert_eq!(answer["position"].as_u64(), Some(number - 1), "{answer}");
                numbers.push((n, number));
            }
            numbers
        })
    });
    let mut numbers: Vec<(usize, u64)> = join_all(tasks)
        .await
        .into_iter()
        .flat_map(|task| task.expect("task ran"))
        .collect();

    // Each number 1..10,000 exactly once.
    let mut seen: Vec<u64> = numbers.iter().map(|(_, number)| *number).collect();
    seen.sort_unstable();
    assert_eq!(seen, (1..=CUSTOMERS as u64).collect::<Vec<_>>());

    // As stored: the customer told number k is the k-th in the queue, scored k.
    let mut redis = redis().await;
    let stored: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&event).queue)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut redis)
        .await
        .unwrap();
    numbers.sort_by_key(|(_, number)| *number);
    for ((n, number), (member, score)) in numbers.iter().zip(&stored) {
        assert_eq!(member, customer(*n).as_str(), "number {number}");
        assert_eq!(*score, *number as f64);
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

const OPENS_IN: Duration = Duration::from_secs(3_600);

/// An event opening in an hour (the clock starts at `start`) that admits nobody (these tests
/// look at the draw alone), with a pre-queue of `customers` joined in that order through the
/// join route; every answer is checked to carry no number.
async fn pre_queue(
    queue: &Arc<RedisQueue>,
    start: SystemTime,
    customers: impl IntoIterator<Item = CustomerId>,
) -> EventId {
    let event = fresh_event();
    configure(queue, &event, admitting_nobody(start + OPENS_IN)).await;
    let api = api(queue.clone(), Arc::new(FixedClock::at(start))).await;
    for customer in customers {
        let response = join::handle(&api, join_request(&event, &customer)).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let answer = body(&response);
        assert!(answer.get("number").is_none(), "{answer}");
        assert!(answer.get("position").is_none(), "{answer}");
    }
    event
}

fn admitting_nobody(opens_at: SystemTime) -> EventSettings {
    EventSettings {
        admit_per_second: 0,
        ..EventSettings::opening_at(opens_at)
    }
}

/// Opens the event (the clock one second past opening) with one admit tick, which closes the
/// pre-queue and draws it; returns each customer's number as the queue holds it.
async fn open_and_draw(
    queue: &Arc<RedisQueue>,
    event: &EventId,
    customers: impl IntoIterator<Item = CustomerId>,
    start: SystemTime,
) -> BTreeMap<CustomerId, u64> {
    let opened = start + OPENS_IN + Duration::from_secs(1);
    Admission::new(queue.clone())
        .await
        .tick(event, opened)
        .await;
    let mut numbers = BTreeMap::new();
    for customer in customers {
        match queue.standing(event, &customer, opened).await.unwrap() {
            Some(Standing::Waiting { number, .. }) => numbers.insert(customer, number),
            other => panic!("{customer:?} has no number after the draw: {other:?}"),
        };
    }
    numbers
}

async fn draw_seed(event: &EventId) -> DrawSeed {
    let mut redis = redis().await;
    let seed: String = redis::cmd("HGET")
        .arg(EventKeys::new(event).settings)
        .arg("draw_seed")
        .query_async(&mut redis)
        .await
        .unwrap();
    DrawSeed::parse(&seed).expect("a stored seed")
}

#[tokio::test]
async fn the_pre_queue_is_drawn_at_opening_ahead_of_later_joins_as_published() {
    const EARLY: usize = 1_000;
    const LATE: usize = 200;
    let queue = queue();
    let start = SystemTime::now();
    let event = pre_queue(&queue, start, (0..EARLY).map(customer)).await;

    // Every pre-opening answer is the same but for the ticket and the entrant hash.
    let api = api(queue.clone(), Arc::new(FixedClock::at(start))).await;
    let seed = draw_seed(&event).await;
    for n in [0, EARLY / 2, EARLY - 1] {
        let mut answer = body(&join::handle(&api, join_request(&event, &customer(n))).await);
        assert_eq!(answer["entrant"], seed.entrant(&customer(n)), "{answer}");
        assert_eq!(answer["etaSeconds"], OPENS_IN.as_secs(), "{answer}");
        for varying in ["queueId", "entrant"] {
            answer.as_object_mut().unwrap().remove(varying);
        }
        assert_eq!(
            answer,
            serde_json::json!({
                "status": "waiting",
                "etaSeconds": OPENS_IN.as_secs(),
                "opensAt": lineup::domain::clock::rfc3339(start + OPENS_IN),
            })
        );
    }

    let numbers = open_and_draw(&queue, &event, (0..EARLY).map(customer), start).await;
    // Joins after opening come after the whole pre-queue, in arrival order.
    let opened = Arc::new(FixedClock::at(start + OPENS_IN + Duration::from_secs(2)));
    let api = lineup_tests::api(queue.clone(), opened).await;
    for n in EARLY..EARLY + LATE {
        let answer = body(&join::handle(&api, join_request(&event, &customer(n))).await);
        assert_eq!(answer["number"], (n + 1) as u64, "{answer}");
    }

    // The pre-queue holds numbers 1..=1,000, each once, shuffled.
    let mut order = vec![usize::MAX; EARLY];
    for (customer, number) in &numbers {
        let n: usize = customer
            .as_str()
            .trim_start_matches("customer-")
            .parse()
            .unwrap();
        order[*number as usize - 1] = n;
    }
    assert!(!order.contains(&usize::MAX), "numbers 1..=1,000 each once");
    // A random permutation of 1,000 has |rho| < 0.2 with overwhelming probability (sd ~ 0.03);
    // arrival order would give exactly 1.
    let rho = rank_correlation(&order);
    assert!(
        rho.abs() < 0.2,
        "pre-queue order follows arrival order (rho = {rho})"
    );

    // Exactly the published draw, which checks out, and which is what anyone recomputes.
    let records = records().await;
    let summary = records
        .draw_summary(&event)
        .await
        .unwrap()
        .expect("published");
    assert_eq!(summary.entrants, EARLY as u64);
    assert_eq!(summary.seed, seed.reveal());
    let mut chunks = Vec::new();
    for prefix in draw::all_prefixes(summary.prefix_length) {
        chunks.push(
            records
                .draw_chunk(&event, &prefix)
                .await
                .unwrap()
                .expect("a chunk"),
        );
    }
    assert_eq!(
        draw::verify(&summary, &chunks, Some(&seed.commitment())),
        vec![]
    );
    for (customer, number) in &numbers {
        assert_eq!(
            records
                .drawn_number(&event, &seed.entrant(customer))
                .await
                .unwrap(),
            Some(*number)
        );
    }
    let recomputed = draw::numbers(&seed, numbers.keys().map(|c| seed.entrant(c)));
    for (customer, number) in &numbers {
        assert_eq!(recomputed.numbers[&seed.entrant(customer)], *number);
    }
}

#[tokio::test]
async fn leaving_and_rejoining_before_opening_never_changes_the_draw() {
    const OTHERS: usize = 30;
    let queue = queue();
    let start = SystemTime::now();
    let event = pre_queue(&queue, start, (0..OTHERS).map(customer)).await;
    let api = api(queue.clone(), Arc::new(FixedClock::at(start))).await;
    let mallory = customer(1_000);

    let joined = join::handle(&api, join_request(&event, &mallory)).await;
    assert_eq!(joined.status(), StatusCode::CREATED);
    let first = body(&joined);
    let queue_id = first["queueId"].as_str().unwrap().to_owned();

    for attempt in 1..=50 {
        let left = poll::handle(&api, leave_request(&event, &mallory, &queue_id)).await;
        assert_eq!(left.status(), StatusCode::NO_CONTENT, "attempt {attempt}");
        let rejoined = join::handle(&api, join_request(&event, &mallory)).await;
        assert_eq!(rejoined.status(), StatusCode::CREATED, "attempt {attempt}");
        let answer = body(&rejoined);
        assert_eq!(answer["entrant"], first["entrant"], "{answer}");
        assert_eq!(answer["etaSeconds"], OPENS_IN.as_secs(), "{answer}");
        assert!(answer.get("number").is_none(), "{answer}");
    }

    // The poll before opening shows no more than the join did.
    let polled = poll::handle(&api, poll_request(&event, &mallory, &queue_id)).await;
    assert_eq!(polled.status(), StatusCode::OK);
    let polled = body(&polled);
    assert_eq!(polled["status"], "waiting");
    assert!(polled.get("number").is_none(), "{polled}");
    assert!(polled["opensAt"].is_string(), "{polled}");

    // The draw is the one of the list as it closed: the same as if Mallory had joined once.
    let everyone: Vec<CustomerId> = (0..OTHERS).map(customer).chain([mallory.clone()]).collect();
    let numbers = open_and_draw(&queue, &event, everyone.clone(), start).await;
    let seed = draw_seed(&event).await;
    let once = draw::numbers(&seed, everyone.iter().map(|c| seed.entrant(c)));
    assert_eq!(numbers[&mallory], once.numbers[&seed.entrant(&mallory)]);

    // After the draw Mallory's poll with the pre-queue ticket tells the number, and a ticket
    // that states it.
    let opened = FixedClock::at(start + OPENS_IN + Duration::from_secs(2));
    let api = lineup_tests::api(queue.clone(), Arc::new(opened)).await;
    let polled = body(&poll::handle(&api, poll_request(&event, &mallory, &queue_id)).await);
    assert_eq!(polled["number"], numbers[&mallory], "{polled}");
    let ticket = polled["queueId"].as_str().unwrap();
    assert!(
        ticket.starts_with(&format!("{}.", numbers[&mallory])),
        "{polled}"
    );
    assert!(polled.get("opensAt").is_none(), "{polled}");
}

#[tokio::test]
async fn the_draw_is_a_function_of_the_seed_and_the_entrants_alone() {
    const CUSTOMERS: usize = 30;
    let queue = queue();
    let start = SystemTime::now();
    let everyone = || (0..CUSTOMERS).map(customer);

    let first = pre_queue(&queue, start, everyone()).await;
    let seed = draw_seed(&first).await;
    let order = open_and_draw(&queue, &first, everyone(), start).await;

    // The first event's seed, the customers arriving in reverse: exactly the first draw.
    let third = fresh_event();
    queue
        .configure(&third, &admitting_nobody(start + OPENS_IN), &seed)
        .await
        .unwrap();
    let api = api(queue.clone(), Arc::new(FixedClock::at(start))).await;
    for n in (0..CUSTOMERS).rev() {
        let response = join::handle(&api, join_request(&third, &customer(n))).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    assert_eq!(
        open_and_draw(&queue, &third, everyone(), start).await,
        order
    );

    // Another event, another seed: the same customers draw another order (equal by chance with
    // probability 1/30!).
    let second = pre_queue(&queue, start, everyone()).await;
    assert_ne!(draw_seed(&second).await, seed);
    assert_ne!(
        open_and_draw(&queue, &second, everyone(), start).await,
        order
    );

    // Admission follows the numbers: re-configured (an operator's `event set`, which keeps the
    // seed) to admit 7 a second, the next tick admits numbers 1 to 7.
    queue
        .configure(
            &first,
            &EventSettings {
                admit_per_second: 7,
                ..EventSettings::opening_at(start + OPENS_IN)
            },
            &seed,
        )
        .await
        .unwrap();
    let later = start + OPENS_IN + Duration::from_secs(2);
    let tick = queue_admit_tick(&queue, &first, later).await;
    assert_eq!(tick.admitted, 7);
    assert_eq!(tick.status.serving, 7);
    let mut redis = redis().await;
    let mut admitted: Vec<String> = redis::cmd("ZRANGE")
        .arg(EventKeys::new(&first).offered)
        .arg(0)
        .arg(-1)
        .query_async(&mut redis)
        .await
        .unwrap();
    admitted.sort();
    let mut front: Vec<String> = order
        .iter()
        .filter(|(_, number)| **number <= 7)
        .map(|(customer, _)| customer.as_str().to_owned())
        .collect();
    front.sort();
    assert_eq!(admitted, front);
}

async fn queue_admit_tick(
    queue: &Arc<RedisQueue>,
    event: &EventId,
    now: SystemTime,
) -> lineup::application::ports::queue::TickReport {
    Admission::new(queue.clone()).await.tick(event, now).await
}

#[tokio::test]
async fn an_entrant_who_leaves_while_the_draw_runs_is_not_put_back() {
    let queue = queue();
    let start = SystemTime::now();
    let event = pre_queue(&queue, start, (0..20).map(customer)).await;
    let opened = start + OPENS_IN + Duration::from_secs(1);
    // A join after opening closes the pre-queue before any admitter has drawn it.
    let late = customer(500);
    match queue.join(&event, &late, opened).await.unwrap().standing {
        Standing::Waiting { number, .. } => assert_eq!(number, 21, "after the 20 entrants"),
        other => panic!("{other:?}"),
    }
    // An entrant waiting for the draw is told so, and can still leave.
    let leaver = customer(3);
    assert!(matches!(
        queue.standing(&event, &leaver, opened).await.unwrap(),
        Some(Standing::PreQueue { .. })
    ));
    assert!(queue.leave(&event, &leaver).await.unwrap());
    assert!(!queue.leave(&event, &leaver).await.unwrap(), "left once");
    // One who leaves and joins again before the numbers are written is an entrant again.
    let back = customer(4);
    assert!(queue.leave(&event, &back).await.unwrap());
    assert!(matches!(
        queue.join(&event, &back, opened).await.unwrap().standing,
        Standing::PreQueue { .. }
    ));

    Admission::new(queue.clone())
        .await
        .tick(&event, opened)
        .await;
    assert_eq!(queue.standing(&event, &leaver, opened).await.unwrap(), None);
    assert!(matches!(
        queue.standing(&event, &back, opened).await.unwrap(),
        Some(Standing::Waiting { .. } | Standing::Admitted { .. })
    ));
    // The draw still numbers 20 entrants (published, checkable): the leaver's number is passed.
    let summary = records().await.draw_summary(&event).await.unwrap().unwrap();
    assert_eq!(summary.entrants, 20);
    let mut redis = redis().await;
    let waiting: u64 = redis::cmd("ZCARD")
        .arg(EventKeys::new(&event).queue)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(
        waiting, 20,
        "19 entrants (the one who came back included) and the late joiner"
    );
}
