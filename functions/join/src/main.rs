//! `join`: `POST /events/{eventId}/queue`. Puts the caller in the event's queue.

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::join().await
}
