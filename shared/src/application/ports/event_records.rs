//! The durable side of an event, in DynamoDB: its settings and draw seed, its admission cursor,
//! the operators' audit trail and the published draw. Redis holds the working copy the queue
//! scripts need; when the cache loses an event, it is re-loaded from here, and customers are put
//! back from their signed tickets ([`crate::application::restore`]). Nothing here is written per
//! customer: one write per admit tick per event at most.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::application::error::LineupError;
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::draw::{DrawChunk, DrawSeed, DrawSummary};
use crate::domain::event_settings::EventSettings;
use crate::domain::ids::{CustomerId, EventId};
use crate::domain::layout::{LayoutSummary, SeatLayout};

/// An event as DynamoDB keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// The settings as last saved by an operator.
    pub settings: EventSettings,
    /// `Some("sold_out")` or `Some("closed")` when closed.
    pub closed_reason: Option<String>,
    /// The event's draw seed, made on the first save and never changed.
    pub seed: DrawSeed,
    /// How far admission had come at the last save (the default before any).
    pub cursor: AdmissionCursor,
    /// The highest queue number the cache may hand out: reserved here before the cache hands
    /// out any number up to it, so a restore starts numbering past every number ever given.
    pub number_ceiling: u64,
}

/// How far admission has come, saved by the admitter after a tick that moved it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionCursor {
    /// The highest queue number admission may call: saved before any number up to it is called,
    /// so it is at or past every number the status ever showed as called.
    pub serving: u64,
    /// The last queue number handed out, as of this save (for information: what bounds numbers
    /// is [`EventRecord::number_ceiling`]).
    pub next_number: u64,
    /// How many entered the pre-queue, once it closed.
    pub entrants: Option<u64>,
    /// The pre-queue's numbers are written.
    pub drawn: bool,
    /// When `serving` reached what: enough to tell when a number was called, for the last
    /// session's length. Oldest first.
    pub checkpoints: Vec<Checkpoint>,
    /// When this cursor was saved (a cache lost after it: the outage started after this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_at_ms: Option<u64>,
    /// A paced opening's first call, Unix ms (`wait_policy::first_call_at`): a restore keeps
    /// admission waiting for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call_at_ms: Option<u64>,
}

/// `serving` as it stood at one moment of admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// When, in Unix milliseconds.
    pub at_ms: u64,
    /// The highest number called by then.
    pub serving: u64,
}

/// A checkpoint is added at most this often (so a cursor is a few KB for a whole session).
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

impl AdmissionCursor {
    /// When `number` was called, as the checkpoints tell it: the first checkpoint at or past it,
    /// which is at most [`CHECKPOINT_EVERY`] (and a tick) after the real moment, never before it;
    /// past the last checkpoint, the save that made it callable. `None` when it is not called
    /// yet (or, for a cursor saved before saves were timed, called after the last checkpoint).
    pub fn called_at(&self, number: u64) -> Option<SystemTime> {
        if number > self.serving {
            return None;
        }
        self.checkpoints
            .iter()
            .find(|checkpoint| checkpoint.serving >= number)
            .map(|checkpoint| checkpoint.at_ms)
            .or(self.saved_at_ms)
            .map(from_unix_millis)
    }

    /// The cursor after a tick: the new counters, and a checkpoint if `serving` moved and the
    /// last one is old enough; checkpoints older than `keep` go (the newest always stays).
    pub fn advanced(
        &self,
        now: SystemTime,
        serving: u64,
        next_number: u64,
        entrants: Option<u64>,
        drawn: bool,
        keep: Duration,
    ) -> Self {
        let mut checkpoints = self.checkpoints.clone();
        let now_ms = unix_millis(now);
        let due = checkpoints.last().is_none_or(|last| {
            last.serving < serving
                && now_ms.saturating_sub(last.at_ms) >= CHECKPOINT_EVERY.as_millis() as u64
        });
        if due && serving > 0 {
            checkpoints.push(Checkpoint {
                at_ms: now_ms,
                serving,
            });
        }
        let oldest_kept = now_ms.saturating_sub(keep.as_millis() as u64);
        while checkpoints.len() > 1 && checkpoints[1].at_ms < oldest_kept {
            checkpoints.remove(0);
        }
        Self {
            serving: serving.max(self.serving),
            next_number: next_number.max(self.next_number),
            entrants: entrants.or(self.entrants),
            drawn: drawn || self.drawn,
            checkpoints,
            saved_at_ms: self.saved_at_ms,
            first_call_at_ms: self.first_call_at_ms,
        }
    }
}

