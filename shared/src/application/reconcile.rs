//! The `reconcile` function (every minute; `lineup dev` every 10 s; `lineup payments reconcile`
//! on demand): every order with an open payment is looked at again through the provider, by the
//! payment's id, and the same transitions as the webhook's are applied. So a webhook that never
//! comes (Stripe's retries ended, the endpoint was misconfigured for an hour) costs at most one
//! reconcile period, and a hold whose payment is open is never let lapse with the payment
//! alive: reconciliation, not the expiry sweep, ends it, cancelling the payment first.
//!
//! Per order, from the payment as the provider has it now:
//! - `succeeded`: settled as the webhook would (`PAID`, or `REFUND_REQUIRED` and refunded);
//! - in progress (`processing`, `requires_action`): the hold is kept, up to
//!   [`HOLD_DURATION`] + [`PAYMENT_GRACE`] from when the seats were held;
//! - cancelled: the order ends, its seats back on sale;
//! - waiting for the customer, once the hold lapsed (or past the grace bound while in
//!   progress): the payment is cancelled, then the order ends EXPIRED and its seats go back; if
//!   the cancel comes too late (the money was taken meanwhile), the payment settles it.
//!
//! Then every refund still `pending` at the provider is asked about again, and what the provider
//! says now is stored as the `refund.updated` webhook would have stored it (the order becomes
//! REFUNDED when the money is back): a lost refund webhook costs at most one period too.
//!
//! It runs outside the VPC (it calls the provider): it reads no ticket limit from Redis, so a
//! sale it settles is held to the limit the order was held under.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::application::error::LineupError;
use crate::application::metrics::{self, Unit};
use crate::application::ports::ledger::{
    OpenPayments, Order, OrderStatus, PaymentConfirmation, PaymentFor, PaymentLedger, TicketLimits,
    HOLD_DURATION, PAYMENT_GRACE,
};
use crate::application::ports::payments::{
    Cancellation, PaymentProvider, PaymentStatus, ProviderPayment,
};
use crate::application::ports::refunds::{RefundLedger, RefundRecord, RefundState};
use crate::domain::clock::Clock;
use crate::domain::ids::{EventId, PaymentId};

/// How often the scheduled function runs (its `rate(1 minute)`): a hold whose payment is in
/// progress and would lapse before the next run is kept now.
pub const PERIOD: Duration = Duration::from_secs(60);

/// What reconciliation works with.
pub struct ReconcilePorts<'a> {
    /// The orders with open payments, and what ends or keeps their holds (DynamoDB).
    pub orders: &'a dyn OpenPayments,
    /// The settlement, as the webhook's (DynamoDB).
    pub ledger: &'a dyn PaymentLedger,
    /// The refunds still pending at the provider, and where their outcome is stored (DynamoDB).
    pub refunds: &'a dyn RefundLedger,
    /// Where the payments are (Stripe).
    pub provider: &'a dyn PaymentProvider,
    /// The time holds are judged at.
    pub clock: &'a dyn Clock,
}

/// What one run did: the function's JSON answer, and `lineup payments reconcile`'s report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileReport {
    /// Orders with an open payment looked at.
    pub checked: u64,
    /// Orders settled by a payment the provider says succeeded (the webhook had not come),
    /// with what each became.
    pub settled: Vec<Settled>,
    /// Holds kept longer because their payment is in progress.
    pub extended: u64,
    /// Orders ended because their payment was (or has now been) cancelled.
    pub ended: u64,
    /// Orders (or refunds) that could not be looked at this time (logged; the next run tries
    /// again).
    pub failed: u64,
    /// Refunds still pending at the provider, looked at again.
    pub refunds_checked: u64,
    /// Of those, the ones the provider has finished since (succeeded or failed): stored now.
    pub refunds_settled: u64,
}

/// One order reconciliation settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settled {
    /// The order.
    pub order_id: String,
    /// The payment that settled it.
    pub payment_id: String,
    /// `PAID` or `REFUND_REQUIRED`.
    pub status: OrderStatus,
}

/// The ticket limit now, as reconciliation knows it: none beyond the order's own (it reads no
/// Redis).
struct OrdersOwnLimit;

#[async_trait]
impl TicketLimits for OrdersOwnLimit {
    async fn ticket_limit(&self, _: &EventId) -> Result<Option<u32>, LineupError> {
        Ok(None)
    }
}

/// One run over every open payment (of `event`, when given).
pub async fn reconcile(
    ports: &ReconcilePorts<'_>,
    event: Option<&EventId>,
) -> Result<ReconcileReport, LineupError> {
    let mut report = ReconcileReport::default();
    for order in ports.orders.open_payments(event).await? {
        report.checked += 1;
        if let Err(error) = reconcile_order(ports, &order, &mut report).await {
            report.failed += 1;
            tracing::warn!(order = %order.order_id, error = %error, source = ?std::error::Error::source(&error), "could not reconcile an order; the next run tries again");
        }
    }
    // Every pending refund (they are few, and not by event: a cancelled event's refunds too).
    for record in ports.refunds.pending_refunds().await? {
        report.refunds_checked += 1;
        if let Err(error) = reconcile_refund(ports, &record, &mut report).await {
            report.failed += 1;
            tracing::warn!(refund = %record.request.refund_id, error = %error, source = ?std::error::Error::source(&error), "could not reconcile a refund; the next run tries again");
        }
    }
    if !report.settled.is_empty() {
        metrics::emit(
            &[],
            &[(
                "SettledByReconciliation",
                report.settled.len() as f64,
                Unit::Count,
            )],
        );
    }
    tracing::info!(
        checked = report.checked,
        settled = report.settled.len(),
        extended = report.extended,
        ended = report.ended,
        refunds_checked = report.refunds_checked,
        refunds_settled = report.refunds_settled,
        failed = report.failed,
        "reconciled"
    );
    Ok(report)
}

