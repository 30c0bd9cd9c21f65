//! The `lineup` command: what developers and operators run beside the Lambda functions.
//!
//! - [`commands`]: the command line (clap): `dev`, `local-aws`, `seed`, `event`, `secrets`, `simulate`,
//!   `plan`, `verify-draw`.
//! - [`endpoints`]: where Redis, DynamoDB and SQS are (the local stack, or AWS signed in through
//!   the standard credential chain: `--profile`, `--region`), and the clients.
//! - [`local_stack`]: installing and starting the local stand-ins (redis-server, moto), with the
//!   installer compiled in and written to a cache directory, so the binary needs no checkout.
//! - [`local_aws`]: `lineup local-aws`, the tables, queues and secrets of `template.yaml` made
//!   on a LocalStack or moto under `events/env.json`'s names (`lineup dev` prepares its own so).
//! - [`venue`]: a seat layout (sections, rows, prices) to seed an event with.
//! - [`event_admin`]: seeding seats and opening, closing or re-pacing an event's queue.
//! - [`live_events`]: what the edge knows of live events (CloudFront's KeyValueStore), written
//!   by `lineup event` before a change.
//! - [`access_codes`]: `lineup event codes create|revoke|list`, the codes an event may require
//!   at join.
//! - [`priority_groups`]: `lineup event group add|set|remove|list|import`, presale groups
//!   admitted before everyone else.
//! - [`event_cancellation`]: `lineup event cancel`, the queue closed and every paid order
//!   refunded, once each.
//! - [`stream_pump`]: the local event source mappings (outbox table stream → `outbox-stream`,
//!   seats table stream → `availability`).
//! - [`dev`]: `lineup dev`, the whole on-sale on one machine: the API as API Gateway would call
//!   the functions, the schedules, the waiting-room page, a payment provider and a ticket desk.
//! - [`payment_reconciliation`]: `lineup payments reconcile`, an event's open payments looked at
//!   again through the provider, on demand.
//! - [`secret_revocation`]: `lineup secrets revoke-previous`, a leaked secret's previous value
//!   revoked at once.
//! - [`verify_draw`]: `lineup verify-draw`, an event's published pre-queue draw checked from its
//!   public routes, as any outsider can.
//!
//! Apart, in [`tools`]: the engineers' instruments, not part of running an on-sale
//! (`lineup simulate`, `lineup plan`).

pub mod access_codes;
pub mod commands;
pub mod dev;
pub mod endpoints;
pub mod event_admin;
pub mod event_cancellation;
pub mod live_events;
pub mod local_aws;
pub mod local_stack;
pub mod payment_reconciliation;
pub mod priority_groups;
pub mod secret_revocation;
pub mod stream_pump;
pub mod tools;
pub mod venue;
pub mod verify_draw;

/// An HTTP client builder for the CLI's own requests (the simulation's, the webhook stand-in's,
/// `verify-draw`'s): HTTPS through rustls with ring, like the AWS clients, whose crypto provider
/// is installed here once for the process.
pub fn http_client() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
