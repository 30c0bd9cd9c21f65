//! `lineup verify-draw`: checks an event's pre-queue draw from what was published, as any
//! outsider can. It reads the public routes over HTTP (`GET /events/{eventId}/draw`, every chunk
//! `GET /events/{eventId}/draw/{prefix}`, and `GET /events/{eventId}/status`), recomputes the draw
//! with [`lineup::domain::draw::verify`], cross-checks the summary against the status (the count
//! the pre-queue closed with, the revealed seed, the commitment, the prefix length:
//! [`lineup::domain::draw::verify_status`]; the chunks are checked against the summary's count
//! and digest) and reports every disagreement. It uses nothing an outsider does not have: no
//! credentials, no store, no signing key.
//!
//! Exit status: 0 when the draw checks out, 1 on any mismatch, 2 when it could not be checked
//! (the API unreachable, the draw not published, an answer that is not the documented JSON).

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use lineup::domain::draw;
use lineup::domain::draw::{DrawChunk, DrawMismatch, DrawSummary};
use lineup::domain::ids::EventId;
use lineup::domain::status::DrawStatus;
use reqwest::header::RETRY_AFTER;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use tokio::time::Instant;

/// `lineup dev`'s server; in AWS, pass the CloudFront URL.
pub const DEFAULT_BASE: &str = "http://127.0.0.1:3000";
/// Chunks read at once (within [`DEFAULT_CHUNKS_PER_SECOND`]); a 429 pauses every reader.
pub const CONCURRENT_CHUNK_READS: usize = 16;
/// Chunk reads a second by default: under the WAF's per-address limit on chunk reads through
/// CloudFront (the template's `DrawChunkPerIpLimit`, 3,000 per 5 minutes: 10 a second), so one
/// address checks any draw without being blocked: 65,536 chunks (a pre-queue of millions) in
/// about 2 h 15 min, 4,096 in under 8 minutes. Against `lineup dev`, or with a raised limit,
/// `--chunks-per-second` goes faster.
pub const DEFAULT_CHUNKS_PER_SECOND: u32 = 9;
/// The report lists this many mismatches, then counts the rest.
pub const MISMATCHES_LISTED: usize = 20;
/// Tries per request when the network or the origin fails for a moment (502, 503, 504).
const ATTEMPTS: u32 = 5;
/// The first pause after a failed try; it doubles each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// How many times one request waits out a 429 (the WAF's per-IP limit answers `Retry-After: 60`
/// for as long as the address's rate is over it) before the check gives up.
const RATE_LIMITED_WAITS: u32 = 30;
/// A `Retry-After` longer than this is not waited out in full.
const LONGEST_WAIT: Duration = Duration::from_secs(300);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest chunk prefix the algorithm makes (`lineup::domain::draw::prefix_len`): 16^6 chunks.
const LONGEST_PREFIX: usize = 6;

#[derive(Debug, Clone, clap::Args)]
pub struct VerifyDrawArgs {
    /// The event's id; for a priority group's draw, `<event>.<group>` (`lineup event group list`
    /// names each line).
    #[arg(long)]
    pub event: String,
    /// Where the API is published: `lineup dev`'s server, or in AWS the CloudFront URL.
    #[arg(long, default_value = DEFAULT_BASE)]
    pub base: String,
    /// The draw commitment (64 hex digits) you saved from the event's status before opening.
    /// Without it, the current status's commitment is used: a weaker check, as only a commitment
    /// saved before opening proves the seed was fixed before anyone joined.
    #[arg(long, value_parser = parse_commitment)]
    pub commitment: Option<String>,
    /// Chunk reads a second at most (the default stays under the WAF's per-address limit).
    #[arg(long, default_value_t = DEFAULT_CHUNKS_PER_SECOND, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunks_per_second: u32,
}

/// A commitment as the status shows it: 64 lowercase hex digits (upper case is accepted).
pub fn parse_commitment(raw: &str) -> Result<String, String> {
    let commitment = raw.trim().to_ascii_lowercase();
    let well_formed = commitment.len() == 64 && commitment.bytes().all(|b| b.is_ascii_hexdigit());
    if well_formed {
        Ok(commitment)
    } else {
        Err("a draw commitment is 64 hex digits, as the status's draw.commitment shows it".into())
    }
}

