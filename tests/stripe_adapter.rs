//! The Stripe adapter of the payment provider port, two ways. Against localstripe (at
//! `STRIPE_API_BASE`, which scripts/test.sh starts): a payment made for an order's terms, paid
//! as a browser would (the "customer pays" step below, outside the port), declined, cancelled
//! before and after it succeeded, refunded and its refund found again. Against a fake Stripe
//! served here (a tiny axum server on a free loopback port that records each request and
//! answers with canned JSON, after as many 500s or 429s as a test asks for): the idempotency key
//! of every POST and of a retried one, the form body, and which failures are worth a retry
//! (503) and which are not (500).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use lineup::adapters::stripe::wire::StripeError;
use lineup::adapters::stripe::{http_client_builder, StripeCallError, StripeProvider};
use lineup::application::error::LineupError;
use lineup::application::ports::ledger::OrderTerms;
use lineup::application::ports::payments::{
    Cancellation, NewPayment, NewRefund, PaymentProvider, PaymentStatus, ProviderPayment,
    RefundStatus,
};
use lineup::domain::ids::{CustomerId, EventId, OrderId, PaymentId, SeatId};
use serde_json::{json, Value};

use lineup_tests::localstripe::{customer_pays, key, provider as localstripe, TEST_KEY};

/// An order's terms: two seats for 24,000 KRW under a ticket limit of 4.
fn terms() -> OrderTerms {
    OrderTerms {
        order_id: OrderId::generate(),
        event_id: EventId::parse("stripe-adapter").unwrap(),
        customer_id: CustomerId::parse("customer-00042").unwrap(),
        seat_ids: vec![
            SeatId::parse("A-001").unwrap(),
            SeatId::parse("A-002").unwrap(),
        ],
        amount: 24_000,
        currency: "KRW".to_owned(),
        ticket_limit: Some(4),
        // Whole milliseconds: the metadata carries Unix milliseconds.
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

/// A payment made for fresh terms and paid with `pm_card_visa`.
async fn paid_payment(provider: &StripeProvider) -> ProviderPayment {
    let payment = provider
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    assert_eq!(
        customer_pays(&payment.id, "pm_card_visa").await,
        StatusCode::OK
    );
    payment
}

#[tokio::test]
async fn a_payment_made_for_an_order_is_paid_as_a_browser_would() {
    let provider = localstripe();
    let terms = terms();
    let payment = provider
        .create_payment(&new_payment(terms.clone()))
        .await
        .unwrap();
    assert_eq!(payment.status, PaymentStatus::RequiresPaymentMethod);
    assert_eq!(payment.amount, 24_000);
    assert_eq!(payment.currency, "KRW");
    assert!(payment
        .client_secret
        .as_deref()
        .is_some_and(|secret| secret.starts_with(payment.id.as_str())));
    assert_eq!(payment.last_error, None);
    assert_eq!(payment.terms().unwrap(), terms, "the terms round-trip");

    assert_eq!(
        customer_pays(&payment.id, "pm_card_visa").await,
        StatusCode::OK
    );
    let paid = provider.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(paid.status, PaymentStatus::Succeeded);
    assert_eq!(paid.amount, 24_000);
    assert_eq!(paid.terms().unwrap(), terms);
}

#[tokio::test]
async fn a_declined_card_leaves_the_payment_waiting_for_another_with_the_reason() {
    let provider = localstripe();
    let payment = provider
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    assert_eq!(
        customer_pays(&payment.id, "pm_card_chargeCustomerFail").await,
        StatusCode::PAYMENT_REQUIRED
    );
    let declined = provider.payment(&payment.id).await.unwrap().unwrap();
    assert_eq!(declined.status, PaymentStatus::RequiresPaymentMethod);
    assert_eq!(
        declined.last_error.as_deref(),
        Some("Your card was declined.")
    );
}

#[tokio::test]
async fn an_unpaid_payment_is_canceled_and_canceling_it_again_says_so() {
    let provider = localstripe();
    let payment = provider
        .create_payment(&new_payment(terms()))
        .await
        .unwrap();
    let Cancellation::Canceled(canceled) = provider.cancel_payment(&payment.id).await.unwrap()
    else {
        panic!("an unpaid payment is cancelled");
    };
    assert_eq!(canceled.status, PaymentStatus::Canceled);
    // localstripe answers 400 to a second cancel: the payment as it is says it is cancelled.
    let again = provider.cancel_payment(&payment.id).await.unwrap();
    assert!(matches!(again, Cancellation::Canceled(p) if p.status == PaymentStatus::Canceled));
}

#[tokio::test]
async fn a_paid_payment_is_too_late_to_cancel() {
    let provider = localstripe();
    let payment = paid_payment(&provider).await;
    match provider.cancel_payment(&payment.id).await.unwrap() {
        Cancellation::TooLate(now) => assert_eq!(now.status, PaymentStatus::Succeeded),
        Cancellation::Canceled(_) => panic!("a paid payment cannot be cancelled"),
    }
}

#[tokio::test]
async fn a_refund_succeeds_and_is_found_again_by_its_lineup_id() {
    let provider = localstripe();
    let payment = paid_payment(&provider).await;
    let asked = new_refund(&payment, 24_000);
    let refund = provider.refund(&asked).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Succeeded);
    assert_eq!(refund.amount, 24_000);
    assert_eq!(refund.currency, "KRW");
    assert_eq!(refund.payment_id, payment.id);
    assert_eq!(
        refund.lineup_refund.as_deref(),
        Some(asked.refund_id.as_str())
    );

    let found = provider.refunds_of(&payment.id).await.unwrap();
    assert_eq!(found, vec![refund]);
}

#[tokio::test]
async fn an_unknown_payment_is_none() {
    let unknown = PaymentId::parse("pi_lineupUnknown0").unwrap();
    assert_eq!(localstripe().payment(&unknown).await.unwrap(), None);
}

/// One request as the fake Stripe received it.
#[derive(Debug, Clone)]
struct Recorded {
    method: Method,
    /// The path and query.
    target: String,
    idempotency_key: Option<String>,
    authorization: Option<String>,
    stripe_version: Option<String>,
    /// The body as sent.
    body: String,
    /// The body's pairs, decoded.
    form: Vec<(String, String)>,
}

impl Recorded {
    fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

#[derive(Default)]
struct FakeState {
    requests: Vec<Recorded>,
    /// Answered first, one per request, before the canned answers.
    failures: VecDeque<(StatusCode, String)>,
    /// How long each answer waits.
    delay: Duration,
}

/// A fake Stripe API on a free loopback port.
#[derive(Clone)]
struct FakeStripe {
    base: String,
    state: Arc<Mutex<FakeState>>,
}

impl FakeStripe {
    async fn start() -> Self {
        let state = Arc::new(Mutex::new(FakeState::default()));
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, state }
    }

    /// The next `times` requests are answered `status` with `body`.
    fn fail(&self, times: usize, status: StatusCode, body: &str) {
        let mut state = self.state.lock().unwrap();
        for _ in 0..times {
            state.failures.push_back((status, body.to_owned()));
        }
    }

    fn delay(&self, delay: Duration) {
        self.state.lock().unwrap().delay = delay;
    }

    fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    fn provider(&self) -> StripeProvider {
        StripeProvider::open(self.base.clone(), key()).unwrap()
    }
}

/// The pairs of a form body (decoded as a URL's query is).
fn decode_form(body: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(&format!("http://form.invalid/?{body}"))
        .unwrap()
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

/// A PaymentIntent as Stripe answers it, with the fields a creation sent.
fn payment_intent_json(id: &str, status: &str, form: &[(String, String)]) -> Value {
    let field = |name: &str| {
        form.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let metadata: HashMap<String, String> = form
        .iter()
        .filter_map(|(key, value)| {
            let name = key.strip_prefix("metadata[")?.strip_suffix(']')?;
            Some((name.to_owned(), value.clone()))
        })
        .collect();
    json!({
        "id": id, "object": "payment_intent", "status": status,
        "amount": field("amount").map_or(24_000, |amount| amount.parse::<i64>().unwrap()),
        "currency": field("currency").unwrap_or_else(|| "krw".to_owned()),
        "client_secret": format!("{id}_secret_fake"),
        "metadata": metadata,
        "latest_charge": null, "last_payment_error": null, "livemode": false,
    })
}

async fn answer(
    State(state): State<Arc<Mutex<FakeState>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = String::from_utf8_lossy(&body).into_owned();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let recorded = Recorded {
        method: method.clone(),
        target: uri.to_string(),
        idempotency_key: header("idempotency-key"),
        authorization: header("authorization"),
        stripe_version: header("stripe-version"),
        form: decode_form(&body),
        body,
    };
    let (failure, delay) = {
        let mut state = state.lock().unwrap();
        state.requests.push(recorded.clone());
        (state.failures.pop_front(), state.delay)
    };
    tokio::time::sleep(delay).await;
    if let Some((status, body)) = failure {
        return (status, body).into_response();
    }
    let path = uri.path();
    let answer = match (method, path) {
        (Method::POST, "/v1/payment_intents") => {
            payment_intent_json("pi_fake1", "requires_payment_method", &recorded.form)
        }
        (Method::POST, cancel) if cancel.ends_with("/cancel") => {
            payment_intent_json("pi_fake1", "canceled", &[])
        }
        (Method::GET, "/v1/payment_intents/pi_fake1") => {
            payment_intent_json("pi_fake1", "succeeded", &[])
        }
        (Method::POST, "/v1/refunds") => json!({
            "id": "re_fake1", "object": "refund", "status": "succeeded",
            "amount": recorded.field("amount").map(|a| a.parse::<i64>().unwrap()),
            "currency": "krw",
            "payment_intent": recorded.field("payment_intent"),
            "metadata": {"lineup_refund": recorded.field("metadata[lineup_refund]")},
        }),
        (Method::GET, "/v1/refunds") => {
            // Two pages: the second after `starting_after=re_fake1`.
            let second = uri
                .query()
                .is_some_and(|q| q.contains("starting_after=re_fake1"));
            let (id, has_more) = if second {
                ("re_fake2", false)
            } else {
                ("re_fake1", true)
            };
            json!({
                "object": "list", "has_more": has_more, "url": "/v1/refunds",
                "data": [{"id": id, "object": "refund", "status": "succeeded", "amount": 1000,
                          "currency": "krw", "payment_intent": "pi_fake1",
                          "metadata": {"lineup_refund": format!("rf-{id}")}}],
            })
        }
        _ => {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"error": {"type": "invalid_request_error",
                    "code": "resource_missing", "message": "No such object"}})),
            )
                .into_response()
        }
    };
    axum::Json(answer).into_response()
}

