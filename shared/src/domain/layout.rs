//! The seat layout: an event's sections, their rows in order from the stage, and the seats of each
//! row in order along it, with prices. It changes only when the event is re-seeded, so it is
//! published once under a version (a hash of its content) and cached for good; what changes by
//! the second, which seats are free, is a bitset in the same order ([`crate::application::ports::availability`]).
//!
//! Every seat has an index: its place in the layout read section by section, row by row, seat
//! by seat. The availability bitsets, the projection and best-available holds all speak in
//! indexes; seat ids are for people and for exact holds.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::ids::{EventId, SeatId};
use crate::domain::seat::{NewSeat, Seat};

/// The most seats one event may have (a large stadium has about 100,000).
pub const MAX_SEATS: usize = 200_000;
/// The most seats one row may have.
pub const MAX_SEATS_PER_ROW: usize = 1_000;
/// A section's or a row's name: 1–64 printable characters.
const MAX_NAME_LEN: usize = 64;

/// One row of a section, as the layout document lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutRow {
    /// As seeded: unique within its section.
    pub name: String,
    /// Seat ids in order along the row: neighbours here are neighbours in the venue.
    pub seats: Vec<String>,
}

/// One section of the layout: every seat in it has the same price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutSection {
    /// As seeded (`Floor`): what a best-available hold names.
    pub name: String,
    /// Minor units of `currency`.
    pub price: i64,
    /// ISO 4217 code, three uppercase letters (`EUR`).
    pub currency: String,
    /// Nearest the stage first.
    pub rows: Vec<LayoutRow>,
}

/// A validated layout (see [`SeatLayout::new`]) and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatLayout {
    sections: Vec<LayoutSection>,
    version: String,
    seats: usize,
}

/// Why a layout (seeded, or read back from its stored document) is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    /// No seat at all.
    #[error("a layout needs at least one seat")]
    Empty,
    /// More than [`MAX_SEATS`] seats (the count at which checking stopped).
    #[error("a layout may have at most {MAX_SEATS} seats, not {0}")]
    TooManySeats(usize),
    /// A section or row name that is empty, too long, has control characters or outer spaces.
    #[error("section or row name {0:?} must be 1-64 printable characters")]
    Name(String),
    /// Two sections with this name.
    #[error("two sections are named {0:?}")]
    DuplicateSection(String),
    /// Two rows with the same name in one section.
    #[error("section {section:?} has two rows named {row:?}")]
    DuplicateRow {
        /// The section's name.
        section: String,
        /// The repeated row name.
        row: String,
    },
    /// A row with no seats, or more than [`MAX_SEATS_PER_ROW`].
    #[error("row {row:?} of section {section:?} has no seats, or more than {MAX_SEATS_PER_ROW}")]
    RowSize {
        /// The section's name.
        section: String,
        /// The row's name.
        row: String,
    },
    /// A seat id not in the form of [`SeatId`].
    #[error("seat id {0:?} is not a valid seat id")]
    SeatId(String),
    /// A seat id listed twice, in any rows or sections.
    #[error("seat {0} appears twice")]
    DuplicateSeat(String),
    /// A negative price or a currency that is not three uppercase letters; from seats, also two
    /// prices (or currencies) within one section.
    #[error("section {section:?}: a price is a non-negative amount in a three-letter currency")]
    Price {
        /// The section's name.
        section: String,
    },
}

fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(|c| !c.is_control())
        && name.trim() == name
}

