//! Losing the cache (a Redis flush or failover) loses no place: the event comes back from its
//! durable record, every waiting customer who presents their ticket is back at their number,
//! customers whose number was called are admitted again for what is left of their session and
//! keep their seats, and nobody gains anything by presenting a ticket twice or after leaving.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use lineup::clock::Clock;
use lineup::event_records::EventRecords;
use lineup::http::{join, poll};
use lineup::ids::CustomerId;
use lineup::queue::keys::EventKeys;
use lineup::queue::redis::RedisQueue;
use lineup::queue::StatusBoard;
use lineup_cli::event_admin::{EventAdmin, SettingsChange};
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::redis_server::RedisServer;
use lineup_tests::*;

const WAITING: usize = 1_000;
const ADMITTED: u64 = 100;

/// A fresh random order: sorted by a hash salted with a new random id.
fn shuffle(customers: &mut [CustomerId]) {
    use std::hash::{Hash, Hasher};
    let salt = uuid::Uuid::new_v4();
    customers.sort_by_key(|who| {
        let mut hash = std::collections::hash_map::DefaultHasher::new();
        (salt, who.as_str()).hash(&mut hash);
        hash.finish()
    });
}

async fn flush(url: &str) {
    let mut redis = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let () = redis::cmd("FLUSHALL")
        .query_async(&mut redis)
        .await
        .unwrap();
}