/// Why the draw could not be checked (exit status 2). A draw that was checked and found wrong is
/// not an error: it is a [`DrawCheck`] with mismatches.
#[derive(Debug, thiserror::Error)]
pub enum VerifyDrawError {
    #[error("{0:?} is not a valid event id")]
    EventId(String),
    #[error("--base {0:?} is not an http:// or https:// URL")]
    Base(String),
    #[error("could not set up the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("could not read {url}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url}: the draw of this event is not published ({said})")]
    NotPublished { url: String, said: String },
    #[error("{url}: no such event ({said}); check --event and --base")]
    EventNotFound { url: String, said: String },
    #[error("{url} answered {status} ({said})")]
    Refused {
        url: String,
        status: u16,
        said: String,
    },
    #[error("{url} did not answer {what} JSON")]
    Malformed {
        url: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the draw announces chunk prefixes of {0} hex digits; {alg} uses 1 to {LONGEST_PREFIX}",
        alg = draw::ALGORITHM
    )]
    PrefixLength(usize),
}

/// What the published commitment was checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommittedBy {
    /// The commitment the checker saved before opening (`--commitment`): the strong check.
    Saved(String),
    /// The commitment the status shows now (a status after the reveal still shows it): only as
    /// good as the status being the one shown before opening.
    CurrentStatus(String),
}

impl CommittedBy {
    pub fn commitment(&self) -> &str {
        match self {
            Self::Saved(commitment) | Self::CurrentStatus(commitment) => commitment,
        }
    }

    /// Where the commitment came from, and for the status's, why it is the weaker check.
    fn describe(&self) -> (&'static str, Option<&'static str>) {
        match self {
            Self::Saved(_) => ("saved before opening, --commitment", None),
            Self::CurrentStatus(_) => (
                "read from the current status",
                Some(
                    "no --commitment was given: the status still shows the commitment after the \
                     reveal, but only the one saved from it before opening proves it was not \
                     changed",
                ),
            ),
        }
    }
}

/// A draw that was read in full and checked.
#[derive(Debug, Clone)]
pub struct DrawCheck {
    pub summary: DrawSummary,
    /// What the event's status says of the draw.
    pub status: DrawStatus,
    /// How many chunks were read.
    pub chunks: usize,
    pub committed: CommittedBy,
    /// Every disagreement; empty when the draw checks out.
    pub mismatches: Vec<DrawMismatch>,
}

/// How the command ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    ChecksOut,
    Mismatches,
    /// The draw could not be checked.
    Failed,
}

impl Verdict {
    pub fn of(outcome: &Result<DrawCheck, VerifyDrawError>) -> Self {
        match outcome {
            Ok(check) if check.mismatches.is_empty() => Self::ChecksOut,
            Ok(_) => Self::Mismatches,
            Err(_) => Self::Failed,
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            Self::ChecksOut => 0,
            Self::Mismatches => 1,
            Self::Failed => 2,
        }
    }
}

