//! The server's HMAC-SHA256 key. It signs queue tickets and access tokens; each use mixes in
//! its own purpose label, so a MAC made for one can never be replayed as the other.
//!
//! A queue ticket is the `queueId` a join returns: `<number>.<issued ms>.<MAC>`, the MAC over
//! the event, the customer, the number (0: none yet, a pre-queue entrant) and the issue time. The
//! client shows it to poll; the server checks it is the caller's own for this event (another
//! customer's ticket, a forged number, or one for another event answers 404 like an unknown
//! one). It is what puts a customer back at their number after the cache is lost.
//!
//! The key comes from Secrets Manager in AWS (the literal value only locally), never from the
//! repository, and it is rotated: [`KeyRing`] holds the current version, which makes new
//! queue ids and tokens, and the previous one, which still verifies the ones already handed out.
//! Each key has a short public id (a hash of it), which access tokens carry so verification
//! picks the right key instead of trying each.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use std::time::SystemTime;

use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::ids::{CustomerId, EventId, QueueId};
use crate::domain::keys::{KeyRing, SecretKey};

type HmacSha256 = Hmac<Sha256>;

/// One version of the server's signing secret (at least 32 bytes), with its public id.
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

    /// The key id of a token: exactly 8 hex digits; `None` otherwise.
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

/// A signing secret shorter than [`SigningKey::MIN_LEN`]: not a usable key.
#[derive(Debug, thiserror::Error)]
#[error("the signing key must be at least {min} bytes long (got {got})", min = SigningKey::MIN_LEN)]
pub struct KeyTooShort {
    /// The secret's length, in bytes.
    pub got: usize,
}

impl SigningKey {
    /// The shortest secret accepted, in bytes (256 bits).
    pub const MIN_LEN: usize = 32;

    /// A key from the secret's bytes, with its id computed once.
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

    /// The key's public id, which the tokens it signs carry.
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

    /// The customer's stable entry id in `event`'s queue, which access tokens carry (`q`).
    pub fn queue_id(&self, event: &EventId, customer: &CustomerId) -> QueueId {
        let mac = self.mac(
            "lineup/queue-id/v1",
            &[event.as_str().as_bytes(), customer.as_str().as_bytes()],
        );
        QueueId::from_trusted(URL_SAFE_NO_PAD.encode(&mac[..16]))
    }

    fn ticket_mac(
        &self,
        event: &EventId,
        customer: &CustomerId,
        number: u64,
        issued: u64,
    ) -> String {
        let mac = self.mac(
            "lineup/queue-ticket/v1",
            &[
                event.as_str().as_bytes(),
                customer.as_str().as_bytes(),
                number.to_string().as_bytes(),
                issued.to_string().as_bytes(),
            ],
        );
        URL_SAFE_NO_PAD.encode(&mac[..16])
    }

    /// The signed ticket for `customer`'s place in `event`'s queue.
    pub fn queue_ticket(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket: QueueTicket,
    ) -> QueueId {
        let number = ticket.number.unwrap_or(0);
        let issued = unix_millis(ticket.issued_at);
        let mac = self.ticket_mac(event, customer, number, issued);
        // A group's line is named in the ticket, so a poll knows which line to look in; the MAC
        // covers it (the line's id is the `event` signed), so no ticket moves to another line.
        match event.group() {
            Some(group) => QueueId::from_trusted(format!("{group}.{number}.{issued}.{mac}")),
            None => QueueId::from_trusted(format!("{number}.{issued}.{mac}")),
        }
    }

    /// Whether `claimed` is a ticket this key signed for the caller in this event, in constant
    /// time: the ticket if so.
    fn opens(
        &self,
        claimed: &QueueId,
        event: &EventId,
        caller: &CustomerId,
    ) -> (Choice, Option<QueueTicket>) {
        let Some((number, issued, mac)) = ticket_parts(claimed.as_str()) else {
            return (Choice::from(0), None);
        };
        let expected = self.ticket_mac(event, caller, number, issued);
        let ticket = QueueTicket {
            number: (number > 0).then_some(number),
            issued_at: from_unix_millis(issued),
        };
        (expected.as_bytes().ct_eq(mac.as_bytes()), Some(ticket))
    }
}

/// A customer's place as their ticket states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueTicket {
    /// The queue number; `None` for a pre-queue entrant before the draw.
    pub number: Option<u64>,
    /// When the ticket was issued: only tickets older than a cache loss can restore a place.
    pub issued_at: SystemTime,
}

