//! `lineup dev`'s payment provider from outside: its router served on a free loopback port, the
//! Stripe adapter (`StripeProvider`, unchanged) pointed at it, and a test receiver standing in
//! for Lineup's `POST /webhooks/stripe`, checking each event's `Stripe-Signature` as Lineup does.
//! A payment made for an order's terms and paid, declined, 3-D Secured, cancelled before and
//! after it succeeded, refunded (never more than paid) and its refunds listed across pages;
//! `Idempotency-Key` honoured; a browser paying with a publishable key and the client secret;
//! events lost for good on purpose, and counted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use lineup::adapters::stripe::{StripeApiKey, StripeCallError, StripeProvider};
use lineup::application::error::LineupError;
use lineup::application::ports::ledger::OrderTerms;
use lineup::application::ports::payments::{
    Cancellation, NewPayment, NewRefund, PaymentProvider, PaymentStatus, ProviderPayment,
    RefundStatus,
};
use lineup::domain::ids::{CustomerId, EventId, OrderId, PaymentId, SeatId};
use lineup::domain::keys::KeyRing;
use lineup::domain::webhook_signature::{WebhookSecret, STRIPE};
use lineup_cli::dev::payment_provider::{self as dev, ProviderStats, Settings};
use lineup_cli::local_aws::secrets::{
    DEV_PUBLISHABLE_KEY, DEV_STRIPE_API_KEY, DEV_STRIPE_WEBHOOK_SECRET, DEV_WEBHOOK_SECRET,
};
use serde_json::Value;

/// How long the provider's 3-D Secure and processing payments take here.
const COMPLETION: Duration = Duration::from_millis(400);

fn stripe_secret() -> WebhookSecret {
    WebhookSecret::new(DEV_STRIPE_WEBHOOK_SECRET).unwrap()
}

/// One event as the receiver got it, its signature checked.
#[derive(Debug, Clone)]
struct Received {
    event: Value,
    signature_ok: bool,
}

/// Lineup's `POST /webhooks/stripe`, as far as the provider can tell: records each event and
/// answers 200.
#[derive(Clone, Default)]
struct Receiver {
    events: Arc<Mutex<Vec<Received>>>,
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let signature = headers
        .get(STRIPE.header)
        .and_then(|value| value.to_str().ok());
    let signature_ok = KeyRing::single(stripe_secret())
        .verify_as(STRIPE, signature, &body, SystemTime::now())
        .is_ok();
    let event = serde_json::from_slice(&body).unwrap_or(Value::Null);
    receiver.events.lock().unwrap().push(Received {
        event,
        signature_ok,
    });
    StatusCode::OK
}

impl Receiver {
    /// The events about `object_id` so far.
    fn about(&self, object_id: &str) -> Vec<Received> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|received| received.event["data"]["object"]["id"] == object_id)
            .cloned()
            .collect()
    }

    /// Waits (up to 5 s) for an event of `kind` about `object_id`.
    async fn wait_for(&self, kind: &str, object_id: &str) -> Received {
        for _ in 0..100 {
            if let Some(found) = self
                .about(object_id)
                .into_iter()
                .find(|received| received.event["type"] == kind)
            {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "no {kind} about {object_id}; got {:?}",
            self.about(object_id)
        );
    }
}

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// The dev provider on a free port, its events going to a fresh receiver.
struct DevProvider {
    base: String,
    receiver: Receiver,
    adapter: StripeProvider,
    http: reqwest::Client,
}

impl DevProvider {
    async fn start(lose_share: f64) -> Self {
        let receiver = Receiver::default();
        let receiver_base = serve(
            axum::Router::new()
                .route("/webhooks/stripe", post(receive))
                .with_state(receiver.clone()),
        )
        .await;
        let settings = Settings {
            lose_share,
            completion_delay: COMPLETION,
            ..Settings::new(
                receiver_base,
                WebhookSecret::new(DEV_WEBHOOK_SECRET).unwrap(),
                stripe_secret(),
            )
        };
        let base = serve(dev::router(dev::PaymentProvider::new(settings))).await;
        let adapter =
            StripeProvider::open(base.clone(), StripeApiKey::new(DEV_STRIPE_API_KEY).unwrap())
                .unwrap();
        Self {
            base,
            receiver,
            adapter,
            http: reqwest::Client::new(),
        }
    }

