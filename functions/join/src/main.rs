//! `join`: `POST /events/{eventId}/queue`. Puts the caller in the event's queue.

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::clock::SystemClock;
use lineup::config::JoinConfig;
use lineup::http::{join, QueueApi};
use lineup::queue::redis::RedisQueue;
use lineup::signing::SigningKeys;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = JoinConfig::from_env()?;
    let api = QueueApi {
        line: Arc::new(RedisQueue::open(&config.queue.redis)?),
        key: SigningKeys::load(config.queue.signing_key).await?,
        clock: Arc::new(SystemClock),
        required_claim: config.required_claim,
    };
    run(service_fn(|request: Request| {
        let api = api.clone();
        async move {
            // Picks up a rotated signing key every few minutes (one request does it).
            api.key.refresh_if_stale().await;
            Ok::<_, Error>(join::handle(&api, request).await)
        }
    }))
    .await
}
