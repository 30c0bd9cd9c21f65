//! `admit`: run by an EventBridge schedule (at most once a minute); ticks every second for about
//! a minute, admitting the head of each open event's queue, publishing its status, saving its
//! cursor, drawing its pre-queue at opening, and rebuilding a seat availability projection the
//! cache lost. It signs nothing, so it is given no secret.

use std::sync::Arc;

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::admit::{admit_for_invocation, AdmissionPorts};
use lineup::application::rebuild::AvailabilityRebuild;
use lineup::application::restore::Restorer;
use lineup::domain::clock::SystemClock;
use lineup::wiring::config::AdmitConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    let config = AdmitConfig::from_env()?;
    let queue = Arc::new(RedisQueue::open(&config.redis)?);
    let records = Arc::new(config.events.records());
    let restorer = Restorer::new(queue.clone(), records.clone(), records.clone());
    let (seats, board) = (config.ledger.ledger(), queue.availability_board());
    let availability = AvailabilityRebuild {
        board: &board,
        layouts: &*records,
        states: &seats,
    };
    let (queue, records, restorer, config) = (&*queue, &*records, &restorer, &config);
    let availability = &availability;
    run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move {
            let ports = AdmissionPorts {
                admitter: queue,
                draw: queue,
                records,
                publication: records,
                restorer,
                availability: Some(availability),
            };
            admit_for_invocation(ports, &SystemClock, config, event).await
        },
    ))
    .await
}
