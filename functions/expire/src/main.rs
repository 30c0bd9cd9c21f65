//! `expire`: run by an EventBridge schedule. Returns lapsed holds' seats to AVAILABLE, marks
//! their orders EXPIRED, and closes the queue of any event that has sold out.

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::expire().await
}
