//! What the queue handlers (`join`, `poll`) need, built once per cold start and shared by every
//! request the function serves.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use crate::access_token;
use crate::clock::{rfc3339, Clock};
use crate::ids::{CustomerId, EventId, QueueId};
use crate::queue::{Standing, WaitingLine};
use crate::signing::SigningKey;
use crate::wait_policy;

#[derive(Clone)]
pub struct QueueApi {
    pub line: Arc<dyn WaitingLine>,
    pub key: SigningKey,
    pub clock: Arc<dyn Clock>,
}

/// A customer's standing as the HTTP contract shows it.
#[derive(Debug, Serialize)]
#[serde(
    rename_all = "camelCase",
    tag = "status",
    rename_all_fields = "camelCase"
)]
pub enum StandingBody {
    #[serde(rename = "waiting")]
    Waiting {
        queue_id: String,
        position: u64,
        eta_seconds: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        opens_at: Option<String>,
    },
    #[serde(rename = "admitted")]
    Admitted {
        queue_id: String,
        access_token: String,
        expires_at: String,
    },
    #[serde(rename = "expired")]
    Expired { queue_id: String },
    #[serde(rename = "closed")]
    Closed { queue_id: String },
}

impl QueueApi {
    /// The response body for a standing, and how long the client should wait before polling.
    /// Admitted customers get their signed access token here.
    pub fn describe(
        &self,
        event: &EventId,
        customer: &CustomerId,
        queue_id: &QueueId,
        standing: &Standing,
        now: SystemTime,
    ) -> (StandingBody, Option<std::time::Duration>) {
        let queue_id = queue_id.as_str().to_owned();
        match *standing {
            Standing::Waiting {
                position,
                measured_rate,
                configured_rate,
                opens_at,
            } => {
                let rate = measured_rate.unwrap_or(f64::from(configured_rate));
                let eta = wait_policy::eta(position, rate, now, opens_at);
                let body = StandingBody::Waiting {
                    queue_id,
                    position,
                    eta_seconds: eta.as_secs_f64().ceil() as u64,
                    opens_at: (opens_at > now).then(|| rfc3339(opens_at)),
                };
                (body, Some(wait_policy::next_poll(eta)))
            }
            Standing::Admitted { expires_at } => {
                let body = StandingBody::Admitted {
                    queue_id,
                    access_token: access_token::issue(&self.key, event, customer, expires_at),
                    expires_at: rfc3339(expires_at),
                };
                (body, None)
            }
            Standing::Expired => (StandingBody::Expired { queue_id }, None),
            Standing::Closed => (StandingBody::Closed { queue_id }, None),
        }
    }
}
