//! The payment webhook's signature: `Lineup-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
//! "t.body">`, keyed with the secret shared with the payment provider. Signing the timestamp with
//! the body, and refusing stale timestamps, stops a captured request from being replayed later.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::LineupError;

/// How far a signature's timestamp may be from now, either way.
pub const TOLERANCE: Duration = Duration::from_secs(5 * 60);

#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the webhook secret must be at least 32 bytes long (got {0})")]
pub struct SecretTooShort(pub usize);

impl WebhookSecret {
    /// `LINEUP_WEBHOOK_SECRET`: shared with the payment provider; Secrets Manager in AWS.
    pub fn from_env() -> Result<Self, crate::config::ConfigError> {
        use crate::config::ConfigError;
        let raw = std::env::var("LINEUP_WEBHOOK_SECRET")
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or(ConfigError::Missing("LINEUP_WEBHOOK_SECRET"))?;
        Self::new(raw).map_err(ConfigError::WebhookSecret)
    }

    pub fn new(secret: impl Into<Vec<u8>>) -> Result<Self, SecretTooShort> {
        let secret = secret.into();
        if secret.len() < 32 {
            return Err(SecretTooShort(secret.len()));
        }
        Ok(Self(secret))
    }

    fn mac(&self, timestamp: u64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC-SHA256 takes keys of any length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The header value a provider sends for `body` at `at` (used by tests and the local
    /// simulated provider).
    pub fn sign(&self, at: SystemTime, body: &[u8]) -> String {
        let timestamp = at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let digest = self.mac(timestamp, body).finalize().into_bytes();
        format!("t={timestamp},v1={}", hex::encode(digest))
    }

    /// Checks a `Lineup-Signature` header against the body, within [`TOLERANCE`] of `now`.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), LineupError> {
        let header = header.ok_or(LineupError::BadSignature(
            "the Lineup-Signature header is missing",
        ))?;
        let malformed = LineupError::BadSignature("the Lineup-Signature header is malformed");
        let mut timestamp = None;
        let mut signatures = Vec::new();
        for part in header.split(',') {
            match part.trim().split_once('=') {
                Some(("t", value)) => timestamp = value.parse::<u64>().ok(),
                Some(("v1", value)) => signatures.push(value),
                _ => {}
            }
        }
        let (Some(timestamp), false) = (timestamp, signatures.is_empty()) else {
            return Err(malformed);
        };
        // Compared in whole seconds: any u64 the header carries is safe (no time overflow).
        let now_secs = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if now_secs.abs_diff(timestamp) > TOLERANCE.as_secs() {
            return Err(LineupError::BadSignature(
                "the signature's timestamp is too old or in the future",
            ));
        }
        // Several v1 values are allowed, so a provider can sign with an old and a new secret
        // while the secret is rotated.
        let matches = signatures.iter().any(|signature| {
            hex::decode(signature)
                .is_ok_and(|bytes| self.mac(timestamp, body).verify_slice(&bytes).is_ok())
        });
        if matches {
            Ok(())
        } else {
            Err(LineupError::BadSignature(
                "the signature does not match the body",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> WebhookSecret {
        WebhookSecret::new("whsec-for-tests-only-0123456789abcdef").unwrap()
    }

    #[test]
    fn a_fresh_signature_over_the_same_body_verifies() {
        let now = SystemTime::now();
        let header = secret().sign(now, b"{\"a\":1}");
        assert!(secret()
            .verify(Some(&header), b"{\"a\":1}", now + Duration::from_secs(299))
            .is_ok());
    }

    #[test]
    fn wrong_body_key_age_or_shape_is_refused() {
        let now = SystemTime::now();
        let header = secret().sign(now, b"body");
        let other = WebhookSecret::new("another-secret-that-is-long-enough!!").unwrap();
        assert!(secret().verify(Some(&header), b"body!", now).is_err());
        assert!(other.verify(Some(&header), b"body", now).is_err());
        assert!(secret()
            .verify(Some(&header), b"body", now + Duration::from_secs(301))
            .is_err());
        assert!(secret()
            .verify(Some(&header), b"body", now - Duration::from_secs(301))
            .is_err());
        let huge = format!("t={},v1=00", u64::MAX);
        for bad in [
            "",
            "t=1",
            "v1=00",
            "t=x,v1=00",
            "garbage",
            "t=-1,v1=00",
            &huge,
        ] {
            assert!(secret().verify(Some(bad), b"body", now).is_err(), "{bad:?}");
        }
        assert!(secret().verify(None, b"body", now).is_err());
    }
}
