//! The pre-queue draw in bounded memory, so a pre-queue of any size the guard allows is drawn
//! by an `admit` function of fixed size: the entrants go to bucket files on the function's local
//! disk (`/tmp` on Lambda), each bucket is sorted alone, and what is in memory at once is one
//! bucket (about [`BUCKET_TARGET`] entrants) and a few write buffers, whatever the count. The
//! outcome is byte for byte the in-memory reference ([`draw::numbers`], [`draw::publish`]): the
//! same digest, the same numbers, the same chunks, so `lineup verify-draw` and published draws
//! are unchanged.
//!
//! Buckets are named by the leading bits of a SHA-256 hash (uniform, and the seed is secret
//! until the draw is published), 2^k of them with k chosen for the expected count. The passes:
//!
//! 1. **read**: each page of the closed pre-queue (`SSCAN`) → each customer's entrant hash →
//!    `entrants-<bucket of the entrant>`;
//! 2. **digest**: the entrant buckets in order, each sorted and without repeats (a set read in
//!    pages may repeat a member): in bucket order they are the sorted list, digested as it goes;
//! 3. **keys**: each entrant's order key (it needs the digest) → `keyed-<bucket of the key>`,
//!    with the key's first 8 bytes;
//! 4. **numbers**: the keyed buckets in order, each sorted by key (ties of the 8 bytes by the
//!    whole key, then the entrant, as the reference sorts): numbers 1, 2, … across them →
//!    `numbered-<bucket of the entrant>`;
//! 5. **chunks**: the numbered buckets in order, each sorted by entrant: the chunks, in prefix
//!    order, published as they fill;
//! 6. after the summary is published (by the caller): **the numbers into the queue**, a numbered
//!    bucket at a time.
//!
//! Each bucket file is removed once read for the last time. On disk at the peak: about
//! `(25 + customer id length)` bytes an entrant ([`SpilledDraw::projected_disk_peak`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::application::ports::event_records::DrawPublication;
use crate::application::ports::queue::PreQueueDraw;
use crate::domain::draw::{self, DrawChunk, DrawSeed, DrawSummary, EntrantDigest, ENTRANT_BYTES};
use crate::domain::ids::{CustomerId, EventId};

use super::pre_queue_draw::{DrawError, DrawLimits, EntrantPages};

/// About this many entrants a bucket: what one pass holds in memory at once.
pub const BUCKET_TARGET: u64 = 65_536;
/// At most 2^9 buckets: a pass keeps one file open per bucket it writes (Lambda allows 1,024
/// descriptors), so past `512 × BUCKET_TARGET` entrants (33.5 million) buckets grow instead.
pub const MAX_BUCKET_BITS: u32 = 9;
/// Each bucket file's write buffer.
const WRITE_BUFFER: usize = 8 * 1024;
/// Chunks handed to the publication at once (8 `BatchWriteItem` requests of 25).
const CHUNKS_PER_WRITE: usize = 200;
/// Entrants given their numbers per queue write (the adapter's own batch).
const NUMBERS_PER_WRITE: usize = 5_000;

/// The three kinds of bucket files.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Entrant, customer: by the entrant's leading bits.
    Entrants,
    /// Key (first 8 bytes), entrant, customer: by the key's leading bits.
    Keyed,
    /// Entrant, number, customer: by the entrant's leading bits.
    Numbered,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Self::Entrants => "entrants",
            Self::Keyed => "keyed",
            Self::Numbered => "numbered",
        }
    }
}

/// The bucket of a hash: its leading `bits` bits.
fn bucket_of(hash: &[u8], bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    let lead = u32::from_be_bytes([hash[0], hash[1], hash[2], hash[3]]);
    (lead >> (32 - bits)) as usize
}

/// How many leading bits name the buckets for `expected` entrants.
pub fn bucket_bits(expected: u64) -> u32 {
    let buckets = expected.div_ceil(BUCKET_TARGET).max(1);
    buckets
        .next_power_of_two()
        .trailing_zeros()
        .min(MAX_BUCKET_BITS)
}

/// One entrant as a bucket file holds it; the customer id borrows the bucket's bytes.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    /// The first 8 bytes of the order key ([`Stage::Keyed`] only, else 0).
    key: u64,
    entrant: [u8; ENTRANT_BYTES],
    /// The number ([`Stage::Numbered`] only, else 0).
    number: u32,
    customer: &'a [u8],
}