    /// The customer pays `payment` with `payment_method`, as a server confirms (secret key):
    /// the HTTP status and the answer.
    async fn pay(&self, payment: &PaymentId, payment_method: &str) -> (StatusCode, Value) {
        let answer = self
            .http
            .post(format!(
                "{}/v1/payment_intents/{payment}/confirm",
                self.base
            ))
            .bearer_auth(DEV_STRIPE_API_KEY)
            .form(&[("payment_method", payment_method)])
            .send()
            .await
            .unwrap();
        (answer.status(), answer.json().await.unwrap())
    }

    async fn stats(&self) -> ProviderStats {
        self.http
            .get(format!("{}/dev/payments/stats", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn paid_payment(&self) -> ProviderPayment {
        let payment = self
            .adapter
            .create_payment(&new_payment(terms()))
            .await
            .unwrap();
        let (status, answer) = self.pay(&payment.id, "pm_card_visa").await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        payment
    }
}

/// An order's terms: two seats for 24,000 KRW under a ticket limit of 4.
fn terms() -> OrderTerms {
    OrderTerms {
        order_id: OrderId::generate(),
        event_id: EventId::parse("dev-provider").unwrap(),
        customer_id: CustomerId::parse("customer-00042").unwrap(),
        seat_ids: vec![
            SeatId::parse("A-001").unwrap(),
            SeatId::parse("A-002").unwrap(),
        ],
        amount: 24_000,
        currency: "KRW".to_owned(),
        ticket_limit: Some(4),
        admission_expires_at: Some(
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_900_000_000_123),
        ),
    }
}

fn new_payment(terms: OrderTerms) -> NewPayment {
    NewPayment {
        idempotency_key: format!("lineup-checkout-{}", terms.order_id.as_str()),
        terms,
    }
}

fn new_refund(payment: &ProviderPayment, amount: i64) -> NewRefund {
    NewRefund {
        payment_id: payment.id.clone(),
        amount,
        currency: payment.currency.clone(),
        refund_id: format!("lineup-refund-{}", uuid::Uuid::new_v4()),
    }
}

/// The provider's refusal under a [`LineupError::Failed`]: (HTTP status, type, code).
fn refusal(error: &LineupError) -> (u16, Option<String>, Option<String>) {
    let LineupError::Failed { source, .. } = error else {
        panic!("not Failed: {error:?}");
    };
    let Some(StripeCallError::Refused { source, .. }) = source.downcast_ref::<StripeCallError>()
    else {
        panic!("not a refusal: {error:?}");
    };
    (source.status, source.kind.clone(), source.code.clone())
}

#[tokio::test]
async fn a_payment_is_made_for_an_order_s_terms_and_paid_with_a_signed_event() {
    let dev = DevProvider::start(0.0).await;
    let terms = terms();
    let payment = dev
        .adapter
        .create_payment(&new_payment(terms.clone()))
        .await
        .unwrap();
    assert!(payment.id.as_str().starts_with("pi_"));
    assert_eq!(payment.status, PaymentStatus::RequiresPaymentMethod);
    assert_eq!(payment.amount, 24_000);
    assert_eq!(payment.currency, "KRW");
    assert!(payment
        .client_secret
        .as_deref()
        .is_some_and(|secret| secret.starts_with(&format!("{}_secret_", payment.id.as_str()))));
    assert_eq!(payment.terms().unwrap(), terms, "the metadata round-trips");

    let (status, answer) = dev.pay(&payment.id, "pm_card_visa").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["status"], "succeeded");
    let paid = dev.adapter.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(paid.status, PaymentStatus::Succeeded);
    assert_eq!(paid.terms().unwrap(), terms);

    let received = dev
        .receiver
        .wait_for("payment_intent.succeeded", payment.id.as_str())
        .await;
    assert!(
        received.signature_ok,
        "signed with the Stripe endpoint secret"
    );
    let event = &received.event;
    assert!(event["id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(event["object"], "event");
    assert_eq!(event["api_version"], "2024-06-20");
    assert_eq!(event["livemode"], false);
    assert!(event["created"].as_u64().is_some());
    assert!(event["pending_webhooks"].as_u64().is_some());
    let object = &event["data"]["object"];
    assert_eq!(object["status"], "succeeded");
    assert_eq!(object["amount"], 24_000);
    assert_eq!(object["currency"], "krw");
    assert_eq!(object["metadata"]["lineup_order"], terms.order_id.as_str());

    let stats = dev.stats().await;
    assert_eq!((stats.payments, stats.succeeded), (1, 1));
    assert_eq!(stats.webhooks_sent, 1);
    assert_eq!(stats.webhooks_lost, 0);
    assert!(
        dev.adapter
            .payment(&PaymentId::parse("pi_unknown").unwrap())
            .await
            .unwrap()
            .is_none(),
        "an unknown payment is Stripe's 404 resource_missing"
    );
}

#[tokio::test]
async fn the_idempotency_key_is_honoured() {
    let dev = DevProvider::start(0.0).await;
    let payment = new_payment(terms());
    let first = dev.adapter.create_payment(&payment).await.unwrap();
    let again = dev.adapter.create_payment(&payment).await.unwrap();
    assert_eq!(
        first, again,
        "the same key and parameters: the same payment"
    );
    assert_eq!(dev.stats().await.payments, 1);

    let mut other = payment.clone();
    other.terms.amount = 30_000;
    let error = dev.adapter.create_payment(&other).await.unwrap_err();
    assert_eq!(
        refusal(&error),
        (400, Some("idempotency_error".to_owned()), None)
    );
    assert_eq!(dev.stats().await.payments, 1, "nothing made");

    // A refund retried under its key is the one refund.
    let (status, _) = dev.pay(&first.id, "pm_card_visa").await;
    assert_eq!(status, StatusCode::OK);
    let refund = new_refund(&first, 5_000);
    let made = dev.adapter.refund(&refund).await.unwrap();
    assert_eq!(dev.adapter.refund(&refund).await.unwrap(), made);
    assert_eq!(dev.adapter.refunds_of(&first.id).await.unwrap(), vec![made]);
}

#[tokio::test]
async fn a_declined_card_leaves_the_payment_waiting_for_another() {
    let dev = DevProvider::start(0.0).await;
    let payment = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let (status, answer) = dev.pay(&payment.id, "pm_card_chargeCustomerFail").await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(answer["error"]["type"], "card_error");
    assert_eq!(answer["error"]["code"], "card_declined");
    assert_eq!(answer["error"]["payment_intent"]["id"], payment.id.as_str());

    let declined = dev.adapter.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(declined.status, PaymentStatus::RequiresPaymentMethod);
    assert_eq!(
        declined.last_error.as_deref(),
        Some("Your card was declined.")
    );
    let failed = dev
        .receiver
        .wait_for("payment_intent.payment_failed", payment.id.as_str())
        .await;
    assert!(failed.signature_ok);

    let (status, _) = dev.pay(&payment.id, "pm_card_chargeDeclined").await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    let (status, answer) = dev.pay(&payment.id, "pm_card_visa").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "another card may be tried: {answer}"
    );
}

#[tokio::test]
async fn three_d_secure_requires_action_then_succeeds() {
    let dev = DevProvider::start(0.0).await;
    let payment = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let (status, answer) = dev.pay(&payment.id, "pm_card_threeDSecure2Required").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["status"], "requires_action");
    assert_eq!(answer["next_action"]["type"], "use_stripe_sdk");
    let waiting = dev.adapter.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(waiting.status, PaymentStatus::RequiresAction);
    assert!(waiting.status.in_progress());
    dev.receiver
        .wait_for("payment_intent.requires_action", payment.id.as_str())
        .await;

    let succeeded = dev
        .receiver
        .wait_for("payment_intent.succeeded", payment.id.as_str())
        .await;
    assert!(succeeded.signature_ok);
    let paid = dev.adapter.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(paid.status, PaymentStatus::Succeeded);
}

#[tokio::test]
async fn a_payment_is_cancelled_before_it_succeeds_and_too_late_after() {
    let dev = DevProvider::start(0.0).await;
    let unpaid = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let Cancellation::Canceled(canceled) = dev.adapter.cancel_payment(&unpaid.id).await.unwrap()
    else {
        panic!("an unpaid payment is cancelled");
    };
    assert_eq!(canceled.status, PaymentStatus::Canceled);
    dev.receiver
        .wait_for("payment_intent.canceled", unpaid.id.as_str())
        .await;
    // Cancelled again: the same key, the same answer.
    let again = dev.adapter.cancel_payment(&unpaid.id).await.unwrap();
    assert!(matches!(again, Cancellation::Canceled(p) if p.status == PaymentStatus::Canceled));

    let paid = dev.paid_payment().await;
    match dev.adapter.cancel_payment(&paid.id).await.unwrap() {
        Cancellation::TooLate(now) => assert_eq!(now.status, PaymentStatus::Succeeded),
        Cancellation::Canceled(_) => panic!("a paid payment cannot be cancelled"),
    }

    // Processing (`pm_card_processing`): too late too, and it succeeds by itself.
    let processing = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let (_, answer) = dev.pay(&processing.id, "pm_card_processing").await;
    assert_eq!(answer["status"], "processing");
    match dev.adapter.cancel_payment(&processing.id).await.unwrap() {
        Cancellation::TooLate(now) => assert_eq!(now.status, PaymentStatus::Processing),
        Cancellation::Canceled(_) => panic!("a processing payment cannot be cancelled"),
    }
    dev.receiver
        .wait_for("payment_intent.succeeded", processing.id.as_str())
        .await;

    // 3-D Secure abandoned: cancelled while it waits, it never succeeds.
    let abandoned = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    dev.pay(&abandoned.id, "pm_card_threeDSecure2Required")
        .await;
    assert!(matches!(
        dev.adapter.cancel_payment(&abandoned.id).await.unwrap(),
        Cancellation::Canceled(_)
    ));
    tokio::time::sleep(COMPLETION * 2).await;
    let still = dev.adapter.payment(&abandoned.id).await.unwrap().unwrap();
    assert_eq!(still.status, PaymentStatus::Canceled);
}

#[tokio::test]
async fn refunds_are_made_listed_and_never_more_than_was_paid() {
    let dev = DevProvider::start(0.0).await;
    let payment = dev.paid_payment().await;
    let asked = new_refund(&payment, 20_000);
    let refund = dev.adapter.refund(&asked).await.unwrap();
    assert!(refund.id.starts_with("re_"));
    assert_eq!(refund.status, RefundStatus::Succeeded);
    assert_eq!(refund.amount, 20_000);
    assert_eq!(refund.currency, "KRW");
    assert_eq!(refund.payment_id, payment.id);
    assert_eq!(
        refund.lineup_refund.as_deref(),
        Some(asked.refund_id.as_str())
    );
    let created = dev.receiver.wait_for("refund.created", &refund.id).await;
    assert!(created.signature_ok);
    assert_eq!(created.event["data"]["object"]["object"], "refund");

    let too_much = dev
        .adapter
        .refund(&new_refund(&payment, 4_001))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&too_much),
        (
            400,
            Some("invalid_request_error".to_owned()),
            Some("amount_too_large".to_owned())
        )
    );
    dev.adapter
        .refund(&new_refund(&payment, 4_000))
        .await
        .unwrap();
    let nothing_left = dev
        .adapter
        .refund(&new_refund(&payment, 1))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&nothing_left).2.as_deref(),
        Some("charge_already_refunded")
    );

    let found = dev.adapter.refunds_of(&payment.id).await.unwrap();
    assert_eq!(found.len(), 2);
    assert!(found.contains(&refund));
    let stats = dev.stats().await;
    assert_eq!((stats.refunds, stats.refunded_amount), (2, 24_000));

    let unpaid = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let not_paid = dev
        .adapter
        .refund(&new_refund(&unpaid, 1))
        .await
        .unwrap_err();
    assert_eq!(refusal(&not_paid).0, 400);
}

