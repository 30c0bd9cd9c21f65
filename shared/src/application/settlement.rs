//! What the two payment webhooks share (the generic one, [`crate::application::confirm`], and
//! Stripe's, [`crate::application::stripe_webhook`]): the ports the `confirm` function works
//! with, and what follows a sale.

use std::sync::Arc;

use crate::application::ports::ledger::{
    Confirmation, OpenPayments, OrderStatus, PaymentLedger, TicketLimits,
};
use crate::application::ports::queue::AdmissionRegistry;
use crate::application::rotating::WebhookSecrets;
use crate::domain::clock::Clock;

/// What the `confirm` function's handler works with.
#[derive(Clone)]
pub struct ConfirmApi {
    /// Settles the order, once per payment and idempotency key (DynamoDB).
    pub ledger: Arc<dyn PaymentLedger>,
    /// Keeps a hold whose payment is in progress, ends one whose payment was cancelled
    /// (DynamoDB; Stripe's non-settling events).
    pub holds: Arc<dyn OpenPayments>,
    /// Refund records, updated by Stripe's `refund.*` events (DynamoDB).
    pub refunds: Arc<dyn crate::application::ports::refunds::RefundLedger>,
    /// Ends the admission a paid hold was made under, freeing its slot (Redis).
    pub admissions: Arc<dyn AdmissionRegistry>,
    /// The events' ticket limits now (the queue store's settings).
    pub limits: Arc<dyn TicketLimits>,
    /// The webhook secret's versions in force, to check the signature.
    pub secret: WebhookSecrets,
    /// Stripe's endpoint secret (`whsec_...`), for `POST /webhooks/stripe`; `None`: a deployment
    /// without Stripe, where that route does not exist.
    pub stripe_secret: Option<WebhookSecrets>,
    /// The time the signature's timestamp is checked against and the payment is recorded at.
    pub clock: Arc<dyn Clock>,
}

/// The customer is done shopping under the admission the seats were held with: free that slot
/// for the next in the queue now. Only when this request settled the order as a sale (a replay
/// must not end a newer admission), and only that admission (never a newer one, nor a place in
/// the queue after joining again). If Redis is briefly unreachable the slot simply lapses at its
/// expiry; the sale stands.
pub async fn end_admission_after_sale(
    admissions: &dyn AdmissionRegistry,
    confirmed: &Confirmation,
) {
    let terms = &confirmed.terms;
    let admission = terms
        .admission_expires_at
        .filter(|_| confirmed.settled_now && confirmed.answer.status == OrderStatus::Paid);
    if let Some(expires_at) = admission {
        if let Err(error) = admissions
            .end_admission(&terms.event_id, &terms.customer_id, expires_at)
            .await
        {
            tracing::warn!(order = %terms.order_id, error = %error, source = ?std::error::Error::source(&error), "could not end the admission; it will lapse");
        }
    }
}
