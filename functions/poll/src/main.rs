//! `poll`: `GET /events/{eventId}/queue/{queueId}` (where am I; my access token once admitted)
//! and `DELETE` on the same path (leave the queue).

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::http::origin::OriginGuard;
use lineup::application::poll;
use lineup::application::queue_api::QueueApi;
use lineup::application::restore::Restorer;
use lineup::domain::clock::SystemClock;
use lineup::domain::signing::SigningKeys;
use lineup::wiring::config::PollConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    let config = PollConfig::from_env()?;
    // Requests that skipped CloudFront are refused before anything else is read.
    let origin = OriginGuard::load(config.origin.clone()).await?;
    let queue = Arc::new(RedisQueue::open(&config.queue.redis)?);
    let records = Arc::new(config.events.records());
    let api = QueueApi {
        line: queue.clone(),
        restorer: Arc::new(Restorer::new(queue, records.clone(), records)),
        key: SigningKeys::load(config.queue.signing_key).await?,
        clock: Arc::new(SystemClock),
        required_claim: None,
    };
    run(service_fn(|request: Request| {
        let (api, origin) = (api.clone(), origin.clone());
        async move {
            if let Some(refused) = origin.refuse(&request).await {
                return Ok(refused);
            }
            // Picks up a rotated signing key every few minutes (one request does it).
            api.key.refresh_if_stale().await;
            Ok::<_, Error>(poll::handle(&api, request).await)
        }
    }))
    .await
}
