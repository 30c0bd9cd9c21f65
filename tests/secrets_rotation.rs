//! The signing key and the webhook secret as the functions load them in AWS: from Secrets
//! Manager (the local moto server here), then rotated while "running". Tokens, queue ids and
//! webhook signatures made before a rotation keep working while their key is `AWSPREVIOUS`; new
//! ones are made with the new key; a key rotated out twice is no longer accepted; and a secret
//! that cannot be read leaves the keys in force.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_sdk_secretsmanager::primitives::Blob;
use lineup::adapters::secret_source::KeySource;
use lineup::adapters::secrets_manager::SecretRef;
use lineup::adapters::secrets_manager::SecretsManagerFetcher;
use lineup::application::ports::secrets::SecretsError;
use lineup::application::rotating::Rotating;
use lineup::application::rotating::SigningKeys;
use lineup::domain::access_token;
use lineup::domain::access_token::TokenRejection;
use lineup::domain::ids::{CustomerId, EventId};
use lineup::domain::signing::SigningKey;
use lineup::domain::webhook_signature::WebhookSecret;
use lineup_tests::aws::{settings, unique};

const KEY_A: &str = "first-signing-key-0123456789abcdef-aaaa";
const KEY_B: &str = "second-signing-key-0123456789abcdef-bbbb";
const KEY_C: &str = "third-signing-key-0123456789abcdef-cccc";

fn client() -> aws_sdk_secretsmanager::Client {
    lineup::adapters::aws::secretsmanager(&settings())
}

/// A new secret holding `value`; its ARN.
async fn create_secret(value: &str) -> String {
    client()
        .create_secret()
        .name(unique("lineup-test-secret"))
        .secret_string(value)
        .send()
        .await
        .expect("create the secret in moto")
        .arn
        .expect("moto returns the ARN")
}

/// A rotation as Secrets Manager records one: the new value becomes AWSCURRENT, the old one
/// AWSPREVIOUS.
async fn rotate(arn: &str, value: &str) {
    client()
        .put_secret_value()
        .secret_id(arn)
        .secret_string(value)
        .send()
        .await
        .expect("put a new secret value");
}

fn source<K>(arn: &str) -> KeySource<K> {
    KeySource::SecretsManager(SecretRef {
        secret_id: arn.to_owned(),
        aws: settings(),
    })
}

fn key(value: &str) -> SigningKey {
    SigningKey::new(value).unwrap()
}

#[tokio::test]
async fn a_rotated_signing_key_is_picked_up_and_the_previous_one_still_verifies() {
    let arn = create_secret(KEY_A).await;
    let keys = source(&arn).load().await.expect("load the key");
    assert_eq!(keys.current().id(), key(KEY_A).id());
    assert!(keys.ring().previous().is_none(), "no AWSPREVIOUS yet");

    let now = SystemTime::now();
    let expires = now + Duration::from_secs(600);
    let event = EventId::parse("rotation").unwrap();
    let alice = CustomerId::parse("alice").unwrap();
    let old_token = access_token::issue(&keys.current(), &event, &alice, expires);
    let place = lineup::domain::signing::QueueTicket {
        number: Some(12),
        // Tickets carry whole milliseconds.
        issued_at: lineup::domain::clock::from_unix_millis(lineup::domain::clock::unix_millis(now)),
    };
    let old_queue_id = keys.queue_ticket(&event, &alice, place);

    rotate(&arn, KEY_B).await;
    assert_eq!(
        keys.current().id(),
        key(KEY_A).id(),
        "the cached key stays until a refresh"
    );
    keys.refresh().await.expect("refresh");
    assert_eq!(
        keys.current().id(),
        key(KEY_B).id(),
        "new tokens use the new key"
    );
    assert_eq!(
        keys.ring().previous().map(SigningKey::id),
        Some(key(KEY_A).id())
    );

    // What was handed out before the rotation still works.
    let ring = keys.ring();
    let verified = access_token::verify(&ring, &old_token, &event, &alice, now)
        .expect("a token of the previous key verifies");
    assert_eq!(verified.customer, alice);
    assert_eq!(keys.open_ticket(&old_queue_id, &event, &alice), Some(place));
    // New ones are made with the new key, and name it.
    let new_token = access_token::issue(&keys.current(), &event, &alice, expires);
    assert!(
        new_token.starts_with(&format!("v2.{}.", key(KEY_B).id().to_hex())),
        "{new_token}"
    );
    assert!(access_token::verify(&ring, &new_token, &event, &alice, now).is_ok());
    assert_eq!(
        keys.queue_ticket(&event, &alice, place),
        key(KEY_B).queue_ticket(&event, &alice, place)
    );

    // A second rotation: the first key is neither current nor previous any more.
    rotate(&arn, KEY_C).await;
    keys.refresh().await.expect("refresh");
    let ring = keys.ring();
    assert_eq!(
        access_token::verify(&ring, &old_token, &event, &alice, now),
        Err(TokenRejection::BadSignature)
    );
    assert_eq!(keys.open_ticket(&old_queue_id, &event, &alice), None);
    assert!(access_token::verify(&ring, &new_token, &event, &alice, now).is_ok());
}