/// One operator change, as `lineup event history` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When the change was made, in Unix milliseconds.
    pub at_ms: u64,
    /// `open`, `set`, `pause`, `resume`, `close`, `seed`.
    pub action: String,
    /// Who: the operator's name or AWS identity.
    pub operator: String,
    /// What changed, as the command saw it (settings after the change, seat counts...).
    pub detail: serde_json::Value,
}

/// Events' settings and cursors.
#[async_trait]
pub trait EventRecords: Send + Sync {
    /// The event's durable record; `None` for an event never configured.
    async fn event(&self, event: &EventId) -> Result<Option<EventRecord>, LineupError>;

    /// Saves an event's settings and returns its draw seed: made on the first save, never
    /// changed after. Adds the event to the open events, or removes it when closed.
    async fn save_settings(
        &self,
        event: &EventId,
        settings: &EventSettings,
        closed_reason: Option<&str>,
    ) -> Result<DrawSeed, LineupError>;

    /// Saves the cursor unless one further along (a higher `serving`) is stored. `Ok` means the
    /// stored `serving` is at or past `cursor.serving`.
    async fn save_cursor(
        &self,
        event: &EventId,
        cursor: &AdmissionCursor,
    ) -> Result<(), LineupError>;

    /// Raises the event's number ceiling to at least `at_least` and returns the ceiling stored
    /// (it never goes down). Every queue number is handed out under a ceiling saved here first.
    async fn reserve_numbers(&self, event: &EventId, at_least: u64) -> Result<u64, LineupError>;

    /// Events not closed: the admitter ticks them even if the cache forgot them.
    async fn open_events(&self) -> Result<Vec<EventId>, LineupError>;
}

/// The customer ids operators imported into priority groups whose membership is a list
/// ([`crate::domain::priority_group::Membership::List`]), kept per group's line.
#[async_trait]
pub trait GroupMembers: Send + Sync {
    /// Whether `customer` was imported into the group whose line is `line`.
    async fn is_member(&self, line: &EventId, customer: &CustomerId) -> Result<bool, LineupError>;

    /// Adds the customers to the group whose line is `line` (again: nothing changes).
    async fn import_members(
        &self,
        line: &EventId,
        customers: &[CustomerId],
    ) -> Result<(), LineupError>;
}

/// Operators' changes, kept.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends one change to the event's trail.
    async fn record(&self, event: &EventId, entry: &AuditEntry) -> Result<(), LineupError>;
    /// Oldest first.
    async fn history(&self, event: &EventId) -> Result<Vec<AuditEntry>, LineupError>;
}

/// Seat layouts: each version stored for good (it is served as immutable), and which one is
/// the event's current one.
#[async_trait]
pub trait LayoutStore: Send + Sync {
    /// Stores a layout under its version (writing the same version again changes nothing).
    async fn store_layout(&self, event: &EventId, layout: &SeatLayout) -> Result<(), LineupError>;

    /// Makes a stored layout the event's current one.
    async fn set_current_layout(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
    ) -> Result<(), LineupError>;

    /// The summary of the event's current layout; `None` before the event is seeded.
    async fn current_layout(&self, event: &EventId) -> Result<Option<LayoutSummary>, LineupError>;

    /// The layout document as served (`None`: no such version for this event).
    async fn layout_document(
        &self,
        event: &EventId,
        version: &str,
    ) -> Result<Option<String>, LineupError>;

    /// The layout itself, checked again as it is read.
    async fn layout(
        &self,
        event: &EventId,
        version: &str,
    ) -> Result<Option<SeatLayout>, LineupError> {
        let Some(document) = self.layout_document(event, version).await? else {
            return Ok(None);
        };
        SeatLayout::from_document(document.as_bytes())
            .map(Some)
            .map_err(|_| LineupError::SeatStoreReply {
                operation: "layout",
                reply: format!("the stored layout {version} is not valid"),
            })
    }
}

/// What publishing a draw did. A published draw is never replaced: the same draw again changes
/// nothing, another one is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrawPublished {
    /// Written now.
    Published,
    /// The same draw was published already (kept as it was, with its first publication time).
    AlreadyPublished,
    /// Another draw is published: nothing was written. It is the published one that stands.
    Conflict(Box<DrawSummary>),
}

