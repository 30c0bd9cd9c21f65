//! `expire`: run by an EventBridge schedule. Returns lapsed holds' seats to AVAILABLE, marks
//! their orders EXPIRED, and closes the queue of any event that has sold out.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::expire::Expiry;
use lineup::domain::clock::SystemClock;
use lineup::wiring::config::ExpireConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
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
