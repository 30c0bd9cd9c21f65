//! Chaos as a mode of the simulation (`--chaos flush@25s,restart@1m`): faults done to the dev
//! server's Redis on schedule while the crowd shops, so that a run shows what losing the cache
//! mid-sale costs customers, and whether the sale's promises survive it (every check is
//! evaluated as in any run).
//!
//! - `flush`: `FLUSHALL` on the dev server's Redis: every key gone at once, the server alive.
//! - `restart`: the Redis server process killed outright (`SIGKILL`, found by the process id its
//!   `INFO` gives) and a new, empty `redis-server` started on the same port, with the same bind
//!   address and log file, memory only (`--save "" --appendonly no`): a failover to an empty
//!   node. The new server is started detached (a process group of its own) so that it outlives
//!   the simulation: the dev server goes on using it, and stops it with the rest at Ctrl-C
//!   (`lineup dev` stops whatever Redis took over its port). A restart needs the dev server's
//!   Redis on this machine.
//!
//! Offsets count from the crowd's start: the moment the first customers may arrive, the same
//! origin as `--ramp` (the queue opens `--pre-queue` after it). Each fault is printed when it
//! fires, and the report says what fired when and what each cost ([`super::answer_log`]).

use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use super::answer_log::{seconds_or_none, FaultImpact, RouteImpact};
use super::api_client::routes;
use super::customer::{CustomerReport, Outcome};
use super::progress::Notes;
use crate::local_stack::redis_server::{self, LOOPBACK};

/// What a fault does to the dev server's Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    /// `FLUSHALL`.
    Flush,
    /// Kill the server; start an empty one on the same port.
    Restart,
}

impl Fault {
    fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "flush" => Some(Self::Flush),
            "restart" => Some(Self::Restart),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Flush => "flush",
            Self::Restart => "restart",
        }
    }
}

/// One fault at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChaosAction {
    pub fault: Fault,
    /// From the crowd's start.
    pub at: Duration,
}

/// The faults to do, in time order (faults planned for the same moment in the order given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaosPlan {
    actions: Vec<ChaosAction>,
}

/// Why a `--chaos` value is not a plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChaosSyntaxError {
    #[error("the chaos plan is empty: write ACTION@OFFSET[,ACTION@OFFSET...], e.g. flush@25s,restart@1m")]
    Empty,
    #[error("item {position} of the chaos plan is empty (two commas in a row, or one at an end)")]
    EmptyItem { position: usize },
    #[error("`{item}` has no `@`: write ACTION@OFFSET, e.g. flush@25s")]
    NoAt { item: String },
    #[error(
        "`{item}`: unknown chaos action `{action}`; the actions are `flush` (FLUSHALL on the dev \
         server's Redis) and `restart` (kill it, start an empty one on its port)"
    )]
    UnknownAction { item: String, action: String },
    #[error(
        "`{item}`: the offset `{offset}` is not a duration like 25s, 1m, 1m30s or 500ms: {why}"
    )]
    BadOffset {
        item: String,
        offset: String,
        why: &'static str,
    },
}

/// The longest offset accepted: a day (a longer one is a typo).
const LONGEST_OFFSET: Duration = Duration::from_secs(24 * 60 * 60);

impl ChaosPlan {
    /// `ACTION@OFFSET[,ACTION@OFFSET...]`: `flush@25s,restart@1m30s`. Spaces around items are
    /// ignored; actions are case-insensitive.
    pub fn parse(text: &str) -> Result<Self, ChaosSyntaxError> {
        if text.trim().is_empty() {
            return Err(ChaosSyntaxError::Empty);
        }
        let mut actions = Vec::new();
        for (index, item) in text.split(',').enumerate() {
            let item = item.trim();
            if item.is_empty() {
                return Err(ChaosSyntaxError::EmptyItem {
                    position: index + 1,
                });
            }
            let Some((action, offset)) = item.split_once('@') else {
                return Err(ChaosSyntaxError::NoAt {
                    item: item.to_owned(),
                });
            };
            let fault =
                Fault::parse(action.trim()).ok_or_else(|| ChaosSyntaxError::UnknownAction {
                    item: item.to_owned(),
                    action: action.trim().to_owned(),
                })?;
            let at = parse_offset(offset.trim()).map_err(|why| ChaosSyntaxError::BadOffset {
                item: item.to_owned(),
                offset: offset.trim().to_owned(),
                why,
            })?;
            actions.push(ChaosAction { fault, at });
        }
        // Stable: faults at the same moment keep the order given.
        actions.sort_by_key(|action| action.at);
        Ok(Self { actions })
    }