async fn zset(url: &str, key: &str) -> Vec<(String, f64)> {
    let mut redis = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut redis)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_a_flush_every_ticket_puts_its_holder_back_and_admitted_customers_keep_shopping() {
    logs();
    // A Redis of its own: this test flushes it.
    let server = RedisServer::start();
    let queue = Arc::new(RedisQueue::new(&server.url(), Duration::from_secs(2)).unwrap());
    let sale = OnSale::with_seats_on(40, queue.clone()).await;
    let records = records().await;
    // The event as an operator opens it: durable first (DynamoDB), then the cache.
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
    admin
        .open(
            &sale.event,
            &SettingsChange {
                max_active: Some(ADMITTED as u32),
                rate: Some(ADMITTED as u32),
                opens_at: None,
                session_seconds: Some(600),
                ..SettingsChange::default()
            },
            sale.clock.now() - Duration::from_secs(60),
        )
        .await
        .expect("open");

    // 1,000 join; each keeps the ticket its answer gave.
    let mut tickets: BTreeMap<CustomerId, (u64, String)> = BTreeMap::new();
    for n in 0..WAITING {
        let answer =
            body(&join::handle(&sale.queue_api, join_request(&sale.event, &customer(n))).await);
        let number = answer["number"].as_u64().expect("a number");
        tickets.insert(
            customer(n),
            (number, answer["queueId"].as_str().unwrap().to_owned()),
        );
    }
    // One tick admits the first 100; it saves the cursor (and its first checkpoint).
    let admission = Admission::new(queue.clone()).await;
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!((tick.admitted, tick.status.serving), (ADMITTED, ADMITTED));
    let stored = records
        .event(&sale.event)
        .await
        .unwrap()
        .expect("a durable record");
    assert_eq!(stored.cursor.serving, ADMITTED);
    assert_eq!(stored.cursor.next_number, WAITING as u64);

    // The first ten claim and hold a seat each.
    let shoppers: Vec<CustomerId> = (0..10).map(customer).collect();
    let mut orders = Vec::new();
    for (index, shopper) in shoppers.iter().enumerate() {
        let claim = body(
            &poll::handle(
                &sale.queue_api,
                poll_request(&sale.event, shopper, &tickets[shopper].1),
            )
            .await,
        );
        assert_eq!(claim["status"], "admitted", "{claim}");
        let token = claim["accessToken"].as_str().unwrap().to_owned();
        let held = sale.hold(shopper, &token, &[seat(index + 1)]).await;
        assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));
        orders.push(body(&held));
    }
    let seats_before = sale.seats().await;
    let orders_before = sale.orders().await;

    // The cache is lost.
    sale.clock.advance(Duration::from_secs(5));
    flush(&server.url()).await;
    let keys = EventKeys::new(&sale.event);
    assert!(zset(&server.url(), &keys.queue).await.is_empty());

    // The admitter finds the event open in DynamoDB and missing in the cache: it re-loads it.
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!(tick.status.serving, ADMITTED, "the cursor came back");
    assert_eq!(tick.admitted, 0, "nobody is waiting in the cache yet");
    // The status says so, so clients holding an older ticket know to present it.
    let status = tick.status.status(sale.event.as_str(), sale.clock.now());
    assert_eq!(
        status.restored_at.as_deref(),
        Some(lineup::clock::rfc3339(sale.clock.now()).as_str())
    );

    // Every customer presents their ticket, in a shuffled order; but one, number 150, who
    // only comes back once admission has passed their number.
    let silent = customer(149);
    assert_eq!(tickets[&silent].0, 150);
    let mut order: Vec<CustomerId> = tickets.keys().filter(|c| **c != silent).cloned().collect();
    shuffle(&mut order);
    let mut new_tokens = BTreeMap::new();
    for who in &order {
        let (number, ticket) = &tickets[who];
        let response = poll::handle(&sale.queue_api, poll_request(&sale.event, who, ticket)).await;
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "{who:?}: {}",
            body(&response)
        );
        let answer = body(&response);
        if *number <= ADMITTED {
            // Called before the loss: admitted again, until the session it could have had.
            assert_eq!(
                answer["status"], "admitted",
                "{who:?} (number {number}): {answer}"
            );
            new_tokens.insert(
                who.clone(),
                answer["accessToken"].as_str().unwrap().to_owned(),
            );
        } else {
            assert_eq!(answer["status"], "waiting", "{who:?}: {answer}");
            assert_eq!(answer["number"], *number, "{who:?} is back at its number");
        }
    }

    // The queue as stored is exactly the 899 waiting numbers, and 100 admissions are live.
    let waiting = zset(&server.url(), &keys.queue).await;
    let expected: Vec<(String, f64)> = tickets
        .iter()
        .filter(|(who, (number, _))| *number > ADMITTED && **who != silent)
        .map(|(who, (number, _))| (who.as_str().to_owned(), *number as f64))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let mut stored_waiting = waiting.clone();
    stored_waiting.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(stored_waiting, expected);
    let numbers: Vec<u64> = waiting.iter().map(|(_, number)| *number as u64).collect();
    let in_order: Vec<u64> = (ADMITTED + 1..=WAITING as u64)
        .filter(|n| *n != 150)
        .collect();
    assert_eq!(numbers, in_order, "in number order");
    assert_eq!(
        zset(&server.url(), &keys.active).await.len(),
        ADMITTED as usize
    );

    // The shoppers' holds are untouched: DynamoDB was never lost.
    assert_eq!(sale.seats().await, seats_before);
    assert_eq!(sale.orders().await, orders_before);
    // The restored admissions shop: one who had not held yet holds now, and a shopper pays.
    let newcomer = customer(50);
    let held = sale
        .hold(&newcomer, &new_tokens[&newcomer], &[seat(30)])
        .await;
    assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));
    let first = &orders[0];
    let paid = sale
        .pay(
            first["orderId"].as_str().unwrap(),
            first["amount"].as_i64().unwrap(),
        )
        .await;
    assert_eq!(body(&paid)["status"], "PAID", "{}", body(&paid));

    // Admission goes on from the restored cursor once the restored sessions are over: 101 to
    // 201, 150 skipped (it is not in the queue).
    sale.clock.advance(Duration::from_secs(700));
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!(tick.admitted, ADMITTED);
    assert_eq!(tick.status.serving, 2 * ADMITTED + 1);

    // Number 150 comes back now: its number was not called before the loss, so it goes back
    // to the queue, at the front, not straight to an admission outside the cap and the rate.
    let (_, ticket) = &tickets[&silent];
    let back =
        body(&poll::handle(&sale.queue_api, poll_request(&sale.event, &silent, ticket)).await);
    assert_eq!(back["status"], "waiting", "{back}");
    assert_eq!(
        (&back["number"], &back["position"]),
        (&serde_json::json!(150), &serde_json::json!(0))
    );

    // A ticket puts its holder back once: presented again after leaving, it finds nothing.
    let leaver = customer(WAITING - 1);
    let (_, ticket) = &tickets[&leaver];
    let left = poll::handle(&sale.queue_api, leave_request(&sale.event, &leaver, ticket)).await;
    assert_eq!(left.status(), StatusCode::NO_CONTENT);
    let again = poll::handle(&sale.queue_api, poll_request(&sale.event, &leaver, ticket)).await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND, "{}", body(&again));

    // A ticket issued after the restore restores nothing: its place was made in the new cache.
    let late = customer(WAITING + 1);
    let joined = body(&join::handle(&sale.queue_api, join_request(&sale.event, &late)).await);
    let late_ticket = joined["queueId"].as_str().unwrap().to_owned();
    assert_eq!(
        joined["number"],
        WAITING as u64 + 1,
        "numbers never repeat after a restore"
    );
    poll::handle(
        &sale.queue_api,
        leave_request(&sale.event, &late, &late_ticket),
    )
    .await;
    let gone = poll::handle(
        &sale.queue_api,
        poll_request(&sale.event, &late, &late_ticket),
    )
    .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);

    // A forged ticket (another number, the MAC of the real one) restores nothing either.
    let victim = customer(WAITING - 2);
    let (number, real) = &tickets[&victim];
    let forged = real.replacen(&format!("{number}."), "1.", 1);
    let refused = poll::handle(&sale.queue_api, poll_request(&sale.event, &victim, &forged)).await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_flush_before_opening_keeps_the_pre_queue_and_its_draw() {
    let server = RedisServer::start();
    let queue = Arc::new(RedisQueue::new(&server.url(), Duration::from_secs(2)).unwrap());
    let sale = OnSale::with_seats_on(0, queue.clone()).await;
    let records = records().await;
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
    let start = sale.clock.now();
    let opens_at = start + Duration::from_secs(600);
    admin
        .open(
            &sale.event,
            &SettingsChange {
                opens_at: Some(lineup_cli::event_admin::OpensAt::At(opens_at)),
                ..SettingsChange::default()
            },
            start,
        )
        .await
        .expect("open");
    let mut tickets = Vec::new();
    for n in 0..50 {
        let answer =
            body(&join::handle(&sale.queue_api, join_request(&sale.event, &customer(n))).await);
        assert!(answer.get("number").is_none());
        tickets.push((customer(n), answer["queueId"].as_str().unwrap().to_owned()));
    }
    let commitment_before = {
        let published = queue
            .status_json(&sale.event)
            .await
            .unwrap()
            .expect("a status");
        let status: serde_json::Value = serde_json::from_str(&published).unwrap();
        status["draw"]["commitment"].as_str().unwrap().to_owned()
    };

    sale.clock.advance(Duration::from_secs(5));
    flush(&server.url()).await;
    // Each entrant's poll re-loads the event and puts them back in the pre-queue.
    for (who, ticket) in &tickets {
        let answer =
            body(&poll::handle(&sale.queue_api, poll_request(&sale.event, who, ticket)).await);
        assert_eq!(answer["status"], "waiting", "{answer}");
        assert!(answer["entrant"].is_string(), "{answer}");
    }
    // The draw at opening numbers all 50 under the seed committed before the loss.
    let opened = opens_at + Duration::from_secs(1);
    let admission = Admission::new(queue.clone()).await;
    admission.tick(&sale.event, opened).await;
    let summary =
        lineup::event_records::DrawPublication::draw_summary(records.as_ref(), &sale.event)
            .await
            .unwrap()
            .expect("published");
    assert_eq!(summary.entrants, 50);
    assert_eq!(summary.commitment, commitment_before);
}
