//! The pre-queue draw, verifiable by anyone (commit, then reveal).
//!
//! Customers who join before opening form the pre-queue, a set with no order. When the event is
//! first configured it gets a secret random seed, and its public status carries a commitment to
//! it (a hash) from then on. At opening the pre-queue closes and the draw gives its entrants the
//! first queue numbers, in an order that mixes the committed seed with a digest of the closed
//! entrant list. Then the seed is revealed and the whole draw is published (salted hashes of the
//! customer ids, with their numbers), split into chunks by hash prefix so the entrants can learn
//! their numbers through the CDN. `lineup verify-draw` recomputes it from what was published.
//!
//! What this proves: the seed was fixed before anyone joined (its hash was public), and the order
//! is a fixed function of the seed and the list. An operator who knows the seed still cannot pick
//! a winner by choosing when an account joins, because every join changes the digest and with it
//! every entrant's draw. What it does not prove: that an operator did not join the pre-queue with
//! many accounts of their own and keep, of the lists those accounts could make, the one that
//! draws best (2^k tries for k accounts). A public randomness beacon at closing time would end
//! that; see `docs/decisions/0016-waiting-room-at-internet-scale.md`.
//!
//! The algorithm (`lineup-draw-v1`), all hashes SHA-256, hex lowercase:
//! - commitment = SHA-256("lineup/draw-commitment/v1\n" + seed)
//! - entrant = the first 32 hex digits of SHA-256("lineup/entrant/v1\n" + seed + "\n" + customer id)
//! - digest = SHA-256 of the sorted entrants, each followed by "\n"
//! - each entrant's key = SHA-256(seed + "\n" + digest + "\n" + entrant); numbers 1, 2, ... in
//!   ascending key order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::ids::{CustomerId, EventId};

/// The name of the algorithm above, published in the summary so a checker knows what to run.
pub const ALGORITHM: &str = "lineup-draw-v1";

/// The event's secret draw seed: 64 hex digits, made once per event, revealed after the draw.
#[derive(Clone, PartialEq, Eq)]
pub struct DrawSeed(String);

/// Never print the seed before it is revealed, even in a debug log.
impl std::fmt::Debug for DrawSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DrawSeed(<redacted>)")
    }
}

impl DrawSeed {
    /// 32 random bytes from the OS's CSPRNG, through two v4 UUIDs (244 random bits; the rest are
    /// UUID version and variant bits).
    pub fn generate() -> Self {
        Self(format!(
            "{:032x}{:032x}",
            uuid::Uuid::new_v4().as_u128(),
            uuid::Uuid::new_v4().as_u128()
        ))
    }

    /// A stored or published seed: 64 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        let well_formed =
            text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| Self(text.to_owned()))
    }

    /// The seed itself: only for storing it, and for publishing it once the draw is done.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// What the status shows before the draw: the seed cannot be changed without it showing.
    pub fn commitment(&self) -> String {
        sha256_hex(&[b"lineup/draw-commitment/v1\n", self.0.as_bytes()])
    }

    /// The customer's salted hash in the published draw.
    pub fn entrant(&self, customer: &CustomerId) -> String {
        hex::encode(self.entrant_bytes(customer.as_str()))
    }

    /// [`DrawSeed::entrant`] as its 16 bytes (what a draw too big for memory keeps on disk),
    /// for a customer id already checked.
    pub fn entrant_bytes(&self, customer: &str) -> [u8; ENTRANT_BYTES] {
        let hash = Sha256::new()
            .chain_update(b"lineup/entrant/v1\n")
            .chain_update(self.0.as_bytes())
            .chain_update(b"\n")
            .chain_update(customer.as_bytes())
            .finalize();
        let mut entrant = [0; ENTRANT_BYTES];
        entrant.copy_from_slice(&hash[..ENTRANT_BYTES]);
        entrant
    }

    /// An entrant's place in the draw: numbers go in ascending key order (ties, never seen with
    /// 256-bit keys, by entrant). `digest` is the closed list's [`entrant_digest`].
    pub fn order_key(&self, digest: &str, entrant: &str) -> [u8; 32] {
        Sha256::new()
            .chain_update(self.0.as_bytes())
            .chain_update(b"\n")
            .chain_update(digest.as_bytes())
            .chain_update(b"\n")
            .chain_update(entrant.as_bytes())
            .finalize()
            .into()
    }
}

