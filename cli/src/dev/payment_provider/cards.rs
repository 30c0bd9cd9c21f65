//! The test payment methods the dev provider knows, by Stripe's names (`pm_card_visa`...), and
//! what each does: the one place to look up or add a card's behaviour.

/// What paying with a test payment method does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestCard {
    /// `pm_card_visa`, `pm_card_mastercard`, `pm_card_amex`: succeeds at once.
    Succeeds,
    /// `pm_card_chargeCustomerFail`, `pm_card_chargeDeclined`, `pm_card_visa_chargeDeclined`:
    /// declined (402 `card_declined`); the payment waits for another card.
    Declines,
    /// `pm_card_threeDSecure2Required`, `pm_card_authenticationRequired`: `requires_action`
    /// (3-D Secure), then succeeded once the customer completes it (after the provider's delay).
    ThreeDSecure,
    /// `pm_card_processing`, a name of the dev provider's own (Stripe has no card that stays
    /// processing): `processing`, then succeeded after the provider's delay.
    Processing,
    /// `pm_card_pendingRefund`: succeeds; its refunds start `pending` and succeed later.
    PendingRefund,
    /// `pm_card_refundFail`: succeeds; its refunds start `succeeded` and fail later.
    RefundFails,
}

impl TestCard {
    /// The behaviour of a payment method by its id; `None` for one the provider does not know.
    pub fn named(payment_method: &str) -> Option<Self> {
        Some(match payment_method {
            "pm_card_visa" | "pm_card_mastercard" | "pm_card_amex" => Self::Succeeds,
            "pm_card_chargeCustomerFail"
            | "pm_card_chargeDeclined"
            | "pm_card_visa_chargeDeclined" => Self::Declines,
            "pm_card_threeDSecure2Required" | "pm_card_authenticationRequired" => {
                Self::ThreeDSecure
            }
            "pm_card_processing" => Self::Processing,
            "pm_card_pendingRefund" => Self::PendingRefund,
            "pm_card_refundFail" => Self::RefundFails,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_cards_are_known_by_stripe_s_names() {
        assert_eq!(TestCard::named("pm_card_visa"), Some(TestCard::Succeeds));
        assert_eq!(
            TestCard::named("pm_card_chargeCustomerFail"),
            Some(TestCard::Declines)
        );
        assert_eq!(
            TestCard::named("pm_card_chargeDeclined"),
            Some(TestCard::Declines)
        );
        assert_eq!(
            TestCard::named("pm_card_threeDSecure2Required"),
            Some(TestCard::ThreeDSecure)
        );
        assert_eq!(
            TestCard::named("pm_card_processing"),
            Some(TestCard::Processing)
        );
        assert_eq!(TestCard::named("pm_card_nope"), None);
    }
}
