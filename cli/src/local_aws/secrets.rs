//! The secrets the functions read at cold start, with development values: the samples in
//! `events/` are signed with them, and `lineup dev` uses the same ones. Not secrets: they are in
//! the repository, and a secret that exists already is never overwritten (a developer may have
//! put another value on purpose; the report says so).

use aws_sdk_secretsmanager::Client;

/// The development signing key (queue ids, access tokens).
pub const DEV_SIGNING_KEY: &str = "lineup-local-development-key-not-a-secret";
/// The development webhook secret (the samples' `Lineup-Signature`).
pub const DEV_WEBHOOK_SECRET: &str = "whsec-local-development-not-a-secret-000";
/// The development Stripe webhook endpoint secret (`events/stripe-webhook.json`'s signature).
pub const DEV_STRIPE_WEBHOOK_SECRET: &str = "whsec_local_development_stripe_not_a_secret_0";
/// The development Stripe key: localstripe and `lineup dev`'s provider take any `sk_test_` key.
pub const DEV_STRIPE_API_KEY: &str = "sk_test_lineup_local_development_not_a_key";
/// The development publishable key `lineup dev` hands the page (its provider takes any
/// `pk_test_` key).
pub const DEV_PUBLISHABLE_KEY: &str = "pk_test_lineup_local_development";
/// The development origin check value, the `X-Lineup-Origin` header of the public samples.
pub const DEV_ORIGIN_HEADER: &str = "lineup-local-origin-header-not-a-secret";

/// The development value of the secret `logical_id` of `template.yaml`; `None` for a secret this
/// tool has no value for (adding one to the template means adding its value here).
pub fn development_value(logical_id: &str) -> Option<&'static str> {
    match logical_id {
        "SigningKeySecret" => Some(DEV_SIGNING_KEY),
        "WebhookSecret" => Some(DEV_WEBHOOK_SECRET),
        "OriginVerifySecret" => Some(DEV_ORIGIN_HEADER),
        "StripeWebhookSecret" => Some(DEV_STRIPE_WEBHOOK_SECRET),
        "StripeApiKeySecret" => Some(DEV_STRIPE_API_KEY),
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "template.yaml has a secret {0} with no development value (cli/src/local_aws/secrets.rs)"
    )]
    NoDevelopmentValue(String),
    #[error("{doing} secret {name}")]
    Request {
        doing: &'static str,
        name: String,
        #[source]
        source: Box<aws_sdk_secretsmanager::Error>,
    },
}

/// The current value of secret `name`; `None` when there is no such secret.
pub async fn current(client: &Client, name: &str) -> Result<Option<String>, SecretError> {
    match client.get_secret_value().secret_id(name).send().await {
        Ok(answer) => Ok(Some(answer.secret_string.unwrap_or_default())),
        Err(error) => match aws_sdk_secretsmanager::Error::from(error) {
            aws_sdk_secretsmanager::Error::ResourceNotFoundException(_) => Ok(None),
            error => Err(failed("reading", name, error)),
        },
    }
}

/// Creates secret `name` holding `value`.
pub async fn create(client: &Client, name: &str, value: &str) -> Result<(), SecretError> {
    client
        .create_secret()
        .name(name)
        .description("Lineup development value (not a secret: it is in the repository)")
        .secret_string(value)
        .send()
        .await
        .map_err(|error| failed("creating", name, error.into()))?;
    Ok(())
}

/// Deletes secret `name` at once (no recovery window); `false` when there was none.
pub async fn delete(client: &Client, name: &str) -> Result<bool, SecretError> {
    if current(client, name).await?.is_none() {
        return Ok(false);
    }
    client
        .delete_secret()
        .secret_id(name)
        .force_delete_without_recovery(true)
        .send()
        .await
        .map_err(|error| failed("deleting", name, error.into()))?;
    Ok(true)
}

fn failed(doing: &'static str, name: &str, source: aws_sdk_secretsmanager::Error) -> SecretError {
    SecretError::Request {
        doing,
        name: name.to_owned(),
        source: Box::new(source),
    }
}
