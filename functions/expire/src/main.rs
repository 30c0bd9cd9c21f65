//! `expire`: run by an EventBridge schedule. Returns lapsed holds' seats to AVAILABLE, marks
//! their orders EXPIRED, and closes the queue of any event that has sold out.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::clock::SystemClock;
use lineup::config::RedisSettings;
use lineup::expiry::Expiry;
use lineup::ledger::dynamo::DynamoLedger;
use lineup::queue::redis::RedisQueue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let redis = RedisSettings::from_env()?;
    let ledger = DynamoLedger::from_env()?;
    let queue = RedisQueue::open(&redis)?;
    let expiry = Expiry {
        sweeper: &ledger,
        ledger: &ledger,
        events: &queue,
        settings: &queue,
        clock: &SystemClock,
    };
    let expiry = &expiry;
    run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move { expiry.handle(event).await },
    ))
    .await
}
