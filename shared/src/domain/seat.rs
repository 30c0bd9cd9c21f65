//! A seat: its state in the ledger, and the facts a hold and a seeding write about it.

use serde::{Deserialize, Serialize};

use crate::domain::ids::SeatId;

/// Where a seat stands in the ledger: on sale, held by one order, or sold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SeatStatus {
    /// On sale: no order has it.
    Available,
    /// In one order's hold, until it is paid, released or expires.
    Held,
    /// Paid for: final.
    Sold,
}

impl SeatStatus {
    /// The name stored in the seats table and shown in the seat map (the serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Available => "AVAILABLE",
            Self::Held => "HELD",
            Self::Sold => "SOLD",
        }
    }
}

/// A seat with its price, as a hold writes it (from the layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    /// The seat.
    pub seat_id: SeatId,
    /// The name of its section, as seeded.
    pub section: String,
    /// Minor units of `currency`.
    pub price: i64,
    /// Three-letter currency code (ISO 4217).
    pub currency: String,
}

/// A seat to create when seeding an event: its place (section, row) and price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSeat {
    /// The seat's id, unique within the event.
    pub seat_id: SeatId,
    /// The name of its section: every seat of a section has the same price.
    pub section: String,
    /// The name of its row within the section.
    pub row: String,
    /// Minor units of `currency`.
    pub price: i64,
    /// Three-letter currency code (ISO 4217).
    pub currency: String,
}
