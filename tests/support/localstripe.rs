//! localstripe, the Stripe stand-in the test command starts (at `STRIPE_API_BASE`): the Stripe
//! adapter pointed at it, and what a customer's browser does with Stripe.js, done server-side as
//! localstripe allows.

use lineup::adapters::stripe::{http_client, StripeApiKey, StripeProvider};
use lineup::domain::ids::PaymentId;
use reqwest::StatusCode;

/// Any `sk_test_` key does for localstripe.
pub const TEST_KEY: &str = "sk_test_lineup_adapter";

/// Where localstripe answers; the tests that need it stop here when it is not running.
pub fn api_base() -> String {
    std::env::var("STRIPE_API_BASE").unwrap_or_else(|_| {
        panic!(
            "STRIPE_API_BASE is not set: these tests need localstripe. \
             Run the README's test command (scripts/test.sh), which starts one."
        )
    })
}

/// Lineup's key for localstripe.
pub fn key() -> StripeApiKey {
    StripeApiKey::new(TEST_KEY).expect("a test key")
}

/// The Stripe adapter, pointed at localstripe.
pub fn provider() -> StripeProvider {
    StripeProvider::open(api_base(), key()).expect("an HTTP client")
}

/// Pays `payment` with `payment_method` (`pm_card_visa`, `pm_card_chargeCustomerFail`) the way
/// localstripe takes it (the payment method set by an update, then a confirm with no body):
/// Stripe's HTTP status of the confirm.
pub async fn customer_pays(payment: &PaymentId, payment_method: &str) -> StatusCode {
    let client = http_client().expect("an HTTP client");
    let url = format!("{}/v1/payment_intents/{}", api_base(), payment);
    let attach = client
        .post(&url)
        .bearer_auth(TEST_KEY)
        .form(&[("payment_method", payment_method)])
        .send()
        .await
        .expect("localstripe answers");
    assert_eq!(attach.status(), StatusCode::OK, "attach {payment_method}");
    let confirm = client
        .post(format!("{url}/confirm"))
        .bearer_auth(TEST_KEY)
        .send()
        .await
        .expect("localstripe answers");
    confirm.status()
}
