//! The `lineup` command: what developers and operators run beside the Lambda functions.
//!
//! - [`commands`]: the command line (clap): `dev`, `seed`, `event`, `simulate`.
//! - [`endpoints`]: where Redis, DynamoDB and SQS are (the local stack, or AWS signed in through
//!   the standard credential chain: `--profile`, `--region`), and the clients.
//! - [`local_stack`]: installing and starting the local stand-ins (redis-server, moto), with the
//!   installer compiled in and written to a cache directory, so the binary needs no checkout.
//! - [`venue`]: a seat layout (sections, rows, prices) to seed an event with.
//! - [`event_admin`]: seeding seats and opening, closing or re-pacing an event's queue.
//! - [`outbox_pump`]: the local event source mapping (outbox table stream → `outbox-stream`).
//! - [`dev`]: `lineup dev`, the whole on-sale on one machine: the API as API Gateway would call
//!   the functions, the schedules, the waiting-room page, a payment provider and a ticket desk.
//! - [`simulate`]: `lineup simulate`, a crowd driven through the local API, with a report and
//!   the invariants checked over what was stored.

pub mod commands;
pub mod dev;
pub mod endpoints;
pub mod event_admin;
pub mod local_stack;
pub mod outbox_pump;
pub mod simulate;
pub mod venue;
