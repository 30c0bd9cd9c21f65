//! What Lineup does, over ports: one module per function, the ports they use, and the one error
//! type. Nothing here names Redis, DynamoDB or an AWS SDK type; tests drive it through fakes.
//!
//! The functions (each `functions/<name>` runs the module of the same name):
//! - [`join`] and [`poll`]: joining the queue and claiming an admission, over [`queue_api`].
//! - [`admit`]: the scheduled admission loop.
//! - [`hold`]: holds and order status.
//! - [`checkout`]: paying for a hold (the provider's payment), or giving it back.
//! - [`confirm`]: the payment webhooks, settling an order exactly once: the generic one, and
//!   Stripe's ([`stripe_webhook`]).
//! - [`expire`]: the scheduled sweep of lapsed holds, and closing sold-out queues.
//! - [`status`]: the public, cacheable status, draw, seat map and layout.
//! - [`availability`]: the seats table's stream kept as the public seat map.
//! - [`outbox_stream`]: the outbox table's stream published as ticket messages.
//! - [`refund`]: every `refund_required` carried out at the provider, exactly once.
//! - [`reconcile`]: every open payment looked at again through the provider (lost webhooks,
//!   lapsing holds).
//!
//! What they share:
//! - [`ports`]: the traits adapters implement, one per capability.
//! - [`error`]: the one error type, and its one mapping to an HTTP status and error code.
//! - [`http`]: API Gateway requests and responses, and the CloudFront origin check.
//! - [`group_line`]: which priority group's line a joiner waits in.
//! - [`numbering`]: queue numbers handed out from ranges made durable first, so none is reused.
//! - [`restore`]: after a cache loss, putting an event and its customers back.
//! - [`rebuild`]: rebuilding the seat map from the seats table after a cache loss.
//! - [`seeding`]: writing an event's seats from a layout, never over a seat in use.
//! - [`layout_catalogue`]: the layouts and recent seat changes a `hold` instance keeps in memory.
//! - [`known_events`]: which events exist, cached per instance, so made-up ids cost little.
//! - [`rotating`]: secrets kept current in memory across rotations.
//! - [`settlement`]: what the payment webhooks share (their ports, ending a payer's admission).
//! - [`metrics`]: CloudWatch Embedded Metric Format lines.
//! - [`stream_batch`]: Lambda's DynamoDB stream batch contract (partial batch failures).

pub mod admit;
pub mod availability;
pub mod checkout;
pub mod confirm;
pub mod error;
pub mod expire;
pub mod group_line;
pub mod hold;
pub mod http;
pub mod join;
pub mod known_events;
pub mod layout_catalogue;
pub mod metrics;
pub mod numbering;
pub mod outbox_stream;
pub mod poll;
pub mod ports;
pub mod queue_api;
pub mod rebuild;
pub mod reconcile;
pub mod refund;
pub mod restore;
pub mod rotating;
pub mod seeding;
pub mod settlement;
pub mod status;
pub mod stream_batch;
pub mod stripe_webhook;

#[cfg(test)]
pub(crate) mod fakes;
#[cfg(test)]
mod tests;
