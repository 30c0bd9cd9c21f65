//! Money amounts, and how they cross between Lineup's unit and Stripe's. Lineup counts money in
//! ISO 4217 minor units (24000 KRW is 24000, 12.50 USD is 1250, 1.234 KWD is 1234); Stripe counts
//! in its own unit, which is the same for most currencies but not all: ISK is two-decimal at
//! Stripe (ISO: none), MGA zero-decimal (ISO: two), and its three-decimal currencies take only
//! amounts whose last digit is 0. An amount that has no exact equivalent is refused, never
//! rounded: a rounded price would charge the customer something other than what Lineup recorded.

/// Why an amount cannot cross between Lineup's unit and Stripe's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Not a three-letter currency code.
    #[error("{0:?} is not a three-letter currency code")]
    Currency(String),
    /// A negative amount: payments and refunds are positive.
    #[error("the amount {amount} {currency} is negative")]
    Negative {
        /// The amount, in the unit it was given in.
        amount: i64,
        /// The currency, upper case.
        currency: String,
    },
    /// An amount the other side's unit cannot hold exactly (MGA 150 minor units: Stripe takes
    /// whole ariary; KWD 1.234: Stripe takes multiples of 10 fils; ISK 1.50 from Stripe).
    #[error("{amount} {currency} has no exact equivalent in the other unit")]
    Inexact {
        /// The amount, in the unit it was given in.
        amount: i64,
        /// The currency, upper case.
        currency: String,
    },
    /// Too large for a 64-bit amount once converted.
    #[error("{amount} {currency} overflows once converted")]
    Overflow {
        /// The amount, in the unit it was given in.
        amount: i64,
        /// The currency, upper case.
        currency: String,
    },
}

/// Decimal places of a currency's ISO 4217 minor unit (2 unless listed).
fn iso_exponent(currency: &str) -> u32 {
    match currency {
        "BIF" | "CLP" | "DJF" | "GNF" | "ISK" | "JPY" | "KMF" | "KRW" | "PYG" | "RWF" | "UGX"
        | "UYI" | "VND" | "VUV" | "XAF" | "XOF" | "XPF" => 0,
        "BHD" | "IQD" | "JOD" | "KWD" | "LYD" | "OMR" | "TND" => 3,
        "CLF" | "UYW" => 4,
        _ => 2,
    }
}

/// Decimal places of Stripe's unit for a currency (2 unless listed).
fn stripe_exponent(currency: &str) -> u32 {
    match currency {
        "BIF" | "CLP" | "DJF" | "GNF" | "JPY" | "KMF" | "KRW" | "MGA" | "PYG" | "RWF" | "UGX"
        | "VND" | "VUV" | "XAF" | "XOF" | "XPF" => 0,
        three_decimal if requires_trailing_zero(three_decimal) => 3,
        _ => 2,
    }
}

/// Stripe's three-decimal currencies, whose amounts must end in 0 (a multiple of ten of the
/// smallest unit).
fn requires_trailing_zero(currency: &str) -> bool {
    matches!(currency, "BHD" | "JOD" | "KWD" | "OMR" | "TND")
}

/// The currency upper-cased, if it is three ASCII letters.
fn code(currency: &str) -> Result<String, AmountError> {
    if currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(currency.to_ascii_uppercase())
    } else {
        Err(AmountError::Currency(currency.to_owned()))
    }
}

/// `amount` moved from a unit with `from` decimal places to one with `to`, exactly.
fn rescale(amount: i64, currency: String, from: u32, to: u32) -> Result<i64, AmountError> {
    if amount < 0 {
        return Err(AmountError::Negative { amount, currency });
    }
    if to >= from {
        10_i64
            .checked_pow(to - from)
            .and_then(|factor| amount.checked_mul(factor))
            .ok_or(AmountError::Overflow { amount, currency })
    } else {
        // At most 4 decimal places apart: the power always fits.
        let divisor = 10_i64.pow(from - to);
        if amount % divisor == 0 {
            Ok(amount / divisor)
        } else {
            Err(AmountError::Inexact { amount, currency })
        }
    }
}

