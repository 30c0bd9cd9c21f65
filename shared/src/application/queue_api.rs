//! What the queue handlers (`join`, `poll`) need, built once per cold start and shared by every
//! request the function serves, and how a standing is shown to the customer.
//!
//! **Numbers, and what a client does with them.** A waiting customer's answer carries their
//! queue `number` and a signed ticket (`queueId`) that states it. From then on the client reads
//! the public status through the CDN ([`crate::domain::status`]): its distance is `number − servingUpTo`
//! (leavers included: admission skips them), its ETA that distance at the status's advance rate.
//! When `servingUpTo` reaches its number it claims with one poll, which answers `admitted` with
//! the access token. `Retry-After` says when to read the status next.
//!
//! **No number before opening.** A customer who joins before opening is in the pre-queue, which
//! has no order until the draw at opening ([`crate::domain::draw`]): the answer carries no number, only
//! the customer's `entrant` hash, by which they find their number in the published draw, and its
//! ETA counts to the opening. Nothing in it differs between customers, so holding many accounts
//! tells nobody which would draw best; after the draw numbers are fixed and only get closer.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use crate::application::ports::access_codes::AccessCodes;
use crate::application::ports::queue::{Standing, WaitingLine};
use crate::application::restore::Restorer;
use crate::application::rotating::SigningKeys;
use crate::domain::access_token;
use crate::domain::clock::{rfc3339, Clock};
use crate::domain::ids::{CustomerId, EventId, QueueId};
use crate::domain::signing::QueueTicket;
use crate::domain::wait_policy;

/// What the `join` and `poll` handlers work with.
#[derive(Clone)]
pub struct QueueApi {
    /// The queue itself: join, look up, leave (Redis).
    pub line: Arc<dyn WaitingLine>,
    /// Re-loads events and customers the cache lost.
    pub restorer: Arc<Restorer>,
    /// The signing key's versions: signs and checks queue tickets, signs access tokens.
    pub key: SigningKeys,
    /// The time standings, tickets and ETAs are computed at.
    pub clock: Arc<dyn Clock>,
    /// For joining: a claim of the caller's JWT that must be `"true"` (e.g. `email_verified`),
    /// so throwaway accounts cannot queue; `None`: any signed-in customer may join.
    pub required_claim: Option<String>,
    /// For joining: a claim of the caller's JWT that, when `"true"`, spares the caller the
    /// event's proof-of-work (`LINEUP_CHALLENGE_EXEMPT_CLAIM`): the operator's identity provider
    /// grants it to customers who cannot run the page's solver (assistive technology, no
    /// JavaScript workers) and to support agents. `None`: nobody is exempt.
    pub challenge_exempt_claim: Option<String>,
    /// For joining an event that requires an access code: binds a code to the caller, durably
    /// (DynamoDB; docs/decisions/0030-access-codes.md).
    pub access_codes: Arc<dyn AccessCodes>,
}

/// A customer's standing as the HTTP contract shows it.
#[derive(Debug, Serialize)]
#[serde(
    rename_all = "camelCase",
    tag = "status",
    rename_all_fields = "camelCase"
)]
pub enum StandingBody {
    /// `"status": "waiting"`: in the pre-queue, or in the queue with a number.
    #[serde(rename = "waiting")]
    Waiting {
        /// The signed queue ticket: what the client polls with, and what restores its place.
        queue_id: String,
        /// The queue number; absent in the pre-queue, before the draw.
        #[serde(skip_serializing_if = "Option::is_none")]
        number: Option<u64>,
        /// Customers still waiting ahead (leavers not counted); absent in the pre-queue.
        #[serde(skip_serializing_if = "Option::is_none")]
        position: Option<u64>,
        /// The highest number called so far; absent in the pre-queue.
        #[serde(skip_serializing_if = "Option::is_none")]
        serving_up_to: Option<u64>,
        /// Pre-queue only: the customer's hash in the published draw.
        #[serde(skip_serializing_if = "Option::is_none")]
        entrant: Option<String>,
        /// Seconds until admission; in the pre-queue, seconds until the opening.
        eta_seconds: u64,
        /// Pre-queue only: when the draw runs and admission starts, RFC 3339 in UTC.
        #[serde(skip_serializing_if = "Option::is_none")]
        opens_at: Option<String>,
        /// The priority group whose line the customer waits in (its status is
        /// `/events/{eventId}.{group}/status`); absent: the event's own line.
        #[serde(skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    /// `"status": "admitted"`: the customer may shop, with the token.
    #[serde(rename = "admitted")]
    Admitted {
        /// The customer's queue ticket.
        queue_id: String,
        /// The signed access token the hold routes take (`X-Queue-Token`).
        access_token: String,
        /// When the admission ends, RFC 3339 in UTC.
        expires_at: String,
    },
    /// `"status": "expired"`: the admission (or the time to claim it) lapsed unused.
    #[serde(rename = "expired")]
    Expired {
        /// The customer's queue ticket.
        queue_id: String,
    },
    /// `"status": "closed"`: the event sold out or was closed while the customer waited.
    #[serde(rename = "closed")]
    Closed {
        /// The customer's queue ticket.
        queue_id: String,
    },
}

impl QueueApi {
    /// The same, sparing callers whose JWT has `claim` = `"true"` the event's proof-of-work
    /// (`None`: nobody).
    pub fn with_challenge_exempt_claim(mut self, claim: Option<String>) -> Self {
        self.challenge_exempt_claim = claim;
        self
    }