async fn reconcile_order(
    ports: &ReconcilePorts<'_>,
    order: &Order,
    report: &mut ReconcileReport,
) -> Result<(), LineupError> {
    let Some(payment_id) = &order.checkout_payment else {
        return Ok(());
    };
    let Some(payment) = ports.provider.payment(payment_id).await? else {
        tracing::error!(order = %order.order_id, payment = %payment_id, "an order's payment is unknown to the provider");
        return Ok(());
    };
    let now = ports.clock.now();
    let bound = order.created_at + HOLD_DURATION + PAYMENT_GRACE;
    match payment.status {
        PaymentStatus::Succeeded => settle(ports, &payment, report).await,
        PaymentStatus::Canceled => end(ports, order, payment_id, now, report).await,
        status if status.in_progress() && now < bound => {
            // Kept while the bank works, up to the bound.
            if order.expires_at < now + PERIOD * 2
                && ports.orders.extend_hold(order, payment_id, bound).await?
            {
                report.extended += 1;
                tracing::info!(order = %order.order_id, status = status.as_str(), "hold kept while its payment is in progress");
            }
            Ok(())
        }
        // Waiting for the customer: nothing to do while the hold lives.
        _ if order.expires_at > now => Ok(()),
        // Lapsed (or past the bound): cancel, then end; a payment that wins the race settles.
        _ => match ports.provider.cancel_payment(payment_id).await? {
            Cancellation::Canceled(_) => end(ports, order, payment_id, now, report).await,
            Cancellation::TooLate(now_payment)
                if now_payment.status == PaymentStatus::Succeeded =>
            {
                settle(ports, &now_payment, report).await
            }
            Cancellation::TooLate(_) => Ok(()),
        },
    }
}

/// A refund pending at the provider: its status now, stored if the provider has finished it.
async fn reconcile_refund(
    ports: &ReconcilePorts<'_>,
    record: &RefundRecord,
    report: &mut ReconcileReport,
) -> Result<(), LineupError> {
    let request = &record.request;
    let found = ports
        .provider
        .refunds_of(&request.payment_id)
        .await?
        .into_iter()
        .find(|refund| {
            refund.lineup_refund.as_deref() == Some(request.refund_id.as_str())
                || record.provider_refund_id.as_deref() == Some(refund.id.as_str())
        });
    let Some(refund) = found else {
        tracing::error!(refund = %request.refund_id, payment = %request.payment_id, "a pending refund is unknown to the provider");
        return Ok(());
    };
    if RefundState::of(refund.status) == RefundState::Pending {
        return Ok(());
    }
    let stored = ports
        .refunds
        .settle(record, &refund, ports.clock.now())
        .await?;
    report.refunds_settled += 1;
    tracing::info!(refund = %request.refund_id, payment = %request.payment_id, state = stored.state.as_str(), "refund settled by reconciliation (the webhook had not come)");
    Ok(())
}

/// The order ends (EXPIRED once its hold lapsed, else RELEASED), its seats back on sale.
async fn end(
    ports: &ReconcilePorts<'_>,
    order: &Order,
    payment: &PaymentId,
    now: SystemTime,
    report: &mut ReconcileReport,
) -> Result<(), LineupError> {
    let status = if order.expires_at <= now {
        OrderStatus::Expired
    } else {
        OrderStatus::Released
    };
    if ports.orders.end_unpaid(order, payment, status).await? {
        report.ended += 1;
        tracing::info!(order = %order.order_id, payment = %payment, status = status.as_str(), "order ended: its payment was cancelled");
    }
    Ok(())
}

/// A succeeded payment settles its order, exactly as the webhook would have.
async fn settle(
    ports: &ReconcilePorts<'_>,
    payment: &ProviderPayment,
    report: &mut ReconcileReport,
) -> Result<(), LineupError> {
    let terms = payment
        .terms()
        .map_err(|not_an_order| LineupError::SeatStoreReply {
            operation: "reconcile",
            reply: not_an_order.to_string(),
        })?;
    let confirmation = PaymentConfirmation {
        order: PaymentFor::Terms(terms),
        idempotency_key: format!("reconcile:{}", payment.id),
        request_digest: digest(payment),
        payment_id: payment.id.clone(),
        amount: payment.amount,
        currency: payment.currency.clone(),
        now: ports.clock.now(),
    };
    let order_id = confirmation.order.order_id().as_str().to_owned();
    match ports.ledger.confirm(&confirmation, &OrdersOwnLimit).await {
        Ok(confirmed) => {
            // The webhook may have come meanwhile: only what this run settled is counted.
            if confirmed.settled_now {
                tracing::info!(order = %order_id, payment = %payment.id, status = confirmed.answer.status.as_str(), "settled by reconciliation (the webhook had not come)");
                report.settled.push(Settled {
                    order_id,
                    payment_id: payment.id.as_str().to_owned(),
                    status: confirmed.answer.status,
                });
            }
            Ok(())
        }
        // Money that cannot buy its order: recorded for a refund, as by the webhook.
        Err(refused) if refused.status().is_client_error() => {
            tracing::warn!(order = %order_id, payment = %payment.id, reason = refused.code(), "a succeeded payment cannot buy its order; recorded for a refund");
            Ok(())
        }
        Err(failure) => Err(failure),
    }
}

/// What makes two reconciliations of one payment the same request.
fn digest(payment: &ProviderPayment) -> String {
    let mut digest = Sha256::new();
    for part in [
        payment.id.as_str(),
        &payment.amount.to_string(),
        &payment.currency,
    ] {
        digest.update(part.as_bytes());
        digest.update(b"\n");
    }
    hex::encode(digest.finalize())
}
