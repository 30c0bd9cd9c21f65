//! What the edge knows of live events: the port the operator's commands write through
//! ([`LiveEvents`]), and its adapter for CloudFront's KeyValueStore ([`key_value_store`]), which
//! the viewer-request function (`edge/viewer-request.js`) reads to refuse the ids of events that
//! do not exist before any origin request. An event's id is added before the change that makes it
//! live ([`crate::event_admin::EventAdmin`]), so no event is ever live in the cache but unknown at
//! the edge; ids are never taken out (a closed or cancelled event's status and draw stay readable).
//! `lineup dev` keeps no store: its edge learns the same events from the events table
//! ([`crate::dev::edge_cache::live_events`]).

pub mod key_value_store;

use async_trait::async_trait;
use lineup::domain::ids::EventId;

/// The store of events the edge lets through.
#[async_trait]
pub trait LiveEvents: Send + Sync {
    /// Makes `event` known at the edge (nothing changes if it is already).
    async fn add(&self, event: &EventId) -> Result<(), LiveEventsError>;

    /// Whether the store holds `event`.
    async fn exists(&self, event: &EventId) -> Result<bool, LiveEventsError>;
}

/// The store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the store of live events {store} could not {action} event {event}")]
pub struct LiveEventsError {
    pub store: String,
    /// What was asked: "look up" or "add".
    pub action: &'static str,
    pub event: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Where the operator's commands find the store: only in AWS, where the stack made it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LiveEventsArgs {
    /// The CloudFront KeyValueStore of live events (the stack's `LiveEventsStoreArn` output): each
    /// event's id is put there before the change, so the edge lets its requests through. Needed
    /// with `--aws` (an event the store does not hold is refused at the edge); locally none.
    #[arg(
        long,
        env = "LINEUP_LIVE_EVENTS_STORE",
        value_name = "ARN",
        global = true
    )]
    pub live_events_store: Option<String>,
}

/// The store named on the command line could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LiveEventsSetupError {
    #[error("--live-events-store names a CloudFront KeyValueStore: it needs --aws")]
    NotInAws,
    #[error(
        "in AWS an event's URLs are refused at the edge unless the store of live events holds \
         it: pass --live-events-store <the stack's LiveEventsStoreArn output> \
         (or LINEUP_LIVE_EVENTS_STORE)"
    )]
    MissingInAws,
    #[error(transparent)]
    Endpoint(#[from] crate::endpoints::EndpointError),
}

impl LiveEventsArgs {
    /// The store a change writes: the one named, in AWS (where one must be); none locally.
    pub async fn store(
        &self,
        endpoints: &crate::endpoints::EndpointArgs,
    ) -> Result<Option<key_value_store::KeyValueStoreLiveEvents>, LiveEventsSetupError> {
        use crate::endpoints::AwsTarget;
        match (&self.live_events_store, endpoints.aws_target().await?) {
            (Some(store_arn), AwsTarget::Aws(config)) => Ok(Some(
                key_value_store::KeyValueStoreLiveEvents::new(&config, store_arn),
            )),
            (None, AwsTarget::Local(_)) => Ok(None),
            (Some(_), AwsTarget::Local(_)) => Err(LiveEventsSetupError::NotInAws),
            (None, AwsTarget::Aws(_)) => Err(LiveEventsSetupError::MissingInAws),
        }
    }
}
