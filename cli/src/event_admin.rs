//! The operator's side of an on-sale: seeding an event's seats, and opening, pausing, resuming,
//! closing or re-pacing its queue. Each is a small use case over the library's ports, so
//! `lineup dev`, the `lineup seed`/`lineup event` commands and the simulation share them.
//!
//! Every change is written to the event's durable record first (DynamoDB, where the draw seed
//! is made once), then to the cache, then published as the event's status; and each is kept as
//! an audit record (`lineup event history`). Before any of it, when a store of live events is
//! configured (in AWS: `--live-events-store`), the event's id is put there
//! ([`crate::live_events`]): the edge then lets its requests through, and an event is never live
//! in the cache but unknown at the edge. A store that cannot be written fails the command with
//! nothing changed.

use std::time::{Duration, SystemTime};

use lineup::adapters::dynamo::DynamoLedger;
use lineup::application::admit::PreQueueSize;
use lineup::application::error::LineupError;
use lineup::application::ports::event_records::{
    AdmissionCursor, AuditEntry, AuditLog, EventRecords,
};
use lineup::application::ports::queue::{Admitter, EventSettingsStore, PlaceRestorer};
use lineup::application::seeding::{SeedOutcome, Seeding};
use lineup::domain::clock::unix_millis;
use lineup::domain::event_settings::{ClosedReason, EventSettings, QueueState};
use lineup::domain::ids::EventId;
use lineup::domain::layout::SeatLayout;
use lineup::domain::priority_group::PriorityGroups;
use lineup::domain::proof_of_work::ChallengeDifficulty;
use lineup::domain::seat_allocation::SeatAllocations;

/// Changes to an event's settings; `None` keeps the current value (or the default, for a new
/// event).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsChange {
    /// At most this many admitted customers shop at once.
    #[arg(long)]
    pub max_active: Option<u32>,
    /// Admissions per second.
    #[arg(long)]
    pub rate: Option<u32>,
    /// When admission starts: an RFC 3339 time (2026-12-01T10:00:00Z) or a delay from now
    /// (`+10m`). Customers joining earlier form the pre-queue, ahead of later arrivals in an
    /// order drawn from the event's seed (no positions are shown before opening).
    #[arg(long, value_parser = parse_opens_at)]
    pub opens_at: Option<OpensAt>,
    /// How long an admission lasts, in seconds, before its slot goes to the next customer.
    #[arg(long)]
    pub session_seconds: Option<u64>,
    /// How long, in seconds, an admitted customer has to claim the admission before the slot
    /// goes to the next number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(5..))]
    pub claim_seconds: Option<u64>,
    /// At most this many seats per customer for the event (paid, or held and not lapsed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub ticket_limit: Option<u32>,
    /// Remove the event's ticket limit (customers may then buy any number of seats).
    #[arg(long, conflicts_with = "ticket_limit")]
    pub no_ticket_limit: bool,
    /// The proof-of-work every new joiner must show: this many leading zero bits (0 to 24; 0
    /// asks none, the default; 18 is about a second on a phone, BENCHMARKS.md). Takes effect
    /// at once, also on a live on-sale.
    #[arg(long, value_name = "BITS", value_parser = parse_challenge_difficulty)]
    pub challenge_difficulty: Option<ChallengeDifficulty>,
    /// Whether a new joiner must bring an access code (`lineup event codes create`); customers
    /// already in the queue keep their place. Takes effect at once.
    #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
    pub code_required: Option<bool>,
}

fn parse_challenge_difficulty(raw: &str) -> Result<ChallengeDifficulty, String> {
    let bits: u32 = raw
        .parse()
        .map_err(|_| format!("{raw:?} is not a number of bits (0 to 24)"))?;
    ChallengeDifficulty::new(bits).map_err(|error| error.to_string())
}

#[derive(Debug, Clone, Copy)]
pub enum OpensAt {
    At(SystemTime),
    In(Duration),
}

impl OpensAt {
    /// The time meant, as of `now`.
    pub fn resolve(self, now: SystemTime) -> SystemTime {
        match self {
            Self::At(at) => at,
            Self::In(delay) => now + delay,
        }
    }
}

