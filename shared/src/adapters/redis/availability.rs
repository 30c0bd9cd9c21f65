//! The availability projection in Redis: the layout summary (a hash) and two bitsets per event,
//! under the event's hash tag like its queue keys. Every operation is one script, one round trip.

use std::collections::BTreeMap;

use async_trait::async_trait;
use redis::{AsyncCommands, Script};

use crate::adapters::redis::connection::RedisConnection;
use crate::adapters::redis::keys::EventKeys;
use crate::application::error::LineupError;
use crate::application::ports::availability::{
    bitset, Availability, AvailabilityBoard, Projection, SeatChange, SeatCounts,
};
use crate::domain::ids::EventId;
use crate::domain::layout::LayoutSummary;
use crate::domain::seat::SeatStatus;

struct Scripts {
    read: Script,
    counts: Script,
    set_layout: Script,
    apply: Script,
    install: Script,
}

/// The seat availability projection in Redis ([`AvailabilityBoard`]), each operation a Lua script.
pub struct RedisAvailability {
    connection: RedisConnection,
    scripts: Scripts,
}

impl RedisAvailability {
    /// The adapter over `connection` (usually the queue's), connecting nothing yet.
    pub fn new(connection: RedisConnection) -> Self {
        Self {
            connection,
            scripts: Scripts {
                read: Script::new(include_str!("scripts/read_availability.lua")),
                counts: Script::new(include_str!("scripts/seat_counts.lua")),
                set_layout: Script::new(include_str!("scripts/set_layout.lua")),
                apply: Script::new(include_str!("scripts/apply_changes.lua")),
                install: Script::new(include_str!("scripts/install.lua")),
            },
        }
    }
}

/// The code a status is kept under while the bitsets are missing.
fn code(status: SeatStatus) -> &'static str {
    match status {
        SeatStatus::Available => "A",
        SeatStatus::Held => "H",
        SeatStatus::Sold => "S",
    }
}

fn summary_from(json: &[u8]) -> Result<LayoutSummary, LineupError> {
    serde_json::from_slice(json).map_err(|_| LineupError::QueueReply {
        operation: "layout summary",
        reply: String::from_utf8_lossy(json).chars().take(80).collect(),
    })
}

/// The keys every script takes, in their order.
fn script_keys<'a>(script: &'a Script, keys: &EventKeys) -> redis::ScriptInvocation<'a> {
    let mut invocation = script.prepare_invoke();
    invocation
        .key(keys.layout.clone())
        .key(keys.seats_available.clone())
        .key(keys.seats_sold.clone())
        .key(keys.seats_pending.clone());
    invocation
}

#[async_trait]
impl AvailabilityBoard for RedisAvailability {
    async fn availability(&self, event: &EventId) -> Result<Projection, LineupError> {
        let keys = EventKeys::new(event);
        let (summary, bits): (Option<Vec<u8>>, Option<Vec<u8>>) = self
            .scripts
            .read
            .key(&keys.layout)
            .key(&keys.seats_available)
            .invoke_async(&mut self.connection.clone())
            .await?;
        let Some(summary) = summary else {
            return Ok(Projection::NoLayout);
        };
        let summary = summary_from(&summary)?;
        Ok(match bits {
            None => Projection::Rebuilding(summary),
            Some(available) => Projection::Ready(Availability { summary, available }),
        })
    }

    async fn summary(&self, event: &EventId) -> Result<Option<LayoutSummary>, LineupError> {
        let keys = EventKeys::new(event);
        let summary: Option<Vec<u8>> = self
            .connection
            .clone()
            .hget(&keys.layout, "summary")
            .await?;
        summary.as_deref().map(summary_from).transpose()
    }

    async fn counts(&self, event: &EventId) -> Result<Option<SeatCounts>, LineupError> {
        let keys = EventKeys::new(event);
        let (summary, ready, available, sold): (Option<Vec<u8>>, u8, u64, u64) = self
            .scripts
            .counts
            .key(&keys.layout)
            .key(&keys.seats_available)
            .key(&keys.seats_sold)
            .invoke_async(&mut self.connection.clone())
            .await?;
        let Some(summary) = summary else {
            return Ok(None);
        };
        if ready == 0 {
            return Ok(None);
        }
        let seats = u64::from(summary_from(&summary)?.seats);
        Ok(Some(SeatCounts {
            seats,
            available,
            held: seats.saturating_sub(available + sold),
            sold,
        }))
    }

    async fn set_layout(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
    ) -> Result<(), LineupError> {
        let json = serde_json::to_string(summary).expect("plain data always serialises");
        let _changed: i64 = script_keys(&self.scripts.set_layout, &EventKeys::new(event))
            .arg(&summary.version)
            .arg(json)
            .invoke_async(&mut self.connection.clone())
            .await?;
        Ok(())
    }

    async fn apply(&self, changes: &[SeatChange]) -> Result<(), LineupError> {
        // One script per event and version, each seat's changes in their order (the last wins,
        // as it would applied one by one).
        let mut groups: BTreeMap<(&str, &str), Vec<&SeatChange>> = BTreeMap::new();
        for change in changes {
            groups
                .entry((change.event.as_str(), change.version.as_str()))
                .or_default()
                .push(change);
        }
        for group in groups.values() {
            let first = group[0];
            let mut invocation = script_keys(&self.scripts.apply, &EventKeys::new(&first.event));
            invocation.arg(&first.version);
            for change in group {
                invocation.arg(change.index).arg(code(change.status));
            }
            let _applied: i64 = invocation
                .invoke_async(&mut self.connection.clone())
                .await?;
        }
        Ok(())
    }

    async fn install(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
        statuses: &[SeatStatus],
    ) -> Result<bool, LineupError> {
        let available = bitset(statuses.iter().map(|s| *s == SeatStatus::Available));
        let sold = bitset(statuses.iter().map(|s| *s == SeatStatus::Sold));
        let installed: i64 = script_keys(&self.scripts.install, &EventKeys::new(event))
            .arg(&summary.version)
            .arg(available)
            .arg(sold)
            .invoke_async(&mut self.connection.clone())
            .await?;
        Ok(installed == 1)
    }
}
