//! Validated identifiers: once a value has one of these types, it is known to be well-formed,
//! so it can go into a Redis key or a signed token without further checks.

use std::fmt;

use crate::error::LineupError;

/// An on-sale event, as it appears in `/events/{eventId}`: 1–64 of `A-Z a-z 0-9 _ -`.
///
/// The character set keeps the id safe inside a Redis hash tag (`{ev:<id>}`): no braces, no colons.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(String);

impl EventId {
    pub const MAX_LEN: usize = 64;

    pub fn parse(raw: &str) -> Result<Self, LineupError> {
        let well_formed = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(LineupError::invalid(
                "invalid_event_id",
                "eventId must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The customer: the `sub` claim the API Gateway JWT authorizer verified. Never taken from a body.
///
/// 1–128 visible ASCII characters (Cognito uses UUIDs; other identity providers use forms such
/// as `auth0|5f7c...`). It is the member stored in the queue, so it is kept short.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomerId(String);

impl CustomerId {
    pub const MAX_LEN: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, LineupError> {
        let well_formed = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw.bytes().all(|b| b.is_ascii_graphic());
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(LineupError::Unauthenticated)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A customer's place in one event's queue, as the client sees it.
///
/// It is derived, not stored: the first 16 bytes of an HMAC over the event and the customer,
/// base64url without padding (22 characters). The server recomputes it from the caller and the
/// path, so one customer cannot name another's entry, and the queue stores nothing but the
/// customer id (see `DESIGN.md`, "Keep the queue lean").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueId(String);

impl QueueId {
    pub const LEN: usize = 22;

    /// Checks the shape only; whether it belongs to the caller is [`crate::signing::SigningKey::queue_id`]'s job.
    pub fn parse(raw: &str) -> Result<Self, LineupError> {
        let well_formed = raw.len() == Self::LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(LineupError::invalid(
                "invalid_queue_id",
                "queueId must be the 22-character id returned when joining",
            ))
        }
    }

    pub(crate) fn from_trusted(encoded: String) -> Self {
        Self(encoded)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}
display_as_str!(EventId, CustomerId, QueueId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_refuse_what_would_break_a_hash_tag() {
        assert!(EventId::parse("concert-2026_A").is_ok());
        for bad in ["", "a}b", "a{b", "ev:1", "with space", &"x".repeat(65), "é"] {
            assert!(EventId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn customer_ids_are_visible_ascii() {
        assert!(CustomerId::parse("auth0|5f7c").is_ok());
        for bad in ["", "a b", "tab\t", &"x".repeat(129)] {
            assert!(CustomerId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn queue_ids_have_one_shape() {
        assert!(QueueId::parse("AAAAAAAAAAAAAAAAAAAAAA").is_ok());
        for bad in [
            "",
            "short",
            "AAAAAAAAAAAAAAAAAAAAA=",
            "AAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(QueueId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
