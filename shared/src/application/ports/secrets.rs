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
//! - [`source`]: where a function takes a secret from (its ARN, or the literal value locally).
//! - [`secrets_manager`]: the Secrets Manager adapter of [`SecretFetcher`].
//! - [`rotating`]: the in-memory copy, and refreshing it.

use async_trait::async_trait;

/// A key made from a secret's bytes, refusing values too weak to use.
pub trait SecretKey: Send + Sync + Sized + 'static {
    /// What the key is, for errors and logs ("signing key").
    const WHAT: &'static str;
    /// Why some bytes are not a usable key.
    type Invalid: std::error::Error + Send + Sync + 'static;

    fn from_secret(bytes: Vec<u8>) -> Result<Self, Self::Invalid>;
}

/// The versions of a secret in force: the current one and, after a rotation, the previous one.
#[derive(Debug, Clone)]
pub struct KeyRing<K> {
    current: K,
    previous: Option<K>,
}

impl<K> KeyRing<K> {
    pub fn new(current: K, previous: Option<K>) -> Self {
        Self { current, previous }
    }

    /// A secret that is never rotated (a literal value from the environment).
    pub fn single(current: K) -> Self {
        Self::new(current, None)
    }

    /// The version new tokens and signatures are made with.
    pub fn current(&self) -> &K {
        &self.current
    }

    pub fn previous(&self) -> Option<&K> {
        self.previous.as_ref()
    }

    /// Every version verification accepts, the current one first.
    pub fn versions(&self) -> impl Iterator<Item = &K> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
    }
}

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
        Ok(Self { current, previous })
    }
}

/// The raw values of a secret's `AWSCURRENT` and `AWSPREVIOUS` versions.
#[derive(Clone)]
pub struct SecretVersions {
    pub current: Vec<u8>,
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

    async fn fetch(&self) -> Result<SecretVersions, SecretsError>;
}

/// The failed Secrets Manager call (boxed: the SDK's error is large).
pub type GetSecretValueError = Box<
    aws_sdk_secretsmanager::error::SdkError<
        aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueError,
    >,
>;

#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("could not read the {stage} version of secret {secret_id} from Secrets Manager")]
    Fetch {
        secret_id: String,
        stage: &'static str,
        #[source]
        source: GetSecretValueError,
    },
    #[error("the {stage} version of secret {secret_id} has neither a string nor a binary value")]
    Empty {
        secret_id: String,
        stage: &'static str,
    },
    #[error("the current version of secret {secret_id} is not a usable {what}")]
    Unusable {
        secret_id: String,
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
