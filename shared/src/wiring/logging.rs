//! Logs as Lambda wants them: JSON lines when the function's log format is JSON
//! (`AWS_LAMBDA_LOG_FORMAT`, set by `LoggingConfig: LogFormat: JSON`), plain text otherwise, at
//! the level `AWS_LAMBDA_LOG_LEVEL` (or `RUST_LOG`) names; INFO by default. No timestamps: Lambda
//! adds its own.

use tracing::level_filters::LevelFilter;

/// Installs the subscriber. Call once, first thing in `main`.
pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()
        .and_then(|level| level.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT")
        .is_ok_and(|format| format.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .without_time();
    // A second call (tests) keeps the first subscriber.
    let _ = if json {
        builder.json().with_current_span(false).try_init()
    } else {
        builder.try_init()
    };
}
