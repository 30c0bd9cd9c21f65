//! The pre-queue draw as the admitter runs it, once the pre-queue has closed: one admitter takes
//! it (a lock in the cache); a draw published already stands (its numbers are put in the queue,
//! it is never drawn again); a pre-queue past what the function can draw is refused, loudly
//! (`DrawRefused`), and watched before opening so it does not come to that
//! (`DrawCapacityUsedPercent`); anything else is drawn in bounded memory
//! ([`super::bounded_draw`]), published (the chunks, then the summary, which a conditional write
//! keeps from replacing another draw), then written into the queue and marked drawn.
//!
//! The ports the draw reads the pre-queue through sit here, beside their use: the pre-queue in
//! pages ([`EntrantPages`]) and its size ([`PreQueueSize`], which `lineup event` also asks
//! before it lets the opening move).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::metrics::{emit, Unit};
use crate::application::ports::event_records::{DrawPublication, DrawPublished};
use crate::application::ports::queue::PreQueueDraw;
use crate::domain::draw::DrawSummary;
use crate::domain::ids::{CustomerId, EventId};

use super::bounded_draw::{SpilledDraw, BUCKET_TARGET, MAX_BUCKET_BITS};

/// How long one admitter may hold the draw before another may take it over: longer than a draw
/// of 20 M entrants takes (82 s on one core, BENCHMARKS.md §11; the admit function's timeout is
/// 300 s).
const DRAW_LOCK: Duration = Duration::from_secs(240);

/// The closed pre-queue, read a page at a time (the draw never holds it whole).
#[async_trait]
pub trait EntrantPages: Send + Sync {
    /// The page of the closed pre-queue's customers at `cursor` (0 for the first) and the
    /// cursor of the next page, 0 after the last. A customer may come in more than one page
    /// (as `SSCAN` may return a member twice); pages may be empty.
    async fn entrant_page(
        &self,
        event: &EventId,
        cursor: u64,
    ) -> Result<(u64, Vec<CustomerId>), LineupError>;
}

/// How many have entered the pre-queue so far.
#[async_trait]
pub trait PreQueueSize: Send + Sync {
    /// The open pre-queue's members, or once it closed, how many it closed with (0 for an
    /// event the cache does not have).
    async fn pre_queue_size(&self, event: &EventId) -> Result<u64, LineupError>;
}

/// The cache's side of the draw, as the admitter takes it: one value for every port.
pub trait DrawQueue: PreQueueDraw + EntrantPages + PreQueueSize {}

impl<T: PreQueueDraw + EntrantPages + PreQueueSize> DrawQueue for T {}

/// The function's local disk the draw may spill to, by default the temporary directory (`/tmp`
/// on Lambda, 512 MB unless the function's `EphemeralStorage` says more).
#[derive(Debug, Clone)]
pub struct DrawLimits {
    /// The most bytes the draw's bucket files may take at once.
    pub disk_bytes: u64,
    /// Where they go.
    pub spill_dir: PathBuf,
}

/// Lambda's default `/tmp` (512 MB) less 64 MB for anything else the function keeps there.
pub const DEFAULT_DISK_BYTES: u64 = 448 * 1024 * 1024;
/// The disk an entrant takes at the draw's peak, for the alarm before opening: 25 bytes and a
/// 36-character customer id (a Cognito `sub`), with a margin; measured, 65 bytes. Longer ids
/// take more: the draw itself measures what it wrote before it goes on.
pub const ESTIMATED_DISK_PER_ENTRANT: u64 = 72;
/// The least disk an entrant can take (25 bytes and a one-character id).
const LEAST_DISK_PER_ENTRANT: u64 = 26;
/// The alarm before opening goes off when the pre-queue would need this share of the limits.
pub const ALARM_AT_PERCENT: u64 = 80;

impl Default for DrawLimits {
    fn default() -> Self {
        Self {
            disk_bytes: DEFAULT_DISK_BYTES,
            spill_dir: std::env::temp_dir(),
        }
    }
}

impl DrawLimits {
    /// The most entrants the draw takes in its bounded memory: the largest buckets stay about
    /// [`BUCKET_TARGET`] up to 2^[`MAX_BUCKET_BITS`] buckets (33.5 million).
    pub const MEMORY_BOUND_ENTRANTS: u64 = BUCKET_TARGET << MAX_BUCKET_BITS;

    /// The most entrants these limits are expected to draw (36-character ids).
    pub fn max_entrants(&self) -> u64 {
        (self.disk_bytes / ESTIMATED_DISK_PER_ENTRANT).min(Self::MEMORY_BOUND_ENTRANTS)
    }

    /// How much of the limits `entrants` would use, in percent (the alarm's metric).
    pub fn percent_used(&self, entrants: u64) -> u64 {
        entrants.saturating_mul(100) / self.max_entrants().max(1)
    }