#[tokio::test]
async fn a_payment_s_refunds_are_listed_across_pages() {
    let dev = DevProvider::start(0.0).await;
    let payment = dev.paid_payment().await;
    // 101 refunds: more than the adapter's page of 100.
    let mut made = Vec::new();
    for _ in 0..101 {
        made.push(
            dev.adapter
                .refund(&new_refund(&payment, 100))
                .await
                .unwrap(),
        );
    }
    let mut found = dev.adapter.refunds_of(&payment.id).await.unwrap();
    assert_eq!(found.len(), 101);
    found.reverse();
    assert_eq!(found, made, "every refund once, newest first");
}

#[tokio::test]
async fn a_browser_pays_with_the_publishable_key_and_the_client_secret() {
    let dev = DevProvider::start(0.0).await;
    let payment = dev
        .adapter
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let secret = payment.client_secret.as_deref().unwrap().to_owned();
    let url = format!("{}/v1/payment_intents/{}/confirm", dev.base, payment.id);
    let confirm = |client_secret: String, key: &'static str| {
        dev.http
            .post(&url)
            .form(&[
                ("payment_method", "pm_card_visa".to_owned()),
                ("client_secret", client_secret),
                ("key", key.to_owned()),
            ])
            .send()
    };
    let wrong = confirm(format!("{}_secret_wrong", payment.id), DEV_PUBLISHABLE_KEY)
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    let no_key = confirm(secret.clone(), "").await.unwrap();
    assert_eq!(no_key.status(), StatusCode::UNAUTHORIZED);

    let paid = confirm(secret, DEV_PUBLISHABLE_KEY).await.unwrap();
    assert_eq!(paid.status(), StatusCode::OK);
    let answer: Value = paid.json().await.unwrap();
    assert_eq!(answer["status"], "succeeded");
    assert!(
        answer.get("metadata").is_none(),
        "a publishable key sees no metadata"
    );

    // A publishable key makes no payment.
    let refused = dev
        .http
        .post(format!("{}/v1/payment_intents", dev.base))
        .bearer_auth(DEV_PUBLISHABLE_KEY)
        .form(&[("amount", "100"), ("currency", "krw")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let unsigned = dev
        .http
        .get(format!("{}/v1/payment_intents/{}", dev.base, payment.id))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn events_lost_on_purpose_never_arrive_and_are_counted() {
    let dev = DevProvider::start(1.0).await;
    let payment = dev.paid_payment().await;
    let paid = dev.adapter.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(paid.status, PaymentStatus::Succeeded, "the payment is made");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(dev.receiver.about(payment.id.as_str()).is_empty());
    let stats = dev.stats().await;
    assert_eq!(stats.webhooks_lost, 1);
    assert_eq!(stats.webhooks_sent, 0);
    assert_eq!(stats.succeeded, 1);

    let raw: Value = dev
        .http
        .get(format!("{}/dev/payments/stats", dev.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for field in [
        "webhooksSent",
        "webhooksLost",
        "webhooksDuplicated",
        "payments",
        "succeeded",
        "refunds",
        "refundedAmount",
    ] {
        assert!(raw.get(field).is_some(), "{field} in {raw}");
    }
}

#[tokio::test]
async fn the_generic_provider_still_takes_payments_and_other_routes_are_stripe_s_404() {
    let dev = DevProvider::start(0.0).await;
    let taken = dev
        .http
        .post(format!("{}/dev/payments", dev.base))
        .json(&serde_json::json!({
            "orderId": OrderId::generate().as_str(), "amount": 24000, "currency": "KRW"
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), StatusCode::ACCEPTED);
    let taken: Value = taken.json().await.unwrap();
    let id = taken["paymentId"].as_str().unwrap();
    let status = dev
        .http
        .get(format!("{}/dev/payments/{id}", dev.base))
        .send()
        .await
        .unwrap();
    assert_eq!(status.status(), StatusCode::OK);

    let unknown = dev
        .http
        .get(format!("{}/v1/checkout/sessions", dev.base))
        .bearer_auth(DEV_STRIPE_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let body: Value = unknown.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
}
