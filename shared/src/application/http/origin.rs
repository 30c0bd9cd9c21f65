//! Refusing requests that did not come through CloudFront. The HTTP API's own endpoint is public
//! (an HTTP API takes neither a WAF nor a resource policy), so a caller who finds it could skip
//! the CDN's cache and the WAF's per-client limits. CloudFront adds a secret header to every
//! request it forwards (`X-Lineup-Origin`, the value of a Secrets Manager secret); each HTTP
//! function compares it, in constant time, with the secret's current and previous versions and
//! answers 403 `direct_access_refused` otherwise, before reading anything else of the request.
//! A function given no such secret (local runs, tests) lets every request through.

use lambda_http::{Body, Request, Response};
use subtle::ConstantTimeEq;

use crate::application::error::LineupError;
use crate::application::http::response;
use crate::application::rotating::Rotating;
use crate::domain::keys::SecretKey;

/// The header CloudFront adds.
pub const ORIGIN_HEADER: &str = "x-lineup-origin";

/// The shared value CloudFront sends. At least 32 bytes.
#[derive(Clone)]
pub struct OriginSecret(Vec<u8>);

impl std::fmt::Debug for OriginSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OriginSecret(<redacted>)")
    }
}

/// An origin secret shorter than 32 bytes (its length): not a usable secret.
#[derive(Debug, thiserror::Error)]
#[error("the origin secret must be at least 32 bytes long (got {0})")]
pub struct OriginSecretTooShort(pub usize);

impl SecretKey for OriginSecret {
    const WHAT: &'static str = "origin secret";
    type Invalid = OriginSecretTooShort;

    fn from_secret(bytes: Vec<u8>) -> Result<Self, OriginSecretTooShort> {
        if bytes.len() < 32 {
            return Err(OriginSecretTooShort(bytes.len()));
        }
        Ok(Self(bytes))
    }
}

/// The check each HTTP function runs first: the origin secret's versions in force, or `None`
/// (the default) to let every request through.
#[derive(Clone, Default)]
pub struct OriginGuard(Option<Rotating<OriginSecret>>);

impl OriginGuard {
    /// No check: every request is let through (local runs).
    pub fn open() -> Self {
        Self(None)
    }

    /// Checks against these versions (tests, and callers that fetched the secret themselves).
    pub fn fixed(secrets: Rotating<OriginSecret>) -> Self {
        Self(Some(secrets))
    }

    fn matches(&self, secrets: &Rotating<OriginSecret>, presented: &[u8]) -> bool {
        let ring = secrets.ring();
        ring.versions()
            .fold(subtle::Choice::from(0), |matched, secret| {
                matched | secret.0.as_slice().ct_eq(presented)
            })
            .into()
    }

    /// `None` when the request may go on; the 403 answer otherwise.
    pub async fn refuse(&self, request: &Request) -> Option<Response<Body>> {
        let secrets = self.0.as_ref()?;
        secrets.refresh_if_stale().await;
        let presented = request
            .headers()
            .get(ORIGIN_HEADER)
            .map(|value| value.as_bytes())
            .unwrap_or_default();
        let through_cdn = self.matches(secrets, presented)
            // A secret rotated since this instance fetched it: fetch, compare again.
            || (!presented.is_empty()
                && secrets.refresh_after_miss().await
                && self.matches(secrets, presented));
        (!through_cdn).then(|| response::error(&LineupError::DirectAccessRefused))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::keys::KeyRing;

    const SECRET: &str = "the value CloudFront sends, 32+ bytes";

    fn request(header: Option<&str>) -> Request {
        let mut request = Request::default();
        if let Some(value) = header {
            request
                .headers_mut()
                .insert(ORIGIN_HEADER, value.parse().unwrap());
        }
        request
    }

    fn guard(current: &str, previous: Option<&str>) -> OriginGuard {
        let secret = |value: &str| OriginSecret::from_secret(value.as_bytes().to_vec()).unwrap();
        OriginGuard(Some(Rotating::fixed(KeyRing::new(
            secret(current),
            previous.map(secret),
        ))))
    }

    #[tokio::test]
    async fn only_requests_carrying_the_secret_go_on() {
        let guard = guard(SECRET, None);
        assert!(guard.refuse(&request(Some(SECRET))).await.is_none());
        for refused in [
            None,
            Some(""),
            Some("a guess"),
            Some(&SECRET[..SECRET.len() - 1]),
        ] {
            let answer = guard.refuse(&request(refused)).await.expect("refused");
            assert_eq!(answer.status(), 403);
            let Body::Text(text) = answer.body() else {
                panic!("a JSON body")
            };
            assert!(text.contains("direct_access_refused"), "{text}");
        }
    }

    #[tokio::test]
    async fn the_previous_version_works_while_cloudfront_catches_up() {
        let guard = guard("the new value CloudFront will send, 32+", Some(SECRET));
        assert!(guard.refuse(&request(Some(SECRET))).await.is_none());
        assert!(OriginSecret::from_secret(b"short".to_vec()).is_err());
        assert!(OriginGuard::open().refuse(&request(None)).await.is_none());
    }
}
