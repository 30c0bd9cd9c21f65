//! The bot challenge at join: a proof-of-work an event may ask of every new joiner, so that
//! queueing ten thousand accounts costs ten thousand times a second of CPU (see
//! docs/decisions/0028-a-proof-of-work-at-join.md).
//!
//! The challenge is stateless: `HMAC(signing key, "lineup/join-challenge/v1" | event | customer |
//! window)`, with `window` the number of the current [`WINDOW`]-long period since the epoch. Only
//! the server can make one (no precomputation), it names one customer and one event (no use by
//! anyone else, nor for another event), and it is accepted in its own window and the next one
//! only (no replay later). The client finds a `nonce` such that `SHA-256(challenge ‖ nonce)`
//! starts with at least the event's [`ChallengeDifficulty`] zero bits: about `2^difficulty`
//! hashes for the client, two HMACs and one hash for the server ([`KeyRing::check_work`]), the
//! MAC compared in constant time.

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::domain::ids::{CustomerId, EventId};
use crate::domain::keys::KeyRing;
use crate::domain::signing::SigningKey;

/// How long one challenge window lasts. A challenge is accepted in its window and the next,
/// so a client has between one and two windows to solve it and join.
pub const WINDOW: Duration = Duration::from_secs(60);

/// How many leading zero bits an event asks of a join's proof-of-work: 0 (none, the default)
/// up to [`ChallengeDifficulty::MAX_BITS`]. Each bit doubles the client's expected work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChallengeDifficulty(u8);

/// A difficulty above [`ChallengeDifficulty::MAX_BITS`]: minutes of a phone's time per join.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a challenge difficulty is 0 to {max} leading zero bits (got {got})", max = ChallengeDifficulty::MAX_BITS)]
pub struct DifficultyOutOfRange {
    /// The difficulty asked for.
    pub got: u32,
}

impl ChallengeDifficulty {
    /// No challenge: joins need no proof-of-work.
    pub const NONE: Self = Self(0);
    /// The highest difficulty accepted: 2^24 hashes, several seconds even on a laptop's
    /// WebCrypto and half a minute or more on a phone (BENCHMARKS.md).
    pub const MAX_BITS: u32 = 24;
    /// The difficulty BENCHMARKS.md recommends: about a second on a mid-range phone.
    pub const RECOMMENDED: Self = Self(18);

    /// `bits` leading zero bits, or why not.
    pub fn new(bits: u32) -> Result<Self, DifficultyOutOfRange> {
        if bits > Self::MAX_BITS {
            return Err(DifficultyOutOfRange { got: bits });
        }
        Ok(Self(bits as u8))
    }

    /// The number of leading zero bits asked for.
    pub fn bits(self) -> u32 {
        u32::from(self.0)
    }

    /// Whether joins must show a proof-of-work at all.
    pub fn is_required(self) -> bool {
        self.0 > 0
    }
}

/// A challenge as the server hands it out: 32 bytes, shown as 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedChallenge {
    /// The challenge, in hex: what the client hashes its nonces after.
    pub challenge: String,
    /// The leading zero bits the event asks for.
    pub difficulty: ChallengeDifficulty,
    /// When the challenge stops being accepted (the end of the window after its own).
    pub expires_at: SystemTime,
}

/// A join's proof-of-work, as the client sent it, validated for shape: a 32-byte challenge
/// (64 hex digits) and a nonce of 1 to [`ProofOfWork::MAX_NONCE_LEN`] ASCII letters, digits,
/// `-` or `_`. Whether it is right is [`KeyRing::check_work`]'s business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofOfWork {
    challenge: [u8; 32],
    nonce: String,
}

/// A proof-of-work that is not even in the right shape (answered 400, nothing stored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MalformedProof {
    /// The challenge is not 64 hex digits.
    #[error("proofOfWork.challenge must be the 64 hex digits the server handed out")]
    Challenge,
    /// The nonce is empty, too long, or has characters other than letters, digits, `-`, `_`.
    #[error(
        "proofOfWork.nonce must be 1 to {} letters, digits, '-' or '_'",
        ProofOfWork::MAX_NONCE_LEN
    )]
    Nonce,
}

