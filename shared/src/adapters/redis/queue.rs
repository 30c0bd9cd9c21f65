//! The Redis adapter for every queue port. Each customer-facing and admission operation is exactly
//! one round trip: one Lua script (EVALSHA, loaded on first use) that checks and changes
//! atomically, with all of the event's keys under one hash tag. No "read, then write" from Rust.
//! The operator's `configure` and `close` make a second call, to the open-events set, which lives
//! outside every event's hash slot (a cluster cannot touch both in one script); an admit tick
//! makes a second call too, to publish the event's status.
//!
//! The pre-queue is a set with no order until it closes at opening; the draw (run by the
//! admitter, [`crate::application::admit`]) then writes its entrants' numbers. See [`crate::domain::draw`].

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use redis::{AsyncCommands, Script};

use crate::adapters::redis::connection::RedisSettings;
use crate::adapters::redis::connection::{RedisConnection, RedisCredentials};
use crate::adapters::redis::keys::{EventKeys, OPEN_EVENTS};
use crate::application::admit::{EntrantPages, PreQueueSize};
use crate::application::error::{ChallengeRefused, LineupError};
use crate::application::ports::event_records::EventRecord;
use crate::application::ports::ledger::TicketLimits;
use crate::application::ports::queue::{
    AdmissionRegistry, Admitter, EventSettingsStore, Joined, LiveAdmission, NumberRange,
    NumberRanges, PlaceRestorer, PreQueueDraw, RestoreContext, RestoreDone, RestoreOutcome,
    RestoredPlace, Standing, StatusBoard, TickMode, TickReport, WaitingLine,
};
use crate::domain::access_code::CodeShown;
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::draw::DrawSeed;
use crate::domain::event_settings::{ClosedReason, EventSettings, QueueState};
use crate::domain::ids::{CustomerId, EventId, GroupName};
use crate::domain::priority_group::PriorityGroups;
use crate::domain::proof_of_work::{ChallengeDifficulty, WorkShown};
use crate::domain::status::{GroupsServed, StatusInputs};
use crate::domain::wait_forecast::PaceWindows;

/// The event's settings field naming its priority groups' lines, in order (`fanclub,card`).
const GROUP_LINES: &str = "group_lines";
/// How long a lapsed admission is remembered, so its owner's poll says `expired` rather than 404.
const FORGET_LAPSED_AFTER: Duration = Duration::from_secs(60 * 60);
/// After a restore, how long admission waits before it moves past the restored `serving`
/// through the numbers handed out before the loss (then at the configured rate): the time for a
/// waiting client to read the status (2 s cached, up to 5 s more while the CDN revalidates, read
/// every 5 s at least) and present its ticket, which puts it back at its number first.
pub const RESTORE_GRACE: Duration = Duration::from_secs(15);
/// How long the join that takes the duty to reserve more numbers keeps it (if it dies, another
/// join takes it over after this).
const NUMBERS_TOP_UP_LOCK: Duration = Duration::from_secs(3);

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
    restore_event: Script,
    restore_place: Script,
    draw_numbers: Script,
    publish_status: Script,
    restore_context: Script,
    set_seats_left: Script,
    extend_numbers: Script,
    mark_drawn: Script,
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
            restore_event: Script::new(include_str!("scripts/restore_event.lua")),
            restore_place: Script::new(include_str!("scripts/restore_place.lua")),
            draw_numbers: Script::new(include_str!("scripts/draw_numbers.lua")),
            publish_status: Script::new(include_str!("scripts/publish_status.lua")),
            restore_context: Script::new(include_str!("scripts/restore_context.lua")),
            set_seats_left: Script::new(include_str!("scripts/set_seats_left.lua")),
            extend_numbers: Script::new(include_str!("scripts/extend_numbers.lua")),
            mark_drawn: Script::new(include_str!("scripts/mark_drawn.lua")),
        }
    }
}

/// The queue in Redis: every queue port (and [`TicketLimits`]), each operation one atomic Lua
/// script.
pub struct RedisQueue {
    connection: RedisConnection,
    scripts: Scripts,
    /// What the statuses this adapter writes pace a big pre-queue's opening to
    /// (`wait_policy::opening_reads`).
    edge_budget: u64,
}

impl RedisQueue {
    /// Builds the adapter without connecting (see [`RedisConnection`]). `timeout` bounds both
    /// connecting and each reply, so a request never hangs on Redis. Fails only on an unusable
    /// URL: a configuration error, reported at cold start.
    pub fn open(settings: &RedisSettings) -> Result<Self, redis::RedisError> {
        Self::open_as(settings, None)
    }

