//! The access token: the proof, handed out by `poll`, that a customer was admitted from an
//! event's queue. It binds the event, the queue entry, the customer and the admission's expiry,
//! signed with HMAC-SHA256, so the hold function can trust it without a lookup... almost: it
//! also asks Redis whether that very admission is still in the active set, which is how leaving
//! or paying revokes a token before it expires.
//!
//! Wire format: `v1.<base64url(JSON claims)>.<base64url(HMAC)>`.

use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::clock::{from_unix_millis, unix_millis};
use crate::ids::{CustomerId, EventId};
use crate::queue::AdmissionRegistry;
use crate::signing::SigningKey;
use crate::LineupError;

const VERSION: &str = "v1";
const PURPOSE: &str = "lineup/access-token/v1";

/// Why a token was refused. The client sees only "403 access_denied"; the reason goes to logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("no access token was sent")]
    Missing,
    #[error("the token is not a Lineup access token")]
    Malformed,
    #[error("the token's signature does not match")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token was issued for another event")]
    OtherEvent,
    #[error("the token was issued to another customer")]
    OtherCustomer,
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
}

/// A token whose signature, event, customer and expiry have been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub event: EventId,
    pub customer: CustomerId,
    pub expires_at: SystemTime,
}

/// Signs a token for `customer`'s admission to `event`, valid until `expires_at`.
pub fn issue(
    key: &SigningKey,
    event: &EventId,
    customer: &CustomerId,
    expires_at: SystemTime,
) -> String {
    let claims = Claims {
        e: event.as_str().to_owned(),
        c: customer.as_str().to_owned(),
        q: key.queue_id(event, customer).as_str().to_owned(),
        x: unix_millis(expires_at),
    };
    let payload = URL_SAFE_NO_PAD.encode(
        serde_json::to_vec(&claims).expect("claims of plain strings and numbers always serialise"),
    );
    let signature = URL_SAFE_NO_PAD.encode(key.mac(PURPOSE, &[payload.as_bytes()]));
    format!("{VERSION}.{payload}.{signature}")
}

/// Checks everything that needs no lookup: signature, expiry, event and customer.
pub fn verify(
    key: &SigningKey,
    token: &str,
    event: &EventId,
    caller: &CustomerId,
    now: SystemTime,
) -> Result<VerifiedToken, TokenRejection> {
    let mut parts = token.split('.');
    let (Some(VERSION), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenRejection::Malformed);
    };
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| TokenRejection::Malformed)?;
    let expected = key.mac(PURPOSE, &[payload.as_bytes()]);
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
    let expires_at = from_unix_millis(claims.x);
    if expires_at <= now {
        return Err(TokenRejection::Expired);
    }
    Ok(VerifiedToken {
        event: event.clone(),
        customer: caller.clone(),
        expires_at,
    })
}

/// The full check the hold function runs: [`verify`], then one Redis call confirming that this
/// admission is still the customer's live entry in the active set (not left, paid or replaced).
pub async fn check_admitted(
    key: &SigningKey,
    registry: &dyn AdmissionRegistry,
    token: Option<&str>,
    event: &EventId,
    caller: &CustomerId,
    now: SystemTime,
) -> Result<VerifiedToken, LineupError> {
    let token = token.ok_or(TokenRejection::Missing)?;
    let verified = verify(key, token, event, caller, now)?;
    if registry
        .is_admitted(event, caller, verified.expires_at, now)
        .await?
    {
        Ok(verified)
    } else {
        Err(TokenRejection::Revoked.into())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn key(byte: u8) -> SigningKey {
        SigningKey::new(vec![byte; 32]).unwrap()
    }

    #[test]
    fn a_token_verifies_only_for_its_event_customer_and_lifetime() {
        let now = SystemTime::now();
        let event = EventId::parse("ev").unwrap();
        let alice = CustomerId::parse("alice").unwrap();
        let token = issue(&key(1), &event, &alice, now + Duration::from_secs(60));

        let ok = verify(&key(1), &token, &event, &alice, now).unwrap();
        assert_eq!(
            unix_millis(ok.expires_at),
            unix_millis(now + Duration::from_secs(60))
        );

        let other_event = EventId::parse("ev2").unwrap();
        let bob = CustomerId::parse("bob").unwrap();
        let later = now + Duration::from_secs(61);
        assert_eq!(
            verify(&key(2), &token, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
        assert_eq!(
            verify(&key(1), &token, &other_event, &alice, now),
            Err(TokenRejection::OtherEvent)
        );
        assert_eq!(
            verify(&key(1), &token, &event, &bob, now),
            Err(TokenRejection::OtherCustomer)
        );
        assert_eq!(
            verify(&key(1), &token, &event, &alice, later),
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
        // A payload claiming a far-off expiry, with the old signature.
        let forged_claims =
            URL_SAFE_NO_PAD.encode(br#"{"e":"ev","c":"alice","q":"x","x":99999999999999}"#);
        let forged = format!("v1.{forged_claims}.{signature}");
        assert_eq!(
            verify(&key(1), &forged, &event, &alice, now),
            Err(TokenRejection::BadSignature)
        );
        for garbled in ["", "v1", "v2.a.b", "v1.a.b.c", &format!("{head}.!!!")] {
            assert_eq!(
                verify(&key(1), garbled, &event, &alice, now),
                Err(TokenRejection::Malformed),
                "{garbled:?}"
            );
        }
    }
}
