//! The one place each function's handler is assembled from adapters. The Lambda functions
//! ([`crate::wiring::lambda`]), `lineup dev` and the test support all build their handlers here,
//! so which adapter serves which port is written once.

use std::sync::Arc;

use crate::adapters::dynamo::access_codes::DynamoAccessCodes;
use crate::adapters::dynamo::event_records::DynamoEventRecords;
use crate::adapters::dynamo::DynamoLedger;
use crate::adapters::redis::availability::RedisAvailability;
use crate::adapters::redis::queue::RedisQueue;
use crate::application::admit::AdmissionPorts;
use crate::application::confirm::ConfirmApi;
use crate::application::expire::Expiry;
use crate::application::hold::HoldApi;
use crate::application::known_events::KnownEvents;
use crate::application::queue_api::QueueApi;
use crate::application::rebuild::AvailabilityRebuild;
use crate::application::restore::Restorer;
use crate::application::rotating::{SigningKeys, WebhookSecrets};
use crate::application::status::StatusApi;
use crate::domain::clock::Clock;
use crate::wiring::config::EventsTableConfig;

/// The adapters an on-sale runs on: Redis for the queue and the seat map, DynamoDB for the
/// events table and the seat ledger. A function builds only what it uses (see
/// [`crate::wiring::lambda`]); `lineup dev` and the tests build them all.
#[derive(Clone)]
pub struct Queue {
    /// The queue, admissions, the draw's numbers and the status board.
    pub queue: Arc<RedisQueue>,
    /// The events table: settings, cursors, layouts, the published draw.
    pub records: Arc<DynamoEventRecords>,
}

impl Queue {
    /// Over this Redis and this events table.
    pub fn new(queue: Arc<RedisQueue>, records: Arc<DynamoEventRecords>) -> Self {
        Self { queue, records }
    }

    /// Over `queue` and the events table a function's settings name.
    pub fn open(queue: RedisQueue, events: &EventsTableConfig) -> Self {
        Self::new(Arc::new(queue), Arc::new(events.records()))
    }

    /// Putting an event and its customers back after a cache loss.
    pub fn restorer(&self) -> Restorer {
        Restorer::new(
            self.queue.clone(),
            self.records.clone(),
            self.records.clone(),
        )
    }

    /// The access codes events may require at join, in the events table.
    pub fn access_codes(&self) -> DynamoAccessCodes {
        DynamoAccessCodes::in_events_table(&self.records)
    }

    /// The seat map in Redis.
    pub fn seat_map(&self) -> RedisAvailability {
        self.queue.availability_board()
    }

    /// `join` and `poll`: joining, the customer's standing, claiming, leaving.
    pub fn queue_api(
        &self,
        key: SigningKeys,
        clock: Arc<dyn Clock>,
        required_claim: Option<String>,
    ) -> QueueApi {
        QueueApi {
            line: self.queue.clone(),
            restorer: Arc::new(self.restorer()),
            key,
            clock,
            required_claim,
            challenge_exempt_claim: None,
            access_codes: Arc::new(self.access_codes()),
        }
    }

    /// `status`: the public status, draw, seat map and layout.
    pub fn status_api(&self) -> StatusApi {
        StatusApi {
            status: self.queue.clone(),
            seats: Arc::new(self.seat_map()),
            draw: self.records.clone(),
            layouts: self.records.clone(),
            layout_documents: Arc::default(),
            published_draws: Arc::default(),
            events: Arc::new(KnownEvents::new(self.records.clone(), self.records.clone())),
        }
    }

    /// `hold`: the seat map, holds and releases, over `ledger`.
    pub fn hold_api(
        &self,
        ledger: Arc<DynamoLedger>,
        key: SigningKeys,
        clock: Arc<dyn Clock>,
    ) -> HoldApi {
        HoldApi {
            ledger,
            admissions: self.queue.clone(),
            key,
            clock,
            seats: Arc::new(self.seat_map()),
            layouts: self.records.clone(),
            catalogue: Arc::default(),
        }
    }

    /// `confirm`: the payment webhook, over `ledger` (see [`confirm_api`]).
    pub fn confirm_api(
        &self,
        ledger: Arc<DynamoLedger>,
        secret: WebhookSecrets,
        clock: Arc<dyn Clock>,
    ) -> ConfirmApi {
        confirm_api(self.queue.clone(), ledger, secret, clock)
    }
}

/// `confirm`: the payment webhook, over `ledger`, asking `queue` whose admission a payment ends
/// and each event's ticket limit. (It reads no events table, so it needs no [`Queue`].)
pub fn confirm_api(
    queue: Arc<RedisQueue>,
    ledger: Arc<DynamoLedger>,
    secret: WebhookSecrets,
    clock: Arc<dyn Clock>,
) -> ConfirmApi {
    ConfirmApi {
        ledger: ledger.clone(),
        holds: ledger.clone(),
        refunds: ledger,
        admissions: queue.clone(),
        limits: queue,
        secret,
        stripe_secret: None,
        clock,
    }
}

/// What the scheduled `admit` function borrows for its loop: the queue, the events table, the
/// restorer and, for rebuilding a lost seat map, the seat ledger.
pub struct Admit {
    queue: Queue,
    restorer: Restorer,
    seat_map: RedisAvailability,
    ledger: Option<Arc<DynamoLedger>>,
}

impl Admit {
    /// Over `queue`; with `ledger`, a seat map the cache lost is rebuilt from it.
    pub fn new(queue: Queue, ledger: Option<Arc<DynamoLedger>>) -> Self {
        Self {
            restorer: queue.restorer(),
            seat_map: queue.seat_map(),
            queue,
            ledger,
        }
    }

    /// The seat-map rebuild, when a ledger was given.
    pub fn rebuild(&self) -> Option<AvailabilityRebuild<'_>> {
        let ledger = self.ledger.as_deref()?;
        Some(AvailabilityRebuild {
            board: &self.seat_map,
            layouts: &*self.queue.records,
            states: ledger,
        })
    }

    /// The admission loop's ports, with `rebuild` (from [`Admit::rebuild`]) if any.
    pub fn ports<'a>(&'a self, rebuild: Option<&'a AvailabilityRebuild<'a>>) -> AdmissionPorts<'a> {
        AdmissionPorts {
            admitter: &*self.queue.queue,
            draw: &*self.queue.queue,
            records: &*self.queue.records,
            publication: &*self.queue.records,
            restorer: &self.restorer,
            availability: rebuild,
        }
    }
}

/// What the scheduled `expire` function borrows: the seat ledger's sweep, the seat map and the
/// queue (to close sold-out events).
pub struct Expire {
    ledger: Arc<DynamoLedger>,
    queue: Arc<RedisQueue>,
    seat_map: RedisAvailability,
}

impl Expire {
    /// Over this ledger and this Redis.
    pub fn new(ledger: Arc<DynamoLedger>, queue: Arc<RedisQueue>) -> Self {
        Self {
            seat_map: queue.availability_board(),
            ledger,
            queue,
        }
    }

    /// The sweep, reading the time from `clock`.
    pub fn expiry<'a>(&'a self, clock: &'a dyn Clock) -> Expiry<'a> {
        Expiry {
            sweeper: &*self.ledger,
            seats: &self.seat_map,
            events: &*self.queue,
            settings: &*self.queue,
            clock,
        }
    }
}