    pub fn actions(&self) -> &[ChaosAction] {
        &self.actions
    }

    fn has(&self, fault: Fault) -> bool {
        self.actions.iter().any(|action| action.fault == fault)
    }
}

impl std::str::FromStr for ChaosPlan {
    type Err = ChaosSyntaxError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for ChaosPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self
            .actions
            .iter()
            .map(|action| format!("{}@{}", action.fault.name(), offset_text(action.at)))
            .collect();
        f.write_str(&items.join(","))
    }
}

/// An offset: whole numbers with units, largest first, each unit once: `25s`, `1m`, `1m30s`,
/// `1h`, `500ms`, `2s500ms`, `0s`.
fn parse_offset(text: &str) -> Result<Duration, &'static str> {
    if text.is_empty() {
        return Err("it is empty");
    }
    // (unit, its length in ms), largest first.
    const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];
    let mut rest = text;
    let mut total_ms: u64 = 0;
    // The index in UNITS the next part's unit must come after.
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(if rest.starts_with(['.', ',']) {
                "whole numbers only (write 1500ms, not 1.5s)"
            } else {
                "each part is a number followed by a unit (h, m, s or ms)"
            });
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| "the number is too big")?;
        rest = &rest[digits..];
        let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..letters];
        rest = &rest[letters..];
        if unit.is_empty() {
            return Err(if rest.starts_with(['.', ',']) {
                "whole numbers only (write 1500ms, not 1.5s)"
            } else {
                "a number needs a unit (h, m, s or ms): 25s, not 25"
            });
        }
        let Some(position) = UNITS.iter().position(|(name, _)| *name == unit) else {
            return Err("the units are h, m, s and ms");
        };
        if position < next_unit {
            return Err("units go largest first, each once (1m30s, not 30s1m)");
        }
        next_unit = position + 1;
        total_ms = number
            .checked_mul(UNITS[position].1)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or("the number is too big")?;
    }
    let offset = Duration::from_millis(total_ms);
    if offset > LONGEST_OFFSET {
        return Err("it is longer than a day");
    }
    Ok(offset)
}

/// An offset as the plan would write it: `25s`, `1m`, `1m30s`, `2s500ms`.
fn offset_text(offset: Duration) -> String {
    let ms = offset.as_millis();
    if ms == 0 {
        return "0s".to_owned();
    }
    let parts = [
        (ms / 3_600_000, "h"),
        (ms / 60_000 % 60, "m"),
        (ms / 1_000 % 60, "s"),
        (ms % 1_000, "ms"),
    ];
    parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect()
}

/// Where the faults go: the dev server's Redis, as `/dev/info` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub redis_url: String,
    /// Its port on 127.0.0.1, when it is on this machine (a restart needs it).
    local_port: Option<u16>,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("the dev server's Redis URL {0} is unusable")]
    Url(String, #[source] redis::RedisError),
    #[error(
        "--chaos restart kills the dev server's Redis process and starts another on its port, so \
         that Redis must run on this machine; {0} is not on 127.0.0.1"
    )]
    NotLocal(String),
    #[error(
        "--chaos restart: cannot tell which process is the dev server's Redis ({0}); is it a \
         local redis-server?"
    )]
    Unknown(String, #[source] redis_server::RedisServerError),
}

impl Target {
    /// The Redis at `redis_url`, checked to be one the plan can act on: any Redis can be
    /// flushed; a restart needs one on this machine that says its process id.
    pub async fn find(plan: &ChaosPlan, redis_url: &str) -> Result<Self, TargetError> {
        let client = redis::Client::open(redis_url)
            .map_err(|source| TargetError::Url(redis_url.to_owned(), source))?;
        let local_port = match client.get_connection_info().addr() {
            redis::ConnectionAddr::Tcp(host, port)
                if matches!(host.as_str(), LOOPBACK | "localhost") =>
            {
                Some(*port)
            }
            _ => None,
        };
        if plan.has(Fault::Restart) {
            let Some(port) = local_port else {
                return Err(TargetError::NotLocal(redis_url.to_owned()));
            };
            redis_server::inspect(port)
                .await
                .map_err(|source| TargetError::Unknown(redis_url.to_owned(), source))?;
        }
        Ok(Self {
            redis_url: redis_url.to_owned(),
            local_port,
        })
    }
}

