//! `MemorySeatMap`: the availability projection (the seat map) in memory, so the hold, status,
//! availability, seeding, rebuild and expiry use cases can be unit-tested without Redis. It
//! answers as the Redis adapter and its scripts do (`adapters/redis/availability.rs`,
//! `read_availability.lua`, `seat_counts.lua`, `set_layout.lua`, `apply_changes.lua`,
//! `install.lua`): per event the current layout (version and summary) and two bitsets,
//! *available* and *sold*, in Redis bit order; while the bitsets are missing the projection reads
//! as [`Projection::Rebuilding`] and stream changes are kept aside (newest per seat) for the
//! install to lay over the rebuilt bitsets; a change for another layout version is ignored.
//!
//! It plays a cache loss ([`MemorySeatMap::flush`]: everything forgotten;
//! [`MemorySeatMap::drop_bitsets`]: the bitsets alone) and an outage ([`MemorySeatMap::go_down`],
//! [`MemorySeatMap::fail_next`]: calls fail with [`LineupError::Unavailable`] from
//! [`Store::Queue`], changing nothing).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::availability::{
    bit, bitset, Availability, AvailabilityBoard, Projection, SeatChange, SeatCounts,
};
use crate::domain::ids::EventId;
use crate::domain::layout::{LayoutSummary, SeatLayout};
use crate::domain::seat::SeatStatus;

/// One event's keys: the layout hash, the two bitsets, the changes kept aside.
#[derive(Default)]
struct EventMap {
    /// The layout hash (`version`, `summary`); `None`: no layout known.
    layout: Option<LayoutSummary>,
    /// The bitsets, both present or both missing.
    bitsets: Option<(Vec<u8>, Vec<u8>)>,
    /// Changes that came while the bitsets were missing: seat index → status.
    pending: BTreeMap<u32, SeatStatus>,
}

/// `SETBIT`: the string grows with zero bytes as needed.
fn set_bit(bits: &mut Vec<u8>, index: u32, value: bool) {
    let index = index as usize;
    if bits.len() <= index / 8 {
        bits.resize(index / 8 + 1, 0);
    }
    let mask = 0x80 >> (index % 8);
    if value {
        bits[index / 8] |= mask;
    } else {
        bits[index / 8] &= !mask;
    }
}

fn set_status(bitsets: &mut (Vec<u8>, Vec<u8>), index: u32, status: SeatStatus) {
    set_bit(&mut bitsets.0, index, status == SeatStatus::Available);
    set_bit(&mut bitsets.1, index, status == SeatStatus::Sold);
}

fn bit_count(bits: &[u8]) -> u64 {
    bits.iter().map(|byte| u64::from(byte.count_ones())).sum()
}

#[derive(Default)]
struct State {
    events: HashMap<EventId, EventMap>,
    outage: Outage,
}

/// The seat map in memory. Every port call counts in [`MemorySeatMap::calls`].
#[derive(Default)]
pub(crate) struct MemorySeatMap {
    state: Mutex<State>,
}