/// The adapter's error under a [`LineupError`].
fn stripe_cause(error: &LineupError) -> &StripeCallError {
    let (LineupError::Unavailable { source, .. } | LineupError::Failed { source, .. }) = error
    else {
        panic!("not a store error: {error}");
    };
    source
        .downcast_ref::<StripeCallError>()
        .expect("the source is the adapter's error")
}

fn fake_refund(refund_id: &str) -> NewRefund {
    NewRefund {
        payment_id: PaymentId::parse("pi_fake1").unwrap(),
        amount: 24_000,
        currency: "KRW".to_owned(),
        refund_id: refund_id.to_owned(),
    }
}

#[tokio::test]
async fn every_post_carries_an_idempotency_key_and_a_retried_call_the_same_one() {
    let fake = FakeStripe::start().await;
    let provider = fake.provider();
    let payment = new_payment(terms());

    fake.fail(
        1,
        StatusCode::INTERNAL_SERVER_ERROR,
        "500 Internal Server Error",
    );
    let first = provider.create_payment(&payment).await.unwrap_err();
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    let created = provider.create_payment(&payment).await.unwrap();

    fake.fail(
        1,
        StatusCode::SERVICE_UNAVAILABLE,
        r#"{"error":{"type":"api_error","message":"try again"}}"#,
    );
    let refund = fake_refund("lineup-refund-1");
    assert!(provider.refund(&refund).await.is_err());
    let refunded = provider.refund(&refund).await.unwrap();
    assert_eq!(refunded.lineup_refund.as_deref(), Some("lineup-refund-1"));
    assert_eq!(refunded.amount, 24_000);

    provider.cancel_payment(&created.id).await.unwrap();

    let requests = fake.requests();
    let keys: Vec<(&str, Option<&str>)> = requests
        .iter()
        .map(|r| (r.target.as_str(), r.idempotency_key.as_deref()))
        .collect();
    let checkout = payment.idempotency_key.as_str();
    assert_eq!(
        keys,
        [
            ("/v1/payment_intents", Some(checkout)),
            ("/v1/payment_intents", Some(checkout)),
            ("/v1/refunds", Some("lineup-refund-1")),
            ("/v1/refunds", Some("lineup-refund-1")),
            (
                "/v1/payment_intents/pi_fake1/cancel",
                Some("lineup-cancel-pi_fake1")
            ),
        ]
    );
    assert!(requests.iter().all(|r| r.method == Method::POST));
    assert_eq!(
        requests[0].body, requests[1].body,
        "a retry sends the same body"
    );
}