    /// [`RedisQueue::open`], signed in as a function's own Redis user (`None`: the default
    /// user, as locally; see [`RedisCredentials`]).
    pub fn open_as(
        settings: &RedisSettings,
        user: Option<&RedisCredentials>,
    ) -> Result<Self, redis::RedisError> {
        Ok(Self {
            connection: RedisConnection::open(settings, user)?,
            scripts: Scripts::new(),
            edge_budget: crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
        })
    }

    /// The statuses this adapter writes pace a big pre-queue's opening to `requests_per_second`
    /// at the edge instead of the default (the admit function's `EDGE_OPENING_REQUESTS_PER_SECOND`).
    pub fn with_edge_budget(mut self, requests_per_second: u64) -> Self {
        self.edge_budget = requests_per_second.max(1);
        self
    }

    /// A single (non-clustered) server at `redis_url`.
    pub fn new(redis_url: &str, timeout: Duration) -> Result<Self, redis::RedisError> {
        Self::open(&RedisSettings {
            url: redis_url.to_owned(),
            timeout,
            cluster: false,
        })
    }

    /// The seat availability projection, on the same connection.
    pub fn availability_board(&self) -> crate::adapters::redis::availability::RedisAvailability {
        crate::adapters::redis::availability::RedisAvailability::new(self.connection())
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
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.offered)
            .key(&keys.prequeue)
            .key(&keys.entrants)
            .key(&keys.left)
            .arg(customer.as_str())
            .invoke_async(&mut self.connection())
            .await?;
        Ok(removed > 0)
    }
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

fn parse_f64(field: &str) -> Option<f64> {
    field.parse::<f64>().ok().filter(|value| value.is_finite())
}

fn opens_at(
    operation: &'static str,
    reply: &[String],
    field: &str,
) -> Result<SystemTime, LineupError> {
    Ok(from_unix_millis(parse_u64(operation, reply, field)?))
}

/// Parses the `number, position, serving, advance_rate, admit_per_sec, opens_at_ms` tail shared
/// by the join and standing scripts' `waiting` replies.
fn waiting_standing(
    operation: &'static str,
    reply: &[String],
    fields: &[String],
) -> Result<Standing, LineupError> {
    let [number, position, serving, advance, configured_rate, opens] = fields else {
        return Err(unexpected(operation, reply));
    };
    Ok(Standing::Waiting {
        // Scores come back as Redis doubles; queue numbers are integers well inside 2^53.
        number: parse_f64(number).ok_or_else(|| unexpected(operation, reply))? as u64,
        position: parse_u64(operation, reply, position)?,
        serving: parse_u64(operation, reply, serving)?,
        measured_advance: parse_f64(advance).filter(|rate| *rate > 0.0),
        configured_rate: configured_rate
            .parse()
            .map_err(|_| unexpected(operation, reply))?,
        opens_at: opens_at(operation, reply, opens)?,
    })
}

