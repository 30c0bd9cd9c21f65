//! `lineup secrets revoke-previous` against moto's Secrets Manager, with the keys loaded as the
//! functions load them (`SecretsManagerFetcher`, `Rotating`). After a rotation the old value is
//! `AWSPREVIOUS` and still verifies (tests/secrets_rotation.rs); once revoked, the next fetch
//! drops it: a webhook signed with it is refused, an access token or queue ticket signed with
//! the old key is refused, and the current value goes on verifying. Until that fetch an instance
//! still accepts it (the bound the command prints). A second revocation changes nothing and says
//! so. For the signing key, through the handlers: what an admitted or waiting customer holding
//! the old key's token or ticket gets, and that joining again gives them back the same place.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use lineup::adapters::secret_source::KeySource;
use lineup::adapters::secrets_manager::{SecretRef, SecretsManagerFetcher};
use lineup::application::ports::queue::Admitter;
use lineup::application::rotating::{Rotating, SigningKeys, WebhookSecrets, REFRESH_AFTER};
use lineup::application::{hold, join, poll};
use lineup::domain::access_token::{self, TokenRejection};
use lineup::domain::clock::Clock;
use lineup::domain::signing::SigningKey;
use lineup::domain::webhook_signature::{self, WebhookSecret};
use lineup::wiring::backends::Queue;
use lineup_cli::endpoints::AwsTarget;
use lineup_cli::secret_revocation::{self, Revocation, SecretNames};
use lineup_tests::aws::{settings, unique};
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::{body, customer, error_code, join_request, poll_request};
use serde_json::Value;

const KEY_A: &str = "first-signing-key-0123456789abcdef-aaaa";
const KEY_B: &str = "second-signing-key-0123456789abcdef-bbbb";

fn client() -> aws_sdk_secretsmanager::Client {
    lineup::adapters::aws::secretsmanager(&settings())
}

/// A new secret holding `value`: its ARN and the version id of that value.
async fn create_secret(value: &str) -> (String, String) {
    let created = client()
        .create_secret()
        .name(unique("lineup-test-revoke"))
        .secret_string(value)
        .send()
        .await
        .expect("create the secret in moto");
    (
        created.arn.expect("moto returns the ARN"),
        created.version_id.expect("moto returns the version id"),
    )
}

/// A rotation as Secrets Manager records one: the new value becomes AWSCURRENT, the old one
/// AWSPREVIOUS. The new version's id.
async fn rotate(arn: &str, value: &str) -> String {
    client()
        .put_secret_value()
        .secret_id(arn)
        .secret_string(value)
        .send()
        .await
        .expect("put a new secret value")
        .version_id
        .expect("moto returns the version id")
}

/// The secret's versions and their labels, to show a command changed nothing.
async fn stages(arn: &str) -> Vec<(String, Vec<String>)> {
    let described = client()
        .describe_secret()
        .secret_id(arn)
        .send()
        .await
        .expect("describe the secret");
    let mut stages: Vec<(String, Vec<String>)> = described
        .version_ids_to_stages()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(version, mut labels)| {
            labels.sort();
            (version, labels)
        })
        .filter(|(_, labels)| !labels.is_empty())
        .collect();
    stages.sort();
    stages
}

/// The keys as a function holds them: fetched through the real fetcher, refreshed after `every`.
async fn fetched<K: lineup::domain::keys::SecretKey>(arn: &str, every: Duration) -> Rotating<K> {
    let secret = SecretRef {
        secret_id: arn.to_owned(),
        aws: settings(),
    };
    Rotating::fetched(Arc::new(SecretsManagerFetcher::open(&secret)), every)
        .await
        .expect("load the secret")
}

/// What `lineup secrets revoke-previous` does once it has the secret's id: the CLI's library
/// function, with the client it builds for the emulator.
async fn revoke(arn: &str) -> Revocation {
    let client = secret_revocation::client(&AwsTarget::Local(settings()));
    secret_revocation::revoke_previous(&client, arn)
        .await
        .expect("the revocation runs")
}

fn names(arn: &str) -> SecretNames {
    SecretNames {
        name: arn
            .rsplit(':')
            .next()
            .and_then(|tail| tail.rsplit_once('-'))
            .map(|(name, _)| name.to_owned())
            .expect("an ARN ending in name-suffix"),
        arn: arn.to_owned(),
    }
}

