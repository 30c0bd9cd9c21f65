//! Best available: which `n` seats to offer someone who asked for "n together in this section".
//!
//! A block is `n` seats next to each other in one row, all free. Rows nearest the stage come
//! first (the layout lists them in that order), and within a row the block whose middle is
//! nearest the row's middle. Blocks never span rows or split a party: when no row has `n` free
//! together the answer is no block at all (the caller says so, 409 `no_seats_together`), and
//! the customer can ask for fewer, another section, or pick seats one by one.
//!
//! Many people ask at once from the same (second-old) availability, so everyone's first choice
//! is the same block. A request tries the best block first; after a conflict it picks at random
//! among the best few blocks that do not overlap ([`spread`]), so the crowd spreads instead of
//! colliding on the next best one too.

use crate::domain::layout::LayoutSection;

/// The best blocks of `quantity` free seats in the section, best first, at most `limit`
/// (overlapping blocks included: `[3,4]` and `[4,5]` are both candidates). `first` is the
/// section's first seat index; `free(index)` tells whether a seat may be offered.
pub fn ranked_blocks(
    section: &LayoutSection,
    first: u32,
    quantity: usize,
    free: impl Fn(u32) -> bool,
    limit: usize,
) -> Vec<Vec<u32>> {
    let mut blocks = Vec::new();
    if quantity == 0 {
        return blocks;
    }
    let mut row_first = first;
    for row in &section.rows {
        let len = row.seats.len();
        if len >= quantity {
            let free_here: Vec<bool> = (0..len).map(|at| free(row_first + at as u32)).collect();
            // Doubled positions keep the centres whole numbers: a block's middle is
            // start + (quantity - 1) / 2, the row's is (len - 1) / 2.
            let row_middle = len as i64 - 1;
            let mut in_row: Vec<(i64, usize)> = (0..=len - quantity)
                .filter(|&start| free_here[start..start + quantity].iter().all(|f| *f))
                .map(|start| {
                    let block_middle = 2 * start as i64 + quantity as i64 - 1;
                    ((block_middle - row_middle).abs(), start)
                })
                .collect();
            in_row.sort_unstable();
            for (_, start) in in_row {
                blocks.push(
                    (start..start + quantity)
                        .map(|at| row_first + at as u32)
                        .collect(),
                );
                if blocks.len() >= limit {
                    return blocks;
                }
            }
        }
        row_first += len as u32;
    }
    blocks
}

/// The best `count` blocks that share no seat, best first.
pub fn spread(blocks: &[Vec<u32>], count: usize) -> Vec<&Vec<u32>> {
    let mut chosen: Vec<&Vec<u32>> = Vec::new();
    for block in blocks {
        if chosen.len() == count {
            break;
        }
        if chosen
            .iter()
            .all(|other| other.iter().all(|seat| !block.contains(seat)))
        {
            chosen.push(block);
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::layout::LayoutRow;

    fn section(rows: &[usize]) -> LayoutSection {
        LayoutSection {
            name: "Floor".into(),
            price: 1,
            currency: "KRW".into(),
            rows: rows
                .iter()
                .enumerate()
                .map(|(r, len)| LayoutRow {
                    name: format!("R{r}"),
                    seats: (0..*len).map(|s| format!("S-{r}-{s}")).collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_front_row_first_then_the_block_nearest_its_middle() {
        // Two rows of 10 from index 100: the best pair is the middle of the front row.
        let blocks = ranked_blocks(&section(&[10, 10]), 100, 2, |_| true, 3);
        assert_eq!(blocks, [vec![104, 105], vec![103, 104], vec![105, 106]]);
        // An odd row of 5, one seat: the middle seat, then its neighbours.
        let blocks = ranked_blocks(&section(&[5]), 0, 1, |_| true, 3);
        assert_eq!(blocks, [vec![2], vec![1], vec![3]]);
    }

    #[test]
    fn taken_seats_split_rows_and_a_full_front_row_moves_to_the_next() {
        // Row 0 (0..6): only 0 and 5 free, no pair. Row 1 (6..12): 8 taken.
        let taken = [1, 2, 3, 4, 8];
        let blocks = ranked_blocks(&section(&[6, 6]), 0, 2, |i| !taken.contains(&i), 10);
        assert_eq!(blocks, [vec![9, 10], vec![6, 7], vec![10, 11]]);
        // Nobody has 4 together.
        assert!(ranked_blocks(&section(&[6, 6]), 0, 4, |i| !taken.contains(&i), 10).is_empty());
        // A row shorter than the party is skipped.
        assert_eq!(
            ranked_blocks(&section(&[2, 3]), 0, 3, |_| true, 10),
            [vec![2, 3, 4]]
        );
    }

    #[test]
    fn spread_picks_blocks_that_share_no_seat() {
        let blocks = ranked_blocks(&section(&[10]), 0, 2, |_| true, 10);
        let chosen = spread(&blocks, 3);
        assert_eq!(chosen, [&vec![4, 5], &vec![2, 3], &vec![6, 7]]);
    }
}