fn pre_queue_standing(
    operation: &'static str,
    reply: &[String],
    customer: &CustomerId,
    opens: &str,
    seed: &str,
) -> Result<Standing, LineupError> {
    // Errors show the reply without the seed: it must not reach a log before it is revealed.
    let shown = [reply[0].clone(), opens.to_owned(), "<seed>".to_owned()];
    // An event configured before draw seeds existed has none: `lineup event set` gives it one.
    let seed = DrawSeed::parse(seed).ok_or_else(|| unexpected(operation, &shown))?;
    Ok(Standing::PreQueue {
        opens_at: opens_at(operation, &shown, opens)?,
        entrant: seed.entrant(customer),
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

impl RedisQueue {
    /// Runs the join or standing script: the same keys, the customer and the time.
    async fn customer_script(
        &self,
        script: &Script,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<Vec<String>, LineupError> {
        let keys = EventKeys::new(event);
        Ok(script
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.admission)
            .key(&keys.offered)
            .key(&keys.prequeue)
            .key(&keys.entrants)
            .key(&keys.left)
            .key(&keys.numbers_lock)
            .arg(customer.as_str())
            .arg(unix_millis(now))
            .arg(NUMBERS_TOP_UP_LOCK.as_millis() as u64)
            .invoke_async(&mut self.connection())
            .await?)
    }
}

#[async_trait]
impl WaitingLine for RedisQueue {
    async fn join_with_work(
        &self,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
        work: WorkShown,
        code: CodeShown,
    ) -> Result<Joined, LineupError> {
        const OP: &str = "join";
        let keys = EventKeys::new(event);
        // The proof's bits ride on the join's own script: the event's difficulty is read in the
        // same round trip, and compared before anything is written.
        let reply: Vec<String> = self
            .scripts
            .join
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.admission)
            .key(&keys.offered)
            .key(&keys.prequeue)
            .key(&keys.entrants)
            .key(&keys.left)
            .key(&keys.numbers_lock)
            .arg(customer.as_str())
            .arg(unix_millis(now))
            .arg(NUMBERS_TOP_UP_LOCK.as_millis() as u64)
            .arg(work.bits())
            .arg(if code.lets_in() { "1" } else { "0" })
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [status] if status == "no_event" => Err(LineupError::EventNotFound),
            [status] if status == "closed" => Err(LineupError::QueueClosed),
            [status] if status == "code_required" => Err(LineupError::CodeRequired),
            [status, difficulty] if status == "challenge" => {
                let difficulty = difficulty
                    .parse()
                    .ok()
                    .and_then(|bits| ChallengeDifficulty::new(bits).ok())
                    .ok_or_else(|| unexpected(OP, &reply))?;
                Err(LineupError::ChallengeRefused(ChallengeRefused {
                    difficulty,
                    proof_offered: work.offered(),
                    fresh: None,
                }))
            }
            [status, top_up] if status == "numbers_exhausted" => {
                Err(LineupError::NumbersExhausted {
                    top_up: top_up == "1",
                })
            }
            [status, expires_ms] if status == "admitted" => Ok(Joined {
                newly_queued: false,
                standing: admitted_standing(OP, &reply, expires_ms)?,
                top_up_numbers: false,
            }),
            [status, newly_queued, opens, seed] if status == "pre_queue" => Ok(Joined {
                newly_queued: newly_queued == "1",
                standing: pre_queue_standing(OP, &reply, customer, opens, seed)?,
                top_up_numbers: false,
            }),
            [status, number, position, newly_queued, rest @ .., top_up] if status == "waiting" => {
                let mut fields = vec![number.clone(), position.clone()];
                fields.extend_from_slice(rest);
                Ok(Joined {
                    newly_queued: newly_queued == "1",
                    standing: waiting_standing(OP, &reply, &fields)?,
                    top_up_numbers: top_up == "1",
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
        let reply = self
            .customer_script(&self.scripts.standing, event, customer, now)
            .await?;
        match reply.as_slice() {
            [status] if status == "no_event" => Err(LineupError::EventNotFound),
            [status, ..] if status == "not_found" => Ok(None),
            [status] if status == "expired" => Ok(Some(Standing::Expired)),
            [status] if status == "closed" => Ok(Some(Standing::Closed)),
            [status, opens, seed] if status == "pre_queue" => {
                pre_queue_standing(OP, &reply, customer, opens, seed).map(Some)
            }
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

/// Reads the admit tick's reply (see `admit_tick.lua`).
fn tick_report(
    full_reply: &[String],
    edge_budget: u64,
    now: SystemTime,
) -> Result<TickReport, LineupError> {
    const OP: &str = "admit_tick";
    // Errors show the reply without the seed (field 15): it must not reach a log early.
    let mut shown = full_reply.to_vec();
    if let Some(seed) = shown.get_mut(14) {
        *seed = "<seed>".to_owned();
    }
    let reply = shown.as_slice();
    let [admitted, active, waiting, serving, advance, state, opens, rate, next_number, entrants, drawn, seats_left, commitment, closed_reason, _, claim_ms, session_ms, restored_at, first_call_at, pre_queue, pace @ ..] =
        reply
    else {
        return Err(unexpected(OP, reply));
    };
    let number = |field: &str| parse_u64(OP, reply, field);
    let optional = |field: &str| -> Result<Option<u64>, LineupError> {
        (!field.is_empty()).then(|| number(field)).transpose()
    };
    let entrants = optional(entrants)?;
    let drawn = drawn == "1";
    let non_empty = |field: &String| (!field.is_empty()).then(|| field.clone());
    Ok(TickReport {
        admitted: number(admitted)?,
        active: number(active)?,
        waiting: number(waiting)?,
        needs_draw: entrants.is_some() && !drawn,
        drawn,
        session: Duration::from_millis(number(session_ms)?),
        status: StatusInputs {
            state: QueueState::parse(state).ok_or_else(|| unexpected(OP, reply))?,
            closed_reason: non_empty(closed_reason),
            opens_at: opens_at(OP, reply, opens)?,
            serving: number(serving)?,
            measured_advance: parse_f64(advance).filter(|rate| *rate > 0.0),
            configured_rate: rate.parse().map_err(|_| unexpected(OP, reply))?,
            last_number: number(next_number)?,
            waiting: number(waiting)?,
            claim_window: Duration::from_millis(number(claim_ms)?),
            seats_left: optional(seats_left)?,
            commitment: commitment.clone(),
            entrants,
            // Revealed only once the draw is written (and so published: the admitter publishes
            // before it writes the numbers).
            revealed_seed: non_empty(&full_reply[14])
                .filter(|_| drawn && entrants.unwrap_or(0) > 0),
            restored_at: optional(restored_at)?.map(from_unix_millis),
            pre_queue: optional(pre_queue)?,
            edge_budget,
            first_call_at: optional(first_call_at)?.map(from_unix_millis),
            pace: pace_counters(
                pace,
                number(active)?,
                Duration::from_millis(number(session_ms)?),
                now,
            ),
        },
    })
}

/// The admit tick's pace tail (ADR 0029): `max_active`, then the counters; `None` for a reply
/// without it or before anyone was admitted (a counter that does not parse counts as none).
fn pace_counters(
    fields: &[String],
    in_use: u64,
    session: Duration,
    now: SystemTime,
) -> Option<crate::domain::wait_forecast::PaceCounters> {
    let [max_active, admitted, freed, slot_ms, no_shows, numbers, seats_base, freed_base, since, rest @ ..] =
        fields
    else {
        return None;
    };
    let (ended, windows) = match rest {
        [ended, windows] => (ended.parse::<u64>().ok(), PaceWindows::parse(windows)),
        _ => (None, None),
    };
    let count = |field: &String| field.parse::<u64>().ok();
    Some(crate::domain::wait_forecast::PaceCounters {
        max_active: count(max_active)?,
        in_use,
        admitted: count(admitted)?,
        freed: count(freed).unwrap_or(0),
        slot_ms: parse_f64(slot_ms).unwrap_or(0.0),
        no_shows: count(no_shows).unwrap_or(0),
        numbers: count(numbers).unwrap_or(0),
        seats_base: count(seats_base).zip(Some(count(freed_base).unwrap_or(0))),
        observed: count(since)
            .and_then(|since| now.duration_since(from_unix_millis(since)).ok())
            .unwrap_or_default(),
        session,
        ended: ended.unwrap_or(0),
        windows,
    })
}

#[async_trait]
impl Admitter for RedisQueue {
    async fn open_events(&self) -> Result<Vec<EventId>, LineupError> {
        let members: Vec<String> = self.connection().smembers(OPEN_EVENTS).await?;
        // Ids are validated when an event is configured; skip anything else rather than fail
        // every event's tick because of one bad member.
        Ok(members
            .iter()
            .filter_map(|raw| EventId::parse_line(raw).ok())
            .collect())
    }

    async fn tick(
        &self,
        event: &EventId,
        now: SystemTime,
        mode: TickMode,
    ) -> Result<TickReport, LineupError> {
        let keys = EventKeys::new(event);
        let (mode_arg, up_to) = match mode {
            TickMode::Plan => ("plan", String::new()),
            TickMode::Admit { up_to } => (
                "admit",
                up_to.map(|limit| limit.to_string()).unwrap_or_default(),
            ),
        };
        // The event's priority groups: the lines ahead of this one go first, and every line
        // spends the event's rate bucket.
        let groups = self.group_lines(event).await?;
        let ahead: Vec<&GroupName> = groups
            .iter()
            .take_while(|group| event.group().as_ref() != Some(*group))
            .collect();
        let mut invocation = self.scripts.admit_tick.prepare_invoke();
        invocation
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.admission)
            .key(&keys.offered)
            .key(&keys.prequeue)
            .key(&keys.entrants)
            .key(EventKeys::new(&event.event()).admission)
            .arg(unix_millis(now))
            .arg(FORGET_LAPSED_AFTER.as_millis() as u64)
            .arg(mode_arg)
            .arg(up_to)
            .arg(RESTORE_GRACE.as_millis() as u64);
        for group in &ahead {
            let line = EventKeys::new(&event.event().group_line(group));
            invocation
                .key(line.settings)
                .key(line.queue)
                .key(line.prequeue)
                .arg(group.as_str());
        }
        let mut connection = self.connection();
        let reply: Vec<String> = invocation.invoke_async(&mut connection).await?;
        if matches!(reply.as_slice(), [status] if status == "no_event") {
            return Err(LineupError::EventNotFound);
        }
        let Some((served_first, reply)) = reply.split_last() else {
            return Err(unexpected("admit_tick", &reply));
        };
        let report = tick_report(reply, self.edge_budget, now)?;
        if mode == TickMode::Plan {
            return Ok(report);
        }
        // The public status, made once here for every reader of this tick.
        let mut status = report.status.status(event.as_str(), now);
        if !groups.is_empty() {
            let line = event
                .group()
                .map_or(GroupName::GENERAL.to_owned(), |group| group.to_string());
            let mut order: Vec<String> = groups.iter().map(GroupName::to_string).collect();
            order.push(GroupName::GENERAL.to_owned());
            status.groups = Some(GroupsServed {
                serving: if served_first.is_empty() {
                    line.clone()
                } else {
                    served_first.clone()
                },
                line,
                order,
            });
        }
        let json = serde_json::to_string(&status).map_err(|_| unexpected("status", reply))?;
        let _: i64 = self
            .scripts
            .publish_status
            .key(&keys.status)
            .key(&keys.admission)
            .arg(json)
            .arg(unix_millis(now))
            .invoke_async(&mut connection)
            .await?;
        Ok(report)
    }
}

#[async_trait]
impl StatusBoard for RedisQueue {
    async fn status_json(&self, event: &EventId) -> Result<Option<String>, LineupError> {
        Ok(self.connection().get(EventKeys::new(event).status).await?)
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
            .key(&keys.restored)
            .arg(customer.as_str())
            .arg(unix_millis(expires_at))
            .arg(unix_millis(now))
            .invoke_async(&mut self.connection())
            .await?;
        match reply.as_slice() {
            [live] if live == "0" => Ok(None),
            [status] if status == "no_event" => Err(LineupError::CacheRecovering),
            [status] if status == "cancelled" => Err(LineupError::EventCancelled),
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
        let (state, limit): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(&keys.settings)
            .arg("state")
            .arg("ticket_limit")
            .query_async(&mut self.connection())
            .await?;
        // A lost cache knows no limit: that is not "no limit" (the caller retries once the
        // event is restored).
        if state.is_none() {
            return Err(LineupError::CacheRecovering);
        }
        limit
            .map(|raw| {
                raw.parse()
                    .map_err(|_| unexpected("ticket_limit", std::slice::from_ref(&raw)))
            })
            .transpose()
    }
}

/// The event's priority groups' names in order (`fanclub,card`), kept beside its own line's
/// settings (`group_lines`) for the admit tick to know which lines go first; "" for a group's
/// line, or an event without groups.
fn group_lines_arg(event: &EventId, groups: &PriorityGroups) -> String {
    if event.group().is_some() {
        return String::new();
    }
    let names: Vec<&str> = groups.iter().map(|group| group.name.as_str()).collect();
    names.join(",")
}

fn ticket_limit_arg(settings: &EventSettings) -> String {
    settings
        .ticket_limit
        .map(|limit| limit.to_string())
        .unwrap_or_default()
}

impl RedisQueue {
    /// The names of the event's priority groups, first admitted first (none: no groups).
    async fn group_lines(&self, event: &EventId) -> Result<Vec<GroupName>, LineupError> {
        let names: Option<String> = self
            .connection()
            .hget(EventKeys::new(&event.event()).settings, GROUP_LINES)
            .await?;
        Ok(names
            .unwrap_or_default()
            .split(',')
            .filter_map(|name| GroupName::parse(name).ok())
            .collect())
    }

    /// The open-events set follows the state: ticked unless closed.
    async fn track_open(&self, event: &EventId, state: QueueState) -> Result<(), LineupError> {
        let mut connection = self.connection();
        let _: i64 = match state {
            QueueState::Open | QueueState::Paused => {
                connection.sadd(OPEN_EVENTS, event.as_str()).await?
            }
            QueueState::Closed => connection.srem(OPEN_EVENTS, event.as_str()).await?,
        };
        Ok(())
    }
}

#[async_trait]
impl EventSettingsStore for RedisQueue {
    async fn configure(
        &self,
        event: &EventId,
        settings: &EventSettings,
        seed: &DrawSeed,
    ) -> Result<(), LineupError> {
        let keys = EventKeys::new(event);
        // One script on the event's own slot: the settings, the ticket limit (set or removed)
        // and the draw seed change together.
        let _: i64 = self
            .scripts
            .configure
            .key(&keys.settings)
            .arg(settings.state.as_str())
            .arg(unix_millis(settings.opens_at))
            .arg(settings.max_active)
            .arg(settings.admit_per_second)
            .arg(settings.session.as_millis() as u64)
            .arg(settings.claim_window.as_millis() as u64)
            .arg(ticket_limit_arg(settings))
            .arg(seed.reveal())
            .arg(seed.commitment())
            .arg(settings.challenge_difficulty.bits())
            .arg(if settings.code_required { "1" } else { "0" })
            .arg(group_lines_arg(event, &settings.groups))
            .invoke_async(&mut self.connection())
            .await?;
        // The open-events set is outside the event's slot, so it is a second call; the admitter
        // re-reads settings inside its script, so a closed event in the set only costs a no-op tick.
        self.track_open(event, settings.state).await
    }

    async fn close(&self, event: &EventId, reason: ClosedReason) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let closed: i64 = self
            .scripts
            .close
            .key(&keys.settings)
            .arg(reason.as_str())
            .invoke_async(&mut self.connection())
            .await?;
        self.track_open(event, QueueState::Closed).await?;
        // Closing an event (sold out, closed, cancelled) closes its groups' lines with it.
        if event.group().is_none() {
            for group in self.group_lines(event).await? {
                Box::pin(self.close(&event.group_line(&group), reason)).await?;
            }
        }
        Ok(closed == 1)
    }

    async fn set_seats_left(&self, event: &EventId, seats_left: u64) -> Result<(), LineupError> {
        let keys = EventKeys::new(event);
        let _: i64 = self
            .scripts
            .set_seats_left
            .key(&keys.settings)
            .arg(seats_left)
            .invoke_async(&mut self.connection())
            .await?;
        // The seats are the event's: every group's line shows the same count.
        if event.group().is_none() {
            for group in self.group_lines(event).await? {
                Box::pin(self.set_seats_left(&event.group_line(&group), seats_left)).await?;
            }
        }
        Ok(())
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
                "claim_ms",
                "ticket_limit",
                "challenge_difficulty",
                "code_required",
            ])
            .query_async(&mut self.connection())
            .await?;
        let [state, opens_at, max_active, rate, session, claim, ticket_limit, difficulty, code_required] =
            values.as_slice()
        else {
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
            // An event configured before claim windows existed has none: the default.
            claim_window: match claim {
                Some(_) => Duration::from_millis(number(claim)?),
                None => EventSettings::DEFAULT_CLAIM_WINDOW,
            },
            ticket_limit: ticket_limit
                .as_deref()
                .map(|raw| raw.parse::<u32>().map_err(|_| unexpected(OP, &shown)))
                .transpose()?,
            challenge_difficulty: match difficulty {
                Some(raw) => raw
                    .parse()
                    .ok()
                    .and_then(|bits| ChallengeDifficulty::new(bits).ok())
                    .ok_or_else(|| unexpected(OP, &shown))?,
                None => ChallengeDifficulty::NONE,
            },
            code_required: code_required.as_deref() == Some("1"),
            // The cache keeps only the groups' names (for the admit tick); their definitions
            // are in the durable record.
            groups: PriorityGroups::none(),
        }))
    }
}

#[async_trait]
impl PlaceRestorer for RedisQueue {
    async fn restore_context(
        &self,
        event: &EventId,
        customer: &CustomerId,
    ) -> Result<Option<RestoreContext>, LineupError> {
        const OP: &str = "restore_context";
        let keys = EventKeys::new(event);
        let reply: Vec<String> = self
            .scripts
            .restore_context
            .key(&keys.settings)
            .key(&keys.restored)
            .arg(customer.as_str())
            .invoke_async(&mut self.connection())
            .await?;
        let [restored_at, serving, lost_since, done] = reply.as_slice() else {
            return Err(unexpected(OP, &reply));
        };
        if restored_at.is_empty() {
            return Ok(None);
        }
        let done = match done.as_str() {
            "" => None,
            "placed" => Some(RestoreDone::Placed),
            "expired" => Some(RestoreDone::Expired),
            "token" => Some(RestoreDone::Token),
            _ => return Err(unexpected(OP, &reply)),
        };
        Ok(Some(RestoreContext {
            restored_at: from_unix_millis(parse_u64(OP, &reply, restored_at)?),
            serving: parse_u64(OP, &reply, serving)?,
            lost_since: (!lost_since.is_empty())
                .then(|| parse_u64(OP, &reply, lost_since).map(from_unix_millis))
                .transpose()?,
            done,
        }))
    }

    async fn restore_place(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket_issued_at: SystemTime,
        place: RestoredPlace,
    ) -> Result<RestoreOutcome, LineupError> {
        let keys = EventKeys::new(event);
        let (where_to, score) = match place {
            RestoredPlace::Queue { number } => ("queue", number),
            RestoredPlace::PreQueue => ("pre_queue", 0),
            RestoredPlace::Admitted { expires_at } => ("active", unix_millis(expires_at)),
            RestoredPlace::Expired => ("expired", 0),
        };
        let outcome: String = self
            .scripts
            .restore_place
            .key(&keys.settings)
            .key(&keys.queue)
            .key(&keys.active)
            .key(&keys.prequeue)
            .key(&keys.restored)
            .arg(customer.as_str())
            .arg(unix_millis(ticket_issued_at))
            .arg(where_to)
            .arg(score)
            .invoke_async(&mut self.connection())
            .await?;
        match outcome.as_str() {
            "restored" => Ok(RestoreOutcome::Restored),
            "expired" => Ok(RestoreOutcome::Expired),
            "already" => Ok(RestoreOutcome::AlreadyRestored),
            "not_restorable" => Ok(RestoreOutcome::NotRestorable),
            _ => Err(unexpected("restore_place", &[outcome])),
        }
    }

    async fn restore_event(
        &self,
        event: &EventId,
        record: &EventRecord,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let settings = &record.settings;
        let cursor = &record.cursor;
        let restored: i64 = self
            .scripts
            .restore_event
            .key(&keys.settings)
            .key(&keys.admission)
            .arg(settings.state.as_str())
            .arg(unix_millis(settings.opens_at))
            .arg(settings.max_active)
            .arg(settings.admit_per_second)
            .arg(settings.session.as_millis() as u64)
            .arg(settings.claim_window.as_millis() as u64)
            .arg(ticket_limit_arg(settings))
            .arg(record.seed.reveal())
            .arg(record.seed.commitment())
            // Every number the lost cache handed out is at or below the durable ceiling.
            .arg(record.number_ceiling.max(cursor.next_number))
            .arg(cursor.entrants.map(|n| n.to_string()).unwrap_or_default())
            .arg(if cursor.drawn { "1" } else { "0" })
            .arg(cursor.serving)
            .arg(record.closed_reason.clone().unwrap_or_default())
            .arg(unix_millis(now))
            .arg(
                cursor
                    .saved_at_ms
                    .map(|at| at.to_string())
                    .unwrap_or_default(),
            )
            .arg(
                cursor
                    .first_call_at_ms
                    .map(|at| at.to_string())
                    .unwrap_or_default(),
            )
            .arg(settings.challenge_difficulty.bits())
            .arg(if settings.code_required { "1" } else { "0" })
            .arg(group_lines_arg(event, &settings.groups))
            .invoke_async(&mut self.connection())
            .await?;
        self.track_open(event, settings.state).await?;
        Ok(restored == 1)
    }

    async fn lock_restore(
        &self,
        event: &EventId,
        for_how_long: Duration,
    ) -> Result<bool, LineupError> {
        self.take_lock(&EventKeys::new(event).restore_lock, for_how_long)
            .await
    }
}

/// Pages of the closed pre-queue for the draw: each `SSCAN` page as it comes (the draw drops
/// the repeats `SSCAN` may return), never the whole set in memory.
#[async_trait]
impl EntrantPages for RedisQueue {
    async fn entrant_page(
        &self,
        event: &EventId,
        cursor: u64,
    ) -> Result<(u64, Vec<CustomerId>), LineupError> {
        let keys = EventKeys::new(event);
        let (next, page): (u64, Vec<String>) = redis::cmd("SSCAN")
            .arg(&keys.entrants)
            .arg(cursor)
            .arg("COUNT")
            .arg(ENTRANTS_PAGE)
            .query_async(&mut self.connection())
            .await?;
        Ok((
            next,
            page.iter()
                .filter_map(|raw| CustomerId::parse(raw).ok())
                .collect(),
        ))
    }
}

/// `HGET entrants` once the pre-queue closed, else `SCARD` of the open pre-queue: one round trip.
#[async_trait]
impl PreQueueSize for RedisQueue {
    async fn pre_queue_size(&self, event: &EventId) -> Result<u64, LineupError> {
        let keys = EventKeys::new(event);
        let (closed_with, open): (Option<u64>, u64) = redis::pipe()
            .hget(&keys.settings, "entrants")
            .scard(&keys.prequeue)
            .query_async(&mut self.connection())
            .await?;
        Ok(closed_with.unwrap_or(open))
    }
}

/// Customers an `SSCAN` page of the closed pre-queue asks for: about 200 KB a reply, a few
/// milliseconds of Redis each.
const ENTRANTS_PAGE: u64 = 5_000;

impl RedisQueue {
    /// `SET key 1 NX PX ms`: `true` when this caller took it.
    async fn take_lock(&self, key: &str, for_how_long: Duration) -> Result<bool, LineupError> {
        let taken: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg("1")
            .arg("NX")
            .arg("PX")
            .arg(for_how_long.as_millis() as u64)
            .query_async(&mut self.connection())
            .await?;
        Ok(taken.is_some())
    }
}

#[async_trait]
impl NumberRanges for RedisQueue {
    async fn number_range(&self, event: &EventId) -> Result<Option<NumberRange>, LineupError> {
        const OP: &str = "number_range";
        let keys = EventKeys::new(event);
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&keys.settings)
            .arg(&[
                "state",
                "next_number",
                "number_ceiling",
                "number_block",
                "numbers_reserved_at_ms",
                "numbers_reserved_from",
            ])
            .query_async(&mut self.connection())
            .await?;
        let [state, next, ceiling, block, reserved_at, reserved_from] = values.as_slice() else {
            return Err(unexpected(OP, &[]));
        };
        if state.is_none() {
            return Ok(None);
        }
        let shown: Vec<String> = values
            .iter()
            .map(|v| v.clone().unwrap_or_default())
            .collect();
        let number = |field: &Option<String>| -> Result<u64, LineupError> {
            match field.as_deref() {
                None => Ok(0),
                Some(raw) => parse_u64(OP, &shown, raw),
            }
        };
        Ok(Some(NumberRange {
            next_number: number(next)?,
            ceiling: number(ceiling)?,
            block: number(block)?,
            reserved_at: reserved_at
                .as_deref()
                .map(|raw| parse_u64(OP, &shown, raw).map(from_unix_millis))
                .transpose()?,
            reserved_from: number(reserved_from)?,
        }))
    }

    async fn extend_numbers(
        &self,
        event: &EventId,
        ceiling: u64,
        block: u64,
        now: SystemTime,
    ) -> Result<bool, LineupError> {
        let keys = EventKeys::new(event);
        let in_force: u64 = self
            .scripts
            .extend_numbers
            .key(&keys.settings)
            .key(&keys.numbers_lock)
            .arg(ceiling)
            .arg(unix_millis(now))
            .arg(block)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(in_force > 0)
    }
}

#[async_trait]
impl PreQueueDraw for RedisQueue {
    async fn lock_draw(
        &self,
        event: &EventId,
        for_how_long: Duration,
    ) -> Result<bool, LineupError> {
        self.take_lock(&EventKeys::new(event).draw_lock, for_how_long)
            .await
    }

    async fn draw_seed(&self, event: &EventId) -> Result<Option<DrawSeed>, LineupError> {
        let keys = EventKeys::new(event);
        let seed: Option<String> = self.connection().hget(&keys.settings, "draw_seed").await?;
        Ok(seed.as_deref().and_then(DrawSeed::parse))
    }

    async fn write_numbers(
        &self,
        event: &EventId,
        numbers: &[(CustomerId, u64)],
    ) -> Result<(), LineupError> {
        if numbers.is_empty() {
            return Ok(());
        }
        let keys = EventKeys::new(event);
        let mut connection = self.connection();
        // Batches of 5,000: each script is a few milliseconds, so joins and polls are not held up.
        for batch in numbers.chunks(5_000) {
            let mut invocation = self.scripts.draw_numbers.key(&keys.queue);
            invocation.key(&keys.left);
            for (customer, number) in batch {
                invocation.arg(customer.as_str()).arg(*number);
            }
            let _: i64 = invocation.invoke_async(&mut connection).await?;
        }
        Ok(())
    }

    async fn mark_drawn(
        &self,
        event: &EventId,
        first_call_at: SystemTime,
        now: SystemTime,
    ) -> Result<(), LineupError> {
        let keys = EventKeys::new(event);
        let first_call = if first_call_at > now {
            unix_millis(first_call_at).to_string()
        } else {
            String::new()
        };
        let marked: i64 = self
            .scripts
            .mark_drawn
            .key(&keys.settings)
            .arg(first_call)
            .invoke_async(&mut self.connection())
            .await?;
        if marked == 0 {
            // Lost with the cache since the draw began: the next tick re-loads the event from
            // its record, which says whether the draw was published.
            tracing::warn!(event = %event, "the event left the cache during its draw; not marked drawn");
        }
        Ok(())
    }
}