/// A leaked webhook secret (the provider's, or Stripe's: `scheme`), rotated then revoked.
async fn a_leaked_webhook_secret_is_refused_after_revocation(scheme: webhook_signature::Scheme) {
    let (leaked, replacement) = (
        "whsec-leaked-0123456789abcdef0123456789ab",
        "whsec-replacement-0123456789abcdef012345",
    );
    let (arn, leaked_version) = create_secret(leaked).await;
    // Two instances of `confirm`: one fetched a moment ago, one whose keys are due.
    let fresh: WebhookSecrets = fetched(&arn, REFRESH_AFTER).await;
    let due: WebhookSecrets = fetched(&arn, Duration::ZERO).await;
    let now = SystemTime::now();
    let body = br#"{"orderId":"o","paymentId":"p","amount":1,"currency":"KRW"}"#;
    let forged = WebhookSecret::new(leaked).unwrap().sign(now, body);
    let genuine = WebhookSecret::new(replacement).unwrap().sign(now, body);
    let verifies = |secrets: &WebhookSecrets, signature: &str| {
        secrets
            .verify_as(scheme, Some(signature), body, now)
            .is_ok()
    };

    let current_version = rotate(&arn, replacement).await;
    fresh.refresh().await.expect("refresh");
    due.refresh_if_stale().await;
    for secrets in [&fresh, &due] {
        assert!(verifies(secrets, &genuine));
        assert!(
            verifies(secrets, &forged),
            "after a rotation alone, the leaked value still verifies as AWSPREVIOUS"
        );
    }

    let revoked = revoke(&arn).await;
    assert_eq!(
        revoked,
        Revocation::Revoked {
            secret: names(&arn),
            version_id: leaked_version.clone(),
            current_version_id: Some(current_version.clone()),
        }
    );
    let printed = revoked.to_string();
    for part in [
        names(&arn).name,
        leaked_version.clone(),
        humantime::format_duration(secret_revocation::revocation_bound()).to_string(),
    ] {
        assert!(printed.contains(&part), "{part:?} not in {printed}");
    }
    assert_eq!(
        stages(&arn).await,
        vec![(current_version.clone(), vec!["AWSCURRENT".to_owned()])],
        "only AWSCURRENT is left"
    );

    // The window the bound covers: an instance that fetched a moment ago has not fetched again
    // (and the forged signature still matches its keys, so it forces no fetch).
    fresh.refresh_if_stale().await;
    assert!(verifies(&fresh, &forged), "cached until the next fetch");
    // The instance whose keys are due fetches on its next request, as after REFRESH_AFTER.
    due.refresh_if_stale().await;
    assert!(!verifies(&due, &forged), "the leaked value is refused");
    assert!(verifies(&due, &genuine), "the current one still verifies");
    fresh.refresh().await.expect("refresh");
    assert!(!verifies(&fresh, &forged));
    assert!(verifies(&fresh, &genuine));
    // A new instance never loads it.
    let cold: WebhookSecrets = KeySource::SecretsManager(SecretRef {
        secret_id: arn.clone(),
        aws: settings(),
    })
    .load()
    .await
    .expect("cold start");
    assert!(cold.ring().previous().is_none());
    assert!(!verifies(&cold, &forged));

    // Revoking again: nothing to revoke, nothing changed.
    let before = stages(&arn).await;
    let again = revoke(&arn).await;
    assert_eq!(
        again,
        Revocation::NothingToRevoke {
            secret: names(&arn)
        }
    );
    assert!(again.to_string().contains("nothing to revoke"), "{again}");
    assert_eq!(stages(&arn).await, before);
    assert!(verifies(&fresh, &genuine));
}

#[tokio::test]
async fn a_leaked_webhook_secret_stops_verifying_once_its_previous_version_is_revoked() {
    a_leaked_webhook_secret_is_refused_after_revocation(webhook_signature::LINEUP).await;
}

#[tokio::test]
async fn a_leaked_stripe_webhook_secret_stops_verifying_once_its_previous_version_is_revoked() {
    a_leaked_webhook_secret_is_refused_after_revocation(webhook_signature::STRIPE).await;
}

#[tokio::test]
async fn a_secret_never_rotated_has_nothing_to_revoke() {
    let (arn, version) = create_secret(KEY_A).await;
    let before = stages(&arn).await;
    assert_eq!(
        revoke(&arn).await,
        Revocation::NothingToRevoke {
            secret: names(&arn)
        }
    );
    assert_eq!(stages(&arn).await, before);
    assert_eq!(before, vec![(version, vec!["AWSCURRENT".to_owned()])]);
}

/// The access token in an `admitted` answer, and its admission's end.
fn admitted(answer: &Value) -> (String, String) {
    assert_eq!(answer["status"], "admitted", "{answer}");
    (
        answer["accessToken"].as_str().expect("token").to_owned(),
        answer["expiresAt"].as_str().expect("expiry").to_owned(),
    )
}

