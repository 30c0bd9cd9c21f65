//! The `checkout` function: paying for a hold, or giving it back. It talks to the payment
//! provider, so it runs outside the VPC and needs no Redis
//! (docs/decisions/0021-payment-provider-calls-outside-the-vpc.md).
//!
//! - `POST /orders/{orderId}/payment`: the customer's own pending order gets one provider payment
//!   (a Stripe PaymentIntent) for the amount the server decided when the seats were held, with
//!   the order's terms in its metadata; whatever the retries and races, one payment is tied to
//!   the order (made under the key `lineup-checkout-<orderId>`, then tied by a conditional
//!   write, a racing extra one cancelled). The answer carries what the browser needs to pay it
//!   (`clientSecret`).
//! - `DELETE /events/{eventId}/holds/{orderId}`: the customer gives the seats back. A payment tied
//!   to the order is cancelled first, so it can never take money for seats back on sale; if it
//!   is too late to cancel (it succeeded, or the bank is taking it), the hold stays and 409
//!   `payment_in_progress` says the payment settles it.

use std::sync::Arc;

use http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use crate::application::error::LineupError;
use crate::application::http::{request, response};
use crate::application::ports::ledger::{
    Attached, CheckoutLedger, Order, OrderStatus, OrderTerms, SeatLedger,
};
use crate::application::ports::payments::{
    Cancellation, ClientSecret, NewPayment, PaymentProvider, PaymentStatus, ProviderPayment,
};
use crate::domain::clock::{rfc3339, Clock};
use crate::domain::ids::{EventId, OrderId};

/// What the `checkout` function's handler works with.
#[derive(Clone)]
pub struct CheckoutApi {
    /// Orders, read and released (DynamoDB).
    pub orders: Arc<dyn SeatLedger>,
    /// Ties a payment to an order (DynamoDB).
    pub checkout: Arc<dyn CheckoutLedger>,
    /// Where the money is (Stripe).
    pub provider: Arc<dyn PaymentProvider>,
    /// What the browser pays with, given to it beside the client secret (Stripe's publishable
    /// key, `pk_...`; not a secret). `None`: not configured.
    pub publishable_key: Option<String>,
    /// The time a hold is judged lapsed at.
    pub clock: Arc<dyn Clock>,
}

/// The idempotency key a checkout makes an order's payment under: one per order.
pub fn checkout_key(order: &OrderId) -> String {
    format!("lineup-checkout-{order}")
}

/// Answers one request to the checkout routes (errors as their HTTP answer).
pub async fn handle(api: &CheckoutApi, request: Request) -> Response<Body> {
    response::from_result(route(api, &request).await)
}

async fn route(api: &CheckoutApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let route_key = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.route_key.as_deref(),
        _ => None,
    };
    match route_key {
        Some("POST /orders/{orderId}/payment") => pay(api, request).await,
        Some("DELETE /events/{eventId}/holds/{orderId}") => release(api, request).await,
        _ => Err(LineupError::RouteNotFound {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
        }),
    }
}

/// The answer to `POST /orders/{orderId}/payment`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PaymentBody {
    order_id: String,
    payment_id: String,
    /// What Stripe.js confirms the payment with (`stripe.confirmPayment`), with the publishable
    /// key.
    client_secret: Option<ClientSecret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    publishable_key: Option<String>,
    amount: i64,
    currency: String,
    status: PaymentStatus,
    /// When the hold lapses (a payment in progress extends it, up to a bound).
    expires_at: String,
}

impl PaymentBody {
    fn of(api: &CheckoutApi, order: &Order, payment: &ProviderPayment) -> Self {
        Self {
            order_id: order.order_id.as_str().to_owned(),
            payment_id: payment.id.as_str().to_owned(),
            client_secret: payment.client_secret.clone(),
            publishable_key: api.publishable_key.clone(),
            amount: order.amount,
            currency: order.currency.clone(),
            status: payment.status,
            expires_at: rfc3339(order.expires_at),
        }
    }
}

