//! The Redis adapter for every queue port. Each customer-facing and admission operation is exactly
//! one round trip: one Lua script (EVALSHA, loaded on first use) that checks and changes
//! atomically, with all of the event's keys under one hash tag. No "read, then write" from Rust.
//! The operator's `configure` and `close` make a second call, to the open-events set, which lives
//! outside every event's hash slot (a cluster cannot touch both in one script).
//!
//! The pre-queue draw: a customer who joins before opening is scored by `join.lua` from the
//! event's `draw_seed` and the customer id alone (SHA-1, 52 bits, negated), not by a fresh random
//! number per join, so leaving and joining again any number of times lands on the same place:
//! the draw cannot be re-rolled. The seed is 32 random bytes made here when the event is first
//! configured (written with HSETNX, so re-configuring never re-rolls it). It is not the signing
//! key, nor derived from it, because a later step publishes it after opening so anyone can check
//! the draw; until then it must stay secret (knowing it before opening lets one predict which of
//! many accounts draws best), which is also why [`EventSettings`] does not carry it.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use redis::{AsyncCommands, Script};

use super::connection::RedisConnection;
use super::keys::{EventKeys, OPEN_EVENTS};
use super::{
    AdmissionRegistry, Admitter, EventSettingsStore, Joined, LiveAdmission, Standing, TickReport,
    WaitingLine,
};
use crate::clock::{from_unix_millis, unix_millis};
use crate::config::RedisSettings;
use crate::event_settings::{EventSettings, QueueState};
use crate::ids::{CustomerId, EventId};
use crate::ledger::TicketLimits;
use crate::LineupError;

/// How long a lapsed admission is remembered, so its owner's poll says `expired` rather than 404.
const FORGET_LAPSED_AFTER: Duration = Duration::from_secs(60 * 60);

/// The queue scripts, compiled once per process. `Script` sends EVALSHA and loads the script
/// only when Redis answers NOSCRIPT (after a restart or failover).
struct Scripts {
    configure: Script,
    join: Script,
    standing: Script,
    leave: Script,
    is_admitted: Script,
    end_admission: Script,
    admit_tick: Script,
    close: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            configure: Script::new(include_str!("scripts/configure.lua")),
            join: Script::new(include_str!("scripts/join.lua")),
            standing: Script::new(include_str!("scripts/standing.lua")),
            leave: Script::new(include_str!("scripts/leave.lua")),
            is_admitted: Script::new(include_str!("scripts/is_admitted.lua")),
            end_admission: Script::new(include_str!("scripts/end_admission.lua")),
            admit_tick: Script::new(include_str!("scripts/admit_tick.lua")),
            close: Script::new(include_str!("scripts/close.lua")),
        }
    }
}

pub struct RedisQueue {
    connection: RedisConnection,
    scripts: Scripts,
}

impl RedisQueue {
    /// Builds the adapter without connecting (see [`RedisConnection`]). `timeout` bounds both
    /// connecting and each reply, so a request never hangs on Redis. Fails only on an unusable
    /// URL: a configuration error, reported at cold start.
    pub fn open(settings: &RedisSettings) -> Result<Self, redis::RedisError> {
        Ok(Self {
            connection: RedisConnection::open(&settings.url, settings.cluster, settings.timeout)?,
            scripts: Scripts::new(),
        })
    }

    /// A single (non-clustered) server at `redis_url`.
    pub fn new(redis_url: &str, timeout: Duration) -> Result<Self, redis::RedisError> {
        Self::open(&RedisSettings {
            url: redis_url.to_owned(),
            timeout,
            cluster: false,
        })
    }

    /// A handle on the same multiplexed connection (cheap to clone), for one call.
    fn connection(&self) -> RedisConnection {
        self.connection.clone()
    }

    /// Takes the customer out of the queue and the active set (leaving, or an admission ended).
    async fn remove_customer(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let removed: i64 = self
            .scripts
            .leave
            .key(&keys.queue)
            .key(&keys.active)
            .arg(customer.as_str())
            .invoke_async(&mut self.connection())
            .await?;
        Ok(removed > 0)
    }
}

/// A new pre-queue draw seed: 32 bytes as 64 hex digits, from two v4 UUIDs (the OS's CSPRNG;
/// 244 random bits, the rest are UUID version and variant bits). Only used if the event has no
/// seed yet.
fn new_draw_seed() -> String {
    format!(
        "{:032x}{:032x}",
        uuid::Uuid::new_v4().as_u128(),
        uuid::Uuid::new_v4().as_u128()
    )
}

fn unexpected(operation: &'static str, reply: &[String]) -> LineupError {
    LineupError::QueueReply {
        operation,
        reply: reply.join(","),
    }
}

fn parse_u64(operation: &'static str, reply: &[String], field: &str) -> Result<u64, LineupError> {
    field.parse().map_err(|_| unexpected(operation, reply))
}

