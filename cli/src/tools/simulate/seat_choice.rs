//! How a customer picks seats from the map: a party of 1–4 wants neighbours in one row, in the
//! section they prefer if it has room; someone looking at a stale map goes for the dearest
//! section's front rows whatever they show, and is told which seats are gone.

use std::collections::{BTreeMap, HashSet};

use rand::RngExt;

use super::api_client::SeatView;

/// `FLO-A-07` → (`FLO-A`, 7): the row, and the seat's number in it (ids as `crate::venue`
/// writes them; any `<row>-<number>` works).
pub fn row_and_number(seat_id: &str) -> Option<(&str, u32)> {
    let (row, number) = seat_id.rsplit_once('-')?;
    Some((row, number.parse().ok()?))
}

/// Runs of neighbouring seats the customer may take: `(section, seat ids in order)`.
fn runs<'a>(
    map: impl Iterator<Item = &'a SeatView>,
    avoid: &HashSet<String>,
) -> Vec<(&'a str, Vec<&'a str>)> {
    // Row → (number, seat) for the seats shown AVAILABLE and not known to be taken.
    let mut rows: BTreeMap<&str, Vec<(u32, &SeatView)>> = BTreeMap::new();
    for seat in map.filter(|seat| seat.is_available() && !avoid.contains(&seat.seat_id)) {
        if let Some((row, number)) = row_and_number(&seat.seat_id) {
            rows.entry(row).or_default().push((number, seat));
        }
    }
    let mut runs = Vec::new();
    for seats in rows.values_mut() {
        seats.sort_by_key(|(number, _)| *number);
        let mut current: Vec<&SeatView> = Vec::new();
        for (number, seat) in seats.iter() {
            let continues = current.last().is_some_and(|last| {
                row_and_number(&last.seat_id).is_some_and(|(_, n)| n + 1 == *number)
                    && last.section == seat.section
            });
            if !continues && !current.is_empty() {
                runs.push(std::mem::take(&mut current));
            }
            current.push(seat);
        }
        if !current.is_empty() {
            runs.push(current);
        }
    }
    runs.into_iter()
        .map(|run| {
            let section = run[0].section.as_str();
            (section, run.iter().map(|s| s.seat_id.as_str()).collect())
        })
        .collect()
}

/// Up to `want` neighbouring AVAILABLE seats (not in `avoid`), in `section` when it has room.
/// Fewer when no row has `want` free neighbours (the party splits up no further than that:
/// it takes the longest run there is). Empty when nothing is free.
pub fn choose_available(
    map: &[SeatView],
    want: usize,
    section: &str,
    avoid: &HashSet<String>,
    rng: &mut impl RngExt,
) -> Vec<String> {
    // The preferred section's rows first (a stadium map is tens of thousands of seats: looking
    // at all of them for every customer is what a crowd of simulated customers cannot afford).
    let mut runs = runs(map.iter().filter(|seat| seat.section == section), avoid);
    if !runs.iter().any(|(_, seats)| seats.len() >= want) {
        runs = self::runs(map.iter(), avoid);
    }
    let fitting = |in_section: bool| -> Vec<&(&str, Vec<&str>)> {
        runs.iter()
            .filter(|(s, seats)| seats.len() >= want && (!in_section || *s == section))
            .collect()
    };
    let mut candidates = fitting(true);
    if candidates.is_empty() {
        candidates = fitting(false);
    }
    let chosen: Option<(&[&str], usize)> = if candidates.is_empty() {
        runs.iter()
            .max_by_key(|(_, seats)| seats.len())
            .map(|(_, seats)| (seats.as_slice(), seats.len()))
    } else {
        let (_, seats) = candidates[rng.random_range(0..candidates.len())];
        Some((seats.as_slice(), want))
    };
    match chosen {
        Some((seats, take)) => {
            let start = rng.random_range(0..=seats.len() - take);
            seats[start..start + take]
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        }
        None => Vec::new(),
    }
}

