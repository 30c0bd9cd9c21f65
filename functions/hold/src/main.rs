//! `hold`: holding seats, exact or best available (`POST /events/{eventId}/holds`), releasing a
//! hold (`DELETE /events/{eventId}/holds/{orderId}`) and an order's status (`GET /orders/{orderId}`).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::hold().await
}
