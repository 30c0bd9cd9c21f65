//! The audit trail names the caller by its AWS identity (STS GetCallerIdentity, against moto
//! here), and an operator's change is recorded before it is applied: a change that then fails
//! leaves its entry and a `<action>-failed` one, never a change the trail does not name.

use std::time::SystemTime;

use lineup::adapters::aws::AwsSettings;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::queue::EventSettingsStore;
use lineup::domain::event_settings::QueueState;
use lineup_cli::endpoints::AwsTarget;
use lineup_cli::event_admin::{EventAdmin, SettingsChange};
use lineup_tests::redis_server::RedisServer;
use lineup_tests::{aws, fresh_event, records};

#[tokio::test]
async fn the_operator_is_the_callers_aws_identity() {
    let target = AwsTarget::Local(AwsSettings::local(&aws::endpoint_url()));
    let arn = target.caller_identity().await.expect("STS answers");
    // moto answers for its test credentials with its own account's user.
    assert!(arn.starts_with("arn:aws:"), "{arn}");
    assert!(
        arn.contains(":user/") || arn.contains(":assumed-role/"),
        "{arn}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_recorded_before_it_is_applied_and_a_failed_one_says_so() {
    // A Redis of this test's own that reads but refuses every write once full.
    let server = RedisServer::start();
    let queue =
        RedisQueue::new(&server.url(), std::time::Duration::from_secs(2)).expect("a Redis client");
    let records = records().await;
    let event = fresh_event();
    let admin = EventAdmin::new(
        &queue,
        records.as_ref(),
        "arn:aws:iam::123456789012:user/ops",
    );
    let now = SystemTime::now();
    admin
        .open(&event, &SettingsChange::default(), now)
        .await
        .expect("open");

    let mut redis = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query_async(&mut redis)
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut redis)
        .await
        .unwrap();

    let later = now + std::time::Duration::from_millis(5);
    let failed = admin.pause(&event, later).await;
    assert!(failed.is_err(), "{failed:?}");

    let history = admin.history(&event).await.unwrap();
    let actions: Vec<(&str, &str)> = history
        .iter()
        .map(|entry| (entry.action.as_str(), entry.operator.as_str()))
        .collect();
    let ops = "arn:aws:iam::123456789012:user/ops";
    assert_eq!(
        actions,
        [("open", ops), ("pause", ops), ("pause-failed", ops)],
        "{history:#?}"
    );
    // The cache refused the write: the event is still open there.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query_async(&mut redis)
        .await
        .unwrap();
    let settings = queue.settings(&event).await.unwrap().unwrap();
    assert_eq!(settings.state, QueueState::Open);
}
