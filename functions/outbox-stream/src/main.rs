//! `outbox-stream`: fed by the outbox table's DynamoDB stream; sends each new outbox event to the
//! FIFO ticket queue and reports the records to retry (`ReportBatchItemFailures`).

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};
use lineup::outbox::sqs::{PublisherConfig, SqsPublisher};
use lineup::outbox::stream::handle;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    // A missing queue URL stops the function here, before it takes a batch, with the variable
    // named in the log.
    let config = PublisherConfig::from_env()
        .inspect_err(|error| tracing::error!(error = %error, "outbox-stream cannot start"))?;
    // Honours AWS_ENDPOINT_URL, so the same binary runs against LocalStack or moto.
    let aws = lineup::aws::AwsSettings::from_env()?;
    let publisher = SqsPublisher::new(lineup::aws::sqs(&aws), config.queue_url);
    let publisher = &publisher;
    run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move { handle(publisher, event).await },
    ))
    .await
}
