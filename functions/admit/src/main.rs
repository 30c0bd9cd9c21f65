//! `admit`: run by an EventBridge schedule (at most once a minute); ticks every second for about
//! a minute, admitting the head of each open event's queue, publishing its status, saving its
//! cursor, drawing its pre-queue at opening, and rebuilding a seat availability projection the
//! cache lost. It signs nothing, so it is given no secret.

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::admit().await
}
