//! The attack suite: each attack a hostile caller can play against the public routes, played
//! through the same handlers the Lambda functions run, each checked to fail with its 4xx and to
//! leave everything stored (the three tables and the event's Redis keys) as it was.
//!
//! An on-sale is adversarial: scalpers, bots, people who read a webhook in a log, people who
//! script the API. Each hole closed gets its attack here, so it stays closed.

// ---------------------------------------------------------------- payments and ticket limits
// (the lead's section: payments bound to their order, each payment used once, the ticket limit)

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::join_all;
use http::StatusCode;
use lambda_http::{Body, Response};
use lineup::application::confirm;
use lineup::application::ports::ledger::HOLD_DURATION;
use lineup::application::ports::queue::{EventSettingsStore, WaitingLine};
use lineup::domain::clock::Clock;
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::CustomerId;
use lineup_tests::aws::unique;
use lineup_tests::on_sale::{payment_body, seat, OnSale};
use lineup_tests::{body, customer, error_code, logs};
use serde_json::{json, Value};

/// The order a hold answered with: its id and amount.
fn held(response: &Response<Body>) -> (String, i64) {
    assert_eq!(response.status(), StatusCode::CREATED, "{}", body(response));
    let order = body(response);
    (
        order["orderId"].as_str().expect("orderId").to_owned(),
        order["amount"].as_i64().expect("amount"),
    )
}

/// Sends a signed webhook with this body to `path_order`'s confirm URL, under a fresh key.
async fn webhook(sale: &OnSale, path_order: &str, payment: &Value) -> Response<Body> {
    confirm::handle(
        &sale.confirm_api,
        sale.confirm_request(path_order, &unique("key"), payment),
    )
    .await
}

