//! The operator's side of an on-sale: seeding an event's seats, and opening, closing or
//! re-pacing its queue. Each is a small use case over the library's ports, so `lineup dev`, the
//! `lineup seed`/`lineup event` commands and the simulation share them.

use std::time::{Duration, SystemTime};

use lineup::event_settings::{EventSettings, QueueState};
use lineup::ids::EventId;
use lineup::ledger::dynamo::DynamoLedger;
use lineup::ledger::{NewSeat, SeatLedger, SeatStatus};
use lineup::queue::EventSettingsStore;
use lineup::LineupError;

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
    /// At most this many seats per customer for the event (paid, or held and not lapsed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub ticket_limit: Option<u32>,
    /// Remove the event's ticket limit (customers may then buy any number of seats).
    #[arg(long, conflicts_with = "ticket_limit")]
    pub no_ticket_limit: bool,
}

#[derive(Debug, Clone, Copy)]
pub enum OpensAt {
    At(SystemTime),
    In(Duration),
}

impl OpensAt {
    fn resolve(self, now: SystemTime) -> SystemTime {
        match self {
            Self::At(at) => at,
            Self::In(delay) => now + delay,
        }
    }
}

fn parse_opens_at(raw: &str) -> Result<OpensAt, String> {
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
    #[error("no event {0} is configured in the queue store")]
    UnknownEvent(String),
    #[error("event {event} has {in_use} seats held or sold; seeding it again would put them back on sale")]
    SeatsInUse { event: String, in_use: usize },
    #[error("max active and rate must be at least 1")]
    ZeroLimit,
    #[error("the ticket limit must be at least 1 (--no-ticket-limit removes it)")]
    ZeroTicketLimit,
    #[error("--ticket-limit and --no-ticket-limit contradict each other")]
    ConflictingTicketLimit,
    #[error(transparent)]
    Lineup(#[from] LineupError),
}

impl SettingsChange {
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
        match (self.ticket_limit, self.no_ticket_limit) {
            (Some(_), true) => return Err(AdminError::ConflictingTicketLimit),
            (Some(0), false) => return Err(AdminError::ZeroTicketLimit),
            (Some(limit), false) => settings.ticket_limit = Some(limit),
            (None, true) => settings.ticket_limit = None,
            (None, false) => {}
        }
        if settings.max_active == 0 || settings.admit_per_second == 0 {
            return Err(AdminError::ZeroLimit);
        }
        Ok(settings)
    }
}

/// Writes the seats (all AVAILABLE). Seeding overwrites seats with the same ids, so it is
/// refused while any of the event's seats is held or sold: re-seeding a live on-sale would put
/// sold seats back on sale. Each write is conditioned on its seat not being in use, so even a
/// hold racing the seeding keeps its seat (the seeding then reports it).
pub async fn seed(
    ledger: &DynamoLedger,
    event: &EventId,
    seats: &[NewSeat],
    now: SystemTime,
) -> Result<(), AdminError> {
    let in_use = ledger
        .seat_map(event, now)
        .await?
        .iter()
        .filter(|seat| seat.status != SeatStatus::Available)
        .count();
    if in_use > 0 {
        return Err(AdminError::SeatsInUse {
            event: event.as_str().to_owned(),
            in_use,
        });
    }
    // The check above answers early and writes nothing; the writes themselves are conditional,
    // so a hold that lands between the check and the writes keeps its seat.
    let in_use = ledger.seed_seats(event, seats, now).await?;
    if !in_use.is_empty() {
        return Err(AdminError::SeatsInUse {
            event: event.as_str().to_owned(),
            in_use: in_use.len(),
        });
    }
    tracing::info!(event = %event, seats = seats.len(), "seats seeded");
    Ok(())
}

/// Opens the event's queue (creating its settings, with defaults for what `change` leaves out).
pub async fn open(
    store: &dyn EventSettingsStore,
    event: &EventId,
    change: &SettingsChange,
    now: SystemTime,
) -> Result<EventSettings, AdminError> {
    let current = store
        .settings(event)
        .await?
        .unwrap_or_else(|| EventSettings::opening_at(now));
    let mut settings = change.apply(current, now)?;
    settings.state = QueueState::Open;
    store.configure(event, &settings).await?;
    Ok(settings)
}

/// Changes an existing event's settings, keeping its state.
pub async fn set(
    store: &dyn EventSettingsStore,
    event: &EventId,
    change: &SettingsChange,
    now: SystemTime,
) -> Result<EventSettings, AdminError> {
    let current = store
        .settings(event)
        .await?
        .ok_or_else(|| AdminError::UnknownEvent(event.as_str().to_owned()))?;
    let settings = change.apply(current, now)?;
    store.configure(event, &settings).await?;
    Ok(settings)
}

/// Closes the queue: joins are refused, waiting customers are told it is closed.
pub async fn close(store: &dyn EventSettingsStore, event: &EventId) -> Result<(), AdminError> {
    if store.close(event).await? {
        Ok(())
    } else {
        Err(AdminError::UnknownEvent(event.as_str().to_owned()))
    }
}

/// How many of an event's seats are on sale, held or sold, as the seat map shows them (a lapsed
/// hold's seat is on sale again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatCounts {
    pub available: usize,
    pub held: usize,
    pub sold: usize,
}

impl std::fmt::Display for SeatCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total = self.available + self.held + self.sold;
        if total == 0 {
            return f.write_str("seats: none seeded");
        }
        write!(
            f,
            "seats: {total} ({} available, {} held, {} sold)",
            self.available, self.held, self.sold
        )
    }
}

/// Counts the event's seats by status, from the seats table.
pub async fn seat_counts(
    ledger: &dyn SeatLedger,
    event: &EventId,
    now: SystemTime,
) -> Result<SeatCounts, AdminError> {
    let mut counts = SeatCounts::default();
    for seat in ledger.seat_map(event, now).await? {
        match seat.status {
            SeatStatus::Available => counts.available += 1,
            SeatStatus::Held => counts.held += 1,
            SeatStatus::Sold => counts.sold += 1,
        }
    }
    Ok(counts)
}

/// One line per setting, for the operator's terminal. (The pre-queue draw seed is not a
/// setting: it is never shown before opening.)
pub fn describe(event: &EventId, settings: &EventSettings) -> String {
    let ticket_limit = match settings.ticket_limit {
        Some(limit) => format!("at most {limit} tickets per customer"),
        None => "no ticket limit".to_owned(),
    };
    format!(
        "event {}: {}, opens at {}, max active {}, {} admissions/s, sessions of {}, {}",
        event,
        settings.state.as_str(),
        humantime::format_rfc3339_seconds(settings.opens_at),
        settings.max_active,
        settings.admit_per_second,
        humantime::format_duration(settings.session),
        ticket_limit,
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
        assert!(describe(&EventId::parse("gala").unwrap(), &removed).ends_with("no ticket limit"));
    }

    #[test]
    fn seat_counts_read_as_a_sentence() {
        let counts = SeatCounts {
            available: 7,
            held: 2,
            sold: 1,
        };
        assert_eq!(
            counts.to_string(),
            "seats: 10 (7 available, 2 held, 1 sold)"
        );
        assert_eq!(SeatCounts::default().to_string(), "seats: none seeded");
    }
}
