//! Checkout, Stripe's webhook and reconciliation against moto, Redis and localstripe: a webhook
//! that never comes is made good by reconciliation (the order sold while its seats are held, or
//! refunded once they are gone); a hold released while its payment succeeds ends sold, never
//! neither; localstripe's own signed webhook reaches the route and sells.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use http::StatusCode;
use lineup::application::confirm::{self, ConfirmApi};
use lineup::application::ports::ledger::HOLD_DURATION;
use lineup::application::ports::payments::PaymentProvider;
use lineup::application::ports::refunds::RetryLater;
use lineup::application::reconcile::{reconcile, ReconcilePorts, ReconcileReport};
use lineup::application::refund::{self, RefundPorts};
use lineup::application::rotating::Rotating;
use lineup::domain::clock::SystemClock;
use lineup::domain::ids::{CustomerId, PaymentId};
use lineup::domain::webhook_signature::WebhookSecret;
use lineup_tests::aws::unique;
use lineup_tests::localstripe::{self, customer_pays};
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::*;
use serde_json::Value;

/// The customer's token for `customer` (admitted now).
async fn admitted(sale: &OnSale, customer: &CustomerId) -> String {
    sale.admit(std::slice::from_ref(customer)).await.remove(0)
}

/// `POST /orders/{orderId}/payment` as `customer`: the answer's body.
async fn checkout(sale: &OnSale, customer: &CustomerId, order_id: &str) -> Value {
    let event = route(
        &sample("payment.json"),
        &[("orderId", order_id)],
        Some(customer),
    );
    let answer = sale.send(request(&event)).await;
    assert_eq!(answer.status(), StatusCode::OK, "{}", body(&answer));
    body(&answer)
}

async fn run(sale: &OnSale) -> ReconcileReport {
    let provider = localstripe::provider();
    reconcile(
        &ReconcilePorts {
            orders: sale.ledger.as_ref(),
            ledger: sale.ledger.as_ref(),
            refunds: sale.ledger.as_ref(),
            provider: &provider,
            clock: sale.clock.as_ref(),
        },
        Some(&sale.event),
    )
    .await
    .unwrap()
}

/// Alice holds `seats` and starts paying through checkout: her order and its payment.
async fn paying(sale: &OnSale, seats: &[usize]) -> (String, PaymentId) {
    let alice = customer(1);
    let token = admitted(sale, &alice).await;
    let seats: Vec<_> = seats.iter().map(|n| seat(*n)).collect();
    let hold = body(&sale.hold(&alice, &token, &seats).await);
    let order_id = hold["orderId"].as_str().unwrap().to_owned();
    let payment = checkout(sale, &alice, &order_id).await;
    assert_eq!(payment["amount"], hold["amount"]);
    let payment = PaymentId::parse(payment["paymentId"].as_str().unwrap()).unwrap();
    (order_id, payment)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_its_webhook_lost_a_paid_order_is_sold_by_reconciliation() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment) = paying(&sale, &[1, 2]).await;
    assert_eq!(
        customer_pays(&payment, "pm_card_visa").await,
        StatusCode::OK
    );
    // No webhook is configured at localstripe: it is lost.
    assert_eq!(sale.orders().await[&order_id]["status"], "PENDING");

    let report = run(&sale).await;

    assert_eq!(report.settled.len(), 1, "{report:?}");
    assert_eq!(sale.orders().await[&order_id]["status"], "PAID");
    let seats = sale.seats().await;
    for n in [1, 2] {
        assert_eq!(seats[seat(n).as_str()]["status"], "SOLD");
    }
    assert_eq!(run(&sale).await.checked, 0, "nothing left open");
}

struct NoRetries;

#[async_trait::async_trait]
impl RetryLater for NoRetries {
    async fn retry_after(
        &self,
        _: &str,
        _: Duration,
    ) -> Result<(), lineup::application::error::LineupError> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_its_webhook_lost_a_payment_whose_seats_are_gone_is_refunded() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment) = paying(&sale, &[1]).await;
    // Her hold lapses while she pays; bob takes the seat.
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let bob = customer(2);
    let token = admitted(&sale, &bob).await;
    assert_eq!(
        sale.hold(&bob, &token, &[seat(1)]).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        customer_pays(&payment, "pm_card_visa").await,
        StatusCode::OK
    );

    let report = run(&sale).await;

    assert_eq!(report.settled.len(), 1, "{report:?}");
    assert_eq!(sale.orders().await[&order_id]["status"], "REFUND_REQUIRED");
    // The refund function carries it out: one refund at the provider, the order REFUNDED.
    let event = sale
        .outbox()
        .await
        .into_iter()
        .find(|event| event["type"] == "refund_required")
        .expect("a refund event");
    let event: lineup::application::ports::outbox::OutboxEvent =
        serde_json::from_value(Value::Object(event.into_iter().collect())).unwrap();
    let provider = localstripe::provider();
    let ports = RefundPorts {
        ledger: sale.ledger.as_ref(),
        provider: &provider,
        retries: &NoRetries,
        clock: sale.clock.as_ref(),
    };
    refund::carry_out(&ports, &event).await.unwrap();
    refund::carry_out(&ports, &event).await.unwrap();
    assert_eq!(provider.refunds_of(&payment).await.unwrap().len(), 1);
    assert_eq!(sale.orders().await[&order_id]["status"], "REFUNDED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_released_while_its_payment_succeeds_ends_sold() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment) = paying(&sale, &[1]).await;
    assert_eq!(
        customer_pays(&payment, "pm_card_visa").await,
        StatusCode::OK
    );

    // The release comes after the money: too late to cancel; the hold stays.
    let release = route(
        &sample("release.json"),
        &[("eventId", sale.event.as_str()), ("orderId", &order_id)],
        Some(&customer(1)),
    );
    let refused = sale.send(request(&release)).await;
    assert_eq!(
        (refused.status(), error_code(&refused).as_str()),
        (StatusCode::CONFLICT, "payment_in_progress")
    );
    assert_eq!(sale.seats().await[seat(1).as_str()]["status"], "HELD");

    // The webhook never comes: reconciliation sells it.
    run(&sale).await;
    assert_eq!(sale.orders().await[&order_id]["status"], "PAID");
    assert_eq!(sale.seats().await[seat(1).as_str()]["status"], "SOLD");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_released_before_its_payment_cannot_be_paid_after() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment) = paying(&sale, &[1]).await;
    let release = route(
        &sample("release.json"),
        &[("eventId", sale.event.as_str()), ("orderId", &order_id)],
        Some(&customer(1)),
    );
    assert_eq!(
        sale.send(request(&release)).await.status(),
        StatusCode::NO_CONTENT
    );
    // The payment was cancelled first: the customer's late card takes nothing.
    assert_ne!(
        customer_pays(&payment, "pm_card_visa").await,
        StatusCode::OK
    );
    let at_provider = localstripe::provider()
        .payment(&payment)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(at_provider.status.as_str(), "canceled");
    assert_eq!(sale.orders().await[&order_id]["status"], "RELEASED");
    assert_eq!(sale.seats().await[seat(1).as_str()]["status"], "AVAILABLE");
}

