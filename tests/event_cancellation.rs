//! `lineup event cancel` against moto, Redis and localstripe: an event with three PAID orders,
//! one PENDING and one already REFUND_REQUIRED (a late payment) is cancelled; each paid order
//! gets exactly one `refund_required` event for its payment and becomes REFUND_REQUIRED, the
//! others are left alone, the seats stay SOLD and the queue is closed; a second run changes
//! nothing; then the `refund` function, run twice per event (two deliveries racing, and one
//! more later), makes exactly one refund per payment at localstripe and every order ends
//! REFUNDED.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use async_trait::async_trait;
use http::StatusCode;
use lineup::adapters::dynamo::cancellation::{CancellationProgress, PaidOrder, RefundRequirement};
use lineup::application::error::LineupError;
use lineup::application::ports::event_records::EventRecords;
use lineup::application::ports::ledger::{
    OrderTerms, PaymentConfirmation, PaymentFor, PaymentLedger, SeatLedger, HOLD_DURATION,
};
use lineup::application::ports::outbox::OutboxEvent;
use lineup::application::ports::payments::{NewPayment, PaymentProvider, ProviderPayment};
use lineup::application::ports::refunds::{RetryLater, REFUND_LEASE};
use lineup::application::refund::{self, RefundOutcome, RefundPorts};
use lineup::domain::clock::Clock;
use lineup::domain::ids::{CustomerId, EventId, OrderId, PaymentId, SeatId};
use lineup_cli::event_admin::EventAdmin;
use lineup_cli::event_cancellation::{self, Cancellation};
use lineup_tests::aws::unique;
use lineup_tests::localstripe::{self, customer_pays};
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::{body, customer, logs};

struct NoRetries;

#[async_trait]
impl RetryLater for NoRetries {
    async fn retry_after(&self, _: &str, _: Duration) -> Result<(), LineupError> {
        Ok(())
    }
}

/// Holds `seats` for `customer` (admitted with `token`): the order's id.
async fn hold(sale: &OnSale, customer: &CustomerId, token: &str, seats: &[SeatId]) -> OrderId {
    let held = sale.hold(customer, token, seats).await;
    assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));
    OrderId::parse(body(&held)["orderId"].as_str().unwrap()).unwrap()
}

/// The customer pays the order at localstripe (a payment created with the order's terms in its
/// metadata, then paid by card): the payment, and its succeeded webhook as the Stripe route
/// applies it (not applied yet).
async fn pay_at_localstripe(
    sale: &OnSale,
    order_id: &OrderId,
) -> (ProviderPayment, PaymentConfirmation) {
    let order = sale.ledger.order(order_id).await.unwrap().unwrap();
    let terms = OrderTerms::of(&order);
    let payment = localstripe::provider()
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
    let confirmation = PaymentConfirmation {
        order: PaymentFor::Terms(terms),
        idempotency_key: unique("stripe-event:evt"),
        request_digest: "digest".into(),
        payment_id: payment.id.clone(),
        amount: payment.amount,
        currency: payment.currency.clone(),
        now: sale.clock.now(),
    };
    (payment, confirmation)
}

/// Applies the webhook: the order's status it answers.
async fn settle(sale: &OnSale, confirmation: &PaymentConfirmation) -> String {
    let limits = sale.queue.clone();
    let confirmed = sale
        .ledger
        .confirm(confirmation, limits.as_ref())
        .await
        .unwrap();
    confirmed.answer.status.as_str().to_owned()
}

/// The outbox's `refund_required` events, by outbox id.
async fn refund_events(sale: &OnSale) -> BTreeMap<String, OutboxEvent> {
    sale.outbox()
        .await
        .into_iter()
        .filter(|item| item["type"] == "refund_required")
        .map(|item| {
            let event: OutboxEvent =
                serde_json::from_value(serde_json::Value::Object(item.into_iter().collect()))
                    .unwrap();
            (event.outbox_id.clone(), event)
        })
        .collect()
}