#[tokio::test]
async fn the_form_body_and_headers_are_stripe_s() {
    let fake = FakeStripe::start().await;
    let terms = terms();
    let created = fake
        .provider()
        .create_payment(&new_payment(terms.clone()))
        .await
        .unwrap();
    assert_eq!(created.terms().unwrap(), terms, "the metadata round-trips");

    let request = &fake.requests()[0];
    assert!(
        request.body.starts_with("amount=24000&currency=krw&"),
        "{}",
        request.body
    );
    assert_eq!(request.field("payment_method_types[]"), Some("card"));
    assert_eq!(
        request.field("metadata[lineup_order]"),
        Some(terms.order_id.as_str())
    );
    assert_eq!(request.field("metadata[lineup_seats]"), Some("A-001,A-002"));
    assert_eq!(request.field("metadata[lineup_ticket_limit]"), Some("4"));
    let names: Vec<&str> = request.form.iter().map(|(name, _)| name.as_str()).collect();
    assert!(
        names.iter().all(
            |name| ["amount", "currency", "payment_method_types[]"].contains(name)
                || name.starts_with("metadata[")
        ),
        "only what localstripe accepts: {names:?}"
    );
    assert_eq!(
        request.authorization.as_deref(),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(request.stripe_version.as_deref(), Some("2024-06-20"));
}

#[tokio::test]
async fn throttling_and_server_errors_are_unavailable_a_bad_request_failed() {
    let fake = FakeStripe::start().await;
    let provider = fake.provider();
    let id = PaymentId::parse("pi_fake1").unwrap();

    fake.fail(
        1,
        StatusCode::TOO_MANY_REQUESTS,
        r#"{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}"#,
    );
    let throttled = provider.payment(&id).await.unwrap_err();
    assert_eq!(throttled.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(throttled.retry_after_seconds().is_some());
    let StripeCallError::Refused { source, .. } = stripe_cause(&throttled) else {
        panic!("a refusal: {throttled:?}");
    };
    assert_eq!(source.status, 429);
    assert_eq!(source.code.as_deref(), Some("rate_limit"));

    fake.fail(
        1,
        StatusCode::INTERNAL_SERVER_ERROR,
        "500 Internal Server Error\n\nServer got itself in trouble",
    );
    let crashed = provider.payment(&id).await.unwrap_err();
    assert!(matches!(crashed, LineupError::Unavailable { .. }));

    fake.fail(
        1,
        StatusCode::BAD_REQUEST,
        r#"{"error":{"type":"invalid_request_error","message":"Unexpected description"}}"#,
    );
    let refused = provider
        .refund(&fake_refund("lineup-refund-2"))
        .await
        .unwrap_err();
    assert!(matches!(refused, LineupError::Failed { .. }), "{refused:?}");
    assert_eq!(refused.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let StripeCallError::Refused { source, .. } = stripe_cause(&refused) else {
        panic!("a refusal: {refused:?}");
    };
    assert_eq!(
        source,
        &StripeError {
            status: 400,
            kind: Some("invalid_request_error".to_owned()),
            code: None,
            message: Some("Unexpected description".to_owned()),
        }
    );

    assert!(
        provider.payment(&id).await.unwrap().is_some(),
        "then it answers"
    );
}

#[tokio::test]
async fn a_call_that_times_out_is_unavailable() {
    let fake = FakeStripe::start().await;
    fake.delay(Duration::from_secs(2));
    let client = http_client_builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let provider = StripeProvider::new(fake.base.clone(), key(), client);
    let error = provider
        .payment(&PaymentId::parse("pi_fake1").unwrap())
        .await
        .unwrap_err();
    assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(matches!(
        stripe_cause(&error),
        StripeCallError::Transport { source, .. } if source.is_timeout()
    ));
}

#[tokio::test]
async fn only_stripe_s_own_404_says_a_payment_does_not_exist() {
    let fake = FakeStripe::start().await;
    let provider = fake.provider();
    let unknown = PaymentId::parse("pi_unknown").unwrap();
    assert_eq!(provider.payment(&unknown).await.unwrap(), None);

    // A 404 that is not Stripe's JSON (a wrong base URL, a proxy) is a misconfiguration.
    fake.fail(1, StatusCode::NOT_FOUND, "404: Not Found");
    let error = provider.payment(&unknown).await.unwrap_err();
    assert!(matches!(error, LineupError::Failed { .. }), "{error:?}");
}

#[tokio::test]
async fn a_payment_s_refunds_are_listed_across_pages() {
    let fake = FakeStripe::start().await;
    let refunds = fake
        .provider()
        .refunds_of(&PaymentId::parse("pi_fake1").unwrap())
        .await
        .unwrap();
    let ids: Vec<(&str, Option<&str>)> = refunds
        .iter()
        .map(|r| (r.id.as_str(), r.lineup_refund.as_deref()))
        .collect();
    assert_eq!(
        ids,
        [
            ("re_fake1", Some("rf-re_fake1")),
            ("re_fake2", Some("rf-re_fake2"))
        ]
    );
    let targets: Vec<String> = fake.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(
        targets,
        [
            "/v1/refunds?payment_intent=pi_fake1&limit=100",
            "/v1/refunds?payment_intent=pi_fake1&limit=100&starting_after=re_fake1",
        ]
    );
    assert!(fake
        .requests()
        .iter()
        .all(|r| r.method == Method::GET && r.idempotency_key.is_none()));
}