/// An RFC 3339 time or a `+delay` from now.
pub fn parse_opens_at(raw: &str) -> Result<OpensAt, String> {
    if let Some(delay) = raw.strip_prefix('+') {
        return humantime::parse_duration(delay)
            .map(OpensAt::In)
            .map_err(|error| format!("{raw:?} is not a delay such as +10m: {error}"));
    }
    humantime::parse_rfc3339_weak(raw)
        .map(OpensAt::At)
        .map_err(|error| format!("{raw:?} is not an RFC 3339 time or a +delay: {error}"))
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no event {0} is configured")]
    UnknownEvent(String),
    #[error("event {0} is closed; `lineup event open` opens it again")]
    Closed(String),
    #[error("event {0} is cancelled: it is never opened, changed or closed again")]
    Cancelled(String),
    #[error("event {event} has {in_use} seats held or sold; seeding it again would put them back on sale")]
    SeatsInUse { event: String, in_use: usize },
    #[error("the group {group} sets aside section {section:?}, which this layout does not have; change the group first (`lineup event group set --sections ...` or `--no-sections`)")]
    SetAsideSectionMissing { group: String, section: String },
    #[error("max active and rate must be at least 1")]
    ZeroLimit,
    #[error("the ticket limit must be at least 1 (--no-ticket-limit removes it)")]
    ZeroTicketLimit,
    #[error("--ticket-limit and --no-ticket-limit contradict each other")]
    ConflictingTicketLimit,
    #[error(
        "event {event} has {entrants} customers in its pre-queue: its opening ({opens_at}) cannot \
         move any more, or whoever moves it could choose the moment the pre-queue closes, and \
         with it the draw (docs/decisions/0023-a-draw-nobody-can-steer.md)"
    )]
    OpeningFixed {
        event: String,
        entrants: u64,
        opens_at: String,
    },
    #[error("nothing was changed: the edge could not be told the event is live")]
    LiveEvents(#[from] crate::live_events::LiveEventsError),
    #[error(transparent)]
    Lineup(#[from] LineupError),
}

impl SettingsChange {
    /// The opening this change moves `current` to, if it moves it (to the millisecond, as the
    /// events table keeps it).
    fn moved_opening(&self, current: &EventSettings, now: SystemTime) -> Option<SystemTime> {
        let opens_at = self.opens_at?.resolve(now);
        (unix_millis(opens_at) != unix_millis(current.opens_at)).then_some(opens_at)
    }

    fn apply(
        &self,
        mut settings: EventSettings,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        if let Some(max_active) = self.max_active {
            settings.max_active = max_active;
        }
        if let Some(rate) = self.rate {
            settings.admit_per_second = rate;
        }
        if let Some(opens_at) = self.opens_at {
            settings.opens_at = opens_at.resolve(now);
        }
        if let Some(seconds) = self.session_seconds {
            settings.session = Duration::from_secs(seconds);
        }
        if let Some(seconds) = self.claim_seconds {
            settings.claim_window = Duration::from_secs(seconds);
        }
        match (self.ticket_limit, self.no_ticket_limit) {
            (Some(_), true) => return Err(AdminError::ConflictingTicketLimit),
            (Some(0), false) => return Err(AdminError::ZeroTicketLimit),
            (Some(limit), false) => settings.ticket_limit = Some(limit),
            (None, true) => settings.ticket_limit = None,
            (None, false) => {}
        }
        if let Some(difficulty) = self.challenge_difficulty {
            settings.challenge_difficulty = difficulty;
        }
        if let Some(required) = self.code_required {
            settings.code_required = required;
        }
        if settings.max_active == 0 || settings.admit_per_second == 0 {
            return Err(AdminError::ZeroLimit);
        }
        Ok(settings)
    }
}

/// Writes the seats of `layout` (all AVAILABLE) and makes it the event's layout
/// ([`lineup::application::seeding`]). Refused while any of the event's seats is held or sold: re-seeding a
/// live on-sale would put sold seats back on sale.
pub async fn seed(
    ledger: &DynamoLedger,
    records: &lineup::adapters::dynamo::event_records::DynamoEventRecords,
    queue: &lineup::adapters::redis::queue::RedisQueue,
    event: &EventId,
    layout: &SeatLayout,
    now: SystemTime,
) -> Result<(), AdminError> {
    let board = queue.availability_board();
    let seeding = Seeding {
        ledger,
        layouts: records,
        board: &board,
    };
    // Sections set aside for a priority group stay set aside in the seats written (ADR 0032).
    let allocations = records
        .event(event)
        .await?
        .map(|record| SeatAllocations::of(&record.settings.groups))
        .unwrap_or_default();
    // A section set aside that the layout does not have would set nothing aside, while the seat
    // map still said so: refused before anything is written.
    for (section, reservation) in allocations.iter() {
        if !layout.sections().iter().any(|known| known.name == section) {
            return Err(AdminError::SetAsideSectionMissing {
                group: reservation.group.to_string(),
                section: section.to_owned(),
            });
        }
    }
    match seeding.seed(event, layout, &allocations, now).await? {
        SeedOutcome::Seeded { .. } => Ok(()),
        SeedOutcome::Refused { in_use } => Err(AdminError::SeatsInUse {
            event: event.as_str().to_owned(),
            in_use,
        }),
        SeedOutcome::SeededAround { in_use } => Err(AdminError::SeatsInUse {
            event: event.as_str().to_owned(),
            in_use: in_use.len(),
        }),
    }
}

/// Seeds `event` with `layout` and opens its queue with `change`, each step in the audit trail
/// under `operator`: how `lineup dev` and `lineup local-aws` set up an event to try things on.
/// `None`, changing nothing, when the events table has the event already: it is kept as it is
/// (its seats may be held or sold, its queue may have customers in it).
#[allow(clippy::too_many_arguments)]
pub async fn seed_and_open_new(
    ledger: &DynamoLedger,
    records: &lineup::adapters::dynamo::event_records::DynamoEventRecords,
    queue: &lineup::adapters::redis::queue::RedisQueue,
    event: &EventId,
    layout: &SeatLayout,
    change: &SettingsChange,
    operator: &str,
    now: SystemTime,
) -> Result<Option<EventSettings>, AdminError> {
    if records.event(event).await?.is_some() {
        return Ok(None);
    }
    seed(ledger, records, queue, event, layout, now).await?;
    let admin = EventAdmin::new(queue, records, operator);
    // Opened before the seeding is recorded: an event with a history is one the cache lost.
    let opened = admin.open(event, change, now).await?;
    admin
        .record(
            event,
            "seed",
            serde_json::json!({ "seats": layout.seat_count(), "layout": layout.version() }),
            now,
        )
        .await?;
    Ok(Some(opened))
}

/// The ports an operator's change goes through.
pub struct EventAdmin<'a> {
    /// The cache's copy of the settings.
    pub store: &'a dyn EventSettingsStore,
    /// One tick after a change publishes the event's status at once.
    pub admitter: &'a dyn Admitter,
    /// The durable record (the truth; the cache is re-loaded from it).
    pub records: &'a dyn EventRecords,
    /// Re-loads an event the cache lost before changing it (never a fresh start at number 0).
    pub restorer: &'a dyn PlaceRestorer,
    pub audit: &'a dyn AuditLog,
    /// How many are in the pre-queue: once anyone is, the opening does not move (ADR 0023).
    pub pre_queue: &'a dyn PreQueueSize,
    /// Who is making the change, for the audit trail.
    pub operator: String,
    /// The store of live events the edge reads, written before each change; none locally.
    pub live_events: Option<&'a dyn crate::live_events::LiveEvents>,
}

