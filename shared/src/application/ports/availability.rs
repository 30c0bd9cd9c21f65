//! Which seats are free, as a projection of the seats table: one bit per seat in layout order
//! ([`crate::domain::layout`]), kept in Redis from the seats table's stream ([`crate::application::availability`]), so a seat map
//! costs one Redis read whatever the number of shoppers, and no DynamoDB read at all.
//!
//! Per event and layout version the projection holds two bitsets: *available* (what shoppers
//! see) and *sold* (what the sold-out check counts); a seat in neither is held. A hold that
//! lapsed shows as held until the expiry sweep frees it (within the sweep period).
//!
//! The projection can be lost with the cache and is rebuilt from the table ([`crate::application::rebuild`]).
//! Stream changes that arrive while it is missing are kept aside and laid over the rebuilt
//! bitsets, so a change that raced the rebuild's reads is not lost.

use std::time::SystemTime;

use async_trait::async_trait;
use base64::Engine;
use serde::Serialize;

use crate::application::error::LineupError;
use crate::domain::clock::rfc3339;
use crate::domain::ids::EventId;
use crate::domain::layout::LayoutSummary;
use crate::domain::seat::SeatStatus;
use crate::domain::seat_allocation::SeatAllocations;

/// One seat's new status, as a stream record tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatChange {
    /// The seat's event.
    pub event: EventId,
    /// The layout version the seat's index is in.
    pub version: String,
    /// The seat's index in that layout.
    pub index: u32,
    /// The status the seat now has.
    pub status: SeatStatus,
}

/// The projection as read: the layout summary and the available bitset (Redis bit order: bit 0
/// is the most significant bit of byte 0; missing trailing bytes are zeros).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    /// The current layout's summary: the bitset is in its index order.
    pub summary: LayoutSummary,
    /// One bit per seat, set when the seat is available.
    pub available: Vec<u8>,
}

/// How many seats are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeatCounts {
    /// Every seat of the layout.
    pub seats: u64,
    /// Seats on sale.
    pub available: u64,
    /// Seats in a hold (including lapsed holds the sweep has not freed yet).
    pub held: u64,
    /// Seats sold.
    pub sold: u64,
}

/// What a projection read finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    /// No layout is known for the event (not seeded, or the cache lost it).
    NoLayout,
    /// The layout is known but its bitsets are missing: they are being rebuilt.
    Rebuilding(LayoutSummary),
    /// The layout and its available bitset.
    Ready(Availability),
}

/// The seat availability projection (Redis): read by the seat map, written from the stream.
#[async_trait]
pub trait AvailabilityBoard: Send + Sync {
    /// The layout summary and the available bitset, in one round trip.
    async fn availability(&self, event: &EventId) -> Result<Projection, LineupError>;

    /// The current layout's summary alone (a few hundred bytes; no bitset), `None` when no
    /// layout is known: what the layout redirect and a hold's section lookup need.
    async fn summary(&self, event: &EventId) -> Result<Option<LayoutSummary>, LineupError>;

    /// The counts by state (`None` unless the projection is ready).
    async fn counts(&self, event: &EventId) -> Result<Option<SeatCounts>, LineupError>;

    /// Makes `summary` the event's current layout (what the seeding and the rebuild do).
    async fn set_layout(&self, event: &EventId, summary: &LayoutSummary)
        -> Result<(), LineupError>;

    /// Applies changes in order (stream order). Changes for a layout whose bitsets are missing
    /// are kept aside for the rebuild.
    async fn apply(&self, changes: &[SeatChange]) -> Result<(), LineupError>;

    /// Installs rebuilt bitsets (`statuses` in layout order), then the changes kept aside
    /// meanwhile. Does nothing and answers `false` if the bitsets exist already.
    async fn install(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
        statuses: &[SeatStatus],
    ) -> Result<bool, LineupError>;
}

/// A bitset in Redis bit order from per-seat flags.
pub fn bitset(flags: impl ExactSizeIterator<Item = bool>) -> Vec<u8> {
    let mut bytes = vec![0u8; flags.len().div_ceil(8)];
    for (index, set) in flags.enumerate() {
        if set {
            bytes[index / 8] |= 0x80 >> (index % 8);
        }
    }
    bytes
}

/// Bit `index` of a Redis-ordered bitset (beyond its end: unset).
pub fn bit(bits: &[u8], index: u32) -> bool {
    let index = index as usize;
    bits.get(index / 8)
        .is_some_and(|byte| byte & (0x80 >> (index % 8)) != 0)
}

/// The section's bits, re-packed from its first seat.
fn section_bits(bits: &[u8], first: u32, seats: u32) -> Vec<u8> {
    bitset((first..first + seats).map(|index| bit(bits, index)))
}

/// One section of the availability document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SectionAvailability {
    /// The section's name, as in the layout.
    pub name: String,
    /// How many seats it has.
    pub seats: u32,
    /// How many of them are available.
    pub available: u32,
    /// Base64 of the section's bitset: bit i (most significant bit first) is set when the
    /// section's seat i, in layout order, is available.
    pub bits: String,
    /// The priority group the section is set aside for (an allocation, ADR 0032): its seats
    /// are held only by customers admitted through that group's line until `reservedUntil`,
    /// then go back on general sale. Absent: on general sale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_for: Option<String>,
    /// When the section goes back on general sale (RFC 3339), with `reservedFor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_until: Option<String>,
}

