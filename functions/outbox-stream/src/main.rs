//! `outbox-stream`: fed by the outbox table's DynamoDB stream; sends each new outbox event to the
//! FIFO ticket queue and reports the records to retry (`ReportBatchItemFailures`).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::outbox_stream().await
}
