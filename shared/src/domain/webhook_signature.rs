//! The payment webhooks' signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`, keyed
//! with the secret shared with the payment provider. Signing the timestamp with the body, and
//! refusing stale timestamps, stops a captured request from being replayed later. It is Stripe's
//! scheme (`Stripe-Signature`), and Lineup's generic webhook uses the same (`Lineup-Signature`):
//! one [`Scheme`] per header, differing only in the name and the largest body taken.
//!
//! The route is unauthenticated until this check passes, so its cost is bounded before anything
//! else: a body over [`MAX_BODY`] or a header with more than [`MAX_SIGNATURES`] values is refused
//! before any hashing, and the MAC is computed once per secret version (two at most: the current
//! and, after a rotation, the previous one), each `v1` value then compared to it in constant time.
//! Several values are allowed so a provider can sign with both an old and a new secret while the
//! secret is rotated; either version verifies, so the provider may switch at any time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use crate::domain::keys::{KeyRing, SecretKey};

/// Why a webhook's signature is refused: the body is too large to hash, or the header is
/// missing, malformed, stale, or matches no secret in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureRefused {
    /// Refused before hashing.
    #[error("the body is larger than this route takes ({limit} bytes at most)")]
    BodyTooLarge {
        /// The most bytes the route takes.
        limit: usize,
    },
    /// The sentence says what is wrong with the signature.
    #[error("{0}")]
    Invalid(&'static str),
}

/// The largest generic webhook body looked at: a payment notice is a few hundred bytes, and a
/// bigger body is refused before it is hashed, so an unauthenticated caller cannot make us hash
/// megabytes.
pub const MAX_BODY: usize = 4096;

/// The largest Stripe event looked at: a `payment_intent.*` event with its object is 2-6 KB
/// (one with a full charge inside up to about 12 KB); 64 KB leaves room and still bounds the
/// hashing an unauthenticated caller can cause.
pub const MAX_STRIPE_BODY: usize = 64 * 1024;

/// A header carrying the signature, and the largest body hashed under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    /// The header's name as HTTP gives it, lowercase.
    pub header: &'static str,
    /// Bodies larger than this are refused before any hashing.
    pub max_body: usize,
}

/// `Lineup-Signature`: the generic webhook (`POST /orders/{orderId}/confirm`).
pub const LINEUP: Scheme = Scheme {
    header: "lineup-signature",
    max_body: MAX_BODY,
};

/// `Stripe-Signature`: Stripe's webhook (`POST /webhooks/stripe`).
pub const STRIPE: Scheme = Scheme {
    header: "stripe-signature",
    max_body: MAX_STRIPE_BODY,
};

/// The most `v1` values a `Lineup-Signature` header may carry (a provider rotating its secret
/// sends two); a header with more is refused before any hashing.
pub const MAX_SIGNATURES: usize = 4;

/// How far a signature's timestamp may be from now, either way.
pub const TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// One version of the secret the payment provider signs webhooks with (at least 32 bytes).
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

/// Never print the secret, even in a debug log.
impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// A webhook secret shorter than 32 bytes (its length): not a usable secret.
#[derive(Debug, thiserror::Error)]
#[error("the webhook secret must be at least 32 bytes long (got {0})")]
pub struct SecretTooShort(pub usize);

#[cfg(test)]
thread_local! {
    /// How many webhook MACs this thread has computed: the unit tests count the cost of a request.
    static MAC_COMPUTATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl WebhookSecret {
    /// The secret's bytes, refused when shorter than 32.
    pub fn new(secret: impl Into<Vec<u8>>) -> Result<Self, SecretTooShort> {
        let secret = secret.into();
        if secret.len() < 32 {
            return Err(SecretTooShort(secret.len()));
        }
        Ok(Self(secret))
    }

    /// HMAC-SHA256 of `"<timestamp>.<body>"`: the one place the body is hashed.
    fn mac(&self, timestamp: u64, body: &[u8]) -> [u8; 32] {
        #[cfg(test)]
        MAC_COMPUTATIONS.with(|count| count.set(count.get() + 1));
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC-SHA256 takes keys of any length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.finalize().into_bytes().into()
    }

    /// The header value a provider sends for `body` at `at` (used by tests and the local
    /// simulated provider).
    pub fn sign(&self, at: SystemTime, body: &[u8]) -> String {
        let timestamp = at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format!(
            "t={timestamp},v1={}",
            hex::encode(self.mac(timestamp, body))
        )
    }

    /// Checks a `Lineup-Signature` header against the body with this secret alone.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureRefused> {
        verify_with(LINEUP, std::iter::once(self), header, body, now)
    }
}

