//! Putting the projection back after a cache loss (and making it at seeding): the layout from
//! the events table, every seat's status from the seats table, read by key once, then the
//! stream's changes that came meanwhile laid over them ([`crate::application::ports::availability::AvailabilityBoard::install`]).
//! The admitter checks every open event this way every few seconds; a healthy event costs one
//! Redis read.

use async_trait::async_trait;

use crate::application::error::LineupError;
use crate::application::ports::availability::{AvailabilityBoard, Projection};
use crate::application::ports::event_records::LayoutStore;
use crate::domain::ids::EventId;
use crate::domain::layout::SeatLayout;
use crate::domain::seat::SeatStatus;

/// The seats' stored statuses.
#[async_trait]
pub trait SeatStates: Send + Sync {
    /// The status of every seat of `layout`, in layout order.
    async fn seat_states(
        &self,
        event: &EventId,
        layout: &SeatLayout,
    ) -> Result<Vec<SeatStatus>, LineupError>;
}

/// What a check found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebuildOutcome {
    /// The event has no layout (never seeded).
    NoLayout,
    /// The projection was there.
    Ready,
    /// It was missing and is back.
    Rebuilt {
        /// How many seats the rebuilt bitsets cover.
        seats: usize,
    },
    /// Someone else put it back meanwhile, or the layout changed: the next check looks again.
    Skipped,
}

/// The check-and-rebuild of an event's availability projection, and the stores it reads.
pub struct AvailabilityRebuild<'a> {
    /// The projection checked and, when missing, installed (Redis).
    pub board: &'a dyn AvailabilityBoard,
    /// The event's current layout (the events table).
    pub layouts: &'a dyn LayoutStore,
    /// Every seat's status (the seats table).
    pub states: &'a dyn SeatStates,
}

impl AvailabilityRebuild<'_> {
    /// Makes sure the event's projection exists, rebuilding it if it does not.
    pub async fn ensure(&self, event: &EventId) -> Result<RebuildOutcome, LineupError> {
        let summary = match self.board.availability(event).await? {
            Projection::Ready(_) => return Ok(RebuildOutcome::Ready),
            Projection::Rebuilding(summary) => summary,
            Projection::NoLayout => {
                let Some(summary) = self.layouts.current_layout(event).await? else {
                    return Ok(RebuildOutcome::NoLayout);
                };
                // From here on the stream's changes are kept aside for the install below.
                self.board.set_layout(event, &summary).await?;
                summary
            }
        };
        let layout = self
            .layouts
            .layout(event, &summary.version)
            .await?
            .ok_or_else(|| LineupError::SeatStoreReply {
                operation: "layout",
                reply: format!("the current layout {} is not stored", summary.version),
            })?;
        let statuses = self.states.seat_states(event, &layout).await?;
        if self.board.install(event, &summary, &statuses).await? {
            tracing::warn!(event = %event, seats = statuses.len(), version = %summary.version, "seat availability rebuilt from the seats table");
            Ok(RebuildOutcome::Rebuilt {
                seats: statuses.len(),
            })
        } else {
            Ok(RebuildOutcome::Skipped)
        }
    }
}
