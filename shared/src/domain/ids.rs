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

    /// The waiting line of one of the event's priority groups
    /// ([`crate::domain::priority_group`]): `<event>.<group>`. The queue runs it as an event of
    /// its own (its pre-queue, draw, numbers, cursor and status), under the event's hash tag, and
    /// sharing the event's admissions and seats. The `.` is in no event id, so no line is ever
    /// taken for an event, and no client can name one where an event is expected: only the
    /// read-only routes (status, draw) accept it ([`EventId::parse_line`]).
    pub fn group_line(&self, group: &GroupName) -> Self {
        Self(format!("{}.{}", self.event_part(), group.as_str()))
    }

    /// The event a line belongs to (the event itself for its general line).
    pub fn event(&self) -> Self {
        Self(self.event_part().to_owned())
    }

    /// The priority group whose line this is; `None` for the event's general line.
    pub fn group(&self) -> Option<GroupName> {
        self.0
            .split_once('.')
            .map(|(_, group)| GroupName(group.to_owned()))
    }

    fn event_part(&self) -> &str {
        self.0.split_once('.').map_or(&self.0, |(event, _)| event)
    }

    /// An event id, or a group's line `<event>.<group>`: what the read-only routes (the status,
    /// the draw and its chunks) and the stores of open events accept; else `invalid_event_id`.
    pub fn parse_line(raw: &str) -> Result<Self, InvalidId> {
        match raw.split_once('.') {
            None => Self::parse(raw),
            Some((event, group)) => {
                let event = Self::parse(event)?;
                let group = GroupName::parse(group).map_err(|_| {
                    InvalidId::malformed(
                        "invalid_event_id",
                        "eventId must be an event id, or <event id>.<group> for a group's line",
                    )
                })?;
                Ok(event.group_line(&group))
            }
        }
    }
}

/// A priority group of an event (a presale's fan club, a card partner's customers): 1–32 of
/// `a-z 0-9 -`, starting with a letter. Lower case only, so `fanclub` and `FanClub` are never
/// two groups; `general` is the name of everyone else, so no group takes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName(String);

impl GroupName {
    /// The longest group name, in bytes.
    pub const MAX_LEN: usize = 32;
    /// What the status and the CLI call everyone who is in no group.
    pub const GENERAL: &'static str = "general";

    /// A group name from an operator's command or a stored record; else `invalid_group`.
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        let well_formed = (1..=Self::MAX_LEN).contains(&raw.len())
            && raw.starts_with(|c: char| c.is_ascii_lowercase())
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && raw != Self::GENERAL;
        if well_formed {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId::malformed(
                "invalid_group",
                "a group name is 1-32 characters of a-z, 0-9 or '-', starting with a letter, and not 'general'",
            ))
        }
    }

    /// The name as given, safe in a key, a path and a queue ticket unescaped.
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
    /// The longest queue ticket, in bytes (a group's name, 32, and its dot included).
    pub const MAX_LEN: usize = 97;

    /// The path's `queueId`, checked for the ticket's shape only; else `invalid_queue_id` (400).
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        let decimal =
            |part: &str| (1..=20).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
        let parts: Vec<&str> = raw.split('.').collect();
        // A ticket for a priority group's line starts with the group's name.
        let ticket = match parts.as_slice() {
            [group, rest @ ..] if GroupName::parse(group).is_ok() => rest,
            all => all,
        };
        let well_formed = raw.len() <= Self::MAX_LEN
            && matches!(ticket, [number, issued, mac]
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

    /// The priority group whose line the ticket is for (`<group>.<number>.<issued>.<MAC>`);
    /// `None` for the event's general line. Only the MAC says whether that is true.
    pub fn group(&self) -> Option<GroupName> {
        let (first, _) = self.0.split_once('.')?;
        GroupName::parse(first).ok()
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
display_as_str!(EventId, GroupName, CustomerId, QueueId, SeatId, OrderId, PaymentId);

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
    fn a_group_line_is_its_event_and_group_and_only_the_read_routes_take_one() {
        let event = EventId::parse("concert-2027").unwrap();
        let fanclub = GroupName::parse("fanclub").unwrap();
        let line = event.group_line(&fanclub);
        assert_eq!(line.as_str(), "concert-2027.fanclub");
        assert_eq!(line.event(), event);
        assert_eq!(line.group(), Some(fanclub.clone()));
        assert_eq!(event.group(), None);
        assert_eq!(event.event(), event);
        assert_eq!(line.group_line(&fanclub), line);
        assert_eq!(EventId::parse_line("concert-2027.fanclub").unwrap(), line);
        assert_eq!(EventId::parse_line("concert-2027").unwrap(), event);
        assert!(EventId::parse("concert-2027.fanclub").is_err());
        for bad in [
            "concert.",
            ".fanclub",
            "a.b.c",
            "a.Fan",
            "a.general",
            "a.1x",
            "a}.b",
        ] {
            assert!(
                EventId::parse_line(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
    }

    #[test]
    fn group_names_are_lower_case_slugs_and_never_general() {
        assert!(GroupName::parse("card-2027").is_ok());
        for bad in [
            "",
            "general",
            "Fan",
            "1club",
            "fan club",
            "fan.club",
            &"a".repeat(33),
        ] {
            assert!(GroupName::parse(bad).is_err(), "{bad:?} should be refused");
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
        assert!(QueueId::parse("fanclub.12.1800000000000.AAAAAAAAAAAAAAAAAAAAAA").is_ok());
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
            "Fan.12.1800000000000.AAAAAAAAAAAAAAAAAAAAAA",
            "fan.club.12.1800000000000.AAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(QueueId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
