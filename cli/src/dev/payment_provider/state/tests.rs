//! The books' rules, without HTTP: each test card's path, cancels, refunds within what was
//! paid, lists, metadata and what a publishable key sees.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::*;

fn now() -> SystemTime {
    UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000)
}

fn new_intent() -> NewIntent {
    NewIntent {
        amount: 24_000,
        currency: "krw".into(),
        metadata: vec![
            ("lineup_order".into(), "o-1".into()),
            ("lineup_seats".into(), "A-001,A-002".into()),
        ],
        ..NewIntent::default()
    }
}

fn created(books: &mut Books) -> String {
    let reply = books.create(new_intent(), now()).unwrap();
    reply.body["id"].as_str().unwrap().to_owned()
}

fn events(reply: &Reply) -> Vec<&'static str> {
    effects_events(&reply.effects)
}

fn effects_events(effects: &[Effect]) -> Vec<&'static str> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Event { kind, .. } => Some(*kind),
            Effect::Later(_) => None,
        })
        .collect()
}

fn later(reply: &Reply) -> FollowUp {
    reply
        .effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Later(step) => Some(step.clone()),
            Effect::Event { .. } => None,
        })
        .expect("a step for later")
}

fn paid(books: &mut Books, card: &str) -> String {
    let id = created(books);
    let reply = books.confirm(&id, Some(card.into())).unwrap();
    assert_eq!(reply.body["status"], "succeeded");
    id
}

fn refund(id: &str, amount: Option<i64>) -> NewRefund {
    NewRefund {
        payment_intent: id.into(),
        amount,
        metadata: vec![("lineup_refund".into(), "rf-1".into())],
        reason: None,
    }
}

#[test]
fn a_new_payment_waits_for_a_card_with_its_metadata_and_client_secret() {
    let mut books = Books::default();
    let reply = books.create(new_intent(), now()).unwrap();
    let body = &reply.body;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(body["id"].as_str().unwrap().starts_with("pi_"));
    let secret = body["client_secret"].as_str().unwrap();
    assert!(secret.starts_with(&format!("{}_secret_", body["id"].as_str().unwrap())));
    assert_eq!(body["status"], "requires_payment_method");
    assert_eq!(body["amount"], 24_000);
    assert_eq!(body["currency"], "krw");
    assert_eq!(body["metadata"]["lineup_seats"], "A-001,A-002");
    assert_eq!(body["created"], 1_800_000_000);
    assert!(reply.effects.is_empty(), "no event for a creation");
    assert_eq!(books.stats().payments, 1);
}

#[test]
fn a_visa_pays_at_once_and_says_so() {
    let mut books = Books::default();
    let id = created(&mut books);
    let reply = books.confirm(&id, Some("pm_card_visa".into())).unwrap();
    assert_eq!(reply.body["status"], "succeeded");
    assert_eq!(reply.body["amount_received"], 24_000);
    assert!(reply.body["latest_charge"]
        .as_str()
        .unwrap()
        .starts_with("ch_"));
    assert_eq!(events(&reply), ["payment_intent.succeeded"]);
    let Effect::Event { object, .. } = &reply.effects[0] else {
        panic!("an event");
    };
    assert_eq!(object["status"], "succeeded");
    assert_eq!(books.stats().succeeded, 1);
    // Paid: neither confirmed again nor given another card.
    let again = books.confirm(&id, None).unwrap_err();
    assert_eq!(again.code, Some("payment_intent_unexpected_state"));
    assert!(books
        .update(&id, Some("pm_card_visa".into()), &[], None)
        .is_err());
}

#[test]
fn a_card_attached_first_is_confirmed_without_one() {
    let mut books = Books::default();
    let id = created(&mut books);
    let missing = books.confirm(&id, None).unwrap_err();
    assert_eq!(missing.code, Some("payment_intent_unexpected_state"));
    let updated = books
        .update(&id, Some("pm_card_visa".into()), &[], None)
        .unwrap();
    assert_eq!(updated.body["status"], "requires_confirmation");
    let reply = books.confirm(&id, None).unwrap();
    assert_eq!(reply.body["status"], "succeeded");
    assert_eq!(reply.body["payment_method"], "pm_card_visa");
}

