//! `hold`: holding seats, exact or best available (`POST /events/{eventId}/holds`), releasing a
//! hold (`DELETE /events/{eventId}/holds/{orderId}`) and an order's status (`GET /orders/{orderId}`).

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::hold;
use lineup::application::hold::HoldApi;
use lineup::application::http::origin::OriginGuard;
use lineup::domain::clock::SystemClock;
use lineup::domain::signing::SigningKeys;
use lineup::wiring::config::HoldConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    let config = HoldConfig::from_env()?;
    // Requests that skipped CloudFront are refused before anything else is read.
    let origin = OriginGuard::load(config.origin.clone()).await?;
    let queue = RedisQueue::open(&config.queue.redis)?;
    let api = HoldApi {
        ledger: Arc::new(config.ledger.ledger()),
        board: Arc::new(queue.availability_board()),
        admissions: Arc::new(queue),
        key: SigningKeys::load(config.queue.signing_key).await?,
        clock: Arc::new(SystemClock),
        layouts: Arc::new(config.events.records()),
        catalogue: Arc::default(),
    };
    run(service_fn(|request: Request| {
        let (api, origin) = (api.clone(), origin.clone());
        async move {
            if let Some(refused) = origin.refuse(&request).await {
                return Ok(refused);
            }
            // Picks up a rotated signing key every few minutes (one request does it).
            api.key.refresh_if_stale().await;
            Ok::<_, Error>(hold::handle(&api, request).await)
        }
    }))
    .await
}
