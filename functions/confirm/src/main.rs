//! `confirm`: `POST /orders/{orderId}/confirm`, the payment provider's signed webhook. Marks the
//! order paid and its seats sold exactly once, writing the "ticket issued" outbox event.

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::clock::SystemClock;
use lineup::config::RedisSettings;
use lineup::http::confirm::{self, ConfirmApi};
use lineup::ledger::dynamo::DynamoLedger;
use lineup::queue::redis::RedisQueue;
use lineup::webhook_signature::WebhookSecret;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let redis = RedisSettings::from_env()?;
    let api = ConfirmApi {
        ledger: Arc::new(DynamoLedger::from_env()?),
        admissions: Arc::new(RedisQueue::open(&redis)?),
        secret: WebhookSecret::from_env()?,
        clock: Arc::new(SystemClock),
    };
    run(service_fn(|request: Request| {
        let api = api.clone();
        async move { Ok::<_, Error>(confirm::handle(&api, request).await) }
    }))
    .await
}