impl SeatLayout {
    /// Checks the layout: names, unique sections, rows and seat ids, prices, sizes.
    pub fn new(sections: Vec<LayoutSection>) -> Result<Self, LayoutError> {
        let mut section_names = HashSet::new();
        let mut seat_ids = HashSet::new();
        for section in &sections {
            if !name_ok(&section.name) {
                return Err(LayoutError::Name(section.name.clone()));
            }
            if !section_names.insert(section.name.as_str()) {
                return Err(LayoutError::DuplicateSection(section.name.clone()));
            }
            let currency_ok = section.currency.len() == 3
                && section.currency.bytes().all(|b| b.is_ascii_uppercase());
            if section.price < 0 || !currency_ok {
                return Err(LayoutError::Price {
                    section: section.name.clone(),
                });
            }
            let mut row_names = HashSet::new();
            for row in &section.rows {
                if !name_ok(&row.name) {
                    return Err(LayoutError::Name(row.name.clone()));
                }
                if !row_names.insert(row.name.as_str()) {
                    return Err(LayoutError::DuplicateRow {
                        section: section.name.clone(),
                        row: row.name.clone(),
                    });
                }
                if row.seats.is_empty() || row.seats.len() > MAX_SEATS_PER_ROW {
                    return Err(LayoutError::RowSize {
                        section: section.name.clone(),
                        row: row.name.clone(),
                    });
                }
                for seat in &row.seats {
                    if SeatId::parse(seat).is_err() {
                        return Err(LayoutError::SeatId(seat.clone()));
                    }
                    if !seat_ids.insert(seat.as_str()) {
                        return Err(LayoutError::DuplicateSeat(seat.clone()));
                    }
                    if seat_ids.len() > MAX_SEATS {
                        return Err(LayoutError::TooManySeats(MAX_SEATS + 1));
                    }
                }
            }
        }
        let seats = seat_ids.len();
        if seats == 0 {
            return Err(LayoutError::Empty);
        }
        let version = version_of(&sections);
        Ok(Self {
            sections,
            version,
            seats,
        })
    }

    /// Groups seats by section, then by row, each in the order first met (`seats` in venue
    /// order: rows from the stage, seats along each row).
    pub fn from_seats(seats: &[NewSeat]) -> Result<Self, LayoutError> {
        let mut sections: Vec<LayoutSection> = Vec::new();
        for seat in seats {
            let section = match sections.iter().position(|s| s.name == seat.section) {
                Some(at) => &mut sections[at],
                None => {
                    sections.push(LayoutSection {
                        name: seat.section.clone(),
                        price: seat.price,
                        currency: seat.currency.clone(),
                        rows: Vec::new(),
                    });
                    sections.last_mut().expect("just pushed")
                }
            };
            if section.price != seat.price || section.currency != seat.currency {
                return Err(LayoutError::Price {
                    section: section.name.clone(),
                });
            }
            let row = match section.rows.iter().position(|r| r.name == seat.row) {
                Some(at) => &mut section.rows[at],
                None => {
                    section.rows.push(LayoutRow {
                        name: seat.row.clone(),
                        seats: Vec::new(),
                    });
                    section.rows.last_mut().expect("just pushed")
                }
            };
            row.seats.push(seat.seat_id.as_str().to_owned());
        }
        Self::new(sections)
    }

    /// A short hash of the content: the same layout always has the same version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The sections in index order.
    pub fn sections(&self) -> &[LayoutSection] {
        &self.sections
    }

    /// How many seats the layout has (indexes run from 0 to this, exclusive).
    pub fn seat_count(&self) -> usize {
        self.seats
    }

    /// Every seat with its index, in index order.
    pub fn seats(&self) -> impl Iterator<Item = (u32, NewSeat)> + '_ {
        self.sections
            .iter()
            .flat_map(|section| {
                section.rows.iter().flat_map(move |row| {
                    row.seats.iter().map(move |seat| NewSeat {
                        // Checked in `new`.
                        seat_id: SeatId::parse(seat).expect("layout seat ids are validated"),
                        section: section.name.clone(),
                        row: row.name.clone(),
                        price: section.price,
                        currency: section.currency.clone(),
                    })
                })
            })
            .enumerate()
            .map(|(index, seat)| (index as u32, seat))
    }

    /// What the availability needs of the layout: each section's place in the index order.
    pub fn summary(&self) -> LayoutSummary {
        let mut first = 0u32;
        let sections = self
            .sections
            .iter()
            .map(|section| {
                let seats: u32 = section.rows.iter().map(|row| row.seats.len() as u32).sum();
                let summary = SectionSummary {
                    name: section.name.clone(),
                    first,
                    seats,
                    price: section.price,
                    currency: section.currency.clone(),
                };
                first += seats;
                summary
            })
            .collect();
        LayoutSummary {
            version: self.version.clone(),
            seats: self.seats as u32,
            sections,
        }
    }

    /// The document served at `/events/{eventId}/layout/{version}`.
    pub fn to_document(&self, event: &EventId) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Document<'a> {
            event_id: &'a str,
            version: &'a str,
            seats: usize,
            sections: &'a [LayoutSection],
        }
        serde_json::to_string(&Document {
            event_id: event.as_str(),
            version: &self.version,
            seats: self.seats,
            sections: &self.sections,
        })
        .expect("a layout is plain data and always serialises")
    }

    /// Reads a stored document back (checked again: stored data is not trusted blindly).
    pub fn from_document(json: &[u8]) -> Result<Self, LayoutDocumentError> {
        #[derive(Deserialize)]
        struct Document {
            version: String,
            sections: Vec<LayoutSection>,
        }
        let document: Document = serde_json::from_slice(json)?;
        let layout = Self::new(document.sections)?;
        if layout.version != document.version {
            return Err(LayoutDocumentError::VersionMismatch);
        }
        Ok(layout)
    }
}