/// The published draw, served to the public through the CDN.
#[async_trait]
pub trait DrawPublication: Send + Sync {
    /// Writes chunks of a draw whose summary is not published yet (empty chunks are not
    /// stored: they are read as empty once the summary is). A big draw writes them in many
    /// calls, then the summary once.
    async fn publish_chunks(
        &self,
        event: &EventId,
        chunks: &[DrawChunk],
    ) -> Result<(), LineupError>;

    /// Writes the summary, after every chunk, only if no summary is published: a conditional
    /// write, so a draw made again after a failure or a cache loss (of another list, or of none)
    /// never replaces the published one.
    async fn publish_summary(
        &self,
        event: &EventId,
        summary: &DrawSummary,
    ) -> Result<DrawPublished, LineupError>;

    /// A whole draw: if none is published, the chunks then the summary (last, so a summary that
    /// can be read means every chunk can be too); if one is, nothing is written (the chunks of a
    /// published draw are never overwritten).
    async fn publish_draw(
        &self,
        event: &EventId,
        summary: &DrawSummary,
        chunks: &[DrawChunk],
    ) -> Result<DrawPublished, LineupError> {
        if let Some(published) = self.draw_summary(event).await? {
            return Ok(if published.same_draw(summary) {
                DrawPublished::AlreadyPublished
            } else {
                DrawPublished::Conflict(Box::new(published))
            });
        }
        self.publish_chunks(event, chunks).await?;
        self.publish_summary(event, summary).await
    }

    /// The published draw's summary; `None` when the draw is not published.
    async fn draw_summary(&self, event: &EventId) -> Result<Option<DrawSummary>, LineupError>;

    /// The chunk of `prefix`; an empty chunk when the draw is published and nobody's hash starts
    /// with it; `None` when the draw is not published.
    async fn draw_chunk(
        &self,
        event: &EventId,
        prefix: &str,
    ) -> Result<Option<DrawChunk>, LineupError>;

    /// An entrant's number in the published draw.
    async fn drawn_number(
        &self,
        event: &EventId,
        entrant: &str,
    ) -> Result<Option<u64>, LineupError> {
        let Some(summary) = self.draw_summary(event).await? else {
            return Ok(None);
        };
        let Some(prefix) = entrant.get(..summary.prefix_length) else {
            return Ok(None);
        };
        let chunk = self.draw_chunk(event, prefix).await?;
        Ok(chunk.and_then(|chunk| chunk.number_of(entrant)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_tell_when_a_number_was_called() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let keep = Duration::from_secs(11 * 60);
        let mut cursor = AdmissionCursor::default();
        // One tick a second, 50 numbers a tick, for 30 s.
        for second in 1..=30u64 {
            cursor = cursor.advanced(
                start + Duration::from_secs(second),
                second * 50,
                10_000,
                Some(0),
                true,
                keep,
            );
        }
        assert_eq!(cursor.serving, 1_500);
        // A checkpoint every 5 s: 1, 6, 11, 16, 21, 26.
        assert_eq!(cursor.checkpoints.len(), 6);
        // Number 300 was called at second 6; the first checkpoint past it says second 6.
        assert_eq!(cursor.called_at(300), Some(start + Duration::from_secs(6)));
        // Number 301 was called at second 7: the checkpoint at 11 is at most 5 s late.
        assert_eq!(cursor.called_at(301), Some(start + Duration::from_secs(11)));
        // Not called yet.
        assert_eq!(cursor.called_at(1_501), None);
        // Called after the last checkpoint (second 26 had 1,300): unknown to the checkpoints.
        assert_eq!(cursor.called_at(1_450), None);
    }

    #[test]
    fn old_checkpoints_go_and_counters_never_move_back() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let keep = Duration::from_secs(60);
        let mut cursor = AdmissionCursor::default();
        for second in (0..600u64).step_by(5) {
            cursor = cursor.advanced(
                start + Duration::from_secs(second),
                second + 1,
                700,
                None,
                false,
                keep,
            );
        }
        assert!(
            cursor.checkpoints.len() <= 14,
            "{}",
            cursor.checkpoints.len()
        );
        let stale = cursor.advanced(start, 3, 5, None, false, keep);
        assert_eq!(
            stale.serving, cursor.serving,
            "an older tick never moves it back"
        );
        assert_eq!(stale.next_number, 700);
    }
}
