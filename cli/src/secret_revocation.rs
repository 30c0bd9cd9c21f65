//! `lineup secrets revoke-previous`: a leaked secret, revoked at once.
//!
//! A rotation (`put-secret-value`) makes the new value `AWSCURRENT` and keeps the old one as
//! `AWSPREVIOUS`, which every function goes on accepting (`lineup::adapters::secrets_manager`
//! fetches both stages), so a rotation alone does not stop a leaked value: forged webhooks keep
//! verifying, forged access tokens keep opening holds, until a second rotation. This command
//! takes the `AWSPREVIOUS` label off whichever version holds it (`UpdateSecretVersionStage` with
//! `RemoveFromVersionId`), leaving only `AWSCURRENT`; each running function drops the old value at
//! its next fetch, within [`revocation_bound`]. It finds the version with `DescribeSecret`, so the
//! operator needs `secretsmanager:DescribeSecret` and `secretsmanager:UpdateSecretVersionStage`
//! on the secret, and never reads a value.
//!
//! The secrets are named as the functions name them: by the variables of
//! `lineup::wiring::config` (`LINEUP_SIGNING_KEY_SECRET_ARN`, `LINEUP_WEBHOOK_SECRET_ARN`,
//! `LINEUP_STRIPE_WEBHOOK_SECRET_ARN`) or the matching flags (in AWS: the stack's
//! `SigningKeySecretArn`, `WebhookSecretArn`, `StripeWebhookSecretArn` outputs); against the local
//! emulator they default to `events/env.json`'s names, as `lineup local-aws` and `lineup dev`
//! make them.

use std::fmt;
use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use lineup::adapters::aws::AwsSettings;
use lineup::adapters::secrets_manager::{CURRENT, PREVIOUS};
use lineup::application::rotating::{MIN_MISS_REFRESH, REFRESH_AFTER, RETRY_AFTER_FAILURE};
use lineup::wiring::config::{
    SIGNING_KEY_SECRET_ARN, STRIPE_WEBHOOK_SECRET_ARN, WEBHOOK_SECRET_SECRET_ARN,
};

use crate::endpoints::{AwsTarget, EndpointArgs, EndpointError};
use crate::local_aws::plan::{PlanError, ResourcePlan};

/// `lineup secrets ...`.
#[derive(Debug, clap::Subcommand)]
pub enum SecretsAction {
    /// Revoke a leaked secret's previous value at once: take the AWSPREVIOUS label off it, so
    /// only AWSCURRENT verifies (rotate first, with put-secret-value, if the leaked value is the
    /// current one). Prints the version revoked and how long running functions may still accept
    /// it; with no previous version, says so and changes nothing.
    RevokePrevious(RevokePreviousArgs),
}

/// Which of the functions' secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SecretKind {
    /// The payment provider's webhook secret (`confirm`, `LINEUP_WEBHOOK_SECRET_ARN`).
    Webhook,
    /// Stripe's webhook endpoint secret (`confirm`, `LINEUP_STRIPE_WEBHOOK_SECRET_ARN`).
    StripeWebhook,
    /// The signing key of queue tickets and access tokens (`join`, `poll`, `hold`,
    /// `LINEUP_SIGNING_KEY_SECRET_ARN`).
    Signing,
}

