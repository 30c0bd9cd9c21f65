//! The API Gateway (HTTP API, payload v2) plumbing the HTTP functions share (their handlers are
//! the modules of [`crate::application`] named after them: `join`, `poll`, `hold`, `confirm`,
//! `status`).
//!
//! - [`request`]: the caller (JWT `sub`), path parameters, bodies.
//! - [`response`]: JSON bodies, the error body, `Retry-After`.
//! - [`origin`]: refusing requests that did not come through CloudFront.

pub mod origin;
pub mod request;
pub mod response;