    /// The response body for a standing, and when the client should read the status again.
    /// `event` is the line the customer waits in (the event's own, or a priority group's), and
    /// `group_ticket_limit` that group's own ticket limit, signed into an admitted customer's
    /// token (`group_line::group_ticket_limit`).
    /// `ticket` is the ticket the customer holds (`None`: a new one is issued at `now`); a
    /// waiting customer whose ticket does not state their number yet gets one that does.
    /// Admitted customers get their signed access token here.
    pub fn describe(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket: Option<(&QueueId, QueueTicket)>,
        standing: &Standing,
        group_ticket_limit: Option<u32>,
        now: SystemTime,
    ) -> (StandingBody, Option<std::time::Duration>) {
        let number = match standing {
            Standing::Waiting { number, .. } => Some(*number),
            _ => None,
        };
        let queue_id = match ticket {
            Some((id, held)) if held.number == number || number.is_none() => id.clone(),
            // Same place, now with its number: keep the original issue time.
            Some((_, held)) => self.key.queue_ticket(
                event,
                customer,
                QueueTicket {
                    number,
                    issued_at: held.issued_at,
                },
            ),
            None => self.key.queue_ticket(
                event,
                customer,
                QueueTicket {
                    number,
                    issued_at: now,
                },
            ),
        };
        let queue_id = queue_id.as_str().to_owned();
        match standing {
            Standing::PreQueue { opens_at, entrant } => {
                let eta = opens_at.duration_since(now).unwrap_or_default();
                let body = StandingBody::Waiting {
                    queue_id,
                    number: None,
                    position: None,
                    serving_up_to: None,
                    entrant: Some(entrant.clone()),
                    eta_seconds: eta.as_secs_f64().ceil() as u64,
                    opens_at: Some(rfc3339(*opens_at)),
                    group: event.group().map(|group| group.to_string()),
                };
                (body, Some(wait_policy::next_status_read(eta)))
            }
            Standing::Waiting {
                number,
                position,
                serving,
                measured_advance,
                configured_rate,
                opens_at,
            } => {
                let advance = measured_advance.unwrap_or(f64::from(*configured_rate));
                let until_open = opens_at.duration_since(now).unwrap_or_default();
                let eta = until_open
                    + wait_policy::eta_for_distance(number.saturating_sub(*serving), advance);
                let body = StandingBody::Waiting {
                    queue_id,
                    number: Some(*number),
                    position: Some(*position),
                    serving_up_to: Some(*serving),
                    entrant: None,
                    eta_seconds: eta.as_secs_f64().ceil() as u64,
                    opens_at: None,
                    group: event.group().map(|group| group.to_string()),
                };
                (body, Some(wait_policy::next_status_read(eta)))
            }
            Standing::Admitted { expires_at } => {
                let body = StandingBody::Admitted {
                    queue_id,
                    // For the event, whichever line admitted the customer: its holds and its
                    // ticket limit are the event's.
                    access_token: access_token::issue_in_group(
                        &self.key.current(),
                        &event.event(),
                        customer,
                        *expires_at,
                        event.group().as_ref(),
                        group_ticket_limit,
                    ),
                    expires_at: rfc3339(*expires_at),
                };
                (body, None)
            }
            Standing::Expired => (StandingBody::Expired { queue_id }, None),
            Standing::Closed => (StandingBody::Closed { queue_id }, None),
        }
    }
}
