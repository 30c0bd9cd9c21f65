//! `POST /webhooks/stripe`: Stripe's webhook, signed with `Stripe-Signature`. No JWT: the request
//! is authenticated by its signature (the endpoint's secret, current and previous versions, as
//! the generic webhook's), and made safe to repeat by the event's id.
//!
//! Stripe delivers each event at least once, in no guaranteed order, and retries for up to
//! three days while it gets no 2xx. So the envelope is read leniently (unknown fields ignored:
//! Stripe adds fields without a new API version), every event Lineup does not act on is answered
//! 200 at once, and `payment_intent.succeeded` settles the order exactly as the generic webhook
//! does, keyed by the event's id (its idempotency record is kept 7 days, longer than Stripe's
//! retries) and by the PaymentIntent's id (a payment settles one order, ever). The order, its
//! seats and its amount come from the PaymentIntent's metadata, written by Lineup when it made
//! the payment and checked against the stored order inside the sale's one transaction.
//!
//! A signed payment that cannot buy its order (unknown order, terms that differ, an order
//! already paid) is recorded for a refund and answered 200: Stripe has nothing to retry.
//! Failures of Lineup's stores are 503, which Stripe retries.

use std::collections::HashMap;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::application::error::LineupError;
use crate::application::http::{request, response};
use crate::application::ports::ledger::{OrderStatus, OrderTerms, PaymentConfirmation, PaymentFor};
use crate::application::settlement::{end_admission_after_sale, ConfirmApi};
use crate::domain::ids::PaymentId;
use crate::domain::money;
use crate::domain::webhook_signature::{self, STRIPE};

/// The Stripe API version the event shapes here are read as (`openapi.yaml` says the same): the
/// webhook endpoint should be created with it. Older and newer versions are read too, as long as
/// `data.object` is a PaymentIntent with `id`, `amount`, `currency` and `metadata`.
pub const STRIPE_API_VERSION: &str = "2024-06-20";

/// The prefix of the idempotency key a Stripe event is recorded under (`stripe-event:evt_...`).
pub const EVENT_KEY_PREFIX: &str = "stripe-event:";

/// A Stripe event, as much of it as Lineup reads.
#[derive(Deserialize)]
struct StripeEvent {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    api_version: Option<String>,
    data: EventData,
}

#[derive(Deserialize)]
struct EventData {
    object: serde_json::Value,
}

/// The PaymentIntent in `data.object`, as much of it as Lineup reads.
#[derive(Deserialize)]
struct PaymentIntent {
    id: String,
    amount: i64,
    currency: String,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

/// The answer: Stripe only looks at the status; the body helps whoever reads the endpoint's log
/// in Stripe's dashboard.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Received<'a> {
    received: bool,
    /// What Lineup did with it: `paid`, `refund_required` (paid late: refunded),
    /// `recorded_for_refund` (money that cannot buy its order), `hold_kept` (a payment in
    /// progress), `order_ended` (its payment cancelled), `refund_updated`, or `ignored`.
    outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    order_id: Option<String>,
}

