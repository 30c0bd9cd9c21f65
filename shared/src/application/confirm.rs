//! `POST /orders/{orderId}/confirm`: the generic payment webhook, for providers without an
//! adapter (Stripe's has its own route, on the same settlement). No JWT: the request is
//! authenticated by its HMAC signature (`Lineup-Signature`), and made safe to repeat by its
//! `Idempotency-Key` and its `paymentId`: the first answer is stored and returned to every
//! repetition.
//!
//! The route faces the internet, so before anything else the body's size is capped (4 KB), and
//! the signature costs one MAC however many values the header carries. The signed body names its
//! order (`orderId`, which must be the path's): a webhook captured from a log and replayed to
//! another order's URL is refused. Every refusal is counted by reason (`WebhookRefusals`), so a
//! flood of forged signatures raises an alarm.

use http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::application::error::{LineupError, PaymentRefused};
use crate::application::http::{request, response};
use crate::application::ports::ledger::{OrderStatus, PaymentConfirmation, PaymentFor};
use crate::application::settlement::end_admission_after_sale;
pub use crate::application::settlement::ConfirmApi;
use crate::domain::ids::{OrderId, PaymentId};
use crate::domain::webhook_signature;

/// The header carrying the webhook's signature (`t=<unix seconds>,v1=<hex>`), lowercase.
pub const SIGNATURE_HEADER: &str = "lineup-signature";
/// The header carrying the provider's idempotency key, lowercase.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaymentBody {
    order_id: String,
    payment_id: String,
    amount: i64,
    currency: String,
}

/// Answers one webhook request (errors as their HTTP answer), counting client-error refusals
/// as `WebhookRefusals` by reason: Stripe's (`POST /webhooks/stripe`, in
/// [`crate::application::stripe_webhook`]) or the generic one.
pub async fn handle(api: &ConfirmApi, request: Request) -> Response<Body> {
    let route_key = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.route_key.as_deref(),
        _ => None,
    };
    if route_key == Some("POST /webhooks/stripe") {
        return crate::application::stripe_webhook::handle(api, request).await;
    }
    let result = confirm(api, &request).await;
    if let Err(refusal) = &result {
        if refusal.status().is_client_error() {
            crate::application::metrics::emit(
                &[("Reason", refusal.code())],
                &[(
                    "WebhookRefusals",
                    1.0,
                    crate::application::metrics::Unit::Count,
                )],
            );
        }
    }
    response::from_result(result)
}

async fn confirm(api: &ConfirmApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let now = api.clock.now();
    // Size, then authenticity: nothing about an unsigned request is looked at.
    let body = request::body_within(request, webhook_signature::MAX_BODY)?;
    let signature = request::header(request, SIGNATURE_HEADER);
    if let Err(refused) = api.secret.verify(signature, body, now) {
        // Signed with a secret this instance has not fetched yet (the provider switched after a
        // rotation): fetch, and check once more. At most once per interval per instance.
        if !api.secret.refresh_after_miss().await {
            return Err(refused.into());
        }
        api.secret.verify(signature, body, now)?;
    }
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
            "the body must be {\"orderId\": string, \"paymentId\": string, \"amount\": integer, \"currency\": string}",
        )
    })?;
    // The signature covers the body, and the body names the order: a payment cannot be moved
    // to another order's URL.
    if OrderId::parse(&payment.order_id).ok().as_ref() != Some(&order_id) {
        return Err(PaymentRefused::OrderMismatch.into());
    }
    let payment_id = PaymentId::parse(&payment.payment_id)?;
    let currency_ok =
        payment.currency.len() == 3 && payment.currency.bytes().all(|b| b.is_ascii_uppercase());
    if !currency_ok || payment.amount < 0 {
        return Err(LineupError::invalid(
            "invalid_body",
            "currency must be a 3-letter code (ISO 4217) and amount not negative",
        ));
    }

    // The same key must come with the same request: the digest covers the order and the body.
    let mut digest = Sha256::new();
    digest.update(order_id.as_str().as_bytes());
    digest.update(b"\n");
    digest.update(body);
    let confirmation = PaymentConfirmation {
        order: PaymentFor::Order(order_id),
        idempotency_key: idempotency_key.to_owned(),
        request_digest: hex::encode(digest.finalize()),
        payment_id,
        amount: payment.amount,
        currency: payment.currency,
        now,
    };
    let confirmed = api
        .ledger
        .confirm(&confirmation, api.limits.as_ref())
        .await?;
    let (order, answer) = (&confirmed.terms, &confirmed.answer);
    let outcome = match answer.status {
        OrderStatus::Paid => "PAID",
        _ => "REFUND_REQUIRED",
    };
    crate::application::metrics::emit(
        &[("EventId", order.event_id.as_str()), ("Outcome", outcome)],
        &[("Confirms", 1.0, crate::application::metrics::Unit::Count)],
    );

    end_admission_after_sale(api.admissions.as_ref(), &confirmed).await;
    Ok(response::json(StatusCode::OK, answer, None))
}
