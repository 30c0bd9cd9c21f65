//! `poll`: `GET /events/{eventId}/queue/{queueId}` (where am I; my access token once admitted)
//! and `DELETE` on the same path (leave the queue).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::poll().await
}
