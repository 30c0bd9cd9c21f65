//! A seat layout to seed an event with: sections with their prices, cut into rows of seats with
//! ids a page can lay out (`FLR-A-07`: section code, row, seat number).

use lineup::domain::ids::SeatId;
use lineup::domain::layout::{LayoutError, SeatLayout};
use lineup::domain::seat::NewSeat;

/// The flags that describe a venue (`lineup dev`, `lineup seed`).
#[derive(Debug, Clone, clap::Args)]
pub struct VenueArgs {
    /// How many seats (an 80,000-seat stadium seeds locally in a few minutes).
    #[arg(long, default_value_t = 1000)]
    pub seats: usize,
    /// Seats per row.
    #[arg(long, default_value_t = SEATS_PER_ROW)]
    pub seats_per_row: usize,
    /// Sections and their prices (minor units of the currency), seats spread evenly over them.
    #[arg(long, default_value = "Floor=150000,Lower=99000,Upper=55000")]
    pub sections: String,
    #[arg(long, default_value = "KRW")]
    pub currency: String,
}

impl VenueArgs {
    /// The seat layout these flags describe.
    pub fn layout(&self) -> Result<SeatLayout, VenueError> {
        let seats = layout(
            self.seats,
            &parse_sections(&self.sections)?,
            &self.currency,
            self.seats_per_row,
        )?;
        Ok(SeatLayout::from_seats(&seats)?)
    }
}

/// Seats per row in generated layouts, unless told otherwise.
pub const SEATS_PER_ROW: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    /// Prefix of the section's seat ids: the first three letters of its name, upper-cased.
    pub code: String,
    /// Minor units of the currency (won for KRW).
    pub price: i64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VenueError {
    #[error("a section is written NAME=PRICE (e.g. Floor=150000), not {0:?}")]
    SectionSyntax(String),
    #[error("section {0:?} needs a name of letters (its first three become the seat-id prefix)")]
    SectionName(String),
    #[error("two sections would share the seat-id prefix {0}")]
    DuplicateCode(String),
    #[error("a venue needs at least one seat and one section")]
    Empty,
    #[error("currency must be a three-letter code such as KRW, not {0:?}")]
    Currency(String),
    #[error(
        "seats per row must be from 1 to {}",
        lineup::domain::layout::MAX_SEATS_PER_ROW
    )]
    SeatsPerRow,
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// `Floor=150000,Lower=99000,Upper=55000`.
pub fn parse_sections(raw: &str) -> Result<Vec<Section>, VenueError> {
    let mut sections: Vec<Section> = Vec::new();
    for part in raw
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        let (name, price) = part
            .split_once('=')
            .ok_or_else(|| VenueError::SectionSyntax(part.to_owned()))?;
        let name = name.trim();
        let price: i64 = price
            .trim()
            .parse()
            .ok()
            .filter(|price| *price >= 0)
            .ok_or_else(|| VenueError::SectionSyntax(part.to_owned()))?;
        if name.len() < 3 || !name.chars().all(|c| c.is_ascii_alphabetic() || c == ' ') {
            return Err(VenueError::SectionName(name.to_owned()));
        }
        let code: String = name
            .chars()
            .filter(char::is_ascii_alphabetic)
            .take(3)
            .collect::<String>()
            .to_ascii_uppercase();
        if sections.iter().any(|section| section.code == code) {
            return Err(VenueError::DuplicateCode(code));
        }
        sections.push(Section {
            name: name.to_owned(),
            code,
            price,
        });
    }
    if sections.is_empty() {
        return Err(VenueError::Empty);
    }
    Ok(sections)
}