/// One planned fault, as it went.
#[derive(Debug, Clone)]
pub struct Fired {
    pub action: ChaosAction,
    /// When it started, if it did (not: the crowd was done first).
    pub at: Option<Instant>,
    pub took: Duration,
    /// What it did, or why it could not.
    pub outcome: Result<String, String>,
}

/// Does the plan's faults on schedule from `origin` until done, or until the crowd is (faults
/// not yet due then are not done: they are reported as such). A fault under way when the crowd
/// finishes is finished. Says each one as it fires.
pub async fn run(
    plan: ChaosPlan,
    target: Target,
    origin: Instant,
    notes: Notes,
    mut crowd_done: watch::Receiver<bool>,
) -> Vec<Fired> {
    let mut fired = Vec::with_capacity(plan.actions.len());
    let mut done = false;
    for action in plan.actions {
        if !done {
            tokio::select! {
                () = tokio::time::sleep_until((origin + action.at).into()) => {}
                _ = crowd_done.wait_for(|done| *done) => done = true,
            }
        }
        if done {
            fired.push(Fired {
                action,
                at: None,
                took: Duration::ZERO,
                outcome: Err(format!(
                    "the crowd was done after {:.1} s, before it was due",
                    origin.elapsed().as_secs_f64()
                )),
            });
            continue;
        }
        let started = Instant::now();
        let outcome = match action.fault {
            Fault::Flush => flush(&target).await,
            Fault::Restart => restart(&target).await,
        };
        let took = started.elapsed();
        let at = started.duration_since(origin).as_secs_f64();
        let name = action.fault.name();
        let planned = offset_text(action.at);
        notes.note(&match &outcome {
            Ok(what) => format!("chaos: {name}@{planned} fired at {at:.1} s: {what}"),
            Err(why) => format!("chaos: {name}@{planned} FAILED at {at:.1} s: {why}"),
        });
        fired.push(Fired {
            action,
            at: Some(started),
            took,
            outcome,
        });
    }
    fired
}

/// Bound on the flush's connection and each reply.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a killed Redis may take to let go of its port, and a new one to answer.
const RESTART_TIMEOUT: Duration = Duration::from_secs(10);

async fn flush(target: &Target) -> Result<String, String> {
    let fail = |error: redis::RedisError| format!("FLUSHALL on {}: {error}", target.redis_url);
    let client = redis::Client::open(target.redis_url.as_str()).map_err(fail)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(FLUSH_TIMEOUT))
        .set_response_timeout(Some(FLUSH_TIMEOUT));
    let mut connection = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(fail)?;
    let keys: u64 = redis::cmd("DBSIZE")
        .query_async(&mut connection)
        .await
        .map_err(fail)?;
    let () = redis::cmd("FLUSHALL")
        .query_async(&mut connection)
        .await
        .map_err(fail)?;
    Ok(format!(
        "FLUSHALL on {}: {keys} keys gone",
        target.redis_url
    ))
}

async fn restart(target: &Target) -> Result<String, String> {
    let port = target
        .local_port
        .ok_or_else(|| format!("{} is not on this machine", target.redis_url))?;
    let old = redis_server::inspect(port)
        .await
        .map_err(|error| with_causes(&error))?;
    redis_server::kill(old.pid)
        .await
        .map_err(|error| with_causes(&error))?;
    let killed = Instant::now();
    if !redis_server::wait_until_closed(port, RESTART_TIMEOUT).await {
        return Err(format!(
            "killed pid {}, but something still listens on :{port} after {RESTART_TIMEOUT:?}",
            old.pid
        ));
    }
    let args = redis_server::server_args(port, &old.bind, std::path::Path::new(&old.logfile));
    let pid =
        redis_server::spawn_detached(&old.program, &args).map_err(|error| with_causes(&error))?;
    if !redis_server::wait_until_answers(port, RESTART_TIMEOUT).await {
        return Err(format!(
            "killed pid {}, started {} (pid {pid}) on :{port}, but it did not answer within \
             {RESTART_TIMEOUT:?}{}",
            old.pid,
            old.program.display(),
            log_hint(&old.logfile)
        ));
    }
    let down = killed.elapsed();
    let new = redis_server::inspect(port).await.ok();
    Ok(format!(
        "killed redis-server pid {} on :{port} (SIGKILL; it held {} keys), started pid {} there, \
         empty (no Redis for {:.2} s)",
        old.pid,
        old.keys,
        new.map_or(pid, |new| new.pid),
        down.as_secs_f64()
    ))
}

fn log_hint(logfile: &str) -> String {
    if logfile.is_empty() {
        String::new()
    } else {
        format!("; see {logfile}")
    }
}

fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

// ---- the report ----

/// What the chaos did and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChaosReport {
    /// The plan, as `--chaos` would take it.
    pub plan: String,
    pub faults: Vec<FaultReport>,
    pub customers: ChaosCustomers,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultReport {
    pub action: Fault,
    /// When it was planned, from the crowd's start.
    pub planned_seconds: f64,
    /// When it started (`None`: it was not done).
    pub fired_seconds: Option<f64>,
    pub took_seconds: f64,
    /// What it did (when done).
    pub done: Option<String>,
    /// Why it could not be done, or was not.
    pub error: Option<String>,
    /// What it cost, from when it fired to the next fault or the crowd's end.
    pub impact: Option<FaultImpact>,
}

/// How the customers went through the faults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChaosCustomers {
    /// Customers who polled with their ticket after the status announced a restore
    /// (`restoredAt`), and those polls.
    pub answered_a_restore: usize,
    pub restore_polls: u64,
    /// Customers answered 404 (`queue_entry_not_found`, `event_not_found`) for their ticket or
    /// their event, who kept the ticket and asked again after a while, as the page does; and how
    /// many of them were answered otherwise later (their place came back).
    pub kept_ticket_through_404: usize,
    pub not_found_answers: u64,
    pub place_came_back: usize,
    /// Ended "entry lost": still 404 after asking again.
    pub entry_lost: usize,
    /// Put back in the queue by a restore after admission had passed their number (they had not
    /// seen it called): at the front, not admitted at once, as the restore is designed; their
    /// claims answered `waiting` since, in all and at most for one customer.
    pub requeued_after_their_number_passed: usize,
    /// Of those, the customers told `waiting` at least once since: each would count as passed
    /// over (told to wait once called) if the restore's design were not taken into account.
    pub requeued_and_told_to_wait: usize,
    pub requeued_told_to_wait: u64,
    pub requeued_told_to_wait_most: u32,
}

impl ChaosCustomers {
    pub fn tally(customers: &[CustomerReport]) -> Self {
        let mut counts = Self::default();
        for customer in customers {
            let wait = &customer.wait;
            counts.answered_a_restore += usize::from(wait.restore_polls > 0);
            counts.restore_polls += u64::from(wait.restore_polls);
            let not_found = wait.entry_not_found + wait.event_not_found;
            if not_found > 0 {
                counts.kept_ticket_through_404 += 1;
                counts.not_found_answers += u64::from(not_found);
                if !matches!(customer.outcome, Outcome::EntryLost | Outcome::Failed) {
                    counts.place_came_back += 1;
                }
            }
            counts.entry_lost += usize::from(customer.outcome == Outcome::EntryLost);
            if let Some(requeued) = &wait.requeued {
                counts.requeued_after_their_number_passed += 1;
                counts.requeued_and_told_to_wait += usize::from(requeued.told_to_wait > 0);
                counts.requeued_told_to_wait += u64::from(requeued.told_to_wait);
                counts.requeued_told_to_wait_most =
                    counts.requeued_told_to_wait_most.max(requeued.told_to_wait);
            }
        }
        counts
    }
}

impl ChaosReport {
    /// The faults as they went, each with what it cost.
    pub fn of(
        plan: &ChaosPlan,
        fired: &[Fired],
        impacts: Vec<FaultImpact>,
        origin: Instant,
        customers: &[CustomerReport],
    ) -> Self {
        let mut impacts = impacts.into_iter();
        let faults = fired
            .iter()
            .map(|fired| FaultReport {
                action: fired.action.fault,
                planned_seconds: fired.action.at.as_secs_f64(),
                fired_seconds: fired
                    .at
                    .map(|at| at.saturating_duration_since(origin).as_secs_f64()),
                took_seconds: fired.took.as_secs_f64(),
                done: fired.outcome.as_ref().ok().cloned(),
                error: fired.outcome.as_ref().err().cloned(),
                impact: fired.at.and_then(|_| impacts.next()),
            })
            .collect();
        Self {
            plan: plan.to_string(),
            faults,
            customers: ChaosCustomers::tally(customers),
        }
    }

    /// Whether every planned fault was done.
    pub fn carried_out(&self) -> bool {
        self.faults.iter().all(|fault| fault.error.is_none())
    }

