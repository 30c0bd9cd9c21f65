//! A seat: its state in the ledger, and the facts a hold and a seeding write about it.

use serde::{Deserialize, Serialize};

use crate::domain::ids::SeatId;

/// Where a seat stands in the ledger: on sale, held by one order, or sold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SeatStatus {
    Available,
    Held,
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
    pub section: String,
    /// Minor units of `currency`.
    pub price: i64,
    pub currency: String,
}

/// A seat to create when seeding an event: its place (section, row) and price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSeat {
    pub seat_id: SeatId,
    pub section: String,
    pub row: String,
    pub price: i64,
    pub currency: String,
}