impl<'a> EventAdmin<'a> {
    /// The use cases over Redis (the cache's copy, and the tick that publishes the status) and
    /// the events table (the record and the audit trail), as every command wires them.
    pub fn new(
        queue: &'a lineup::adapters::redis::queue::RedisQueue,
        records: &'a lineup::adapters::dynamo::event_records::DynamoEventRecords,
        operator: impl Into<String>,
    ) -> Self {
        Self {
            store: queue,
            admitter: queue,
            records,
            restorer: queue,
            audit: records,
            pre_queue: queue,
            operator: operator.into(),
            live_events: None,
        }
    }

    /// The same use cases, each first putting the event's id into `live_events`.
    pub fn with_live_events(
        mut self,
        live_events: Option<&'a dyn crate::live_events::LiveEvents>,
    ) -> Self {
        self.live_events = live_events;
        self
    }
}

impl EventAdmin<'_> {
    /// The event's settings and closing reason: the durable record, else (an event configured
    /// before records existed) the cache's copy.
    async fn current(
        &self,
        event: &EventId,
    ) -> Result<Option<(EventSettings, Option<String>)>, AdminError> {
        if let Some(record) = self.records.event(event).await? {
            return Ok(Some((record.settings, record.closed_reason)));
        }
        Ok(self
            .store
            .settings(event)
            .await?
            .map(|settings| (settings, None)))
    }

    async fn existing(
        &self,
        event: &EventId,
    ) -> Result<(EventSettings, Option<String>), AdminError> {
        self.current(event)
            .await?
            .ok_or_else(|| AdminError::UnknownEvent(event.as_str().to_owned()))
    }

    /// Tells the edge the event is live (when a store is configured: nothing is changed if that
    /// fails), records the change in the audit trail, then writes `settings` everywhere and publishes
    /// the status: the entry comes first, so no change is ever applied that the trail does not
    /// name (a change that then fails leaves its entry, followed by a `<action>-failed` one when
    /// that can still be written). An existing event the cache lost is re-loaded from its record
    /// first (its cursor, its number ceiling, the restore mark that lets customers' tickets put
    /// them back), then changed.
    async fn apply(
        &self,
        event: &EventId,
        settings: &EventSettings,
        closed_reason: Option<ClosedReason>,
        action: &str,
        now: SystemTime,
    ) -> Result<(), AdminError> {
        // The edge first: were it told after, a failure would leave the event live but refused.
        if let Some(live_events) = self.live_events {
            live_events.add(event).await?;
        }
        // Whether the event existed before this change (asked before its own entry is written).
        let lost_from_cache = self.store.settings(event).await?.is_none();
        let had_history = lost_from_cache && !self.audit.history(event).await?.is_empty();
        self.record(
            event,
            action,
            serde_json::json!({ "settings": describe(event, settings) }),
            now,
        )
        .await?;
        let applied = self
            .write_settings(
                event,
                settings,
                closed_reason,
                lost_from_cache,
                had_history,
                now,
            )
            .await;
        if let Err(failure) = &applied {
            let detail = serde_json::json!({ "error": failure.to_string() });
            let failed = format!("{action}-failed");
            // A millisecond later: entries of the same millisecond are listed in no order.
            let after = now + std::time::Duration::from_millis(1);
            if let Err(error) = self.record(event, &failed, detail, after).await {
                tracing::warn!(event = %event, error = %error, "could not record that the change failed");
            }
        }
        applied
    }

    /// Writes the event's settings, then its priority groups' lines' (each group's line takes
    /// the event's settings, opening at the group's opening: `EventSettings::for_line`).
    async fn write_settings(
        &self,
        event: &EventId,
        settings: &EventSettings,
        closed_reason: Option<ClosedReason>,
        lost_from_cache: bool,
        had_history: bool,
        now: SystemTime,
    ) -> Result<(), AdminError> {
        self.write_line(
            event,
            settings,
            closed_reason,
            lost_from_cache,
            had_history,
            now,
        )
        .await?;
        for line in settings.groups.lines(event) {
            if line == *event {
                continue;
            }
            let lost_from_cache = self.store.settings(&line).await?.is_none();
            self.write_line(
                &line,
                &settings.for_line(&line),
                closed_reason,
                lost_from_cache,
                false,
                now,
            )
            .await?;
        }
        Ok(())
    }

    async fn write_line(
        &self,
        event: &EventId,
        settings: &EventSettings,
        closed_reason: Option<ClosedReason>,
        lost_from_cache: bool,
        had_history: bool,
        now: SystemTime,
    ) -> Result<(), AdminError> {
        let seed = self
            .records
            .save_settings(event, settings, closed_reason.map(ClosedReason::as_str))
            .await?;
        if lost_from_cache {
            if let Some(record) = self.records.event(event).await? {
                let existed = record.cursor != AdmissionCursor::default()
                    || record.number_ceiling > 0
                    || had_history;
                if existed && self.restorer.restore_event(event, &record, now).await? {
                    tracing::warn!(event = %event, "the cache had lost the event: re-loaded from DynamoDB before the change");
                }
            }
        }
        self.store.configure(event, settings, &seed).await?;
        if settings.state == QueueState::Closed {
            self.store
                .close(event, closed_reason.unwrap_or(ClosedReason::Closed))
                .await?;
        }
        // A closed or paused event's status must say so now, not at the next tick (a closed one
        // gets no more ticks).
        if let Err(error) = self.admitter.publish_tick(event, now).await {
            tracing::warn!(event = %event, error = %error, "could not publish the status");
        }
        Ok(())
    }

    /// Keeps one operator action in the audit trail.
    pub async fn record(
        &self,
        event: &EventId,
        action: &str,
        detail: serde_json::Value,
        now: SystemTime,
    ) -> Result<(), AdminError> {
        let entry = AuditEntry {
            at_ms: unix_millis(now),
            action: action.to_owned(),
            operator: self.operator.clone(),
            detail,
        };
        self.audit.record(event, &entry).await?;
        Ok(())
    }

    /// Refuses a change that moves the opening of an event with anyone in its pre-queue (open,
    /// or closed with entrants, in the cache or as the durable cursor recorded it): whoever could
    /// move it while watching the pre-queue, knowing the seed, could pick the moment it closes,
    /// and so the list the draw is made from (ADR 0023).
    async fn keep_opening_fixed(
        &self,
        event: &EventId,
        current: &EventSettings,
        change: &SettingsChange,
        now: SystemTime,
    ) -> Result<(), AdminError> {
        if change.moved_opening(current, now).is_none() {
            return Ok(());
        }
        let entrants = self.entrants(event).await?;
        if entrants > 0 {
            return Err(AdminError::OpeningFixed {
                event: event.as_str().to_owned(),
                entrants,
                opens_at: humantime::format_rfc3339_seconds(current.opens_at).to_string(),
            });
        }
        Ok(())
    }

    /// Opens the event's queue (creating the event, with defaults for what `change` leaves out).
    pub async fn open(
        &self,
        event: &EventId,
        change: &SettingsChange,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        let current = match self.current(event).await? {
            Some((_, reason)) if is_cancelled(reason.as_deref()) => {
                return Err(AdminError::Cancelled(event.as_str().to_owned()))
            }
            Some((settings, _)) => {
                self.keep_opening_fixed(event, &settings, change, now)
                    .await?;
                settings
            }
            None => EventSettings::opening_at(now),
        };
        let mut settings = change.apply(current, now)?;
        settings.state = QueueState::Open;
        self.apply(event, &settings, None, "open", now).await?;
        Ok(settings)
    }

    /// Changes an existing event's settings, keeping its state.
    pub async fn set(
        &self,
        event: &EventId,
        change: &SettingsChange,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        let (current, reason) = self.existing(event).await?;
        if is_cancelled(reason.as_deref()) {
            return Err(AdminError::Cancelled(event.as_str().to_owned()));
        }
        self.keep_opening_fixed(event, &current, change, now)
            .await?;
        let settings = change.apply(current, now)?;
        let reason = reason.as_deref().and_then(ClosedReason::parse);
        self.apply(event, &settings, reason, "set", now).await?;
        Ok(settings)
    }

    /// Stops admission: joins and places stay, the status says `paused`.
    pub async fn pause(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        self.change_state(event, QueueState::Paused, "pause", now)
            .await
    }

    /// Admission goes on from where it stopped.
    pub async fn resume(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        self.change_state(event, QueueState::Open, "resume", now)
            .await
    }

    async fn change_state(
        &self,
        event: &EventId,
        state: QueueState,
        action: &str,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        let (mut settings, reason) = self.existing(event).await?;
        if is_cancelled(reason.as_deref()) {
            return Err(AdminError::Cancelled(event.as_str().to_owned()));
        }
        if settings.state == QueueState::Closed {
            return Err(AdminError::Closed(event.as_str().to_owned()));
        }
        settings.state = state;
        self.apply(event, &settings, None, action, now).await?;
        Ok(settings)
    }

    /// Closes the queue: joins are refused, waiting customers are told it is closed.
    pub async fn close(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        let (mut settings, reason) = self.existing(event).await?;
        if is_cancelled(reason.as_deref()) {
            return Err(AdminError::Cancelled(event.as_str().to_owned()));
        }
        settings.state = QueueState::Closed;
        self.apply(event, &settings, Some(ClosedReason::Closed), "close", now)
            .await?;
        Ok(settings)
    }

    /// Closes the queue for good and stops every sale (`lineup event cancel`): joins are
    /// refused, the status says `cancelled`, and a hold by a customer already admitted gets 409
    /// `event_cancelled`. Nothing opens, changes or closes the event after this; doing it again
    /// changes nothing more (and records the entry again).
    pub async fn cancel_sales(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        let (mut settings, _) = self.existing(event).await?;
        settings.state = QueueState::Closed;
        self.apply(
            event,
            &settings,
            Some(ClosedReason::Cancelled),
            "close",
            now,
        )
        .await?;
        Ok(settings)
    }

    /// Replaces the event's priority groups (`lineup event group add|set|remove`): the event's
    /// record, then every line's. A group whose pre-queue has anyone in it keeps its opening
    /// (ADR 0023, per line); a removed group's line is closed (its waiting members are told
    /// `closed` and may join again, in the lines that take them).
    pub async fn set_groups(
        &self,
        event: &EventId,
        groups: PriorityGroups,
        action: &str,
        now: SystemTime,
    ) -> Result<EventSettings, AdminError> {
        let (current, reason) = self.existing(event).await?;
        if is_cancelled(reason.as_deref()) {
            return Err(AdminError::Cancelled(event.as_str().to_owned()));
        }
        for group in groups.iter() {
            let Some(before) = current.groups.get(&group.name) else {
                continue;
            };
            if unix_millis(before.opens_at) == unix_millis(group.opens_at) {
                continue;
            }
            let line = event.group_line(&group.name);
            let entrants = self.entrants(&line).await?;
            if entrants > 0 {
                return Err(AdminError::OpeningFixed {
                    event: line.as_str().to_owned(),
                    entrants,
                    opens_at: humantime::format_rfc3339_seconds(before.opens_at).to_string(),
                });
            }
        }
        let removed: Vec<EventId> = current
            .groups
            .iter()
            .filter(|group| groups.get(&group.name).is_none())
            .map(|group| event.group_line(&group.name))
            .collect();
        let settings = EventSettings { groups, ..current };
        let reason = reason.as_deref().and_then(ClosedReason::parse);
        self.apply(event, &settings, reason, action, now).await?;
        for line in removed {
            let mut closed = settings.clone();
            closed.groups = PriorityGroups::none();
            closed.state = QueueState::Closed;
            let lost_from_cache = self.store.settings(&line).await?.is_none();
            self.write_line(
                &line,
                &closed,
                Some(ClosedReason::Closed),
                lost_from_cache,
                false,
                now,
            )
            .await?;
        }
        Ok(settings)
    }

    /// How many entered `line`'s pre-queue (in the cache, or as its durable cursor recorded).
    async fn entrants(&self, line: &EventId) -> Result<u64, AdminError> {
        let in_cache = self.pre_queue.pre_queue_size(line).await?;
        let durable = self
            .records
            .event(line)
            .await?
            .and_then(|record| record.cursor.entrants)
            .unwrap_or(0);
        Ok(in_cache.max(durable))
    }

    /// The event's priority groups, first admitted first.
    pub async fn groups(&self, event: &EventId) -> Result<PriorityGroups, AdminError> {
        Ok(self.existing(event).await?.0.groups)
    }

    /// Every operator change to the event, oldest first.
    pub async fn history(&self, event: &EventId) -> Result<Vec<AuditEntry>, AdminError> {
        Ok(self.audit.history(event).await?)
    }
}