impl ProofOfWork {
    /// The longest nonce accepted: a 64-bit counter in decimal is 20 characters.
    pub const MAX_NONCE_LEN: usize = 32;

    /// The proof, if both parts have the right shape.
    pub fn parse(challenge: &str, nonce: &str) -> Result<Self, MalformedProof> {
        let mut bytes = [0u8; 32];
        if challenge.len() != 64 || hex::decode_to_slice(challenge, &mut bytes).is_err() {
            return Err(MalformedProof::Challenge);
        }
        let nonce_ok = (1..=Self::MAX_NONCE_LEN).contains(&nonce.len())
            && nonce
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !nonce_ok {
            return Err(MalformedProof::Nonce);
        }
        Ok(Self {
            challenge: bytes,
            nonce: nonce.to_owned(),
        })
    }

    /// The challenge the proof answers, in hex.
    pub fn challenge_hex(&self) -> String {
        hex::encode(self.challenge)
    }

    /// The nonce the client found.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// The leading zero bits of `SHA-256(challenge ‖ nonce)`: the work the proof shows.
    pub fn zero_bits(&self) -> u32 {
        leading_zero_bits(&self.challenge, self.nonce.as_bytes())
    }
}

/// The leading zero bits of `SHA-256(challenge ‖ nonce)`: what the client searches for, and
/// what the server counts (the client's solver and the benchmark share it).
pub fn leading_zero_bits(challenge: &[u8; 32], nonce: &[u8]) -> u32 {
    let digest = Sha256::new()
        .chain_update(challenge)
        .chain_update(nonce)
        .finalize();
    let mut bits = 0;
    for byte in digest {
        bits += byte.leading_zeros();
        if byte != 0 {
            break;
        }
    }
    bits
}

/// The first nonce (a decimal counter from 0) whose hash after `challenge` has `difficulty`
/// leading zero bits, and how many hashes it took: what a client does, in Rust (tests, the
/// benchmark, `lineup simulate` if it ever meets a challenge).
pub fn solve(challenge: &[u8; 32], difficulty: ChallengeDifficulty) -> (String, u64) {
    let mut counter: u64 = 0;
    loop {
        let nonce = counter.to_string();
        counter += 1;
        if leading_zero_bits(challenge, nonce.as_bytes()) >= difficulty.bits() {
            return (nonce, counter);
        }
    }
}

/// What a join showed of the work its event may ask for, as the queue script weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkShown {
    /// No proof in the request.
    Nothing,
    /// A proof whose challenge is not this customer's for this event in this or the last
    /// window (forged, another customer's or event's, or stale).
    Refused,
    /// A proof with a valid challenge: its hash has this many leading zero bits.
    Bits(u32),
    /// The caller carries the operator's exemption claim: no work asked.
    Exempt,
}

impl WorkShown {
    /// The number of leading zero bits shown, as the queue script compares it with the event's
    /// difficulty: 0 for no or a refused proof, more than any difficulty for an exempt caller.
    pub fn bits(self) -> u32 {
        match self {
            Self::Nothing | Self::Refused => 0,
            Self::Bits(bits) => bits,
            Self::Exempt => 256,
        }
    }

    /// Whether the request carried a proof at all (`challenge_invalid` rather than
    /// `challenge_required` when it falls short).
    pub fn offered(self) -> bool {
        matches!(self, Self::Refused | Self::Bits(_))
    }
}

/// The number of the window `at` falls in.
fn window_of(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
        / WINDOW.as_secs()
}

impl SigningKey {
    /// The challenge for `customer` joining `event` in window number `window`.
    fn join_challenge(&self, event: &EventId, customer: &CustomerId, window: u64) -> [u8; 32] {
        self.mac(
            "lineup/join-challenge/v1",
            &[
                event.as_str().as_bytes(),
                customer.as_str().as_bytes(),
                &window.to_be_bytes(),
            ],
        )
    }
}