#[test]
fn a_declined_card_is_a_402_and_the_payment_waits_for_another() {
    let mut books = Books::default();
    let id = created(&mut books);
    let reply = books
        .confirm(&id, Some("pm_card_chargeCustomerFail".into()))
        .unwrap();
    assert_eq!(reply.status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(reply.body["error"]["type"], "card_error");
    assert_eq!(reply.body["error"]["code"], "card_declined");
    assert_eq!(
        reply.body["error"]["payment_intent"]["status"],
        "requires_payment_method"
    );
    assert_eq!(events(&reply), ["payment_intent.payment_failed"]);

    let now_it_is = books.retrieve(&id).unwrap().body;
    assert_eq!(now_it_is["status"], "requires_payment_method");
    assert_eq!(now_it_is["payment_method"], Value::Null);
    assert_eq!(
        now_it_is["last_payment_error"]["message"],
        "Your card was declined."
    );
    assert_eq!(now_it_is["last_payment_error"]["code"], "card_declined");

    // Unlike localstripe, another card may be tried.
    let retried = books.confirm(&id, Some("pm_card_visa".into())).unwrap();
    assert_eq!(retried.body["status"], "succeeded");
    assert_eq!(retried.body["last_payment_error"], Value::Null);
}

#[test]
fn three_d_secure_requires_action_then_succeeds_unless_cancelled_meanwhile() {
    let mut books = Books::default();
    let id = created(&mut books);
    let reply = books
        .confirm(&id, Some("pm_card_threeDSecure2Required".into()))
        .unwrap();
    assert_eq!(reply.body["status"], "requires_action");
    assert_eq!(reply.body["next_action"]["type"], "use_stripe_sdk");
    assert_eq!(events(&reply), ["payment_intent.requires_action"]);
    let step = later(&reply);
    let effects = books.follow_up(&step);
    assert_eq!(effects_events(&effects), ["payment_intent.succeeded"]);
    assert_eq!(books.retrieve(&id).unwrap().body["status"], "succeeded");
    assert!(books.follow_up(&step).is_empty(), "once");

    let other = created(&mut books);
    let reply = books
        .confirm(&other, Some("pm_card_threeDSecure2Required".into()))
        .unwrap();
    let cancel = books.cancel(&other, None, now()).unwrap();
    assert_eq!(cancel.body["status"], "canceled");
    assert_eq!(events(&cancel), ["payment_intent.canceled"]);
    assert!(books.follow_up(&later(&reply)).is_empty());
    assert_eq!(books.retrieve(&other).unwrap().body["status"], "canceled");
}

#[test]
fn a_processing_payment_cannot_be_cancelled_and_succeeds_later() {
    let mut books = Books::default();
    let id = created(&mut books);
    let reply = books
        .confirm(&id, Some("pm_card_processing".into()))
        .unwrap();
    assert_eq!(reply.body["status"], "processing");
    assert_eq!(events(&reply), ["payment_intent.processing"]);
    let refused = books.cancel(&id, None, now()).unwrap_err();
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.code, Some("payment_intent_unexpected_state"));
    let effects = books.follow_up(&later(&reply));
    assert_eq!(effects_events(&effects), ["payment_intent.succeeded"]);
}

#[test]
fn a_paid_payment_cannot_be_cancelled_an_unpaid_one_once() {
    let mut books = Books::default();
    let id = paid(&mut books, "pm_card_visa");
    let refused = books.cancel(&id, None, now()).unwrap_err();
    assert_eq!(refused.code, Some("payment_intent_unexpected_state"));
    assert!(refused.message.contains("status of succeeded"));

    let unpaid = created(&mut books);
    let canceled = books
        .cancel(&unpaid, Some("abandoned".into()), now())
        .unwrap();
    assert_eq!(canceled.body["cancellation_reason"], "abandoned");
    assert_eq!(canceled.body["canceled_at"], 1_800_000_000);
    assert!(books.cancel(&unpaid, None, now()).is_err());
    assert!(books.confirm(&unpaid, Some("pm_card_visa".into())).is_err());
}

#[test]
fn refunds_never_give_back_more_than_was_paid() {
    let mut books = Books::default();
    let id = paid(&mut books, "pm_card_visa");
    let unpaid = created(&mut books);
    let refused = books.refund(refund(&unpaid, None), now()).unwrap_err();
    assert_eq!(refused.code, Some("payment_intent_unexpected_state"));

    let too_much = books.refund(refund(&id, Some(24_001)), now()).unwrap_err();
    assert_eq!(too_much.code, Some("amount_too_large"));
    let part = books.refund(refund(&id, Some(10_000)), now()).unwrap();
    assert_eq!(part.body["status"], "succeeded");
    assert_eq!(part.body["payment_intent"], id.as_str());
    assert_eq!(part.body["metadata"]["lineup_refund"], "rf-1");
    assert_eq!(events(&part), ["refund.created"]);
    let rest = books.refund(refund(&id, None), now()).unwrap();
    assert_eq!(rest.body["amount"], 14_000, "what is left");
    let again = books.refund(refund(&id, Some(1)), now()).unwrap_err();
    assert_eq!(again.code, Some("charge_already_refunded"));
    assert_eq!(
        books.stats(),
        BookStats {
            payments: 2,
            succeeded: 1,
            refunds: 2,
            refunded_amount: 24_000
        }
    );
}

