//! The Secrets Manager adapter of [`SecretFetcher`]: `GetSecretValue` for the `AWSCURRENT` and
//! the `AWSPREVIOUS` versions, at once. Only `secretsmanager:GetSecretValue` on the secret is
//! needed (and `kms:Decrypt` if the secret uses a customer-managed KMS key).

use async_trait::async_trait;
use aws_sdk_secretsmanager::Client;

use crate::adapters::aws::AwsSettings;
use crate::application::ports::secrets::{SecretFetcher, SecretVersions, SecretsError};

/// A secret in Secrets Manager, and how to reach the service.
#[derive(Debug, Clone)]
pub struct SecretRef {
    /// The secret's ARN (or name: `GetSecretValue` takes either).
    pub secret_id: String,
    /// How to reach Secrets Manager.
    pub aws: AwsSettings,
}

/// The version stage of the live value: what new keys are made from.
pub const CURRENT: &str = "AWSCURRENT";
/// The version stage of the value before the last rotation; absent before the first.
pub const PREVIOUS: &str = "AWSPREVIOUS";

/// Fetches one secret's current and previous versions from Secrets Manager.
#[derive(Debug, Clone)]
pub struct SecretsManagerFetcher {
    client: Client,
    secret_id: String,
}

impl SecretsManagerFetcher {
    /// A fetcher of `secret_id` (ARN or name) through `client`.
    pub fn new(client: Client, secret_id: impl Into<String>) -> Self {
        Self {
            client,
            secret_id: secret_id.into(),
        }
    }

    /// A client built as the other AWS clients are (credentials and region from the
    /// environment, `AWS_ENDPOINT_URL` honoured, so moto serves it locally).
    pub fn open(secret: &SecretRef) -> Self {
        Self::new(
            crate::adapters::aws::secretsmanager(&secret.aws),
            &secret.secret_id,
        )
    }

    /// One version's value and version id; `None` when the secret has no version with this
    /// label (there is no `AWSPREVIOUS` before the first rotation).
    async fn stage(
        &self,
        stage: &'static str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, SecretsError> {
        let output = match self
            .client
            .get_secret_value()
            .secret_id(&self.secret_id)
            .version_stage(stage)
            .send()
            .await
        {
            Ok(output) => output,
            Err(error)
                if stage == PREVIOUS
                    && error
                        .as_service_error()
                        .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                return Ok(None)
            }
            Err(error) => {
                return Err(SecretsError::Fetch {
                    secret_id: self.secret_id.clone(),
                    stage,
                    source: Box::new(error),
                })
            }
        };
        let version_id = output.version_id.clone();
        let value = match (output.secret_string, output.secret_binary) {
            (Some(text), _) => text.into_bytes(),
            (None, Some(binary)) => binary.into_inner(),
            (None, None) => {
                return Err(SecretsError::Empty {
                    secret_id: self.secret_id.clone(),
                    stage,
                })
            }
        };
        Ok(Some((value, version_id)))
    }
}

#[async_trait]
impl SecretFetcher for SecretsManagerFetcher {
    fn secret_id(&self) -> &str {
        &self.secret_id
    }

    async fn fetch(&self) -> Result<SecretVersions, SecretsError> {
        let (current, previous) = futures::join!(self.stage(CURRENT), self.stage(PREVIOUS));
        // A failure to read AWSPREVIOUS (not its absence) fails the whole fetch: a refresh then
        // keeps the versions it had rather than dropping the previous key.
        let (current, current_version_id) = current?.ok_or_else(|| SecretsError::Empty {
            secret_id: self.secret_id.clone(),
            stage: CURRENT,
        })?;
        Ok(SecretVersions {
            current,
            previous: previous?.map(|(value, _)| value),
            current_version_id,
        })
    }
}