/// Why a stored layout document could not be read back ([`SeatLayout::from_document`]).
#[derive(Debug, thiserror::Error)]
pub enum LayoutDocumentError {
    /// Not JSON, or not the document's shape.
    #[error("the layout document is not JSON of the expected shape")]
    Json(#[from] serde_json::Error),
    /// The layout in it fails the checks of [`SeatLayout::new`].
    #[error("the stored layout is not valid")]
    Invalid(#[from] LayoutError),
    /// The document's `version` is not the hash of its sections.
    #[error("the stored layout's version does not match its content")]
    VersionMismatch,
}

fn version_of(sections: &[LayoutSection]) -> String {
    let canonical = serde_json::to_vec(sections).expect("plain data always serialises");
    hex::encode(&Sha256::digest(&canonical)[..8])
}

/// A section's place in the index order, and its price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SectionSummary {
    /// The section's name, as seeded.
    pub name: String,
    /// The index of its first seat.
    pub first: u32,
    /// How many seats it has: its indexes are `first..first + seats`.
    pub seats: u32,
    /// The price of each of its seats, in minor units of `currency`.
    pub price: i64,
    /// ISO 4217 code, three uppercase letters.
    pub currency: String,
}

/// The small part of a layout the availability route and the projection need (kept in Redis
/// beside the bitsets, a few hundred bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutSummary {
    /// The layout's version: the bitsets beside it are in this layout's index order.
    pub version: String,
    /// How many seats the layout has.
    pub seats: u32,
    /// The sections in index order.
    pub sections: Vec<SectionSummary>,
}

/// Where a seat is in the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatPlace {
    /// The seat's index in the layout.
    pub index: u32,
    /// The position of its section in [`SeatLayout::sections`].
    pub section: usize,
}

/// A layout with its seats looked up by id, for holds. Built once per version per instance.
#[derive(Debug)]
pub struct IndexedLayout {
    /// The layout looked up in.
    pub layout: Arc<SeatLayout>,
    places: HashMap<SeatId, SeatPlace>,
    /// Seat ids by index.
    ids: Vec<SeatId>,
}

impl IndexedLayout {
    /// Indexes every seat of `layout` by id (one pass over the layout).
    pub fn new(layout: Arc<SeatLayout>) -> Self {
        let mut places = HashMap::with_capacity(layout.seat_count());
        let mut ids = Vec::with_capacity(layout.seat_count());
        for (section_at, section) in layout.sections.iter().enumerate() {
            for row in &section.rows {
                for seat in &row.seats {
                    // Checked in `SeatLayout::new`.
                    let id = SeatId::parse(seat).expect("layout seat ids are validated");
                    let place = SeatPlace {
                        index: ids.len() as u32,
                        section: section_at,
                    };
                    places.insert(id.clone(), place);
                    ids.push(id);
                }
            }
        }
        Self {
            layout,
            places,
            ids,
        }
    }

    /// The seat at `index`, with its price.
    pub fn seat_at(&self, index: u32) -> Option<Seat> {
        self.seat(self.ids.get(index as usize)?)
    }

    /// Where `seat` is; `None` for a seat the layout does not have.
    pub fn place(&self, seat: &SeatId) -> Option<SeatPlace> {
        self.places.get(seat).copied()
    }

    /// The seat with its price, as a hold writes it.
    pub fn seat(&self, seat: &SeatId) -> Option<Seat> {
        let place = self.place(seat)?;
        let section = &self.layout.sections[place.section];
        Some(Seat {
            seat_id: seat.clone(),
            section: section.name.clone(),
            price: section.price,
            currency: section.currency.clone(),
        })
    }

