//! The `refund` function: each `refund_required` becomes exactly one refund at the provider,
//! whatever the redeliveries, races and lost answers, and never more than was paid. The fake
//! provider ignores idempotency keys here (as localstripe does), so what is shown is Lineup's own
//! exactly-once.

use std::time::Duration;

use super::confirm::{held, pay};
use super::hold::{customer, Sale};
use crate::application::error::LineupError;
use crate::application::fakes::outage::Faulty;
use crate::application::fakes::payments::FakeProvider;
use crate::application::ports::ledger::{OrderStatus, HOLD_DURATION};
use crate::application::ports::outbox::{OutboxEvent, OutboxEventKind};
use crate::application::ports::payments::RefundStatus;
use crate::application::ports::refunds::{RefundLedger, RetryLater};
use crate::application::ports::refunds::{RefundState, REFUND_LEASE};
use crate::application::refund::{
    backoff, carry_out, handle_batch, QueueBatch, QueueMessage, RefundOutcome, RefundPorts,
};

/// Records the waits messages were handed back with.
#[derive(Default)]
struct Retries(std::sync::Mutex<Vec<(String, Duration)>>);

#[async_trait::async_trait]
impl RetryLater for Retries {
    async fn retry_after(&self, receipt_handle: &str, wait: Duration) -> Result<(), LineupError> {
        self.0
            .lock()
            .unwrap()
            .push((receipt_handle.to_owned(), wait));
        Ok(())
    }
}

/// A sale where alice paid after her hold lapsed and bob took a seat: one `refund_required`.
async fn refund_due() -> (Sale, String, OutboxEvent) {
    let (sale, _, order_id, amount) = held(&["F1-1", "F1-2"]).await;
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    sale.held(&customer("bob"), &["F1-2"]).await;
    pay(&sale, &order_id, "evt_1", "pay_1", amount).await;
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);
    let event = sale
        .ledger
        .outbox()
        .into_iter()
        .find(|event| event.kind == OutboxEventKind::RefundRequired)
        .expect("a refund_required event");
    (sale, order_id, event)
}

fn provider() -> FakeProvider {
    let provider = FakeProvider::default();
    provider.ignore_idempotency_keys();
    provider
}

fn ports<'a>(sale: &'a Sale, provider: &'a FakeProvider, retries: &'a Retries) -> RefundPorts<'a> {
    RefundPorts {
        ledger: sale.ledger.as_ref(),
        provider,
        retries,
        clock: sale.clock.as_ref(),
    }
}

#[tokio::test]
async fn a_refund_required_becomes_one_refund_and_the_order_ends_refunded() {
    let (sale, order_id, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());

    let outcome = carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .unwrap();

    let RefundOutcome::Asked(record) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(record.state, RefundState::Succeeded);
    assert_eq!(record.amount, event.amount);
    let refunds = provider.refunds();
    assert_eq!(refunds.len(), 1);
    assert_eq!(
        (refunds[0].payment_id.as_str(), refunds[0].amount),
        ("pay_1", event.amount)
    );
    assert_eq!(sale.order(&order_id).status, OrderStatus::Refunded);
    assert_eq!(sale.ledger.payments()["pay_1"].refunded, event.amount);

    // Delivered again: nothing more is asked of the provider.
    carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .unwrap();
    assert_eq!(provider.refunds().len(), 1);
    assert_eq!(provider.calls("refund"), 1);
}

#[tokio::test]
async fn two_invocations_racing_on_one_record_make_one_refund() {
    let (sale, order_id, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());
    let ports = ports(&sale, &provider, &retries);

    let (first, second) = futures::join!(carry_out(&ports, &event), carry_out(&ports, &event));

    let outcomes = [first.unwrap(), second.unwrap()];
    assert_eq!(provider.refunds().len(), 1, "{outcomes:?}");
    assert_eq!(sale.order(&order_id).status, OrderStatus::Refunded);
}

#[tokio::test]
async fn a_retry_after_a_provider_failure_or_a_lost_answer_makes_no_second_refund() {
    let (sale, order_id, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());

    // The provider is down: nothing made, the message comes again later.
    provider.fail_next(1);
    assert!(carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .is_err());
    assert!(provider.refunds().is_empty());

    // The provider makes the refund, but its answer is lost: the record stays leased.
    provider.lose_next_answers(1);
    sale.clock.advance(REFUND_LEASE + Duration::from_secs(1));
    assert!(carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .is_err());
    assert_eq!(provider.refunds().len(), 1);

    // Before the lease runs out another delivery waits; after it, the retry finds the refund
    // made and records it, asking for no second one.
    assert_eq!(
        carry_out(&ports(&sale, &provider, &retries), &event)
            .await
            .unwrap(),
        RefundOutcome::Busy
    );
    sale.clock.advance(REFUND_LEASE + Duration::from_secs(1));
    let outcome = carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .unwrap();
    assert!(
        matches!(outcome, RefundOutcome::Asked(ref record) if record.state == RefundState::Succeeded),
        "{outcome:?}"
    );
    assert_eq!(provider.refunds().len(), 1, "one refund at the provider");
    assert_eq!(sale.order(&order_id).status, OrderStatus::Refunded);
}