/// Serves `POST /webhooks/stripe` over HTTP for localstripe, through the confirm function's
/// handler (the request as API Gateway would hand it over).
async fn webhook_server(api: ConfirmApi) -> SocketAddr {
    async fn receive(
        State(api): State<Arc<ConfirmApi>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> (StatusCode, String) {
        let mut event = sample("stripe-webhook.json");
        event["body"] = String::from_utf8_lossy(&body).into_owned().into();
        if let Some(signature) = headers.get("stripe-signature") {
            event["headers"]["stripe-signature"] = signature.to_str().unwrap_or("").into();
        }
        let answer = confirm::handle(&api, request(&event)).await;
        (
            StatusCode::from_u16(answer.status().as_u16()).unwrap(),
            body_text(&answer),
        )
    }
    let app = axum::Router::new()
        .route("/webhooks/stripe", axum::routing::post(receive))
        .with_state(Arc::new(api));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

fn body_text(response: &lambda_http::Response<lambda_http::Body>) -> String {
    match response.body() {
        lambda_http::Body::Text(text) => text.clone(),
        _ => String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn localstripe_s_signed_webhook_reaches_the_route_and_sells() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let secret = format!("whsec_{}", uuid::Uuid::new_v4().simple());
    let mut api = sale.confirm_api.clone();
    api.stripe_secret = Some(Rotating::from(WebhookSecret::new(secret.clone()).unwrap()));
    // localstripe signs with the real time.
    api.clock = Arc::new(SystemClock);
    let address = webhook_server(api).await;
    // Registered under a name of this test's own: a webhook per test run, none shared.
    let name = unique("lineup");
    let registered = reqwest::Client::new()
        .post(format!(
            "{}/_config/webhooks/{name}",
            localstripe::api_base()
        ))
        .form(&[
            ("url", format!("http://{address}/webhooks/stripe")),
            ("secret", secret),
            ("events[]", "payment_intent.succeeded".to_owned()),
        ])
        .send()
        .await
        .unwrap();
    assert!(registered.status().is_success());

    let (order_id, payment) = paying(&sale, &[1]).await;
    assert_eq!(
        customer_pays(&payment, "pm_card_visa").await,
        StatusCode::OK
    );

    // localstripe sends it about a second later.
    let mut status = Value::Null;
    for _ in 0..100 {
        status = sale.orders().await[&order_id]["status"].clone();
        if status == "PAID" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "PAID");
    assert_eq!(sale.seats().await[seat(1).as_str()]["status"], "SOLD");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lineup_payments_reconcile_settles_an_event_s_lost_webhooks_and_says_which() {
    use lineup_cli::endpoints::EndpointArgs;
    use lineup_cli::payment_reconciliation::{self, PaymentsAction, ReconcileArgs};
    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment) = paying(&sale, &[1]).await;
    assert_eq!(
        customer_pays(&payment, "pm_card_visa").await,
        StatusCode::OK
    );
    let action = PaymentsAction::Reconcile(ReconcileArgs {
        event: sale.event.as_str().to_owned(),
        stripe_api_base: localstripe::api_base(),
        stripe_api_key: localstripe::TEST_KEY.to_owned(),
        endpoints: EndpointArgs {
            redis_url: redis_url(),
            redis_cluster: false,
            redis_user: None,
            redis_password_secret: None,
            endpoint_url: lineup_tests::aws::endpoint_url(),
            aws: false,
            profile: None,
            region: None,
            seats_table: sale.tables.seats.clone(),
            orders_table: sale.tables.orders.clone(),
            outbox_table: sale.tables.outbox.clone(),
            events_table: "unused".to_owned(),
        },
    });

    let printed = payment_reconciliation::run(&action).await.unwrap();

    assert!(printed.contains("1 settled"), "{printed}");
    assert!(
        printed.contains(&format!("order {order_id}  payment {payment}  PAID")),
        "{printed}"
    );
    assert_eq!(sale.orders().await[&order_id]["status"], "PAID");
}
