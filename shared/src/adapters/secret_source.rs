//! Where a function takes a secret from. In AWS: Secrets Manager, named by the secret's ARN in
//! `<NAME>_SECRET_ARN` (an ARN is not a secret, so it may sit in the function's configuration).
//! Locally (tests, `lineup dev`, the runtime emulator): the value itself in `<NAME>`. (`sam local
//! invoke` passes only the variables the template declares, so `events/env.json` names secrets
//! in LocalStack instead.) Exactly one of the two: both set is a mistake that could leave the
//! function on a stale literal after the real secret rotates, so it stops the function at cold
//! start.

use std::sync::Arc;

use crate::adapters::secrets_manager::{SecretRef, SecretsManagerFetcher};
use crate::application::http::origin::{OriginGuard, OriginSecret};
use crate::application::ports::secrets::SecretsError;
use crate::application::rotating::{Rotating, REFRESH_AFTER};
use crate::domain::keys::SecretKey;

/// Where a function's key of kind `K` comes from, as its configuration says.
#[derive(Debug, Clone)]
pub enum KeySource<K> {
    /// The key itself, from the environment: local runs only.
    Literal(K),
    /// The secret whose ARN the configuration names: fetched at cold start, refreshed after.
    SecretsManager(SecretRef),
}

impl<K: SecretKey> KeySource<K> {
    /// At cold start: the literal key, or the secret's versions from Secrets Manager, kept
    /// current from then on. A secret that cannot be read stops the function here.
    pub async fn load(self) -> Result<Rotating<K>, SecretsError> {
        match self {
            KeySource::Literal(key) => Ok(Rotating::from(key)),
            KeySource::SecretsManager(secret) => {
                Rotating::fetched(
                    Arc::new(SecretsManagerFetcher::open(&secret)),
                    REFRESH_AFTER,
                )
                .await
            }
        }
    }
}

/// The origin check of an HTTP function: against the secret CloudFront sends, fetched at cold
/// start, or none (local runs, where no CDN is in front).
pub async fn origin_guard(
    source: Option<KeySource<OriginSecret>>,
) -> Result<OriginGuard, SecretsError> {
    Ok(match source {
        Some(source) => OriginGuard::fixed(source.load().await?),
        None => OriginGuard::open(),
    })
}
