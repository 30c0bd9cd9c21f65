//! The rules of an on-sale, pure: nothing here reads a store, the network or the environment,
//! so every rule is tested in microseconds.
//!
//! - [`ids`]: validated identifiers (events, customers, seats, queue tickets).
//! - [`clock`]: the clock port and time formats, so tests can fix "now".
//! - [`event_settings`]: per-event on-sale settings (open, paused or closed, opening, caps, rate).
//! - [`draw`]: the pre-queue draw, committed before and published after, checkable by anyone.
//! - [`status`]: the public status document a waiting client reads through the CDN.
//! - [`wait_policy`]: how long a waiting customer should wait before reading again, and the ETA.
//! - [`layout`]: an event's sections, rows and seats in order, published under a version.
//! - [`seat`]: a seat and its state in the ledger.
//! - [`best_available`]: choosing n seats together in a section.
//! - [`keys`]: a secret's versions in force (current and, during a rotation, previous).
//! - [`signing`]: the HMAC key behind queue tickets and access tokens.
//! - [`access_token`]: the signed proof that a customer was admitted.
//! - [`webhook_signature`]: verifying (and, for tests, making) payment webhook signatures.
//! - [`money`]: amounts in ISO 4217 minor units, and in Stripe's unit.
//! - [`proof_of_work`]: the bot challenge an event may ask of every joiner.
//! - [`priority_group`]: presale groups, admitted before everyone else, each in a line of its own.
//! - [`seat_allocation`]: sections set aside for a priority group until its window ends.
//! - [`access_code`]: the codes an event may require at join, and their stored hashes.

pub mod access_code;
pub mod access_token;
pub mod best_available;
pub mod clock;
pub mod draw;
pub mod event_settings;
pub mod ids;
pub mod keys;
pub mod layout;
pub mod money;
pub mod priority_group;
pub mod proof_of_work;
pub mod seat;
pub mod seat_allocation;
pub mod signing;
pub mod status;
pub mod wait_forecast;
pub mod wait_policy;
pub mod webhook_signature;
