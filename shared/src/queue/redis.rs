//! The Redis adapter for every queue port. Each operation is exactly one round trip: one Lua
//! script (EVALSHA, loaded on first use) that checks and changes atomically, with all of the
//! event's keys under one hash tag. No "read, then write" from Rust.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use redis::{AsyncCommands, Script};

use super::connection::RedisConnection;
use super::keys::{EventKeys, OPEN_EVENTS};
use super::{
    AdmissionRegistry, Admitter, EventSettingsStore, Joined, Standing, TickReport, WaitingLine,
};
use crate::clock::{from_unix_millis, unix_millis};
use crate::config::RedisSettings;
use crate::event_settings::{EventSettings, QueueState};
use crate::ids::{CustomerId, EventId};
use crate::LineupError;

/// How long a lapsed admission is remembered, so its owner's poll says `expired` rather than 404.
const FORGET_LAPSED_AFTER: Duration = Duration::from_secs(60 * 60);

/// The queue scripts, compiled once per process. `Script` sends EVALSHA and loads the script
/// only when Redis answers NOSCRIPT (after a restart or failover).
struct Scripts {
    join: Script,
    standing: Script,
    leave: Script,
    is_admitted: Script,
    admit_tick: Script,
    close: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            join: Script::new(include_str!("scripts/join.lua")),
            standing: Script::new(include_str!("scripts/standing.lua")),
            leave: Script::new(include_str!("scripts/leave.lua")),
            is_admitted: Script::new(include_str!("scripts/is_admitted.lua")),
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

/// A negative random score: the pre-queue lottery ticket. Below every sequence number (which
/// starts at 1), and exact in a double (< 2^53), so no two tickets are equal in practice.
fn pre_queue_score() -> i64 {
    // The low 52 bits of a v4 UUID are all random (its fixed version and variant bits are higher).
    let random = (uuid::Uuid::new_v4().as_u128() as u64) & ((1 << 52) - 1);
    -(random as i64) - 1
}

fn unexpected(operation: &'static str, reply: &[String]) -> LineupError {
    LineupError::UnexpectedReply {
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
            .arg(pre_queue_score())
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [status] if status == "no_event" => Err(LineupError::EventNotFound),
            [status] if status == "closed" => Err(LineupError::QueueClosed),
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
    async fn is_admitted(
        &self,
        event: &EventId,
        customer: &CustomerId,
        expires_at: SystemTime,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let live: i64 = self
            .scripts
            .is_admitted
            .key(&keys.active)
            .arg(customer.as_str())
            .arg(unix_millis(expires_at))
            .arg(unix_millis(now))
            .invoke_async(&mut self.connection())
            .await?;
        Ok(live == 1)
    }

    async fn release_admission(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Result<bool, LineupError> {
        self.remove_customer(event, customer).await
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
        let fields = [
            ("state", settings.state.as_str().to_owned()),
            ("opens_at_ms", unix_millis(settings.opens_at).to_string()),
            ("max_active", settings.max_active.to_string()),
            ("admit_per_sec", settings.admit_per_second.to_string()),
            (
                "session_ms",
                (settings.session.as_millis() as u64).to_string(),
            ),
        ];
        let () = connection.hset_multiple(&keys.settings, &fields).await?;
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
            ])
            .query_async(&mut self.connection())
            .await?;
        let [state, opens_at, max_active, rate, session] = values.as_slice() else {
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
        }))
    }
}
