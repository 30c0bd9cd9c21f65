//! How right the "likely sold out" forecast was: of the customers who waited with a number, how
//! many the status told (at some read while they waited) that the sale would very likely be sold
//! out before their turn, and how many of those, and of the others, ended with no ticket
//! (`EventStatus::likely_sold_out`, ADR 0029). Customers who left of their own accord (left or
//! vanished while waiting or when admitted, let their hold lapse, released it) are counted apart:
//! no forecast of the seats is about them.

use serde::Serialize;

use super::customer::{CustomerReport, Outcome};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SoldOutForecast {
    /// Customers with a number who waited (those who left of their own accord excepted).
    pub waited: usize,
    /// Customers with a number who left of their own accord, not judged.
    pub left_of_their_own: usize,
    /// ... told "likely sold out" while waiting.
    pub told: usize,
    /// ... told, and ended with no ticket: the forecast was right.
    pub told_and_got_nothing: usize,
    /// ... not told, and ended with no ticket: the forecast missed them.
    pub not_told_and_got_nothing: usize,
}

impl SoldOutForecast {
    pub fn tally<'a>(customers: impl IntoIterator<Item = &'a CustomerReport>) -> Self {
        let mut forecast = Self::default();
        for customer in customers {
            if customer.wait.number.is_none() {
                continue;
            }
            if matches!(
                customer.outcome,
                Outcome::LeftWhileWaiting
                    | Outcome::VanishedWhileWaiting
                    | Outcome::LeftWhenAdmitted
                    | Outcome::VanishedWhenAdmitted
                    | Outcome::LetHoldLapse { .. }
                    | Outcome::Released { .. }
            ) {
                forecast.left_of_their_own += 1;
                continue;
            }
            forecast.waited += 1;
            let got_nothing = !matches!(customer.outcome, Outcome::Paid { .. });
            if customer.wait.told_sold_out {
                forecast.told += 1;
                forecast.told_and_got_nothing += usize::from(got_nothing);
            } else {
                forecast.not_told_and_got_nothing += usize::from(got_nothing);
            }
        }
        forecast
    }

    /// The share of those told who got nothing (`None` if nobody was told).
    pub fn told_right_share(&self) -> Option<f64> {
        (self.told > 0).then(|| self.told_and_got_nothing as f64 / self.told as f64)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::waiting::WaitLog;
    use super::*;

    fn customer(number: Option<u64>, told: bool, outcome: Outcome) -> CustomerReport {
        CustomerReport {
            customer_id: "c".into(),
            outcome,
            joined: true,
            admitted: false,
            wait: WaitLog {
                number,
                told_sold_out: told,
                ..WaitLog::default()
            },
            holds_won: 0,
            holds_lost: 0,
            price_changes: 0,
            seen: Vec::new(),
            problem: None,
            took: Duration::ZERO,
        }
    }

    #[test]
    fn the_forecast_is_judged_by_who_got_a_ticket() {
        let paid = || Outcome::Paid {
            order_id: "o".into(),
            seats: 2,
        };
        let customers = [
            customer(Some(900), true, Outcome::ClosedWhileWaiting), // told, right
            customer(Some(800), true, paid()),                      // told, wrong
            customer(Some(700), false, Outcome::NoSeatsLeft),       // missed
            customer(Some(10), false, paid()),                      // rightly not told
            customer(None, true, Outcome::TurnedAway),              // never waited: not counted
            customer(Some(600), true, Outcome::LeftWhileWaiting),   // its own choice: apart
        ];
        let forecast = SoldOutForecast::tally(&customers);
        assert_eq!(
            forecast,
            SoldOutForecast {
                waited: 4,
                left_of_their_own: 1,
                told: 2,
                told_and_got_nothing: 1,
                not_told_and_got_nothing: 1,
            }
        );
        assert_eq!(forecast.told_right_share(), Some(0.5));
        assert_eq!(SoldOutForecast::default().told_right_share(), None);
    }
}
