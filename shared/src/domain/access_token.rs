//! The access token: the proof, handed out by `poll`, that a customer was admitted from an
//! event's queue. It binds the event, the queue entry, the customer and the admission's expiry,
//! signed with HMAC-SHA256, so the hold function can trust it without a lookup... almost: it
//! also asks Redis whether that very admission is still in the active set, which is how leaving
//! or paying revokes a token before it expires.
//!
//! Wire format: `v2.<key id>.<base64url(JSON claims)>.<base64url(HMAC)>`, the HMAC covering the
//! key id and the claims. The key id (see [`crate::domain::signing::KeyId`]) names the version of the
//! signing key that signed it, so a token issued before a rotation still verifies, under the
//! previous key, for as long as that key is `AWSPREVIOUS`. Tokens of the first format,
//! `v1.<claims>.<HMAC>` (no key id), are still accepted under the current key: a deploy of this
//! format mid-sale voids none (they live for one admission, minutes).

use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::ids::{CustomerId, EventId, GroupName};
use crate::domain::keys::KeyRing;
use crate::domain::signing::{KeyId, SigningKey};

const VERSION: &str = "v2";
const PURPOSE: &str = "lineup/access-token/v2";
/// The format before key ids; verified under the current key only.
const LEGACY_VERSION: &str = "v1";
const LEGACY_PURPOSE: &str = "lineup/access-token/v1";

/// Why a token was refused. The client sees only "403 access_denied"; the reason goes to logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    /// The request carried no access token.
    #[error("no access token was sent")]
    Missing,
    /// Not in either wire format, or a part does not decode.
    #[error("the token is not a Lineup access token")]
    Malformed,
    /// The MAC does not match, or the key id names a key that is neither current nor previous.
    #[error("the token's signature does not match")]
    BadSignature,
    /// The admission it names ended (its expiry is past).
    #[error("the token has expired")]
    Expired,
    /// Signed for another event than the one in the path.
    #[error("the token was issued for another event")]
    OtherEvent,
    /// Signed for another customer than the caller.
    #[error("the token was issued to another customer")]
    OtherCustomer,
    /// Valid on its face, but the admission is no longer live in the active set.
    #[error("the admission behind the token has ended (left, paid or replaced)")]
    Revoked,
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    /// event id
    e: String,
    /// customer id
    c: String,
    /// queue id of the entry that was admitted
    q: String,
    /// expiry of the admission, Unix milliseconds; also the admission's score in the active set
    x: u64,
    /// the ticket limit of the priority group whose line admitted the customer, if it has one
    /// (docs/decisions/0031-priority-groups.md); absent: only the event's limit
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<u32>,
    /// the priority group whose line admitted the customer, if any: the seats set aside for it
    /// (docs/decisions/0032-seat-allocations.md) are theirs to hold; absent: the event's own line
    #[serde(default, skip_serializing_if = "Option::is_none")]
    g: Option<String>,
}

/// A token whose signature, event, customer and expiry have been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// The event the admission is for.
    pub event: EventId,
    /// The admitted customer.
    pub customer: CustomerId,
    /// When the admission ends: also what identifies it in the active set.
    pub expires_at: SystemTime,
    /// The ticket limit of the priority group that admitted the customer (`None`: the event's
    /// limit alone applies).
    pub group_ticket_limit: Option<u32>,
    /// The priority group whose line admitted the customer (`None`: the event's own line).
    pub group: Option<GroupName>,
}

/// Signs a token for `customer`'s admission to `event`, valid until `expires_at`.
pub fn issue(
    key: &SigningKey,
    event: &EventId,
    customer: &CustomerId,
    expires_at: SystemTime,
) -> String {
    issue_in_group(key, event, customer, expires_at, None, None)
}

/// [`issue`], for an admission from `group`'s line, whose own ticket limit is
/// `group_ticket_limit`: the hold path applies it on top of the event's, and lets the customer
/// hold the seats set aside for the group.
pub fn issue_in_group(
    key: &SigningKey,
    event: &EventId,
    customer: &CustomerId,
    expires_at: SystemTime,
    group: Option<&GroupName>,
    group_ticket_limit: Option<u32>,
) -> String {
    let claims = Claims {
        e: event.as_str().to_owned(),
        c: customer.as_str().to_owned(),
        q: key.queue_id(event, customer).as_str().to_owned(),
        x: unix_millis(expires_at),
        l: group_ticket_limit,
        g: group.map(|group| group.as_str().to_owned()),
    };
    let payload = URL_SAFE_NO_PAD.encode(
        serde_json::to_vec(&claims).expect("claims of plain strings and numbers always serialise"),
    );
    let key_id = key.id().to_hex();
    let signature =
        URL_SAFE_NO_PAD.encode(key.mac(PURPOSE, &[key_id.as_bytes(), payload.as_bytes()]));
    format!("{VERSION}.{key_id}.{payload}.{signature}")
}

