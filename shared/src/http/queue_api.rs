//! What the queue handlers (`join`, `poll`) need, built once per cold start and shared by every
//! request the function serves, and how a standing is shown to the customer.
//!
//! **No position before opening.** While the event has not opened (`opens_at > now`), a waiting
//! answer carries no `position`, and its `etaSeconds` (and so `Retry-After`) counts only to the
//! opening. Two reasons:
//!
//! - The place is meaningless until the pre-queue closes. Pre-queue places are drawn (from the
//!   event's seed and the customer id), so everyone who joins later before opening lands at a
//!   random rank, and on average half of them ahead: "number 40" at 9:00 may be number 900 at
//!   opening. A number that only grows would mislead.
//! - Shown, it is an oracle. The draw is fixed per customer, so trying again cannot change a
//!   place; but someone holding many accounts could join with all of them before opening, read
//!   which account drew best, and keep only that one, so the draw would favour whoever holds the
//!   most accounts. Without a position (and with an ETA that does not depend on it) nothing in a
//!   pre-opening answer differs between a good and a bad draw. After opening the draw is closed:
//!   positions are shown, and they only shrink.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use crate::access_token;
use crate::clock::{rfc3339, Clock};
use crate::ids::{CustomerId, EventId, QueueId};
use crate::queue::{Standing, WaitingLine};
use crate::signing::SigningKeys;
use crate::wait_policy;

#[derive(Clone)]
pub struct QueueApi {
    pub line: Arc<dyn WaitingLine>,
    pub key: SigningKeys,
    pub clock: Arc<dyn Clock>,
    /// For joining: a claim of the caller's JWT that must be `"true"` (e.g. `email_verified`),
    /// so throwaway accounts cannot queue; `None`: any signed-in customer may join.
    pub required_claim: Option<String>,
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
        /// Customers ahead; absent before opening (see the module doc).
        #[serde(skip_serializing_if = "Option::is_none")]
        position: Option<u64>,
        /// Seconds until admission; before opening, seconds until the opening.
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
                let before_opening = opens_at > now;
                // Before opening nothing may depend on the drawn place: not the body, not the
                // ETA, not `Retry-After`.
                let eta = if before_opening {
                    opens_at.duration_since(now).unwrap_or_default()
                } else {
                    let rate = measured_rate.unwrap_or(f64::from(configured_rate));
                    wait_policy::eta(position, rate, now, opens_at)
                };
                let body = StandingBody::Waiting {
                    queue_id,
                    position: (!before_opening).then_some(position),
                    eta_seconds: eta.as_secs_f64().ceil() as u64,
                    opens_at: before_opening.then(|| rfc3339(opens_at)),
                };
                (body, Some(wait_policy::next_poll(eta)))
            }
            Standing::Admitted { expires_at } => {
                let body = StandingBody::Admitted {
                    queue_id,
                    access_token: access_token::issue(
                        &self.key.current(),
                        event,
                        customer,
                        expires_at,
                    ),
                    expires_at: rfc3339(expires_at),
                };
                (body, None)
            }
            Standing::Expired => (StandingBody::Expired { queue_id }, None),
            Standing::Closed => (StandingBody::Closed { queue_id }, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;

    use super::*;
    use crate::clock::FixedClock;
    use crate::queue::Joined;
    use crate::LineupError;

    /// `describe` never calls the line; it only needs one to build a `QueueApi`.
    struct NoLine;

    #[async_trait]
    impl WaitingLine for NoLine {
        async fn join(
            &self,
            _: &EventId,
            _: &CustomerId,
            _: SystemTime,
        ) -> Result<Joined, LineupError> {
            unreachable!("describe does not join")
        }
        async fn standing(
            &self,
            _: &EventId,
            _: &CustomerId,
            _: SystemTime,
        ) -> Result<Option<Standing>, LineupError> {
            unreachable!("describe does not look up")
        }
        async fn leave(&self, _: &EventId, _: &CustomerId) -> Result<bool, LineupError> {
            unreachable!("describe does not leave")
        }
    }

    fn describe_waiting(
        position: u64,
        now: SystemTime,
        opens_at: SystemTime,
    ) -> (serde_json::Value, Option<Duration>) {
        let api = QueueApi {
            line: Arc::new(NoLine),
            key: crate::signing::SigningKey::new("a test key of at least thirty-two bytes")
                .unwrap()
                .into(),
            clock: Arc::new(FixedClock::at(now)),
            required_claim: None,
        };
        let (event, customer) = (
            EventId::parse("gala").unwrap(),
            CustomerId::parse("alice").unwrap(),
        );
        let queue_id = api.key.queue_id(&event, &customer);
        let standing = Standing::Waiting {
            position,
            measured_rate: Some(2.0),
            configured_rate: 50,
            opens_at,
        };
        let (body, retry_after) = api.describe(&event, &customer, &queue_id, &standing, now);
        (serde_json::to_value(body).unwrap(), retry_after)
    }

    #[test]
    fn before_opening_nothing_in_the_answer_depends_on_the_drawn_place() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let opens_at = now + Duration::from_secs(925);
        let best = describe_waiting(0, now, opens_at);
        let worst = describe_waiting(99_999, now, opens_at);
        assert_eq!(best, worst, "a good and a bad draw answer alike");
        let (body, retry_after) = best;
        assert!(body.get("position").is_none(), "no position: {body}");
        assert_eq!(body["etaSeconds"], 925, "the ETA counts to the opening");
        assert!(body["opensAt"].is_string(), "{body}");
        assert_eq!(retry_after, Some(Duration::from_secs(60)));
    }

    #[test]
    fn after_opening_the_position_and_its_eta_are_shown() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let (body, _) = describe_waiting(9, now, now - Duration::from_secs(1));
        assert_eq!(body["position"], 9);
        assert_eq!(body["etaSeconds"], 5, "10 customers at the measured 2/s");
        assert!(body.get("opensAt").is_none(), "{body}");
        // At the opening instant itself the event is open.
        let (body, _) = describe_waiting(3, now, now);
        assert_eq!(body["position"], 3);
    }
}