/// `want` neighbours in one of the two front rows of the dearest section, whatever their
/// status: what someone who opened the page long ago (or wants the best seats regardless)
/// asks for.
pub fn choose_popular(map: &[SeatView], want: usize, rng: &mut impl RngExt) -> Vec<String> {
    let Some(top_price) = map.iter().map(|seat| seat.price).max() else {
        return Vec::new();
    };
    let mut rows: BTreeMap<&str, Vec<(u32, &str)>> = BTreeMap::new();
    for seat in map.iter().filter(|seat| seat.price == top_price) {
        if let Some((row, number)) = row_and_number(&seat.seat_id) {
            rows.entry(row)
                .or_default()
                .push((number, seat.seat_id.as_str()));
        }
    }
    // Front rows first: shorter labels sort first (Z before AA), then alphabetically.
    let mut labels: Vec<&str> = rows.keys().copied().collect();
    labels.sort_by_key(|label| (label.len(), *label));
    let front = &labels[..labels.len().min(2)];
    if front.is_empty() {
        return Vec::new();
    }
    let row = front[rng.random_range(0..front.len())];
    let Some(seats) = rows.get_mut(row) else {
        return Vec::new();
    };
    seats.sort_by_key(|(number, _)| *number);
    let take = want.min(seats.len());
    // Around the middle of the row: the seats everyone wants.
    let middle = seats.len().saturating_sub(take) / 2;
    let spread = (seats.len() / 4).max(1);
    let low = middle.saturating_sub(spread);
    let high = (middle + spread).min(seats.len() - take);
    let start = rng.random_range(low..=high.max(low));
    seats[start..start + take]
        .iter()
        .map(|(_, id)| (*id).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    fn seat(id: &str, section: &str, status: &str) -> SeatView {
        SeatView {
            seat_id: id.to_owned(),
            section: section.to_owned(),
            price: if section == "Floor" { 2 } else { 1 },
            status: status.to_owned(),
        }
    }

    #[test]
    fn seat_ids_split_into_row_and_number() {
        assert_eq!(row_and_number("FLO-AB-17"), Some(("FLO-AB", 17)));
        assert_eq!(row_and_number("A-001"), Some(("A", 1)));
        assert_eq!(row_and_number("floor"), None);
    }

    fn neighbours(ids: &[String]) -> bool {
        let parsed: Vec<_> = ids.iter().filter_map(|id| row_and_number(id)).collect();
        parsed
            .windows(2)
            .all(|w| w[0].0 == w[1].0 && w[0].1 + 1 == w[1].1)
    }

    #[test]
    fn picks_neighbours_in_the_preferred_section() {
        let map = vec![
            seat("A-001", "Floor", "AVAILABLE"),
            seat("A-002", "Floor", "SOLD"),
            seat("A-003", "Floor", "AVAILABLE"),
            seat("B-001", "Lower", "AVAILABLE"),
            seat("B-002", "Lower", "AVAILABLE"),
            seat("B-003", "Lower", "AVAILABLE"),
        ];
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..20 {
            let chosen = choose_available(&map, 2, "Lower", &HashSet::new(), &mut rng);
            assert_eq!(chosen.len(), 2);
            assert!(neighbours(&chosen), "{chosen:?}");
            assert!(chosen.iter().all(|id| id.starts_with("B-")));
            // Floor has no two neighbours: a party of two goes elsewhere.
            let chosen = choose_available(&map, 2, "Floor", &HashSet::new(), &mut rng);
            assert!(chosen.iter().all(|id| id.starts_with("B-")), "{chosen:?}");
        }
    }

    #[test]
    fn takes_fewer_when_no_row_has_room_and_none_when_nothing_is_free() {
        let map = vec![
            seat("A-001", "Floor", "AVAILABLE"),
            seat("A-002", "Floor", "HELD"),
            seat("A-003", "Floor", "AVAILABLE"),
        ];
        let mut rng = StdRng::seed_from_u64(2);
        let chosen = choose_available(&map, 4, "Floor", &HashSet::new(), &mut rng);
        assert_eq!(chosen.len(), 1);
        let avoid: HashSet<String> = ["A-001".to_owned(), "A-003".to_owned()].into();
        assert!(choose_available(&map, 1, "Floor", &avoid, &mut rng).is_empty());
    }

    #[test]
    fn popular_picks_are_the_dearest_front_rows_whatever_their_status() {
        let mut map = Vec::new();
        for (code, section) in [("UPP", "Upper"), ("FLO", "Floor")] {
            for row in ["A", "B", "C"] {
                for n in 1..=20 {
                    map.push(seat(&format!("{code}-{row}-{n:02}"), section, "SOLD"));
                }
            }
        }
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..50 {
            let chosen = choose_popular(&map, 3, &mut rng);
            assert_eq!(chosen.len(), 3);
            assert!(neighbours(&chosen), "{chosen:?}");
            assert!(
                chosen[0].starts_with("FLO-A") || chosen[0].starts_with("FLO-B"),
                "{chosen:?}"
            );
        }
    }
}