impl MemorySeatMap {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn enter(&self, operation: &'static str) -> Result<MutexGuard<'_, State>, LineupError> {
        let mut state = self.lock();
        state
            .outage
            .enter(Store::Queue, "memory seat map", operation)?;
        Ok(state)
    }

    // --- Setting up ---

    /// The layout current and every seat available, as a seeding leaves it (no call counted).
    pub(crate) fn seed(&self, event: &EventId, layout: &SeatLayout) {
        let summary = layout.summary();
        let everything = bitset((0..layout.seat_count()).map(|_| true));
        let nothing = bitset((0..layout.seat_count()).map(|_| false));
        self.lock().events.insert(
            event.clone(),
            EventMap {
                layout: Some(summary),
                bitsets: Some((everything, nothing)),
                pending: BTreeMap::new(),
            },
        );
    }

    /// Shows the seat at `index` in `status`, as if the stream had said so (no call counted).
    pub(crate) fn show(&self, event: &EventId, index: u32, status: SeatStatus) {
        let mut state = self.lock();
        let bitsets = state
            .events
            .get_mut(event)
            .and_then(|map| map.bitsets.as_mut())
            .expect("the event's bitsets exist");
        set_status(bitsets, index, status);
    }

    // --- Playing faults ---

    /// A cache loss: every event's layout, bitsets and kept changes forgotten.
    pub(crate) fn flush(&self) {
        self.lock().events.clear();
    }

    /// The event's bitsets lost, its layout kept: the projection reads as rebuilding.
    pub(crate) fn drop_bitsets(&self, event: &EventId) {
        if let Some(map) = self.lock().events.get_mut(event) {
            map.bitsets = None;
        }
    }

    // --- Looking inside ---

    /// Whether the seat at `index` shows available (`None`: no bitsets).
    pub(crate) fn is_available(&self, event: &EventId, index: u32) -> Option<bool> {
        self.lock()
            .events
            .get(event)
            .and_then(|map| map.bitsets.as_ref())
            .map(|(available, _)| bit(available, index))
    }
}

/// Outages are played on the whole fake.
impl Faulty for MemorySeatMap {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

#[async_trait]
impl AvailabilityBoard for MemorySeatMap {
    async fn availability(&self, event: &EventId) -> Result<Projection, LineupError> {
        let state = self.enter("availability")?;
        let Some(map) = state.events.get(event) else {
            return Ok(Projection::NoLayout);
        };
        let Some(summary) = map.layout.clone() else {
            return Ok(Projection::NoLayout);
        };
        Ok(match &map.bitsets {
            None => Projection::Rebuilding(summary),
            Some((available, _)) => Projection::Ready(Availability {
                summary,
                available: available.clone(),
            }),
        })
    }

    async fn summary(&self, event: &EventId) -> Result<Option<LayoutSummary>, LineupError> {
        let state = self.enter("summary")?;
        Ok(state.events.get(event).and_then(|map| map.layout.clone()))
    }

    async fn counts(&self, event: &EventId) -> Result<Option<SeatCounts>, LineupError> {
        let state = self.enter("counts")?;
        let Some(map) = state.events.get(event) else {
            return Ok(None);
        };
        let (Some(summary), Some((available, sold))) = (&map.layout, &map.bitsets) else {
            return Ok(None);
        };
        let seats = u64::from(summary.seats);
        let (available, sold) = (bit_count(available), bit_count(sold));
        Ok(Some(SeatCounts {
            seats,
            available,
            held: seats.saturating_sub(available + sold),
            sold,
        }))
    }

    /// The same version keeps its bitsets (the summary is replaced); another one drops them and
    /// the changes kept aside.
    async fn set_layout(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("set_layout")?;
        let map = state.events.entry(event.clone()).or_default();
        let same = map
            .layout
            .as_ref()
            .is_some_and(|current| current.version == summary.version);
        if !same {
            map.bitsets = None;
            map.pending.clear();
        }
        map.layout = Some(summary.clone());
        Ok(())
    }

    /// In order; a change for another version than the current one is ignored; while the
    /// bitsets are missing, kept aside (newest per seat).
    async fn apply(&self, changes: &[SeatChange]) -> Result<(), LineupError> {
        let mut state = self.enter("apply")?;
        for change in changes {
            let Some(map) = state.events.get_mut(&change.event) else {
                continue;
            };
            let current = map
                .layout
                .as_ref()
                .is_some_and(|layout| layout.version == change.version);
            if !current {
                continue;
            }
            match &mut map.bitsets {
                Some(bitsets) => set_status(bitsets, change.index, change.status),
                None => {
                    map.pending.insert(change.index, change.status);
                }
            }
        }
        Ok(())
    }

    /// Only while the bitsets are missing and the layout is still `summary`'s version.
    async fn install(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
        statuses: &[SeatStatus],
    ) -> Result<bool, LineupError> {
        let mut state = self.enter("install")?;
        let Some(map) = state.events.get_mut(event) else {
            return Ok(false);
        };
        let current = map
            .layout
            .as_ref()
            .is_some_and(|layout| layout.version == summary.version);
        if !current || map.bitsets.is_some() {
            return Ok(false);
        }
        let mut bitsets = (
            bitset(statuses.iter().map(|s| *s == SeatStatus::Available)),
            bitset(statuses.iter().map(|s| *s == SeatStatus::Sold)),
        );
        for (index, status) in std::mem::take(&mut map.pending) {
            set_status(&mut bitsets, index, status);
        }
        map.bitsets = Some(bitsets);
        Ok(true)
    }
}
