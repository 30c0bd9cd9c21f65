//! Why a simulation could not run or finish. Customers' own surprises are not errors (they are
//! counted in the report); these are the failures that leave nothing to report. Each keeps its
//! cause as the source.

use super::api_client::CallError;

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),

    #[error("cannot lay out the venue")]
    Venue(#[from] crate::venue::VenueError),

    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),

    #[error("no Lineup API answers at {api}: start `lineup dev` first (or point --api at it)")]
    ApiUnreachable {
        api: String,
        #[source]
        source: CallError,
    },

    #[error(
        "{api} answered GET /dev/info with {status}: simulate needs a `lineup dev` server \
         (it seeds its own event and reads the local stack)"
    )]
    NotADevServer { api: String, status: u16 },

    #[error("{what} failed")]
    Api {
        what: &'static str,
        #[source]
        source: CallError,
    },

    #[error("{0} is not a usable event id")]
    EventId(String, #[source] lineup::domain::ids::InvalidId),

    #[error("cannot seed the seats of event {event}")]
    Seed {
        event: String,
        #[source]
        source: crate::event_admin::AdminError,
    },

    #[error("the dev server's Redis URL {url} is unusable")]
    RedisUrl {
        url: String,
        #[source]
        source: redis::RedisError,
    },

    #[error("cannot configure the queue of event {event}")]
    ConfigureQueue {
        event: String,
        #[source]
        source: crate::event_admin::AdminError,
    },

    #[error("cannot read table {table}")]
    Scan {
        table: String,
        #[source]
        source: Box<aws_sdk_dynamodb::Error>,
    },

    #[error("table {table} holds an item the simulation cannot read ({key}: {problem})")]
    UnreadableItem {
        table: String,
        key: String,
        problem: String,
    },

    #[error("the development Stripe key is not usable")]
    ProviderKey,

    #[error("cannot read payment {payment} at the dev server's provider")]
    Provider {
        payment: String,
        #[source]
        source: lineup::application::error::LineupError,
    },

    #[error("cannot write the report to {path}")]
    WriteReport {
        path: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot encode the report as JSON")]
    EncodeReport(#[source] serde_json::Error),

    #[error("--chaos cannot act on the dev server's Redis")]
    Chaos(#[source] super::chaos::TargetError),

    #[error("the chaos task panicked (a simulator bug)")]
    ChaosPanicked,
}