impl SecretKind {
    /// The variable (and flag) that names this secret.
    pub fn variable(self) -> &'static str {
        match self {
            Self::Webhook => WEBHOOK_SECRET_SECRET_ARN,
            Self::StripeWebhook => STRIPE_WEBHOOK_SECRET_ARN,
            Self::Signing => SIGNING_KEY_SECRET_ARN,
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Self::Webhook => "--webhook-secret-arn",
            Self::StripeWebhook => "--stripe-webhook-secret-arn",
            Self::Signing => "--signing-key-secret-arn",
        }
    }

    /// Its logical id in `template.yaml`: the local emulator has it under `events/env.json`'s
    /// name for the variable, if the template and env.json have it.
    fn logical_id(self) -> &'static str {
        match self {
            Self::Webhook => "WebhookSecret",
            Self::StripeWebhook => "StripeWebhookSecret",
            Self::Signing => "SigningKeySecret",
        }
    }

    /// Where an operator finds its ARN in AWS.
    fn where_to_find(self) -> &'static str {
        match self {
            Self::Webhook => "the stack's WebhookSecretArn output",
            Self::StripeWebhook => "the stack's StripeWebhookSecretArn output",
            Self::Signing => "the stack's SigningKeySecretArn output",
        }
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Webhook => "webhook secret",
            Self::StripeWebhook => "Stripe webhook secret",
            Self::Signing => "signing key",
        })
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct RevokePreviousArgs {
    /// Which secret.
    #[arg(long, value_enum)]
    pub secret: SecretKind,
    /// The signing key's secret (ARN or name); locally, events/env.json's name.
    #[arg(long, env = SIGNING_KEY_SECRET_ARN, value_name = "ARN")]
    pub signing_key_secret_arn: Option<String>,
    /// The webhook secret (ARN or name); locally, events/env.json's name.
    #[arg(long, env = WEBHOOK_SECRET_SECRET_ARN, value_name = "ARN")]
    pub webhook_secret_arn: Option<String>,
    /// Stripe's webhook endpoint secret (ARN or name); locally, events/env.json's name.
    #[arg(long, env = STRIPE_WEBHOOK_SECRET_ARN, value_name = "ARN")]
    pub stripe_webhook_secret_arn: Option<String>,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

#[derive(Debug, thiserror::Error)]
pub enum RevocationError {
    #[error(
        "which {kind}? pass {flag} or set {variable} ({where_to_find})",
        flag = kind.flag(),
        variable = kind.variable(),
        where_to_find = kind.where_to_find()
    )]
    Unnamed { kind: SecretKind },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("there is no secret {0}")]
    NoSuchSecret(String),
    #[error("{doing} secret {secret_id}")]
    Request {
        doing: &'static str,
        secret_id: String,
        #[source]
        source: Box<aws_sdk_secretsmanager::Error>,
    },
}

/// What the command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revocation {
    /// `AWSPREVIOUS` was taken off `version_id`.
    Revoked {
        secret: SecretNames,
        version_id: String,
        /// The version left as `AWSCURRENT`, when Secrets Manager named one.
        current_version_id: Option<String>,
    },
    /// No version held `AWSPREVIOUS`: nothing changed.
    NothingToRevoke { secret: SecretNames },
}

/// A secret as Secrets Manager names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretNames {
    pub name: String,
    pub arn: String,
}

impl fmt::Display for SecretNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.arn)
    }
}

/// The longest a running function may still accept a value after its `AWSPREVIOUS` label is
/// removed, while Secrets Manager answers it.
///
/// Each instance fetches its keys again on the first request at least [`REFRESH_AFTER`] after
/// its last fetch ended (`Rotating::refresh_if_stale`, awaited before the request is checked).
/// The last fetch that can still have read the revoked value started before the revocation and
/// ended at most one fetch later: a fetch is bounded by the SDK's operation timeout, three
/// attempts of the functions' [`AwsSettings::DEFAULT_ATTEMPT_TIMEOUT`]. The miss path
/// (`refresh_after_miss`, at most every [`MIN_MISS_REFRESH`]) does not shorten this: a token or
/// signature made with the revoked value still matches the cached keys, so it is no miss. A new
/// instance never loads it. While Secrets Manager cannot be read an instance keeps the keys it
/// has (retrying every [`RETRY_AFTER_FAILURE`]), so the bound holds only once it answers.
pub fn revocation_bound() -> Duration {
    REFRESH_AFTER + longest_fetch()
}

/// How long one fetch of a secret's versions may take in a function (both stages at once).
pub fn longest_fetch() -> Duration {
    let functions = AwsSettings {
        attempt_timeout: AwsSettings::DEFAULT_ATTEMPT_TIMEOUT,
        ..AwsSettings::local("http://unused")
    };
    lineup::adapters::aws::timeouts(&functions)
        .operation_timeout()
        .unwrap_or(functions.attempt_timeout)
}

