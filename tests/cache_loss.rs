//! Losing the cache (a Redis flush or failover) loses no place: the event comes back from its
//! durable record, every waiting customer who presents their ticket is back at their number,
//! customers whose number was called are admitted again for what is left of their session and
//! keep their seats, and nobody gains anything by presenting a ticket twice or after leaving.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lineup::adapters::redis::keys::EventKeys;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::event_records::EventRecords;
use lineup::application::ports::queue::StatusBoard;
use lineup::application::{join, poll};
use lineup::domain::clock::Clock;
use lineup::domain::ids::CustomerId;
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
        Some(lineup::domain::clock::rfc3339(sale.clock.now()).as_str())
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
    // Past every number the lost cache could have handed out (its durable range; this test's
    // clock stands still, so the range sized by the pace of joins is a large one).
    let late_number = joined["number"].as_u64().unwrap();
    assert!(
        late_number > WAITING as u64,
        "numbers never repeat after a restore: {late_number}"
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
    let summary = lineup::application::ports::event_records::DrawPublication::draw_summary(
        records.as_ref(),
        &sale.event,
    )
    .await
    .unwrap()
    .expect("published");
    assert_eq!(summary.entrants, 50);
    assert_eq!(summary.commitment, commitment_before);
}

/// The public routes over `queue` (this file's tests run a Redis of their own).
fn public_api_on(
    queue: &Arc<RedisQueue>,
    records: &Arc<lineup::adapters::dynamo::event_records::DynamoEventRecords>,
) -> lineup::application::status::StatusApi {
    lineup::wiring::backends::Queue::new(queue.clone(), records.clone()).status_api()
}

fn public_request(route_key: &str, event: &lineup::domain::ids::EventId) -> lambda_http::Request {
    let mut sample = route(&sample("status.json"), &[("eventId", event.as_str())], None);
    sample["routeKey"] = route_key.into();
    sample["requestContext"]["routeKey"] = route_key.into();
    request(&sample)
}