impl Entry<'_> {
    fn encode(&self, stage: Stage, out: &mut Vec<u8>) {
        out.clear();
        if let Stage::Keyed = stage {
            out.extend_from_slice(&self.key.to_be_bytes());
        }
        out.extend_from_slice(&self.entrant);
        if let Stage::Numbered = stage {
            out.extend_from_slice(&self.number.to_le_bytes());
        }
        // Customer ids are at most 128 bytes (`CustomerId::MAX_LEN`).
        out.push(self.customer.len() as u8);
        out.extend_from_slice(self.customer);
    }

    fn customer_id(&self) -> Option<CustomerId> {
        std::str::from_utf8(self.customer)
            .ok()
            .and_then(|raw| CustomerId::parse(raw).ok())
    }

    fn entrant_hex(&self) -> String {
        hex::encode(self.entrant)
    }
}

/// Reads back the entries of one bucket file, as [`Entry::encode`] wrote them.
fn decode(stage: Stage, bytes: &[u8]) -> Result<Vec<Entry<'_>>, DrawError> {
    let mut entries = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut entry = Entry {
            key: 0,
            entrant: [0; ENTRANT_BYTES],
            number: 0,
            customer: &[],
        };
        if let Stage::Keyed = stage {
            let (key, tail) = split(rest, 8, stage)?;
            entry.key = u64::from_be_bytes(key.try_into().map_err(|_| corrupt(stage))?);
            rest = tail;
        }
        let (entrant, tail) = split(rest, ENTRANT_BYTES, stage)?;
        entry.entrant.copy_from_slice(entrant);
        rest = tail;
        if let Stage::Numbered = stage {
            let (number, tail) = split(rest, 4, stage)?;
            entry.number = u32::from_le_bytes(number.try_into().map_err(|_| corrupt(stage))?);
            rest = tail;
        }
        let (len, tail) = split(rest, 1, stage)?;
        let (customer, tail) = split(tail, usize::from(len[0]), stage)?;
        entry.customer = customer;
        rest = tail;
        entries.push(entry);
    }
    Ok(entries)
}

fn split(bytes: &[u8], at: usize, stage: Stage) -> Result<(&[u8], &[u8]), DrawError> {
    if bytes.len() < at {
        return Err(corrupt(stage));
    }
    Ok(bytes.split_at(at))
}

fn corrupt(stage: Stage) -> DrawError {
    DrawError::CorruptSpill {
        stage: stage.name(),
    }
}

/// Sorted by entrant, each entrant once (the smallest customer id kept: a 128-bit collision is
/// out of reach, but the choice must not depend on the reading order).
fn sorted_unique(entries: &mut Vec<Entry<'_>>) {
    entries.sort_unstable_by(|a, b| (a.entrant, a.customer).cmp(&(b.entrant, b.customer)));
    entries.dedup_by(|later, first| later.entrant == first.entrant);
}

/// The bucket files of one draw, in a directory of its own, removed when dropped.
struct SpillDir {
    root: PathBuf,
    /// Bytes in the bucket files now, and the most there were.
    on_disk: u64,
    peak: u64,
}

impl SpillDir {
    fn create(parent: &Path, event: &EventId) -> Result<Self, DrawError> {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let root = parent.join(format!(
            "lineup-draw-{event}-{}-{nanos:x}",
            std::process::id()
        ));
        std::fs::create_dir_all(&root).map_err(|source| spill_failed(&root, source))?;
        Ok(Self {
            root,
            on_disk: 0,
            peak: 0,
        })
    }

    fn path(&self, stage: Stage, bucket: usize) -> PathBuf {
        self.root.join(format!("{}-{bucket:03x}", stage.name()))
    }

    /// One buffered file per bucket of `stage`.
    fn writers(&self, stage: Stage, bits: u32) -> Result<Buckets, DrawError> {
        let files = (0..1usize << bits)
            .map(|bucket| {
                let path = self.path(stage, bucket);
                File::create(&path)
                    .map(|file| BufWriter::with_capacity(WRITE_BUFFER, file))
                    .map_err(|source| spill_failed(&path, source))
            })
            .collect::<Result<_, _>>()?;
        Ok(Buckets {
            stage,
            bits,
            files,
            record: Vec::with_capacity(256),
            written: 0,
        })
    }

