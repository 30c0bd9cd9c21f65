//! `hold`: the seat map (`GET /events/{eventId}/seats`), holding seats
//! (`POST /events/{eventId}/holds`), releasing a hold (`DELETE /events/{eventId}/holds/{orderId}`)
//! and an order's status (`GET /orders/{orderId}`).

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::clock::SystemClock;
use lineup::config::Config;
use lineup::http::holds::{self, HoldApi};
use lineup::ledger::dynamo::DynamoLedger;
use lineup::queue::redis::RedisQueue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::logging::init();
    let config = Config::from_env()?;
    let api = HoldApi {
        ledger: Arc::new(DynamoLedger::from_env()?),
        admissions: Arc::new(RedisQueue::open(&config.redis)?),
        key: config.signing_key,
        clock: Arc::new(SystemClock),
        catalogue: Arc::default(),
    };
    run(service_fn(|request: Request| {
        let api = api.clone();
        async move { Ok::<_, Error>(holds::handle(&api, request).await) }
    }))
    .await
}