impl SecretKey for WebhookSecret {
    const WHAT: &'static str = "webhook secret";
    type Invalid = SecretTooShort;

    fn from_secret(bytes: Vec<u8>) -> Result<Self, SecretTooShort> {
        Self::new(bytes)
    }
}

impl KeyRing<WebhookSecret> {
    /// Checks a `Lineup-Signature` header against the body, within [`TOLERANCE`] of `now`, under
    /// the current or the previous secret.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureRefused> {
        verify_with(LINEUP, self.versions(), header, body, now)
    }

    /// The same check for a `scheme`'s header and body cap.
    pub fn verify_as(
        &self,
        scheme: Scheme,
        header: Option<&str>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureRefused> {
        verify_with(scheme, self.versions(), header, body, now)
    }
}

/// A `v1` value as the 32 bytes of a MAC; any other length or non-hex text matches nothing.
fn candidate(value: &str) -> Option<[u8; 32]> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(value, &mut bytes).ok()?;
    Some(bytes)
}

fn verify_with<'s>(
    scheme: Scheme,
    secrets: impl Iterator<Item = &'s WebhookSecret>,
    header: Option<&str>,
    body: &[u8],
    now: SystemTime,
) -> Result<(), SignatureRefused> {
    if body.len() > scheme.max_body {
        return Err(SignatureRefused::BodyTooLarge {
            limit: scheme.max_body,
        });
    }
    let header = header.ok_or(SignatureRefused::Invalid("the signature header is missing"))?;
    let mut timestamp = None;
    let mut candidates = Vec::with_capacity(MAX_SIGNATURES);
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<u64>().ok(),
            Some(("v1", value)) => {
                if candidates.len() == MAX_SIGNATURES {
                    return Err(SignatureRefused::Invalid(
                        "the signature header carries more than 4 signatures",
                    ));
                }
                candidates.push(candidate(value));
            }
            _ => {}
        }
    }
    let (Some(timestamp), false) = (timestamp, candidates.is_empty()) else {
        return Err(SignatureRefused::Invalid(
            "the signature header is malformed",
        ));
    };
    // Compared in whole seconds: any u64 the header carries is safe (no time overflow).
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if now_secs.abs_diff(timestamp) > TOLERANCE.as_secs() {
        return Err(SignatureRefused::Invalid(
            "the signature's timestamp is too old or in the future",
        ));
    }
    // One MAC per secret version; every candidate compared with each, in constant time.
    let mut matched = Choice::from(0);
    for secret in secrets {
        let expected = secret.mac(timestamp, body);
        for candidate in candidates.iter().flatten() {
            matched |= expected.ct_eq(candidate);
        }
    }
    if bool::from(matched) {
        Ok(())
    } else {
        Err(SignatureRefused::Invalid(
            "the signature does not match the body",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> WebhookSecret {
        WebhookSecret::new("whsec-for-tests-only-0123456789abcdef").unwrap()
    }

    fn other() -> WebhookSecret {
        WebhookSecret::new("another-secret-that-is-long-enough!!").unwrap()
    }

    /// The MACs computed while running `f` on this thread.
    fn macs<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let before = MAC_COMPUTATIONS.with(|count| count.get());
        let result = f();
        (result, MAC_COMPUTATIONS.with(|count| count.get()) - before)
    }

    /// A header at `now` whose values are `wrong` made-up signatures, then the right one.
    fn header_with(now: SystemTime, body: &[u8], wrong: usize) -> String {
        let signed = secret().sign(now, body);
        let (timestamp, right) = signed.split_once(",v1=").unwrap();
        let mut header = timestamp.to_owned();
        for n in 0..wrong {
            header.push_str(&format!(",v1={:064x}", n));
        }
        header.push_str(&format!(",v1={right}"));
        header
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
        assert!(secret().verify(Some(&header), b"body!", now).is_err());
        assert!(other().verify(Some(&header), b"body", now).is_err());
        assert!(secret()
            .verify(Some(&header), b"body", now + Duration::from_secs(301))
            .is_err());
        assert!(secret()
            .verify(Some(&header), b"body", now - Duration::from_secs(301))
            .is_err());
        let huge = format!("t={},v1=00", u64::MAX);
        let (timestamp, right) = header.split_once(",v1=").unwrap();
        let truncated = format!("{timestamp},v1={}", &right[..62]);
        let extended = format!("{timestamp},v1={right}00");
        for bad in [
            "",
            "t=1",
            "v1=00",
            "t=x,v1=00",
            "garbage",
            "t=-1,v1=00",
            &huge,
            &truncated,
            &extended,
        ] {
            assert!(secret().verify(Some(bad), b"body", now).is_err(), "{bad:?}");
        }
        assert!(secret().verify(None, b"body", now).is_err());
    }

    #[test]
    fn many_signature_values_cost_no_more_than_one() {
        let now = SystemTime::now();
        let body = vec![b'x'; MAX_BODY];
        let ring = KeyRing::single(secret());
        let (one, four, five, many) = (
            header_with(now, &body, 0),
            header_with(now, &body, 3),
            header_with(now, &body, 4),
            // The attack: 150 values (the right one last) over a large body.
            header_with(now, &body, 149),
        );

        let (verified, one_cost) = macs(|| ring.verify(Some(&one), &body, now));
        assert!(verified.is_ok());
        assert_eq!(one_cost, 1);

        let (verified, four_cost) = macs(|| ring.verify(Some(&four), &body, now));
        assert!(verified.is_ok(), "the right signature among 4 is found");
        assert_eq!(four_cost, 1, "one MAC for the request, whatever the values");

        let (refused, many_cost) = macs(|| ring.verify(Some(&many), &body, now));
        assert!(
            matches!(refused, Err(SignatureRefused::Invalid(_))),
            "{refused:?}"
        );
        assert_eq!(many_cost, 0, "refused before any hashing");

        let (refused, five_cost) = macs(|| ring.verify(Some(&five), &body, now));
        assert!(refused.is_err());
        assert_eq!(five_cost, 0);
    }

    #[test]
    fn an_oversized_body_is_refused_before_hashing() {
        let now = SystemTime::now();
        let body = vec![b'x'; MAX_BODY + 1];
        let header = secret().sign(now, &body);
        let ring = KeyRing::single(secret());
        let (refused, cost) = macs(|| ring.verify(Some(&header), &body, now));
        assert!(
            matches!(
                refused,
                Err(SignatureRefused::BodyTooLarge { limit: MAX_BODY })
            ),
            "{refused:?}"
        );
        assert_eq!(cost, 0);
        let (refused, cost) = macs(|| ring.verify(None, &body, now));
        assert!(refused.is_err());
        assert_eq!(cost, 0);
    }

    #[test]
    fn after_a_rotation_either_version_verifies_at_one_mac_per_version() {
        let now = SystemTime::now();
        let body = b"{\"paymentId\":\"p\"}";
        let newest = WebhookSecret::new("the-newest-secret-of-them-all-0123456").unwrap();
        let rotated = KeyRing::new(other(), Some(secret()));

        let by_previous = secret().sign(now, body);
        let by_current = other().sign(now, body);
        // Both values at once, as a provider sends while it switches secrets.
        let (_, right) = by_current.split_once(",v1=").unwrap();
        let both = format!("{by_previous},v1={right}");
        for header in [&by_previous, &by_current, &both] {
            let (verified, cost) = macs(|| rotated.verify(Some(header), body, now));
            assert!(verified.is_ok(), "{header}");
            assert_eq!(cost, 2, "one MAC per secret version");
        }

        // Rotated again: the first secret is neither current nor previous.
        let rotated_twice = KeyRing::new(newest, Some(other()));
        assert!(rotated_twice.verify(Some(&by_previous), body, now).is_err());
        assert!(rotated_twice.verify(Some(&by_current), body, now).is_ok());
    }
}