/// The caller's own order (404 for another customer's, as for none).
async fn own_order(api: &CheckoutApi, request: &Request) -> Result<Order, LineupError> {
    let customer = request::caller(request)?;
    request::expect_no_body_or_json_object(request)?;
    let order_id = OrderId::parse(request::path_parameter(request, "orderId")?)?;
    match api.orders.order(&order_id).await? {
        Some(order) if order.customer_id == customer => Ok(order),
        _ => Err(LineupError::NotFound("no such order for this customer")),
    }
}

async fn pay(api: &CheckoutApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let order = own_order(api, request).await?;
    let now = api.clock.now();
    // A cancelled event sells nothing more: a payment already made for the order is cancelled
    // now if it can be (if it cannot, it settles as a refund).
    if order.event_cancelled_at.is_some() {
        if let Some(tied) = &order.checkout_payment {
            if let Err(error) = api.provider.cancel_payment(tied).await {
                tracing::warn!(order = %order.order_id, payment = %tied, error = %error, "could not cancel the payment of a cancelled event's order");
            }
        }
        return Err(LineupError::EventCancelled);
    }
    // Only a live hold is paid for: a payment for a lapsed one could only end in a refund.
    if order.status != OrderStatus::Pending || order.expires_at <= now {
        return Err(LineupError::OrderNotPending);
    }
    let payment = match &order.checkout_payment {
        Some(tied) => fetch(api, tied).await?,
        None => {
            let made = api
                .provider
                .create_payment(&NewPayment {
                    terms: OrderTerms::of(&order),
                    idempotency_key: checkout_key(&order.order_id),
                })
                .await?;
            match api.checkout.attach_payment(&order, &made.id, now).await? {
                Attached::Attached => made,
                // A racing request tied another payment first (a provider that ignores
                // idempotency keys made two): ours is cancelled, theirs answered.
                Attached::Other(theirs) => {
                    cancel_extra(api, &made).await;
                    fetch(api, &theirs).await?
                }
                Attached::NotPending => {
                    cancel_extra(api, &made).await;
                    return Err(LineupError::OrderNotPending);
                }
            }
        }
    };
    if payment.status == PaymentStatus::Canceled {
        // Its hold is being given back.
        return Err(LineupError::OrderNotPending);
    }
    tracing::info!(order = %order.order_id, payment = %payment.id, status = payment.status.as_str(), "checkout");
    Ok(response::json(
        StatusCode::OK,
        &PaymentBody::of(api, &order, &payment),
        None,
    ))
}

/// The payment tied to an order, as the provider has it now.
async fn fetch(
    api: &CheckoutApi,
    payment: &crate::domain::ids::PaymentId,
) -> Result<ProviderPayment, LineupError> {
    api.provider
        .payment(payment)
        .await?
        .ok_or(LineupError::SeatStoreReply {
            operation: "checkout",
            reply: "an order names a payment the provider does not have".to_owned(),
        })
}

/// A payment made by a request that lost the race to tie one: never to take money.
async fn cancel_extra(api: &CheckoutApi, payment: &ProviderPayment) {
    if let Err(error) = api.provider.cancel_payment(&payment.id).await {
        // Nobody can pay it (its client secret went to nobody), and it holds no money.
        tracing::warn!(payment = %payment.id, error = %error, "could not cancel an extra payment");
    }
}

async fn release(api: &CheckoutApi, request: &Request) -> Result<Response<Body>, LineupError> {
    let event = EventId::parse(request::path_parameter(request, "eventId")?)?;
    let order = own_order(api, request).await?;
    if order.event_id != event {
        return Err(LineupError::NotFound("no such order for this customer"));
    }
    if order.status != OrderStatus::Pending {
        return Err(LineupError::OrderNotPending);
    }
    // The payment first: once cancelled it can never take money for seats back on sale.
    if let Some(payment) = &order.checkout_payment {
        match api.provider.cancel_payment(payment).await? {
            Cancellation::Canceled(_) => {}
            Cancellation::TooLate(now) => {
                tracing::info!(order = %order.order_id, payment = %payment, status = now.status.as_str(), "release refused: the payment is being taken");
                return Err(LineupError::PaymentInProgress);
            }
        }
    }
    api.orders.release(&order).await?;
    tracing::info!(event = %event, order = %order.order_id, "hold released");
    Ok(response::no_content())
}
