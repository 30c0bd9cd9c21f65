//! `join`: `POST /events/{eventId}/queue`. Puts the caller in the event's queue.

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::clock::SystemClock;
use lineup::config::Config;
use lineup::http::{join, QueueApi};
use lineup::queue::redis::RedisQueue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = Config::from_env()?;
    let api = QueueApi {
        line: Arc::new(RedisQueue::open(&config.redis)?),
        key: config.signing_key,
        clock: Arc::new(SystemClock),
    };
    run(service_fn(|request: Request| {
        let api = api.clone();
        async move { Ok::<_, Error>(join::handle(&api, request).await) }
    }))
    .await
}