/// The outbox id the cancellation gives a payment's refund event (checked below against the one
/// `confirm` gave the late payment's: one derivation, so one event per payment).
fn refund_id_of(payment: &PaymentId) -> String {
    PaidOrder {
        order_id: OrderId::generate(),
        event_id: EventId::parse("any").unwrap(),
        customer_id: customer(0),
        payment_id: payment.clone(),
        seat_ids: Vec::new(),
        amount: 0,
        currency: String::new(),
    }
    .refund_outbox_id(std::time::SystemTime::now())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_an_event_refunds_every_paid_order_exactly_once() {
    logs();
    let sale = OnSale::with_seats(8).await;
    let customers: Vec<CustomerId> = (1..=5).map(customer).collect();
    let tokens = sale.admit(&customers).await;

    // Already REFUND_REQUIRED: customer 1 pays after her hold lapsed and customer 2 took the
    // seat.
    let late = hold(&sale, &customers[0], &tokens[0], &[seat(1)]).await;
    let (late_payment, late_webhook) = pay_at_localstripe(&sale, &late).await;
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    // Three PAID orders (one of two seats), through localstripe.
    let mut paid = HashMap::new();
    for (n, seats) in [
        (1, vec![seat(1)]),
        (2, vec![seat(2), seat(3)]),
        (3, vec![seat(4)]),
    ] {
        let order = hold(&sale, &customers[n], &tokens[n], &seats).await;
        let (payment, webhook) = pay_at_localstripe(&sale, &order).await;
        assert_eq!(settle(&sale, &webhook).await, "PAID");
        paid.insert(order, payment);
    }
    assert_eq!(settle(&sale, &late_webhook).await, "REFUND_REQUIRED");
    // One PENDING.
    let pending = hold(&sale, &customers[4], &tokens[4], &[seat(5)]).await;

    let statuses = |orders: &BTreeMap<String, BTreeMap<String, serde_json::Value>>| {
        orders
            .iter()
            .map(|(id, item)| (id.clone(), item["status"].as_str().unwrap().to_owned()))
            .collect::<BTreeMap<_, _>>()
    };
    let before = sale.orders().await;
    let mut expected: BTreeMap<String, String> = paid
        .keys()
        .map(|order| (order.as_str().to_owned(), "PAID".to_owned()))
        .collect();
    expected.insert(late.as_str().to_owned(), "REFUND_REQUIRED".to_owned());
    expected.insert(pending.as_str().to_owned(), "PENDING".to_owned());
    assert_eq!(statuses(&before), expected);
    let refunds_before = refund_events(&sale).await;
    assert_eq!(
        refunds_before.keys().collect::<Vec<_>>(),
        vec![&refund_id_of(&late_payment.id)],
        "the late payment's own refund event, keyed by confirm as the cancellation keys one"
    );

    let admin = EventAdmin::new(&sale.queue, &sale.records, "test-operator");
    let mut seen: Vec<CancellationProgress> = Vec::new();

    // Without --yes: the count of PAID orders, and nothing changes (not even the queue).
    let tables = sale.snapshot().await;
    let refused = event_cancellation::cancel(
        &sale.ledger,
        &admin,
        &sale.event,
        false,
        Duration::ZERO,
        sale.clock.now(),
        &mut |progress| seen.push(*progress),
    )
    .await
    .unwrap();
    assert!(
        matches!(refused, Cancellation::Refused { paid_orders: 3, .. }),
        "{refused:?}"
    );
    assert_eq!(event_cancellation::exit_code(&refused), 2);
    assert_eq!(sale.snapshot().await, tables);
    assert!(sale.is_open().await, "the queue is left open");
    assert!(seen.is_empty());
    let found_first = sale.ledger.paid_orders(&sale.event).await.unwrap();
    assert_eq!(found_first.orders.len(), 3);

    // With --yes.
    let cancelled_at = sale.clock.now();
    let done = event_cancellation::cancel(
        &sale.ledger,
        &admin,
        &sale.event,
        true,
        Duration::ZERO,
        cancelled_at,
        &mut |progress| seen.push(*progress),
    )
    .await
    .unwrap();
    let Cancellation::Done {
        report,
        settings,
        stopped,
    } = &done
    else {
        panic!("{done:?}");
    };
    assert_eq!(event_cancellation::exit_code(&done), 0);
    assert_eq!(settings.state.as_str(), "closed");
    // The open order is stopped (the late payment's order is settled: not open).
    assert_eq!(stopped.found, 1);
    assert_eq!(stopped.marked, [pending.as_str().to_owned()]);
    assert_eq!(report.found, 3);
    assert_eq!(
        report.recorded.iter().cloned().collect::<BTreeSet<_>>(),
        paid.keys()
            .map(|order| order.as_str().to_owned())
            .collect::<BTreeSet<_>>()
    );
    assert!(
        report.skipped.is_empty() && report.failed.is_empty(),
        "{report:?}"
    );
    assert_eq!(
        seen.last(),
        Some(&CancellationProgress {
            done: 3,
            total: 3,
            recorded: 3,
            skipped: 0,
            failed: 0,
        })
    );
    println!(
        "{}",
        event_cancellation::describe(&sale.event, &done).trim_end()
    );

    // Exactly three new refund_required events, one per paid payment, as confirm shapes them.
    let refunds_after = refund_events(&sale).await;
    assert_eq!(refunds_after.len(), 4);
    assert_eq!(
        refunds_after[&refund_id_of(&late_payment.id)],
        refunds_before[&refund_id_of(&late_payment.id)],
        "the late payment's event is untouched"
    );
    let new: Vec<&OutboxEvent> = refunds_after
        .values()
        .filter(|event| !refunds_before.contains_key(&event.outbox_id))
        .collect();
    assert_eq!(new.len(), 3);
    let orders = sale.orders().await;
    for event in &new {
        let order = OrderId::parse(&event.order_id).unwrap();
        let payment = &paid[&order];
        let item = &orders[order.as_str()];
        assert_eq!(event.payment_id.as_deref(), Some(payment.id.as_str()));
        assert_eq!(event.outbox_id, refund_id_of(&payment.id));
        assert_eq!(event.event_id, sale.event.as_str());
        assert_eq!(event.customer_id, item["customer_id"].as_str().unwrap());
        assert_eq!(
            serde_json::json!(event.seat_ids),
            item["seat_ids"],
            "the order's seats"
        );
        assert_eq!(
            (event.amount, event.currency.as_str()),
            (payment.amount, "KRW")
        );
    }
    assert_eq!(
        new.iter()
            .map(|event| event.payment_id.clone().unwrap())
            .collect::<BTreeSet<_>>(),
        paid.values()
            .map(|payment| payment.id.as_str().to_owned())
            .collect::<BTreeSet<_>>()
    );
    // The paid orders are REFUND_REQUIRED and the open one stays PENDING, all marked
    // cancelled; the late payment's order as it was.
    for (id, item) in &orders {
        if paid.contains_key(&OrderId::parse(id).unwrap()) || id == pending.as_str() {
            let status = if id == pending.as_str() {
                "PENDING"
            } else {
                "REFUND_REQUIRED"
            };
            assert_eq!(item["status"], status, "{id}");
            assert_eq!(
                item["cancelled_at"].as_u64(),
                Some(lineup::domain::clock::unix_millis(cancelled_at)),
                "{id}"
            );
        } else {
            assert_eq!(item["status"], expected[id], "{id}");
            assert!(!item.contains_key("cancelled_at"), "{id}");
        }
    }
    // The seats stay SOLD.
    let seats = sale.seats().await;
    for n in 1..=4 {
        assert_eq!(seats[seat(n).as_str()]["status"], "SOLD", "seat {n}");
    }
    assert_eq!(
        seats[seat(5).as_str()]["status"],
        "HELD",
        "the pending order's"
    );
    // The queue is closed for good, as cancelled, and the audit trail says who cancelled.
    assert!(!sale.is_open().await);
    let record = sale.records.event(&sale.event).await.unwrap().unwrap();
    assert_eq!(record.closed_reason.as_deref(), Some("cancelled"));
    let history = admin.history(&sale.event).await.unwrap();
    let actions: Vec<(&str, &str)> = history
        .iter()
        .map(|entry| (entry.action.as_str(), entry.operator.as_str()))
        .collect();
    assert_eq!(
        actions,
        [("close", "test-operator"), ("cancel", "test-operator")]
    );
    assert_eq!(history[1].detail["paidOrders"], 3);
    assert_eq!(history[1].detail["openOrdersStopped"], 1);

    // Again: nothing PAID is found, nothing changes in the ledger.
    let tables = sale.snapshot().await;
    seen.clear();
    let again = event_cancellation::cancel(
        &sale.ledger,
        &admin,
        &sale.event,
        true,
        Duration::ZERO,
        sale.clock.now(),
        &mut |progress| seen.push(*progress),
    )
    .await
    .unwrap();
    let Cancellation::Done { report, .. } = &again else {
        panic!("{again:?}");
    };
    assert_eq!(report.found, 0);
    assert!(report.recorded.is_empty() && report.skipped.is_empty() && report.is_complete());
    assert_eq!(sale.snapshot().await, tables);
    // A run that found an order PAID and comes to it after another run took it: skipped,
    // nothing written.
    for order in &found_first.orders {
        assert_eq!(
            sale.ledger
                .require_refund(order, sale.clock.now())
                .await
                .unwrap(),
            RefundRequirement::NoLongerPaid
        );
    }
    assert_eq!(sale.snapshot().await, tables);

    // The refund function on each new event: two deliveries at once, then one more later.
    let provider = localstripe::provider();
    let ports = RefundPorts {
        ledger: sale.ledger.as_ref(),
        provider: &provider,
        retries: &NoRetries,
        clock: sale.clock.as_ref(),
    };
    for event in &new {
        let (first, second) = futures::join!(
            refund::carry_out(&ports, event),
            refund::carry_out(&ports, event)
        );
        let outcomes = [first.unwrap(), second.unwrap()];
        assert!(
            outcomes
                .iter()
                .any(|outcome| matches!(outcome, RefundOutcome::Asked(_))),
            "{outcomes:?}"
        );
    }
    sale.clock.advance(REFUND_LEASE * 2);
    for event in &new {
        let outcome = refund::carry_out(&ports, event).await.unwrap();
        assert!(matches!(outcome, RefundOutcome::Asked(_)), "{outcome:?}");
    }
    let orders = sale.orders().await;
    for (order, payment) in &paid {
        assert_eq!(orders[order.as_str()]["status"], "REFUNDED", "{order}");
        let refunds = provider.refunds_of(&payment.id).await.unwrap();
        assert_eq!(refunds.len(), 1, "one refund per payment: {refunds:?}");
        assert_eq!(refunds[0].amount, payment.amount, "refunded in full");
        assert_eq!(
            refunds[0].lineup_refund.as_deref(),
            Some(refund_id_of(&payment.id).as_str())
        );
    }
    // The late payment's refund is its own event's business: the cancellation asked nothing.
    assert!(provider
        .refunds_of(&late_payment.id)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(orders[late.as_str()]["status"], "REFUND_REQUIRED");
    assert_eq!(orders[pending.as_str()]["status"], "PENDING");

    // Nothing more is sold. Customer 5, admitted before the cancel and holding seat 5, is
    // refused another hold, and nothing is written.
    let tables = sale.snapshot().await;
    let refused = sale.hold(&customers[4], &tokens[4], &[seat(6)]).await;
    assert_eq!(refused.status(), StatusCode::CONFLICT, "{}", body(&refused));
    assert_eq!(body(&refused)["error"]["code"], "event_cancelled");
    assert_eq!(sale.snapshot().await, tables);
    // Nobody opens, changes or closes it again.
    let reopened = admin
        .open(&sale.event, &Default::default(), sale.clock.now())
        .await;
    assert!(
        matches!(
            reopened,
            Err(lineup_cli::event_admin::AdminError::Cancelled(_))
        ),
        "{reopened:?}"
    );
    assert!(matches!(
        admin.close(&sale.event, sale.clock.now()).await,
        Err(lineup_cli::event_admin::AdminError::Cancelled(_))
    ));
    assert_eq!(sale.snapshot().await, tables);
    // The payment she completes for her open order (the webhook delivered twice) is refunded,
    // not sold: its seat is given back (as for any refunded order; nobody can hold it now),
    // and one refund event is written.
    let (payment, webhook) = pay_at_localstripe(&sale, &pending).await;
    assert_eq!(settle(&sale, &webhook).await, "REFUND_REQUIRED");
    assert_eq!(settle(&sale, &webhook).await, "REFUND_REQUIRED");
    let orders = sale.orders().await;
    assert_eq!(orders[pending.as_str()]["status"], "REFUND_REQUIRED");
    assert_eq!(sale.seats().await[seat(5).as_str()]["status"], "AVAILABLE");
    let refunds = refund_events(&sale).await;
    let event = &refunds[&refund_id_of(&payment.id)];
    assert_eq!(event.amount, payment.amount);
    assert_eq!(event.order_id, pending.as_str());
    assert_eq!(refunds.len(), 5, "one more: the stopped order's payment");
}
