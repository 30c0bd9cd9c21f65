//! The `refund` function against moto and localstripe: a late payment's `refund_required` becomes
//! exactly one refund at the provider, counted there, with two invocations racing on the record
//! and one retried after a provider failure; the order ends REFUNDED; never more than was paid.
//! localstripe ignores idempotency keys, so what keeps it to one is Lineup's own record and lease.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use http::StatusCode;
use lineup::application::error::{LineupError, Store};
use lineup::application::ports::ledger::{
    OrderTerms, PaymentConfirmation, PaymentFor, PaymentLedger, SeatLedger, HOLD_DURATION,
};
use lineup::application::ports::outbox::OutboxEvent;
use lineup::application::ports::payments::{
    Cancellation, NewPayment, NewRefund, PaymentProvider, ProviderPayment, ProviderRefund,
};
use lineup::application::ports::refunds::{RetryLater, REFUND_LEASE};
use lineup::application::refund::{self, RefundOutcome, RefundPorts};
use lineup::domain::clock::Clock;
use lineup::domain::ids::{OrderId, PaymentId};
use lineup_tests::aws::unique;
use lineup_tests::localstripe::{self, customer_pays};
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::*;

/// The adapter, failing the next `failures` refunds before they reach the provider, and, while
/// `pending`, telling every refund `pending` (as a bank transfer's is for days; localstripe's
/// succeed at once).
struct Flaky<P> {
    inner: P,
    failures: AtomicU32,
    pending: std::sync::atomic::AtomicBool,
}

