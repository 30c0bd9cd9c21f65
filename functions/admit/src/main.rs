//! `admit`: run by an EventBridge schedule (at most once a minute); ticks every second for about
//! a minute, moving the head of each open event's queue into its active set. It signs nothing,
//! so it is given no secret.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::admission::admit_for_invocation;
use lineup::clock::SystemClock;
use lineup::config::AdmitConfig;
use lineup::queue::redis::RedisQueue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = AdmitConfig::from_env()?;
    let queue = RedisQueue::open(&config.redis)?;
    let (queue, config) = (&queue, &config);
    run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move {
            admit_for_invocation(queue, &SystemClock, config, event).await
        },
    ))
    .await
}