impl DrawCheck {
    /// What the command prints: the draw, what the commitment was checked against, the result,
    /// and the first [`MISMATCHES_LISTED`] mismatches with the count of the rest.
    pub fn report(&self) -> String {
        let summary = &self.summary;
        let mut lines = vec![
            format!(
                "draw of event {}, published {} ({})",
                summary.event_id, summary.published_at, summary.algorithm
            ),
            format!(
                "  entrants        {} (read from {} chunks, prefix length {})",
                summary.entrants, self.chunks, summary.prefix_length
            ),
            format!(
                "  status          {} entrants, {}",
                self.status
                    .entrants
                    .map_or_else(|| "no".to_owned(), |n| n.to_string()),
                if self.status.published {
                    "published"
                } else {
                    "not published"
                }
            ),
            format!("  entrant digest  {}", summary.entrant_digest),
            format!("  seed            {}", summary.seed),
            format!("  commitment      {}", summary.commitment),
        ];
        let (source, caveat) = self.committed.describe();
        lines.push(format!(
            "  checked against {} ({source})",
            self.committed.commitment()
        ));
        lines.extend(caveat.map(|caveat| format!("  note: {caveat}")));
        if self.mismatches.is_empty() {
            lines.push(
                "OK: the seed matches the commitment, every published number is the one the seed \
                 and the published entrant list give, and the status counts the same entrants"
                    .to_owned(),
            );
        } else {
            let count = self.mismatches.len();
            lines.push(format!(
                "FAILED: {count} mismatch{}",
                if count == 1 { "" } else { "es" }
            ));
            lines.extend(
                self.mismatches
                    .iter()
                    .take(MISMATCHES_LISTED)
                    .map(|mismatch| format!("  - {mismatch}")),
            );
            if count > MISMATCHES_LISTED {
                lines.push(format!("  ... and {} more", count - MISMATCHES_LISTED));
            }
        }
        lines.join("\n") + "\n"
    }
}

/// The error and each of its causes, on one line: what the command prints when it fails.
pub fn with_causes(error: &VerifyDrawError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The command: reads the draw from `--base` and checks it, with a progress bar on a terminal.
pub async fn run(args: &VerifyDrawArgs) -> Result<DrawCheck, VerifyDrawError> {
    // An event, or one of its priority groups' lines (`<event>.<group>`: each draws its own).
    let event = EventId::parse_line(&args.event)
        .map_err(|_| VerifyDrawError::EventId(args.event.clone()))?;
    let mut site = PublishedDraw::new(&args.base, event)?.paced(args.chunks_per_second);
    if std::io::stderr().is_terminal() {
        site = site.showing_progress();
    }
    check(&site, args.commitment.clone()).await
}

/// Reads the published draw (the summary, then every chunk, then the status) and checks it: the
/// chunks against the summary, the summary against the status, and the commitment against the
/// `saved` one, else the status's.
pub async fn check(
    site: &PublishedDraw,
    saved: Option<String>,
) -> Result<DrawCheck, VerifyDrawError> {
    let summary = site.summary().await?;
    let chunks = site.chunks(&summary).await?;
    let status = site.status_draw().await?;
    let committed = match saved {
        Some(commitment) => CommittedBy::Saved(commitment),
        None => CommittedBy::CurrentStatus(status.commitment.clone()),
    };
    let mut mismatches = draw::verify(&summary, &chunks, Some(committed.commitment()));
    mismatches.extend(draw::verify_status(&summary, &status.of_draw()));
    Ok(DrawCheck {
        chunks: chunks.len(),
        summary,
        status,
        committed,
        mismatches,
    })
}

/// One event's public routes, read over HTTP as any outsider reads them.
pub struct PublishedDraw {
    http: reqwest::Client,
    base: String,
    event: EventId,
    /// No request goes out before this: a 429 pauses every reader, not just the one that got it.
    paused_until: Mutex<Instant>,
    /// The time between two chunk reads, and when the next may start (shared by every reader).
    pace: Option<(Duration, Mutex<Instant>)>,
    /// Chunks read so far (hidden unless [`PublishedDraw::showing_progress`]).
    progress: ProgressBar,
}

/// The part of the status this command reads.
#[derive(Deserialize)]
struct StatusDraw {
    draw: DrawStatus,
}

/// An answer's status and body.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
}