/// Joins through the handler, retrying what a client retries (503 with `Retry-After`, without
/// waiting it out here); the number its answer gave.
async fn join_number(
    api: &lineup::application::queue_api::QueueApi,
    event: &lineup::domain::ids::EventId,
    who: &CustomerId,
) -> (u64, String) {
    for _ in 0..200 {
        let response = join::handle(api, join_request(event, who)).await;
        if response.status() == StatusCode::SERVICE_UNAVAILABLE {
            assert!(retry_after(&response).is_some(), "a 503 says when to retry");
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        assert!(
            response.status().is_success(),
            "{who:?}: {}",
            body(&response)
        );
        let answer = body(&response);
        return (
            answer["number"].as_u64().expect("a number"),
            answer["queueId"].as_str().unwrap().to_owned(),
        );
    }
    panic!("{who:?} never got a number");
}

/// Everyone in `customers` joins at once; what each got.
async fn join_crowd(
    api: &lineup::application::queue_api::QueueApi,
    event: &lineup::domain::ids::EventId,
    customers: Vec<CustomerId>,
) -> Vec<(CustomerId, (u64, String))> {
    futures::future::join_all(customers.into_iter().map(|who| async move {
        let number = join_number(api, event, &who).await;
        (who, number)
    }))
    .await
}

/// An on-sale on a Redis of its own (the test loses it), opened as an operator opens it:
/// durable first (DynamoDB), then the cache.
struct OwnRedisSale {
    server: RedisServer,
    queue: Arc<RedisQueue>,
    sale: OnSale,
    records: Arc<lineup::adapters::dynamo::event_records::DynamoEventRecords>,
}

impl OwnRedisSale {
    async fn open(seats: usize, change: SettingsChange) -> Self {
        let server = RedisServer::start();
        let queue = Arc::new(RedisQueue::new(&server.url(), Duration::from_secs(2)).unwrap());
        let sale = OnSale::with_seats_on(seats, queue.clone()).await;
        let records = records().await;
        let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
        open_now(&admin, &sale, change).await;
        Self {
            server,
            queue,
            sale,
            records,
        }
    }
}

async fn open_now(admin: &EventAdmin<'_>, sale: &OnSale, change: SettingsChange) {
    admin
        .open(
            &sale.event,
            &change,
            sale.clock.now() - Duration::from_secs(60),
        )
        .await
        .expect("open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn numbers_handed_out_just_before_a_loss_are_never_handed_out_again() {
    logs();
    // Nobody is admitted: this is about numbers alone.
    let mut own = OwnRedisSale::open(
        0,
        SettingsChange {
            max_active: Some(1),
            rate: Some(1),
            ..SettingsChange::default()
        },
    )
    .await;
    let OwnRedisSale {
        server,
        queue,
        sale,
        ..
    } = &mut own;
    let admission = Admission::new(queue.clone()).await;
    let api = &sale.queue_api;
    let mut given: BTreeMap<u64, CustomerId> = BTreeMap::new();
    let mut tickets: BTreeMap<CustomerId, (u64, String)> = BTreeMap::new();
    let record = |given: &mut BTreeMap<u64, CustomerId>,
                  tickets: &mut BTreeMap<CustomerId, (u64, String)>,
                  wave: Vec<(CustomerId, (u64, String))>| {
        for (who, (number, ticket)) in wave {
            if let Some(other) = given.insert(number, who.clone()) {
                panic!("number {number} given to {other:?} and {who:?}");
            }
            tickets.insert(who, (number, ticket));
        }
    };
    let crowd = |from: usize, count: usize| (from..from + count).map(customer).collect::<Vec<_>>();
    let join_all_of = |customers: Vec<CustomerId>| join_crowd(api, &sale.event, customers);

    // 150 join, a tick saves the cursor, 150 more join after it: the numbers the old design
    // handed out again after a loss.
    record(&mut given, &mut tickets, join_all_of(crowd(0, 150)).await);
    admission.tick(&sale.event, sale.clock.now()).await;
    let wave = join_all_of(crowd(150, 150)).await;
    let before_loss = wave.iter().map(|(_, (n, _))| *n).max().unwrap();
    record(&mut given, &mut tickets, wave);
    assert_eq!(given.len(), 300);

    // FLUSHALL, and a crowd joins at once: the first to find the event missing restores it.
    sale.clock.advance(Duration::from_secs(1));
    flush(&server.url()).await;
    let wave = join_all_of(crowd(300, 200)).await;
    let lowest_after = wave.iter().map(|(_, (n, _))| *n).min().unwrap();
    assert!(
        lowest_after > before_loss,
        "after the loss numbering starts past every number given ({lowest_after} ≤ {before_loss})"
    );
    let before_second_loss = wave.iter().map(|(_, (n, _))| *n).max().unwrap();
    record(&mut given, &mut tickets, wave);

    // Joins racing a second loss: the server killed and started again empty while 200 join.
    sale.clock.advance(Duration::from_secs(1));
    let racing = tokio::spawn({
        let (api, event) = (sale.queue_api.clone(), sale.event.clone());
        async move { join_crowd(&api, &event, crowd(500, 200)).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    server.stop();
    server.restart();
    let wave = racing.await.unwrap();
    assert!(
        wave.iter().all(|(_, (n, _))| *n > before_second_loss),
        "numbers only go up"
    );
    record(&mut given, &mut tickets, wave);
    assert_eq!(given.len(), 700, "every customer has a number of their own");

    // The order of numbers is never changed by a restore: a customer who joined before both
    // losses presents their ticket and is back at their own number, ahead of everyone after.
    sale.clock.advance(Duration::from_secs(1));
    let early = customer(7);
    let (number, ticket) = tickets[&early].clone();
    let back = body(&poll::handle(api, poll_request(&sale.event, &early, &ticket)).await);
    assert_eq!(
        (back["status"].as_str(), back["number"].as_u64()),
        (Some("waiting"), Some(number)),
        "{back}"
    );
    assert_eq!(back["position"], 0, "{back}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_customer_called_before_the_loss_claims_after_it_even_past_the_claim_window() {
    logs();
    // Short windows: a 10 s claim, 20 s sessions.
    let mut own = OwnRedisSale::open(
        0,
        SettingsChange {
            max_active: Some(50),
            rate: Some(50),
            claim_seconds: Some(10),
            session_seconds: Some(20),
            ..SettingsChange::default()
        },
    )
    .await;
    let OwnRedisSale {
        server,
        queue,
        sale,
        records,
    } = &mut own;
    let mut tickets = BTreeMap::new();
    for (who, place) in join_crowd(
        &sale.queue_api,
        &sale.event,
        (0..100).map(customer).collect(),
    )
    .await
    {
        tickets.insert(who, place);
    }
    // The tick calls 1..=50. What the status shows as called is durable before it is shown.
    let admission = Admission::new(queue.clone()).await;
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!((tick.admitted, tick.status.serving), (50, 50));
    let stored = records.event(&sale.event).await.unwrap().unwrap();
    assert!(
        stored.cursor.serving >= tick.status.serving,
        "durable {} < shown {}",
        stored.cursor.serving,
        tick.status.serving
    );

    // Nobody has claimed yet. 5 s later Redis dies; an empty one replaces it (a failover to an
    // empty node), and the outage lasts 35 s: longer than the claim window and the session.
    sale.clock.advance(Duration::from_secs(5));
    server.stop();
    server.restart();
    sale.clock.advance(Duration::from_secs(35));
    let restored = admission
        .tick_after_outage(&sale.event, sale.clock.now())
        .await;
    assert_eq!(
        restored.status.serving, 50,
        "the called numbers stay called"
    );

    // 45 s after the call: the window (10 s) and a session (20 s) are over, but the outage
    // (35 s at least) is added: every called customer claims now.
    sale.clock.advance(Duration::from_secs(5));
    for n in 0..100 {
        let who = customer(n);
        let (number, ticket) = &tickets[&who];
        let answer =
            body(&poll::handle(&sale.queue_api, poll_request(&sale.event, &who, ticket)).await);
        if *number <= 50 {
            assert_eq!(answer["status"], "admitted", "{who:?} ({number}): {answer}");
            let token = answer["accessToken"].as_str().unwrap();
            assert!(!token.is_empty());
        } else {
            assert_eq!(answer["status"], "waiting", "{who:?} ({number}): {answer}");
            assert_eq!(answer["number"].as_u64(), Some(*number), "{answer}");
        }
    }
    // The next tick calls the rest in number order, after the restored sessions are over.
    sale.clock.advance(Duration::from_secs(60));
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!((tick.admitted, tick.status.serving), (50, 100));

    // Long after: a called customer who never came back finds their turn over, and asking again
    // reads nothing durable (the outcome is remembered).
    let (late_records, reads) = counting_records().await;
    let late_api = lineup::application::queue_api::QueueApi {
        restorer: Arc::new(lineup::application::restore::Restorer::new(
            queue.clone(),
            late_records.clone(),
            late_records,
        )),
        ..sale.queue_api.clone()
    };
    server.stop();
    server.restart();
    sale.clock.advance(Duration::from_secs(600));
    // Number 60 was called at the last tick; its window (30 s) was long over before this loss.
    let (who, (_, ticket)) = tickets.iter().find(|(_, (n, _))| *n == 60).unwrap();
    let mut answers = Vec::new();
    for _ in 0..20 {
        let response = poll::handle(&late_api, poll_request(&sale.event, who, ticket)).await;
        // The first request on the connection to the replaced server fails: retried.
        if response.status() != StatusCode::SERVICE_UNAVAILABLE {
            answers.push(body(&response)["status"].clone());
        }
    }
    assert!(answers.len() >= 18, "{answers:?}");
    assert!(
        answers.iter().all(|status| status == "expired"),
        "{answers:?}"
    );
    let reads = reads.take();
    assert!(
        reads.values().sum::<u64>() <= 2,
        "one restore read (and one draw lookup at most), not one per poll: {reads:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_the_cache_empty_no_route_says_the_event_does_not_exist_and_close_works() {
    logs();
    let mut own = OwnRedisSale::open(
        40,
        SettingsChange {
            max_active: Some(10),
            rate: Some(10),
            ..SettingsChange::default()
        },
    )
    .await;
    let OwnRedisSale {
        server,
        queue,
        sale,
        records,
    } = &mut own;
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
    let public = public_api_on(queue, records);
    let admission = Admission::new(queue.clone()).await;
    // Two shoppers admitted, the seat map built, the status published.
    let tokens = sale.admit(&[customer(1), customer(2)]).await;
    sale.sync_availability().await;
    admission.tick(&sale.event, sale.clock.now()).await;
    let status = |route: &'static str| {
        let public = public.clone();
        let event = sale.event.clone();
        async move { lineup::application::status::handle(&public, public_request(route, &event)).await }
    };
    assert_eq!(status("GET /events/{eventId}/status").await.status(), 200);
    assert_eq!(status("GET /events/{eventId}/seats").await.status(), 200);
    let queue_before = redis_hash(&server.url(), &EventKeys::new(&sale.event).settings).await;

    sale.clock.advance(Duration::from_secs(1));
    flush(&server.url()).await;
    let public = public_api_on(queue, records);
    let status = |route: &'static str| {
        let public = public.clone();
        let event = sale.event.clone();
        async move { lineup::application::status::handle(&public, public_request(route, &event)).await }
    };

    // The public routes: 503 with Retry-After (cached a second), or the answer rebuilt from the
    // durable layout; never 404 for an event that exists.
    let answer = status("GET /events/{eventId}/status").await;
    assert_eq!(
        (answer.status().as_u16(), error_code(&answer).as_str()),
        (503, "queue_recovering"),
        "{}",
        body(&answer)
    );
    assert!(retry_after(&answer).is_some());
    let answer = status("GET /events/{eventId}/seats").await;
    assert_eq!(
        (answer.status().as_u16(), error_code(&answer).as_str()),
        (503, "availability_rebuilding")
    );
    assert!(retry_after(&answer).is_some());
    assert_eq!(status("GET /events/{eventId}/layout").await.status(), 302);
    // A made-up event is still 404.
    let made_up = fresh_event();
    let unknown = lineup::application::status::handle(
        &public,
        public_request("GET /events/{eventId}/status", &made_up),
    )
    .await;
    assert_eq!(unknown.status(), 404);

    // Holds with a token from before the loss: best available waits for the seat map (503);
    // the token's admission is put back from the token itself once the event is restored.
    let best = sale.hold_best(&customer(1), &tokens[0], "Stalls", 1).await;
    assert_ne!(best.status(), 404, "{}", body(&best));
    assert_eq!(best.status(), 503, "{}", body(&best));
    assert!(retry_after(&best).is_some());
    let before_restore = sale.hold(&customer(2), &tokens[1], &[seat(2)]).await;
    assert_eq!(before_restore.status(), 503, "{}", body(&before_restore));
    admission.tick(&sale.event, sale.clock.now()).await;
    let held = sale.hold(&customer(2), &tokens[1], &[seat(2)]).await;
    assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));
    // Once only: the customer leaves, and the same token replayed opens nothing and holds
    // nothing (it put its holder back once already).
    use lineup::application::ports::queue::WaitingLine;
    assert!(queue.leave(&sale.event, &customer(2)).await.unwrap());
    let seats_before_replay = sale.seats().await;
    let replayed = sale.hold(&customer(2), &tokens[1], &[seat(3)]).await;
    assert_eq!(replayed.status(), 403, "{}", body(&replayed));
    assert_eq!(sale.seats().await, seats_before_replay);
    assert_eq!(
        status("GET /events/{eventId}/status").await.status(),
        200,
        "the status is back with the next tick"
    );

    // The operator closes the event whose cache was lost (here: lost again).
    flush(&server.url()).await;
    admin
        .close(&sale.event, sale.clock.now())
        .await
        .expect("close works on an event the cache lost");
    let restored = redis_hash(&server.url(), &EventKeys::new(&sale.event).settings).await;
    assert_eq!(restored["state"], "closed");
    let numbers = |hash: &BTreeMap<String, String>| -> u64 {
        hash.get("next_number")
            .map(|n| n.parse().unwrap())
            .unwrap_or(0)
    };
    assert!(
        numbers(&restored) >= numbers(&queue_before),
        "closing re-loaded the event, not a fresh one numbering from 0"
    );
    let refused = join::handle(&sale.queue_api, join_request(&sale.event, &customer(9))).await;
    assert_eq!(refused.status(), StatusCode::CONFLICT, "{}", body(&refused));
    let closed = body(&status("GET /events/{eventId}/status").await);
    assert_eq!(closed["state"], "closed", "{closed}");
    // Nothing ticks a closed event: lost again, its status comes from its record.
    flush(&server.url()).await;
    let public = public_api_on(queue, records);
    let answer = lineup::application::status::handle(
        &public,
        public_request("GET /events/{eventId}/status", &sale.event),
    )
    .await;
    assert_eq!(answer.status(), 200, "{}", body(&answer));
    assert_eq!(body(&answer)["state"], "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crowd_coming_back_after_a_loss_costs_a_bounded_number_of_durable_reads() {
    logs();
    let mut own = OwnRedisSale::open(
        0,
        SettingsChange {
            max_active: Some(100),
            rate: Some(100),
            ..SettingsChange::default()
        },
    )
    .await;
    let OwnRedisSale {
        server,
        queue,
        sale,
        ..
    } = &mut own;
    let crowd = join_crowd(
        &sale.queue_api,
        &sale.event,
        (0..500).map(customer).collect(),
    )
    .await;
    let admission = Admission::new(queue.clone()).await;
    admission.tick(&sale.event, sale.clock.now()).await;
    sale.clock.advance(Duration::from_secs(2));
    flush(&server.url()).await;

    // Four instances, each with its own memory, over a client that counts DynamoDB requests;
    // the whole crowd polls at once, spread over them, then again.
    let (counted, reads) = counting_records().await;
    let instances: Vec<lineup::application::queue_api::QueueApi> = (0..4)
        .map(|_| lineup::application::queue_api::QueueApi {
            restorer: Arc::new(lineup::application::restore::Restorer::new(
                queue.clone(),
                counted.clone(),
                counted.clone(),
            )),
            ..sale.queue_api.clone()
        })
        .collect();
    let event = &sale.event;
    let poll_all = || {
        futures::future::join_all(crowd.iter().enumerate().map(|(i, (who, (_, ticket)))| {
            let api = &instances[i % instances.len()];
            async move {
                loop {
                    let response = poll::handle(api, poll_request(event, who, ticket)).await;
                    if response.status() != StatusCode::SERVICE_UNAVAILABLE {
                        return body(&response);
                    }
                    assert_eq!(error_code(&response), "queue_recovering");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }))
    };
    let first = poll_all().await;
    assert!(
        first
            .iter()
            .all(|answer| answer["status"] == "waiting" || answer["status"] == "admitted"),
        "everyone is back"
    );
    let first_reads: u64 = reads.take().values().sum();
    let second = poll_all().await;
    let second_reads: u64 = reads.take().values().sum();
    // One restore read for the event (whoever took the duty), then at most one record read per
    // instance; nothing per customer.
    assert!(
        first_reads <= 1 + instances.len() as u64,
        "{first_reads} reads for 500 polls on 4 instances"
    );
    assert_eq!(second_reads, 0, "polling again reads nothing durable");
    assert_eq!(second.len(), 500);
}

async fn redis_hash(url: &str, key: &str) -> BTreeMap<String, String> {
    let mut redis = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut redis)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_node_replaced_by_an_empty_one_loses_no_number_and_no_call() {
    logs();
    let mut cluster = lineup_tests::redis_server::RedisCluster::start();
    let queue = Arc::new(
        RedisQueue::open(&lineup::adapters::redis::connection::RedisSettings {
            url: cluster.url(),
            timeout: Duration::from_secs(2),
            cluster: true,
        })
        .unwrap(),
    );
    let sale = OnSale::with_seats_on(0, queue.clone()).await;
    let records = records().await;
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
    open_now(
        &admin,
        &sale,
        SettingsChange {
            max_active: Some(20),
            rate: Some(20),
            ..SettingsChange::default()
        },
    )
    .await;
    let mut numbers: BTreeMap<u64, CustomerId> = BTreeMap::new();
    let mut tickets = BTreeMap::new();
    for (who, (number, ticket)) in join_crowd(
        &sale.queue_api,
        &sale.event,
        (0..100).map(customer).collect(),
    )
    .await
    {
        assert!(numbers.insert(number, who.clone()).is_none());
        tickets.insert(who, (number, ticket));
    }
    let admission = Admission::new(queue.clone()).await;
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!(tick.status.serving, 20);

    // The shard holding the event fails; a new, empty node takes its slots.
    sale.clock.advance(Duration::from_secs(2));
    let node = cluster.node_of(&EventKeys::new(&sale.event).settings);
    node.stop();
    node.restart();
    cluster.wait_until_ok();

    // The crowd carries on: new customers get numbers nobody had, called ones claim.
    for (who, (number, _)) in join_crowd(
        &sale.queue_api,
        &sale.event,
        (100..150).map(customer).collect(),
    )
    .await
    {
        if let Some(other) = numbers.insert(number, who.clone()) {
            panic!("number {number} given to {other:?} and {who:?}");
        }
    }
    for n in 0..100 {
        let who = customer(n);
        let (number, ticket) = &tickets[&who];
        let answer = loop {
            let response =
                poll::handle(&sale.queue_api, poll_request(&sale.event, &who, ticket)).await;
            if response.status() != StatusCode::SERVICE_UNAVAILABLE {
                break body(&response);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let expected = if *number <= 20 { "admitted" } else { "waiting" };
        assert_eq!(answer["status"], expected, "{who:?} ({number}): {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_a_loss_admission_gives_absent_numbers_time_to_come_back() {
    logs();
    // Paused: 100 customers wait with numbers, nobody called yet.
    let mut own = OwnRedisSale::open(
        0,
        SettingsChange {
            max_active: Some(100),
            rate: Some(10),
            ..SettingsChange::default()
        },
    )
    .await;
    let OwnRedisSale {
        server,
        queue,
        sale,
        records,
    } = &mut own;
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
    admin.pause(&sale.event, sale.clock.now()).await.unwrap();
    let mut by_number = BTreeMap::new();
    for (who, (number, ticket)) in join_crowd(
        &sale.queue_api,
        &sale.event,
        (0..100).map(customer).collect(),
    )
    .await
    {
        by_number.insert(number, (who, ticket));
    }
    let numbers: Vec<u64> = by_number.keys().copied().collect();
    let (third, fiftieth) = (numbers[2], numbers[49]);
    let come_back = |number: u64| {
        let (who, ticket) = by_number[&number].clone();
        let api = sale.queue_api.clone();
        let event = sale.event.clone();
        async move {
            let answer = body(&poll::handle(&api, poll_request(&event, &who, &ticket)).await);
            assert_eq!(answer["status"], "waiting", "{answer}");
        }
    };

    sale.clock.advance(Duration::from_secs(1));
    flush(&server.url()).await;
    admin.resume(&sale.event, sale.clock.now()).await.unwrap();
    let restored_at = sale.clock.now();
    // The 50th comes back at once; the 3rd is slower.
    come_back(fiftieth).await;
    let admission = Admission::new(queue.clone()).await;
    let tick = admission.tick(&sale.event, restored_at).await;
    assert_eq!(
        tick.admitted, 0,
        "nobody is called past absent numbers at once"
    );

    // 16 s after the restore the frontier is at 10 numbers: the 50th still waits.
    sale.clock.advance(Duration::from_secs(10));
    come_back(third).await;
    sale.clock.advance(Duration::from_secs(6));
    let tick = admission.tick(&sale.event, sale.clock.now()).await;
    assert_eq!(tick.admitted, 1, "the 3rd, back in time");
    assert_eq!(tick.status.serving, third);
    assert!(tick.status.serving < fiftieth);
    // At the configured rate (10 numbers a second) the frontier reaches the 50th within 5 s.
    let later = sale.clock.now() + Duration::from_secs(6);
    let tick = admission.tick(&sale.event, later).await;
    assert_eq!((tick.admitted, tick.status.serving), (1, fiftieth));
}

/// The draw marks its event drawn only if the event is still in the cache: lost between the
/// draw's numbers and the mark, the event must stay missing (and be re-loaded from its record by
/// the next tick), not come back as a settings hash with no state, which every script would read
/// as "no event" and no restore would replace.
#[tokio::test]
async fn an_event_lost_during_its_draw_is_not_half_recreated_by_the_mark() {
    use lineup::application::ports::queue::PreQueueDraw;
    let queue = lineup_tests::queue();
    let event = lineup_tests::open_event(&queue, std::time::SystemTime::now()).await;
    let settings = EventKeys::new(&event).settings;
    let mut redis = lineup_tests::redis().await;
    let () = redis::cmd("DEL")
        .arg(&settings)
        .query_async(&mut redis)
        .await
        .unwrap();

    queue
        .mark_drawn(&event, SystemTime::now(), SystemTime::now())
        .await
        .expect("a no-op, not an error");

    let exists: i64 = redis::cmd("EXISTS")
        .arg(&settings)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(exists, 0, "the mark made a settings hash for a lost event");
}

/// The draw was published, then the cache was lost before its numbers were written (the cursor
/// says the pre-queue closed with 300 and is not drawn): the event is re-loaded as drawn from
/// the published draw, nothing is drawn or published again (not a draw of the nobody the lost
/// cache has left), and the entrants come back from their pre-queue tickets at the published
/// numbers.
#[tokio::test]
async fn a_cache_lost_between_a_published_draw_and_its_numbers_keeps_the_published_draw() {
    use lineup::application::ports::event_records::{AdmissionCursor, DrawPublication};
    use lineup::application::restore::TicketRestore;
    use lineup::domain::draw;
    use lineup::domain::event_settings::EventSettings;
    use lineup::domain::signing::QueueTicket;

    const ENTRANTS: usize = 300;
    let queue = queue();
    let records = records().await;
    let event = fresh_event();
    let now = std::time::SystemTime::now();
    let opened = now - Duration::from_secs(20);
    let seed = records
        .save_settings(&event, &EventSettings::opening_at(opened), None)
        .await
        .unwrap();
    records
        .reserve_numbers(&event, ENTRANTS as u64)
        .await
        .unwrap();
    let cursor = AdmissionCursor {
        entrants: Some(ENTRANTS as u64),
        drawn: false,
        saved_at_ms: Some(lineup::domain::clock::unix_millis(opened)),
        ..AdmissionCursor::default()
    };
    records.save_cursor(&event, &cursor).await.unwrap();
    let drawn = draw::numbers(&seed, (0..ENTRANTS).map(|n| seed.entrant(&customer(n))));
    let (summary, chunks) = draw::publish(&drawn, &event, &seed, opened);
    records
        .publish_draw(&event, &summary, &chunks)
        .await
        .unwrap();

    // The admitter finds the event missing in the cache, re-loads it, and ticks it.
    let admission = Admission::new(queue.clone()).await;
    let tick = admission.tick(&event, now).await;
    assert!(!tick.needs_draw, "nothing left to draw");
    assert!(tick.drawn);
    assert_eq!(tick.status.entrants, Some(ENTRANTS as u64));
    assert_eq!(
        records.draw_summary(&event).await.unwrap(),
        Some(summary.clone()),
        "the published draw is as it was"
    );
    let status: serde_json::Value =
        serde_json::from_str(&queue.status_json(&event).await.unwrap().expect("a status")).unwrap();
    assert_eq!(status["draw"]["published"], true);
    assert_eq!(status["draw"]["entrants"], ENTRANTS as u64);
    assert_eq!(status["draw"]["seed"], summary.seed.as_str());
    assert!(records.event(&event).await.unwrap().unwrap().cursor.drawn);

    // An entrant comes back with their pre-queue ticket, at the published number.
    let restorer = restorer(queue.clone()).await;
    let entrant = customer(17);
    let ticket = QueueTicket {
        number: None,
        issued_at: opened - Duration::from_secs(60),
    };
    assert_eq!(
        restorer
            .restore_ticket(&event, &entrant, ticket, now)
            .await
            .unwrap(),
        TicketRestore::Restored
    );
    let published_number = drawn.numbers[&seed.entrant(&entrant)];
    assert_eq!(
        zset(&redis_url(), &EventKeys::new(&event).queue).await,
        vec![(entrant.as_str().to_owned(), published_number as f64)]
    );
}