/// Answers one Stripe webhook request (errors as their HTTP answer), counting client-error
/// refusals as `WebhookRefusals` by reason, as the generic webhook does.
pub async fn handle(api: &ConfirmApi, request: Request) -> Response<Body> {
    let result = receive(api, &request).await;
    if let Err(refusal) = &result {
        if refusal.status().is_client_error() {
            crate::application::metrics::emit(
                &[("Reason", refusal.code()), ("Webhook", "stripe")],
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

async fn receive(api: &ConfirmApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let now = api.clock.now();
    // Size, then authenticity: nothing about an unsigned request is looked at.
    let body = request::body_within(request, webhook_signature::MAX_STRIPE_BODY)?;
    let signature = request::header(request, STRIPE.header);
    // A deployment without Stripe has no such route.
    let secret = api
        .stripe_secret
        .as_ref()
        .ok_or_else(|| LineupError::RouteNotFound {
            method: "POST".to_owned(),
            path: "/webhooks/stripe".to_owned(),
        })?;
    if let Err(refused) = secret.verify_as(STRIPE, signature, body, now) {
        // Signed with a secret this instance has not fetched yet (rolled in Stripe's dashboard):
        // fetch, and check once more. At most once per interval per instance.
        if !secret.refresh_after_miss().await {
            return Err(refused.into());
        }
        secret.verify_as(STRIPE, signature, body, now)?;
    }
    let event: StripeEvent = serde_json::from_slice(body).map_err(|_| {
        LineupError::invalid(
            "invalid_body",
            "the body must be a Stripe event: {\"id\", \"type\", \"data\": {\"object\"}}",
        )
    })?;
    let answer = match event.kind.as_str() {
        "payment_intent.succeeded" => succeeded(api, &event, now).await?,
        // The bank is at work (3-D Secure, a slow method): the hold is kept, up to the bound.
        "payment_intent.processing" | "payment_intent.requires_action" => {
            in_progress(api, &event).await?
        }
        // Cancelled (by Lineup as a hold ended, or by hand in Stripe's dashboard): an order
        // still pending with it ends, its seats back on sale.
        "payment_intent.canceled" => canceled(api, &event).await?,
        // A refund moved on (pending → succeeded, or failed): its record follows, and the order
        // is REFUNDED once the money is back.
        "refund.created" | "refund.updated" | "refund.failed" | "charge.refund.updated" => {
            refund_moved(api, &event, now).await?
        }
        // A declined card leaves the order payable: the customer may try another.
        other => {
            tracing::info!(event = %event.id, kind = other, "Stripe event not acted on");
            Received {
                received: true,
                outcome: "ignored",
                order_id: None,
            }
        }
    };
    Ok(response::json(StatusCode::OK, &answer, None))
}

/// `payment_intent.succeeded`: the money is taken; settle the order it names.
async fn succeeded(
    api: &ConfirmApi,
    event: &StripeEvent,
    now: std::time::SystemTime,
) -> Result<Received<'static>, LineupError> {
    let intent: PaymentIntent =
        serde_json::from_value(event.data.object.clone()).map_err(|_| {
            LineupError::invalid(
                "invalid_body",
                "data.object must be a PaymentIntent with id, amount, currency and metadata",
            )
        })?;
    let currency = intent.currency.to_ascii_uppercase();
    let Ok(amount) = money::from_stripe(intent.amount, &currency) else {
        tracing::error!(event = %event.id, payment = %intent.id, currency = %currency, "a payment in a currency Lineup cannot read; refund it by hand");
        return Ok(ignored());
    };
    let terms = match OrderTerms::from_metadata(&intent.metadata, amount, &currency) {
        Ok(terms) => terms,
        // Not a payment Lineup made (another product on the same Stripe account): not ours.
        Err(not_an_order) => {
            tracing::warn!(event = %event.id, payment = %intent.id, reason = %not_an_order, "a succeeded payment that names no Lineup order; ignored");
            return Ok(ignored());
        }
    };
    let payment_id = PaymentId::parse(&intent.id)?;
    let confirmation = PaymentConfirmation {
        order: PaymentFor::Terms(terms),
        idempotency_key: format!("{EVENT_KEY_PREFIX}{}", event.id),
        request_digest: digest(event, &intent),
        payment_id,
        amount,
        currency,
        now,
    };
    tracing::info!(event = %event.id, api_version = event.api_version.as_deref().unwrap_or("-"), "Stripe payment succeeded");
    let order_id = confirmation.order.order_id().as_str().to_owned();
    let confirmed = match api.ledger.confirm(&confirmation, api.limits.as_ref()).await {
        Ok(confirmed) => confirmed,
        // Recorded for a refund: nothing for Stripe to retry.
        Err(refused) if refused.status().is_client_error() => {
            tracing::warn!(event = %event.id, order = %order_id, reason = refused.code(), "a succeeded payment cannot buy its order; recorded for a refund");
            return Ok(Received {
                received: true,
                outcome: "recorded_for_refund",
                order_id: Some(order_id),
            });
        }
        Err(failure) => return Err(failure),
    };
    let paid = confirmed.answer.status == OrderStatus::Paid;
    crate::application::metrics::emit(
        &[
            ("EventId", confirmed.terms.event_id.as_str()),
            ("Outcome", if paid { "PAID" } else { "REFUND_REQUIRED" }),
        ],
        &[("Confirms", 1.0, crate::application::metrics::Unit::Count)],
    );
    end_admission_after_sale(api.admissions.as_ref(), &confirmed).await;
    Ok(Received {
        received: true,
        outcome: if paid { "paid" } else { "refund_required" },
        order_id: Some(order_id),
    })
}

/// The order a PaymentIntent event is about, if it is still pending with that payment.
async fn pending_order_of(
    api: &ConfirmApi,
    event: &StripeEvent,
) -> Result<Option<(crate::application::ports::ledger::Order, PaymentId)>, LineupError> {
    let intent: PaymentIntent =
        serde_json::from_value(event.data.object.clone()).map_err(|_| {
            LineupError::invalid(
                "invalid_body",
                "data.object must be a PaymentIntent with id, amount, currency and metadata",
            )
        })?;
    let Ok(terms) = OrderTerms::from_metadata(&intent.metadata, 0, &intent.currency) else {
        return Ok(None);
    };
    let payment = PaymentId::parse(&intent.id)?;
    let order = api.holds.order(&terms.order_id).await?;
    Ok(order
        .filter(|order| {
            order.status == OrderStatus::Pending
                && order.checkout_payment.as_ref() == Some(&payment)
        })
        .map(|order| (order, payment)))
}

async fn in_progress(
    api: &ConfirmApi,
    event: &StripeEvent,
) -> Result<Received<'static>, LineupError> {
    let Some((order, payment)) = pending_order_of(api, event).await? else {
        return Ok(ignored());
    };
    let bound = order.created_at
        + crate::application::ports::ledger::HOLD_DURATION
        + crate::application::ports::ledger::PAYMENT_GRACE;
    let kept = api.holds.extend_hold(&order, &payment, bound).await?;
    tracing::info!(event = %event.id, order = %order.order_id, kept, "payment in progress: hold kept to its bound");
    Ok(Received {
        received: true,
        outcome: if kept { "hold_kept" } else { "ignored" },
        order_id: Some(order.order_id.as_str().to_owned()),
    })
}

async fn canceled(api: &ConfirmApi, event: &StripeEvent) -> Result<Received<'static>, LineupError> {
    let Some((order, payment)) = pending_order_of(api, event).await? else {
        return Ok(ignored());
    };
    let ended = api
        .holds
        .end_unpaid(&order, &payment, OrderStatus::Released)
        .await?;
    tracing::info!(event = %event.id, order = %order.order_id, ended, "payment cancelled: order ended");
    Ok(Received {
        received: true,
        outcome: if ended { "order_ended" } else { "ignored" },
        order_id: Some(order.order_id.as_str().to_owned()),
    })
}

/// The refund in `data.object`, as much of it as Lineup reads.
#[derive(Deserialize)]
struct RefundObject {
    id: String,
    amount: i64,
    currency: String,
    status: crate::application::ports::payments::RefundStatus,
    payment_intent: Option<String>,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

async fn refund_moved(
    api: &ConfirmApi,
    event: &StripeEvent,
    now: std::time::SystemTime,
) -> Result<Received<'static>, LineupError> {
    let Ok(object) = serde_json::from_value::<RefundObject>(event.data.object.clone()) else {
        return Ok(ignored());
    };
    let key = crate::application::ports::payments::metadata_keys::REFUND;
    let (Some(refund_id), Some(payment)) = (object.metadata.get(key), &object.payment_intent)
    else {
        // A refund made by hand in Stripe's dashboard: not Lineup's record.
        return Ok(ignored());
    };
    let Some(record) = api.refunds.refund(refund_id).await? else {
        return Ok(ignored());
    };
    let currency = object.currency.to_ascii_uppercase();
    let refund = crate::application::ports::payments::ProviderRefund {
        id: object.id,
        payment_id: PaymentId::parse(payment)?,
        amount: money::from_stripe(object.amount, &currency).unwrap_or(record.amount),
        currency,
        status: object.status,
        lineup_refund: Some(refund_id.clone()),
    };
    let settled = api.refunds.settle(&record, &refund, now).await?;
    tracing::info!(event = %event.id, refund = %refund_id, state = settled.state.as_str(), "refund moved");
    Ok(Received {
        received: true,
        outcome: "refund_updated",
        order_id: Some(record.request.order_id.as_str().to_owned()),
    })
}

fn ignored() -> Received<'static> {
    Received {
        received: true,
        outcome: "ignored",
        order_id: None,
    }
}

/// What makes two deliveries the same event: its id, the payment, amount and currency (Stripe
/// sends the same event again with a new signature, so the raw body is not compared).
fn digest(event: &StripeEvent, intent: &PaymentIntent) -> String {
    let mut digest = Sha256::new();
    for part in [
        event.id.as_str(),
        intent.id.as_str(),
        &intent.amount.to_string(),
        &intent.currency.to_ascii_uppercase(),
    ] {
        digest.update(part.as_bytes());
        digest.update(b"\n");
    }
    hex::encode(digest.finalize())
}
