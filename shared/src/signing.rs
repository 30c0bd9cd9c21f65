//! The server's HMAC-SHA256 key. It derives queue ids and signs access tokens; each use mixes in
//! its own purpose label, so a MAC made for one can never be replayed as the other.
//!
//! The key comes from the environment (Secrets Manager or SSM in AWS), never from the repository.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::ids::{CustomerId, EventId, QueueId};

type HmacSha256 = Hmac<Sha256>;

#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

/// Never print the key, even in a debug log.
impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the signing key must be at least {min} bytes long (got {got})", min = SigningKey::MIN_LEN)]
pub struct KeyTooShort {
    pub got: usize,
}

impl SigningKey {
    pub const MIN_LEN: usize = 32;

    pub fn new(secret: impl Into<Vec<u8>>) -> Result<Self, KeyTooShort> {
        let secret = secret.into();
        if secret.len() < Self::MIN_LEN {
            return Err(KeyTooShort { got: secret.len() });
        }
        Ok(Self(secret))
    }

    /// HMAC over a purpose label and length-prefixed parts (so `("ab","c")` and `("a","bc")` differ).
    pub(crate) fn mac(&self, purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC-SHA256 accepts keys of any length");
        for part in std::iter::once(purpose.as_bytes()).chain(parts.iter().copied()) {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// The queue id of `customer` in `event`'s queue (see [`QueueId`]).
    pub fn queue_id(&self, event: &EventId, customer: &CustomerId) -> QueueId {
        let mac = self.mac(
            "lineup/queue-id/v1",
            &[event.as_str().as_bytes(), customer.as_str().as_bytes()],
        );
        QueueId::from_trusted(URL_SAFE_NO_PAD.encode(&mac[..16]))
    }

    /// Whether `claimed` is the caller's own queue id for this event, in constant time.
    pub fn is_own_queue_id(&self, claimed: &QueueId, event: &EventId, caller: &CustomerId) -> bool {
        let expected = self.queue_id(event, caller);
        expected
            .as_str()
            .as_bytes()
            .ct_eq(claimed.as_str().as_bytes())
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::new(vec![7u8; 32]).unwrap()
    }

    #[test]
    fn short_keys_are_refused() {
        assert_eq!(SigningKey::new(vec![1u8; 31]).unwrap_err().got, 31);
    }

    #[test]
    fn queue_ids_are_stable_and_bound_to_event_and_customer() {
        let event = EventId::parse("ev1").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let bob = CustomerId::parse("bob").unwrap();
        let id = key().queue_id(&event, &alice);
        assert_eq!(id, key().queue_id(&event, &alice));
        assert!(QueueId::parse(id.as_str()).is_ok());
        assert!(key().is_own_queue_id(&id, &event, &alice));
        assert!(!key().is_own_queue_id(&id, &event, &bob));
        let other_event = EventId::parse("ev2").unwrap();
        assert!(!key().is_own_queue_id(&id, &other_event, &alice));
    }

    #[test]
    fn parts_are_length_prefixed() {
        assert_ne!(
            key().mac("p", &[b"ab", b"c"]),
            key().mac("p", &[b"a", b"bc"])
        );
        assert_ne!(key().mac("p1", &[b"x"]), key().mac("p2", &[b"x"]));
    }
}
