//! The queue against a Redis Cluster, as ElastiCache Serverless runs it: every script's keys
//! share the event's hash tag (one slot), and the cluster client follows the slot map. Events
//! spread over the shards; the open-events set lives in a slot of its own.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lineup::adapters::redis::connection::RedisSettings;
use lineup::adapters::redis::keys::EventKeys;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::queue::{
    AdmissionRegistry, Admitter, EventSettingsStore, Standing, WaitingLine,
};
use lineup::domain::access_token;
use lineup::domain::event_settings::EventSettings;
use lineup_tests::*;

fn cluster_queue() -> Arc<RedisQueue> {
    let url = std::env::var("REDIS_CLUSTER_URL").unwrap_or_else(|_| {
        panic!("REDIS_CLUSTER_URL is not set: run the README's test command (scripts/test.sh), which starts a cluster")
    });
    let settings = RedisSettings {
        url,
        timeout: Duration::from_secs(2),
        cluster: true,
    };
    Arc::new(RedisQueue::open(&settings).expect("cluster client"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_queue_cycle_works_on_a_cluster_across_shards() {
    let queue = cluster_queue();
    let now = SystemTime::now();
    // Enough events that they land on different shards (slot = CRC16 of the hash tag).
    let events: Vec<_> = (0..12).map(|_| fresh_event()).collect();
    let url = std::env::var("REDIS_CLUSTER_URL").expect("checked above");
    let mut node = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let mut slots = std::collections::BTreeSet::new();
    for event in &events {
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(EventKeys::new(event).queue)
            .query_async(&mut node)
            .await
            .unwrap();
        slots.insert(slot / 5462); // three primaries, about 5,461 slots each
    }
    assert!(
        slots.len() > 1,
        "the events should spread over more than one shard"
    );

    for event in &events {
        let settings = EventSettings {
            admit_per_second: 5,
            ..EventSettings::opening_at(now - Duration::from_secs(1))
        };
        queue
            .configure(
                event,
                &settings,
                &lineup::domain::draw::DrawSeed::generate(),
            )
            .await
            .expect("configure");
        allow_numbers(&queue, event).await;
        for n in 0..10 {
            queue.join(event, &customer(n), now).await.expect("join");
        }
        let again = queue.join(event, &customer(3), now).await.unwrap();
        assert!(!again.newly_queued);
    }
    let open = queue.open_events().await.unwrap();
    assert!(events.iter().all(|event| open.contains(event)));

    for event in &events {
        let report = queue.admit_tick(event, now).await.expect("admit");
        assert_eq!((report.admitted, report.waiting), (5, 5));
        let Some(Standing::Admitted { expires_at }) =
            queue.standing(event, &customer(0), now).await.unwrap()
        else {
            panic!("customer 0 admitted");
        };
        let Some(Standing::Waiting { position, .. }) =
            queue.standing(event, &customer(7), now).await.unwrap()
        else {
            panic!("customer 7 waiting");
        };
        assert_eq!(position, 2);
        let token = access_token::issue(&signing_key(), event, &customer(0), expires_at);
        lineup::application::hold::check_admitted(
            &signing_key().into(),
            queue.as_ref(),
            Some(&token),
            event,
            &customer(0),
            now,
        )
        .await
        .expect("token accepted");
        assert!(queue
            .end_admission(event, &customer(0), expires_at)
            .await
            .unwrap());
        assert!(lineup::application::hold::check_admitted(
            &signing_key().into(),
            queue.as_ref(),
            Some(&token),
            event,
            &customer(0),
            now
        )
        .await
        .is_err());
        assert!(queue
            .close(event, lineup::domain::event_settings::ClosedReason::Closed)
            .await
            .unwrap());
    }
    let open = queue.open_events().await.unwrap();
    assert!(
        events.iter().all(|event| !open.contains(event)),
        "closed events leave the open set"
    );
}
