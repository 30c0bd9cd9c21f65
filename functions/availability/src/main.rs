//! `availability`: fed by the seats table's DynamoDB stream; sets each changed seat's bits in
//! the availability projection in Redis (the public seat map), and reports the batch for retry
//! if Redis fails (`ReportBatchItemFailures`; applying a batch again is harmless).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::availability().await
}
