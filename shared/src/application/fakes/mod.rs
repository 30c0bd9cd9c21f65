//! In-memory fakes of the ports that carry business decisions, for unit tests of the use cases
//! without Redis or DynamoDB. Each keeps its state in a mutex, answers as the real adapter does
//! (the same errors for the same situations), and can be told to fail, to play an outage.
//!
//! - [`access_codes`]: the access codes an event may require at join, and their bindings.
//! - [`admissions`]: live admissions and ticket limits (what `hold` and `confirm` ask the queue).
//! - [`ledger`]: the seat ledger (seats, holds, orders, payments, the sweep).
//! - [`records`]: event records, layouts and the published draw.
//! - [`seat_map`]: the availability board.
//! - [`payments`]: the payment provider (Stripe's behaviour where Lineup depends on it).
//! - [`outage`]: the outage every fake can play, and its controls ([`outage::Faulty`]).
//! - [`queue`]: the queue's ports where they are more than one Lua call (admitting, drawing,
//!   restoring, numbering, settings).

pub mod access_codes;
pub mod admissions;
pub mod ledger;
pub mod outage;
pub mod payments;
pub mod queue;
pub mod records;
pub mod seat_map;