impl PublishedDraw {
    pub fn new(base: &str, event: EventId) -> Result<Self, VerifyDrawError> {
        let base = base.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(VerifyDrawError::Base(base.to_owned()));
        }
        let http = crate::http_client()
            // AWS's managed WAF rules block requests without a User-Agent.
            .user_agent(concat!("lineup-verify-draw/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(CONCURRENT_CHUNK_READS)
            .build()
            .map_err(VerifyDrawError::Client)?;
        Ok(Self {
            http,
            base: base.to_owned(),
            event,
            paused_until: Mutex::new(Instant::now()),
            pace: None,
            progress: ProgressBar::hidden(),
        })
    }

    /// Reads at most `chunks_per_second` chunks a second, all readers together.
    pub fn paced(self, chunks_per_second: u32) -> Self {
        let between = Duration::from_secs(1) / chunks_per_second.max(1);
        Self {
            pace: Some((between, Mutex::new(Instant::now()))),
            ..self
        }
    }

    /// Waits for this reader's slot: each takes the next free one, [`PublishedDraw::paced`]'s
    /// interval after the one before.
    async fn wait_for_slot(&self) {
        let Some((between, next)) = &self.pace else {
            return;
        };
        let slot = {
            let mut next = next.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let slot = (*next).max(Instant::now());
            *next = slot + *between;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }

    /// Draws the chunks read so far as a bar on stderr.
    pub fn showing_progress(self) -> Self {
        let progress = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("reading the draw's chunks {bar:30} {pos}/{len} {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self { progress, ..self }
    }

    fn url(&self, tail: &str) -> String {
        format!("{}/events/{}/{tail}", self.base, self.event)
    }

    /// `GET /events/{eventId}/draw`.
    pub async fn summary(&self) -> Result<DrawSummary, VerifyDrawError> {
        let summary: DrawSummary = self.document("draw", "a draw summary").await?;
        if !(1..=LONGEST_PREFIX).contains(&summary.prefix_length) {
            return Err(VerifyDrawError::PrefixLength(summary.prefix_length));
        }
        Ok(summary)
    }

    /// Every chunk the summary announces, [`CONCURRENT_CHUNK_READS`] at a time, in no order.
    pub async fn chunks(&self, summary: &DrawSummary) -> Result<Vec<DrawChunk>, VerifyDrawError> {
        let progress = &self.progress;
        progress.set_length(16u64.pow(summary.prefix_length as u32));
        let chunks = futures::stream::iter(draw::all_prefixes(summary.prefix_length))
            .map(|prefix| async move {
                self.wait_for_slot().await;
                self.document::<DrawChunk>(&format!("draw/{prefix}"), "a draw chunk")
                    .await
            })
            .buffer_unordered(CONCURRENT_CHUNK_READS)
            .inspect_ok(|_| progress.inc(1))
            .try_collect()
            .await;
        progress.finish_and_clear();
        chunks
    }

    /// What `GET /events/{eventId}/status` shows of the draw now.
    pub async fn status_draw(&self) -> Result<DrawStatus, VerifyDrawError> {
        let status: StatusDraw = self.document("status", "an event status").await?;
        Ok(status.draw)
    }

    /// The commitment `GET /events/{eventId}/status` shows now.
    pub async fn status_commitment(&self) -> Result<String, VerifyDrawError> {
        Ok(self.status_draw().await?.commitment)
    }

    /// A 200 answer's JSON; any other answer as the error it is.
    async fn document<T: DeserializeOwned>(
        &self,
        tail: &str,
        what: &'static str,
    ) -> Result<T, VerifyDrawError> {
        let url = self.url(tail);
        let answer = self.get(&url).await?;
        match answer.status {
            StatusCode::OK => serde_json::from_slice(&answer.body)
                .map_err(|source| VerifyDrawError::Malformed { url, what, source }),
            StatusCode::NOT_FOUND => {
                let said = what_was_said(&answer.body);
                match error_code(&answer.body).as_deref() {
                    Some("draw_not_published") => Err(VerifyDrawError::NotPublished { url, said }),
                    Some("event_not_found") => Err(VerifyDrawError::EventNotFound { url, said }),
                    _ => Err(VerifyDrawError::Refused {
                        url,
                        status: StatusCode::NOT_FOUND.as_u16(),
                        said,
                    }),
                }
            }
            status => Err(VerifyDrawError::Refused {
                url,
                status: status.as_u16(),
                said: what_was_said(&answer.body),
            }),
        }
    }

    /// One GET, tried again after a network failure or a passing 502/503/504, and after a 429
    /// once its `Retry-After` has passed.
    async fn get(&self, url: &str) -> Result<Answer, VerifyDrawError> {
        let (mut failures, mut rate_limited) = (0u32, 0u32);
        loop {
            self.wait_out_pause().await;
            let sent = self.http.get(url).send().await;
            let response = match sent {
                Ok(response) => response,
                Err(source) => {
                    failures += 1;
                    let passing = source.is_connect() || source.is_timeout() || source.is_request();
                    if !passing || failures >= ATTEMPTS {
                        return Err(VerifyDrawError::Unreachable {
                            url: url.to_owned(),
                            source,
                        });
                    }
                    tokio::time::sleep(backoff(failures)).await;
                    continue;
                }
            };
            let status = response.status();
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(|seconds| Duration::from_secs(seconds).min(LONGEST_WAIT));
            let retry = match status {
                StatusCode::TOO_MANY_REQUESTS if rate_limited < RATE_LIMITED_WAITS => {
                    rate_limited += 1;
                    let wait = retry_after.unwrap_or(Duration::from_secs(60));
                    self.pause_for(wait);
                    true
                }
                StatusCode::BAD_GATEWAY
                | StatusCode::SERVICE_UNAVAILABLE
                | StatusCode::GATEWAY_TIMEOUT
                    if failures + 1 < ATTEMPTS =>
                {
                    failures += 1;
                    tokio::time::sleep(retry_after.unwrap_or_else(|| backoff(failures))).await;
                    true
                }
                _ => false,
            };
            if retry {
                continue;
            }
            let body = response
                .bytes()
                .await
                .map_err(|source| VerifyDrawError::Unreachable {
                    url: url.to_owned(),
                    source,
                })?;
            return Ok(Answer {
                status,
                body: body.to_vec(),
            });
        }
    }

    async fn wait_out_pause(&self) {
        let until = *self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        tokio::time::sleep_until(until).await;
    }

    fn pause_for(&self, wait: Duration) {
        let mut until = self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *until = (*until).max(Instant::now() + wait);
    }
}

fn backoff(failures: u32) -> Duration {
    FIRST_BACKOFF * 2u32.pow(failures.saturating_sub(1).min(6))
}

/// The service's `error.code`, if the body is its error shape.
fn error_code(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value["error"]["code"].as_str().map(str::to_owned)
}

/// What an error answer says: the service's `code: message`, the gateway's or WAF's `message`,
/// or the start of the body.
fn what_was_said(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let error = &value["error"];
        if let (Some(code), Some(message)) = (error["code"].as_str(), error["message"].as_str()) {
            return format!("{code}: {message}");
        }
        if let Some(message) = value["message"].as_str() {
            return message.to_owned();
        }
    }
    let text = String::from_utf8_lossy(body);
    match text.char_indices().nth(200) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None if text.trim().is_empty() => "no body".to_owned(),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use axum::extract::Path;
    use axum::response::IntoResponse;
    use axum::routing::get;
    use axum::{Json, Router};
    use lineup::domain::draw::{DrawSeed, ALGORITHM};

    use super::*;

    fn summary() -> DrawSummary {
        let seed = DrawSeed::parse(&"ab".repeat(32)).unwrap();
        DrawSummary {
            event_id: "gala".into(),
            algorithm: ALGORITHM.into(),
            seed: seed.reveal().into(),
            commitment: seed.commitment(),
            entrant_digest: "d".repeat(64),
            entrants: 1_000,
            prefix_length: 1,
            published_at: "2026-12-01T10:00:00.000Z".into(),
        }
    }

    fn status() -> DrawStatus {
        DrawStatus {
            commitment: summary().commitment,
            seed: Some(summary().seed),
            entrants: Some(summary().entrants),
            prefix_length: Some(1),
            published: true,
        }
    }

    fn checked(committed: CommittedBy, mismatches: Vec<DrawMismatch>) -> DrawCheck {
        DrawCheck {
            status: status(),
            summary: summary(),
            chunks: 16,
            committed,
            mismatches,
        }
    }

    fn wrong_number(n: u64) -> DrawMismatch {
        DrawMismatch::WrongNumber {
            entrant: format!("{n:032x}"),
            published: n,
            computed: n + 1,
        }
    }

    #[test]
    fn a_draw_that_checks_out_exits_0_and_says_what_was_checked() {
        let commitment = summary().commitment;
        let check = checked(CommittedBy::Saved(commitment.clone()), vec![]);
        let report = check.report();
        assert_eq!(Verdict::of(&Ok(check)), Verdict::ChecksOut);
        assert_eq!(Verdict::ChecksOut.exit_code(), 0);

        assert!(
            report.contains("entrants        1000 (read from 16 chunks"),
            "{report}"
        );
        assert!(report.contains(&format!("seed            {}", "ab".repeat(32))));
        assert!(
            report.contains(&"d".repeat(64)),
            "the digest is shown: {report}"
        );
        assert!(report.contains(&format!(
            "  checked against {commitment} (saved before opening, --commitment)\n"
        )));
        assert!(!report.contains("note:"), "{report}");
        assert!(report.contains("OK: "), "{report}");
        assert!(!report.contains("FAILED"), "{report}");
    }

    #[test]
    fn a_commitment_read_from_the_status_is_said_to_be_so() {
        let commitment = summary().commitment;
        let report = checked(CommittedBy::CurrentStatus(commitment.clone()), vec![]).report();
        assert!(
            report.contains(&format!(
                "  checked against {commitment} (read from the current status)\n  note: no \
                 --commitment was given"
            )),
            "{report}"
        );
    }

    #[test]
    fn mismatches_exit_1_and_are_listed_up_to_the_cap_with_the_total() {
        let few = checked(
            CommittedBy::Saved("c".repeat(64)),
            vec![DrawMismatch::CommitmentChanged, wrong_number(7)],
        );
        let report = few.report();
        assert_eq!(Verdict::of(&Ok(few)), Verdict::Mismatches);
        assert_eq!(Verdict::Mismatches.exit_code(), 1);
        assert!(report.contains("FAILED: 2 mismatches"), "{report}");
        assert!(report.contains(&format!("  - {}", DrawMismatch::CommitmentChanged)));
        assert!(
            report.contains("has number 7, the draw gives 8"),
            "{report}"
        );
        assert!(!report.contains("more"), "{report}");

        let many: Vec<DrawMismatch> = (1..=45).map(wrong_number).collect();
        let report = checked(CommittedBy::Saved("c".repeat(64)), many).report();
        assert!(report.contains("FAILED: 45 mismatches"), "{report}");
        let listed = report
            .lines()
            .filter(|line| line.starts_with("  - "))
            .count();
        assert_eq!(listed, MISMATCHES_LISTED);
        assert!(report.contains("has number 20,"), "{report}");
        assert!(!report.contains("has number 21,"), "{report}");
        assert!(report.contains("  ... and 25 more"), "{report}");

        let one = checked(CommittedBy::Saved("c".repeat(64)), vec![wrong_number(3)]);
        assert!(one.report().contains("FAILED: 1 mismatch\n"));
    }

    #[test]
    fn a_draw_that_could_not_be_read_exits_2_with_its_cause() {
        let failed: Result<DrawCheck, VerifyDrawError> = Err(VerifyDrawError::NotPublished {
            url: "http://127.0.0.1:3000/events/gala/draw".into(),
            said: "draw_not_published: not yet".into(),
        });
        assert_eq!(Verdict::of(&failed), Verdict::Failed);
        assert_eq!(Verdict::Failed.exit_code(), 2);

        let malformed = VerifyDrawError::Malformed {
            url: "http://x/events/gala/draw".into(),
            what: "a draw summary",
            source: serde_json::from_str::<DrawSummary>("{").unwrap_err(),
        };
        let text = with_causes(&malformed);
        assert!(
            text.starts_with("http://x/events/gala/draw did not answer a draw summary JSON: "),
            "{text}"
        );
        assert!(text.contains("EOF"), "the parser's cause is kept: {text}");
    }

    #[test]
    fn error_answers_are_told_apart_by_their_code_and_said_briefly() {
        let not_published = br#"{"error":{"code":"draw_not_published","message":"not yet"}}"#;
        assert_eq!(
            error_code(not_published).as_deref(),
            Some("draw_not_published")
        );
        assert_eq!(what_was_said(not_published), "draw_not_published: not yet");
        assert_eq!(
            what_was_said(br#"{"message":"Too Many Requests"}"#),
            "Too Many Requests"
        );
        assert_eq!(what_was_said(b""), "no body");
        let long = "x".repeat(500);
        assert_eq!(
            what_was_said(long.as_bytes()),
            format!("{}...", &long[..200])
        );
    }

    #[test]
    fn commitments_and_bases_are_checked_before_anything_is_read() {
        let upper = "AB".repeat(32);
        assert_eq!(parse_commitment(&upper), Ok("ab".repeat(32)));
        for bad in ["", "ab", &"g".repeat(64), &"a".repeat(65)] {
            assert!(parse_commitment(bad).is_err(), "{bad:?} was accepted");
        }
        let event = EventId::parse("gala").unwrap();
        assert!(matches!(
            PublishedDraw::new("127.0.0.1:3000", event.clone()),
            Err(VerifyDrawError::Base(_))
        ));
        let site = PublishedDraw::new("http://127.0.0.1:3000/", event).unwrap();
        assert_eq!(
            site.url("draw/0"),
            "http://127.0.0.1:3000/events/gala/draw/0"
        );
    }

    /// A published draw with no entrants in `16^prefix_length` chunks, served by a local server
    /// that refuses two reads once: a 429 with `Retry-After: 1` and a 503, beside a status that
    /// counts `status_entrants` in the closed pre-queue. Returns the base URL and the count of
    /// chunk reads.
    async fn serve_an_empty_draw(
        prefix_length: usize,
        status_entrants: u64,
    ) -> (String, Arc<AtomicUsize>) {
        let seed = DrawSeed::parse(&"ab".repeat(32)).unwrap();
        let published = DrawSummary {
            entrant_digest: draw::entrant_digest(&[]),
            entrants: 0,
            prefix_length,
            ..summary()
        };
        let reads = Arc::new(AtomicUsize::new(0));
        let refused_once = Arc::new(Mutex::new(HashSet::new()));
        let chunk = {
            let (reads, refused_once) = (reads.clone(), refused_once.clone());
            move |Path((_, prefix)): Path<(String, String)>| async move {
                reads.fetch_add(1, Ordering::Relaxed);
                let first_time = refused_once.lock().unwrap().insert(prefix.clone());
                match prefix.as_str() {
                    "0a0" | "0a0a" if first_time => {
                        (StatusCode::TOO_MANY_REQUESTS, [(RETRY_AFTER, "1")], "{}").into_response()
                    }
                    "ff0" | "fff0" if first_time => StatusCode::SERVICE_UNAVAILABLE.into_response(),
                    _ => Json(DrawChunk {
                        prefix,
                        entries: vec![],
                    })
                    .into_response(),
                }
            }
        };
        let app = Router::new()
            .route(
                "/events/{event}/draw",
                get(move || async move { Json(published.clone()) }),
            )
            .route("/events/{event}/draw/{prefix}", get(chunk))
            .route(
                "/events/{event}/status",
                get(move || async move {
                    Json(serde_json::json!({ "draw": {
                        "commitment": seed.commitment(),
                        "seed": seed.reveal(),
                        "entrants": status_entrants,
                        "prefixLength": prefix_length,
                        "published": true,
                    } }))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, reads)
    }

    /// Every chunk read once, the two refused ones once more, and the commitment from the status.
    async fn reads_every_chunk_through_passing_refusals(prefix_length: usize) {
        let (base, reads) = serve_an_empty_draw(prefix_length, 0).await;
        let site = PublishedDraw::new(&base, EventId::parse("gala").unwrap()).unwrap();
        let check = check(&site, None).await.unwrap();
        let chunks = 16usize.pow(prefix_length as u32);
        assert_eq!(check.chunks, chunks);
        // An empty draw is one chunk long; this one announces more, to exercise the reading.
        assert_eq!(
            check.mismatches,
            vec![lineup::domain::draw::DrawMismatch::PrefixLength {
                published: prefix_length,
                expected: 1
            }]
        );
        assert_eq!(
            check.committed,
            CommittedBy::CurrentStatus(summary().commitment)
        );
        assert_eq!(reads.load(Ordering::Relaxed), chunks + 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_chunk_is_read_through_a_429_and_a_503() {
        reads_every_chunk_through_passing_refusals(3).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_address_reads_at_its_pace_whatever_the_readers_at_once() {
        // 256 chunks at 100 a second with 16 readers at once: never faster than the pace.
        let (base, reads) = serve_an_empty_draw(2, 0).await;
        let site = PublishedDraw::new(&base, EventId::parse("gala").unwrap())
            .unwrap()
            .paced(100);
        let started = std::time::Instant::now();
        let check = check(&site, None).await.unwrap();
        let took = started.elapsed();
        assert_eq!(check.chunks, 256);
        assert_eq!(reads.load(Ordering::Relaxed), 256);
        // The first at once, the other 255 a slot of 10 ms each after the one before.
        assert!(took >= Duration::from_millis(2_550), "{took:?}");
    }

    #[tokio::test]
    async fn a_draw_of_other_entrants_than_the_status_counts_exits_1() {
        let (base, _) = serve_an_empty_draw(1, 5).await;
        let site = PublishedDraw::new(&base, EventId::parse("gala").unwrap()).unwrap();
        let outcome = check(&site, Some(summary().commitment)).await;
        let check = outcome.as_ref().unwrap();
        assert_eq!(
            check.mismatches,
            vec![DrawMismatch::StatusCountMismatch {
                status: 5,
                published: 0
            }]
        );
        assert!(
            check
                .report()
                .contains("  status          5 entrants, published\n"),
            "{}",
            check.report()
        );
        assert_eq!(Verdict::of(&outcome).exit_code(), 1);
    }

    #[tokio::test]
    async fn an_answer_that_is_not_the_documented_json_is_an_error() {
        let app = Router::new().route("/events/{event}/draw", get(|| async { "<html>" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let site = PublishedDraw::new(&base, EventId::parse("gala").unwrap()).unwrap();
        let outcome = check(&site, None).await;
        assert!(
            matches!(
                outcome,
                Err(VerifyDrawError::Malformed {
                    what: "a draw summary",
                    ..
                })
            ),
            "{outcome:?}"
        );
        // A route the server does not have: a 404 that is not the service's.
        let other = PublishedDraw::new(&base, EventId::parse("gala").unwrap()).unwrap();
        let missing = other.status_commitment().await;
        assert!(
            matches!(missing, Err(VerifyDrawError::Refused { status: 404, .. })),
            "{missing:?}"
        );
    }

    #[test]
    fn the_command_line_parses_with_the_dev_server_as_default() {
        use clap::Parser;

        use crate::commands::{Cli, Command};

        let cli = Cli::try_parse_from(["lineup", "verify-draw", "--event", "gala"]).unwrap();
        let Command::VerifyDraw(args) = cli.command else {
            panic!("parsed as {:?}", cli.command);
        };
        assert_eq!(
            (args.event.as_str(), args.base.as_str()),
            ("gala", DEFAULT_BASE)
        );
        assert_eq!(args.commitment, None);
        let saved = "cd".repeat(32);
        let cli = Cli::try_parse_from([
            "lineup",
            "verify-draw",
            "--event",
            "gala",
            "--base",
            "https://d111111abcdef8.cloudfront.net",
            "--commitment",
            &saved,
        ])
        .unwrap();
        let Command::VerifyDraw(args) = cli.command else {
            panic!("parsed as {:?}", cli.command);
        };
        assert_eq!(args.commitment, Some(saved));
        assert!(Cli::try_parse_from([
            "lineup",
            "verify-draw",
            "--event",
            "gala",
            "--commitment",
            "x"
        ])
        .is_err());
    }
}