/// Entrant hashes are 128 bits: collisions among even a billion entrants are out of reach.
pub const ENTRANT_HEX_LEN: usize = 32;
/// An entrant hash's bytes ([`ENTRANT_HEX_LEN`] hex digits).
pub const ENTRANT_BYTES: usize = ENTRANT_HEX_LEN / 2;

fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part);
    }
    hex::encode(hash.finalize())
}

/// The digest of the closed entrant list (sorted, so it does not depend on how it was read).
pub fn entrant_digest(sorted_entrants: &[String]) -> String {
    let mut digest = EntrantDigest::default();
    for entrant in sorted_entrants {
        digest.add(entrant);
    }
    digest.finish()
}

/// [`entrant_digest`] fed one entrant at a time, in ascending order: a list too big for memory
/// is digested a sorted part after another.
#[derive(Default, Clone)]
pub struct EntrantDigest(Sha256);

impl EntrantDigest {
    /// The next entrant (hex), in ascending order.
    pub fn add(&mut self, entrant: &str) {
        self.0.update(entrant.as_bytes());
        self.0.update(b"\n");
    }

    /// The digest, 64 hex digits.
    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// The draw: each entrant's number, in entrant order. `entrants` may come in any order and may
/// repeat (a set read in pages can); the result has each once. It holds the whole list in
/// memory: the admitter's draw of a big pre-queue computes the same in bounded memory
/// (`crate::application::admit`), and this one is the reference it is checked against.
pub fn numbers(seed: &DrawSeed, entrants: impl IntoIterator<Item = String>) -> Draw {
    let mut sorted: Vec<String> = entrants.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let digest = entrant_digest(&sorted);
    let mut keyed: Vec<([u8; 32], &String)> = sorted
        .iter()
        .map(|entrant| (seed.order_key(&digest, entrant), entrant))
        .collect();
    keyed.sort_unstable();
    let numbers = keyed
        .iter()
        .enumerate()
        .map(|(index, (_, entrant))| ((*entrant).clone(), index as u64 + 1))
        .collect();
    Draw { digest, numbers }
}

/// The outcome of a draw: every entrant's queue number, with the list's digest that fixed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// The digest of the closed entrant list ([`entrant_digest`]), 64 hex digits.
    pub digest: String,
    /// Entrant → number.
    pub numbers: BTreeMap<String, u64>,
}

/// Chunks are named by the first `prefix_len` hex digits of the entrant: at most about 256
/// entries each (about 12 KB of JSON, what each entrant downloads), whatever the pre-queue's
/// size up to 4 billion, and the origin serves each chunk once per edge cache, never once per
/// entrant (a published chunk never changes).
pub fn prefix_len(entrants: u64) -> usize {
    let mut len = 1;
    while len < 6 && entrants > 256 * 16u64.pow(len as u32) {
        len += 1;
    }
    len
}

/// `GET /events/{eventId}/draw`: what an outsider needs to check the draw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrawSummary {
    /// The event the draw was for.
    pub event_id: String,
    /// The algorithm's name, [`ALGORITHM`].
    pub algorithm: String,
    /// The revealed seed, 64 hex digits.
    pub seed: String,
    /// The commitment to the seed, as the status showed it before opening.
    pub commitment: String,
    /// The digest of the sorted entrant hashes: the list the draw was made from.
    pub entrant_digest: String,
    /// How many entrants the draw numbered (the chunks must list exactly that many).
    pub entrants: u64,
    /// How many hex digits name each chunk ([`prefix_len`] of `entrants`).
    pub prefix_length: usize,
    /// When the draw was published, RFC 3339 in UTC.
    pub published_at: String,
}