/// Parses the `"waiting", position, measured_rate, admit_per_sec, opens_at_ms` tail shared by
/// the join and standing scripts.
fn waiting_standing(
    operation: &'static str,
    reply: &[String],
    fields: &[String],
) -> Result<Standing, LineupError> {
    let [position, measured_rate, configured_rate, opens_at] = fields else {
        return Err(unexpected(operation, reply));
    };
    Ok(Standing::Waiting {
        position: parse_u64(operation, reply, position)?,
        measured_rate: measured_rate.parse::<f64>().ok().filter(|rate| *rate > 0.0),
        configured_rate: configured_rate
            .parse()
            .map_err(|_| unexpected(operation, reply))?,
        opens_at: from_unix_millis(parse_u64(operation, reply, opens_at)?),
    })
}

fn admitted_standing(
    operation: &'static str,
    reply: &[String],
    expires_ms: &str,
) -> Result<Standing, LineupError> {
    // Scores come back as Redis doubles ("1764500000000"); parse through f64 to be safe.
    let expires_ms: f64 = expires_ms
        .parse()
        .map_err(|_| unexpected(operation, reply))?;
    Ok(Standing::Admitted {
        expires_at: from_unix_millis(expires_ms as u64),
    })
}

#[async_trait]
impl WaitingLine for RedisQueue {
    async fn join(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Joined, LineupError> {
        const OP: &str = "join";
        let keys = EventKeys::new(event);
        let reply: Vec<String> = self
            .scripts
            .join
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.admission)
            .arg(customer.as_str())
            .arg(unix_millis(now))
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [status] if status == "no_event" => Err(LineupError::EventNotFound),
            [status] if status == "closed" => Err(LineupError::QueueClosed),
            // Only an event configured before draw seeds existed has none: an operator's
            // `lineup event set <event>` gives it one. Never drawn without a seed (predictable).
            [status] if status == "no_draw_seed" => Err(unexpected(OP, &reply)),
            [status, expires_ms] if status == "admitted" => Ok(Joined {
                newly_queued: false,
                standing: admitted_standing(OP, &reply, expires_ms)?,
            }),
            [status, position, newly_queued, rest @ ..] if status == "waiting" => {
                let mut fields = vec![position.clone()];
                fields.extend_from_slice(rest);
                Ok(Joined {
                    newly_queued: newly_queued == "1",
                    standing: waiting_standing(OP, &reply, &fields)?,
                })
            }
            _ => Err(unexpected(OP, &reply)),
        }
    }

    async fn standing(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Option<Standing>, LineupError> {
        const OP: &str = "standing";
        let keys = EventKeys::new(event);
        let reply: Vec<String> = self
            .scripts
            .standing
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.admission)
            .arg(customer.as_str())
            .arg(unix_millis(now))
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [status] if status == "no_event" => Err(LineupError::EventNotFound),
            [status] if status == "not_found" => Ok(None),
            [status] if status == "expired" => Ok(Some(Standing::Expired)),
            [status] if status == "closed" => Ok(Some(Standing::Closed)),
            [status, expires_ms] if status == "admitted" => {
                admitted_standing(OP, &reply, expires_ms).map(Some)
            }
            [status, fields @ ..] if status == "waiting" => {
                waiting_standing(OP, &reply, fields).map(Some)
            }
            _ => Err(unexpected(OP, &reply)),
        }
    }

    async fn leave(&self, event: &EventId, customer: &CustomerId) -> Result<bool, LineupError> {
        self.remove_customer(event, customer).await
    }
}

#[async_trait]
impl Admitter for RedisQueue {
    async fn open_events(&self) -> Result<Vec<EventId>, LineupError> {
        let members: Vec<String> = self.connection().smembers(OPEN_EVENTS).await?;
        // Ids are validated when an event is configured; skip anything else rather than fail
        // every event's tick because of one bad member.
        Ok(members
            .iter()
            .filter_map(|raw| EventId::parse(raw).ok())
            .collect())
    }

    async fn admit_tick(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<TickReport, LineupError> {
        const OP: &str = "admit_tick";
        let keys = EventKeys::new(event);
        let reply: Vec<String> = self
            .scripts
            .admit_tick
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.admission)
            .arg(unix_millis(now))
            .arg(FORGET_LAPSED_AFTER.as_millis() as u64)
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [status] if status == "no_event" => Err(LineupError::EventNotFound),
            [admitted, active, waiting] => Ok(TickReport {
                admitted: parse_u64(OP, &reply, admitted)?,
                active: parse_u64(OP, &reply, active)?,
                waiting: parse_u64(OP, &reply, waiting)?,
            }),
            _ => Err(unexpected(OP, &reply)),
        }
    }
}

