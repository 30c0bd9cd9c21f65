//! Redis (ElastiCache Serverless, or a cluster): the queue and the seat map, each operation one
//! Lua script on keys sharing the event's hash tag.
//!
//! - [`connection`]: one connection (single node or cluster), with timeouts.
//! - [`keys`]: every key an event uses.
//! - [`queue`]: [`queue::RedisQueue`], the queue ports.
//! - [`availability`]: the seat map bitset.

pub mod availability;
pub mod connection;
pub mod error;
pub mod keys;
pub mod queue;