impl DrawSummary {
    /// Whether `other` is the same draw: everything but the time it was published. Publishing
    /// the same draw again changes nothing; publishing another one over it is refused.
    pub fn same_draw(&self, other: &DrawSummary) -> bool {
        let Self {
            event_id,
            algorithm,
            seed,
            commitment,
            entrant_digest,
            entrants,
            prefix_length,
            published_at: _,
        } = self;
        *event_id == other.event_id
            && *algorithm == other.algorithm
            && *seed == other.seed
            && *commitment == other.commitment
            && *entrant_digest == other.entrant_digest
            && *entrants == other.entrants
            && *prefix_length == other.prefix_length
    }
}

/// `GET /events/{eventId}/draw/{prefix}`: the entrants whose hash starts with `prefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrawChunk {
    /// The first hex digits every entrant of the chunk shares (`prefixLength` of them).
    pub prefix: String,
    /// `[entrant, number]` pairs, by entrant.
    pub entries: Vec<(String, u64)>,
}

impl DrawChunk {
    /// The number the draw gave `entrant`, if this chunk lists it.
    pub fn number_of(&self, entrant: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|(listed, _)| listed == entrant)
            .map(|(_, number)| *number)
    }
}

/// Every chunk prefix of a draw with prefixes `len` hex digits long, in order.
pub fn all_prefixes(len: usize) -> impl Iterator<Item = String> {
    (0..16u64.pow(len as u32)).map(move |n| format!("{n:0len$x}"))
}

/// `event`'s draw as published at `published_at`: the summary (the seed revealed) and every
/// chunk (empty ones included, so a missing chunk is a fact to check, not a gap).
pub fn publish(
    draw: &Draw,
    event: &EventId,
    seed: &DrawSeed,
    published_at: std::time::SystemTime,
) -> (DrawSummary, Vec<DrawChunk>) {
    let len = prefix_len(draw.numbers.len() as u64);
    let mut chunks: BTreeMap<String, Vec<(String, u64)>> = all_prefixes(len)
        .map(|prefix| (prefix, Vec::new()))
        .collect();
    for (entrant, number) in &draw.numbers {
        if let Some(chunk) = chunks.get_mut(&entrant[..len]) {
            chunk.push((entrant.clone(), *number));
        }
    }
    let summary = DrawSummary {
        event_id: event.as_str().to_owned(),
        algorithm: ALGORITHM.to_owned(),
        seed: seed.reveal().to_owned(),
        commitment: seed.commitment(),
        entrant_digest: draw.digest.clone(),
        entrants: draw.numbers.len() as u64,
        prefix_length: len,
        published_at: crate::domain::clock::rfc3339(published_at),
    };
    let chunks = chunks
        .into_iter()
        .map(|(prefix, entries)| DrawChunk { prefix, entries })
        .collect();
    (summary, chunks)
}

