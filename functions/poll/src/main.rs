//! `poll`: `GET /events/{eventId}/queue/{queueId}` (where am I; my access token once admitted)
//! and `DELETE` on the same path (leave the queue).

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::clock::SystemClock;
use lineup::config::QueueFunctionConfig;
use lineup::http::{poll, QueueApi};
use lineup::queue::redis::RedisQueue;
use lineup::signing::SigningKeys;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = QueueFunctionConfig::from_env()?;
    let api = QueueApi {
        line: Arc::new(RedisQueue::open(&config.redis)?),
        key: SigningKeys::load(config.signing_key).await?,
        clock: Arc::new(SystemClock),
        required_claim: None,
    };
    run(service_fn(|request: Request| {
        let api = api.clone();
        async move {
            // Picks up a rotated signing key every few minutes (one request does it).
            api.key.refresh_if_stale().await;
            Ok::<_, Error>(poll::handle(&api, request).await)
        }
    }))
    .await
}
