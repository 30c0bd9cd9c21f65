//! The first stand-in, kept as it was until the page and `lineup simulate` move to Stripe's
//! API: `POST /dev/payments` takes a payment for an order, then calls Lineup's generic webhook
//! (`POST /orders/{orderId}/confirm`) the way a provider does: later, signed with the shared
//! secret (`Lineup-Signature`), with an idempotency key, retried while Lineup answers 5xx or
//! cannot be reached, and now and then delivered twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lineup::domain::webhook_signature::WebhookSecret;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::delivery::{self, Delivered};
use crate::dev::api_gateway::error;

#[derive(Clone)]
pub struct GenericProvider {
    secret: WebhookSecret,
    /// Where Lineup's API is (the webhook goes through it, as from outside).
    api_base: String,
    client: reqwest::Client,
    /// The share of payments whose webhook is sent twice at once (0.0–1.0).
    duplicate_share: f64,
    /// How long after taking the payment the webhook goes out.
    delay: Duration,
    payments: Arc<Mutex<HashMap<String, Payment>>>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    payment_id: String,
    order_id: String,
    amount: i64,
    currency: String,
    /// `processing` until Lineup answered; then `delivered` (2xx), `rejected` (4xx) or `failed`.
    status: &'static str,
    /// Lineup's last answer to the webhook.
    webhook_status: Option<u16>,
    answer: Option<serde_json::Value>,
    deliveries: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaymentRequest {
    order_id: String,
    amount: i64,
    currency: String,
}

impl GenericProvider {
    pub fn new(
        secret: WebhookSecret,
        api_base: String,
        duplicate_share: f64,
        delay: Duration,
    ) -> Self {
        Self {
            secret,
            api_base,
            client: crate::http_client().build().unwrap_or_default(),
            duplicate_share,
            delay,
            payments: Arc::default(),
        }
    }

    fn record(&self, payment_id: &str, update: impl FnOnce(&mut Payment)) {
        if let Ok(mut payments) = self.payments.lock() {
            if let Some(payment) = payments.get_mut(payment_id) {
                update(payment);
            }
        }
    }

    /// Sends the webhook until Lineup gives an answer that is not a 5xx.
    async fn deliver(self, payment_id: String, order_id: String, body: String) {
        tokio::time::sleep(self.delay).await;
        let twice = rand::random::<f64>() < self.duplicate_share;
        let url = format!("{}/orders/{}/confirm", self.api_base, order_id);
        let send = |copy: u32| {
            let (provider, url, body, key) =
                (self.clone(), url.clone(), body.clone(), payment_id.clone());
            async move {
                let build = || {
                    let signature = provider.secret.sign(SystemTime::now(), body.as_bytes());
                    provider
                        .client
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("idempotency-key", &key)
                        .header("lineup-signature", signature)
                        .header("user-agent", "lineup-dev-payment-provider/1.0")
                        .body(body.clone())
                };
                let attempted = || provider.record(&key, |payment| payment.deliveries += 1);
                match delivery::until_answered(build, attempted, &key).await {
                    Delivered::Answered { status, answer } => {
                        tracing::info!(payment = %key, copy, status = status.as_u16(), "payment webhook answered");
                        provider.record(&key, |payment| {
                            payment.status = if status.is_success() {
                                "delivered"
                            } else {
                                "rejected"
                            };
                            payment.webhook_status = Some(status.as_u16());
                            payment.answer = answer;
                        });
                    }
                    // Another copy of the webhook may have been answered meanwhile.
                    Delivered::GaveUp => provider.record(&key, |payment| {
                        if payment.status == "processing" {
                            payment.status = "failed";
                        }
                    }),
                }
            }
        };
        if twice {
            futures::join!(send(1), send(2));
        } else {
            send(1).await;
        }
    }
}

/// `POST /dev/payments`: `{"orderId", "amount", "currency"}` → 202, the webhook follows.
pub async fn take_payment(
    State(provider): State<GenericProvider>,
    body: Result<Json<PaymentRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(request)) = body else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_body",
            "the body must be {\"orderId\": string, \"amount\": integer, \"currency\": string}",
        );
    };
    if lineup::domain::ids::OrderId::parse(&request.order_id).is_err() {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_order_id",
            "orderId is not an order id",
        );
    }
    let payment_id = format!("pay_{}", uuid::Uuid::new_v4().simple());
    // The signed body names the order, so this webhook pays this order and no other.
    let body = json!({
        "orderId": request.order_id,
        "paymentId": payment_id,
        "amount": request.amount,
        "currency": request.currency,
    })
    .to_string();
    let payment = Payment {
        payment_id: payment_id.clone(),
        order_id: request.order_id.clone(),
        amount: request.amount,
        currency: request.currency,
        status: "processing",
        webhook_status: None,
        answer: None,
        deliveries: 0,
    };
    if let Ok(mut payments) = provider.payments.lock() {
        payments.insert(payment_id.clone(), payment.clone());
    }
    tokio::spawn(provider.clone().deliver(payment_id, request.order_id, body));
    (StatusCode::ACCEPTED, Json(payment)).into_response()
}

/// `GET /dev/payments/{paymentId}`: what became of a payment's webhook.
pub async fn payment_status(
    State(provider): State<GenericProvider>,
    Path(payment_id): Path<String>,
) -> Response {
    let found = provider
        .payments
        .lock()
        .ok()
        .and_then(|payments| payments.get(&payment_id).cloned());
    match found {
        Some(payment) => Json(payment).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "payment_not_found",
            "no such payment",
        ),
    }
}