/// One way a published draw fails to check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrawMismatch {
    /// The summary names another algorithm than [`ALGORITHM`] (the name it gives).
    #[error("the algorithm is {0:?}, not {ALGORITHM}")]
    UnknownAlgorithm(String),
    /// The revealed seed is not a seed at all: nothing else can be checked.
    #[error("the seed is not 64 hex digits")]
    MalformedSeed,
    /// The revealed seed does not hash to the published commitment.
    #[error("the seed does not match the commitment published before the draw")]
    CommitmentMismatch,
    /// The checker kept a commitment from before opening, and the summary shows another.
    #[error("the published commitment differs from the one the status showed before opening")]
    CommitmentChanged,
    /// The chunks are not named the way the entrant count says: the chunks are not read.
    #[error("the chunks are named by {published} hex digits; {expected} for this many entrants")]
    PrefixLength {
        /// The summary's `prefixLength`.
        published: usize,
        /// [`prefix_len`] of the summary's entrant count.
        expected: usize,
    },
    /// A chunk of the draw was not published (its prefix).
    #[error("chunk {0:?} is missing")]
    MissingChunk(String),
    /// A chunk lists an entrant whose hash does not start with the chunk's prefix.
    #[error("entrant {entrant} is in chunk {chunk:?}, not the chunk of its prefix")]
    WrongChunk {
        /// The misplaced entrant hash.
        entrant: String,
        /// The prefix of the chunk that lists it.
        chunk: String,
    },
    /// The entrants listed in the chunks do not hash to the published entrant digest.
    #[error("the entrant digest is {published}, the entrants give {computed}")]
    DigestMismatch {
        /// The summary's `entrantDigest`.
        published: String,
        /// The digest of the entrants the chunks list.
        computed: String,
    },
    /// The chunks list another number of entrants than the summary announces.
    #[error("{published} entrants announced, {listed} listed")]
    CountMismatch {
        /// The summary's `entrants`.
        published: u64,
        /// How many distinct entrants the chunks list.
        listed: u64,
    },
    /// The event's status does not call the draw published.
    #[error("the status does not show the draw as published")]
    StatusNotPublished,
    /// The status counts another number of pre-queue entrants than the published draw numbers:
    /// the draw is not the draw of the pre-queue the status announced when it closed.
    #[error(
        "the status counts {status} entrants in the closed pre-queue, the draw numbers {published}"
    )]
    StatusCountMismatch {
        /// The status's `draw.entrants` (0 when it shows none).
        status: u64,
        /// The summary's `entrants`.
        published: u64,
    },
    /// The status reveals another seed than the published draw's.
    #[error("the status reveals another seed than the published draw")]
    StatusSeedMismatch,
    /// The status shows another commitment than the published draw's.
    #[error("the status shows another commitment than the published draw")]
    StatusCommitmentMismatch,
    /// The status names the chunks by another prefix length than the published draw.
    #[error("the status names the chunks by {status} hex digits, the draw by {published}")]
    StatusPrefixLengthMismatch {
        /// The status's `draw.prefixLength` (0 when it shows none).
        status: usize,
        /// The summary's `prefixLength`.
        published: usize,
    },
    /// An entrant's published number is not the one the recomputed draw gives it.
    #[error("entrant {entrant} has number {published}, the draw gives {computed}")]
    WrongNumber {
        /// The entrant hash.
        entrant: String,
        /// The number its chunk lists.
        published: u64,
        /// The number the recomputed draw gives (0 when it gives none).
        computed: u64,
    },
}

/// Recomputes the draw from what was published and lists every disagreement (empty: it checks
/// out). `committed` is the commitment seen before opening, if the checker kept one.
pub fn verify(
    summary: &DrawSummary,
    chunks: &[DrawChunk],
    committed: Option<&str>,
) -> Vec<DrawMismatch> {
    let mut mismatches = Vec::new();
    if summary.algorithm != ALGORITHM {
        mismatches.push(DrawMismatch::UnknownAlgorithm(summary.algorithm.clone()));
    }
    let Some(seed) = DrawSeed::parse(&summary.seed) else {
        mismatches.push(DrawMismatch::MalformedSeed);
        return mismatches;
    };
    if seed.commitment() != summary.commitment {
        mismatches.push(DrawMismatch::CommitmentMismatch);
    }
    if committed.is_some_and(|committed| committed != summary.commitment) {
        mismatches.push(DrawMismatch::CommitmentChanged);
    }
    let expected = prefix_len(summary.entrants);
    if summary.prefix_length != expected {
        mismatches.push(DrawMismatch::PrefixLength {
            published: summary.prefix_length,
            expected,
        });
        return mismatches;
    }
    let by_prefix: BTreeMap<&str, &DrawChunk> = chunks
        .iter()
        .map(|chunk| (chunk.prefix.as_str(), chunk))
        .collect();
    let mut published = BTreeMap::new();
    for prefix in all_prefixes(summary.prefix_length) {
        let Some(chunk) = by_prefix.get(prefix.as_str()) else {
            mismatches.push(DrawMismatch::MissingChunk(prefix));
            continue;
        };
        for (entrant, number) in &chunk.entries {
            if !entrant.starts_with(&prefix) {
                mismatches.push(DrawMismatch::WrongChunk {
                    entrant: entrant.clone(),
                    chunk: prefix.clone(),
                });
            }
            published.insert(entrant.clone(), *number);
        }
    }
    if published.len() as u64 != summary.entrants {
        mismatches.push(DrawMismatch::CountMismatch {
            published: summary.entrants,
            listed: published.len() as u64,
        });
    }
    let computed = numbers(&seed, published.keys().cloned());
    if computed.digest != summary.entrant_digest {
        mismatches.push(DrawMismatch::DigestMismatch {
            published: summary.entrant_digest.clone(),
            computed: computed.digest.clone(),
        });
    }
    for (entrant, number) in &published {
        let expected = computed.numbers.get(entrant).copied().unwrap_or_default();
        if expected != *number {
            mismatches.push(DrawMismatch::WrongNumber {
                entrant: entrant.clone(),
                published: *number,
                computed: expected,
            });
        }
    }
    mismatches
}