#[tokio::test]
async fn a_stale_cache_refreshes_itself_and_a_failed_refresh_keeps_the_keys() {
    let arn = create_secret(KEY_A).await;
    let secret = SecretRef {
        secret_id: arn.clone(),
        aws: settings(),
    };
    // Stale at once, so the next request refreshes.
    let keys: SigningKeys = Rotating::fetched(
        Arc::new(SecretsManagerFetcher::open(&secret)),
        Duration::ZERO,
    )
    .await
    .expect("load");
    rotate(&arn, KEY_B).await;
    keys.refresh_if_stale().await;
    assert_eq!(keys.current().id(), key(KEY_B).id());

    // Secrets Manager loses the secret: the refresh fails, the keys in force stay.
    client()
        .delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("delete the secret");
    assert!(matches!(
        keys.refresh().await,
        Err(SecretsError::Fetch { .. })
    ));
    keys.refresh_if_stale().await;
    assert_eq!(keys.current().id(), key(KEY_B).id());
    assert_eq!(
        keys.ring().previous().map(SigningKey::id),
        Some(key(KEY_A).id())
    );
}

#[tokio::test]
async fn a_missing_or_weak_secret_stops_the_cold_start() {
    let missing = format!(
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:{}",
        unique("absent")
    );
    assert!(matches!(
        source::<SigningKey>(&missing).load().await,
        Err(SecretsError::Fetch {
            stage: "AWSCURRENT",
            ..
        })
    ));
    let weak = create_secret("too-short").await;
    assert!(matches!(
        source::<SigningKey>(&weak).load().await,
        Err(SecretsError::Unusable { .. })
    ));
}

#[tokio::test]
async fn a_webhook_signed_with_the_previous_secret_is_accepted_after_a_rotation() {
    let (old, new) = (
        "whsec-previous-0123456789abcdef0123456789",
        "whsec-current-0123456789abcdef01234567890",
    );
    let arn = create_secret(old).await;
    let secrets = source(&arn).load().await.expect("load");
    let now = SystemTime::now();
    let body = br#"{"orderId":"o","paymentId":"p","amount":1,"currency":"KRW"}"#;
    let by_old = WebhookSecret::new(old).unwrap().sign(now, body);
    let by_new = WebhookSecret::new(new).unwrap().sign(now, body);
    assert!(secrets.verify(Some(&by_old), body, now).is_ok());
    assert!(secrets.verify(Some(&by_new), body, now).is_err());

    rotate(&arn, new).await;
    secrets.refresh().await.expect("refresh");
    assert!(secrets.verify(Some(&by_new), body, now).is_ok());
    assert!(
        secrets.verify(Some(&by_old), body, now).is_ok(),
        "the provider may still sign with the previous secret"
    );

    rotate(&arn, "whsec-next-0123456789abcdef0123456789abcd").await;
    secrets.refresh().await.expect("refresh");
    assert!(secrets.verify(Some(&by_old), body, now).is_err());
}

#[tokio::test]
async fn a_binary_secret_is_a_key_too() {
    let arn = client()
        .create_secret()
        .name(unique("lineup-test-binary"))
        .secret_binary(Blob::new(vec![42u8; 32]))
        .send()
        .await
        .expect("create a binary secret")
        .arn
        .expect("arn");
    let keys = source(&arn).load().await.expect("load");
    assert_eq!(
        keys.current().id(),
        SigningKey::new(vec![42u8; 32]).unwrap().id()
    );
}
