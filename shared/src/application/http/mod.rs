//! The API Gateway (HTTP API, payload v2) side of Lambda functions: request parsing, JSON
//! responses and errors, and one handler module per function.
//!
//! - [`request`]: the caller (JWT `sub`), path parameters, bodies.
//! - [`response`]: JSON bodies, the error body, `Retry-After`.
//! - [`origin`]: refusing requests that did not come through CloudFront.
//! - [`queue_api`]: the dependencies the queue handlers share.
//! - [`join`]: `POST /events/{eventId}/queue`.
//! - [`poll`]: `GET` and `DELETE /events/{eventId}/queue/{queueId}`.
//! - [`public`]: the public, cacheable status and published draw (the `status` function).
//! - [`holds`]: the seat map, holds, releases and order status (the `hold` function).
//! - [`confirm`]: `POST /orders/{orderId}/confirm`, the payment webhook.

pub mod origin;
pub mod request;
pub mod response;