/// What the event's public status says of its draw (`domain::status::DrawStatus::of_draw`), as
/// [`verify_status`] compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusOfDraw {
    /// The status calls the draw published.
    pub published: bool,
    /// The closed pre-queue's count, if shown.
    pub entrants: Option<u64>,
    /// The revealed seed, if shown.
    pub seed: Option<String>,
    /// The commitment to the seed.
    pub commitment: String,
    /// The chunks' prefix length, if shown.
    pub prefix_length: Option<usize>,
}

/// Cross-checks the published summary against the event's public status (what the status says
/// of the draw: the closed pre-queue's count, the revealed seed, the commitment, the chunks'
/// prefix length). [`verify`] checks the chunks against the summary; this closes the triangle, so
/// a draw published over another (a different list, a lost one drawn empty) does not check out.
pub fn verify_status(summary: &DrawSummary, status: &StatusOfDraw) -> Vec<DrawMismatch> {
    let mut mismatches = Vec::new();
    if !status.published {
        mismatches.push(DrawMismatch::StatusNotPublished);
    }
    if status.entrants != Some(summary.entrants) {
        mismatches.push(DrawMismatch::StatusCountMismatch {
            status: status.entrants.unwrap_or_default(),
            published: summary.entrants,
        });
    }
    if status.seed.as_deref() != Some(summary.seed.as_str()) {
        mismatches.push(DrawMismatch::StatusSeedMismatch);
    }
    if status.commitment != summary.commitment {
        mismatches.push(DrawMismatch::StatusCommitmentMismatch);
    }
    if status.prefix_length != Some(summary.prefix_length) {
        mismatches.push(DrawMismatch::StatusPrefixLengthMismatch {
            status: status.prefix_length.unwrap_or_default(),
            published: summary.prefix_length,
        });
    }
    mismatches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> DrawSeed {
        DrawSeed::parse(&"ab".repeat(32)).unwrap()
    }

    fn customers(n: usize) -> Vec<CustomerId> {
        (0..n)
            .map(|i| CustomerId::parse(&format!("customer-{i}")).unwrap())
            .collect()
    }

    fn published(draw: &Draw) -> (DrawSummary, Vec<DrawChunk>) {
        let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        publish(draw, &EventId::parse("gala").unwrap(), &seed(), at)
    }

    #[test]
    fn seeds_are_64_hex_digits_fresh_each_time_and_never_printed() {
        let (a, b) = (DrawSeed::generate(), DrawSeed::generate());
        assert_ne!(a, b);
        assert!(DrawSeed::parse(a.reveal()).is_some());
        assert!(DrawSeed::parse("AB").is_none());
        assert!(DrawSeed::parse(&"g".repeat(64)).is_none());
        assert_eq!(format!("{a:?}"), "DrawSeed(<redacted>)");
        assert_ne!(a.commitment(), b.commitment());
        assert_eq!(a.commitment().len(), 64);
    }

    #[test]
    fn numbers_are_a_permutation_and_do_not_depend_on_reading_order() {
        let entrants: Vec<String> = customers(500).iter().map(|c| seed().entrant(c)).collect();
        let draw = numbers(&seed(), entrants.clone());
        let mut got: Vec<u64> = draw.numbers.values().copied().collect();
        got.sort_unstable();
        assert_eq!(got, (1..=500).collect::<Vec<_>>());
        let mut reversed = entrants.clone();
        reversed.reverse();
        reversed.extend(entrants.iter().take(10).cloned()); // a page read twice
        assert_eq!(numbers(&seed(), reversed), draw);
    }

    /// The algorithm as published: figures from an independent implementation of the spec in
    /// the module doc (Python's hashlib), so a refactoring cannot change a published draw.
    #[test]
    fn the_draw_is_the_documented_algorithm() {
        let draw = numbers(&seed(), customers(5).iter().map(|c| seed().entrant(c)));
        assert_eq!(
            draw.digest,
            "49a50d6f23dbea5cf9d4bedab1ce1cc230f97c106e67095e6e456b86d0ab5aff"
        );
        let expected = [
            ("1413b2f03dd414a5d3bd9ee27d5a0442", 2),
            ("af6c6f915c01fd168e48450075a6b810", 1),
            ("7459010b53bea80a198a8859e0b95e2e", 5),
            ("236dc08371d1030e700f101bd5a36067", 3),
            ("e0e836b7397310261f83956a241cb8f5", 4),
        ];
        for (customer, (entrant, number)) in customers(5).iter().zip(expected) {
            assert_eq!(seed().entrant(customer), entrant);
            assert_eq!(draw.numbers[entrant], number, "{entrant}");
        }
    }

    #[test]
    fn one_more_entrant_reshuffles_everyone() {
        let entrants: Vec<String> = customers(200).iter().map(|c| seed().entrant(c)).collect();
        let before = numbers(&seed(), entrants.clone());
        let mut more = entrants.clone();
        more.push(seed().entrant(&CustomerId::parse("late-sham-account").unwrap()));
        let after = numbers(&seed(), more);
        let moved = entrants
            .iter()
            .filter(|e| before.numbers[*e] != after.numbers[*e])
            .count();
        // A join does not just shift places by one: it re-draws the list.
        assert!(moved > 150, "only {moved} of 200 moved");
    }

    #[test]
    fn prefix_length_keeps_chunks_small() {
        assert_eq!(prefix_len(0), 1);
        assert_eq!(prefix_len(1_000), 1);
        assert_eq!(prefix_len(4_096), 1);
        assert_eq!(prefix_len(4_097), 2);
        assert_eq!(prefix_len(1_000_000), 3);
        assert_eq!(prefix_len(10_000_000), 4);
        assert_eq!(prefix_len(u64::MAX), 6);
        assert_eq!(all_prefixes(2).count(), 256);
        assert_eq!(all_prefixes(1).last().as_deref(), Some("f"));
    }

    #[test]
    fn a_published_draw_verifies_and_one_swapped_number_does_not() {
        let entrants: Vec<String> = customers(1_000).iter().map(|c| seed().entrant(c)).collect();
        let draw = numbers(&seed(), entrants);
        let (summary, mut chunks) = published(&draw);
        assert_eq!(summary.entrants, 1_000);
        assert_eq!(chunks.len(), 16);
        assert_eq!(
            verify(&summary, &chunks, Some(&seed().commitment())),
            vec![]
        );

        // Swap two entrants' numbers in one chunk.
        let chunk = chunks.iter_mut().find(|c| c.entries.len() >= 2).unwrap();
        let (first, second) = (chunk.entries[0].1, chunk.entries[1].1);
        chunk.entries[0].1 = second;
        chunk.entries[1].1 = first;
        let found = verify(&summary, &chunks, None);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found
            .iter()
            .all(|m| matches!(m, DrawMismatch::WrongNumber { .. })));
    }

    #[test]
    fn a_changed_seed_list_or_commitment_is_caught() {
        let draw = numbers(&seed(), customers(50).iter().map(|c| seed().entrant(c)));
        let (summary, chunks) = published(&draw);

        let other_seed = DrawSeed::generate();
        let forged = DrawSummary {
            seed: other_seed.reveal().into(),
            ..summary.clone()
        };
        assert!(verify(&forged, &chunks, None).contains(&DrawMismatch::CommitmentMismatch));
        assert!(verify(&summary, &chunks, Some(&other_seed.commitment()))
            .contains(&DrawMismatch::CommitmentChanged));

        let mut dropped = chunks.clone();
        let chunk = dropped.iter_mut().find(|c| !c.entries.is_empty()).unwrap();
        chunk.entries.pop();
        let found = verify(&summary, &dropped, None);
        assert!(found
            .iter()
            .any(|m| matches!(m, DrawMismatch::CountMismatch { .. })));
        assert!(found
            .iter()
            .any(|m| matches!(m, DrawMismatch::DigestMismatch { .. })));

        let regrouped = DrawSummary {
            prefix_length: 2,
            ..summary.clone()
        };
        assert_eq!(
            verify(&regrouped, &chunks, None),
            vec![DrawMismatch::PrefixLength {
                published: 2,
                expected: 1
            }]
        );
        let missing: Vec<DrawChunk> = chunks.iter().skip(1).cloned().collect();
        assert!(verify(&summary, &missing, None).contains(&DrawMismatch::MissingChunk("0".into())));
    }

    #[test]
    fn the_same_draw_published_later_is_the_same_draw_and_any_other_field_is_not() {
        let draw = numbers(&seed(), customers(50).iter().map(|c| seed().entrant(c)));
        let (summary, _) = published(&draw);
        let later = DrawSummary {
            published_at: "2030-01-01T00:00:00.000Z".into(),
            ..summary.clone()
        };
        assert!(summary.same_draw(&later));
        let others = [
            DrawSummary {
                entrants: 49,
                ..summary.clone()
            },
            DrawSummary {
                entrant_digest: entrant_digest(&[]),
                ..summary.clone()
            },
            DrawSummary {
                seed: DrawSeed::generate().reveal().into(),
                ..summary.clone()
            },
            DrawSummary {
                event_id: "other".into(),
                ..summary.clone()
            },
        ];
        for other in &others {
            assert!(!summary.same_draw(other), "{other:?}");
        }
    }

    #[test]
    fn a_status_that_counts_other_entrants_than_the_draw_is_caught() {
        let draw = numbers(&seed(), customers(50).iter().map(|c| seed().entrant(c)));
        let (summary, _) = published(&draw);
        let status = StatusOfDraw {
            commitment: seed().commitment(),
            seed: Some(seed().reveal().to_owned()),
            entrants: Some(50),
            prefix_length: Some(1),
            published: true,
        };
        assert_eq!(verify_status(&summary, &status), vec![]);

        let more = StatusOfDraw {
            entrants: Some(51),
            ..status.clone()
        };
        assert_eq!(
            verify_status(&summary, &more),
            vec![DrawMismatch::StatusCountMismatch {
                status: 51,
                published: 50
            }]
        );
        let unpublished = StatusOfDraw {
            seed: None,
            prefix_length: None,
            published: false,
            ..status.clone()
        };
        assert_eq!(
            verify_status(&summary, &unpublished),
            vec![
                DrawMismatch::StatusNotPublished,
                DrawMismatch::StatusSeedMismatch,
                DrawMismatch::StatusPrefixLengthMismatch {
                    status: 0,
                    published: 1
                },
            ]
        );
        let other_commitment = StatusOfDraw {
            commitment: DrawSeed::generate().commitment(),
            ..status
        };
        assert_eq!(
            verify_status(&summary, &other_commitment),
            vec![DrawMismatch::StatusCommitmentMismatch]
        );
    }
}