#[async_trait]
impl AdmissionRegistry for RedisQueue {
    async fn live_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
        now: SystemTime,
    ) -> Result<Option<LiveAdmission>, LineupError> {
        const OP: &str = "is_admitted";
        let keys = EventKeys::new(event);
        let reply: Vec<String> = self
            .scripts
            .is_admitted
            .key(&keys.active)
            .key(&keys.settings)
            .arg(customer.as_str())
            .arg(unix_millis(expires_at))
            .arg(unix_millis(now))
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [live] if live == "0" => Ok(None),
            [live, limit] if live == "1" => Ok(Some(LiveAdmission {
                expires_at,
                ticket_limit: match limit.as_str() {
                    "" => None,
                    limit => Some(limit.parse().map_err(|_| unexpected(OP, &reply))?),
                },
            })),
            _ => Err(unexpected(OP, &reply)),
        }
    }

    async fn end_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
    ) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let ended: i64 = self
            .scripts
            .end_admission
            .key(&keys.active)
            .arg(customer.as_str())
            .arg(unix_millis(expires_at))
            .invoke_async(&mut self.connection())
            .await?;
        Ok(ended == 1)
    }
}

#[async_trait]
impl TicketLimits for RedisQueue {
    async fn ticket_limit(&self, event: &EventId) -> Result<Option<u32>, LineupError> {
        let keys = EventKeys::new(event);
        let limit: Option<String> = self
            .connection()
            .hget(&keys.settings, "ticket_limit")
            .await?;
        limit
            .map(|raw| {
                raw.parse()
                    .map_err(|_| unexpected("ticket_limit", std::slice::from_ref(&raw)))
            })
            .transpose()
    }
}

#[async_trait]
impl EventSettingsStore for RedisQueue {
    async fn configure(
        &self,
        event: &EventId,
        settings: &EventSettings,
    ) -> Result<(), LineupError> {
        let keys = EventKeys::new(event);
        let mut connection = self.connection();
        // One script on the event's own slot: the settings, the ticket limit (set or removed)
        // and the draw seed (only if none is stored) change together.
        let _: i64 = self
            .scripts
            .configure
            .key(&keys.settings)
            .arg(settings.state.as_str())
            .arg(unix_millis(settings.opens_at))
            .arg(settings.max_active)
            .arg(settings.admit_per_second)
            .arg(settings.session.as_millis() as u64)
            .arg(
                settings
                    .ticket_limit
                    .map(|limit| limit.to_string())
                    .unwrap_or_default(),
            )
            .arg(new_draw_seed())
            .invoke_async(&mut connection)
            .await?;
        // The open-events set is outside the event's slot, so it is a second call; the admitter
        // re-reads settings inside its script, so a closed event in the set only costs a no-op tick.
        let _: i64 = match settings.state {
            QueueState::Open => connection.sadd(OPEN_EVENTS, event.as_str()).await?,
            QueueState::Closed => connection.srem(OPEN_EVENTS, event.as_str()).await?,
        };
        Ok(())
    }

    async fn close(&self, event: &EventId) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let mut connection = self.connection();
        let closed: i64 = self
            .scripts
            .close
            .key(&keys.settings)
            .invoke_async(&mut connection)
            .await?;
        let _: i64 = connection.srem(OPEN_EVENTS, event.as_str()).await?;
        Ok(closed == 1)
    }

    async fn settings(&self, event: &EventId) -> Result<Option<EventSettings>, LineupError> {
        const OP: &str = "settings";
        let keys = EventKeys::new(event);
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&keys.settings)
            .arg(&[
                "state",
                "opens_at_ms",
                "max_active",
                "admit_per_sec",
                "session_ms",
                "ticket_limit",
            ])
            .query_async(&mut self.connection())
            .await?;
        let [state, opens_at, max_active, rate, session, ticket_limit] = values.as_slice() else {
            return Err(unexpected(OP, &[]));
        };
        let Some(state) = state else { return Ok(None) };
        let shown: Vec<String> = values
            .iter()
            .map(|v| v.clone().unwrap_or_default())
            .collect();
        let number = |field: &Option<String>| -> Result<u64, LineupError> {
            field
                .as_deref()
                .and_then(|raw| raw.parse().ok())
                .ok_or_else(|| unexpected(OP, &shown))
        };
        Ok(Some(EventSettings {
            state: QueueState::parse(state).ok_or_else(|| unexpected(OP, &shown))?,
            opens_at: from_unix_millis(number(opens_at)?),
            max_active: number(max_active)? as u32,
            admit_per_second: number(rate)? as u32,
            session: Duration::from_millis(number(session)?),
            ticket_limit: ticket_limit
                .as_deref()
                .map(|raw| raw.parse::<u32>().map_err(|_| unexpected(OP, &shown)))
                .transpose()?,
        }))
    }
}
