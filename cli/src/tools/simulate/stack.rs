//! The local stack behind `lineup dev`, and the simulation's own event on it: where Redis and
//! the DynamoDB emulator are (from `GET /dev/info`), seeding a fresh event's seats and opening
//! its queue (the operator's own use cases, [`crate::event_admin`]), so a run never touches the
//! demo event or an earlier run's, closing it afterwards, and reading back what was stored.

use std::time::{Duration, SystemTime};

use lineup::adapters::aws::AwsSettings;
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::{DynamoLedger, TableNames};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::domain::ids::EventId;
use lineup::domain::layout::SeatLayout;
use reqwest::StatusCode;

use super::api_client::{Api, CallError};
use super::stored::{self, Snapshot};
use super::SimulateError;
use crate::dev::DevInfo;
use crate::event_admin::{self, SettingsChange};

/// Bound on one Redis command.
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// The dev server's stack, connected to.
pub struct Stack {
    pub info: DevInfo,
    ledger: DynamoLedger,
    queue: RedisQueue,
    records: DynamoEventRecords,
}

impl Stack {
    /// Asks the server at `api` where its stack is (`GET /dev/info`), and connects to it.
    pub async fn find(api: &Api) -> Result<Self, SimulateError> {
        Self::connect(dev_info(api).await?)
    }

    fn connect(info: DevInfo) -> Result<Self, SimulateError> {
        let mut aws = AwsSettings::local(&info.aws_endpoint_url);
        aws.region = info.region.clone();
        let tables = TableNames {
            seats: info.tables.seats.clone(),
            orders: info.tables.orders.clone(),
            outbox: info.tables.outbox.clone(),
        };
        let ledger = DynamoLedger::new(lineup::adapters::aws::dynamodb(&aws), tables);
        let records = DynamoEventRecords::new(
            lineup::adapters::aws::dynamodb(&aws),
            info.tables.events.clone(),
        );
        let queue = RedisQueue::new(&info.redis_url, REDIS_TIMEOUT).map_err(|source| {
            SimulateError::RedisUrl {
                url: info.redis_url.clone(),
                source,
            }
        })?;
        Ok(Self {
            info,
            ledger,
            queue,
            records,
        })
    }

    fn admin(&self) -> event_admin::EventAdmin<'_> {
        event_admin::EventAdmin::new(&self.queue, &self.records, "lineup simulate")
    }

    /// Seeds the event's seats (all AVAILABLE), then opens its queue now, paced by `pacing`;
    /// returns when admission starts (the end of the pre-queue).
    pub async fn create_event(
        &self,
        event: &EventId,
        seats: &SeatLayout,
        pacing: &SettingsChange,
    ) -> Result<SystemTime, SimulateError> {
        event_admin::seed(
            &self.ledger,
            &self.records,
            &self.queue,
            event,
            seats,
            SystemTime::now(),
        )
        .await
        .map_err(|source| SimulateError::Seed {
            event: event.to_string(),
            source,
        })?;
        self.admin()
            .open(event, pacing, SystemTime::now())
            .await
            .map(|settings| settings.opens_at)
            .map_err(|source| SimulateError::ConfigureQueue {
                event: event.to_string(),
                source,
            })
    }

    /// Closes the event's queue once the run is over (the sweep closes it itself when every
    /// seat is sold; this covers a run that ends with seats left): the dev server's admit loop
    /// and sold-out check stop visiting it.
    pub async fn close_event(&self, event: &EventId) -> Result<(), SimulateError> {
        self.admin()
            .close(event, SystemTime::now())
            .await
            .map(|_| ())
            .map_err(|source| SimulateError::ConfigureQueue {
                event: event.to_string(),
                source,
            })
    }

    /// The event's orders and seats read once (see [`stored::read_once`]).
    pub async fn read_once(&self, event: &EventId) -> Result<Snapshot, SimulateError> {
        stored::read_once(self.ledger.client(), self.ledger.tables(), event.as_str()).await
    }

    /// Every settlement reconciliation made, all events together.
    pub async fn reconciled(&self) -> Result<Vec<stored::Reconciled>, SimulateError> {
        stored::reconciled(self.ledger.client(), self.ledger.tables()).await
    }

    /// The event's orders and seats as stored, read so that they agree with each other.
    pub async fn snapshot(&self, event: &EventId) -> Result<Snapshot, SimulateError> {
        stored::snapshot(self.ledger.client(), self.ledger.tables(), event.as_str()).await
    }
}

async fn dev_info(api: &Api) -> Result<DevInfo, SimulateError> {
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