#[tokio::test]
async fn tokens_and_queue_tickets_of_a_revoked_signing_key_are_refused_and_joining_again_keeps_the_place(
) {
    let (arn, old_version) = create_secret(KEY_A).await;
    // `join`, `poll` and `hold` as the functions build them, with the key from Secrets Manager.
    let keys: SigningKeys = fetched(&arn, REFRESH_AFTER).await;
    let sale = OnSale::with_seats(4).await;
    let backends = Queue::new(sale.queue.clone(), sale.records.clone());
    let queue_api = backends.queue_api(keys.clone(), sale.clock.clone(), None);
    let hold_api = backends.hold_api(sale.ledger.clone(), keys.clone(), sale.clock.clone());
    let event = &sale.event;
    let (alice, bob, carol) = (customer(1), customer(2), customer(3));

    // Alice and Bob are admitted and claim under key A; Carol joins after them and waits.
    let mut claimed = Vec::new();
    for customer in [&alice, &bob] {
        let joined = join::handle(&queue_api, join_request(event, customer)).await;
        assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));
        let queue_id = body(&joined)["queueId"].as_str().unwrap().to_owned();
        claimed.push(queue_id);
    }
    sale.queue
        .admit_tick(event, sale.clock.now())
        .await
        .expect("admit");
    let mut tokens = Vec::new();
    for (customer, queue_id) in [&alice, &bob].into_iter().zip(&claimed) {
        let polled = poll::handle(&queue_api, poll_request(event, customer, queue_id)).await;
        tokens.push(admitted(&body(&polled)));
    }
    let waiting = body(&join::handle(&queue_api, join_request(event, &carol)).await);
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let (carols_number, carols_old_id) = (
        waiting["number"].clone(),
        waiting["queueId"].as_str().unwrap().to_owned(),
    );
    let ((alices_token, _), (bobs_old_token, bobs_expiry)) = (tokens[0].clone(), tokens[1].clone());

    // The key leaks: rotate (key A is AWSPREVIOUS, still accepted), Alice holds with her token.
    rotate(&arn, KEY_B).await;
    keys.refresh().await.expect("refresh");
    let held = hold::handle(
        &hold_api,
        sale.hold_request(&alice, Some(&alices_token), &[seat(1)]),
    )
    .await;
    assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));
    let alices_order = body(&held)["orderId"].as_str().unwrap().to_owned();
    let alices_amount = body(&held)["amount"].as_i64().unwrap();

    let revoked = revoke(&arn).await;
    assert!(
        matches!(&revoked, Revocation::Revoked { version_id, .. } if *version_id == old_version),
        "{revoked:?}"
    );
    // Until the instance fetches again, key A still verifies (the printed bound).
    let now = sale.clock.now();
    assert!(access_token::verify(&keys.ring(), &bobs_old_token, event, &bob, now).is_ok());
    keys.refresh().await.expect("refresh");
    assert_eq!(keys.current().id(), SigningKey::new(KEY_B).unwrap().id());
    assert!(keys.ring().previous().is_none());
    assert_eq!(
        access_token::verify(&keys.ring(), &bobs_old_token, event, &bob, now),
        Err(TokenRejection::BadSignature)
    );

    // Bob, admitted under key A: his hold is refused (403), and so is his queue ticket (404).
    let refused = hold::handle(
        &hold_api,
        sale.hold_request(&bob, Some(&bobs_old_token), &[seat(2)]),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(error_code(&refused), "access_denied");
    let lost = poll::handle(&queue_api, poll_request(event, &bob, &claimed[1])).await;
    assert_eq!(lost.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(&lost), "queue_entry_not_found");
    // Joining again gives him the same admission (same end), with a token of key B.
    let rejoined = join::handle(&queue_api, join_request(event, &bob)).await;
    assert_eq!(rejoined.status(), StatusCode::OK, "{}", body(&rejoined));
    let (bobs_new_token, expiry) = admitted(&body(&rejoined));
    assert_eq!(expiry, bobs_expiry, "the session clock did not restart");
    let held = hold::handle(
        &hold_api,
        sale.hold_request(&bob, Some(&bobs_new_token), &[seat(2)]),
    )
    .await;
    assert_eq!(held.status(), StatusCode::CREATED, "{}", body(&held));

    // Carol, waiting with a ticket of key A: 404, and joining again keeps her number.
    let lost = poll::handle(&queue_api, poll_request(event, &carol, &carols_old_id)).await;
    assert_eq!(lost.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(&lost), "queue_entry_not_found");
    let rejoined = join::handle(&queue_api, join_request(event, &carol)).await;
    assert_eq!(rejoined.status(), StatusCode::OK, "{}", body(&rejoined));
    let place = body(&rejoined);
    assert_eq!(place["status"], "waiting", "{place}");
    assert_eq!(place["number"], carols_number, "the same place");
    let new_id = place["queueId"].as_str().unwrap();
    assert_ne!(new_id, carols_old_id);
    let polled = poll::handle(&queue_api, poll_request(event, &carol, new_id)).await;
    assert_eq!(polled.status(), StatusCode::OK, "{}", body(&polled));

    // Alice's hold, made under key A, stands: paying for it needs no token.
    let paid = sale.pay(&alices_order, alices_amount).await;
    assert_eq!(paid.status(), StatusCode::OK, "{}", body(&paid));
}