/// `GET /events/{eventId}/seats`: availability only, a bitset per section, and the layout version
/// it belongs to (its seat order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilityDocument {
    /// The event.
    pub event_id: String,
    /// The layout version whose seat order the bitsets follow.
    pub layout_version: String,
    /// Where the layout is (immutable, cached for good).
    pub layout: String,
    /// Every seat of the layout.
    pub seats: u32,
    /// Seats available, all sections together.
    pub available: u32,
    /// The sections in layout order.
    pub sections: Vec<SectionAvailability>,
}

impl AvailabilityDocument {
    /// The document for `event`'s projection, each section's bits re-packed from its first seat.
    pub fn new(event: &EventId, availability: &Availability) -> Self {
        let sections: Vec<SectionAvailability> = availability
            .summary
            .sections
            .iter()
            .map(|section| {
                let bits = section_bits(&availability.available, section.first, section.seats);
                SectionAvailability {
                    name: section.name.clone(),
                    seats: section.seats,
                    available: bits.iter().map(|byte| byte.count_ones()).sum(),
                    bits: base64::engine::general_purpose::STANDARD.encode(bits),
                    reserved_for: None,
                    reserved_until: None,
                }
            })
            .collect();
        Self {
            event_id: event.as_str().to_owned(),
            layout_version: availability.summary.version.clone(),
            layout: layout_path(event, &availability.summary.version),
            seats: availability.summary.seats,
            available: sections.iter().map(|section| section.available).sum(),
            sections,
        }
    }

    /// The same, each section set aside at `now` by `allocations` saying for which group and
    /// until when.
    pub fn set_aside(mut self, allocations: &SeatAllocations, now: SystemTime) -> Self {
        for section in &mut self.sections {
            let Some(reserved) = allocations
                .section(&section.name)
                .filter(|reserved| reserved.in_force(now))
            else {
                continue;
            };
            section.reserved_for = Some(reserved.group.as_str().to_owned());
            section.reserved_until = Some(rfc3339(reserved.until));
        }
        self
    }

    /// How long caches may keep it: a second, then serve it stale for two more while one
    /// request refreshes it.
    pub fn cache_control() -> &'static str {
        "public, max-age=1, stale-while-revalidate=2, stale-if-error=30"
    }
}

/// The versioned layout's path.
pub fn layout_path(event: &EventId, version: &str) -> String {
    format!("/events/{event}/layout/{version}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::layout::SectionSummary;

    #[test]
    fn bits_are_in_redis_order_and_sections_are_repacked_from_their_first_seat() {
        let bits = bitset([true, false, false, true, true, false, false, false, true].into_iter());
        assert_eq!(bits, [0b1001_1000, 0b1000_0000]);
        assert!(bit(&bits, 0) && bit(&bits, 8) && !bit(&bits, 9) && !bit(&bits, 100));

        let summary = LayoutSummary {
            version: "v1".into(),
            seats: 9,
            sections: vec![
                SectionSummary {
                    name: "Floor".into(),
                    first: 0,
                    seats: 3,
                    price: 1,
                    currency: "KRW".into(),
                },
                SectionSummary {
                    name: "Balcony".into(),
                    first: 3,
                    seats: 6,
                    price: 1,
                    currency: "KRW".into(),
                },
            ],
        };
        let event = EventId::parse("e1").unwrap();
        let document = AvailabilityDocument::new(
            &event,
            &Availability {
                summary,
                available: bits,
            },
        );
        assert_eq!(document.available, 4);
        assert_eq!(document.sections[0].available, 1);
        // Balcony: seats 3..9 = 1,1,0,0,0,1 → 0b1100_0100.
        assert_eq!(document.sections[1].bits, "xA==");
        assert_eq!(document.layout, "/events/e1/layout/v1");

        // The Floor set aside for the fan club until t+60 s: said until then, not after.
        let now = crate::domain::clock::from_unix_millis(1_800_000_000_000);
        let groups = crate::domain::priority_group::PriorityGroups::new(vec![
            crate::domain::priority_group::PriorityGroup {
                name: crate::domain::ids::GroupName::parse("fanclub").unwrap(),
                membership: crate::domain::priority_group::Membership::List,
                opens_at: now,
                closes_at: Some(now + std::time::Duration::from_secs(60)),
                ticket_limit: None,
                sections: vec!["Floor".into()],
            },
        ])
        .unwrap();
        let allocations = SeatAllocations::of(&groups);
        let during = document.clone().set_aside(&allocations, now);
        assert_eq!(during.sections[0].reserved_for.as_deref(), Some("fanclub"));
        assert_eq!(
            during.sections[0].reserved_until.as_deref(),
            Some(rfc3339(now + std::time::Duration::from_secs(60)).as_str())
        );
        assert_eq!(during.sections[1].reserved_for, None);
        let json = serde_json::to_value(&during).unwrap();
        assert_eq!(json["sections"][0]["reservedFor"], "fanclub");
        assert!(json["sections"][1].get("reservedFor").is_none());
        let after = document.set_aside(&allocations, now + std::time::Duration::from_secs(60));
        assert_eq!(after.sections[0].reserved_for, None);
    }
}
