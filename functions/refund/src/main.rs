//! `refund`: fed by the refund queue; carries out each `refund_required` at the payment provider,
//! exactly once, and hands back what could not be done now (`ReportBatchItemFailures`).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::refund().await
}