/// The sentence on the bound the command prints.
pub fn bound_sentence() -> String {
    format!(
        "Running functions stop accepting it within {bound}: each fetches its keys again {refresh} \
         after its last fetch (REFRESH_AFTER), and a fetch under way may take {fetch} more; a \
         request signed with the revoked value forces no earlier fetch (it still matches the \
         cached keys, so it is no miss, and misses fetch at most every {miss} anyway). New \
         instances never load it. While Secrets Manager cannot be read, an instance keeps the \
         keys it has and tries again every {retry}.",
        bound = humantime::format_duration(revocation_bound()),
        refresh = humantime::format_duration(REFRESH_AFTER),
        fetch = humantime::format_duration(longest_fetch()),
        miss = humantime::format_duration(MIN_MISS_REFRESH),
        retry = humantime::format_duration(RETRY_AFTER_FAILURE),
    )
}

impl fmt::Display for Revocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Revoked {
                secret,
                version_id,
                current_version_id,
            } => {
                writeln!(
                    f,
                    "revoked the previous value of secret {secret}: {PREVIOUS} removed from \
                     version {version_id}"
                )?;
                match current_version_id {
                    Some(current) => {
                        writeln!(f, "only {CURRENT} (version {current}) verifies now")?
                    }
                    None => writeln!(f, "only {CURRENT} verifies now")?,
                }
                write!(f, "{}", bound_sentence())
            }
            Self::NothingToRevoke { secret } => write!(
                f,
                "secret {secret} has no {PREVIOUS} version: nothing to revoke, nothing changed \
                 (only {CURRENT} verifies)"
            ),
        }
    }
}

impl RevokePreviousArgs {
    /// The secret's id: the flag or variable, else (against the emulator) env.json's name.
    pub fn secret_id(&self) -> Result<String, RevocationError> {
        let named = match self.secret {
            SecretKind::Webhook => &self.webhook_secret_arn,
            SecretKind::StripeWebhook => &self.stripe_webhook_secret_arn,
            SecretKind::Signing => &self.signing_key_secret_arn,
        };
        if let Some(id) = named.as_deref().filter(|id| !id.is_empty()) {
            return Ok(id.to_owned());
        }
        let unnamed = RevocationError::Unnamed { kind: self.secret };
        // In AWS the stack's names are generated: only the operator knows them.
        if self.endpoints.aws {
            return Err(unnamed);
        }
        ResourcePlan::built_in()?
            .name_of(self.secret.logical_id())
            .map(str::to_owned)
            .ok_or(unnamed)
    }
}

/// Runs `lineup secrets ...`: what it did, to print.
pub async fn run(action: &SecretsAction) -> Result<Revocation, RevocationError> {
    match action {
        SecretsAction::RevokePrevious(args) => {
            let secret_id = args.secret_id()?;
            revoke_previous(&client(&args.endpoints.aws_target().await?), &secret_id).await
        }
    }
}

/// A Secrets Manager client for `target` (the emulator, or AWS as the standard chain resolved it).
pub fn client(target: &AwsTarget) -> Client {
    match target {
        AwsTarget::Local(settings) => lineup::adapters::aws::secretsmanager(settings),
        AwsTarget::Aws(config) => Client::new(config),
    }
}

