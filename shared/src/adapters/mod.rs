//! The ports implemented over real services. Each converts its store's errors into the
//! application's (unavailable or failed, keeping the source), so no Redis or SDK type crosses
//! into a port's signature.
//!
//! - [`redis`]: the queue and the seat map, one Lua script per operation.
//! - [`dynamo`]: the seat ledger and the events table.
//! - [`sqs`]: the ticket queue the outbox publishes to.
//! - [`stripe`]: the payment provider, over Stripe's REST API (or localstripe's).
//! - [`secrets_manager`] and [`secret_source`]: secrets fetched at cold start and on rotation.
//! - [`aws`]: lean AWS SDK clients (credentials and region from the environment, ring TLS).

pub mod aws;
pub mod dynamo;
pub mod redis;
pub mod secret_source;
pub mod secrets_manager;
pub mod sqs;
pub mod stripe;
