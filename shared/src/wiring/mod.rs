//! Where the layers meet: each function's settings, read from the environment once at cold
//! start, the logging set-up, and the one place that builds each handler from its adapters.
//!
//! - [`config`]: the settings, validated (a bad one fails at cold start, not mid-request).
//! - [`logging`]: JSON or text logs, at the level Lambda is told.
//! - [`backends`]: each function's handler assembled from its adapters, once.
//! - [`lambda`]: each Lambda function's whole start-up: config, adapters, handler, runtime.
//! - [`functions`]: the list of functions, which the scripts and the template are checked
//!   against.

pub mod backends;
pub mod config;
pub mod functions;
pub mod lambda;
pub mod logging;
