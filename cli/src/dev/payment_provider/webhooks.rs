//! The provider's Stripe events, delivered as Stripe delivers them: Stripe's envelope, signed
//! with `Stripe-Signature` (`t=<unix>,v1=<HMAC-SHA256 of "t.body">`, the endpoint secret), POSTed
//! to Lineup's `/webhooks/stripe` a little later, retried while it answers 5xx or not at all. To
//! exercise Lineup's defences, a share of the events is sent twice and a share is lost for good
//! (never sent, as when an endpoint is down longer than Stripe retries): both counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lineup::adapters::stripe::API_VERSION;
use lineup::domain::webhook_signature::WebhookSecret;
use serde_json::{json, Value};

use super::delivery::{self, Delivered};
use super::state::new_id;

/// How long a delivery attempt waits for Lineup's answer (Stripe: about 10 to 20 s).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The request that caused an event (Stripe's `request` field): `None` for the provider's own
/// steps (a 3-D Secure completed, a refund settled).
#[derive(Debug, Clone, Default)]
pub struct Cause {
    pub request_id: Option<String>,
    pub idempotency_key: Option<String>,
}

/// How many events went where (`/dev/payments/stats`).
#[derive(Debug, Default)]
pub struct Counters {
    /// Events handed to delivery (a duplicated one counts once).
    pub sent: AtomicU64,
    /// Events lost for good: never sent.
    pub lost: AtomicU64,
    /// Events sent a second time on purpose.
    pub duplicated: AtomicU64,
    /// Copies Lineup answered with a 4xx (not retried).
    pub refused: AtomicU64,
    /// Copies still unanswered (5xx, no answer) when patience ran out.
    pub undelivered: AtomicU64,
}

/// Where and how the events go.
#[derive(Clone)]
pub struct Webhooks {
    client: reqwest::Client,
    /// `<api base>/webhooks/stripe`.
    url: String,
    secret: WebhookSecret,
    duplicate_share: f64,
    /// The share lost for good, as `f64` bits: changeable while running
    /// (`PUT /dev/payments/settings`, which `lineup simulate --lose-webhooks` uses).
    lose_share: Arc<AtomicU64>,
    delay: Duration,
    pub counters: Arc<Counters>,
}

/// Stripe's envelope around an object.
pub fn envelope(kind: &str, object: Value, cause: &Cause, at: SystemTime) -> Value {
    let created = at
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    json!({
        "id": new_id("evt"),
        "object": "event",
        "api_version": API_VERSION,
        "created": created,
        "data": {"object": object},
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": cause.request_id, "idempotency_key": cause.idempotency_key},
        "type": kind,
    })
}

impl Webhooks {
    pub fn new(
        api_base: &str,
        secret: WebhookSecret,
        duplicate_share: f64,
        lose_share: f64,
        delay: Duration,
    ) -> Self {
        Self {
            client: crate::http_client()
                .timeout(ATTEMPT_TIMEOUT)
                .build()
                .unwrap_or_default(),
            url: format!("{}/webhooks/stripe", api_base.trim_end_matches('/')),
            secret,
            duplicate_share,
            lose_share: Arc::new(AtomicU64::new(lose_share.to_bits())),
            delay,
            counters: Arc::default(),
        }
    }

    /// The share of events lost for good now.
    pub fn lose_share(&self) -> f64 {
        f64::from_bits(self.lose_share.load(Ordering::Relaxed))
    }

    /// Loses `share` of the events from now on.
    pub fn set_lose_share(&self, share: f64) {
        self.lose_share.store(share.to_bits(), Ordering::Relaxed);
    }

    /// Sends the event `kind` about `object` after the delay (or loses it, or sends it twice).
    pub fn send(&self, kind: &'static str, object: Value, cause: &Cause, at: SystemTime) {
        let event = envelope(kind, object, cause, at);
        let id = event["id"].as_str().unwrap_or_default().to_owned();
        if rand::random::<f64>() < self.lose_share() {
            self.counters.lost.fetch_add(1, Ordering::Relaxed);
            tracing::info!(event = %id, kind, "Stripe event lost on purpose (--lose-webhooks)");
            return;
        }
        let twice = rand::random::<f64>() < self.duplicate_share;
        self.counters.sent.fetch_add(1, Ordering::Relaxed);
        if twice {
            self.counters.duplicated.fetch_add(1, Ordering::Relaxed);
        }
        let body = event.to_string();
        let webhooks = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(webhooks.delay).await;
            let copy = |copy: u32| webhooks.deliver(&id, kind, &body, copy);
            if twice {
                futures::join!(copy(1), copy(2));
            } else {
                copy(1).await;
            }
        });
    }

    /// One copy, signed anew at each attempt (as Stripe does), until Lineup answers.
    async fn deliver(&self, id: &str, kind: &str, body: &str, copy: u32) {
        let build = || {
            self.client
                .post(&self.url)
                .header("content-type", "application/json; charset=utf-8")
                .header(
                    "stripe-signature",
                    self.secret.sign(SystemTime::now(), body.as_bytes()),
                )
                .header(
                    "user-agent",
                    "Stripe/1.0 (+https://stripe.com/docs/webhooks) lineup-dev",
                )
                .body(body.to_owned())
        };
        match delivery::until_answered(build, || {}, id).await {
            Delivered::Answered { status, answer } => {
                if !status.is_success() {
                    self.counters.refused.fetch_add(1, Ordering::Relaxed);
                }
                let outcome = answer
                    .as_ref()
                    .and_then(|answer| answer["outcome"].as_str())
                    .unwrap_or("-")
                    .to_owned();
                tracing::info!(event = %id, kind, copy, status = status.as_u16(), outcome, "Stripe event answered");
            }
            Delivered::GaveUp => {
                self.counters.undelivered.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_has_stripe_s_envelope() {
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let cause = Cause {
            request_id: Some("req_1".into()),
            idempotency_key: Some("lineup-checkout-1".into()),
        };
        let event = envelope(
            "payment_intent.succeeded",
            json!({"id": "pi_1", "object": "payment_intent"}),
            &cause,
            at,
        );
        assert!(event["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(event["object"], "event");
        assert_eq!(event["api_version"], "2024-06-20");
        assert_eq!(event["created"], 1_800_000_000);
        assert_eq!(event["livemode"], false);
        assert_eq!(event["pending_webhooks"], 1);
        assert_eq!(event["type"], "payment_intent.succeeded");
        assert_eq!(event["data"]["object"]["id"], "pi_1");
        assert_eq!(event["request"]["idempotency_key"], "lineup-checkout-1");
    }

    #[tokio::test]
    async fn a_lost_event_is_never_sent_and_counted() {
        let secret = WebhookSecret::new("whsec_for_the_unit_tests_of_the_provider_0").unwrap();
        // Port 9: nothing listens; a sent event would be retried, not counted lost.
        let webhooks = Webhooks::new(
            "http://127.0.0.1:9",
            secret,
            0.0,
            1.0,
            Duration::from_secs(3600),
        );
        for _ in 0..3 {
            webhooks.send(
                "payment_intent.succeeded",
                json!({}),
                &Cause::default(),
                SystemTime::now(),
            );
        }
        assert_eq!(webhooks.counters.lost.load(Ordering::Relaxed), 3);
        assert_eq!(webhooks.counters.sent.load(Ordering::Relaxed), 0);
    }
}
