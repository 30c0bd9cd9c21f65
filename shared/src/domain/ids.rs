//! Validated identifiers: once a value has one of these types, it is known to be well-formed,
//! so it can go into a Redis key or a signed token without further checks.

use std::fmt;

/// An id not in its form. A request carrying one is refused (400, with the code), except a
/// customer id, which comes from the sign-in: without a usable one, nobody is signed in (401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidId {
    /// A malformed id: `code` is the error code the client sees (`invalid_event_id`...).
    #[error("{message}")]
    Malformed {
        /// The stable error code.
        code: &'static str,
        /// The sentence for the client.
        message: String,
    },
    /// No usable customer id: the caller is not signed in.
    #[error("no usable customer id in the sign-in")]
    NoCustomer,
}

impl InvalidId {
    fn malformed(code: &'static str, message: impl Into<String>) -> Self {
        Self::Malformed {
            code,
            message: message.into(),
        }
    }
}

/// An on-sale event, as it appears in `/events/{eventId}`: 1–64 of `A-Z a-z 0-9 _ -`.
///
/// The character set keeps the id safe inside a Redis hash tag (`{ev:<id>}`): no braces, no colons.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(String);

impl EventId {
    /// The longest event id, in bytes.
    pub const MAX_LEN: usize = 64;

    /// The path's `eventId`; anything else is `invalid_event_id` (400).
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        if is_plain_id(raw, Self::MAX_LEN) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId::malformed(
                "invalid_event_id",
                "eventId must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'",
            ))
        }
    }

    /// The id as given, safe to put in a key or a path unescaped.
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
    /// The longest customer id, in bytes.
    pub const MAX_LEN: usize = 128;

    /// The verified `sub` claim; one that is empty, too long or not visible ASCII is
    /// [`InvalidId::NoCustomer`] (401).
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        let well_formed = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw.bytes().all(|b| b.is_ascii_graphic());
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId::NoCustomer)
        }
    }

    /// The `sub` claim as verified: the queue member and the orders' customer.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A customer's place in one event's queue, as the client sees it: the signed queue ticket
/// `<number>.<issued ms>.<MAC>` (see [`crate::domain::signing`]): two decimal numbers and 22 characters
/// of base64url. (The library also makes the stable 22-character entry id access tokens carry,
/// which is never parsed from a request.) Parsing checks the shape only; whether it is the
/// caller's own is the signing key's to say.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueId(String);

impl QueueId {
    /// The longest queue ticket, in bytes.
    pub const MAX_LEN: usize = 64;

    /// The path's `queueId`, checked for the ticket's shape only; else `invalid_queue_id` (400).
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        let decimal =
            |part: &str| (1..=20).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
        let parts: Vec<&str> = raw.split('.').collect();
        let well_formed = raw.len() <= Self::MAX_LEN
            && matches!(parts.as_slice(), [number, issued, mac]
                if decimal(number)
                    && decimal(issued)
                    && mac.len() == 22
                    && mac.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId::malformed(
                "invalid_queue_id",
                "queueId must be the queue ticket returned when joining",
            ))
        }
    }

    pub(crate) fn from_trusted(encoded: String) -> Self {
        Self(encoded)
    }

    /// The ticket as the client holds it (or the 22-character entry id).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A seat within an event: 1–32 of `A-Z a-z 0-9 _ -` (e.g. `A-12`, `floor_0042`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct SeatId(String);

impl SeatId {
    /// The longest seat id, in bytes.
    pub const MAX_LEN: usize = 32;

    /// A seat id from a request body or a layout; else `invalid_seat_id` (400), naming it.
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        if is_plain_id(raw, Self::MAX_LEN) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId::malformed(
                "invalid_seat_id",
                format!(
                    "seat ids are 1-32 characters of A-Z, a-z, 0-9, '_' or '-' (got {:?})",
                    truncate(raw)
                ),
            ))
        }
    }

    /// The seat id as given, safe in a DynamoDB key (`<event>#<seat>`) unescaped.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SeatId {
    type Error = InvalidId;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(&raw)
    }
}

impl From<SeatId> for String {
    fn from(id: SeatId) -> Self {
        id.0
    }
}

/// An order (a hold, then a sale): a UUID, generated by the hold function.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderId(String);

impl OrderId {
    /// A new random (v4) UUID, for a new hold.
    pub fn generate() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }

    /// Any UUID form, kept in hyphenated lowercase; else `invalid_order_id` (400).
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        uuid::Uuid::try_parse(raw)
            .map(|uuid| Self(uuid.hyphenated().to_string()))
            .map_err(|_| {
                InvalidId::malformed(
                    "invalid_order_id",
                    "orderId must be the UUID returned by the hold",
                )
            })
    }

    /// The UUID, hyphenated lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The payment provider's id of one payment (`pay_...`): 1–255 visible ASCII characters. It
/// keys the record that lets a payment settle at most one order, ever.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PaymentId(String);

impl PaymentId {
    /// The longest payment id, in bytes.
    pub const MAX_LEN: usize = 255;

    /// The webhook's payment id; else `invalid_payment_id` (400).
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        let well_formed = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw.bytes().all(|b| b.is_ascii_graphic());
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId::malformed(
                "invalid_payment_id",
                "paymentId must be 1-255 visible ASCII characters",
            ))
        }
    }

    /// The provider's id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// 1 to `max_len` characters of `A-Z a-z 0-9 _ -`: safe in a Redis hash tag, a DynamoDB key
/// (`<event>#<seat>`) and a URL path, with no escaping.
fn is_plain_id(raw: &str, max_len: usize) -> bool {
    !raw.is_empty()
        && raw.len() <= max_len
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// At most 40 characters of untrusted input, for an error message.
fn truncate(raw: &str) -> String {
    raw.chars().take(40).collect()
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
display_as_str!(EventId, CustomerId, QueueId, SeatId, OrderId, PaymentId);

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
    fn payment_ids_are_visible_ascii_and_bounded() {
        assert!(PaymentId::parse("pay_1QbXyZ").is_ok());
        for bad in ["", "pay 1", "pay\n1", &"p".repeat(256)] {
            assert!(PaymentId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn queue_ids_are_tickets_in_shape() {
        assert!(QueueId::parse("12.1800000000000.AAAAAAAAAAAAAAAAAAAAAA").is_ok());
        assert!(QueueId::parse("0.1800000000000.AAAAAAAAAAAAAA_-AAAAAA").is_ok());
        for bad in [
            "",
            "AAAAAAAAAAAAAAAAAAAAAA",
            "12.1800000000000.AAAAAAAAAAAAAAAAAAAAA",
            "12.1800000000000.AAAAAAAAAAAAAAAAAAAAAAA",
            "12.1800000000000.AAAAAAAAAAAAAAAAAAAAA=",
            "-1.1800000000000.AAAAAAAAAAAAAAAAAAAAAA",
            "12..AAAAAAAAAAAAAAAAAAAAAA",
            "12.18.00.AAAAAAAAAAAAAAAAAAAAAA",
            "123456789012345678901.1.AAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(QueueId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
