//! `status`: the public, cacheable routes: `GET /events/{eventId}/status` (the event's status,
//! one Redis read), the published pre-queue draw (`/draw`, `/draw/{prefix}`), the seat map's
//! availability (`/seats`, one Redis read) and the seat layout (`/layout`, `/layout/{version}`).
//! No JWT (only CloudFront's origin header): CloudFront serves these to the crowd and asks here
//! about once per cache period.

use std::sync::Arc;

use lambda_http::{run, service_fn, Error, Request};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::http::origin::OriginGuard;
use lineup::application::known_events::KnownEvents;
use lineup::application::status;
use lineup::application::status::PublicApi;
use lineup::wiring::config::StatusConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    let config = StatusConfig::from_env()?;
    // Requests that skipped CloudFront are refused before anything else is read.
    let origin = OriginGuard::load(config.origin.clone()).await?;
    let queue = RedisQueue::open(&config.redis)?;
    let records = Arc::new(config.events.records());
    let api = PublicApi {
        seats: Arc::new(queue.availability_board()),
        board: Arc::new(queue),
        draw: records.clone(),
        layouts: records.clone(),
        layout_documents: Arc::default(),
        events: Arc::new(KnownEvents::new(records.clone(), records)),
    };
    run(service_fn(|request: Request| {
        let (api, origin) = (api.clone(), origin.clone());
        async move {
            if let Some(refused) = origin.refuse(&request).await {
                return Ok(refused);
            }
            Ok::<_, Error>(status::handle(&api, request).await)
        }
    }))
    .await
}