    pub fn render(&self, line: &mut impl FnMut(String)) {
        line(format!("Chaos ({})", self.plan));
        for fault in &self.faults {
            let name = fault.action.name();
            let planned = offset_text(Duration::from_secs_f64(fault.planned_seconds));
            match (fault.fired_seconds, &fault.done, &fault.error) {
                (Some(at), Some(done), _) => line(format!(
                    "  {name}@{planned} fired at {at:.1} s (took {:.2} s): {done}",
                    fault.took_seconds
                )),
                (Some(at), _, Some(error)) => {
                    line(format!("  {name}@{planned} FAILED at {at:.1} s: {error}"))
                }
                (_, _, error) => line(format!(
                    "  {name}@{planned} NOT DONE: {}",
                    error.as_deref().unwrap_or("it did not fire")
                )),
            }
            if let Some(impact) = &fault.impact {
                render_impact(impact, line);
            }
        }
        let c = &self.customers;
        line(format!(
            "  customers: {} polled with their ticket after a restoredAt ({} polls); {} kept their \
             ticket through {} answers 404 and asked again ({} of them were answered otherwise \
             later); {} ended entry lost",
            c.answered_a_restore,
            c.restore_polls,
            c.kept_ticket_through_404,
            c.not_found_answers,
            c.place_came_back,
            c.entry_lost,
        ));
        line(format!(
            "  {} customers were put back in the queue by a restore after admission had passed \
             their number (none of their numbers shown called before the loss): at the front, \
             admitted as places freed; {} of them were told `waiting` on claiming since ({} \
             claims, at most {} for one); each counts as passed over in check 8",
            c.requeued_after_their_number_passed,
            c.requeued_and_told_to_wait,
            c.requeued_told_to_wait,
            c.requeued_told_to_wait_most
        ));
    }
}