/// A Lineup amount (ISO 4217 minor units of `currency`, any case) in Stripe's unit, or why
/// Stripe cannot take it exactly.
pub fn to_stripe(amount: i64, currency: &str) -> Result<i64, AmountError> {
    let currency = code(currency)?;
    let (iso, stripe) = (iso_exponent(&currency), stripe_exponent(&currency));
    let trailing_zero = requires_trailing_zero(&currency);
    let converted = rescale(amount, currency.clone(), iso, stripe)?;
    if trailing_zero && converted % 10 != 0 {
        return Err(AmountError::Inexact { amount, currency });
    }
    Ok(converted)
}

/// A Stripe amount of `currency` (any case) in ISO 4217 minor units, or why it has none.
pub fn from_stripe(amount: i64, currency: &str) -> Result<i64, AmountError> {
    let currency = code(currency)?;
    let (iso, stripe) = (iso_exponent(&currency), stripe_exponent(&currency));
    rescale(amount, currency, stripe, iso)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_decimal_currencies_are_the_same_number() {
        assert_eq!(to_stripe(55_000, "KRW"), Ok(55_000));
        assert_eq!(to_stripe(1_500, "JPY"), Ok(1_500));
        assert_eq!(from_stripe(55_000, "krw"), Ok(55_000));
    }

    #[test]
    fn two_decimal_currencies_are_cents_both_sides() {
        assert_eq!(to_stripe(1_250, "USD"), Ok(1_250));
        assert_eq!(to_stripe(1_250, "usd"), Ok(1_250));
        assert_eq!(from_stripe(1_250, "eur"), Ok(1_250));
    }

    #[test]
    fn malagasy_ariary_goes_to_stripe_in_whole_units_only() {
        assert_eq!(to_stripe(150_000, "MGA"), Ok(1_500));
        assert_eq!(from_stripe(1_500, "mga"), Ok(150_000));
        assert!(matches!(
            to_stripe(150_050, "MGA"),
            Err(AmountError::Inexact { .. })
        ));
    }

    #[test]
    fn icelandic_krona_is_two_decimal_at_stripe() {
        assert_eq!(to_stripe(1_990, "ISK"), Ok(199_000));
        assert_eq!(from_stripe(199_000, "isk"), Ok(1_990));
        assert!(matches!(
            from_stripe(199_050, "isk"),
            Err(AmountError::Inexact { .. })
        ));
    }

    #[test]
    fn three_decimal_currencies_must_end_in_zero_at_stripe() {
        assert_eq!(to_stripe(1_230, "KWD"), Ok(1_230));
        assert_eq!(from_stripe(1_230, "kwd"), Ok(1_230));
        assert!(matches!(
            to_stripe(1_234, "KWD"),
            Err(AmountError::Inexact { .. })
        ));
        // Three decimals in ISO, two at Stripe.
        assert_eq!(to_stripe(5_250, "IQD"), Ok(525));
        assert!(to_stripe(5_255, "IQD").is_err());
    }

    #[test]
    fn what_no_unit_holds_is_refused() {
        assert!(matches!(
            to_stripe(-1, "USD"),
            Err(AmountError::Negative { .. })
        ));
        assert!(matches!(
            to_stripe(i64::MAX, "ISK"),
            Err(AmountError::Overflow { .. })
        ));
        for bad in ["", "US", "USDX", "U$D", "ÜSD"] {
            assert!(
                matches!(to_stripe(100, bad), Err(AmountError::Currency(_))),
                "{bad:?} is not a currency"
            );
        }
    }

    #[test]
    fn every_amount_stripe_takes_comes_back_the_same() {
        for currency in [
            "KRW", "JPY", "USD", "MGA", "ISK", "KWD", "IQD", "CLF", "XOF",
        ] {
            for amount in [0, 1_000, 24_000, 123_450_000] {
                if let Ok(stripe) = to_stripe(amount, currency) {
                    assert_eq!(
                        from_stripe(stripe, currency),
                        Ok(amount),
                        "{amount} {currency}"
                    );
                }
            }
        }
    }
}
