//! `lineup dev`'s payment provider: a stand-in that speaks Stripe's API for the part Lineup uses,
//! so `lineup::adapters::stripe::StripeProvider` pointed at `lineup dev` works unchanged, and
//! that sends Stripe's signed events to Lineup's `POST /webhooks/stripe`.
//!
//! - `/v1/payment_intents` (create, retrieve, update, confirm, cancel) and `/v1/refunds`
//!   (create, retrieve, list), in Stripe's shapes ([`api`]; its parameters [`params`], its keys
//!   [`auth`]), over in-memory books that follow Stripe's rules ([`state`]), with Stripe's test
//!   payment methods ([`cards`]): `pm_card_visa` succeeds, `pm_card_chargeCustomerFail` and
//!   `pm_card_chargeDeclined` are declined, `pm_card_threeDSecure2Required` needs 3-D Secure
//!   (completed by "the customer" after [`Settings::completion_delay`]), and
//!   `pm_card_processing` (a name of ours: Stripe has no such card) is processing for that long.
//!   `Idempotency-Key` is honoured ([`idempotency`]); refunds never exceed what was paid.
//! - Events ([`webhooks`]): signed with the Stripe webhook secret, sent about 300 ms after the
//!   change, retried on 5xx or no answer ([`delivery`]), a share sent twice
//!   (`--duplicate-webhooks`) and a share lost for good (`--lose-webhooks`), all counted at
//!   `GET /dev/payments/stats`.
//! - The first stand-in, `POST /dev/payments` with Lineup's generic webhook, is kept as it was
//!   ([`generic`]) until the page and `lineup simulate` move to the Stripe API.
//!
//! What differs from Stripe: the same few test payment methods only, cards only, no Checkout,
//! customers, charges or events API; state lives in memory for the run; events are
//! retried on 5xx or no answer for ten minutes (Stripe: any non-2xx, for three days).

pub mod api;
pub mod auth;
pub mod cards;
pub mod delivery;
pub mod errors;
pub mod generic;
pub mod idempotency;
pub mod params;
pub mod state;
pub mod webhooks;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use lineup::domain::webhook_signature::WebhookSecret;
use serde::{Deserialize, Serialize};

use self::idempotency::Keys;
use self::state::{Books, Effect};
use self::webhooks::{Cause, Webhooks};

/// How the provider behaves.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Lineup's API, as from outside: Stripe events go to `{api_base}/webhooks/stripe`, the
    /// generic provider's webhooks to `{api_base}/orders/{orderId}/confirm`.
    pub api_base: String,
    /// The generic webhook's secret (`Lineup-Signature`).
    pub webhook_secret: WebhookSecret,
    /// The Stripe webhook endpoint's secret (`Stripe-Signature`).
    pub stripe_webhook_secret: WebhookSecret,
    /// The share of webhooks sent twice at once (0.0–1.0).
    pub duplicate_share: f64,
    /// The share of Stripe events lost for good, never sent (0.0–1.0).
    pub lose_share: f64,
    /// How long after a change its webhook goes out.
    pub webhook_delay: Duration,
    /// How long a 3-D Secure payment waits for the customer, and a processing one for the bank,
    /// before it succeeds; and a pending refund before it settles.
    pub completion_delay: Duration,
}

impl Settings {
    /// Webhooks to `api_base` about 300 ms after each change, none twice or lost, 3 s for a
    /// customer to complete 3-D Secure.
    pub fn new(
        api_base: impl Into<String>,
        webhook_secret: WebhookSecret,
        stripe_webhook_secret: WebhookSecret,
    ) -> Self {
        Self {
            api_base: api_base.into(),
            webhook_secret,
            stripe_webhook_secret,
            duplicate_share: 0.0,
            lose_share: 0.0,
            webhook_delay: Duration::from_millis(300),
            completion_delay: Duration::from_secs(3),
        }
    }
}

/// The books and the idempotency keys, under one lock (each request's work is synchronous).
#[derive(Default)]
struct Desk {
    books: Books,
    keys: Keys,
}

struct Inner {
    desk: Mutex<Desk>,
    webhooks: Webhooks,
    completion_delay: Duration,
}

/// The provider: cheap to clone (shared state).
#[derive(Clone)]
pub struct PaymentProvider {
    inner: Arc<Inner>,
    generic: generic::GenericProvider,
}

impl PaymentProvider {
    pub fn new(settings: Settings) -> Self {
        let webhooks = Webhooks::new(
            &settings.api_base,
            settings.stripe_webhook_secret,
            settings.duplicate_share,
            settings.lose_share,
            settings.webhook_delay,
        );
        Self {
            inner: Arc::new(Inner {
                desk: Mutex::default(),
                webhooks,
                completion_delay: settings.completion_delay,
            }),
            generic: generic::GenericProvider::new(
                settings.webhook_secret,
                settings.api_base,
                settings.duplicate_share,
                settings.webhook_delay,
            ),
        }
    }

