//! Where the layers meet: each function's settings, read from the environment once at cold
//! start, the logging set-up, and the one place that builds each handler from its adapters.
//!
//! - [`config`]: the settings, validated (a bad one fails at cold start, not mid-request).
//! - [`logging`]: JSON or text logs, at the level Lambda is told.

pub mod config;
pub mod logging;
