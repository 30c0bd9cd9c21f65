//! Secrets (the signing key, the webhook secret) as the functions hold them: fetched from AWS
//! Secrets Manager at cold start instead of sitting in the function's environment, where anyone
//! allowed `lambda:GetFunctionConfiguration` could read them; kept in memory; and fetched again
//! after a bounded time, so a rotation is picked up without a redeploy.
//!
//! A secret has versions. Secrets Manager labels the live one `AWSCURRENT` and, after a rotation,
//! the one before it `AWSPREVIOUS`. Both are held, as a [`KeyRing`]: new queue ids, tokens and
//! signatures are made with the current version, and verification also accepts the previous one,
//! so rotating a key mid-sale voids nothing already handed out.
//!
//! This port is [`SecretFetcher`]; the in-memory copy and its refresh are
//! [`crate::application::rotating`], the Secrets Manager adapter
//! [`crate::adapters::secrets_manager`].

use async_trait::async_trait;

use crate::domain::keys::{KeyRing, SecretKey};

impl<K: SecretKey> KeyRing<K> {
    /// The keys of what Secrets Manager returned. An unusable current value is an error; an
    /// unusable previous one is left out (with a warning): it only widens what is accepted.
    pub fn from_versions(secret_id: &str, versions: SecretVersions) -> Result<Self, SecretsError> {
        let current =
            K::from_secret(versions.current).map_err(|source| SecretsError::Unusable {
                secret_id: secret_id.to_owned(),
                what: K::WHAT,
                source: Box::new(source),
            })?;
        let previous = versions
            .previous
            .and_then(|bytes| match K::from_secret(bytes) {
                Ok(key) => Some(key),
                Err(error) => {
                    tracing::warn!(secret = secret_id, error = %error, "the previous version of the {} is not usable; only the current one is accepted", K::WHAT);
                    None
                }
            });
        Ok(Self::new(current, previous))
    }
}

/// The raw values of a secret's `AWSCURRENT` and `AWSPREVIOUS` versions.
#[derive(Clone)]
pub struct SecretVersions {
    /// The `AWSCURRENT` value: what new queue ids, tokens and signatures are made with.
    pub current: Vec<u8>,
    /// The `AWSPREVIOUS` value, still accepted for verification; `None` when there is none.
    pub previous: Option<Vec<u8>>,
    /// Secrets Manager's id of the current version (not secret): says when a rotation happened.
    pub current_version_id: Option<String>,
}

/// Never print a secret, even in a debug log.
impl std::fmt::Debug for SecretVersions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretVersions")
            .field("current", &"<redacted>")
            .field("previous", &self.previous.as_ref().map(|_| "<redacted>"))
            .field("current_version_id", &self.current_version_id)
            .finish()
    }
}

/// Where a secret's versions come from (Secrets Manager; a fake in tests).
#[async_trait]
pub trait SecretFetcher: Send + Sync {
    /// The secret's ARN or name, for logs.
    fn secret_id(&self) -> &str;

    /// Reads the current and previous versions, at cold start and at each refresh.
    async fn fetch(&self) -> Result<SecretVersions, SecretsError>;
}

/// Why a secret could not be had: it fails the cold start (or, on a refresh, the old copy stays).
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// The secrets store did not answer, or refused (no such secret, no permission).
    #[error("could not read the {stage} version of secret {secret_id} from Secrets Manager")]
    Fetch {
        /// The secret's ARN or name.
        secret_id: String,
        /// The version stage asked for (`AWSCURRENT`, `AWSPREVIOUS`).
        stage: &'static str,
        /// The secrets store's own error (the SDK's, in AWS), kept whole.
        #[source]
        source: crate::application::error::BoxError,
    },
    /// The version holds no value, or (for `AWSCURRENT`) does not exist.
    #[error("the {stage} version of secret {secret_id} has neither a string nor a binary value")]
    Empty {
        /// The secret's ARN or name.
        secret_id: String,
        /// The version stage read.
        stage: &'static str,
    },
    /// The current value is not a usable key (too short, for instance).
    #[error("the current version of secret {secret_id} is not a usable {what}")]
    Unusable {
        /// The secret's ARN or name.
        secret_id: String,
        /// What the secret was to be ([`SecretKey::WHAT`], e.g. "signing key").
        what: &'static str,
        /// Why the key refused the value.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
