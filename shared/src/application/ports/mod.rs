//! The ports: one small `Send + Sync` trait per capability the use cases need, with the types
//! they speak. Adapters implement them over real stores; unit tests, over in-memory fakes.
//!
//! - [`queue`]: the waiting line, admissions, the draw's numbers, restore (Redis).
//! - [`ledger`]: seats, holds, orders and payments (DynamoDB).
//! - [`event_records`]: an event's durable record: settings, cursor, audit, layout, draw.
//! - [`availability`]: the public seat map, a bitset per event.
//! - [`outbox`]: the outbox event and the publisher of ticket messages.
//! - [`payments`]: the payment provider (Stripe): payments for orders, cancels, refunds.
//! - [`refunds`]: refunds as Lineup records them, once each and never more than was paid.
//! - [`secrets`]: fetching a secret's current and previous versions.
//! - [`access_codes`]: the codes an event may require at join, bound to accounts (DynamoDB).

pub mod access_codes;
pub mod availability;
pub mod event_records;
pub mod ledger;
pub mod outbox;
pub mod payments;
pub mod queue;
pub mod refunds;
pub mod secrets;