/// The stored records of one kind in the orders table (`PAYMENT#`, `TICKETS#`...).
async fn records(sale: &OnSale, prefix: &str) -> Vec<BTreeMap<String, Value>> {
    let snapshot = sale.snapshot().await;
    snapshot["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .filter(|item| item["pk"].as_str().is_some_and(|pk| pk.starts_with(prefix)))
        .map(|item| serde_json::from_value(item.clone()).expect("an object"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_captured_webhook_replayed_to_another_order_pays_nothing() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let (alice, mallory) = (customer(1), customer(666));
    let tokens = sale.admit(&[alice.clone(), mallory.clone()]).await;
    let (alices_order, amount) = held(&sale.hold(&alice, &tokens[0], &[seat(1)]).await);
    let (mallorys_order, _) = held(&sale.hold(&mallory, &tokens[1], &[seat(2)]).await);

    // Alice's payment, signed by the provider, as Mallory found it in a log: sent to Mallory's
    // order with a new Idempotency-Key, before and after Alice's own delivery.
    let alices_payment = payment_body(&alices_order, "pay_alice", amount);
    let before = sale.snapshot().await;
    let replayed = webhook(&sale, &mallorys_order, &alices_payment).await;
    assert_eq!(
        (replayed.status(), error_code(&replayed).as_str()),
        (StatusCode::BAD_REQUEST, "order_mismatch")
    );
    assert_eq!(
        sale.snapshot().await,
        before,
        "the replay changed something"
    );

    let paid = webhook(&sale, &alices_order, &alices_payment).await;
    assert_eq!(body(&paid)["status"], "PAID");
    let after_alice = sale.snapshot().await;
    let replayed = webhook(&sale, &mallorys_order, &alices_payment).await;
    assert_eq!(error_code(&replayed), "order_mismatch");
    assert_eq!(sale.snapshot().await, after_alice);
    assert_eq!(sale.orders().await[&mallorys_order]["status"], "PENDING");

    // Re-signing is not possible without the secret; the same payment named for Mallory's
    // order by the provider itself is "another order" for an already used payment.
    let moved = webhook(
        &sale,
        &mallorys_order,
        &payment_body(&mallorys_order, "pay_alice", amount),
    )
    .await;
    assert_eq!(
        (moved.status(), error_code(&moved).as_str()),
        (StatusCode::CONFLICT, "payment_already_used")
    );
    assert_eq!(
        sale.snapshot().await,
        after_alice,
        "a refused payment recorded something"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_payment_racing_for_two_orders_pays_exactly_one() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let (alice, bob) = (customer(1), customer(2));
    let tokens = sale.admit(&[alice.clone(), bob.clone()]).await;
    let (alices_order, amount) = held(&sale.hold(&alice, &tokens[0], &[seat(1)]).await);
    let (bobs_order, _) = held(&sale.hold(&bob, &tokens[1], &[seat(2)]).await);

    // Ten deliveries naming each order, all of one payment id, all at once.
    let answers = join_all((0..20).map(|n| {
        let order = if n % 2 == 0 {
            &alices_order
        } else {
            &bobs_order
        };
        let payment = payment_body(order, "pay_shared", amount);
        let sale = &sale;
        async move { (order.clone(), webhook(sale, order, &payment).await) }
    }))
    .await;

    let orders = sale.orders().await;
    let paid: Vec<&String> = [&alices_order, &bobs_order]
        .into_iter()
        .filter(|order| orders[order.as_str()]["status"] == "PAID")
        .collect();
    assert_eq!(paid.len(), 1, "exactly one order is paid: {orders:?}");
    let (winner, loser) = if paid[0] == &alices_order {
        (&alices_order, &bobs_order)
    } else {
        (&bobs_order, &alices_order)
    };
    assert_eq!(orders[loser.as_str()]["status"], "PENDING");
    for (order, answer) in &answers {
        if order == winner {
            assert_eq!(
                (answer.status(), body(answer)["status"].clone()),
                (StatusCode::OK, json!("PAID"))
            );
        } else {
            assert_eq!(
                (answer.status(), error_code(answer).as_str()),
                (StatusCode::CONFLICT, "payment_already_used")
            );
        }
    }
    let payments = records(&sale, "PAYMENT#").await;
    assert_eq!(payments.len(), 1);
    assert_eq!(payments[0]["order_id"], winner.as_str());
    let outbox = sale.outbox().await;
    assert_eq!(outbox.len(), 1, "one ticket event, no refund: {outbox:?}");
    assert_eq!(outbox[0]["type"], "ticket_issued");
    assert_eq!(outbox[0]["orderId"], winner.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn money_that_cannot_buy_its_order_is_recorded_for_refund_once() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let alice = customer(1);
    let token = &sale.admit(std::slice::from_ref(&alice)).await[0];
    let (order, amount) = held(&sale.hold(&alice, token, &[seat(1), seat(2)]).await);

    // The wrong amount: refused, the order untouched, the money recorded for a refund, once
    // however often the provider delivers it.
    for _ in 0..3 {
        let short = webhook(
            &sale,
            &order,
            &payment_body(&order, "pay_short", amount - 1),
        )
        .await;
        assert_eq!(
            (short.status(), error_code(&short).as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, "payment_mismatch")
        );
    }
    assert_eq!(sale.orders().await[&order]["status"], "PENDING");
    assert_eq!(sale.seats().await["A-001"]["status"], "HELD");

    let paid = webhook(&sale, &order, &payment_body(&order, "pay_right", amount)).await;
    assert_eq!(body(&paid)["status"], "PAID");

    // A second, different payment for the paid order: refused, recorded for a refund, once.
    for _ in 0..3 {
        let twice = webhook(&sale, &order, &payment_body(&order, "pay_twice", amount)).await;
        assert_eq!(
            (twice.status(), error_code(&twice).as_str()),
            (StatusCode::CONFLICT, "order_not_payable")
        );
    }
    let orders = sale.orders().await;
    assert_eq!(orders[&order]["status"], "PAID");
    assert_eq!(orders[&order]["payment_id"], "pay_right");

    let mut refunds: Vec<(Value, Value)> = sale
        .outbox()
        .await
        .iter()
        .filter(|event| event["type"] == "refund_required")
        .map(|event| (event["paymentId"].clone(), event["amount"].clone()))
        .collect();
    refunds.sort_by_key(|(payment, _)| payment.to_string());
    assert_eq!(
        refunds,
        vec![
            (json!("pay_short"), json!(amount - 1)),
            (json!("pay_twice"), json!(amount)),
        ],
        "one refund event per payment that bought nothing"
    );
    let tickets = sale
        .outbox()
        .await
        .iter()
        .filter(|event| event["type"] == "ticket_issued")
        .count();
    assert_eq!(tickets, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repeated_or_late_payment_never_ends_a_newer_admission() {
    logs();
    let sale = OnSale::with_seats(4).await;
    let alice = customer(1);
    let token = sale.admit(std::slice::from_ref(&alice)).await.remove(0);
    let (first, amount) = held(&sale.hold(&alice, &token, &[seat(1)]).await);
    let payment = payment_body(&first, "pay_first", amount);
    assert_eq!(
        body(&webhook(&sale, &first, &payment).await)["status"],
        "PAID"
    );
    assert!(
        !sale.is_admitted(&alice).await,
        "paying ends that admission"
    );

    // Alice joins again to buy more; the provider redelivers the first payment (a new key), and
    // someone replays it within its five minutes: her new admission stays.
    let token = readmit(&sale, &alice).await;
    for _ in 0..2 {
        let again = webhook(&sale, &first, &payment).await;
        assert_eq!(body(&again)["status"], "PAID");
        assert!(
            sale.is_admitted(&alice).await,
            "a repeated payment ended a newer admission"
        );
    }

    // A hold under the new admission lapses; she joins again; the late payment of the lapsed
    // order still sells (nobody took the seat) but ends only the admission it was held under.
    let (second, amount) = held(&sale.hold(&alice, &token, &[seat(2)]).await);
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    readmit(&sale, &alice).await;
    let late = webhook(&sale, &second, &payment_body(&second, "pay_late", amount)).await;
    assert_eq!(body(&late)["status"], "PAID");
    assert!(
        sale.is_admitted(&alice).await,
        "a late payment ended a newer admission"
    );
}

/// Sets the event's ticket limit, keeping its other settings.
async fn limit_tickets(sale: &OnSale, limit: u32) {
    let settings = sale
        .queue
        .settings(&sale.event)
        .await
        .expect("settings")
        .expect("the event exists");
    sale.queue
        .configure(
            &sale.event,
            &EventSettings {
                ticket_limit: Some(limit),
                ..settings
            },
            &lineup::domain::draw::DrawSeed::generate(),
        )
        .await
        .expect("configure");
}

/// Leaves and joins again, for a new admission (paying ends the old one).
async fn readmit(sale: &OnSale, customer: &CustomerId) -> String {
    let _ = sale
        .queue
        .leave(&sale.event, customer)
        .await
        .expect("leave");
    sale.admit(std::slice::from_ref(customer)).await.remove(0)
}

/// The seats of the customer's PAID orders plus those of PENDING orders still within their hold.
async fn seats_bought_or_held(sale: &OnSale, customer: &CustomerId) -> usize {
    let now_ms = lineup::domain::clock::unix_millis(sale.clock.now());
    sale.orders()
        .await
        .values()
        .filter(|order| order["customer_id"] == customer.as_str())
        .filter(|order| {
            order["status"] == "PAID"
                || (order["status"] == "PENDING"
                    && order["expires_at"].as_u64().is_some_and(|at| at > now_ms))
        })
        .map(|order| order["seat_ids"].as_array().map_or(0, Vec::len))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_holds_from_one_customer_never_pass_the_ticket_limit() {
    logs();
    let sale = OnSale::with_seats(24).await;
    limit_tickets(&sale, 3).await;
    let scalper = customer(7);

    // Eight holds of two seats at once: one wins (one open hold per customer).
    let token = sale.admit(std::slice::from_ref(&scalper)).await.remove(0);
    let rush = |token: String, first: usize, size: usize| {
        let (sale, scalper) = (&sale, &scalper);
        async move {
            join_all((0..8).map(|n| {
                let seats: Vec<_> = (0..size).map(|k| seat(first + n * size + k)).collect();
                let token = token.clone();
                async move { sale.hold(scalper, &token, &seats).await }
            }))
            .await
        }
    };
    let answers = rush(token, 1, 2).await;
    let won: Vec<&Response<Body>> = answers
        .iter()
        .filter(|answer| answer.status() == StatusCode::CREATED)
        .collect();
    assert_eq!(
        won.len(),
        1,
        "{:?}",
        answers.iter().map(body).collect::<Vec<_>>()
    );
    let (order, amount) = held(won[0]);
    assert!(seats_bought_or_held(&sale, &scalper).await <= 3);
    let paid = sale.pay(&order, amount).await;
    assert_eq!(body(&paid)["status"], "PAID");

    // A new admission: two more seats would make four. Every one of the rush is refused.
    let token = readmit(&sale, &scalper).await;
    let before = sale.snapshot().await;
    for answer in rush(token.clone(), 1, 2).await {
        assert_eq!(
            (answer.status(), error_code(&answer).as_str()),
            (StatusCode::CONFLICT, "ticket_limit_reached")
        );
    }
    assert_eq!(
        sale.snapshot().await,
        before,
        "refused holds changed something"
    );

    // One more seat fits: of eight single-seat holds at once, one wins.
    let answers = rush(token, 17, 1).await;
    let won: Vec<&Response<Body>> = answers
        .iter()
        .filter(|answer| answer.status() == StatusCode::CREATED)
        .collect();
    assert_eq!(won.len(), 1);
    assert_eq!(seats_bought_or_held(&sale, &scalper).await, 3);
    let (order, amount) = held(won[0]);
    assert_eq!(body(&sale.pay(&order, amount).await)["status"], "PAID");

    // At the limit: even one seat is refused, and the count stored is the seats paid for.
    let token = readmit(&sale, &scalper).await;
    let refused = sale.hold(&scalper, &token, &[seat(24)]).await;
    assert_eq!(error_code(&refused), "ticket_limit_reached");
    let counts = records(&sale, "TICKETS#").await;
    assert_eq!(counts.len(), 1);
    assert_eq!(counts[0]["paid_seats"], 3);
    assert_eq!(seats_bought_or_held(&sale, &scalper).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_late_payment_cannot_pass_the_ticket_limit_either() {
    logs();
    let sale = OnSale::with_seats(8).await;
    limit_tickets(&sale, 2).await;
    let alice = customer(1);
    let token = sale.admit(std::slice::from_ref(&alice)).await.remove(0);

    // Two seats held, the hold lapses unpaid; two other seats held after it (the lapsed hold
    // no longer counts); then both are paid.
    let (first, amount) = held(&sale.hold(&alice, &token, &[seat(1), seat(2)]).await);
    sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    let token = readmit(&sale, &alice).await;
    let (second, second_amount) = held(&sale.hold(&alice, &token, &[seat(3), seat(4)]).await);
    // The lapsed first order is paid late (its seats were still free): 2 tickets bought.
    assert_eq!(body(&sale.pay(&first, amount).await)["status"], "PAID");
    // The second order, within its hold, would make 4.
    let over = sale.pay(&second, second_amount).await;
    assert_eq!(
        (over.status(), body(&over)["status"].clone()),
        (StatusCode::OK, json!("REFUND_REQUIRED"))
    );

    let orders = sale.orders().await;
    assert_eq!(orders[&second]["status"], "REFUND_REQUIRED");
    let seats = sale.seats().await;
    for n in [3, 4] {
        assert_eq!(
            seats[seat(n).as_str()]["status"],
            "AVAILABLE",
            "a refunded order's seats go back on sale"
        );
    }
    assert_eq!(seats_bought_or_held(&sale, &alice).await, 2);
    let refunds: Vec<Value> = sale
        .outbox()
        .await
        .into_iter()
        .filter(|event| event["type"] == "refund_required")
        .map(|event| event["orderId"].clone())
        .collect();
    assert_eq!(refunds, vec![json!(second)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holds_made_before_a_limit_was_set_cannot_be_paid_past_it() {
    logs();
    let sale = OnSale::with_seats(8).await;
    let scalper = customer(9);
    // No limit yet: three holds of two seats, each left to lapse before the next.
    let mut lapsed = Vec::new();
    for n in 0..3 {
        let token = readmit(&sale, &scalper).await;
        lapsed.push(held(
            &sale
                .hold(&scalper, &token, &[seat(2 * n + 1), seat(2 * n + 2)])
                .await,
        ));
        sale.clock.advance(HOLD_DURATION + Duration::from_secs(1));
    }
    // The operator sets a limit of 2; the scalper pays all three late.
    limit_tickets(&sale, 2).await;
    let mut statuses = Vec::new();
    for (order, amount) in &lapsed {
        statuses.push(body(&sale.pay(order, *amount).await)["status"].clone());
    }
    assert_eq!(
        statuses,
        vec![
            json!("PAID"),
            json!("REFUND_REQUIRED"),
            json!("REFUND_REQUIRED")
        ]
    );
    assert_eq!(seats_bought_or_held(&sale, &scalper).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_larger_than_the_limit_is_refused_before_any_write() {
    logs();
    let sale = OnSale::with_seats(4).await;
    limit_tickets(&sale, 2).await;
    let alice = customer(1);
    let token = sale.admit(std::slice::from_ref(&alice)).await.remove(0);
    let before = sale.snapshot().await;
    let refused = sale
        .hold(&alice, &token, &[seat(1), seat(2), seat(3)])
        .await;
    assert_eq!(
        (refused.status(), error_code(&refused).as_str()),
        (StatusCode::CONFLICT, "ticket_limit_reached")
    );
    assert_eq!(sale.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_required_claim_nobody_joins() {
    logs();
    let sale = OnSale::with_seats(1).await;
    let api = lineup::application::queue_api::QueueApi {
        required_claim: Some("email_verified".to_owned()),
        ..sale.queue_api.clone()
    };
    let bot = customer(13);
    let joining = |claim: Option<&str>| {
        let mut event = lineup_tests::route(
            &lineup_tests::sample("join.json"),
            &[("eventId", sale.event.as_str())],
            Some(&bot),
        );
        let claims = &mut event["requestContext"]["authorizer"]["jwt"]["claims"];
        match claim {
            Some(value) => claims["email_verified"] = value.into(),
            None => {
                claims
                    .as_object_mut()
                    .expect("claims")
                    .remove("email_verified");
            }
        }
        lineup_tests::request(&event)
    };
    let before = sale.full_snapshot().await;
    for claim in [None, Some("false"), Some("TRUE"), Some("")] {
        let refused = lineup::application::join::handle(&api, joining(claim)).await;
        assert_eq!(
            (refused.status(), error_code(&refused).as_str()),
            (StatusCode::FORBIDDEN, "claim_required"),
            "{claim:?}"
        );
    }
    assert_eq!(
        sale.full_snapshot().await,
        before,
        "a refused join queued someone"
    );
    let joined = lineup::application::join::handle(&api, joining(Some("true"))).await;
    assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));
}

// ---------------------------------------------------------------- tokens, ids, bodies
// (below this line: forged, expired, cross-event and revoked tokens; another customer's queue id
// or order; oversized and malformed bodies; holds without admission)

/// Forged, expired, cross-event, another customer's and revoked access tokens; another
/// customer's queue id or order; oversized and malformed bodies; callers without a `sub`. Each
/// attack is played on an on-sale with honest customers in every state, gets its 4xx, and
/// leaves everything stored (the tables and every Redis key of the event) as it was. The honest
/// state is asserted before the attacks too, and the honest request an attack imitates is shown
/// to succeed (after the attacks, or for expiry just before the boundary), so a refusal is the
/// protection's doing, not a broken request's.
mod tokens_ids_bodies {
    use std::time::Duration;

    use http::StatusCode;
    use lambda_http::{Body, Response};
    use lineup::application::ports::queue::WaitingLine;
    use lineup::application::{confirm, hold, join, poll};
    use lineup::domain::clock::Clock;
    use lineup::domain::ids::{CustomerId, EventId};
    use lineup::domain::signing::SigningKey;
    use lineup_tests::aws::unique;
    use lineup_tests::on_sale::{payment_body, seat, webhook_secret, OnSale};
    use lineup_tests::{
        body, customer, error_code, event_state, logs, open_event, request, route, sample,
        ticket_at,
    };
    use serde_json::{json, Value};

    /// An on-sale of 8 seats with honest customers in each state a customer can be in.
    struct Honest {
        sale: OnSale,
        /// Admitted, holding A-001.
        alice: CustomerId,
        alice_token: String,
        alice_order: String,
        /// Admitted, nothing held yet.
        bob: CustomerId,
        bob_token: String,
        /// Paid for A-002 (paying ended the admission).
        carol: CustomerId,
        carol_token: String,
        carol_order: String,
        /// Waiting in the queue, not admitted.
        dave: CustomerId,
        /// The attacker: admitted, nothing held.
        mallory: CustomerId,
        mallory_token: String,
    }

    impl Honest {
        async fn new() -> Self {
            logs();
            let sale = OnSale::with_seats(8).await;
            let (alice, bob, carol, dave, mallory) = (
                customer(1),
                customer(2),
                customer(3),
                customer(4),
                customer(666),
            );
            let tokens = sale
                .admit(&[alice.clone(), bob.clone(), carol.clone(), mallory.clone()])
                .await;
            let [alice_token, bob_token, carol_token, mallory_token] =
                <[String; 4]>::try_from(tokens).expect("four tokens");
            let alice_order = ordered(&sale.hold(&alice, &alice_token, &[seat(1)]).await);
            let carol_held = sale.hold(&carol, &carol_token, &[seat(2)]).await;
            let carol_order = ordered(&carol_held);
            let paid = sale
                .pay(&carol_order, body(&carol_held)["amount"].as_i64().unwrap())
                .await;
            assert_eq!(body(&paid)["status"], "PAID", "{}", body(&paid));
            // Dave joins after the admitter's tick, and no tick follows: he stays waiting.
            sale.queue
                .join(&sale.event, &dave, sale.clock.now())
                .await
                .expect("join");

            let honest = Self {
                sale,
                alice,
                alice_token,
                alice_order,
                bob,
                bob_token,
                carol,
                carol_token,
                carol_order,
                dave,
                mallory,
                mallory_token,
            };
            honest.assert_honest_state().await;
            honest
        }

        /// The state the attacks must not move: checked before them (so an attack that
        /// "succeeded" silently would show as a change) and after.
        async fn assert_honest_state(&self) {
            let sale = &self.sale;
            let orders = sale.orders().await;
            assert_eq!(orders.len(), 2, "only Alice's and Carol's orders");
            assert_eq!(orders[&self.alice_order]["status"], "PENDING");
            assert_eq!(orders[&self.carol_order]["status"], "PAID");
            let seats = sale.seats().await;
            let status = |n: usize| seats[seat(n).as_str()]["status"].clone();
            assert_eq!(
                (1..=8).map(status).collect::<Vec<_>>(),
                [
                    json!("HELD"),
                    json!("SOLD"),
                    json!("AVAILABLE"),
                    json!("AVAILABLE"),
                    json!("AVAILABLE"),
                    json!("AVAILABLE"),
                    json!("AVAILABLE"),
                    json!("AVAILABLE"),
                ]
            );
            for (who, admitted) in [
                (&self.alice, true),
                (&self.bob, true),
                (&self.carol, false),
                (&self.dave, false),
                (&self.mallory, true),
            ] {
                assert_eq!(sale.is_admitted(who).await, admitted, "{who:?} admitted");
            }
            let waiting = sale
                .queue
                .standing(&sale.event, &self.dave, sale.clock.now())
                .await
                .expect("standing");
            assert!(
                matches!(
                    waiting,
                    Some(lineup::application::ports::queue::Standing::Waiting { .. })
                ),
                "Dave waits: {waiting:?}"
            );
        }

        fn queue_id(&self, who: &CustomerId) -> String {
            queue_id(&self.sale.event, who)
        }
    }

    /// A valid ticket of `who` in `event`, stating no number (their place is what Redis holds),
    /// the same each time it is asked for.
    fn queue_id(event: &EventId, who: &CustomerId) -> String {
        let issued =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        ticket_at(event, who, None, issued)
    }

    /// The order id of a 201 hold answer.
    fn ordered(response: &Response<Body>) -> String {
        assert_eq!(response.status(), StatusCode::CREATED, "{}", body(response));
        body(response)["orderId"]
            .as_str()
            .expect("orderId")
            .to_owned()
    }

    /// One hostile request and the refusal it must get.
    struct Attack {
        name: String,
        event: Value,
        status: StatusCode,
        code: &'static str,
    }

    fn attack(
        name: impl Into<String>,
        event: Value,
        status: StatusCode,
        code: &'static str,
    ) -> Attack {
        Attack {
            name: name.into(),
            event,
            status,
            code,
        }
    }

    /// Hands an API Gateway event to the function that serves its route, as `template.yaml`
    /// wires them.
    async fn send(sale: &OnSale, event: &Value) -> Response<Body> {
        let route_key = event["routeKey"].as_str().expect("routeKey");
        let request = request(event);
        match route_key {
            "POST /events/{eventId}/queue" => join::handle(&sale.queue_api, request).await,
            "GET /events/{eventId}/queue/{queueId}"
            | "DELETE /events/{eventId}/queue/{queueId}" => {
                poll::handle(&sale.queue_api, request).await
            }
            "POST /orders/{orderId}/confirm" => confirm::handle(&sale.confirm_api, request).await,
            "GET /events/{eventId}/seats"
            | "GET /events/{eventId}/layout"
            | "GET /events/{eventId}/layout/{version}" => {
                lineup::application::status::handle(
                    &lineup_tests::public_api(sale.records.clone()),
                    request,
                )
                .await
            }
            "POST /events/{eventId}/holds" | "GET /orders/{orderId}" => {
                hold::handle(&sale.hold_api, request).await
            }
            "DELETE /events/{eventId}/holds/{orderId}" | "POST /orders/{orderId}/payment" => {
                lineup::application::checkout::handle(&sale.checkout_api, request).await
            }
            other => panic!("no function serves {other}"),
        }
    }

    /// Everything stored that the attacks must leave alone: each on-sale's tables and Redis
    /// keys, and the Redis keys of events with no tables of their own.
    async fn stored(sales: &[&OnSale], events: &[&EventId]) -> Vec<Value> {
        let mut state = Vec::new();
        for sale in sales {
            state.push(sale.full_snapshot().await);
        }
        for event in events {
            state.push(event_state(event).await);
        }
        state
    }

    /// Plays each attack against `target`'s functions: each must get its status and JSON error
    /// code, and change nothing in `sales` or `events`. Every attack is played, and the test
    /// fails at the end listing each one that was not refused as it should be. Returns the
    /// answers, by attack name.
    async fn play(
        target: &OnSale,
        sales: &[&OnSale],
        events: &[&EventId],
        attacks: Vec<Attack>,
    ) -> Vec<(String, Response<Body>)> {
        let initial = stored(sales, events).await;
        let mut before = initial.clone();
        let mut failures = Vec::new();
        let mut answers = Vec::new();
        for attack in attacks {
            let response = send(target, &attack.event).await;
            let after = stored(sales, events).await;
            let answer = body(&response);
            let code = answer["error"]["code"].as_str().unwrap_or_default();
            if (response.status(), code) != (attack.status, attack.code) {
                failures.push(format!(
                    "{}: expected {} {}, got {} {answer}",
                    attack.name,
                    attack.status.as_u16(),
                    attack.code,
                    response.status().as_u16(),
                ));
            } else {
                // The contract's error shape: a message too, as JSON.
                error_code(&response);
                assert_eq!(
                    response.headers().get(http::header::CONTENT_TYPE).unwrap(),
                    "application/json",
                    "{}",
                    attack.name
                );
            }
            if after != before {
                failures.push(format!("{}: changed what is stored", attack.name));
            }
            before = after;
            answers.push((attack.name, response));
        }
        assert!(
            failures.is_empty(),
            "{} attack(s) not refused as they should be:\n{}",
            failures.len(),
            failures.join("\n")
        );
        assert!(
            stored(sales, events).await == initial,
            "the attacks changed what is stored"
        );
        answers
    }

    /// `sample` pointed at these path parameters and caller (`None`: no JWT at all).
    fn call(sample_name: &str, parameters: &[(&str, &str)], caller: Option<&CustomerId>) -> Value {
        route(&sample(sample_name), parameters, caller)
    }

    fn with_body(mut event: Value, text: impl Into<String>) -> Value {
        event["body"] = text.into().into();
        event
    }

    /// The request with this `X-Queue-Token` (`None`: without the header).
    fn with_token(mut event: Value, token: Option<&str>) -> Value {
        let headers = event["headers"].as_object_mut().expect("headers");
        match token {
            Some(token) => headers.insert("x-queue-token".into(), token.into()),
            None => headers.remove("x-queue-token"),
        };
        event
    }

    /// A JWT whose claims have no `sub` (the authorizer passed it; it names nobody).
    fn without_sub(mut event: Value) -> Value {
        event["requestContext"]["authorizer"]["jwt"]["claims"]
            .as_object_mut()
            .expect("JWT claims")
            .remove("sub")
            .expect("the sample names a caller");
        event
    }

    /// `POST /events/{e}/holds` by `caller` with this token and body.
    fn hold(
        event: &EventId,
        caller: Option<&CustomerId>,
        token: Option<&str>,
        text: impl Into<String>,
    ) -> Value {
        with_body(
            with_token(
                call("hold.json", &[("eventId", event.as_str())], caller),
                token,
            ),
            text,
        )
    }

    /// The payment provider's webhook for `order` with this body, signed correctly (the
    /// signature covers exactly `text`), under a fresh idempotency key.
    fn signed_webhook(sale: &OnSale, order: &str, text: &str) -> Value {
        let mut event = call("confirm.json", &[("orderId", order)], None);
        event["body"] = text.into();
        event["headers"]["idempotency-key"] = unique("key").into();
        event["headers"]["lineup-signature"] = webhook_secret()
            .sign(sale.clock.now(), text.as_bytes())
            .into();
        event
    }

    fn seats_body(seats: &[&str]) -> String {
        json!({ "seatIds": seats }).to_string()
    }

    const BASE64URL: &[u8; 64] =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    /// base64url without padding, as tokens carry their claims.
    fn base64url_encode(bytes: &[u8]) -> String {
        let mut text = String::new();
        for chunk in bytes.chunks(3) {
            let word = chunk
                .iter()
                .enumerate()
                .fold(0_u32, |word, (i, &b)| word | u32::from(b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                text.push(BASE64URL[(word >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        text
    }

    fn base64url_decode(text: &str) -> Vec<u8> {
        let mut bytes = Vec::new();
        for chunk in text.as_bytes().chunks(4) {
            let word = chunk.iter().enumerate().fold(0_u32, |word, (i, &c)| {
                let sextet = BASE64URL
                    .iter()
                    .position(|&a| a == c)
                    .expect("a base64url character");
                word | (sextet as u32) << (18 - 6 * i)
            });
            for i in 0..chunk.len() - 1 {
                bytes.push((word >> (16 - 8 * i)) as u8);
            }
        }
        bytes
    }

    /// A token's claims (the segment before the signature), as JSON.
    fn claims(token: &str) -> Value {
        let segments: Vec<&str> = token.split('.').collect();
        let payload = segments[segments.len() - 2];
        serde_json::from_slice(&base64url_decode(payload)).expect("JSON claims")
    }

    /// The token with its claims segment replaced by `claims`, serialised by `encode`; the
    /// signature and everything else kept.
    fn reclaimed(token: &str, claims: &Value, encode: fn(&Value) -> String) -> String {
        let mut segments: Vec<String> = token.split('.').map(str::to_owned).collect();
        let at = segments.len() - 2;
        segments[at] = base64url_encode(encode(claims).as_bytes());
        segments.join(".")
    }

    /// The token with one character of segment `index` changed (to another of the base64url
    /// alphabet, so the token stays well-formed).
    fn altered(token: &str, index: usize) -> String {
        let mut segments: Vec<String> = token.split('.').map(str::to_owned).collect();
        let first = segments[index].remove(0);
        let swapped = if first == 'A' { 'B' } else { 'A' };
        segments[index].insert(0, swapped);
        segments.join(".")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_forged_token_opens_nothing() {
        let honest = Honest::new().await;
        let (sale, bob) = (&honest.sale, &honest.bob);
        let event = &sale.event;
        let token = honest.bob_token.as_str();
        let wanted = seats_body(&["A-003"]);
        let bobs = |token: &str| hold(event, Some(bob), Some(token), wanted.clone());
        let denied = StatusCode::FORBIDDEN;

        let mut attacks = Vec::new();
        for index in 0..token.split('.').count() {
            attacks.push(attack(
                format!("segment {index} of Bob's token altered"),
                bobs(&altered(token, index)),
                denied,
                "access_denied",
            ));
        }
        let bobs_claims = claims(token);
        // The same claims in other bytes: only the signature tells them apart.
        attacks.push(attack(
            "Bob's claims re-encoded unchanged (pretty-printed)",
            bobs(&reclaimed(token, &bobs_claims, |c| {
                serde_json::to_string_pretty(c).unwrap()
            })),
            denied,
            "access_denied",
        ));
        let mut longer = bobs_claims.clone();
        longer["x"] = json!(longer["x"].as_u64().unwrap() + 86_400_000);
        attacks.push(attack(
            "Bob's claims re-encoded with a made-up expiry a day later",
            bobs(&reclaimed(token, &longer, |c| c.to_string())),
            denied,
            "access_denied",
        ));
        // Alice's token rewritten to name Bob: with the same admission time, its expiry is
        // Bob's, so only the signature stops it.
        let mut renamed = claims(&honest.alice_token);
        renamed["c"] = json!(bob.as_str());
        renamed["q"] = json!(honest.queue_id(bob));
        attacks.push(attack(
            "Alice's token re-encoded to name Bob",
            bobs(&reclaimed(&honest.alice_token, &renamed, |c| c.to_string())),
            denied,
            "access_denied",
        ));
        // Well-formed claims, signed, but with a key the server never had.
        let attackers_key = SigningKey::new("an attacker's key, never the server's one").unwrap();
        let expires_at =
            lineup::domain::clock::from_unix_millis(bobs_claims["x"].as_u64().expect("expiry"));
        attacks.push(attack(
            "a token for Bob signed with another key",
            bobs(&lineup::domain::access_token::issue(
                &attackers_key,
                event,
                bob,
                expires_at,
            )),
            denied,
            "access_denied",
        ));
        play(sale, &[sale], &[], attacks).await;
        honest.assert_honest_state().await;

        // Bob's own token, untouched, holds the very seat.
        ordered(&send(sale, &bobs(token)).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn an_expired_token_opens_nothing() {
        let honest = Honest::new().await;
        let (sale, bob) = (&honest.sale, &honest.bob);
        let expires_at = claims(&honest.bob_token)["x"].as_u64().expect("expiry");
        let now = lineup::domain::clock::unix_millis(sale.clock.now());
        assert_eq!(expires_at - now, 600_000, "the 10-minute session");

        let bobs_hold = hold(
            &sale.event,
            Some(bob),
            Some(&honest.bob_token),
            seats_body(&["A-003"]),
        );
        // A millisecond before the end, a token of the same expiry (Mallory's) still holds.
        assert_eq!(claims(&honest.mallory_token)["x"], json!(expires_at));
        sale.clock
            .advance(Duration::from_millis(expires_at - now - 1));
        let mallorys = hold(
            &sale.event,
            Some(&honest.mallory),
            Some(&honest.mallory_token),
            seats_body(&["A-004"]),
        );
        ordered(&send(sale, &mallorys).await);

        // At the admission's expiry, and a minute after it.
        for (step, at) in [
            (Duration::from_millis(1), "at"),
            (Duration::from_secs(60), "after"),
        ] {
            sale.clock.advance(step);
            play(
                sale,
                &[sale],
                &[],
                vec![attack(
                    format!("Bob's token {at} its expiry"),
                    bobs_hold.clone(),
                    StatusCode::FORBIDDEN,
                    "access_denied",
                )],
            )
            .await;
            // Polling does not hand out a fresh one.
            let polled = send(
                sale,
                &call(
                    "poll.json",
                    &[
                        ("eventId", sale.event.as_str()),
                        ("queueId", &honest.queue_id(bob)),
                    ],
                    Some(bob),
                ),
            )
            .await;
            assert_eq!(
                body(&polled),
                json!({ "status": "expired", "queueId": honest.queue_id(bob) })
            );
        }
        assert!(
            sale.orders()
                .await
                .values()
                .all(|order| order["customer_id"] != bob.as_str()),
            "Bob held nothing"
        );
        assert_eq!(sale.seats().await["A-003"]["status"], "AVAILABLE");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_token_for_another_event_opens_nothing() {
        logs();
        let (first, second) = (OnSale::with_seats(4).await, OnSale::with_seats(4).await);
        // The same instant on both: Bob's two admissions end at the same millisecond, so the
        // second event's active set would accept the first event's expiry; only the token's
        // event claim tells them apart.
        let gap = second
            .clock
            .now()
            .duration_since(first.clock.now())
            .unwrap();
        first.clock.advance(gap);
        let bob = customer(2);
        let first_token = first.admit(std::slice::from_ref(&bob)).await.remove(0);
        let second_token = second.admit(std::slice::from_ref(&bob)).await.remove(0);
        assert_eq!(
            claims(&first_token)["x"],
            claims(&second_token)["x"],
            "the same expiry"
        );

        let on_second = |token: &str| {
            hold(
                &second.event,
                Some(&bob),
                Some(token),
                seats_body(&["A-001"]),
            )
        };
        play(
            &second,
            &[&first, &second],
            &[],
            vec![attack(
                "the first event's token on the second event's hold route",
                on_second(&first_token),
                StatusCode::FORBIDDEN,
                "access_denied",
            )],
        )
        .await;
        assert!(second.orders().await.is_empty() && first.orders().await.is_empty());

        // The second event's own token holds the seat there.
        ordered(&send(&second, &on_second(&second_token)).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn another_customers_token_opens_nothing() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (bob, mallory, dave) = (&honest.bob, &honest.mallory, &honest.dave);
        let frank = customer(7); // never joined
        let wanted = seats_body(&["A-003"]);
        let presenting = |caller: &CustomerId, token: &str| {
            hold(&sale.event, Some(caller), Some(token), wanted.clone())
        };
        // Mallory's admission ends at the same millisecond as Bob's: with Bob's token, only
        // the token's customer claim stops her.
        assert_eq!(
            claims(&honest.bob_token)["x"],
            claims(&honest.mallory_token)["x"]
        );
        let denied =
            |name: &str, event| attack(name, event, StatusCode::FORBIDDEN, "access_denied");
        play(
            sale,
            &[sale],
            &[],
            vec![
                denied(
                    "Mallory (admitted) presents Bob's token",
                    presenting(mallory, &honest.bob_token),
                ),
                denied(
                    "Mallory presents Alice's token",
                    presenting(mallory, &honest.alice_token),
                ),
                denied(
                    "Dave (waiting) presents Bob's token",
                    presenting(dave, &honest.bob_token),
                ),
                denied(
                    "Frank (never joined) presents Bob's token",
                    presenting(&frank, &honest.bob_token),
                ),
            ],
        )
        .await;
        honest.assert_honest_state().await;

        // The token works for its owner, and Mallory's own for her.
        ordered(&send(sale, &presenting(bob, &honest.bob_token)).await);
        ordered(
            &send(
                sale,
                &hold(
                    &sale.event,
                    Some(mallory),
                    Some(&honest.mallory_token),
                    seats_body(&["A-004"]),
                ),
            )
            .await,
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_revoked_token_opens_nothing() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (bob, carol) = (&honest.bob, &honest.carol);
        let event = &sale.event;

        // Bob leaves through the API (DELETE on his queue entry).
        let left = send(
            sale,
            &call(
                "leave.json",
                &[
                    ("eventId", event.as_str()),
                    ("queueId", &honest.queue_id(bob)),
                ],
                Some(bob),
            ),
        )
        .await;
        assert_eq!(left.status(), StatusCode::NO_CONTENT);
        assert!(
            !sale.is_admitted(bob).await,
            "leaving ended Bob's admission"
        );
        let denied =
            |name: &str, event| attack(name, event, StatusCode::FORBIDDEN, "access_denied");
        play(
            sale,
            &[sale],
            &[],
            vec![
                denied(
                    "Bob's token after he left the queue",
                    hold(
                        event,
                        Some(bob),
                        Some(&honest.bob_token),
                        seats_body(&["A-003"]),
                    ),
                ),
                denied(
                    "Carol's token after she paid",
                    hold(
                        event,
                        Some(carol),
                        Some(&honest.carol_token),
                        seats_body(&["A-003"]),
                    ),
                ),
            ],
        )
        .await;

        // Bob queues again and is admitted a second later: a new admission, a new token; the
        // old one stays revoked.
        sale.clock.advance(Duration::from_secs(1));
        let fresh = sale.admit(std::slice::from_ref(bob)).await.remove(0);
        assert_ne!(claims(&fresh)["x"], claims(&honest.bob_token)["x"]);
        play(
            sale,
            &[sale],
            &[],
            vec![denied(
                "Bob's old token after he was admitted again",
                hold(
                    event,
                    Some(bob),
                    Some(&honest.bob_token),
                    seats_body(&["A-003"]),
                ),
            )],
        )
        .await;
        assert_eq!(sale.orders().await.len(), 2, "no order came of it");
        ordered(
            &send(
                sale,
                &hold(event, Some(bob), Some(&fresh), seats_body(&["A-003"])),
            )
            .await,
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn garbage_empty_huge_or_missing_tokens_open_nothing() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (bob, dave) = (&honest.bob, &honest.dave);
        let event = &sale.event;
        let token = honest.bob_token.as_str();
        let wanted = seats_body(&["A-003"]);
        let bobs = |token: Option<&str>| hold(event, Some(bob), token, wanted.clone());
        let (payload, signature) = {
            let segments: Vec<&str> = token.split('.').collect();
            (segments[segments.len() - 2], segments[segments.len() - 1])
        };
        let denied =
            |name: &str, event| attack(name, event, StatusCode::FORBIDDEN, "access_denied");
        let huge = "A".repeat(10 * 1024);
        let huge_claims = format!("v1.{}.{signature}", "A".repeat(10 * 1024));
        let dots = ".".repeat(10 * 1024);
        let trailing = format!("{token}.");
        let bearer = format!("Bearer {token}");
        let unversioned = format!("{payload}.{signature}");
        let mut attacks = vec![
            denied(
                "no token (events/hold-no-token.json)",
                with_body(
                    call(
                        "hold-no-token.json",
                        &[("eventId", event.as_str())],
                        Some(bob),
                    ),
                    wanted.clone(),
                ),
            ),
            denied(
                "a waiting customer without a token",
                hold(event, Some(dave), None, wanted.clone()),
            ),
        ];
        for (name, garbage) in [
            ("an empty token", ""),
            ("a blank token", " "),
            ("garbage", "garbage"),
            (
                "the sample's placeholder",
                "v1.PASTE-THE-accessToken-FROM-POLL.x",
            ),
            ("only dots", "..."),
            ("a 10 KB token", huge.as_str()),
            ("a 10 KB claims segment", huge_claims.as_str()),
            ("10 KB of dots", dots.as_str()),
            ("Bob's token with a trailing dot", trailing.as_str()),
            ("Bob's token behind 'Bearer '", bearer.as_str()),
            ("Bob's token without its version", unversioned.as_str()),
        ] {
            attacks.push(denied(name, bobs(Some(garbage))));
        }
        for (name, event) in [
            ("no JWT and no token", bobs(None)),
            (
                "no JWT, with Bob's token",
                hold(event, None, Some(token), wanted.clone()),
            ),
        ] {
            let mut event = event;
            if let Some(context) = event["requestContext"].as_object_mut() {
                context.remove("authorizer");
            }
            attacks.push(attack(
                name,
                event,
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
            ));
        }
        play(sale, &[sale], &[], attacks).await;
        honest.assert_honest_state().await;

        ordered(&send(sale, &bobs(Some(token))).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn another_customers_queue_id_is_answered_as_an_unknown_one() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (bob, dave, mallory) = (&honest.bob, &honest.dave, &honest.mallory);
        let event = &sale.event;
        // A second event Dave also waits in.
        let other = open_event(&sale.queue, sale.clock.now()).await;
        sale.queue
            .join(&other, dave, sale.clock.now())
            .await
            .expect("join");

        let entry = |sample_name: &str, event: &EventId, caller: &CustomerId, id: &str| {
            call(
                sample_name,
                &[("eventId", event.as_str()), ("queueId", id)],
                Some(caller),
            )
        };
        let never_joined = queue_id(event, &customer(7));
        // Ticket-shaped, with a MAC nobody signed.
        let made_up = "1.1700000000000.AAAAAAAAAAAAAAAAAAAAAA";
        let not_found = |name: String, event| {
            attack(name, event, StatusCode::NOT_FOUND, "queue_entry_not_found")
        };
        let mut attacks = Vec::new();
        for (verb, sample_name) in [("polls", "poll.json"), ("deletes", "leave.json")] {
            for (whose, id) in [
                ("Dave's (waiting)", honest.queue_id(dave)),
                ("Bob's (admitted)", honest.queue_id(bob)),
                ("Carol's (paid)", honest.queue_id(&honest.carol)),
                ("a never-joined customer's", never_joined.clone()),
                ("a made-up", made_up.to_owned()),
            ] {
                attacks.push(not_found(
                    format!("Mallory {verb} {whose} queue id"),
                    entry(sample_name, event, mallory, &id),
                ));
            }
            attacks.push(not_found(
                format!("Dave {verb} his first event's queue id on the second event"),
                entry(sample_name, &other, dave, &honest.queue_id(dave)),
            ));
            // Moving to the front by editing the number (or the issue time) a ticket states.
            let own = ticket_at(
                event,
                dave,
                Some(900),
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
            );
            let mac = own.rsplit('.').next().unwrap().to_owned();
            for (what, forged) in [
                ("number", format!("1.1700000000000000.{mac}")),
                ("issue time", format!("900.1600000000000.{mac}")),
            ] {
                attacks.push(not_found(
                    format!("Dave {verb} his ticket with its {what} edited"),
                    entry(sample_name, event, dave, &forged),
                ));
            }
            for (what, id) in [
                ("a short", "Ad8IaGGueFqQnb8dd7Fvg".to_owned()),
                ("a long", format!("{}A", honest.queue_id(dave))),
                ("a punctuated", "Ad8IaGGueFqQnb8dd7Fvg!".to_owned()),
                ("a slashed", "Ad8IaGGueFqQnb8dd7F%2F".to_owned()),
                ("a 10 KB", "A".repeat(10 * 1024)),
            ] {
                attacks.push(attack(
                    format!("Mallory {verb} {what} queue id"),
                    entry(sample_name, event, mallory, &id),
                    StatusCode::BAD_REQUEST,
                    "invalid_queue_id",
                ));
            }
        }
        attacks.push(attack(
            "the sample's malformed queue id",
            call(
                "poll-malformed-queue-id.json",
                &[("eventId", event.as_str())],
                Some(mallory),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_queue_id",
        ));
        attacks.push(not_found(
            "the sample's foreign queue id".to_owned(),
            call(
                "poll-foreign-queue-id.json",
                &[
                    ("eventId", event.as_str()),
                    ("queueId", &honest.queue_id(dave)),
                ],
                Some(mallory),
            ),
        ));
        let answers = play(sale, &[sale], &[&other], attacks).await;
        honest.assert_honest_state().await;

        // Someone else's id and an unknown one get the very same answer: ids reveal nothing.
        let answer = |name: &str| {
            let (_, response) = answers
                .iter()
                .find(|(attack, _)| attack == name)
                .unwrap_or_else(|| panic!("{name}"));
            (
                response.status(),
                body(response),
                response.headers().clone(),
            )
        };
        for verb in ["polls", "deletes"] {
            let unknown = answer(&format!("Mallory {verb} a made-up queue id"));
            for whose in [
                "Dave's (waiting)",
                "Bob's (admitted)",
                "Carol's (paid)",
                "a never-joined customer's",
            ] {
                assert_eq!(answer(&format!("Mallory {verb} {whose} queue id")), unknown);
            }
        }

        // Dave's own id: his standing, and leaving works.
        let own = send(
            sale,
            &entry("poll.json", event, dave, &honest.queue_id(dave)),
        )
        .await;
        assert_eq!(body(&own)["status"], "waiting", "{}", body(&own));
        let left = send(
            sale,
            &entry("leave.json", event, dave, &honest.queue_id(dave)),
        )
        .await;
        assert_eq!(left.status(), StatusCode::NO_CONTENT);
        let leave_again = send(
            sale,
            &entry("leave.json", event, dave, &honest.queue_id(dave)),
        )
        .await;
        assert_eq!(error_code(&leave_again), "queue_entry_not_found");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn another_customers_order_is_answered_as_an_unknown_one() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (alice, mallory) = (&honest.alice, &honest.mallory);
        let event = sale.event.as_str();
        let other = open_event(&sale.queue, sale.clock.now()).await;
        let made_up = uuid::Uuid::new_v4().to_string();
        let status_of = |caller: &CustomerId, order: &str| {
            call("order.json", &[("orderId", order)], Some(caller))
        };
        let release = |caller: &CustomerId, event: &str, order: &str| {
            call(
                "release.json",
                &[("eventId", event), ("orderId", order)],
                Some(caller),
            )
        };
        let not_found = |name: &str, event| attack(name, event, StatusCode::NOT_FOUND, "not_found");
        let attacks = vec![
            not_found(
                "Mallory reads Alice's pending order",
                status_of(mallory, &honest.alice_order),
            ),
            not_found(
                "Mallory reads Carol's paid order",
                status_of(mallory, &honest.carol_order),
            ),
            not_found(
                "Mallory reads Alice's order (events/order-foreign.json)",
                route(
                    &sample("order-foreign.json"),
                    &[("orderId", &honest.alice_order)],
                    Some(mallory),
                ),
            ),
            not_found(
                "Mallory reads a made-up order",
                status_of(mallory, &made_up),
            ),
            not_found(
                "Mallory releases Alice's hold",
                release(mallory, event, &honest.alice_order),
            ),
            not_found(
                "Mallory releases Carol's paid order",
                release(mallory, event, &honest.carol_order),
            ),
            not_found(
                "Mallory releases a made-up order",
                release(mallory, event, &made_up),
            ),
            not_found(
                "Alice releases her hold through another event's path",
                release(alice, other.as_str(), &honest.alice_order),
            ),
            attack(
                "a malformed order id read",
                status_of(mallory, "9b2f6c1e-3d4a-4f8b-a6c2"),
                StatusCode::BAD_REQUEST,
                "invalid_order_id",
            ),
            attack(
                "a malformed order id released",
                release(mallory, event, "../../orders/x"),
                StatusCode::BAD_REQUEST,
                "invalid_order_id",
            ),
        ];
        let answers = play(sale, &[sale], &[&other], attacks).await;
        honest.assert_honest_state().await;
        let answer = |name: &str| {
            let (_, response) = answers.iter().find(|(attack, _)| attack == name).unwrap();
            (response.status(), body(response))
        };
        assert_eq!(
            answer("Mallory reads Alice's pending order"),
            answer("Mallory reads a made-up order")
        );
        assert_eq!(
            answer("Mallory releases Carol's paid order"),
            answer("Mallory releases a made-up order"),
            "not 409 order_not_pending: that would say the order exists"
        );

        // Alice reads and releases her own order on its own path.
        let own = send(sale, &status_of(alice, &honest.alice_order)).await;
        assert_eq!(body(&own)["status"], "PENDING");
        let released = send(sale, &release(alice, event, &honest.alice_order)).await;
        assert_eq!(released.status(), StatusCode::NO_CONTENT);
        assert_eq!(sale.seats().await["A-001"]["status"], "AVAILABLE");
    }

    /// `text` followed by spaces up to `size` bytes: still the same JSON, only bigger.
    fn padded(text: &str, size: usize) -> String {
        format!("{text}{}", " ".repeat(size.saturating_sub(text.len())))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn oversized_bodies_are_refused_whole() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (alice, bob, dave) = (&honest.alice, &honest.bob, &honest.dave);
        let event = sale.event.as_str();
        let frank = customer(7); // about to join
        let kb = 1024;

        // Bodies a handler would accept if it read them: valid JSON, padded with whitespace.
        let hold_text = seats_body(&["A-003"]);
        let joining =
            |text: String| with_body(call("join.json", &[("eventId", event)], Some(&frank)), text);
        let payment = payment_body(&honest.alice_order, "pay_oversized", 12_000).to_string();
        let no_input = padded("{}", 2 * kb);
        let entry = |sample_name: &str| {
            call(
                sample_name,
                &[("eventId", event), ("queueId", &honest.queue_id(dave))],
                Some(dave),
            )
        };
        let too_large = |name: &str, event| {
            attack(name, event, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
        };
        play(
            sale,
            &[sale],
            &[],
            vec![
                too_large(
                    "a 5 KB hold",
                    hold(
                        &sale.event,
                        Some(bob),
                        Some(&honest.bob_token),
                        padded(&hold_text, 5 * kb),
                    ),
                ),
                too_large(
                    "a 1 MB hold",
                    hold(
                        &sale.event,
                        Some(bob),
                        Some(&honest.bob_token),
                        padded(&hold_text, kb * kb),
                    ),
                ),
                too_large("a 2 KB join", joining(no_input.clone())),
                too_large(
                    "a 2 KB seat map request",
                    with_body(
                        call("seats.json", &[("eventId", event)], Some(bob)),
                        no_input.clone(),
                    ),
                ),
                too_large(
                    "a 2 KB poll",
                    with_body(entry("poll.json"), no_input.clone()),
                ),
                too_large(
                    "a 2 KB leave",
                    with_body(entry("leave.json"), no_input.clone()),
                ),
                too_large(
                    "a 2 KB order status request",
                    with_body(
                        call(
                            "order.json",
                            &[("orderId", &honest.alice_order)],
                            Some(alice),
                        ),
                        no_input.clone(),
                    ),
                ),
                too_large(
                    "a 2 KB release",
                    with_body(
                        call(
                            "release.json",
                            &[("eventId", event), ("orderId", &honest.alice_order)],
                            Some(alice),
                        ),
                        no_input.clone(),
                    ),
                ),
                // Correctly signed, paying Alice's order in full: only the size is wrong.
                too_large(
                    "a signed webhook 1 byte over 4 KB",
                    signed_webhook(sale, &honest.alice_order, &padded(&payment, 4 * kb + 1)),
                ),
                too_large(
                    "a signed 6 MB webhook",
                    signed_webhook(sale, &honest.alice_order, &padded(&payment, 6 * kb * kb)),
                ),
            ],
        )
        .await;
        honest.assert_honest_state().await;

        // The same requests at their usual size do what they say.
        ordered(
            &send(
                sale,
                &hold(&sale.event, Some(bob), Some(&honest.bob_token), hold_text),
            )
            .await,
        );
        assert_eq!(
            send(sale, &joining("{}".into())).await.status(),
            StatusCode::CREATED
        );
        let paid = send(sale, &signed_webhook(sale, &honest.alice_order, &payment)).await;
        assert_eq!(body(&paid)["status"], "PAID", "{}", body(&paid));
        assert_eq!(
            send(sale, &entry("leave.json")).await.status(),
            StatusCode::NO_CONTENT
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn malformed_bodies_get_their_400s() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (bob, mallory) = (&honest.bob, &honest.mallory);
        let event = sale.event.as_str();
        let bobs = |text: &str| hold(&sale.event, Some(bob), Some(&honest.bob_token), text);
        let bad = |name: &str, event, code| attack(name, event, StatusCode::BAD_REQUEST, code);
        let mut attacks = vec![
            bad(
                "a hold that is not JSON",
                bobs("seatIds=A-003"),
                "invalid_json",
            ),
            bad(
                "a truncated hold",
                bobs("{\"seatIds\": [\"A-003\""),
                "invalid_json",
            ),
            bad("an empty hold", bobs(""), "invalid_json"),
            bad(
                "a hold that is an array",
                bobs("[\"A-003\"]"),
                "invalid_body",
            ),
            bad("a hold that is null", bobs("null"), "invalid_body"),
            bad(
                "seatIds a string",
                bobs("{\"seatIds\": \"A-003\"}"),
                "invalid_body",
            ),
            bad(
                "seatIds an object",
                bobs("{\"seatIds\": {\"0\": \"A-003\"}}"),
                "invalid_body",
            ),
            bad(
                "seatIds misspelt",
                bobs("{\"seatids\": [\"A-003\"]}"),
                "invalid_body",
            ),
            bad("no seats", bobs(&seats_body(&[])), "no_seats"),
            bad(
                "a seat id that is a number",
                bobs("{\"seatIds\": [3]}"),
                "invalid_seat_id",
            ),
            bad(
                "a seat id that is null",
                bobs("{\"seatIds\": [null]}"),
                "invalid_seat_id",
            ),
            bad(
                "a seat id that is a list",
                bobs("{\"seatIds\": [[\"A-003\"]]}"),
                "invalid_seat_id",
            ),
            bad(
                "five seats (events/hold-too-many-seats.json)",
                with_token(
                    call("hold-too-many-seats.json", &[("eventId", event)], Some(bob)),
                    Some(&honest.bob_token),
                ),
                "too_many_seats",
            ),
            bad(
                "five available seats",
                bobs(&seats_body(&["A-003", "A-004", "A-005", "A-006", "A-007"])),
                "too_many_seats",
            ),
            bad(
                "a seat twice",
                bobs(&seats_body(&["A-003", "A-003"])),
                "duplicate_seats",
            ),
            bad(
                "a seat three times among others",
                bobs(&seats_body(&["A-004", "A-003", "A-004", "A-004"])),
                "duplicate_seats",
            ),
        ];
        for odd in [
            "A 3",
            "A-003;",
            "../A-001",
            "A-001\u{0}",
            "{ev:x}",
            "A-001#x",
            "A*",
            "Ä-003",
            "A-003\n",
            "",
            &"A".repeat(33),
        ] {
            attacks.push(bad(
                &format!("the seat id {odd:?}"),
                bobs(&seats_body(&["A-003", odd])),
                "invalid_seat_id",
            ));
        }
        attacks.extend([
            bad(
                "a join that is a form (events/join-not-json.json)",
                call(
                    "join-not-json.json",
                    &[("eventId", event)],
                    Some(&customer(7)),
                ),
                "invalid_json",
            ),
            bad(
                "a join that is an array",
                with_body(
                    call("join.json", &[("eventId", event)], Some(&customer(7))),
                    "[1, 2]",
                ),
                "invalid_body",
            ),
            bad(
                "a join that is a string",
                with_body(
                    call("join.json", &[("eventId", event)], Some(&customer(7))),
                    "\"join\"",
                ),
                "invalid_body",
            ),
        ]);
        play(sale, &[sale], &[], attacks).await;
        // Unknown seats (well-formed, not this event's): 400, naming only the unknown ones.
        let unknown = play(
            sale,
            &[sale],
            &[],
            vec![bad(
                "unknown seats",
                bobs(&seats_body(&["A-003", "Z-999", "A-009"])),
                "unknown_seats",
            )],
        )
        .await;
        let mut named: Vec<String> =
            serde_json::from_value(body(&unknown[0].1)["error"]["seatIds"].clone())
                .expect("error.seatIds");
        named.sort();
        assert_eq!(named, ["A-009", "Z-999"], "the unknown seats, not A-003");

        // The webhook, signed correctly, with a body of the wrong shape.
        let order = honest.alice_order.as_str();
        let payment = payment_body(order, "pay_x", 12_000);
        let changed = |field: &str, value: Value| {
            let mut changed = payment.clone();
            changed[field] = value;
            changed.to_string()
        };
        let mut webhooks = Vec::new();
        for (name, text) in [
            ("not JSON", "orderId=x&amount=12000".to_owned()),
            (
                "an amount that is a string",
                changed("amount", json!("12000")),
            ),
            ("a negative amount", changed("amount", json!(-12_000))),
            ("an unknown field", changed("paid", json!(true))),
        ] {
            webhooks.push(bad(
                &format!("a signed webhook with {name}"),
                signed_webhook(sale, order, &text),
                "invalid_body",
            ));
        }
        play(sale, &[sale], &[], webhooks).await;
        honest.assert_honest_state().await;

        // Mallory, for whom nothing above was meant, and Bob with a well-formed body, hold.
        ordered(&send(sale, &bobs(&seats_body(&["A-003", "A-004"]))).await);
        ordered(
            &send(
                sale,
                &hold(
                    &sale.event,
                    Some(mallory),
                    Some(&honest.mallory_token),
                    seats_body(&["A-005"]),
                ),
            )
            .await,
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_caller_without_a_sub_claim_is_unauthenticated_on_every_customer_route() {
        let honest = Honest::new().await;
        let sale = &honest.sale;
        let (alice, bob, dave) = (&honest.alice, &honest.bob, &honest.dave);
        let event = sale.event.as_str();
        let frank = customer(7); // about to join
        let dave_entry = [("eventId", event), ("queueId", &honest.queue_id(dave))];
        let requests = [
            (
                "join",
                call("join.json", &[("eventId", event)], Some(&frank)),
            ),
            ("poll", call("poll.json", &dave_entry, Some(dave))),
            ("leave", call("leave.json", &dave_entry, Some(dave))),
            (
                "hold",
                hold(
                    &sale.event,
                    Some(bob),
                    Some(&honest.bob_token),
                    seats_body(&["A-003"]),
                ),
            ),
            (
                "release",
                call(
                    "release.json",
                    &[("eventId", event), ("orderId", &honest.alice_order)],
                    Some(alice),
                ),
            ),
            (
                "order status",
                call(
                    "order.json",
                    &[("orderId", &honest.alice_order)],
                    Some(alice),
                ),
            ),
        ];
        let mut attacks = vec![attack(
            "a join with no JWT (events/join-unauthenticated.json)",
            call("join-unauthenticated.json", &[("eventId", event)], None),
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        )];
        for (route_name, request) in &requests {
            attacks.push(attack(
                format!("{route_name} with a JWT that has no sub"),
                without_sub(request.clone()),
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
            ));
            let mut no_jwt = request.clone();
            no_jwt["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
            attacks.push(attack(
                format!("{route_name} with no JWT"),
                no_jwt,
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
            ));
        }
        play(sale, &[sale], &[], attacks).await;
        honest.assert_honest_state().await;

        // With the sub, each of them is served.
        for (route_name, request) in &requests {
            let response = send(sale, request).await;
            assert!(
                response.status().is_success(),
                "{route_name}: {}",
                body(&response)
            );
        }
    }
}
