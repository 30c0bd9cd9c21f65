//! The local stack behind `lineup dev`, and the simulation's own event on it: where Redis and
//! the DynamoDB emulator are (from `GET /dev/info`), seeding a fresh event's seats and opening
//! its queue, so a run never touches the demo event or an earlier run's.

use std::time::{Duration, SystemTime};

use lineup::aws::AwsSettings;
use lineup::event_settings::{EventSettings, QueueState};
use lineup::ids::EventId;
use lineup::ledger::dynamo::{DynamoLedger, TableNames};
use lineup::ledger::NewSeat;
use lineup::queue::redis::RedisQueue;
use lineup::queue::EventSettingsStore;
use reqwest::StatusCode;
use serde::Deserialize;

use super::api_client::{Api, CallError};
use super::SimulateError;

/// What `GET /dev/info` tells about the stack.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DevInfo {
    pub currency: String,
    pub hold_seconds: u64,
    pub redis_url: String,
    pub aws_endpoint_url: String,
    pub region: String,
    pub tables: Tables,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Tables {
    pub seats: String,
    pub orders: String,
    pub outbox: String,
}

impl DevInfo {
    pub async fn fetch(api: &Api) -> Result<Self, SimulateError> {
        let answer = api.dev_info().await.map_err(|source| match source {
            CallError::Network { .. } => SimulateError::ApiUnreachable {
                api: api.base().to_owned(),
                source,
            },
            other => SimulateError::Api {
                what: "GET /dev/info",
                source: other,
            },
        })?;
        if answer.status != StatusCode::OK {
            return Err(SimulateError::NotADevServer {
                api: api.base().to_owned(),
                status: answer.status.as_u16(),
            });
        }
        answer.json().map_err(|source| SimulateError::Api {
            what: "GET /dev/info",
            source,
        })
    }

    pub fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let mut settings = AwsSettings::local(&self.aws_endpoint_url);
        settings.region = self.region.clone();
        lineup::aws::dynamodb(&settings)
    }

    fn table_names(&self) -> TableNames {
        TableNames {
            seats: self.tables.seats.clone(),
            orders: self.tables.orders.clone(),
            outbox: self.tables.outbox.clone(),
        }
    }

    fn queue(&self) -> Result<RedisQueue, SimulateError> {
        RedisQueue::new(&self.redis_url, Duration::from_secs(2)).map_err(|source| {
            SimulateError::RedisUrl {
                url: self.redis_url.clone(),
                source,
            }
        })
    }
}

/// How the simulated event's queue admits customers.
#[derive(Debug, Clone, Copy)]
pub struct QueuePlan {
    pub max_active: u32,
    pub admit_per_second: u32,
    pub session: Duration,
}

/// Seeds the event's seats (all AVAILABLE), then opens its queue now.
pub async fn create_event(
    info: &DevInfo,
    event: &EventId,
    seats: &[NewSeat],
    plan: QueuePlan,
) -> Result<(), SimulateError> {
    DynamoLedger::new(info.dynamodb(), info.table_names())
        .seed_seats(event, seats)
        .await
        .map_err(|source| SimulateError::Seed {
            event: event.to_string(),
            source,
        })?;
    let settings = EventSettings {
        state: QueueState::Open,
        opens_at: SystemTime::now(),
        max_active: plan.max_active,
        admit_per_second: plan.admit_per_second,
        session: plan.session,
    };
    info.queue()?
        .configure(event, &settings)
        .await
        .map_err(|source| SimulateError::ConfigureQueue {
            event: event.to_string(),
            source,
        })
}

/// Closes the event's queue once the run is over (the sweep closes it itself when every seat
/// is sold; this covers a run that ends with seats left): the dev server's admit loop and
/// sold-out check stop visiting it.
pub async fn close_event(info: &DevInfo, event: &EventId) -> Result<(), SimulateError> {
    info.queue()?
        .close(event)
        .await
        .map(|_| ())
        .map_err(|source| SimulateError::ConfigureQueue {
            event: event.to_string(),
            source,
        })
}