fn is_cancelled(reason: Option<&str>) -> bool {
    reason.and_then(ClosedReason::parse) == Some(ClosedReason::Cancelled)
}

/// One line per audit entry, for the operator's terminal.
pub fn describe_entry(entry: &AuditEntry) -> String {
    let at = humantime::format_rfc3339_millis(lineup::domain::clock::from_unix_millis(entry.at_ms));
    format!(
        "{at}  {:<6}  by {}  {}",
        entry.action, entry.operator, entry.detail
    )
}

/// How many of an event's seats are on sale, held or sold, as the seat map shows them (a lapsed
/// hold's seat shows as held until the expiry sweep frees it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatCounts(pub Option<lineup::application::ports::availability::SeatCounts>);

impl std::fmt::Display for SeatCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("seats: none seeded (or the seat map is being rebuilt)"),
            Some(counts) => write!(
                f,
                "seats: {} ({} available, {} held, {} sold)",
                counts.seats, counts.available, counts.held, counts.sold
            ),
        }
    }
}

/// Counts the event's seats by status, from the seat map's projection.
pub async fn seat_counts(
    board: &dyn lineup::application::ports::availability::AvailabilityBoard,
    event: &EventId,
) -> Result<SeatCounts, AdminError> {
    Ok(SeatCounts(board.counts(event).await?))
}