    /// Flushes every bucket of a stage; its bytes count as on disk.
    fn finish(&mut self, buckets: Buckets) -> Result<(), DrawError> {
        for (bucket, file) in buckets.files.into_iter().enumerate() {
            file.into_inner().map_err(|error| {
                spill_failed(&self.path(buckets.stage, bucket), error.into_error())
            })?;
        }
        self.on_disk += buckets.written;
        self.peak = self.peak.max(self.on_disk);
        Ok(())
    }

    fn read(&self, stage: Stage, bucket: usize) -> Result<Vec<u8>, DrawError> {
        let path = self.path(stage, bucket);
        std::fs::read(&path).map_err(|source| spill_failed(&path, source))
    }

    /// A bucket read for the last time: its bytes leave the disk.
    fn remove(&mut self, stage: Stage, bucket: usize, len: usize) -> Result<(), DrawError> {
        let path = self.path(stage, bucket);
        std::fs::remove_file(&path).map_err(|source| spill_failed(&path, source))?;
        self.on_disk = self.on_disk.saturating_sub(len as u64);
        Ok(())
    }

    /// While a stage is written from another, both are on disk.
    fn note_growth(&mut self, writing: &Buckets) {
        self.peak = self.peak.max(self.on_disk + writing.written);
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.root) {
            tracing::warn!(path = %self.root.display(), error = %error, "could not remove the draw's spill directory");
        }
    }
}

fn spill_failed(path: &Path, source: std::io::Error) -> DrawError {
    DrawError::Spill {
        path: path.display().to_string(),
        source,
    }
}

/// The open bucket files of one stage.
struct Buckets {
    stage: Stage,
    bits: u32,
    files: Vec<BufWriter<File>>,
    record: Vec<u8>,
    written: u64,
}

impl Buckets {
    fn append(
        &mut self,
        bucket_hash: &[u8],
        entry: &Entry<'_>,
        dir: &Path,
    ) -> Result<(), DrawError> {
        let bucket = bucket_of(bucket_hash, self.bits);
        entry.encode(self.stage, &mut self.record);
        self.files[bucket]
            .write_all(&self.record)
            .map_err(|source| spill_failed(&dir.join(self.stage.name()), source))?;
        self.written += self.record.len() as u64;
        Ok(())
    }
}

/// The entrants as the order needs them, and what the order gave: a draw under way.
pub struct SpilledDraw {
    dir: SpillDir,
    bits: u32,
    seed: DrawSeed,
    /// Customers read (repeats included).
    read: u64,
    /// Distinct entrants, once digested.
    entrants: u64,
    digest: Option<String>,
    /// The stage whose buckets hold the entrants by entrant now: the read ones until they are
    /// numbered, then the numbered ones.
    by_entrant: Stage,
}

/// What the draw's ordering found: enough for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawnOrder {
    /// The digest of the sorted entrant list.
    pub digest: String,
    /// Distinct entrants, numbered 1..=entrants.
    pub entrants: u64,
}