/// `[<group>.]<number>.<issued ms>.<22-character MAC>`, numbers in canonical decimal (no sign,
/// no leading zeros), so one ticket has exactly one spelling. (The group, if any, is checked by
/// the MAC, which covers the line's id.)
fn ticket_parts(text: &str) -> Option<(u64, u64, &str)> {
    let text = match text.split_once('.') {
        Some((first, rest)) if crate::domain::ids::GroupName::parse(first).is_ok() => rest,
        _ => text,
    };
    let mut parts = text.split('.');
    let (number, issued, mac) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || mac.len() != 22 {
        return None;
    }
    let canonical = |digits: &str| -> Option<u64> {
        let value: u64 = digits.parse().ok()?;
        (digits.bytes().all(|b| b.is_ascii_digit()) && value.to_string() == digits).then_some(value)
    };
    Some((canonical(number)?, canonical(issued)?, mac))
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

impl KeyRing<SigningKey> {
    /// A ticket for `customer`'s place, signed with the current key.
    pub fn queue_ticket(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket: QueueTicket,
    ) -> QueueId {
        self.current().queue_ticket(event, customer, ticket)
    }

    /// The ticket, if `claimed` is the caller's own for this event under the current or the
    /// previous key. Both are checked, in constant time, whichever matches.
    pub fn open_ticket(
        &self,
        claimed: &QueueId,
        event: &EventId,
        caller: &CustomerId,
    ) -> Option<QueueTicket> {
        let mut found = None;
        let owned = self.versions().fold(Choice::from(0), |owned, key| {
            let (ok, ticket) = key.opens(claimed, event, caller);
            found = found.or(ticket);
            owned | ok
        });
        bool::from(owned).then_some(found).flatten()
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

    fn ticket(number: Option<u64>) -> QueueTicket {
        QueueTicket {
            number,
            issued_at: from_unix_millis(1_800_000_000_123),
        }
    }

    #[test]
    fn a_group_lines_ticket_names_its_group_and_moves_to_no_other_line() {
        let keys = KeyRing::new(key(), None);
        let event = EventId::parse("ev1").unwrap();
        let fanclub = event.group_line(&crate::domain::ids::GroupName::parse("fanclub").unwrap());
        let card = event.group_line(&crate::domain::ids::GroupName::parse("card").unwrap());
        let alice = CustomerId::parse("alice").unwrap();
        let id = keys.queue_ticket(&fanclub, &alice, ticket(Some(7)));
        assert!(id.as_str().starts_with("fanclub.7.1800000000123."), "{id}");
        let parsed = QueueId::parse(id.as_str()).unwrap();
        assert_eq!(
            parsed.group().map(|g| g.as_str().to_owned()),
            Some("fanclub".to_owned())
        );
        assert_eq!(
            keys.open_ticket(&parsed, &fanclub, &alice),
            Some(ticket(Some(7)))
        );
        // The same ticket read as the general line's, or another group's, opens nothing; nor
        // does the group's name put in front of a general ticket.
        assert_eq!(keys.open_ticket(&parsed, &event, &alice), None);
        assert_eq!(keys.open_ticket(&parsed, &card, &alice), None);
        let general = keys.queue_ticket(&event, &alice, ticket(Some(7)));
        let moved = QueueId::parse(&format!("fanclub.{general}")).unwrap();
        assert_eq!(keys.open_ticket(&moved, &fanclub, &alice), None);
        assert_eq!(general.group(), None);
    }

    #[test]
    fn tickets_are_bound_to_event_customer_number_and_time() {
        let keys = KeyRing::new(key(), None);
        let event = EventId::parse("ev1").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let bob = CustomerId::parse("bob").unwrap();
        let id = keys.queue_ticket(&event, &alice, ticket(Some(42)));
        assert!(
            id.as_str().starts_with("42.1800000000123."),
            "{}",
            id.as_str()
        );
        assert!(QueueId::parse(id.as_str()).is_ok());
        assert_eq!(
            keys.open_ticket(&id, &event, &alice),
            Some(ticket(Some(42)))
        );
        assert_eq!(keys.open_ticket(&id, &event, &bob), None);
        let other_event = EventId::parse("ev2").unwrap();
        assert_eq!(keys.open_ticket(&id, &other_event, &alice), None);

        // A pre-queue ticket has no number.
        let entrant = keys.queue_ticket(&event, &alice, ticket(None));
        assert!(entrant.as_str().starts_with("0."));
        assert_eq!(
            keys.open_ticket(&entrant, &event, &alice),
            Some(ticket(None))
        );

        // Moving to the front by editing the number, or spelling it differently, fails.
        let mac = id.as_str().rsplit('.').next().unwrap();
        for forged in [
            format!("1.1800000000123.{mac}"),
            format!("042.1800000000123.{mac}"),
            format!("+42.1800000000123.{mac}"),
            format!("42.1800000000124.{mac}"),
            format!("42.1800000000123.{mac}.x"),
            "42.1800000000123".to_owned(),
        ] {
            let Ok(forged) = QueueId::parse(&forged) else {
                continue;
            };
            assert_eq!(
                keys.open_ticket(&forged, &event, &alice),
                None,
                "{forged:?}"
            );
        }
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
    fn tickets_of_the_previous_key_stay_valid_until_it_is_dropped() {
        let event = EventId::parse("ev1").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let old = key();
        let new = SigningKey::new(vec![9u8; 32]).unwrap();
        let older = SigningKey::new(vec![5u8; 32]).unwrap();
        let old_id = old.queue_ticket(&event, &alice, ticket(Some(7)));

        let rotated = KeyRing::new(new.clone(), Some(old.clone()));
        assert_eq!(
            rotated.open_ticket(&old_id, &event, &alice),
            Some(ticket(Some(7)))
        );
        assert_eq!(
            rotated.queue_ticket(&event, &alice, ticket(Some(7))),
            new.queue_ticket(&event, &alice, ticket(Some(7)))
        );
        assert_eq!(
            rotated.open_ticket(&old_id, &event, &CustomerId::parse("bob").unwrap()),
            None
        );

        let rotated_twice = KeyRing::new(older, Some(new));
        assert_eq!(rotated_twice.open_ticket(&old_id, &event, &alice), None);
        assert_eq!(rotated.find(old.id()).map(SigningKey::id), Some(old.id()));
        assert!(rotated_twice.find(old.id()).is_none());
    }
}