#[tokio::test]
async fn never_more_than_was_paid_whatever_the_refund_events_ask() {
    let (sale, _, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());
    let ports = ports(&sale, &provider, &retries);

    // Another record for the same payment asking more than was paid (an operator's cancel
    // after the late payment's refund, say): only what is left is refunded, then nothing.
    let mut greedy = event.clone();
    greedy.outbox_id = "refund-by-hand-1".into();
    greedy.amount = event.amount * 3;
    carry_out(&ports, &event).await.unwrap();
    assert_eq!(
        carry_out(&ports, &greedy).await.unwrap(),
        RefundOutcome::NothingLeft
    );
    let total: i64 = provider.refunds().iter().map(|refund| refund.amount).sum();
    assert_eq!(total, event.amount);

    // A refund of a payment Lineup never recorded is not made.
    let mut stranger = event.clone();
    stranger.outbox_id = "refund-stranger".into();
    stranger.payment_id = Some("pay_nobody_knows".into());
    assert_eq!(
        carry_out(&ports, &stranger).await.unwrap(),
        RefundOutcome::UnknownPayment
    );
    assert_eq!(provider.refunds().len(), 1);
}

#[tokio::test]
async fn a_pending_refund_is_recorded_and_the_order_waits_for_the_money() {
    let (sale, order_id, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());
    provider.make_refunds(RefundStatus::Pending);

    let outcome = carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .unwrap();

    assert!(
        matches!(outcome, RefundOutcome::Asked(ref record) if record.state == RefundState::Pending),
        "{outcome:?}"
    );
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);
}

#[tokio::test]
async fn reconciliation_ends_a_pending_refund_whose_webhook_never_came() {
    use crate::application::reconcile::{reconcile, ReconcilePorts};

    let (sale, order_id, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());
    provider.make_refunds(RefundStatus::Pending);
    carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .unwrap();
    let reconcile_ports = ReconcilePorts {
        orders: sale.ledger.as_ref(),
        ledger: sale.ledger.as_ref(),
        refunds: sale.ledger.as_ref(),
        provider: &provider,
        clock: sale.clock.as_ref(),
    };

    // Still pending at the provider: looked at, nothing changes.
    let report = reconcile(&reconcile_ports, None).await.unwrap();
    assert_eq!((report.refunds_checked, report.refunds_settled), (1, 0));
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);

    // The money is back, and the refund.updated webhook is lost.
    provider.finish_refunds(RefundStatus::Succeeded);
    let report = reconcile(&reconcile_ports, None).await.unwrap();
    assert_eq!((report.refunds_checked, report.refunds_settled), (1, 1));
    assert_eq!(sale.order(&order_id).status, OrderStatus::Refunded);
    let stored = sale.ledger.refund(&event.outbox_id).await.unwrap().unwrap();
    assert_eq!(stored.state, RefundState::Succeeded);
    // Settled: no longer listed, nothing more asked.
    let report = reconcile(&reconcile_ports, None).await.unwrap();
    assert_eq!((report.refunds_checked, report.refunds_settled), (0, 0));
    assert_eq!(provider.refunds().len(), 1, "one refund, never a second");
}

#[tokio::test]
async fn a_batch_hands_back_what_is_not_done_with_a_growing_wait() {
    let (sale, _, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());
    provider.go_down();
    let message = |id: &str, receives: &str| QueueMessage {
        message_id: id.into(),
        receipt_handle: format!("handle-{id}"),
        body: serde_json::to_string(&event).unwrap(),
        attributes: [("ApproximateReceiveCount".to_owned(), receives.to_owned())].into(),
    };
    let batch = QueueBatch {
        records: vec![
            message("m1", "1"),
            message("m2", "4"),
            QueueMessage {
                body: "not json".into(),
                ..message("m3", "1")
            },
        ],
    };

    let answer = handle_batch(&ports(&sale, &provider, &retries), batch).await;

    let failed: Vec<_> = answer
        .batch_item_failures
        .iter()
        .map(|failure| failure.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["m1", "m2", "m3"]);
    let waits = retries.0.lock().unwrap().clone();
    assert_eq!(waits[0], ("handle-m1".into(), backoff(1)));
    assert_eq!(waits[1], ("handle-m2".into(), backoff(4)));
    assert!(backoff(1) < backoff(4) && backoff(40) <= Duration::from_secs(900));
}

#[tokio::test]
async fn stripe_s_refund_updated_event_ends_a_pending_refund_and_its_order() {
    use crate::application::confirm;
    use crate::domain::keys::KeyRing;
    use crate::domain::webhook_signature::WebhookSecret;

    let (sale, order_id, event) = refund_due().await;
    let (provider, retries) = (provider(), Retries::default());
    provider.make_refunds(RefundStatus::Pending);
    let RefundOutcome::Asked(record) = carry_out(&ports(&sale, &provider, &retries), &event)
        .await
        .unwrap()
    else {
        panic!("asked")
    };
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);

    // Stripe says the money is back.
    let secret = WebhookSecret::new("whsec_unit_tests_stripe_endpoint_secret_00").unwrap();
    let mut api = super::confirm::confirm_api(&sale);
    api.stripe_secret = Some(crate::application::rotating::Rotating::fixed(
        KeyRing::single(secret.clone()),
    ));
    let body = serde_json::json!({
        "id": "evt_refund_1",
        "type": "refund.updated",
        "data": {"object": {
            "id": record.provider_refund_id.clone().unwrap(),
            "object": "refund",
            "amount": record.amount,
            "currency": "krw",
            "status": "succeeded",
            "payment_intent": record.request.payment_id.as_str(),
            "metadata": {"lineup_refund": record.request.refund_id},
        }},
    })
    .to_string();
    let mut request: serde_json::Value =
        serde_json::from_str(include_str!("../../../../events/stripe-webhook.json")).unwrap();
    request["body"] = body.clone().into();
    request["headers"]["stripe-signature"] = secret.sign(sale.now(), body.as_bytes()).into();
    let answer = confirm::handle(&api, super::hold::to_request(&request)).await;

    assert_eq!(answer.status(), http::StatusCode::OK);
    assert_eq!(super::hold::body(&answer)["outcome"], "refund_updated");
    assert_eq!(sale.order(&order_id).status, OrderStatus::Refunded);
}
