//! `confirm`: `POST /orders/{orderId}/confirm`, the payment provider's signed webhook. Marks the
//! order paid and its seats sold exactly once, writing the "ticket issued" outbox event.

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::confirm;
use lineup::application::confirm::ConfirmApi;
use lineup::application::http::origin::OriginGuard;
use lineup::domain::clock::SystemClock;
use lineup::domain::webhook_signature::WebhookSecrets;
use lineup::wiring::config::ConfirmConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    let config = ConfirmConfig::from_env()?;
    // Requests that skipped CloudFront are refused before anything else is read.
    let origin = OriginGuard::load(config.origin.clone()).await?;
    let queue = Arc::new(RedisQueue::open(&config.redis)?);
    let api = ConfirmApi {
        ledger: Arc::new(config.ledger.ledger()),
        admissions: queue.clone(),
        limits: queue,
        secret: WebhookSecrets::load(config.webhook_secret).await?,
        clock: Arc::new(SystemClock),
    };
    run(service_fn(|request: Request| {
        let (api, origin) = (api.clone(), origin.clone());
        async move {
            if let Some(refused) = origin.refuse(&request).await {
                return Ok(refused);
            }
            // Picks up a rotated webhook secret every few minutes (one request does it).
            api.secret.refresh_if_stale().await;
            Ok::<_, Error>(confirm::handle(&api, request).await)
        }
    }))
    .await
}
