//! `join`: `POST /events/{eventId}/queue`. Puts the caller in the event's queue.

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::clock::SystemClock;
use lineup::config::JoinConfig;
use lineup::http::origin::OriginGuard;
use lineup::http::{join, QueueApi};
use lineup::place_restore::Restorer;
use lineup::queue::redis::RedisQueue;
use lineup::signing::SigningKeys;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = JoinConfig::from_env()?;
    // Requests that skipped CloudFront are refused before anything else is read.
    let origin = OriginGuard::load(config.origin.clone()).await?;
    let queue = Arc::new(RedisQueue::open(&config.queue.redis)?);
    let records = Arc::new(config.events.records());
    let api = QueueApi {
        line: queue.clone(),
        restorer: Arc::new(Restorer::new(queue, records.clone(), records)),
        key: SigningKeys::load(config.queue.signing_key).await?,
        clock: Arc::new(SystemClock),
        required_claim: config.required_claim,
    };
    run(service_fn(|request: Request| {
        let (api, origin) = (api.clone(), origin.clone());
        async move {
            if let Some(refused) = origin.refuse(&request).await {
                return Ok(refused);
            }
            // Picks up a rotated signing key every few minutes (one request does it).
            api.key.refresh_if_stale().await;
            Ok::<_, Error>(join::handle(&api, request).await)
        }
    }))
    .await
}