/// One line per setting, for the operator's terminal. (The draw seed is not a setting: it is
/// never shown before the draw is published.)
pub fn describe(event: &EventId, settings: &EventSettings) -> String {
    let ticket_limit = match settings.ticket_limit {
        Some(limit) => format!("at most {limit} tickets per customer"),
        None => "no ticket limit".to_owned(),
    };
    let challenge = match settings.challenge_difficulty {
        difficulty if difficulty.is_required() => {
            format!("a proof-of-work of {} bits to join", difficulty.bits())
        }
        _ => "no proof-of-work to join".to_owned(),
    };
    let code = if settings.code_required {
        "an access code to join"
    } else {
        "no access code to join"
    };
    let groups = if settings.groups.is_empty() {
        "no priority groups".to_owned()
    } else {
        let names: Vec<String> = settings
            .groups
            .iter()
            .map(|group| group.name.to_string())
            .collect();
        format!("priority groups {} before general", names.join(", "))
    };
    format!(
        "event {}: {}, opens at {}, max active {}, {} admissions/s, sessions of {}, {} to claim, {}, {}, {}, {}",
        event,
        settings.state.as_str(),
        humantime::format_rfc3339_seconds(settings.opens_at),
        settings.max_active,
        settings.admit_per_second,
        humantime::format_duration(settings.session),
        humantime::format_duration(settings.claim_window),
        ticket_limit,
        challenge,
        code,
        groups,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_keeps_what_it_does_not_name_and_refuses_zero_limits() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let base = EventSettings::opening_at(now);
        let change = SettingsChange {
            rate: Some(10),
            opens_at: Some(parse_opens_at("+10m").unwrap()),
            ..SettingsChange::default()
        };
        let changed = change.apply(base.clone(), now).unwrap();
        assert_eq!(changed.admit_per_second, 10);
        assert_eq!(changed.opens_at, now + Duration::from_secs(600));
        assert_eq!(changed.max_active, base.max_active);
        assert_eq!(changed.session, base.session);
        assert_eq!(changed.ticket_limit, None, "no limit unless one is named");
        let zero = SettingsChange {
            max_active: Some(0),
            ..SettingsChange::default()
        };
        assert!(matches!(zero.apply(base, now), Err(AdminError::ZeroLimit)));
        assert!(parse_opens_at("2026-12-01T10:00:00Z").is_ok());
        assert!(parse_opens_at("tomorrow").is_err());
    }

    #[test]
    fn a_change_moves_the_opening_only_when_it_names_another_millisecond() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let current = EventSettings::opening_at(now + Duration::from_secs(600));
        let none = SettingsChange {
            rate: Some(10),
            ..SettingsChange::default()
        };
        assert_eq!(none.moved_opening(&current, now), None);
        let same = SettingsChange {
            opens_at: Some(OpensAt::At(current.opens_at + Duration::from_micros(300))),
            ..SettingsChange::default()
        };
        assert_eq!(
            same.moved_opening(&current, now),
            None,
            "the same millisecond"
        );
        let later = SettingsChange {
            opens_at: Some(parse_opens_at("+11m").unwrap()),
            ..SettingsChange::default()
        };
        assert_eq!(
            later.moved_opening(&current, now),
            Some(now + Duration::from_secs(660))
        );
        let error = AdminError::OpeningFixed {
            event: "gala".into(),
            entrants: 3,
            opens_at: "2027-01-15T08:10:00Z".into(),
        };
        assert!(error
            .to_string()
            .starts_with("event gala has 3 customers in its pre-queue: its opening (2027-01-15T08:10:00Z) cannot move"));
    }

    #[test]
    fn a_ticket_limit_is_set_kept_and_removed_only_when_named() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let base = EventSettings::opening_at(now);
        let limit = |n| SettingsChange {
            ticket_limit: Some(n),
            ..SettingsChange::default()
        };
        let limited = limit(4).apply(base, now).unwrap();
        assert_eq!(limited.ticket_limit, Some(4));
        let repaced = SettingsChange {
            rate: Some(7),
            ..SettingsChange::default()
        }
        .apply(limited.clone(), now)
        .unwrap();
        assert_eq!(
            repaced.ticket_limit,
            Some(4),
            "a change that names no limit keeps it"
        );
        let removed = SettingsChange {
            no_ticket_limit: true,
            ..SettingsChange::default()
        }
        .apply(repaced, now)
        .unwrap();
        assert_eq!(removed.ticket_limit, None);
        assert!(matches!(
            limit(0).apply(limited.clone(), now),
            Err(AdminError::ZeroTicketLimit)
        ));
        let both = SettingsChange {
            no_ticket_limit: true,
            ..limit(2)
        };
        assert!(matches!(
            both.apply(limited, now),
            Err(AdminError::ConflictingTicketLimit)
        ));
        assert!(describe(&EventId::parse("gala").unwrap(), &removed)
            .contains("no ticket limit, no proof-of-work to join, no access code to join"));
    }

    #[test]
    fn a_challenge_difficulty_is_set_kept_and_turned_off_only_when_named() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let bits = |n| SettingsChange {
            challenge_difficulty: Some(ChallengeDifficulty::new(n).unwrap()),
            ..SettingsChange::default()
        };
        let hard = bits(18).apply(EventSettings::opening_at(now), now).unwrap();
        assert_eq!(hard.challenge_difficulty.bits(), 18);
        let repaced = SettingsChange {
            rate: Some(7),
            ..SettingsChange::default()
        }
        .apply(hard, now)
        .unwrap();
        assert_eq!(repaced.challenge_difficulty.bits(), 18, "kept unless named");
        assert!(describe(&EventId::parse("gala").unwrap(), &repaced)
            .contains("a proof-of-work of 18 bits to join"));
        let off = bits(0).apply(repaced, now).unwrap();
        assert!(!off.challenge_difficulty.is_required());
        assert!(parse_challenge_difficulty("24").is_ok());
        for refused in ["25", "-1", "hard"] {
            assert!(parse_challenge_difficulty(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn an_access_code_requirement_is_set_kept_and_turned_off_only_when_named() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let required = |on| SettingsChange {
            code_required: Some(on),
            ..SettingsChange::default()
        };
        let on = required(true)
            .apply(EventSettings::opening_at(now), now)
            .unwrap();
        assert!(on.code_required);
        let repaced = SettingsChange {
            rate: Some(7),
            ..SettingsChange::default()
        }
        .apply(on, now)
        .unwrap();
        assert!(repaced.code_required, "kept unless named");
        assert!(describe(&EventId::parse("gala").unwrap(), &repaced)
            .contains(", an access code to join"));
        assert!(!required(false).apply(repaced, now).unwrap().code_required);
    }

    #[test]
    fn seat_counts_read_as_a_sentence() {
        let counts = SeatCounts(Some(lineup::application::ports::availability::SeatCounts {
            seats: 10,
            available: 7,
            held: 2,
            sold: 1,
        }));
        assert_eq!(
            counts.to_string(),
            "seats: 10 (7 available, 2 held, 1 sold)"
        );
        assert!(SeatCounts::default()
            .to_string()
            .starts_with("seats: none seeded"));
    }
}
