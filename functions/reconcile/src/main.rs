//! `reconcile`: every minute, every order with an open payment looked at again through the
//! payment provider (a lost webhook settled, an in-progress payment's hold kept, a lapsed hold's
//! payment cancelled before its seats go back).

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::reconcile().await
}