    /// Refuses a count past the memory bound, or that could not fit the disk even with the
    /// shortest ids.
    pub(super) fn check_count(&self, entrants: u64) -> Result<(), DrawError> {
        if entrants > Self::MEMORY_BOUND_ENTRANTS {
            return Err(DrawError::TooManyEntrants {
                entrants,
                limit: Self::MEMORY_BOUND_ENTRANTS,
            });
        }
        self.check_disk(entrants.saturating_mul(LEAST_DISK_PER_ENTRANT))
    }

    /// Refuses a draw whose bucket files would take more than the disk allowed.
    pub(super) fn check_disk(&self, needed: u64) -> Result<(), DrawError> {
        if needed > self.disk_bytes {
            return Err(DrawError::DiskBudget {
                needed,
                budget: self.disk_bytes,
            });
        }
        Ok(())
    }
}

/// Why a draw did not complete.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    /// More entrants than the bounded draw takes.
    #[error("the pre-queue has {entrants} entrants; the draw takes at most {limit}")]
    TooManyEntrants {
        /// Entrants counted (so far).
        entrants: u64,
        /// [`DrawLimits::MEMORY_BOUND_ENTRANTS`].
        limit: u64,
    },
    /// The bucket files would not fit the local disk allowed.
    #[error("the draw needs {needed} bytes of local disk, {budget} are allowed: raise the admit function's EphemeralStorage and DrawLimits::disk_bytes")]
    DiskBudget {
        /// Bytes needed at the peak (projected).
        needed: u64,
        /// [`DrawLimits::disk_bytes`].
        budget: u64,
    },
    /// Writing or reading a bucket file failed (a full disk, most likely).
    #[error("the draw's bucket file {path} failed")]
    Spill {
        /// The file.
        path: String,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bucket file does not read back as written: a bug.
    #[error("a {stage} bucket file of the draw does not read back as written")]
    CorruptSpill {
        /// Which kind of bucket file.
        stage: &'static str,
    },
    /// The chunks were asked for before the order was computed: a bug.
    #[error("the draw's chunks were asked for before its order")]
    NotOrdered,
    /// The published draw is of another seed than the event's: nothing of it applies.
    #[error("the published draw reveals another seed than the event's")]
    PublishedWithAnotherSeed,
    /// The published draw's chunks are named by an impossible prefix length.
    #[error("the published draw's chunks are named by {0} hex digits")]
    PublishedPrefixLength(usize),
    /// The queue or the events table failed.
    #[error(transparent)]
    Store(#[from] LineupError),
}

/// What the tick reports: a store's own error as it was; the draw's own as a failure of the
/// queue (the pre-queue is the queue's), its cause kept.
impl From<DrawError> for LineupError {
    fn from(error: DrawError) -> Self {
        match error {
            DrawError::Store(error) => error,
            other => LineupError::Failed {
                store: Store::Queue,
                source: Box::new(other),
            },
        }
    }
}

/// What the draw needs to run: the cache's side and where it is published.
pub struct DrawPorts<'a> {
    /// The closed pre-queue, the draw's lock and seed, and the queue its numbers go to.
    pub queue: &'a dyn DrawQueue,
    /// Where the draw is published.
    pub publication: &'a dyn DrawPublication,
}

/// What a draw did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawOutcome {
    /// Another admitter has the draw.
    Taken,
    /// Drawn, published and written into the queue.
    Drawn {
        /// Entrants numbered.
        entrants: u64,
        /// The most bytes its bucket files took on disk at once.
        disk_peak_bytes: u64,
    },
    /// A draw was published already: its numbers were written into the queue.
    Published {
        /// Entrants given a number from it.
        written: u64,
    },
}

/// What the draw needs to know of the event's opening to set when its first number may be
/// called (`wait_policy::first_call_at`).
#[derive(Debug, Clone, Copy)]
pub struct Opening {
    /// When the event opens (the pre-queue closes).
    pub opens_at: SystemTime,
    /// How long a called customer has to claim.
    pub claim_window: Duration,
    /// The requests a second the pre-queue's opening may take at the edge.
    pub edge_budget: u64,
}

impl Opening {
    /// When the first number of a draw of `entrants` published at `published_at` may be called.
    fn first_call_at(&self, published_at: SystemTime, entrants: u64) -> SystemTime {
        crate::domain::wait_policy::first_call_at(
            self.opens_at,
            published_at,
            entrants,
            self.claim_window,
            self.edge_budget,
        )
    }
}

