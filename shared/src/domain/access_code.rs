//! Access codes: what an operator hands out so that only its holders may join an event
//! (docs/decisions/0030-access-codes.md).
//!
//! A code is 16 symbols of Crockford's base32 (`0-9 A-Z` without `I L O U`): 80 random bits,
//! printed in four groups of four (`7QKD-M3XA-9FPE-T2WC`). Customers type it as they like: case,
//! spaces and dashes do not matter, and the look-alikes `I`/`L` read as `1` and `O` as `0`.
//!
//! Only its hash is stored: `SHA-256("lineup/access-code/v1" | event | code)`, so a code is
//! bound to its event (the same code for another event is another hash, found nowhere) and a
//! leaked table lists no code. No secret pepper is needed: 80 random bits cannot be found from
//! a hash by trying (2^80 / N tries to hit any of an event's N codes; at 10^10 SHA-256 a second
//! and N = 100,000 codes, about 38 years), where a guessable code (a word, six digits) would
//! need a key the table does not hold.

use std::fmt;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::domain::ids::{EventId, GroupName};

/// Crockford's base32: no `I`, `L`, `O`, `U`, so nothing reads as something else.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A code that cannot be one: the client's fault, 400 `invalid_code`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an access code is 16 letters and digits (dashes and spaces are ignored)")]
pub struct MalformedCode;

/// An access code, normalised: 16 symbols of the alphabet, upper case, no separators.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessCode(String);

impl AccessCode {
    /// Symbols in a code: 16 × 5 = 80 random bits.
    pub const SYMBOLS: usize = 16;
    /// The longest text taken as a code before normalising (separators included).
    pub const MAX_INPUT: usize = 64;

    /// A code as a customer typed it: case, spaces and dashes ignored, `I`/`L` read as `1` and
    /// `O` as `0`; anything else, or another length, is [`MalformedCode`].
    pub fn parse(typed: &str) -> Result<Self, MalformedCode> {
        if typed.len() > Self::MAX_INPUT {
            return Err(MalformedCode);
        }
        let mut code = String::with_capacity(Self::SYMBOLS);
        for typed in typed.chars() {
            let symbol = match typed.to_ascii_uppercase() {
                ' ' | '-' => continue,
                'I' | 'L' => '1',
                'O' => '0',
                other if other.is_ascii() && ALPHABET.contains(&(other as u8)) => other,
                _ => return Err(MalformedCode),
            };
            code.push(symbol);
        }
        if code.len() == Self::SYMBOLS {
            Ok(Self(code))
        } else {
            Err(MalformedCode)
        }
    }

    /// A new code from 80 bits of the operating system's randomness (two v4 UUIDs, 244 random
    /// bits, hashed: every bit of the digest is uniform).
    pub fn generate() -> Self {
        let digest = Sha256::new()
            .chain_update(uuid::Uuid::new_v4().as_bytes())
            .chain_update(uuid::Uuid::new_v4().as_bytes())
            .finalize();
        Self::from_random(&digest[..10])
    }

    /// The code spelled by 80 bits (10 bytes), five bits a symbol.
    fn from_random(bits: &[u8]) -> Self {
        let value = bits
            .iter()
            .fold(0u128, |acc, byte| acc << 8 | u128::from(*byte));
        let code = (0..Self::SYMBOLS)
            .rev()
            .map(|i| ALPHABET[((value >> (5 * i)) & 31) as usize] as char)
            .collect();
        Self(code)
    }

    /// The code's stored form for `event`: 64 lowercase hex digits.
    pub fn hash(&self, event: &EventId) -> CodeHash {
        let digest = Sha256::new()
            .chain_update(b"lineup/access-code/v1\0")
            .chain_update(event.as_str().as_bytes())
            .chain_update(b"\0")
            .chain_update(self.0.as_bytes())
            .finalize();
        CodeHash(hex::encode(digest))
    }
}

/// Printed as it is handed out: four groups of four.
impl fmt::Display for AccessCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups: Vec<&str> = (0..4).map(|i| &self.0[4 * i..4 * i + 4]).collect();
        f.write_str(&groups.join("-"))
    }
}

/// Never in a log line: a code is a secret until used.
impl fmt::Debug for AccessCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessCode(..)")
    }
}

/// A code's hash for one event ([`AccessCode::hash`]): what the store keys it by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeHash(String);

impl CodeHash {
    /// The 64 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A stored hash read back: 64 lowercase hex digits, else `None`.
    pub fn parse(stored: &str) -> Option<Self> {
        let well_formed = stored.len() == 64
            && stored
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| Self(stored.to_owned()))
    }

    /// Which of [`CodeHash::SHARDS`] partitions the code lives in (its first hex digit), so one
    /// event's codes spread their writes at the opening over 16 partitions.
    pub fn shard(&self) -> char {
        self.0.chars().next().unwrap_or('0')
    }

    /// The partitions an event's codes are spread over.
    pub const SHARDS: [char; 16] = [
        '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
    ];
}