/// Takes `AWSPREVIOUS` off whichever version of `secret_id` holds it; changes nothing when none
/// does (before the first rotation, or revoked already).
pub async fn revoke_previous(
    client: &Client,
    secret_id: &str,
) -> Result<Revocation, RevocationError> {
    let described = client
        .describe_secret()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|error| match aws_sdk_secretsmanager::Error::from(error) {
            aws_sdk_secretsmanager::Error::ResourceNotFoundException(_) => {
                RevocationError::NoSuchSecret(secret_id.to_owned())
            }
            error => failed("describing", secret_id, error),
        })?;
    let secret = SecretNames {
        name: described.name().unwrap_or(secret_id).to_owned(),
        arn: described.arn().unwrap_or(secret_id).to_owned(),
    };
    let stages = described
        .version_ids_to_stages()
        .cloned()
        .unwrap_or_default();
    let holding = |stage: &str| {
        let mut versions: Vec<&String> = stages
            .iter()
            .filter(|(_, labels)| labels.iter().any(|label| label == stage))
            .map(|(version, _)| version)
            .collect();
        versions.sort();
        versions.into_iter().cloned().collect::<Vec<String>>()
    };
    let current_version_id = holding(CURRENT).into_iter().next();
    // A label is on one version at most; should a reply say otherwise, every one is revoked.
    let previous = holding(PREVIOUS);
    if previous.is_empty() {
        return Ok(Revocation::NothingToRevoke { secret });
    }
    for version_id in &previous {
        client
            .update_secret_version_stage()
            .secret_id(&secret.arn)
            .version_stage(PREVIOUS)
            .remove_from_version_id(version_id)
            .send()
            .await
            .map_err(|error| failed("revoking AWSPREVIOUS of", &secret.arn, error.into()))?;
        tracing::info!(secret = %secret.arn, version = %version_id, "removed AWSPREVIOUS");
    }
    Ok(Revocation::Revoked {
        secret,
        version_id: previous.join(", "),
        current_version_id,
    })
}

fn failed(
    doing: &'static str,
    secret_id: &str,
    source: aws_sdk_secretsmanager::Error,
) -> RevocationError {
    RevocationError::Request {
        doing,
        secret_id: secret_id.to_owned(),
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::commands::{Cli, Command};

    fn revoke(args: &[&str]) -> Result<RevokePreviousArgs, clap::Error> {
        let argv = ["lineup", "secrets", "revoke-previous"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Secrets {
                action: SecretsAction::RevokePrevious(args),
            } => Ok(args),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_secret_is_named_as_the_functions_name_it() {
        let named = revoke(&["--secret", "webhook", "--webhook-secret-arn", "arn:x"]).unwrap();
        assert_eq!(named.secret_id().unwrap(), "arn:x");
        let stripe = revoke(&[
            "--secret",
            "stripe-webhook",
            "--stripe-webhook-secret-arn",
            "arn:stripe",
            "--webhook-secret-arn",
            "arn:other",
        ])
        .unwrap();
        assert_eq!(stripe.secret_id().unwrap(), "arn:stripe");
        assert!(revoke(&["--secret", "origin"]).is_err(), "not a choice");
    }

    #[test]
    fn locally_the_stacks_secrets_default_to_env_json_names_and_in_aws_nothing_does() {
        // The variables may be set where the unit tests run: flags only, so set them empty.
        let local = |kind: &str| {
            revoke(&[
                "--secret",
                kind,
                "--signing-key-secret-arn=",
                "--webhook-secret-arn=",
                "--stripe-webhook-secret-arn=",
            ])
            .unwrap()
        };
        assert_eq!(local("signing").secret_id().unwrap(), "lineup-signing-key");
        assert_eq!(
            local("webhook").secret_id().unwrap(),
            "lineup-webhook-secret"
        );
        // Stripe's: env.json's name if the built-in template and env.json have the secret.
        let plan = ResourcePlan::built_in().unwrap();
        match plan.name_of("StripeWebhookSecret") {
            Some(name) => assert_eq!(local("stripe-webhook").secret_id().unwrap(), name),
            None => {
                let unnamed = local("stripe-webhook").secret_id().unwrap_err().to_string();
                assert!(
                    unnamed.contains("LINEUP_STRIPE_WEBHOOK_SECRET_ARN"),
                    "{unnamed}"
                );
            }
        }
        let mut in_aws = local("signing");
        in_aws.endpoints.aws = true;
        let unnamed = in_aws.secret_id().unwrap_err().to_string();
        assert!(
            unnamed.contains("--signing-key-secret-arn") && unnamed.contains("SigningKeySecretArn"),
            "{unnamed}"
        );
    }

    #[test]
    fn the_bound_is_the_refresh_interval_plus_one_fetch() {
        assert_eq!(
            revocation_bound(),
            REFRESH_AFTER + 3 * AwsSettings::DEFAULT_ATTEMPT_TIMEOUT
        );
        assert!(
            bound_sentence().contains(&humantime::format_duration(revocation_bound()).to_string())
        );
    }
}