fn render_impact(impact: &FaultImpact, line: &mut impl FnMut(String)) {
    let first = |route: routes::ContractRoute| {
        impact
            .route(route.key)
            .map_or_else(|| "not sent".to_owned(), RouteImpact::first_success)
    };
    line(format!(
        "    until {:.1} s later: {} answers 503 (the last {}); first 2xx after it: join {}, \
         poll {}, hold {}, status {}",
        impact.window_seconds,
        impact.unavailable,
        seconds_or_none(impact.unavailable_for_seconds),
        first(routes::join()),
        first(routes::poll()),
        first(routes::hold()),
        first(routes::status()),
    ));
    line(format!(
        "    {:<42} {:>7} {:>6} {:>5} {:>5} {:>6} {:>6} {:>10} {:>9}",
        "route", "answers", "2xx", "503", "404", "other", "none", "first 2xx", "last 503"
    ));
    for route in &impact.routes {
        line(format!(
            "    {:<42} {:>7} {:>6} {:>5} {:>5} {:>6} {:>6} {:>10} {:>9}",
            route.route,
            route.answers,
            route.succeeded,
            route.unavailable,
            route.not_found,
            route.other_errors,
            route.no_answer,
            route.first_success(),
            seconds_or_none(route.last_unavailable_seconds),
        ));
    }
    let mut errors: Vec<(String, usize)> = Vec::new();
    for route in &impact.routes {
        for (error, count) in &route.errors {
            match errors.iter_mut().find(|(seen, _)| seen == error) {
                Some((_, total)) => *total += count,
                None => errors.push((error.clone(), *count)),
            }
        }
    }
    if !errors.is_empty() {
        errors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let errors: Vec<String> = errors
            .iter()
            .map(|(error, count)| format!("{error} ×{count}"))
            .collect();
        line(format!("    non-2xx answers: {}", errors.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Vec<(Fault, u64)> {
        ChaosPlan::parse(text)
            .unwrap()
            .actions()
            .iter()
            .map(|action| (action.fault, action.at.as_millis() as u64))
            .collect()
    }

    #[test]
    fn a_plan_is_actions_at_offsets_in_time_order() {
        assert_eq!(
            plan("flush@25s,restart@60s"),
            [(Fault::Flush, 25_000), (Fault::Restart, 60_000)]
        );
        assert_eq!(
            plan(" restart@1m30s , FLUSH@1m ,flush@500ms"),
            [
                (Fault::Flush, 500),
                (Fault::Flush, 60_000),
                (Fault::Restart, 90_000)
            ]
        );
        assert_eq!(plan("flush@0s"), [(Fault::Flush, 0)]);
        assert_eq!(plan("flush@1h2m3s4ms"), [(Fault::Flush, 3_723_004)]);
        // Same moment: the order given.
        assert_eq!(
            plan("restart@5s,flush@5s"),
            [(Fault::Restart, 5_000), (Fault::Flush, 5_000)]
        );
    }

    #[test]
    fn a_plan_is_written_back_as_it_would_be_given() {
        let plan = ChaosPlan::parse("restart@90s,flush@25s,flush@2500ms,flush@3600s").unwrap();
        assert_eq!(
            plan.to_string(),
            "flush@2s500ms,flush@25s,restart@1m30s,flush@1h"
        );
        assert_eq!(ChaosPlan::parse(&plan.to_string()).unwrap(), plan);
        assert_eq!(offset_text(Duration::ZERO), "0s");
    }

    #[test]
    fn bad_plans_are_refused_saying_what_is_wrong() {
        let error = |text: &str| ChaosPlan::parse(text).unwrap_err();
        assert_eq!(error(""), ChaosSyntaxError::Empty);
        assert_eq!(error("  "), ChaosSyntaxError::Empty);
        assert_eq!(
            error("flush@25s,,restart@1m"),
            ChaosSyntaxError::EmptyItem { position: 2 }
        );
        assert_eq!(
            error("flush@25s,"),
            ChaosSyntaxError::EmptyItem { position: 2 }
        );
        assert_eq!(
            error("flush25s"),
            ChaosSyntaxError::NoAt {
                item: "flush25s".into()
            }
        );
        assert_eq!(
            error("reboot@5s"),
            ChaosSyntaxError::UnknownAction {
                item: "reboot@5s".into(),
                action: "reboot".into()
            }
        );
        let why = |text: &str| match error(text) {
            ChaosSyntaxError::BadOffset { why, .. } => why,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(why("flush@"), "it is empty");
        assert_eq!(
            why("flush@25"),
            "a number needs a unit (h, m, s or ms): 25s, not 25"
        );
        assert_eq!(
            why("flush@1.5s"),
            "whole numbers only (write 1500ms, not 1.5s)"
        );
        assert_eq!(why("flush@5d"), "the units are h, m, s and ms");
        assert_eq!(
            why("flush@30s1m"),
            "units go largest first, each once (1m30s, not 30s1m)"
        );
        assert_eq!(
            why("flush@1s1s"),
            "units go largest first, each once (1m30s, not 30s1m)"
        );
        assert_eq!(
            why("flush@s"),
            "each part is a number followed by a unit (h, m, s or ms)"
        );
        assert_eq!(
            why("flush@-5s"),
            "each part is a number followed by a unit (h, m, s or ms)"
        );
        assert_eq!(why("flush@25h"), "it is longer than a day");
        assert_eq!(why("flush@99999999999999999999s"), "the number is too big");
        let message = error("flush@25").to_string();
        assert_eq!(
            message,
            "`flush@25`: the offset `25` is not a duration like 25s, 1m, 1m30s or 500ms: a number \
             needs a unit (h, m, s or ms): 25s, not 25"
        );
    }

    #[tokio::test]
    async fn a_restart_needs_the_redis_on_this_machine() {
        let plan = ChaosPlan::parse("restart@1s").unwrap();
        let refused = Target::find(&plan, "redis://10.1.2.3:6379").await;
        assert!(
            matches!(refused, Err(TargetError::NotLocal(_))),
            "{refused:?}"
        );
        // A flush only needs a Redis URL (nothing is contacted until it fires).
        let flush = ChaosPlan::parse("flush@1s").unwrap();
        let target = Target::find(&flush, "redis://10.1.2.3:6379").await.unwrap();
        assert_eq!(target.local_port, None);
        let local = Target::find(&flush, "redis://127.0.0.1:6481")
            .await
            .unwrap();
        assert_eq!(local.local_port, Some(6481));
    }

    #[tokio::test]
    async fn faults_not_due_when_the_crowd_is_done_are_reported_not_done() {
        let plan = ChaosPlan::parse("flush@1h").unwrap();
        let target = Target {
            redis_url: "redis://127.0.0.1:1".into(),
            local_port: Some(1),
        };
        let (done, crowd_done) = watch::channel(false);
        let running = tokio::spawn(run(
            plan,
            target,
            Instant::now(),
            Notes::silent(),
            crowd_done,
        ));
        done.send_replace(true);
        let fired = running.await.unwrap();
        assert_eq!(fired.len(), 1);
        assert!(fired[0].at.is_none());
        assert!(
            fired[0]
                .outcome
                .as_ref()
                .unwrap_err()
                .starts_with("the crowd was done after"),
            "{:?}",
            fired[0].outcome
        );
    }
}
