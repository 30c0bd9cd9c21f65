//! `checkout`: `POST /orders/{orderId}/payment` (the provider's payment for a held order) and
//! `DELETE /events/{eventId}/holds/{orderId}` (giving the hold back, its payment cancelled first).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::checkout().await
}