impl SpilledDraw {
    /// Pass 1: reads the closed pre-queue page by page into entrant buckets under
    /// `limits.spill_dir`, refusing, before and while it reads, a pre-queue past the limits.
    pub async fn read(
        pages: &dyn EntrantPages,
        event: &EventId,
        seed: &DrawSeed,
        expected: u64,
        limits: &DrawLimits,
    ) -> Result<Self, DrawError> {
        limits.check_count(expected)?;
        let bits = bucket_bits(expected);
        let mut dir = SpillDir::create(&limits.spill_dir, event)?;
        let mut buckets = dir.writers(Stage::Entrants, bits)?;
        let mut read = 0u64;
        let mut cursor = 0;
        loop {
            let (next, page) = pages.entrant_page(event, cursor).await?;
            for customer in &page {
                let entrant = seed.entrant_bytes(customer.as_str());
                let entry = Entry {
                    key: 0,
                    entrant,
                    number: 0,
                    customer: customer.as_str().as_bytes(),
                };
                buckets.append(&entrant, &entry, &dir.root)?;
            }
            read += page.len() as u64;
            limits.check_count(read)?;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        dir.finish(buckets)?;
        let draw = Self {
            dir,
            bits,
            seed: seed.clone(),
            read,
            entrants: 0,
            digest: None,
            by_entrant: Stage::Entrants,
        };
        limits.check_disk(draw.projected_disk_peak())?;
        Ok(draw)
    }

    /// The most bytes the bucket files will take on disk at once, from what pass 1 wrote: the
    /// keyed buckets are the entrant buckets plus 8 bytes an entrant, the numbered ones plus 4,
    /// and each pass writes its stage while it removes the one before (a bucket at a time).
    pub fn projected_disk_peak(&self) -> u64 {
        let buckets = 1u64 << self.bits;
        let per_bucket = self.dir.on_disk.div_ceil(buckets) + 8 * self.read.div_ceil(buckets);
        self.dir.on_disk + 8 * self.read + 2 * per_bucket
    }

    /// The most bytes the bucket files took on disk so far.
    pub fn disk_peak(&self) -> u64 {
        self.dir.peak
    }

    /// Passes 2 to 4: the digest, then every entrant's number, in numbered buckets.
    pub fn order(&mut self) -> Result<DrawnOrder, DrawError> {
        let buckets = 1usize << self.bits;
        // 2. The digest of the sorted list: the entrant buckets in order, each sorted.
        let mut digest = EntrantDigest::default();
        let mut entrants = 0u64;
        for bucket in 0..buckets {
            let bytes = self.dir.read(Stage::Entrants, bucket)?;
            let mut entries = decode(Stage::Entrants, &bytes)?;
            sorted_unique(&mut entries);
            for entry in &entries {
                digest.add(&entry.entrant_hex());
            }
            entrants += entries.len() as u64;
        }
        let digest = digest.finish();
        if entrants > u64::from(u32::MAX) {
            return Err(DrawError::TooManyEntrants {
                entrants,
                limit: u64::from(u32::MAX),
            });
        }
        // 3. Each entrant's key, into the bucket of the key (the entrant buckets go).
        self.by_entrant = Stage::Keyed;
        let mut keyed = self.dir.writers(Stage::Keyed, self.bits)?;
        for bucket in 0..buckets {
            let bytes = self.dir.read(Stage::Entrants, bucket)?;
            let mut entries = decode(Stage::Entrants, &bytes)?;
            sorted_unique(&mut entries);
            for entry in &entries {
                let key = self.seed.order_key(&digest, &entry.entrant_hex());
                let lead: [u8; 8] = key[..8].try_into().map_err(|_| corrupt(Stage::Keyed))?;
                let keyed_entry = Entry {
                    key: u64::from_be_bytes(lead),
                    ..*entry
                };
                keyed.append(&key, &keyed_entry, &self.dir.root)?;
            }
            self.dir.note_growth(&keyed);
            self.dir.remove(Stage::Entrants, bucket, bytes.len())?;
        }
        self.dir.finish(keyed)?;
        // 4. Numbers in key order, across the keyed buckets in order.
        let mut numbered = self.dir.writers(Stage::Numbered, self.bits)?;
        let mut next = 1u64;
        for bucket in 0..buckets {
            let bytes = self.dir.read(Stage::Keyed, bucket)?;
            let mut entries = decode(Stage::Keyed, &bytes)?;
            self.sort_by_key(&digest, &mut entries);
            for entry in &entries {
                let number_entry = Entry {
                    number: u32::try_from(next).map_err(|_| corrupt(Stage::Numbered))?,
                    ..*entry
                };
                numbered.append(&entry.entrant, &number_entry, &self.dir.root)?;
                next += 1;
            }
            self.dir.note_growth(&numbered);
            self.dir.remove(Stage::Keyed, bucket, bytes.len())?;
        }
        self.dir.finish(numbered)?;
        self.by_entrant = Stage::Numbered;
        self.entrants = entrants;
        self.digest = Some(digest.clone());
        Ok(DrawnOrder { digest, entrants })
    }

    /// By key, as the reference sorts `(key, entrant)`: by the first 8 bytes, and where they tie
    /// (about once in 10^8 draws of 20 million), by the whole key, then the entrant.
    fn sort_by_key(&self, digest: &str, entries: &mut [Entry<'_>]) {
        entries.sort_unstable_by_key(|entry| entry.key);
        let mut start = 0;
        while start < entries.len() {
            let mut end = start + 1;
            while end < entries.len() && entries[end].key == entries[start].key {
                end += 1;
            }
            if end - start > 1 {
                entries[start..end].sort_by_cached_key(|entry| {
                    (
                        self.seed.order_key(digest, &entry.entrant_hex()),
                        entry.entrant,
                    )
                });
            }
            start = end;
        }
    }

    /// Pass 5: every non-empty chunk, in prefix order, handed to `publication` as they fill
    /// (after [`SpilledDraw::order`]). Returns the summary to publish after them.
    pub async fn publish_chunks(
        &mut self,
        publication: &dyn DrawPublication,
        event: &EventId,
        published_at: SystemTime,
    ) -> Result<DrawSummary, DrawError> {
        let digest = self.digest.clone().ok_or(DrawError::NotOrdered)?;
        let prefix_length = draw::prefix_len(self.entrants);
        let mut ready: Vec<DrawChunk> = Vec::new();
        let mut filling: Option<DrawChunk> = None;
        for bucket in 0..1usize << self.bits {
            let bytes = self.dir.read(Stage::Numbered, bucket)?;
            let mut entries = decode(Stage::Numbered, &bytes)?;
            entries.sort_unstable_by_key(|entry| entry.entrant);
            for entry in &entries {
                let entrant = entry.entrant_hex();
                let prefix = &entrant[..prefix_length];
                if filling.as_ref().is_none_or(|chunk| chunk.prefix != prefix) {
                    ready.extend(filling.take());
                    if ready.len() >= CHUNKS_PER_WRITE {
                        publication
                            .publish_chunks(event, &std::mem::take(&mut ready))
                            .await?;
                    }
                    filling = Some(DrawChunk {
                        prefix: prefix.to_owned(),
                        entries: Vec::new(),
                    });
                }
                if let Some(chunk) = filling.as_mut() {
                    chunk.entries.push((entrant, u64::from(entry.number)));
                }
            }
        }
        ready.extend(filling);
        if !ready.is_empty() {
            publication.publish_chunks(event, &ready).await?;
        }
        Ok(DrawSummary {
            event_id: event.as_str().to_owned(),
            algorithm: draw::ALGORITHM.to_owned(),
            seed: self.seed.reveal().to_owned(),
            commitment: self.seed.commitment(),
            entrant_digest: digest,
            entrants: self.entrants,
            prefix_length,
            published_at: crate::domain::clock::rfc3339(published_at),
        })
    }

    /// Pass 6: each entrant into the queue at their number (after the summary is published).
    /// Returns how many numbers were handed to the queue.
    pub async fn write_numbers(
        &mut self,
        queue: &dyn PreQueueDraw,
        event: &EventId,
    ) -> Result<u64, DrawError> {
        let mut batch = Vec::with_capacity(NUMBERS_PER_WRITE);
        let mut written = 0;
        for bucket in 0..1usize << self.bits {
            let bytes = self.dir.read(Stage::Numbered, bucket)?;
            for entry in decode(Stage::Numbered, &bytes)? {
                let Some(customer) = entry.customer_id() else {
                    return Err(corrupt(Stage::Numbered));
                };
                batch.push((customer, u64::from(entry.number)));
                if batch.len() == NUMBERS_PER_WRITE {
                    queue.write_numbers(event, &batch).await?;
                    written += batch.len() as u64;
                    batch.clear();
                }
            }
        }
        if !batch.is_empty() {
            queue.write_numbers(event, &batch).await?;
            written += batch.len() as u64;
        }
        Ok(written)
    }

    /// Instead of passes 5 and 6, when a draw is published already (it stands): each entrant
    /// read into the queue at the number the published draw gives it, reading each chunk once
    /// (from the entrant buckets, or once ordered, the numbered ones). Returns how many were
    /// numbered, and how many the published draw does not list.
    pub async fn write_published_numbers(
        &mut self,
        publication: &dyn DrawPublication,
        published: &DrawSummary,
        queue: &dyn PreQueueDraw,
        event: &EventId,
    ) -> Result<(u64, u64), DrawError> {
        if published.seed != self.seed.reveal() {
            return Err(DrawError::PublishedWithAnotherSeed);
        }
        let mut batch = Vec::with_capacity(NUMBERS_PER_WRITE);
        let (mut written, mut unlisted) = (0, 0);
        let mut chunk: Option<DrawChunk> = None;
        let stage = match self.by_entrant {
            Stage::Keyed => return Err(DrawError::NotOrdered),
            stage => stage,
        };
        for bucket in 0..1usize << self.bits {
            let bytes = self.dir.read(stage, bucket)?;
            let mut entries = decode(stage, &bytes)?;
            sorted_unique(&mut entries);
            for entry in &entries {
                let entrant = entry.entrant_hex();
                let Some(prefix) = entrant.get(..published.prefix_length) else {
                    return Err(DrawError::PublishedPrefixLength(published.prefix_length));
                };
                if chunk.as_ref().is_none_or(|chunk| chunk.prefix != prefix) {
                    chunk = Some(publication.draw_chunk(event, prefix).await?.unwrap_or_else(
                        || DrawChunk {
                            prefix: prefix.to_owned(),
                            entries: Vec::new(),
                        },
                    ));
                }
                let number = chunk.as_ref().and_then(|chunk| chunk.number_of(&entrant));
                let (Some(number), Some(customer)) = (number, entry.customer_id()) else {
                    unlisted += 1;
                    continue;
                };
                batch.push((customer, number));
                if batch.len() == NUMBERS_PER_WRITE {
                    queue.write_numbers(event, &batch).await?;
                    written += batch.len() as u64;
                    batch.clear();
                }
            }
        }
        if !batch.is_empty() {
            queue.write_numbers(event, &batch).await?;
            written += batch.len() as u64;
        }
        Ok((written, unlisted))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use async_trait::async_trait;

    use super::*;
    use crate::application::error::LineupError;
    use crate::application::fakes::records::MemoryRecords;

    /// The customers in pages of 1,000, each page starting again with the last customer of
    /// the page before, as `SSCAN` may; and the numbers written, as the queue gets them.
    struct Pages {
        customers: Vec<CustomerId>,
        numbers: Mutex<Vec<(CustomerId, u64)>>,
    }

    impl Pages {
        fn of(n: usize) -> Self {
            let mut customers: Vec<CustomerId> = (0..n)
                .map(|i| CustomerId::parse(&format!("customer-{i}")).unwrap())
                .collect();
            customers.reverse();
            Self {
                customers,
                numbers: Mutex::new(Vec::new()),
            }
        }

        fn written(&self) -> Vec<(CustomerId, u64)> {
            let mut written = self.numbers.lock().unwrap().clone();
            written.sort();
            written
        }
    }

    #[async_trait]
    impl EntrantPages for Pages {
        async fn entrant_page(
            &self,
            _: &EventId,
            cursor: u64,
        ) -> Result<(u64, Vec<CustomerId>), LineupError> {
            let start = cursor as usize;
            let end = (start + 1_000).min(self.customers.len());
            let next = if end == self.customers.len() {
                0
            } else {
                end - 1
            };
            Ok((next as u64, self.customers[start..end].to_vec()))
        }
    }

    #[async_trait]
    impl PreQueueDraw for Pages {
        async fn lock_draw(&self, _: &EventId, _: Duration) -> Result<bool, LineupError> {
            Ok(true)
        }
        async fn draw_seed(&self, _: &EventId) -> Result<Option<DrawSeed>, LineupError> {
            Ok(None)
        }
        async fn write_numbers(
            &self,
            _: &EventId,
            numbers: &[(CustomerId, u64)],
        ) -> Result<(), LineupError> {
            self.numbers.lock().unwrap().extend_from_slice(numbers);
            Ok(())
        }
        async fn mark_drawn(
            &self,
            _: &EventId,
            _: std::time::SystemTime,
            _: std::time::SystemTime,
        ) -> Result<(), LineupError> {
            Ok(())
        }
    }

    fn seed() -> DrawSeed {
        DrawSeed::parse(&"5e".repeat(32)).unwrap()
    }

    fn at() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    fn limits() -> DrawLimits {
        DrawLimits {
            disk_bytes: 1 << 30,
            ..DrawLimits::default()
        }
    }

    /// The reference draw of `pages`: in memory, as the admitter drew before.
    fn reference(pages: &Pages, event: &EventId) -> (DrawSummary, Vec<DrawChunk>) {
        let drawn = draw::numbers(&seed(), pages.customers.iter().map(|c| seed().entrant(c)));
        draw::publish(&drawn, event, &seed(), at())
    }

    /// `entrants` drawn in buckets sized for `sized_for` (so a few thousand entrants spread over
    /// many buckets, chunks inside a bucket or across several) give the reference's summary, its
    /// chunks and its numbers, byte for byte.
    async fn the_bounded_draw_is_the_reference(entrants: usize, sized_for: u64) {
        let event = EventId::parse("bounded").unwrap();
        let pages = Pages::of(entrants);
        let records = MemoryRecords::new();
        let mut spilled = SpilledDraw::read(&pages, &event, &seed(), sized_for, &limits())
            .await
            .unwrap();
        assert_eq!(spilled.bits, bucket_bits(sized_for));
        assert!(spilled.read > entrants as u64, "pages repeat customers");
        let order = spilled.order().unwrap();
        let summary = spilled
            .publish_chunks(&records, &event, at())
            .await
            .unwrap();
        spilled.write_numbers(&pages, &event).await.unwrap();

        let (expected, chunks) = reference(&pages, &event);
        assert_eq!(order.entrants, entrants as u64);
        assert_eq!(order.digest, expected.entrant_digest);
        assert_eq!(
            serde_json::to_string(&summary).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        for chunk in &chunks {
            let stored = records.draw_chunk(&event, &chunk.prefix).await.unwrap();
            let stored = stored.unwrap_or_else(|| DrawChunk {
                prefix: chunk.prefix.clone(),
                entries: Vec::new(),
            });
            assert_eq!(
                serde_json::to_string(&stored).unwrap(),
                serde_json::to_string(chunk).unwrap()
            );
        }
        let drawn = draw::numbers(&seed(), pages.customers.iter().map(|c| seed().entrant(c)));
        let mut expected_numbers: Vec<(CustomerId, u64)> = pages
            .customers
            .iter()
            .map(|c| (c.clone(), drawn.numbers[&seed().entrant(c)]))
            .collect();
        expected_numbers.sort();
        assert_eq!(pages.written(), expected_numbers);
        assert!(spilled.disk_peak() > 0);
        assert!(spilled.disk_peak() <= spilled.projected_disk_peak());
    }

    #[tokio::test]
    async fn a_draw_in_one_bucket_is_the_reference() {
        the_bounded_draw_is_the_reference(3_000, 3_000).await;
    }

    #[tokio::test]
    async fn a_draw_whose_chunks_span_many_buckets_is_the_reference() {
        // 512 buckets, 16 chunks: each chunk across 32 buckets.
        the_bounded_draw_is_the_reference(3_000, 30_000_000).await;
    }

    #[tokio::test]
    async fn a_draw_whose_buckets_hold_many_chunks_is_the_reference() {
        // 16 buckets, 256 chunks: 16 chunks a bucket.
        the_bounded_draw_is_the_reference(6_000, 16 * BUCKET_TARGET).await;
    }

    #[test]
    fn keys_tied_in_their_first_bytes_are_ordered_by_the_whole_key() {
        let spilled_seed = seed();
        let digest = "d".repeat(64);
        let customers: Vec<String> = (0..50).map(|i| format!("c{i}")).collect();
        let mut entries: Vec<Entry<'_>> = customers
            .iter()
            .map(|customer| Entry {
                key: 7,
                entrant: spilled_seed.entrant_bytes(customer),
                number: 0,
                customer: customer.as_bytes(),
            })
            .collect();
        let dir =
            SpillDir::create(&std::env::temp_dir(), &EventId::parse("ties").unwrap()).unwrap();
        let spilled = SpilledDraw {
            dir,
            bits: 0,
            seed: spilled_seed.clone(),
            read: 0,
            entrants: 0,
            digest: None,
            by_entrant: Stage::Entrants,
        };
        spilled.sort_by_key(&digest, &mut entries);
        let got: Vec<String> = entries.iter().map(Entry::entrant_hex).collect();
        let mut expected: Vec<([u8; 32], String)> = got
            .iter()
            .map(|entrant| (spilled_seed.order_key(&digest, entrant), entrant.clone()))
            .collect();
        expected.sort();
        assert_eq!(
            got,
            expected.into_iter().map(|(_, e)| e).collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn a_published_draw_gives_its_numbers_before_or_after_the_order_is_computed() {
        let event = EventId::parse("published").unwrap();
        let pages = Pages::of(2_000);
        let records = MemoryRecords::new();
        // Published from 1,999 of them: the last customer is not in it.
        let listed = Pages {
            customers: pages.customers[..1_999].to_vec(),
            numbers: Mutex::new(Vec::new()),
        };
        let (summary, chunks) = reference(&listed, &event);
        records
            .publish_draw(&event, &summary, &chunks)
            .await
            .unwrap();
        let drawn = draw::numbers(&seed(), listed.customers.iter().map(|c| seed().entrant(c)));
        let mut expected: Vec<(CustomerId, u64)> = listed
            .customers
            .iter()
            .map(|c| (c.clone(), drawn.numbers[&seed().entrant(c)]))
            .collect();
        expected.sort();

        for ordered_first in [false, true] {
            let queue = Pages::of(2_000);
            let mut spilled = SpilledDraw::read(&queue, &event, &seed(), 1_000_000, &limits())
                .await
                .unwrap();
            if ordered_first {
                spilled.order().unwrap();
            }
            let (written, unlisted) = spilled
                .write_published_numbers(&records, &summary, &queue, &event)
                .await
                .unwrap();
            assert_eq!((written, unlisted), (1_999, 1));
            assert_eq!(queue.written(), expected);
        }

        let other_seed = DrawSummary {
            seed: "00".repeat(32),
            ..summary.clone()
        };
        let mut spilled = SpilledDraw::read(&pages, &event, &seed(), 2_000, &limits())
            .await
            .unwrap();
        assert!(matches!(
            spilled
                .write_published_numbers(&records, &other_seed, &pages, &event)
                .await,
            Err(DrawError::PublishedWithAnotherSeed)
        ));
    }

    #[tokio::test]
    async fn the_spill_directory_goes_with_the_draw() {
        let event = EventId::parse("cleaned").unwrap();
        let pages = Pages::of(100);
        let root = {
            let mut spilled = SpilledDraw::read(&pages, &event, &seed(), 100, &limits())
                .await
                .unwrap();
            spilled.order().unwrap();
            assert!(spilled.dir.root.exists());
            spilled.dir.root.clone()
        };
        assert!(!root.exists());
    }

    #[test]
    fn buckets_follow_the_leading_bits_and_grow_with_the_count_up_to_the_cap() {
        assert_eq!(bucket_bits(0), 0);
        assert_eq!(bucket_bits(BUCKET_TARGET), 0);
        assert_eq!(bucket_bits(BUCKET_TARGET + 1), 1);
        assert_eq!(bucket_bits(1_000_000), 4);
        assert_eq!(bucket_bits(20_000_000), MAX_BUCKET_BITS);
        assert_eq!(bucket_of(&[0xff, 0, 0, 0], 0), 0);
        assert_eq!(bucket_of(&[0xab, 0xcd, 0, 0], 4), 0xa);
        assert_eq!(bucket_of(&[0xff, 0xff, 0xff, 0xff], 9), 511);
        assert_eq!(bucket_of(&[0x80, 0, 0, 0], 1), 1);
    }

    #[test]
    fn entries_read_back_as_written_and_a_torn_file_is_an_error() {
        let customer = b"customer-42";
        let entry = Entry {
            key: 0x0102_0304_0506_0708,
            entrant: [7; ENTRANT_BYTES],
            number: 123_456,
            customer,
        };
        for stage in [Stage::Entrants, Stage::Keyed, Stage::Numbered] {
            let mut bytes = Vec::new();
            let mut record = Vec::new();
            for _ in 0..3 {
                entry.encode(stage, &mut record);
                bytes.extend_from_slice(&record);
            }
            let read = decode(stage, &bytes).unwrap();
            assert_eq!(read.len(), 3);
            assert_eq!(read[2].entrant, entry.entrant);
            assert_eq!(read[2].customer, customer);
            assert_eq!(
                read[2].key,
                if let Stage::Keyed = stage {
                    entry.key
                } else {
                    0
                }
            );
            assert_eq!(
                read[2].number,
                if let Stage::Numbered = stage {
                    123_456
                } else {
                    0
                }
            );
            bytes.pop();
            assert!(matches!(
                decode(stage, &bytes),
                Err(DrawError::CorruptSpill { .. })
            ));
        }
    }
}
