//! Seeding an event's seats from a layout (an operator's command, and every test's set-up):
//! the layout is stored under its version and made current, the availability projection starts
//! out all available, then every seat is written with its place in the layout.
//!
//! Seeding over a sale would put sold seats back on sale, so it is refused while any seat of the
//! current layout is held or sold; and each seat write of a re-seeding is conditioned on that
//! seat not being in use, so a hold that races it keeps its seat (reported, and given its new
//! place). The first seeding of an event cannot race a hold (a hold needs a current layout), so
//! it writes in batches of 25, the only way 80,000 seats go in within minutes locally.

use std::time::SystemTime;

use async_trait::async_trait;

use crate::application::error::LineupError;
use crate::application::ports::availability::AvailabilityBoard;
use crate::application::ports::event_records::LayoutStore;
use crate::application::rebuild::SeatStates;
use crate::domain::ids::{EventId, SeatId};
use crate::domain::layout::SeatLayout;
use crate::domain::seat::SeatStatus;
use crate::domain::seat_allocation::{SeatAllocations, SeatReservation};

/// What a seeding did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedOutcome {
    /// Every seat was written, AVAILABLE, and the layout is current.
    Seeded {
        /// How many seats the layout has.
        seats: usize,
        /// The layout's version, now current.
        version: String,
    },
    /// Nothing was written: this many seats of the current layout are held or sold.
    Refused {
        /// How many seats of the current layout are held or sold.
        in_use: usize,
    },
    /// Written, except these seats, taken by holds that raced the seeding.
    SeededAround {
        /// The seats left alone because a hold (or sale) had them.
        in_use: Vec<SeatId>,
    },
}

/// Writing an event's seats: the seat ledger's side of a seeding (and, from
/// [`SeatStates`], reading which seats are in use).
#[async_trait]
pub trait SeatWriter: SeatStates {
    /// Writes every seat of `layout`, AVAILABLE, without conditions: only for an event with no
    /// current layout yet, where no hold can exist.
    /// Each seat of a section in `allocations` carries its reservation.
    async fn write_new_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
    ) -> Result<(), LineupError>;

    /// Writes every seat of `layout`, AVAILABLE (with its section's reservation in
    /// `allocations`), except seats in use (held or sold), which are left alone and returned.
    async fn seed_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
        now: SystemTime,
    ) -> Result<Vec<SeatId>, LineupError>;

    /// Sets `reservation` on each of `seats` (the seats of one section), or takes theirs away
    /// (`None`), whatever their status: what a change of a group's allocation writes
    /// ([`crate::domain::seat_allocation`]). A seat not stored is skipped. Returns how many
    /// seats were written.
    async fn reserve_seats(
        &self,
        event: &EventId,
        seats: &[SeatId],
        reservation: Option<&SeatReservation>,
    ) -> Result<usize, LineupError>;
}

/// A seeding: the ledger, the layouts and the seat map it writes.
pub struct Seeding<'a> {
    /// The seat ledger.
    pub ledger: &'a dyn SeatWriter,
    /// Where the layout is stored and made current (the events table).
    pub layouts: &'a dyn LayoutStore,
    /// The availability projection, started out all available.
    pub board: &'a dyn AvailabilityBoard,
}

impl Seeding<'_> {
    /// Seeds `event` with `layout`, unless a seat of its current layout is held or sold; the
    /// seats of the sections in `allocations` are written set aside for their group.
    pub async fn seed(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
        now: SystemTime,
    ) -> Result<SeedOutcome, LineupError> {
        let current = self.layouts.current_layout(event).await?;
        if let Some(current) = &current {
            if let Some(current) = self.layouts.layout(event, &current.version).await? {
                let in_use = self
                    .ledger
                    .seat_states(event, &current)
                    .await?
                    .iter()
                    .filter(|status| **status != SeatStatus::Available)
                    .count();
                if in_use > 0 {
                    return Ok(SeedOutcome::Refused { in_use });
                }
            }
        }
        let summary = layout.summary();
        self.layouts.store_layout(event, layout).await?;
        if current.is_none() {
            // The first seeding: no hold can exist before a layout is current, so the seats go
            // in batches, without conditions, and the layout is made current after them.
            self.ledger
                .write_new_seats(event, layout, allocations)
                .await?;
        }
        self.layouts.set_current_layout(event, &summary).await?;
        self.board.set_layout(event, &summary).await?;
        let all_available = vec![SeatStatus::Available; layout.seat_count()];
        self.board.install(event, &summary, &all_available).await?;
        let in_use = match current {
            None => Vec::new(),
            Some(_) => {
                self.ledger
                    .seed_seats(event, layout, allocations, now)
                    .await?
            }
        };
        if !in_use.is_empty() {
            return Ok(SeedOutcome::SeededAround { in_use });
        }
        tracing::info!(event = %event, seats = layout.seat_count(), version = %layout.version(), "seats seeded");
        Ok(SeedOutcome::Seeded {
            seats: layout.seat_count(),
            version: layout.version().to_owned(),
        })
    }
}
