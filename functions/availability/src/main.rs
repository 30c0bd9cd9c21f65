//! `availability`: fed by the seats table's DynamoDB stream; sets each changed seat's bits in
//! the availability projection in Redis (the public seat map), and reports the batch for retry
//! if Redis fails (`ReportBatchItemFailures`; applying a batch again is harmless).

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::availability::handle;
use lineup::wiring::config::AvailabilityConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    let config = AvailabilityConfig::from_env()?;
    let board = RedisQueue::open(&config.redis)?.availability_board();
    let board = &board;
    run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move { handle(board, event).await },
    ))
    .await
}