/// `seats` seats spread over the sections as evenly as possible (earlier sections take the
/// remainder), each section in rows of `per_row`, nearest the stage first: `FLO-A-01`..`FLO-A-20`,
/// `FLO-B-01`...
pub fn layout(
    seats: usize,
    sections: &[Section],
    currency: &str,
    per_row: usize,
) -> Result<Vec<NewSeat>, VenueError> {
    if seats == 0 || sections.is_empty() {
        return Err(VenueError::Empty);
    }
    if per_row == 0 || per_row > lineup::domain::layout::MAX_SEATS_PER_ROW {
        return Err(VenueError::SeatsPerRow);
    }
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(VenueError::Currency(currency.to_owned()));
    }
    let mut layout = Vec::with_capacity(seats);
    for (index, section) in sections.iter().enumerate() {
        let count = seats / sections.len() + usize::from(index < seats % sections.len());
        for n in 0..count {
            let row = row_name(n / per_row);
            let id = format!("{}-{}-{:02}", section.code, row, n % per_row + 1);
            // Letters, digits and dashes: always a valid seat id.
            let seat_id = SeatId::parse(&id).map_err(|_| VenueError::SectionName(id.clone()))?;
            layout.push(NewSeat {
                seat_id,
                section: section.name.clone(),
                row,
                price: section.price,
                currency: currency.to_owned(),
            });
        }
    }
    Ok(layout)
}

/// Rows A..Z, then AA..ZZ, then AAA... (as spreadsheet columns are named).
fn row_name(row: usize) -> String {
    let mut name = Vec::new();
    let mut n = row + 1;
    while n > 0 {
        n -= 1;
        name.push(b'A' + (n % 26) as u8);
        n /= 26;
    }
    name.reverse();
    String::from_utf8(name).expect("ASCII letters")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_parse_with_codes_and_prices() {
        let sections = parse_sections("Floor=150000, Lower=99000,Upper=55000").unwrap();
        let codes: Vec<_> = sections.iter().map(|s| s.code.as_str()).collect();
        assert_eq!(codes, ["FLO", "LOW", "UPP"]);
        assert_eq!(sections[1].price, 99_000);
        assert_eq!(
            parse_sections("Floor"),
            Err(VenueError::SectionSyntax("Floor".into()))
        );
        assert_eq!(
            parse_sections("Floor=-1"),
            Err(VenueError::SectionSyntax("Floor=-1".into()))
        );
        assert_eq!(
            parse_sections("Floor=1,Flower=2"),
            Err(VenueError::DuplicateCode("FLO".into()))
        );
        assert_eq!(parse_sections(" , "), Err(VenueError::Empty));
    }

    #[test]
    fn a_layout_spreads_seats_over_sections_in_rows_with_unique_ids() {
        let sections = parse_sections("Floor=150000,Lower=99000,Upper=55000").unwrap();
        let seats = layout(1000, &sections, "KRW", SEATS_PER_ROW).unwrap();
        assert_eq!(seats.len(), 1000);
        let per_section = |name: &str| seats.iter().filter(|s| s.section == name).count();
        assert_eq!(
            (
                per_section("Floor"),
                per_section("Lower"),
                per_section("Upper")
            ),
            (334, 333, 333)
        );
        let ids: std::collections::HashSet<_> = seats.iter().map(|s| s.seat_id.clone()).collect();
        assert_eq!(ids.len(), 1000);
        assert_eq!(seats[0].seat_id.as_str(), "FLO-A-01");
        assert_eq!(seats[20].seat_id.as_str(), "FLO-B-01");
        assert_eq!(seats[333].seat_id.as_str(), "FLO-Q-14");
        assert_eq!(seats[20].row, "B");
        assert_eq!(row_name(26), "AA");
        assert_eq!(row_name(701), "ZZ");
        assert_eq!(row_name(702), "AAA");
        assert_eq!(
            layout(10, &sections, "won", 20).unwrap_err(),
            VenueError::Currency("won".into())
        );
        assert_eq!(
            layout(0, &sections, "KRW", 20).unwrap_err(),
            VenueError::Empty
        );
        assert_eq!(
            layout(10, &sections, "KRW", 0).unwrap_err(),
            VenueError::SeatsPerRow
        );
    }

    #[test]
    fn a_stadium_has_unique_seat_ids_and_rows() {
        let sections = parse_sections("Floor=150000,Lower=99000,Upper=55000").unwrap();
        let venue = VenueArgs {
            seats: 80_000,
            seats_per_row: 40,
            sections: "Floor=150000,Lower=99000,Upper=55000".into(),
            currency: "KRW".into(),
        };
        let layout = venue.layout().unwrap();
        assert_eq!(layout.seat_count(), 80_000);
        assert_eq!(layout.sections().len(), sections.len());
        assert_eq!(layout.sections()[0].rows.len(), 667);
    }
}
