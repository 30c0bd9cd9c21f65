//! `status`: the public, cacheable routes: `GET /events/{eventId}/status` (the event's status,
//! one Redis read), the published pre-queue draw (`/draw`, `/draw/{prefix}`), the seat map's
//! availability (`/seats`, one Redis read) and the seat layout (`/layout`, `/layout/{version}`).
//! No JWT (only CloudFront's origin header): CloudFront serves these to the crowd and asks here
//! about once per cache period.

#[tokio::main]
async fn main() -> Result<(), lineup::wiring::lambda::Error> {
    lineup::wiring::lambda::status().await
}
