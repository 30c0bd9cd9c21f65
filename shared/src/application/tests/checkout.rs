//! The `checkout` function: one provider payment per order whatever the retries and races, for
//! the customer's own live hold only; a release cancels the payment before the seats go back,
//! and is refused when the payment has gone too far to cancel.

use http::StatusCode;

use super::hold::{api_event, body, customer, refusal, to_request, Sale};
use crate::application::fakes::outage::Faulty;
use crate::application::ports::ledger::{OrderStatus, OrderTerms, HOLD_DURATION};
use crate::application::ports::payments::PaymentStatus;
use crate::domain::ids::{CustomerId, PaymentId};
use crate::domain::seat::SeatStatus;

const PAYMENT_SAMPLE: &str = include_str!("../../../../events/payment.json");

fn pay_request(caller: &CustomerId, order_id: &str) -> lambda_http::Request {
    to_request(&api_event(
        PAYMENT_SAMPLE,
        &[("orderId", order_id)],
        Some(caller),
    ))
}

async fn pay(
    sale: &Sale,
    caller: &CustomerId,
    order_id: &str,
) -> lambda_http::Response<lambda_http::Body> {
    sale.send(pay_request(caller, order_id)).await
}

#[tokio::test]
async fn a_held_order_gets_one_payment_for_its_amount_whatever_the_retries() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1", "F1-2"]).await;
    let order_id = order["orderId"].as_str().unwrap();

    let first = pay(&sale, &alice, order_id).await;
    let again = pay(&sale, &alice, order_id).await;

    assert_eq!(first.status(), StatusCode::OK, "{}", body(&first));
    let answer = body(&first);
    assert_eq!(body(&again), answer, "a retry gets the same payment");
    assert_eq!(answer["amount"], order["amount"]);
    assert_eq!(answer["currency"], "KRW");
    assert_eq!(answer["status"], "requires_payment_method");
    assert_eq!(answer["publishableKey"], "pk_test_unit");
    assert!(answer["clientSecret"].as_str().unwrap().starts_with("pi_"));
    let payments = sale.provider.payments();
    assert_eq!(payments.len(), 1);
    let stored = sale.order(order_id);
    assert_eq!(payments[0].terms().unwrap(), OrderTerms::of(&stored));
    assert_eq!(stored.checkout_payment, Some(payments[0].id.clone()));
}

#[tokio::test]
async fn a_cancelled_events_order_gets_no_payment_and_its_tied_one_is_cancelled() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    let alices = sale.held(&alice, &["F1-1"]).await;
    let alices = alices["orderId"].as_str().unwrap();
    let bobs = sale.held(&bob, &["F1-2"]).await;
    let bobs = bobs["orderId"].as_str().unwrap();
    // Alice started paying before the cancellation; Bob had not.
    assert_eq!(pay(&sale, &alice, alices).await.status(), StatusCode::OK);
    for order in [alices, bobs] {
        let order = crate::domain::ids::OrderId::parse(order).unwrap();
        sale.ledger.cancel_event_of(&order, sale.now());
    }

    for (who, order) in [(&alice, alices), (&bob, bobs)] {
        let answer = pay(&sale, who, order).await;
        assert_eq!(
            refusal(&answer),
            (StatusCode::CONFLICT, "event_cancelled".to_owned())
        );
    }
    let payments = sale.provider.payments();
    assert_eq!(payments.len(), 1, "no payment made for Bob's order");
    assert_eq!(
        payments[0].status,
        PaymentStatus::Canceled,
        "Alice's cancelled"
    );
    assert_eq!(sale.order(bobs).checkout_payment, None);
}

#[tokio::test]
async fn racing_checkouts_tie_one_payment_and_cancel_the_extra() {
    let sale = Sale::new().await;
    sale.provider.ignore_idempotency_keys();
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();

    let (a, b) = futures::join!(pay(&sale, &alice, order_id), pay(&sale, &alice, order_id));

    assert_eq!(body(&a)["paymentId"], body(&b)["paymentId"]);
    let tied = sale.order(order_id).checkout_payment.unwrap();
    let payments = sale.provider.payments();
    assert!(
        payments
            .iter()
            .all(|p| p.id == tied || p.status == PaymentStatus::Canceled),
        "{payments:?}"
    );
}

#[tokio::test]
async fn only_the_customers_own_live_pending_order_is_paid_for() {
    let sale = Sale::new().await;
    let (alice, bob) = (customer("alice"), customer("bob"));
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();

    let foreign = pay(&sale, &bob, order_id).await;
    assert_eq!(
        refusal(&foreign),
        (StatusCode::NOT_FOUND, "not_found".to_owned())
    );
    let unknown = pay(&sale, &alice, "7d5c9a8e-1f0b-4a3c-9e2d-6b8a7c5d4e3f").await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let malformed = pay(&sale, &alice, "nope").await;
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);

    sale.clock.advance(HOLD_DURATION);
    let lapsed = pay(&sale, &alice, order_id).await;
    assert_eq!(
        refusal(&lapsed),
        (StatusCode::CONFLICT, "order_not_pending".to_owned())
    );
    assert!(
        sale.provider.payments().is_empty(),
        "no payment for a lapsed hold"
    );
}

#[tokio::test]
async fn a_provider_outage_is_503_and_ties_nothing() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();
    sale.provider.go_down();

    let answer = pay(&sale, &alice, order_id).await;

    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer.headers().contains_key("retry-after"));
    assert_eq!(sale.order(order_id).checkout_payment, None);
}

#[tokio::test]
async fn a_release_cancels_the_payment_before_the_seats_go_back() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();
    let payment = PaymentId::parse(
        body(&pay(&sale, &alice, order_id).await)["paymentId"]
            .as_str()
            .unwrap(),
    )
    .unwrap();

    let released = sale.send(sale.release_request(&alice, order_id)).await;

    assert_eq!(
        released.status(),
        StatusCode::NO_CONTENT,
        "{}",
        body(&released)
    );
    assert_eq!(
        sale.provider
            .payments()
            .iter()
            .find(|p| p.id == payment)
            .unwrap()
            .status,
        PaymentStatus::Canceled
    );
    assert_eq!(sale.order(order_id).status, OrderStatus::Released);
    assert_eq!(sale.seat_status("F1-1"), SeatStatus::Available);
}

#[tokio::test]
async fn a_release_while_the_payment_is_taken_keeps_the_hold_for_the_payment_to_settle() {
    let sale = Sale::new().await;
    let alice = customer("alice");
    let order = sale.held(&alice, &["F1-1"]).await;
    let order_id = order["orderId"].as_str().unwrap();
    let payment = PaymentId::parse(
        body(&pay(&sale, &alice, order_id).await)["paymentId"]
            .as_str()
            .unwrap(),
    )
    .unwrap();

    for status in [PaymentStatus::Processing, PaymentStatus::Succeeded] {
        sale.provider.set_status(&payment, status);
        let refused = sale.send(sale.release_request(&alice, order_id)).await;
        assert_eq!(
            refusal(&refused),
            (StatusCode::CONFLICT, "payment_in_progress".to_owned()),
            "{status:?}"
        );
        assert_eq!(sale.order(order_id).status, OrderStatus::Pending);
        assert_eq!(sale.seat_status("F1-1"), SeatStatus::Held);
    }
    // The provider's outage: nothing released, 503.
    sale.provider.go_down();
    let down = sale.send(sale.release_request(&alice, order_id)).await;
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(sale.order(order_id).status, OrderStatus::Pending);
}
