//! Lineup: a fair virtual queue and a never-oversold seat ledger for ticket on-sales.
//!
//! Every Lambda function in `functions/` is a thin binary around this crate. The map:
//!
//! - [`config`]: the settings a function reads from its environment once, at cold start.
//! - [`logging`]: JSON or text logs, at the level Lambda is told.
//! - [`metrics`]: CloudWatch Embedded Metric Format lines (queue, admissions, holds, confirms, outbox lag).
//! - [`aws`]: lean AWS SDK clients (credentials and region from the environment, ring TLS).
//! - [`error`]: the one error type, and its one mapping to an HTTP status and error code.
//! - [`ids`]: validated identifiers (events, customers, queue entries).
//! - [`clock`]: the clock port, so tests can fix "now".
//! - [`secrets`]: the signing key and webhook secret, fetched from Secrets Manager and rotated.
//! - [`signing`]: the HMAC key behind queue ids and access tokens.
//! - [`access_token`]: the signed proof that a customer was admitted.
//! - [`event_settings`]: per-event on-sale settings (open, paused or closed, opening, caps, rate).
//! - [`event_records`]: the durable side of an event in DynamoDB: settings, cursor, audit, draw.
//! - [`draw`]: the pre-queue draw, committed before and published after, checkable by anyone.
//! - [`status`]: the public status document a waiting client reads through the CDN.
//! - [`queue`]: the queue ports and their Redis adapter (one Lua script per operation).
//! - [`numbering`]: queue numbers handed out from ranges made durable first, so none is reused.
//! - [`place_restore`]: after a cache loss, putting an event and its customers back.
//! - [`ledger`]: seats, holds, orders and payments: the ports and their DynamoDB adapter.
//! - [`layout`]: an event's sections, rows and seats in order, published under a version.
//! - [`seeding`]: writing an event's seats from a layout, never over a seat in use.
//! - [`availability`]: which seats are free, a bitset per event in Redis kept from the seats
//!   table's stream (the public seat map), and its rebuild after a cache loss.
//! - [`best_available`]: choosing n seats together in a section.
//! - [`layout_catalogue`]: the layouts and recent seat changes a `hold` instance keeps in memory.
//! - [`webhook_signature`]: verifying (and, for tests, making) payment webhook signatures.
//! - [`outbox`]: the outbox event, the SQS publisher and the DynamoDB Streams handler.
//! - [`expiry`]: the scheduled sweep of lapsed holds, and closing sold-out queues.
//! - [`wait_policy`]: how long a waiting customer should wait before polling again, and the ETA.
//! - [`admission`]: the admit loop the scheduled `admit` function runs.
//! - [`stream_batch`]: Lambda's DynamoDB stream batch contract (partial batch failures).
//! - [`http`]: the API Gateway handlers (`join`, `poll`, `hold`, `confirm`, the public routes)
//!   and their plumbing.

pub mod access_token;
pub mod admission;
pub mod availability;
pub mod aws;
pub mod best_available;
pub mod clock;
pub mod config;
pub mod draw;
pub mod error;
pub mod event_records;
pub mod event_settings;
pub mod expiry;
pub mod http;
pub mod ids;
pub mod layout;
pub mod layout_catalogue;
pub mod ledger;
pub mod logging;
pub mod metrics;
pub mod numbering;
pub mod outbox;
pub mod place_restore;
pub mod queue;
pub mod secrets;
pub mod seeding;
pub mod signing;
pub mod status;
pub mod stream_batch;
pub mod wait_policy;
pub mod webhook_signature;

pub use error::{HoldRefused, LineupError, PaymentRefused};