    fn desk(&self) -> MutexGuard<'_, Desk> {
        // A panic while holding the lock leaves the books as they were at worst mid-request:
        // serving on beats failing every later request.
        self.inner
            .desk
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sets going what a request (or a step of the provider's own) caused.
    fn carry_out(&self, effects: Vec<Effect>, cause: &Cause) {
        let now = SystemTime::now();
        for effect in effects {
            match effect {
                Effect::Event { kind, object } => {
                    self.inner.webhooks.send(kind, object, cause, now);
                }
                Effect::Later(step) => {
                    let provider = self.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(provider.inner.completion_delay).await;
                        let effects = provider.desk().books.follow_up(&step);
                        provider.carry_out(effects, &Cause::default());
                    });
                }
            }
        }
    }

    /// What `GET /dev/payments/stats` answers.
    pub fn stats(&self) -> ProviderStats {
        let books = self.desk().books.stats();
        let counters = &self.inner.webhooks.counters;
        ProviderStats {
            webhooks_sent: counters.sent.load(Ordering::Relaxed),
            webhooks_lost: counters.lost.load(Ordering::Relaxed),
            webhooks_duplicated: counters.duplicated.load(Ordering::Relaxed),
            webhooks_refused: counters.refused.load(Ordering::Relaxed),
            webhooks_undelivered: counters.undelivered.load(Ordering::Relaxed),
            payments: books.payments,
            succeeded: books.succeeded,
            refunds: books.refunds,
            refunded_amount: books.refunded_amount,
        }
    }
}

/// `GET /dev/payments/stats`: the Stripe API's payments and events so far (the generic
/// `/dev/payments` ones are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStats {
    /// Events handed to delivery (one sent twice counts once).
    pub webhooks_sent: u64,
    /// Events lost for good on purpose (`--lose-webhooks`): never sent.
    pub webhooks_lost: u64,
    /// Events sent twice on purpose (`--duplicate-webhooks`).
    pub webhooks_duplicated: u64,
    /// Copies Lineup answered with a 4xx.
    pub webhooks_refused: u64,
    /// Copies Lineup never accepted (5xx or no answer for ten minutes).
    pub webhooks_undelivered: u64,
    /// PaymentIntents made.
    pub payments: u64,
    /// PaymentIntents succeeded.
    pub succeeded: u64,
    /// Refunds made.
    pub refunds: u64,
    /// What the refunds not failed give back, in ISO 4217 minor units (Lineup's unit).
    pub refunded_amount: i64,
}

async fn stats(State(provider): State<PaymentProvider>) -> Json<ProviderStats> {
    Json(provider.stats())
}

/// `PUT /dev/payments/settings`'s body: what may change while running.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderSettings {
    /// The share of Stripe events lost for good from now on (0.0–1.0).
    pub lose_webhooks: f64,
}

/// `PUT /dev/payments/settings`: `lineup simulate --lose-webhooks` sets the share for its run.
async fn set_settings(
    State(provider): State<PaymentProvider>,
    Json(settings): Json<ProviderSettings>,
) -> Result<Json<ProviderSettings>, (axum::http::StatusCode, String)> {
    if !(0.0..=1.0).contains(&settings.lose_webhooks) {
        return Err((
            axum::http::StatusCode::BAD_REQUEST,
            "loseWebhooks is a share from 0.0 to 1.0".to_owned(),
        ));
    }
    provider
        .inner
        .webhooks
        .set_lose_share(settings.lose_webhooks);
    Ok(Json(settings))
}

/// The provider's routes: Stripe's API under `/v1`, `GET /dev/payments/stats`, and the generic
/// provider's `POST /dev/payments` and `GET /dev/payments/{paymentId}`.
pub fn router(provider: PaymentProvider) -> Router {
    let generic = Router::new()
        .route("/dev/payments", post(generic::take_payment))
        .route("/dev/payments/{paymentId}", get(generic::payment_status))
        .with_state(provider.generic.clone());
    let stripe = Router::new()
        .nest("/v1", api::routes())
        .route("/dev/payments/stats", get(stats))
        .route("/dev/payments/settings", axum::routing::put(set_settings))
        .with_state(provider);
    generic.merge(stripe)
}

/// A share, 0.0 to 1.0 (a flag's parser).
pub fn share(raw: &str) -> Result<f64, String> {
    match raw.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{raw} is not a share from 0.0 to 1.0")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_from_zero_to_one() {
        assert_eq!(share("0"), Ok(0.0));
        assert_eq!(share("0.25"), Ok(0.25));
        assert_eq!(share("1"), Ok(1.0));
        for bad in ["-0.1", "1.5", "half", "NaN"] {
            assert!(share(bad).is_err(), "{bad}");
        }
    }
}