impl KeyRing<SigningKey> {
    /// A fresh challenge for `customer` joining `event`, made with the current key.
    pub fn issue_challenge(
        &self,
        event: &EventId,
        customer: &CustomerId,
        difficulty: ChallengeDifficulty,
        now: SystemTime,
    ) -> IssuedChallenge {
        let window = window_of(now);
        let challenge = self.current().join_challenge(event, customer, window);
        IssuedChallenge {
            challenge: hex::encode(challenge),
            difficulty,
            expires_at: SystemTime::UNIX_EPOCH
                + Duration::from_secs((window + 2) * WINDOW.as_secs()),
        }
    }

    /// What `proof` shows for `customer` joining `event` at `now`: its zero bits if its
    /// challenge is one this ring made for them in this window or the last (under the current
    /// or the previous key: a rotation does not void the challenges being solved). Every
    /// candidate is compared, in constant time, whichever matches.
    pub fn check_work(
        &self,
        proof: &ProofOfWork,
        event: &EventId,
        customer: &CustomerId,
        now: SystemTime,
    ) -> WorkShown {
        let window = window_of(now);
        let mut genuine = Choice::from(0);
        for key in self.versions() {
            for candidate in [window, window.saturating_sub(1)] {
                let expected = key.join_challenge(event, customer, candidate);
                genuine |= expected[..].ct_eq(&proof.challenge[..]);
            }
        }
        if bool::from(genuine) {
            WorkShown::Bits(proof.zero_bits())
        } else {
            WorkShown::Refused
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing<SigningKey> {
        KeyRing::single(SigningKey::new(vec![7u8; 32]).unwrap())
    }

    fn gala() -> EventId {
        EventId::parse("gala").unwrap()
    }

    fn alice() -> CustomerId {
        CustomerId::parse("alice").unwrap()
    }

    fn noon() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    /// A proof solved for `customer` at `event` at `at`, to `bits` zero bits.
    fn solved(event: &EventId, customer: &CustomerId, at: SystemTime, bits: u32) -> ProofOfWork {
        let issued =
            ring().issue_challenge(event, customer, ChallengeDifficulty::new(bits).unwrap(), at);
        let mut challenge = [0u8; 32];
        hex::decode_to_slice(&issued.challenge, &mut challenge).unwrap();
        let (nonce, _) = solve(&challenge, issued.difficulty);
        ProofOfWork::parse(&issued.challenge, &nonce).unwrap()
    }

    #[test]
    fn a_solved_challenge_shows_its_bits_in_its_window_and_the_next() {
        let proof = solved(&gala(), &alice(), noon(), 8);
        for at in [noon(), noon() + WINDOW] {
            match ring().check_work(&proof, &gala(), &alice(), at) {
                WorkShown::Bits(bits) => assert!(bits >= 8, "{bits} bits"),
                other => panic!("refused: {other:?}"),
            }
        }
    }

    #[test]
    fn a_challenge_two_windows_old_is_refused() {
        let proof = solved(&gala(), &alice(), noon(), 4);
        let later = noon() + WINDOW * 2;
        assert_eq!(
            ring().check_work(&proof, &gala(), &alice(), later),
            WorkShown::Refused
        );
    }

    #[test]
    fn a_challenge_expires_at_the_end_of_the_next_window() {
        let issued =
            ring().issue_challenge(&gala(), &alice(), ChallengeDifficulty::RECOMMENDED, noon());
        let left = issued.expires_at.duration_since(noon()).unwrap();
        assert!(left > WINDOW && left <= WINDOW * 2, "{left:?}");
    }

    #[test]
    fn another_customers_or_events_challenge_is_refused() {
        let proof = solved(&gala(), &alice(), noon(), 4);
        let bob = CustomerId::parse("bob").unwrap();
        let other = EventId::parse("other").unwrap();
        assert_eq!(
            ring().check_work(&proof, &gala(), &bob, noon()),
            WorkShown::Refused
        );
        assert_eq!(
            ring().check_work(&proof, &other, &alice(), noon()),
            WorkShown::Refused
        );
    }

    #[test]
    fn a_challenge_from_another_key_is_refused_and_the_previous_key_still_counts() {
        let proof = solved(&gala(), &alice(), noon(), 4);
        let other = KeyRing::single(SigningKey::new(vec![9u8; 32]).unwrap());
        assert_eq!(
            other.check_work(&proof, &gala(), &alice(), noon()),
            WorkShown::Refused
        );
        let rotated = KeyRing::new(
            SigningKey::new(vec![9u8; 32]).unwrap(),
            Some(SigningKey::new(vec![7u8; 32]).unwrap()),
        );
        assert!(matches!(
            rotated.check_work(&proof, &gala(), &alice(), noon()),
            WorkShown::Bits(_)
        ));
    }

    #[test]
    fn too_few_zero_bits_show_as_such() {
        let issued = ring().issue_challenge(
            &gala(),
            &alice(),
            ChallengeDifficulty::new(20).unwrap(),
            noon(),
        );
        let mut challenge = [0u8; 32];
        hex::decode_to_slice(&issued.challenge, &mut challenge).unwrap();
        // The first nonce with fewer than 20 zero bits (nearly every one).
        let nonce = (0u64..)
            .map(|n| n.to_string())
            .find(|n| leading_zero_bits(&challenge, n.as_bytes()) < 20)
            .unwrap();
        let proof = ProofOfWork::parse(&issued.challenge, &nonce).unwrap();
        match ring().check_work(&proof, &gala(), &alice(), noon()) {
            WorkShown::Bits(bits) => assert!(bits < 20),
            other => panic!("{other:?}"),
        }
        assert!(
            WorkShown::Bits(3).bits() < 20
                && WorkShown::Exempt.bits() > ChallengeDifficulty::MAX_BITS
        );
    }

    #[test]
    fn malformed_proofs_are_refused_by_shape() {
        let hex64 = "ab".repeat(32);
        assert_eq!(
            ProofOfWork::parse("abc", "1"),
            Err(MalformedProof::Challenge)
        );
        assert_eq!(
            ProofOfWork::parse(&"zz".repeat(32), "1"),
            Err(MalformedProof::Challenge)
        );
        assert_eq!(ProofOfWork::parse(&hex64, ""), Err(MalformedProof::Nonce));
        assert_eq!(
            ProofOfWork::parse(&hex64, &"1".repeat(33)),
            Err(MalformedProof::Nonce)
        );
        assert_eq!(
            ProofOfWork::parse(&hex64, "1 2"),
            Err(MalformedProof::Nonce)
        );
        assert_eq!(ProofOfWork::parse(&hex64, "é"), Err(MalformedProof::Nonce));
        assert!(ProofOfWork::parse(&hex64, "12345").is_ok());
    }

    #[test]
    fn difficulties_above_the_maximum_are_refused() {
        assert_eq!(
            ChallengeDifficulty::new(0).unwrap(),
            ChallengeDifficulty::NONE
        );
        assert!(!ChallengeDifficulty::NONE.is_required());
        assert_eq!(ChallengeDifficulty::new(24).unwrap().bits(), 24);
        assert_eq!(
            ChallengeDifficulty::new(25),
            Err(DifficultyOutOfRange { got: 25 })
        );
    }

    #[test]
    fn zero_bits_are_counted_across_bytes() {
        // Known: find a nonce with ≥ 12 bits and check the count matches the digest.
        let challenge = [1u8; 32];
        let (nonce, hashes) = solve(&challenge, ChallengeDifficulty::new(12).unwrap());
        assert!(hashes >= 1);
        let digest = Sha256::new()
            .chain_update(challenge)
            .chain_update(nonce.as_bytes())
            .finalize();
        assert_eq!(digest[0], 0);
        assert!(digest[1] < 0x10);
    }
}