    /// The section named `name` (as seeded), with its position.
    pub fn section(&self, name: &str) -> Option<(usize, &LayoutSection)> {
        self.layout
            .sections
            .iter()
            .enumerate()
            .find(|(_, section)| section.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(section: &str, row: &str, id: &str, price: i64) -> NewSeat {
        NewSeat {
            seat_id: SeatId::parse(id).unwrap(),
            section: section.to_owned(),
            row: row.to_owned(),
            price,
            currency: "KRW".to_owned(),
        }
    }

    fn small() -> SeatLayout {
        SeatLayout::from_seats(&[
            seat("Floor", "A", "F-A-1", 100),
            seat("Balcony", "A", "B-A-1", 50),
            seat("Floor", "A", "F-A-2", 100),
            seat("Floor", "B", "F-B-1", 100),
        ])
        .unwrap()
    }

    #[test]
    fn seats_are_grouped_by_section_then_row_and_indexed_in_that_order() {
        let layout = small();
        let order: Vec<(u32, String)> = layout
            .seats()
            .map(|(index, seat)| (index, seat.seat_id.as_str().to_owned()))
            .collect();
        assert_eq!(
            order,
            [
                (0, "F-A-1".to_owned()),
                (1, "F-A-2".to_owned()),
                (2, "F-B-1".to_owned()),
                (3, "B-A-1".to_owned())
            ]
        );
        let summary = layout.summary();
        assert_eq!(summary.seats, 4);
        assert_eq!(
            (summary.sections[1].name.as_str(), summary.sections[1].first),
            ("Balcony", 3)
        );
        let indexed = IndexedLayout::new(Arc::new(layout));
        let place = indexed.place(&SeatId::parse("B-A-1").unwrap()).unwrap();
        assert_eq!((place.index, place.section), (3, 1));
        assert_eq!(
            indexed
                .seat(&SeatId::parse("F-B-1").unwrap())
                .unwrap()
                .price,
            100
        );
        assert!(indexed.seat(&SeatId::parse("X-1").unwrap()).is_none());
    }

    #[test]
    fn the_version_follows_the_content_and_a_document_round_trips() {
        let layout = small();
        assert_eq!(layout.version(), small().version());
        assert_eq!(layout.version().len(), 16);
        let repriced = SeatLayout::from_seats(&[seat("Floor", "A", "F-A-1", 101)]).unwrap();
        let original = SeatLayout::from_seats(&[seat("Floor", "A", "F-A-1", 100)]).unwrap();
        assert_ne!(repriced.version(), original.version());

        let event = EventId::parse("e1").unwrap();
        let document = layout.to_document(&event);
        assert_eq!(
            SeatLayout::from_document(document.as_bytes()).unwrap(),
            layout
        );
        let tampered = document.replace("\"price\":100", "\"price\":1");
        assert!(matches!(
            SeatLayout::from_document(tampered.as_bytes()),
            Err(LayoutDocumentError::VersionMismatch)
        ));
    }

    #[test]
    fn bad_layouts_are_refused_with_what_is_wrong() {
        assert_eq!(SeatLayout::new(vec![]), Err(LayoutError::Empty));
        assert_eq!(
            SeatLayout::from_seats(&[seat("Floor", "A", "F-1", 1), seat("Floor", "B", "F-1", 1)]),
            Err(LayoutError::DuplicateSeat("F-1".into()))
        );
        assert_eq!(
            SeatLayout::from_seats(&[seat("Floor", "A", "F-1", 1), seat("Floor", "A", "F-2", 2)]),
            Err(LayoutError::Price {
                section: "Floor".into()
            })
        );
        assert_eq!(
            SeatLayout::from_seats(&[seat(" Floor", "A", "F-1", 1)]),
            Err(LayoutError::Name(" Floor".into()))
        );
        let section = |rows: Vec<LayoutRow>| LayoutSection {
            name: "Floor".into(),
            price: 1,
            currency: "KRW".into(),
            rows,
        };
        assert_eq!(
            SeatLayout::new(vec![section(vec![LayoutRow {
                name: "A".into(),
                seats: vec![]
            }])]),
            Err(LayoutError::RowSize {
                section: "Floor".into(),
                row: "A".into()
            })
        );
        let twice = LayoutRow {
            name: "A".into(),
            seats: vec!["F-1".into()],
        };
        assert_eq!(
            SeatLayout::new(vec![section(vec![
                twice.clone(),
                LayoutRow {
                    seats: vec!["F-2".into()],
                    ..twice
                }
            ])]),
            Err(LayoutError::DuplicateRow {
                section: "Floor".into(),
                row: "A".into()
            })
        );
        assert_eq!(
            SeatLayout::new(vec![section(vec![LayoutRow {
                name: "A".into(),
                seats: vec!["no spaces".into()]
            }])]),
            Err(LayoutError::SeatId("no spaces".into()))
        );
    }
}
