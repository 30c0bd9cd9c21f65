//! Where a function takes a secret from. In AWS: Secrets Manager, named by the secret's ARN in
//! `<NAME>_SECRET_ARN` (an ARN is not a secret, so it may sit in the function's configuration).
//! Locally (tests, `lineup dev`, the runtime emulator): the value itself in `<NAME>`. (`sam local
//! invoke` passes only the variables the template declares, so `events/env.json` names secrets
//! in LocalStack instead.) Exactly one of the two: both set is a mistake that could leave the
//! function on a stale literal after the real secret rotates, so it stops the function at cold
//! start.

use crate::adapters::aws::AwsSettings;
use crate::wiring::config::ConfigError;

use crate::application::ports::secrets::SecretKey;

/// A secret in Secrets Manager, and how to reach the service.
#[derive(Debug, Clone)]
pub struct SecretRef {
    /// The secret's ARN (or name: `GetSecretValue` takes either).
    pub secret_id: String,
    pub aws: AwsSettings,
}

#[derive(Debug, Clone)]
pub enum KeySource<K> {
    /// The key itself, from the environment: local runs only.
    Literal(K),
    SecretsManager(SecretRef),
}

impl<K: SecretKey> KeySource<K> {
    /// Reads `literal` or `arn` (exactly one must be set), checking a literal key now: a bad
    /// setting stops the function before it takes a request. `invalid` names the literal's
    /// problem in the function's own error type.
    pub fn from_lookup(
        lookup: &impl Fn(&str) -> Option<String>,
        literal: &'static str,
        arn: &'static str,
        invalid: impl FnOnce(K::Invalid) -> ConfigError,
    ) -> Result<Self, ConfigError> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        match (set(literal), set(arn)) {
            (Some(_), Some(_)) => Err(ConfigError::TwoSecretSources { literal, arn }),
            (None, None) => Err(ConfigError::NoSecretSource { literal, arn }),
            (Some(value), None) => K::from_secret(value.into_bytes())
                .map(Self::Literal)
                .map_err(invalid),
            (None, Some(secret_id)) => {
                if secret_id.trim() != secret_id || secret_id.len() > 2048 {
                    return Err(ConfigError::Invalid {
                        name: arn,
                        reason: "expected a Secrets Manager secret ARN".to_owned(),
                    });
                }
                Ok(Self::SecretsManager(SecretRef {
                    secret_id,
                    aws: AwsSettings::from_lookup(lookup)?,
                }))
            }
        }
    }
}
