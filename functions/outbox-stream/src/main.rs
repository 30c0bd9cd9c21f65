//! `outbox-stream`: fed by the outbox table's DynamoDB stream; sends each new outbox event to the
//! FIFO ticket queue and reports the records to retry (`ReportBatchItemFailures`).

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use lineup::adapters::sqs::SqsPublisher;
use lineup::application::outbox_stream::handle;
use lineup::wiring::config::OutboxStreamConfig;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::wiring::logging::init();
    // A missing queue URL stops the function here, before it takes a batch; the runtime reports
    // the error, naming the variable.
    // AWS_ENDPOINT_URL is honoured, so the same binary runs against LocalStack or moto.
    let config = OutboxStreamConfig::from_env()?;
    let publisher = SqsPublisher::new(
        lineup::adapters::aws::sqs(&config.aws),
        config.publisher.queue_url,
    );
    let publisher = &publisher;
    run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move { handle(publisher, event).await },
    ))
    .await
}
