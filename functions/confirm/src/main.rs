//! `confirm`: `POST /orders/{orderId}/confirm`, the payment provider's signed webhook. Marks the
//! order paid and its seats sold exactly once, writing the "ticket issued" outbox event.

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::confirm().await
}