impl<P> Flaky<P> {
    fn new(inner: P, failures: u32) -> Self {
        Self {
            inner,
            failures: AtomicU32::new(failures),
            pending: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn as_told(&self, mut refund: ProviderRefund) -> ProviderRefund {
        if self.pending.load(Ordering::SeqCst) {
            refund.status = lineup::application::ports::payments::RefundStatus::Pending;
        }
        refund
    }
}

#[async_trait]
impl<P: PaymentProvider> PaymentProvider for Flaky<P> {
    async fn create_payment(&self, payment: &NewPayment) -> Result<ProviderPayment, LineupError> {
        self.inner.create_payment(payment).await
    }
    async fn payment(&self, id: &PaymentId) -> Result<Option<ProviderPayment>, LineupError> {
        self.inner.payment(id).await
    }
    async fn cancel_payment(&self, id: &PaymentId) -> Result<Cancellation, LineupError> {
        self.inner.cancel_payment(id).await
    }
    async fn refund(&self, refund: &NewRefund) -> Result<ProviderRefund, LineupError> {
        let fail = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Err(LineupError::Unavailable {
                store: Store::PaymentProvider,
                source: "a played provider outage".into(),
            });
        }
        Ok(self.as_told(self.inner.refund(refund).await?))
    }
    async fn refunds_of(&self, payment: &PaymentId) -> Result<Vec<ProviderRefund>, LineupError> {
        let refunds = self.inner.refunds_of(payment).await?;
        Ok(refunds
            .into_iter()
            .map(|refund| self.as_told(refund))
            .collect())
    }
}

struct NoRetries;

#[async_trait]
impl RetryLater for NoRetries {
    async fn retry_after(&self, _: &str, _: Duration) -> Result<(), LineupError> {
        Ok(())
    }
}

/// Alice pays through localstripe after her hold lapsed and bob took her seat: the refund
/// event, and the payment at the provider.
async fn late_payment(sale: &OnSale) -> (OrderId, ProviderPayment, OutboxEvent) {
    let (alice, bob) = (customer(1), customer(2));
    let tokens = sale.admit(&[alice.clone(), bob.clone()]).await;
    let hold = body(&sale.hold(&alice, &tokens[0], &[seat(1)]).await);
    let order_id = OrderId::parse(hold["orderId"].as_str().unwrap()).unwrap();
    let order = sale.ledger.order(&order_id).await.unwrap().unwrap();
    let terms = OrderTerms::of(&order);
    let provider = localstripe::provider();
    let payment = provider
        .create_payment(&NewPayment {
            terms: terms.clone(),
            idempotency_key: format!("lineup-checkout-{order_id}"),
        })
        .await
        .unwrap();
    assert_eq!(
        customer_pays(&payment.id, "pm_card_visa").await,
        StatusCode::OK
    );

    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let taken = sale.hold(&bob, &tokens[1], &[seat(1)]).await;
    assert_eq!(taken.status(), StatusCode::CREATED);

    // The succeeded webhook, as the Stripe route applies it.
    let confirmation = PaymentConfirmation {
        order: PaymentFor::Terms(terms),
        idempotency_key: unique("stripe-event:evt"),
        request_digest: "digest".into(),
        payment_id: payment.id.clone(),
        amount: payment.amount,
        currency: payment.currency.clone(),
        now: sale.clock.now(),
    };
    let limits = sale.queue.clone();
    let confirmed = sale
        .ledger
        .confirm(&confirmation, limits.as_ref())
        .await
        .unwrap();
    assert_eq!(confirmed.answer.status.as_str(), "REFUND_REQUIRED");
    let event: OutboxEvent = serde_json::from_value(serde_json::Value::Object(
        sale.outbox()
            .await
            .into_iter()
            .find(|event| event["type"] == "refund_required")
            .expect("a refund_required event")
            .into_iter()
            .collect(),
    ))
    .unwrap();
    (order_id, payment, event)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refund_required_is_one_refund_at_the_provider_despite_races_and_a_failure() {
    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment, event) = late_payment(&sale).await;
    let provider = Flaky::new(localstripe::provider(), 1);
    let ports = RefundPorts {
        ledger: sale.ledger.as_ref(),
        provider: &provider,
        retries: &NoRetries,
        clock: sale.clock.as_ref(),
    };

    // The first try meets a provider outage (its message comes again later); two deliveries
    // then race, one of them waiting for the other's lease.
    assert!(refund::carry_out(&ports, &event).await.is_err());
    sale.clock.advance(REFUND_LEASE + Duration::from_secs(1));
    let (first, second) = futures::join!(
        refund::carry_out(&ports, &event),
        refund::carry_out(&ports, &event)
    );
    let outcomes = [first.unwrap(), second.unwrap()];
    assert!(
        outcomes
            .iter()
            .any(|outcome| matches!(outcome, RefundOutcome::Asked(_))),
        "{outcomes:?}"
    );
    // And once more, much later, as a redelivered message.
    sale.clock.advance(REFUND_LEASE * 3);
    refund::carry_out(&ports, &event).await.unwrap();

    let refunds = localstripe::provider()
        .refunds_of(&payment.id)
        .await
        .unwrap();
    assert_eq!(refunds.len(), 1, "one refund at the provider: {refunds:?}");
    assert_eq!(refunds[0].amount, payment.amount, "refunded in full");
    assert_eq!(
        refunds[0].lineup_refund.as_deref(),
        Some(event.outbox_id.as_str())
    );
    let orders = sale.orders().await;
    assert_eq!(orders[order_id.as_str()]["status"], "REFUNDED");

    // Another record asking for the same payment's money again gets nothing: all of it is back.
    let mut again = event.clone();
    again.outbox_id = unique("refund-by-hand");
    assert_eq!(
        refund::carry_out(&ports, &again).await.unwrap(),
        RefundOutcome::NothingLeft
    );
    assert_eq!(
        localstripe::provider()
            .refunds_of(&payment.id)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pending_refund_whose_webhook_is_lost_is_settled_by_reconciliation() {
    use lineup::application::ports::refunds::{RefundLedger, RefundState};
    use lineup::application::reconcile::{reconcile, ReconcilePorts};

    logs();
    let sale = OnSale::with_seats(2).await;
    let (order_id, payment, event) = late_payment(&sale).await;
    let provider = Flaky::new(localstripe::provider(), 0);
    provider.pending.store(true, Ordering::SeqCst);
    let ports = RefundPorts {
        ledger: sale.ledger.as_ref(),
        provider: &provider,
        retries: &NoRetries,
        clock: sale.clock.as_ref(),
    };
    let outcome = refund::carry_out(&ports, &event).await.unwrap();
    assert!(
        matches!(outcome, RefundOutcome::Asked(ref record) if record.state == RefundState::Pending),
        "{outcome:?}"
    );
    let listed = sale.ledger.pending_refunds().await.unwrap();
    assert_eq!(listed.len(), 1, "listed for reconciliation: {listed:?}");
    assert_eq!(listed[0].request.refund_id, event.outbox_id);

    let reconcile_ports = ReconcilePorts {
        orders: sale.ledger.as_ref(),
        ledger: sale.ledger.as_ref(),
        refunds: sale.ledger.as_ref(),
        provider: &provider,
        clock: sale.clock.as_ref(),
    };
    // Still pending: looked at, nothing changes.
    let report = reconcile(&reconcile_ports, Some(&sale.event))
        .await
        .unwrap();
    assert_eq!((report.refunds_checked, report.refunds_settled), (1, 0));
    assert_eq!(
        sale.orders().await[order_id.as_str()]["status"],
        "REFUND_REQUIRED"
    );

    // The bank is done and the refund.updated webhook never comes: the next run settles it.
    provider.pending.store(false, Ordering::SeqCst);
    let report = reconcile(&reconcile_ports, Some(&sale.event))
        .await
        .unwrap();
    assert_eq!((report.refunds_checked, report.refunds_settled), (1, 1));
    assert_eq!(sale.orders().await[order_id.as_str()]["status"], "REFUNDED");
    let stored = sale.ledger.refund(&event.outbox_id).await.unwrap().unwrap();
    assert_eq!(stored.state, RefundState::Succeeded);
    assert!(
        sale.ledger.pending_refunds().await.unwrap().is_empty(),
        "no longer listed"
    );
    let refunds = provider.refunds_of(&payment.id).await.unwrap();
    assert_eq!(refunds.len(), 1, "one refund at the provider: {refunds:?}");
    assert_eq!(refunds[0].amount, payment.amount);
}
