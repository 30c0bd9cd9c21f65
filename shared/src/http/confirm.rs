//! `POST /orders/{orderId}/confirm`: the payment provider's webhook. No JWT: the request is
//! authenticated by its HMAC signature (`Lineup-Signature`), and made safe to repeat by its
//! `Idempotency-Key`: the first answer is stored and returned to every repetition.

use std::sync::Arc;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{request, response};
use crate::clock::Clock;
use crate::ids::OrderId;
use crate::ledger::{OrderStatus, PaymentConfirmation, PaymentLedger};
use crate::queue::AdmissionRegistry;
use crate::webhook_signature::WebhookSecret;
use crate::LineupError;

pub const SIGNATURE_HEADER: &str = "lineup-signature";
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

#[derive(Clone)]
pub struct ConfirmApi {
    pub ledger: Arc<dyn PaymentLedger>,
    pub admissions: Arc<dyn AdmissionRegistry>,
    pub secret: WebhookSecret,
    pub clock: Arc<dyn Clock>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaymentBody {
    payment_id: String,
    amount: i64,
    currency: String,
}

pub async fn handle(api: &ConfirmApi, request: Request) -> Response<Body> {
    response::from_result(confirm(api, &request).await)
}

async fn confirm(api: &ConfirmApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let now = api.clock.now();
    let body = request::body_bytes(request);
    // Authenticate first: nothing about an unsigned request is looked at.
    api.secret
        .verify(request::header(request, SIGNATURE_HEADER), body, now)?;
    let order_id = OrderId::parse(request::path_parameter(request, "orderId")?)?;
    let idempotency_key = request::header(request, IDEMPOTENCY_HEADER)
        .filter(|key| (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            LineupError::invalid(
                "missing_idempotency_key",
                "an Idempotency-Key header of 1-255 visible characters is required",
            )
        })?;
    let payment: PaymentBody = serde_json::from_slice(body).map_err(|_| {
        LineupError::invalid(
            "invalid_body",
            "the body must be {\"paymentId\": string, \"amount\": integer, \"currency\": string}",
        )
    })?;
    let currency_ok =
        payment.currency.len() == 3 && payment.currency.bytes().all(|b| b.is_ascii_uppercase());
    if !(1..=255).contains(&payment.payment_id.len()) || !currency_ok || payment.amount < 0 {
        return Err(LineupError::invalid(
            "invalid_body",
            "paymentId must be 1-255 characters, currency a 3-letter code (ISO 4217) and amount not negative",
        ));
    }

    // The same key must come with the same request: the digest covers the order and the body.
    let mut digest = Sha256::new();
    digest.update(order_id.as_str().as_bytes());
    digest.update(b"\n");
    digest.update(body);
    let confirmation = PaymentConfirmation {
        order_id,
        idempotency_key: idempotency_key.to_owned(),
        request_digest: hex::encode(digest.finalize()),
        payment_id: payment.payment_id,
        amount: payment.amount,
        currency: payment.currency,
        now,
    };
    let (order, answer) = api.ledger.confirm(&confirmation).await?;
    let outcome = match answer.status {
        OrderStatus::Paid => "PAID",
        _ => "REFUND_REQUIRED",
    };
    crate::metrics::emit(
        &[("EventId", order.event_id.as_str()), ("Outcome", outcome)],
        &[("Confirms", 1.0, crate::metrics::Unit::Count)],
    );

    if answer.status == OrderStatus::Paid {
        // The customer is done shopping: free their slot for the next in the queue now. If Redis
        // is briefly unreachable the slot simply lapses at its expiry; the sale stands.
        if let Err(error) = api
            .admissions
            .release_admission(&order.event_id, &order.customer_id)
            .await
        {
            tracing::warn!(order = %order.order_id, error = %error, "could not release the admission; it will lapse");
        }
    }
    Ok(response::json(StatusCode::OK, &answer, None))
}
