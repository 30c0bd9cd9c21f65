#![warn(missing_docs)]
//! Lineup: a fair virtual queue and a never-oversold seat ledger for ticket on-sales.
//!
//! Every Lambda function in `functions/` is a thin binary around this crate. Four layers, each a
//! folder, each importing only from the layers above it in this list:
//!
//! - [`domain`]: the rules, pure: ids, the draw, the layout, best available, the wait policy,
//!   the public status, signing and tokens. No I/O, no store, no AWS.
//! - [`application`]: the ports (one small trait per capability) and the use cases over them, one
//!   module per function (`join`, `poll`, `admit`, `hold`, `confirm`, `expire`, `status`,
//!   `availability`, `outbox_stream`), with the one error type and its HTTP mapping.
//! - [`adapters`]: the ports implemented over Redis, DynamoDB, SQS and Secrets Manager.
//! - [`wiring`]: each function's configuration, read from the environment once, and the one
//!   place that builds its handler from adapters.

pub mod adapters;
pub mod application;
pub mod domain;
pub mod wiring;