/// Draws `event`'s closed pre-queue of `expected` entrants (the count it closed with), unless
/// another admitter has the draw; see the module doc. What the admitter runs (and the
/// benchmark of its memory, `tests/benches/draw_memory.rs`).
pub async fn draw(
    ports: &DrawPorts<'_>,
    event: &EventId,
    expected: u64,
    limits: &DrawLimits,
    opening: &Opening,
    now: SystemTime,
) -> Result<DrawOutcome, LineupError> {
    if !ports.queue.lock_draw(event, DRAW_LOCK).await? {
        return Ok(DrawOutcome::Taken);
    }
    let seed = ports
        .queue
        .draw_seed(event)
        .await?
        .ok_or_else(|| LineupError::QueueReply {
            operation: "draw",
            reply: "no draw seed".to_owned(),
        })?;
    let started = std::time::Instant::now();
    let mut spilled = match SpilledDraw::read(ports.queue, event, &seed, expected, limits).await {
        Err(refused @ (DrawError::TooManyEntrants { .. } | DrawError::DiskBudget { .. })) => {
            emit(
                &[("EventId", event.as_str())],
                &[("DrawRefused", 1.0, Unit::Count)],
            );
            tracing::error!(event = %event, expected, error = %refused, "the pre-queue draw is refused: nobody is admitted until it can run");
            return Err(refused.into());
        }
        read => read?,
    };
    // A draw published already (by a tick that failed after it, or by another admitter)
    // stands: it is never drawn again.
    if let Some(published) = ports.publication.draw_summary(event).await? {
        return write_published(ports, &mut spilled, event, &published, opening, now).await;
    }
    let order = spilled.order()?;
    if order.entrants < expected {
        emit(
            &[("EventId", event.as_str())],
            &[(
                "DrawEntrantsLost",
                (expected - order.entrants) as f64,
                Unit::Count,
            )],
        );
        tracing::error!(event = %event, expected, found = order.entrants, "the closed pre-queue has fewer entrants than it closed with (lost with the cache?): drawing those there are");
    }
    // Looked at again just before the chunks are written: the chunks of a published draw
    // are never overwritten (the summary's conditional write is the last word).
    if let Some(published) = ports.publication.draw_summary(event).await? {
        return write_published(ports, &mut spilled, event, &published, opening, now).await;
    }
    let summary = spilled
        .publish_chunks(ports.publication, event, now)
        .await?;
    match ports.publication.publish_summary(event, &summary).await? {
        DrawPublished::Published | DrawPublished::AlreadyPublished => {
            spilled.write_numbers(ports.queue, event).await?;
        }
        DrawPublished::Conflict(published) => {
            tracing::error!(event = %event, published = %published.entrant_digest, drawn = %summary.entrant_digest, "another draw was published while this one was written: the published one stands");
            return write_published(ports, &mut spilled, event, &published, opening, now).await;
        }
    }
    // Published now (the draw took a while since the tick's `now`).
    let published_at = now + started.elapsed();
    let first_call_at = opening.first_call_at(published_at, order.entrants);
    ports
        .queue
        .mark_drawn(event, first_call_at, published_at)
        .await?;
    tracing::info!(
        event = %event,
        entrants = order.entrants,
        digest = %order.digest,
        disk_peak_bytes = spilled.disk_peak(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        first_call_in_s = first_call_at
            .duration_since(published_at)
            .unwrap_or_default()
            .as_secs(),
        "pre-queue drawn and published"
    );
    Ok(DrawOutcome::Drawn {
        entrants: order.entrants,
        disk_peak_bytes: spilled.disk_peak(),
    })
}

/// The published draw's numbers for the entrants read, then the event marked drawn.
async fn write_published(
    ports: &DrawPorts<'_>,
    spilled: &mut SpilledDraw,
    event: &EventId,
    published: &DrawSummary,
    opening: &Opening,
    now: SystemTime,
) -> Result<DrawOutcome, LineupError> {
    let (written, unlisted) = spilled
        .write_published_numbers(ports.publication, published, ports.queue, event)
        .await?;
    if unlisted > 0 {
        tracing::warn!(event = %event, unlisted, "entrants the published draw does not list get no number from it");
    }
    // The first call as the publication set it (its time is in the summary).
    let published_at = crate::domain::clock::parse_rfc3339(&published.published_at).unwrap_or(now);
    let first_call_at = opening.first_call_at(published_at, published.entrants);
    ports.queue.mark_drawn(event, first_call_at, now).await?;
    tracing::warn!(event = %event, written, entrants = published.entrants, "a draw was published already: its numbers are put in the queue, nothing is drawn again");
    Ok(DrawOutcome::Published { written })
}

/// Before opening, how full the pre-queue is for the draw: `PreQueueEntrants` and
/// `DrawCapacityUsedPercent`, and an error log past [`ALARM_AT_PERCENT`], so the limits are
/// raised before the opening, not found at it.
pub(super) async fn watch_pre_queue(
    queue: &dyn PreQueueSize,
    event: &EventId,
    limits: &DrawLimits,
) {
    let entrants = match queue.pre_queue_size(event).await {
        Ok(entrants) => entrants,
        Err(error) => {
            tracing::warn!(event = %event, error = %error, "could not count the pre-queue");
            return;
        }
    };
    let percent = limits.percent_used(entrants);
    emit(
        &[("EventId", event.as_str())],
        &[
            ("PreQueueEntrants", entrants as f64, Unit::Count),
            ("DrawCapacityUsedPercent", percent as f64, Unit::Count),
        ],
    );
    if percent >= ALARM_AT_PERCENT {
        tracing::error!(
            event = %event,
            entrants,
            percent,
            max_entrants = limits.max_entrants(),
            disk_bytes = limits.disk_bytes,
            "the pre-queue is near what the draw can take: raise the admit function's EphemeralStorage and DrawLimits::disk_bytes before opening"
        );
    }
}