#[test]
fn refunds_are_listed_newest_first_a_page_at_a_time() {
    let mut books = Books::default();
    let id = paid(&mut books, "pm_card_visa");
    let other = paid(&mut books, "pm_card_visa");
    let mut made = Vec::new();
    for _ in 0..3 {
        let reply = books.refund(refund(&id, Some(1_000)), now()).unwrap();
        made.push(reply.body["id"].as_str().unwrap().to_owned());
    }
    books.refund(refund(&other, Some(1_000)), now()).unwrap();
    let ids = |reply: &Reply| -> Vec<String> {
        reply.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|refund| refund["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = books.list_refunds(Some(&id), 2, None).unwrap();
    assert_eq!(first.body["object"], "list");
    assert_eq!(ids(&first), [made[2].clone(), made[1].clone()]);
    assert_eq!(first.body["has_more"], true);
    let second = books.list_refunds(Some(&id), 2, Some(&made[1])).unwrap();
    assert_eq!(ids(&second), [made[0].clone()]);
    assert_eq!(second.body["has_more"], false);
    assert_eq!(
        books.list_refunds(None, 10, None).unwrap().body["data"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        books
            .list_refunds(Some("pi_nope"), 10, None)
            .unwrap_err()
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(books.refund_of(&made[0]).unwrap().body["amount"], 1_000);
    assert_eq!(
        books.refund_of("re_nope").unwrap_err().code,
        Some("resource_missing")
    );
}

#[test]
fn a_pending_refund_succeeds_later_and_a_failing_one_gives_its_amount_back() {
    let mut books = Books::default();
    let pending = paid(&mut books, "pm_card_pendingRefund");
    let reply = books.refund(refund(&pending, None), now()).unwrap();
    assert_eq!(reply.body["status"], "pending");
    let effects = books.follow_up(&later(&reply));
    assert_eq!(effects_events(&effects), ["refund.updated"]);
    let Effect::Event { object, .. } = &effects[0] else {
        panic!("an event");
    };
    assert_eq!(object["status"], "succeeded");

    let failing = paid(&mut books, "pm_card_refundFail");
    let reply = books.refund(refund(&failing, None), now()).unwrap();
    assert_eq!(reply.body["status"], "succeeded");
    let refund_id = reply.body["id"].as_str().unwrap().to_owned();
    let effects = books.follow_up(&later(&reply));
    assert_eq!(effects_events(&effects), ["refund.updated"]);
    let failed = books.refund_of(&refund_id).unwrap().body;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["failure_reason"], "expired_or_canceled_card");
    assert_eq!(
        books.stats().refunded_amount,
        24_000,
        "the failed one is not counted"
    );
    assert!(
        books.refund(refund(&failing, None), now()).is_ok(),
        "a failed refund's amount may be refunded again"
    );
}

#[test]
fn unknown_payments_and_cards_are_stripe_s_refusals() {
    let mut books = Books::default();
    let missing = books.retrieve("pi_nope").unwrap_err();
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.code, Some("resource_missing"));
    let id = created(&mut books);
    let unknown = books.confirm(&id, Some("pm_card_nope".into())).unwrap_err();
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown.param.as_deref(), Some("payment_method"));
    assert_eq!(
        books.retrieve(&id).unwrap().body["status"],
        "requires_payment_method",
        "nothing changed"
    );
}

#[test]
fn a_payment_can_be_created_and_confirmed_in_one_request() {
    let mut books = Books::default();
    let reply = books
        .create(
            NewIntent {
                payment_method: Some("pm_card_visa".into()),
                confirm: true,
                ..new_intent()
            },
            now(),
        )
        .unwrap();
    assert_eq!(reply.body["status"], "succeeded");
    let attached = books
        .create(
            NewIntent {
                payment_method: Some("pm_card_visa".into()),
                ..new_intent()
            },
            now(),
        )
        .unwrap();
    assert_eq!(attached.body["status"], "requires_confirmation");
    let without = books.create(
        NewIntent {
            confirm: true,
            ..new_intent()
        },
        now(),
    );
    assert!(without.is_err());
}

#[test]
fn metadata_follows_stripe_s_rules() {
    let mut books = Books::default();
    let id = created(&mut books);
    let reply = books
        .update(
            &id,
            None,
            &[
                ("lineup_seats".into(), String::new()),
                ("note".into(), "x".into()),
            ],
            None,
        )
        .unwrap();
    assert_eq!(
        reply.body["metadata"],
        json!({"lineup_order": "o-1", "note": "x"})
    );
    let long_key = "k".repeat(41);
    assert!(books
        .update(&id, None, &[(long_key, "v".into())], None)
        .is_err());
    assert!(books
        .update(&id, None, &[("k".into(), "v".repeat(501))], None)
        .is_err());
    let many: Vec<(String, String)> = (0..50).map(|n| (format!("k{n}"), "v".into())).collect();
    assert!(books.update(&id, None, &many, None).is_err(), "52 keys");
    assert_eq!(
        books.retrieve(&id).unwrap().body["metadata"],
        json!({"lineup_order": "o-1", "note": "x"}),
        "a refused update changes nothing"
    );
}

#[test]
fn a_publishable_key_sees_no_metadata() {
    let mut books = Books::default();
    let id = created(&mut books);
    let body = public_view(books.retrieve(&id).unwrap().body);
    assert!(body.get("metadata").is_none());
    assert!(body.get("latest_charge").is_none());
    assert_eq!(body["status"], "requires_payment_method");
    assert!(books.check_client_secret(&id, "pi_x_secret_y").is_err());
    let secret = books.retrieve(&id).unwrap().body["client_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(books.check_client_secret(&id, &secret).is_ok());
}
