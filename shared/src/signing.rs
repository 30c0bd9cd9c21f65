//! The server's HMAC-SHA256 key. It derives queue ids and signs access tokens; each use mixes in
//! its own purpose label, so a MAC made for one can never be replayed as the other.
//!
//! The key comes from Secrets Manager in AWS (the literal value only locally), never from the
//! repository, and it is rotated: [`SigningKeys`] holds the current version, which makes new
//! queue ids and tokens, and the previous one, which still verifies the ones already handed out.
//! Each key has a short public id (a hash of it), which access tokens carry so verification
//! picks the right key instead of trying each.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::ids::{CustomerId, EventId, QueueId};
use crate::secrets::{KeyRing, Rotating, SecretKey};

type HmacSha256 = Hmac<Sha256>;

#[derive(Clone)]
pub struct SigningKey {
    secret: Vec<u8>,
    id: KeyId,
}

/// A key's public id: the first 4 bytes (8 hex digits) of a labelled SHA-256 of the key. It
/// tells keys apart; it reveals nothing usable about a 32-byte key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; 4]);

impl KeyId {
    /// The 8 lowercase hex digits a token carries.
    pub fn to_hex(self) -> String {
        hex::encode(self.0)
    }

    pub fn parse(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 4];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self(bytes))
    }
}

/// Never print the key, even in a debug log.
impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({}, <redacted>)", self.id.to_hex())
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
        let digest = Sha256::new()
            .chain_update(b"lineup/key-id/v1\n")
            .chain_update(&secret)
            .finalize();
        let id = KeyId([digest[0], digest[1], digest[2], digest[3]]);
        Ok(Self { secret, id })
    }

    pub fn id(&self) -> KeyId {
        self.id
    }

    /// HMAC over a purpose label and length-prefixed parts (so `("ab","c")` and `("a","bc")` differ).
    pub(crate) fn mac(&self, purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.secret)
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

    /// Whether `claimed` is the caller's own queue id for this event under this key, in
    /// constant time.
    fn owns(&self, claimed: &QueueId, event: &EventId, caller: &CustomerId) -> Choice {
        let expected = self.queue_id(event, caller);
        expected
            .as_str()
            .as_bytes()
            .ct_eq(claimed.as_str().as_bytes())
    }

    /// Whether `claimed` is the caller's own queue id for this event, in constant time.
    pub fn is_own_queue_id(&self, claimed: &QueueId, event: &EventId, caller: &CustomerId) -> bool {
        self.owns(claimed, event, caller).into()
    }
}

impl SecretKey for SigningKey {
    const WHAT: &'static str = "signing key";
    type Invalid = KeyTooShort;

    fn from_secret(bytes: Vec<u8>) -> Result<Self, KeyTooShort> {
        Self::new(bytes)
    }
}

impl KeyRing<SigningKey> {
    /// The version whose id a token names.
    pub fn find(&self, id: KeyId) -> Option<&SigningKey> {
        self.versions().find(|key| key.id() == id)
    }
}

/// The signing key's versions in force, as the queue and hold functions hold them.
pub type SigningKeys = Rotating<SigningKey>;

impl Rotating<SigningKey> {
    /// The version that makes new queue ids and tokens.
    pub fn current(&self) -> SigningKey {
        self.ring().current().clone()
    }

    /// The queue id of `customer` in `event`'s queue, made with the current key.
    pub fn queue_id(&self, event: &EventId, customer: &CustomerId) -> QueueId {
        self.ring().current().queue_id(event, customer)
    }

    /// Whether `claimed` is the caller's own queue id for this event under the current or the
    /// previous key. Both are checked, in constant time, whichever matches.
    pub fn is_own_queue_id(&self, claimed: &QueueId, event: &EventId, caller: &CustomerId) -> bool {
        let ring = self.ring();
        ring.versions()
            .fold(Choice::from(0), |owned, key| {
                owned | key.owns(claimed, event, caller)
            })
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

    #[test]
    fn key_ids_tell_keys_apart_and_round_trip() {
        let other = SigningKey::new(vec![8u8; 32]).unwrap();
        assert_ne!(key().id(), other.id());
        assert_eq!(key().id(), key().id());
        let hex = key().id().to_hex();
        assert_eq!(hex.len(), 8);
        assert_eq!(KeyId::parse(&hex), Some(key().id()));
        assert_eq!(KeyId::parse("xyz"), None);
        assert_eq!(
            format!("{:?}", key()),
            format!("SigningKey({hex}, <redacted>)"),
            "the key is never printed"
        );
    }

    #[test]
    fn queue_ids_of_the_previous_key_stay_valid_until_it_is_dropped() {
        let event = EventId::parse("ev1").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let old = key();
        let new = SigningKey::new(vec![9u8; 32]).unwrap();
        let older = SigningKey::new(vec![5u8; 32]).unwrap();
        let old_id = old.queue_id(&event, &alice);

        let rotated = SigningKeys::fixed(KeyRing::new(new.clone(), Some(old.clone())));
        assert!(rotated.is_own_queue_id(&old_id, &event, &alice));
        assert_eq!(
            rotated.queue_id(&event, &alice),
            new.queue_id(&event, &alice)
        );
        assert!(rotated.is_own_queue_id(&new.queue_id(&event, &alice), &event, &alice));
        assert!(!rotated.is_own_queue_id(&old_id, &event, &CustomerId::parse("bob").unwrap()));

        let rotated_twice = SigningKeys::fixed(KeyRing::new(older, Some(new)));
        assert!(!rotated_twice.is_own_queue_id(&old_id, &event, &alice));
        assert_eq!(
            rotated.ring().find(old.id()).map(SigningKey::id),
            Some(old.id())
        );
        assert!(rotated_twice.ring().find(old.id()).is_none());
    }
}
