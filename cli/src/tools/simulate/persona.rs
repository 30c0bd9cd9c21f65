//! Who each simulated customer is: when they arrive, how patient they are, how many seats they
//! want and where, and what they do once they hold seats. Drawn up front from the customer's own
//! seeded generator, so the same seed gives the same crowd.

use std::time::Duration;

use rand::RngExt;

/// What a customer does while waiting in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// Waits until admitted (or the sale ends).
    Patient,
    /// Leaves the queue (`DELETE`) after this many status reads.
    LeavesAfter(u32),
    /// Closes the tab after this many status reads: stops reading, never says so (if called, the
    /// admission lapses unclaimed).
    VanishesAfter(u32),
}

/// What a customer does when admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnAdmission {
    Shops,
    /// Changes their mind and gives the admission back (`DELETE` of the queue entry).
    Leaves,
    /// Walks away: the admission lapses at the end of the session.
    Vanishes,
}

/// What a customer does once the hold succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterHold {
    Pay,
    /// Opens checkout while the hold lives, confirms only after it lapsed: sold if nobody took a
    /// seat meanwhile, else refunded; refused if reconciliation cancelled the payment first.
    PayLate,
    /// Does nothing: the hold lapses and the sweep puts the seats back on sale.
    LetLapse,
    /// Gives the seats back (`DELETE` of the hold) and leaves.
    Release,
}

#[derive(Debug, Clone)]
pub struct Persona {
    /// When the customer arrives, from the start of the ramp.
    pub arrival: Duration,
    pub patience: Patience,
    pub on_admission: OnAdmission,
    /// How many seats they want together (1–4).
    pub party: usize,
    /// Which section they look at first, as a fraction of the venue's sections (0 = the first).
    pub section_pick: f64,
    /// Their first pick comes from a stale map: the popular front rows, taken or not.
    pub stale_map: bool,
    pub after_hold: AfterHold,
    /// Asks for "best available" in their section first instead of picking seats.
    pub best_available: bool,
}

/// The mix of behaviours, in percent of customers.
pub mod mix {
    pub const LEAVE_WHILE_WAITING: f64 = 0.04;
    pub const VANISH_WHILE_WAITING: f64 = 0.03;
    pub const LEAVE_WHEN_ADMITTED: f64 = 0.03;
    pub const VANISH_WHEN_ADMITTED: f64 = 0.02;
    pub const STALE_MAP: f64 = 0.15;
    pub const LET_LAPSE: f64 = 0.10;
    pub const RELEASE: f64 = 0.05;
    pub const PAY_LATE: f64 = 0.03;
    /// Ask the server for the best seats together rather than pick them from the map.
    pub const BEST_AVAILABLE: f64 = 0.5;
    /// Party sizes 1, 2, 3, 4.
    pub const PARTY: [f64; 4] = [0.15, 0.45, 0.15, 0.25];
}

impl Persona {
    /// One customer. `late_payment_possible`: whether holds are short enough (a minute or
    /// less) for a late payer to wait them out; otherwise late payers pay on time.
    pub fn draw(rng: &mut impl RngExt, ramp: Duration, late_payment_possible: bool) -> Self {
        let arrival = ramp.mul_f64(rng.random::<f64>());
        let roll = rng.random::<f64>();
        let patience = if roll < mix::LEAVE_WHILE_WAITING {
            Patience::LeavesAfter(rng.random_range(1..=4))
        } else if roll < mix::LEAVE_WHILE_WAITING + mix::VANISH_WHILE_WAITING {
            Patience::VanishesAfter(rng.random_range(1..=4))
        } else {
            Patience::Patient
        };
        let roll = rng.random::<f64>();
        let on_admission = if roll < mix::LEAVE_WHEN_ADMITTED {
            OnAdmission::Leaves
        } else if roll < mix::LEAVE_WHEN_ADMITTED + mix::VANISH_WHEN_ADMITTED {
            OnAdmission::Vanishes
        } else {
            OnAdmission::Shops
        };
        let party = pick_weighted(rng, &mix::PARTY) + 1;
        let section_pick = rng.random::<f64>();
        let stale_map = rng.random_bool(mix::STALE_MAP);
        let roll = rng.random::<f64>();
        let after_hold = if roll < mix::LET_LAPSE {
            AfterHold::LetLapse
        } else if roll < mix::LET_LAPSE + mix::RELEASE {
            AfterHold::Release
        } else if roll < mix::LET_LAPSE + mix::RELEASE + mix::PAY_LATE && late_payment_possible {
            AfterHold::PayLate
        } else {
            AfterHold::Pay
        };
        let best_available = rng.random_bool(mix::BEST_AVAILABLE);
        Self {
            arrival,
            patience,
            on_admission,
            party,
            section_pick,
            stale_map,
            after_hold,
            best_available,
        }
    }

    /// The section they look at first, of `sections`.
    pub fn section<'a>(&self, sections: &'a [String]) -> &'a str {
        let index = (self.section_pick * sections.len() as f64) as usize;
        sections
            .get(index.min(sections.len().saturating_sub(1)))
            .map_or("", String::as_str)
    }
}

/// An index drawn with the given weights (which add up to about 1).
fn pick_weighted(rng: &mut impl RngExt, weights: &[f64]) -> usize {
    let mut roll = rng.random::<f64>() * weights.iter().sum::<f64>();
    for (index, weight) in weights.iter().enumerate() {
        if roll < *weight {
            return index;
        }
        roll -= weight;
    }
    weights.len().saturating_sub(1)
}

/// A pause of about `mean` (between half and one and a half times it): reading the map,
/// typing card details.
pub fn think(rng: &mut impl RngExt, mean: Duration) -> Duration {
    mean.mul_f64(rng.random_range(0.5..1.5))
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_crowd() {
        let crowd = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..50)
                .map(|_| {
                    format!(
                        "{:?}",
                        Persona::draw(&mut rng, Duration::from_secs(5), true)
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(crowd(7), crowd(7));
        assert_ne!(crowd(7), crowd(8));
    }

    #[test]
    fn the_mix_is_roughly_as_configured() {
        let mut rng = StdRng::seed_from_u64(42);
        let crowd: Vec<Persona> = (0..10_000)
            .map(|_| Persona::draw(&mut rng, Duration::from_secs(5), false))
            .collect();
        let share = |f: &dyn Fn(&Persona) -> bool| {
            crowd.iter().filter(|p| f(p)).count() as f64 / crowd.len() as f64
        };
        assert!((share(&|p| p.after_hold == AfterHold::LetLapse) - 0.10).abs() < 0.02);
        assert!((share(&|p| p.after_hold == AfterHold::Release) - 0.05).abs() < 0.02);
        assert_eq!(share(&|p| p.after_hold == AfterHold::PayLate), 0.0);
        assert!((share(&|p| p.party == 2) - 0.45).abs() < 0.03);
        assert!(crowd.iter().all(|p| (1..=4).contains(&p.party)));
        assert!(crowd.iter().all(|p| p.arrival <= Duration::from_secs(5)));
    }
}