/// Checks everything that needs no lookup: signature (under the key version the token names,
/// if it is still current or previous), expiry, event and customer.
pub fn verify(
    keys: &KeyRing<SigningKey>,
    token: &str,
    event: &EventId,
    caller: &CustomerId,
    now: SystemTime,
) -> Result<VerifiedToken, TokenRejection> {
    let parts: Vec<&str> = token.splitn(5, '.').collect();
    let (expected, payload, signature) = match parts[..] {
        [VERSION, key_id_text, payload, signature] => {
            let key_id = KeyId::parse(key_id_text).ok_or(TokenRejection::Malformed)?;
            // A key rotated out (or never ours) signed nothing this service still accepts.
            let key = keys.find(key_id).ok_or(TokenRejection::BadSignature)?;
            let expected = key.mac(PURPOSE, &[key_id_text.as_bytes(), payload.as_bytes()]);
            (expected, payload, signature)
        }
        [LEGACY_VERSION, payload, signature] => {
            let expected = keys.current().mac(LEGACY_PURPOSE, &[payload.as_bytes()]);
            (expected, payload, signature)
        }
        _ => return Err(TokenRejection::Malformed),
    };
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| TokenRejection::Malformed)?;
    if !bool::from(expected.as_slice().ct_eq(&signature)) {
        return Err(TokenRejection::BadSignature);
    }
    let claims: Claims = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .ok_or(TokenRejection::Malformed)?;
    if claims.e != event.as_str() {
        return Err(TokenRejection::OtherEvent);
    }
    if claims.c != caller.as_str() {
        return Err(TokenRejection::OtherCustomer);
    }
    let group = match claims.g.as_deref() {
        None => None,
        Some(name) => Some(GroupName::parse(name).map_err(|_| TokenRejection::Malformed)?),
    };
    let expires_at = from_unix_millis(claims.x);
    if expires_at <= now {
        return Err(TokenRejection::Expired);
    }
    Ok(VerifiedToken {
        event: event.clone(),
        customer: caller.clone(),
        expires_at,
        group_ticket_limit: claims.l,
        group,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn key(byte: u8) -> SigningKey {
        SigningKey::new(vec![byte; 32]).unwrap()
    }

    fn ring(byte: u8) -> KeyRing<SigningKey> {
        KeyRing::single(key(byte))
    }

    #[test]
    fn a_groups_ticket_limit_rides_in_the_signed_token() {
        let now = SystemTime::now();
        let event = EventId::parse("ev").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let until = now + Duration::from_secs(60);
        let fanclub = GroupName::parse("fanclub").unwrap();
        let limited = issue_in_group(&key(1), &event, &alice, until, Some(&fanclub), Some(2));
        let verified = verify(&ring(1), &limited, &event, &alice, now).unwrap();
        assert_eq!(verified.group_ticket_limit, Some(2));
        assert_eq!(verified.group, Some(fanclub));
        let plain = issue(&key(1), &event, &alice, until);
        assert_eq!(
            verify(&ring(1), &plain, &event, &alice, now)
                .unwrap()
                .group_ticket_limit,
            None
        );
        // Lifting the limit by editing the claims breaks the signature.
        let parts: Vec<&str> = limited.split('.').collect();
        let claims = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        let lifted = URL_SAFE_NO_PAD.encode(claims.replace(",\"l\":2", ""));
        let forged = format!("{}.{}.{}.{}", parts[0], parts[1], lifted, parts[3]);
        assert_eq!(
            verify(&ring(1), &forged, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
        // So does claiming another group (whose seats set aside would then be open to them).
        let moved = URL_SAFE_NO_PAD.encode(claims.replace("\"g\":\"fanclub\"", "\"g\":\"vip\""));
        let forged = format!("{}.{}.{}.{}", parts[0], parts[1], moved, parts[3]);
        assert_eq!(
            verify(&ring(1), &forged, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
    }

    #[test]
    fn a_token_verifies_only_for_its_event_customer_and_lifetime() {
        let now = SystemTime::now();
        let event = EventId::parse("ev").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let token = issue(&key(1), &event, &alice, now + Duration::from_secs(60));

        let ok = verify(&ring(1), &token, &event, &alice, now).unwrap();
        assert_eq!(
            unix_millis(ok.expires_at),
            unix_millis(now + Duration::from_secs(60))
        );

        let other_event = EventId::parse("ev2").unwrap();
        let bob = CustomerId::parse("bob").unwrap();
        let later = now + Duration::from_secs(61);
        assert_eq!(
            verify(&ring(2), &token, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
        assert_eq!(
            verify(&ring(1), &token, &other_event, &alice, now),
            Err(TokenRejection::OtherEvent)
        );
        assert_eq!(
            verify(&ring(1), &token, &event, &bob, now),
            Err(TokenRejection::OtherCustomer)
        );
        assert_eq!(
            verify(&ring(1), &token, &event, &alice, later),
            Err(TokenRejection::Expired)
        );
    }

    #[test]
    fn tampered_or_garbled_tokens_are_refused() {
        let now = SystemTime::now();
        let event = EventId::parse("ev").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let token = issue(&key(1), &event, &alice, now + Duration::from_secs(60));
        let (head, signature) = token.rsplit_once('.').unwrap();
        let key_id = key(1).id().to_hex();
        // A payload claiming a far-off expiry, with the old signature.
        let forged_claims =
            URL_SAFE_NO_PAD.encode(br#"{"e":"ev","c":"alice","q":"x","x":99999999999999}"#);
        for forged in [
            format!("v2.{key_id}.{forged_claims}.{signature}"),
            format!("v1.{forged_claims}.{signature}"),
        ] {
            assert_eq!(
                verify(&ring(1), &forged, &event, &alice, now),
                Err(TokenRejection::BadSignature),
                "{forged}"
            );
        }
        for garbled in [
            "",
            "v1",
            "v2.a.b",
            "v3.a.b.c",
            "v2.a.b.c.d",
            "v1.a.b.c",
            &format!("v2.{key_id}.a.b.c"),
            &format!("{head}.!!!"),
            &token.replacen(&key_id, "not-hex!", 1),
        ] {
            assert_eq!(
                verify(&ring(1), garbled, &event, &alice, now),
                Err(TokenRejection::Malformed),
                "{garbled:?}"
            );
        }
    }

    #[test]
    fn tokens_name_their_key_and_outlive_one_rotation() {
        let now = SystemTime::now();
        let event = EventId::parse("ev").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let expires = now + Duration::from_secs(60);
        let old_token = issue(&key(1), &event, &alice, expires);
        assert!(old_token.starts_with(&format!("v2.{}.", key(1).id().to_hex())));

        let rotated = KeyRing::new(key(2), Some(key(1)));
        assert!(verify(&rotated, &old_token, &event, &alice, now).is_ok());
        let new_token = issue(rotated.current(), &event, &alice, expires);
        assert!(new_token.starts_with(&format!("v2.{}.", key(2).id().to_hex())));
        assert!(verify(&rotated, &new_token, &event, &alice, now).is_ok());

        // Rotated again: the first key is neither current nor previous any more.
        let rotated_twice = KeyRing::new(key(3), Some(key(2)));
        assert_eq!(
            verify(&rotated_twice, &old_token, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
        assert!(verify(&rotated_twice, &new_token, &event, &alice, now).is_ok());

        // A token naming one key but signed with another is refused.
        let (_, rest) = new_token.split_once('.').unwrap();
        let (_, rest) = rest.split_once('.').unwrap();
        let relabelled = format!("v2.{}.{rest}", key(1).id().to_hex());
        assert_eq!(
            verify(&rotated, &relabelled, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
    }

    #[test]
    fn tokens_of_the_first_format_verify_under_the_current_key_only() {
        let now = SystemTime::now();
        let event = EventId::parse("ev").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let claims = Claims {
            e: "ev".into(),
            c: "alice".into(),
            q: key(1).queue_id(&event, &alice).as_str().to_owned(),
            x: unix_millis(now + Duration::from_secs(60)),
            l: None,
            g: None,
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
        let signature = URL_SAFE_NO_PAD.encode(key(1).mac(LEGACY_PURPOSE, &[payload.as_bytes()]));
        let legacy = format!("v1.{payload}.{signature}");
        assert!(verify(&ring(1), &legacy, &event, &alice, now).is_ok());
        assert_eq!(
            verify(
                &KeyRing::new(key(2), Some(key(1))),
                &legacy,
                &event,
                &alice,
                now
            ),
            Err(TokenRejection::BadSignature)
        );
    }
}