/// What an operator creates a batch of codes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeTerms {
    /// How many distinct accounts one code lets in (1..=[`CodeTerms::MAX_USES`]).
    pub uses: u32,
    /// After this, the code lets nobody in (those already in keep their place).
    pub expires_at: Option<SystemTime>,
    /// The priority group whose line the code's holders join, if any (a presale code: the
    /// group's members are `code` holders, [`crate::domain::priority_group::Membership::Code`]).
    pub group: Option<GroupName>,
}

impl CodeTerms {
    /// The most accounts one code may let in: a code shared by more is a password, not a code,
    /// and the accounts bound to it are kept in its one item (1,000 ids of at most 128 bytes are
    /// 128 KB, well inside DynamoDB's 400 KB).
    pub const MAX_USES: u32 = 1_000;
}

/// What a join tells the queue about access codes: the queue stores a newcomer to an event that
/// requires a code only if the join's code was accepted (its binding durable) first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeShown {
    /// No code, or none checked yet.
    Nothing,
    /// A code the store accepted for this customer and event.
    Accepted,
    /// Not a customer's request (operators' tools, tests, benchmarks): no code asked.
    Exempt,
}

impl CodeShown {
    /// Whether the queue may store a newcomer to an event that requires a code.
    pub fn lets_in(self) -> bool {
        !matches!(self, Self::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str) -> EventId {
        EventId::parse(id).unwrap()
    }

    #[test]
    fn a_generated_code_is_16_symbols_printed_in_four_groups_and_reads_back() {
        let code = AccessCode::generate();
        let printed = code.to_string();
        assert_eq!(printed.len(), 19);
        assert_eq!(printed.matches('-').count(), 3);
        assert_eq!(AccessCode::parse(&printed).unwrap(), code);
        assert!(printed.bytes().all(|b| b == b'-' || ALPHABET.contains(&b)));
    }

    #[test]
    fn codes_are_not_repeated_and_use_the_whole_alphabet() {
        let codes: std::collections::HashSet<String> =
            (0..2_000).map(|_| AccessCode::generate().0).collect();
        assert_eq!(codes.len(), 2_000);
        let symbols: std::collections::HashSet<char> =
            codes.iter().flat_map(|c| c.chars()).collect();
        assert_eq!(symbols.len(), 32, "all 32 symbols appear over 32,000 draws");
    }

    #[test]
    fn eighty_bits_spell_sixteen_symbols_most_significant_first() {
        assert_eq!(AccessCode::from_random(&[0; 10]).0, "0000000000000000");
        assert_eq!(AccessCode::from_random(&[0xff; 10]).0, "ZZZZZZZZZZZZZZZZ");
        let mut one = [0u8; 10];
        one[9] = 1;
        assert_eq!(AccessCode::from_random(&one).0, "0000000000000001");
        one[0] = 0x80;
        assert_eq!(AccessCode::from_random(&one).0, "G000000000000001");
    }

    #[test]
    fn typing_is_forgiving_case_separators_and_look_alikes() {
        let code = AccessCode::parse("7QKD-M3XA-9FPE-T2WC").unwrap();
        for typed in [
            "7qkd m3xa 9fpe t2wc",
            "7QKDM3XA9FPET2WC",
            " 7qkd-m3xa-9fpe-t2wc ",
        ] {
            assert_eq!(AccessCode::parse(typed).unwrap(), code, "{typed}");
        }
        assert_eq!(
            AccessCode::parse("IL0O-0000-0000-0000").unwrap(),
            AccessCode::parse("1100-0000-0000-0000").unwrap()
        );
    }

    #[test]
    fn anything_else_is_malformed() {
        for typed in [
            "",
            "7QKD-M3XA-9FPE-T2W",   // 15
            "7QKD-M3XA-9FPE-T2WCX", // 17
            "7QKD-M3XA-9FPE-T2WU",  // U is not a symbol
            "7QKD_M3XA_9FPE_T2WC",  // another separator
            "7QKD-M3XA-9FPE-T2WÇ",
            &"-".repeat(65),
        ] {
            assert_eq!(AccessCode::parse(typed), Err(MalformedCode), "{typed:?}");
        }
    }

    #[test]
    fn the_hash_is_per_event_and_the_same_however_the_code_was_typed() {
        let typed = AccessCode::parse("7qkd m3xa 9fpe t2wc").unwrap();
        let printed = AccessCode::parse("7QKD-M3XA-9FPE-T2WC").unwrap();
        assert_eq!(typed.hash(&event("gala")), printed.hash(&event("gala")));
        assert_ne!(typed.hash(&event("gala")), typed.hash(&event("gala2")));
        let hash = typed.hash(&event("gala"));
        assert_eq!(CodeHash::parse(hash.as_str()), Some(hash.clone()));
        assert!(!hash.as_str().contains("7QKD"));
        assert!(CodeHash::SHARDS.contains(&hash.shard()));
    }

    #[test]
    fn a_code_never_shows_in_debug_output() {
        let code = AccessCode::parse("7QKD-M3XA-9FPE-T2WC").unwrap();
        assert_eq!(format!("{code:?}"), "AccessCode(..)");
    }
}
