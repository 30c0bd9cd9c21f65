//! `expire`: run by an EventBridge schedule. Returns lapsed holds' seats to AVAILABLE, marks
//! their orders EXPIRED, and closes the queue of any event that has sold out.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::clock::SystemClock;
use lineup::config::ExpireConfig;
use lineup::expiry::Expiry;
use lineup::queue::redis::RedisQueue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = ExpireConfig::from_env()?;
    let ledger = config.ledger.ledger();
    let queue = RedisQueue::open(&config.redis)?;
    let seats = queue.availability_board();
    let expiry = Expiry {
        sweeper: &ledger,
        seats: &seats,
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
