//! Reconciliation: a webhook that never comes costs one reconcile period (the order is sold, or
//! refunded when its seats are gone); a hold whose payment is in progress is kept up to the
//! bound; a lapsed hold's payment is cancelled before its seats go back, and a payment that wins
//! that race settles the order. The expiry sweep leaves orders with a payment alone.

use std::time::Duration;

use http::StatusCode;

use super::hold::{api_event, body, customer, to_request, Sale};
use crate::application::ports::ledger::{HoldSweeper, OrderStatus, HOLD_DURATION, PAYMENT_GRACE};
use crate::application::ports::outbox::OutboxEventKind;
use crate::application::ports::payments::PaymentStatus;
use crate::application::reconcile::{reconcile, ReconcilePorts};
use crate::domain::clock::Clock;
use crate::domain::ids::{CustomerId, PaymentId};
use crate::domain::seat::SeatStatus;

const PAYMENT_SAMPLE: &str = include_str!("../../../../events/payment.json");

/// Alice holds `seats` and starts paying: her order id and its payment.
async fn paying(sale: &Sale, alice: &CustomerId, seats: &[&str]) -> (String, PaymentId) {
    let order = sale.held(alice, seats).await;
    let order_id = order["orderId"].as_str().unwrap().to_owned();
    let answer = sale
        .send(to_request(&api_event(
            PAYMENT_SAMPLE,
            &[("orderId", &order_id)],
            Some(alice),
        )))
        .await;
    assert_eq!(answer.status(), StatusCode::OK, "{}", body(&answer));
    let payment = PaymentId::parse(body(&answer)["paymentId"].as_str().unwrap()).unwrap();
    (order_id, payment)
}

async fn run(sale: &Sale) -> crate::application::reconcile::ReconcileReport {
    reconcile(
        &ReconcilePorts {
            orders: sale.ledger.as_ref(),
            ledger: sale.ledger.as_ref(),
            refunds: sale.ledger.as_ref(),
            provider: sale.provider.as_ref(),
            clock: sale.clock.as_ref(),
        },
        None,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_lost_webhook_s_payment_sells_the_still_held_seats() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let (order_id, payment) = paying(&sale, &alice, &["F1-1", "F1-2"]).await;
    // She paid; the webhook never comes.
    sale.provider.set_status(&payment, PaymentStatus::Succeeded);

    let report = run(&sale).await;

    assert_eq!(report.settled.len(), 1, "{report:?}");
    assert_eq!(report.settled[0].status, OrderStatus::Paid);
    assert_eq!(sale.order(&order_id).status, OrderStatus::Paid);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Sold);
    assert_eq!(sale.ledger.outbox()[0].kind, OutboxEventKind::TicketIssued);
    // Once settled it is no longer open: a second run finds nothing.
    assert_eq!(run(&sale).await.checked, 0);
}

#[tokio::test]
async fn a_lost_webhook_s_payment_for_seats_gone_meanwhile_is_refunded() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let (order_id, payment) = paying(&sale, &alice, &["F1-1"]).await;
    // Her hold lapses while she pays; bob takes the seat (a lapsed hold's seat is free to take).
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    sale.held(&customer("bob"), &["F1-1"]).await;
    sale.provider.set_status(&payment, PaymentStatus::Succeeded);

    let report = run(&sale).await;

    assert_eq!(
        report.settled[0].status,
        OrderStatus::RefundRequired,
        "{report:?}"
    );
    assert_eq!(sale.order(&order_id).status, OrderStatus::RefundRequired);
    let refunds: Vec<_> = sale
        .ledger
        .outbox()
        .into_iter()
        .filter(|event| event.kind == OutboxEventKind::RefundRequired)
        .collect();
    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].payment_id.as_deref(), Some(payment.as_str()));
}

#[tokio::test]
async fn a_hold_whose_payment_is_in_progress_is_kept_up_to_the_bound() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let (order_id, payment) = paying(&sale, &alice, &["F1-1"]).await;
    let created = sale.order(&order_id).created_at;
    sale.provider
        .set_status(&payment, PaymentStatus::RequiresAction);
    sale.clock.advance(HOLD_DURATION - Duration::from_secs(30));

    let report = run(&sale).await;

    assert_eq!(report.extended, 1, "{report:?}");
    let bound = created + HOLD_DURATION + PAYMENT_GRACE;
    assert_eq!(sale.order(&order_id).expires_at, bound);
    // Past the old lapse, nobody else can take the seat.
    sale.clock.advance(Duration::from_secs(60));
    let bob = customer("bob");
    let token = sale.admit(&bob);
    let bob = sale.hold(&bob, &token, &["F1-1"]).await;
    assert_eq!(bob.status(), StatusCode::CONFLICT, "{}", body(&bob));
    // Past the bound, the payment still not done: cancelled, the order ends, the seat goes back.
    sale.clock.advance(PAYMENT_GRACE);
    sale.provider
        .set_status(&payment, PaymentStatus::RequiresPaymentMethod);
    let report = run(&sale).await;
    assert_eq!(report.ended, 1, "{report:?}");
    assert_eq!(sale.order(&order_id).status, OrderStatus::Expired);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Available);
}

#[tokio::test]
async fn a_lapsed_hold_s_payment_is_cancelled_before_its_seats_go_back_and_the_sweep_leaves_it() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let (order_id, payment) = paying(&sale, &alice, &["F1-1"]).await;
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));

    let sweep = sale.ledger.expire_lapsed(sale.clock.now()).await.unwrap();
    assert_eq!(
        sweep.orders_expired, 0,
        "an order with a payment is reconciliation's"
    );
    assert_eq!(sale.order(&order_id).status, OrderStatus::Pending);

    let report = run(&sale).await;

    assert_eq!(report.ended, 1, "{report:?}");
    assert_eq!(
        sale.provider
            .payments()
            .into_iter()
            .find(|p| p.id == payment)
            .unwrap()
            .status,
        PaymentStatus::Canceled
    );
    assert_eq!(sale.order(&order_id).status, OrderStatus::Expired);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Available);
}

#[tokio::test]
async fn a_payment_that_succeeds_as_its_lapsed_hold_is_cancelled_still_settles() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let (order_id, payment) = paying(&sale, &alice, &["F1-1"]).await;
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    // The money is taken between the look (still waiting for her) and the cancel: too late.
    sale.provider.pay_just_before_cancel(&payment);

    let report = run(&sale).await;

    assert_eq!(report.settled.len(), 1, "{report:?}");
    assert_eq!(sale.order(&order_id).status, OrderStatus::Paid);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Sold);
}
