//! A customer's wait, as the waiting-room page (`web/status.js`, `web/queue.js`) has a client
//! wait: read the public status through the CDN at the pace it sets, each read at a moment of the
//! customer's own (`EventStatus::next_read_jittered`: a tenth of the ETA, 5 s to 5 minutes, moved
//! within ±20 %; before the opening, once a minute at most, then once after it, within the
//! opening's spread), find a pre-queue number in the published draw (its chunk fetched at a
//! moment of its own within the status's `chunkFetchWindowSeconds`), and go to the origin only to
//! claim, once, when the number is called (and once after a cache loss the status announces, if
//! the ticket predates it: that poll puts the customer back). A status or chunk read answered
//! 429 or 5xx, or not at all, is read again after an exponential backoff with jitter, never
//! replaced by a poll of the origin. What the customer was told on the way (each ETA, when its
//! number was called, the statuses it read) is kept for the report and the order check.
//!
//! Through a cache loss, a customer keeps its ticket, as the page does: a 404 for its ticket
//! (`queue_entry_not_found`) or its event (`event_not_found`) is asked again after a while, a
//! few times, before the customer believes it; a 503 is retried after its `Retry-After` (by the
//! API client); and once the status announces a restore (`restoredAt`) that its ticket
//! predates, one poll with the ticket puts it back.

use std::time::{Duration, Instant, SystemTime};

use lineup::domain::clock::{from_unix_millis, parse_rfc3339};
use lineup::domain::status::{EventStatus, PublicState};
use rand::rngs::StdRng;
use rand::RngExt;
use tokio::sync::watch;

use super::api_client::{Api, CallError, NumberedPlace, Polled, PreQueuePlace, Standing};
use super::customer::Outcome;
use super::persona::Patience;

/// A failed status or chunk read is tried again after 1–2 s, then 2–4 s, 4–8 s... at most
/// 30–60 s (half the doubling ceiling plus a random half of it), and never sooner than its
/// `Retry-After` (plus up to 20 %): `web/status.js`'s `backoffMs`.
const BACKOFF_FIRST: Duration = Duration::from_secs(2);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How many failed reads in a row a customer takes before giving up (the page never does; at
/// the backoff's ceiling this is a quarter of an hour, and a run ends sooner).
const READ_FAILURES_TAKEN: u32 = 20;

/// The share of a server-given delay (`Retry-After`) a client may add at random, as the
/// contract asks (`web/timers.js`'s `withJitter`).
const RETRY_AFTER_JITTER: f64 = 0.2;

/// How often a customer asks the origin while its answer contradicts the published status or
/// draw (a called number told to wait; an entrant the draw does not list told it is still in the
/// pre-queue), before giving up. It never should: the order check reports each time.
const CLAIM_ATTEMPTS: u32 = 3;

/// How many 404s in a row for its ticket or its event a waiting customer takes before believing
/// them (its place, or the event, gone), asking again after [`NOT_FOUND_PAUSE`] (or the
/// answer's `Retry-After`) each time: a cache loss is over in seconds, and the page keeps the
/// customer's ticket meanwhile rather than throw the place away.
const NOT_FOUND_ATTEMPTS: u32 = 6;
const NOT_FOUND_PAUSE: Duration = Duration::from_secs(5);

/// How often a customer put back at the front of the queue by a restore after admission passed
/// its number (see [`Requeued`]) claims and is told to wait before giving up (as passed over):
/// at one claim per status read (5 s at the front), minutes; a place frees long before.
const REQUEUED_CLAIMS: u32 = 40;

/// What a customer was told while waiting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WaitLog {
    /// Joined before opening: learnt its number from the published draw.
    pub pre_queue: bool,
    /// The queue number, once known.
    pub number: Option<u64>,
    /// Every admission time predicted while the number was not called yet, in order: the
    /// origin's answer (join or poll) when it carried a number, then one per status read.
    pub predictions: Vec<Prediction>,
    /// When the customer saw its number called: the first status read showing it, or the claim
    /// that said `admitted` without one.
    pub called_at: Option<Instant>,
    /// Status reads (through the CDN).
    pub status_reads: u32,
    /// Whether a status read with its number said the sale would very likely be sold out
    /// before its turn (`EventStatus::likely_sold_out`), at any time while it waited.
    pub told_sold_out: bool,
    /// Draw chunks fetched (through the CDN).
    pub chunk_reads: u32,
    /// Status and chunk reads answered 429 or 5xx, or not at all, each read again after a
    /// backoff (not counted in `status_reads` and `chunk_reads`).
    pub reads_backed_off: u32,
    /// When a pre-queue entrant found its number in the draw.
    pub numbered_at: Option<Instant>,
    /// The `chunkFetchWindowSeconds` of the status that showed the draw published.
    pub chunk_fetch_window_seconds: Option<u64>,
    /// Polls of the origin after the join: claims, and polls on doubt.
    pub origin_polls: u32,
    /// The statuses read, as (`updatedAt`, `servingUpTo`), in the order read (the CDN's same copy
    /// read again is kept once).
    pub statuses: Vec<(SystemTime, u64)>,
    /// Claims answered `waiting` after a status showed the number called.
    pub passed_over: u32,
    /// Polls answered "still in the pre-queue" after the published draw did not list it.
    pub left_out_of_draw: u32,
    /// The restore (the status's `restoredAt`) this customer last polled for.
    pub restore_answered: Option<String>,
    /// Polls with its ticket after a restore (one per restore).
    pub restore_polls: u32,
    /// Polls answered 404 `queue_entry_not_found`, each asked again after a while.
    pub entry_not_found: u32,
    /// Status reads and polls answered 404 `event_not_found` (its event exists: the contract
    /// has no such answer for it), each asked again after a while.
    pub event_not_found: u32,
    /// Put back in the queue by a restore after admission had passed its number.
    pub requeued: Option<Requeued>,
}

/// A customer a restore put back in the queue (`waiting`, at its number) after admission had
/// passed that number, while the cache did not know it: it had not seen its number called on
/// any status read before the restore, so by what it knew it was still waiting when the cache
/// was lost. The restore is designed to put such a number back at the front of the queue, to be
/// admitted as places free, not at once (`shared/src/application/restore.rs`); so its claims answered
/// `waiting` from then on are counted here, not as passed over. Whether its number had in fact
/// been called before the loss is decided over the whole crowd afterwards
/// ([`super::invariants::QueueFacts`]): if any status published before the restore showed it
/// called, the restore should have admitted it, and these claims count as passed over after
/// all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requeued {
    /// The restore (`restoredAt`) that put it back.
    pub restored_at: SystemTime,
    pub number: u64,
    /// Claims answered `waiting` since (the restore's own poll not counted).
    pub told_to_wait: u32,
}

/// One predicted admission time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prediction {
    pub made_at: Instant,
    pub admission_at: Instant,
    pub source: PredictionSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredictionSource {
    /// The `etaSeconds` of the origin's answer (join or poll).
    Answer,
    /// `EventStatus::eta` of a status read.
    Status,
}

impl WaitLog {
    fn predict(&mut self, made_at: Instant, eta: Duration, source: PredictionSource) {
        self.predictions.push(Prediction {
            made_at,
            admission_at: made_at + eta,
            source,
        });
    }

    fn saw(&mut self, status: &EventStatus) {
        self.status_reads += 1;
        if let Some(updated_at) = parse_rfc3339(&status.updated_at) {
            let seen = (updated_at, status.serving_up_to);
            if self.statuses.last() != Some(&seen) {
                self.statuses.push(seen);
            }
        }
    }

    /// An origin answer with a number: an ETA to keep, unless the number was called already.
    fn answered(&mut self, place: &NumberedPlace, at: Instant) {
        self.number = Some(place.number);
        if self.called_at.is_none() && place.serving_up_to < place.number {
            self.predict(at, place.eta, PredictionSource::Answer);
        }
    }
}

/// How the wait ended.
pub enum Waited {
    Admitted {
        queue_id: String,
        access_token: String,
    },
    Over(Outcome),
}

/// One stage of the wait done: what comes next.
enum Step {
    Next(Standing),
    Over(Outcome),
}

/// Whether the sale is over for those still waiting.
fn is_over(status: &EventStatus) -> bool {
    matches!(
        status.state,
        PublicState::Closed | PublicState::SoldOut | PublicState::Cancelled
    )
}

/// When a ticket (`<number>.<issued ms>.<mac>`) was issued, if it says.
fn ticket_issued_at(queue_id: &str) -> Option<SystemTime> {
    let millis = queue_id.split('.').nth(1)?.parse().ok()?;
    Some(from_unix_millis(millis))
}

impl WaitLog {
    /// Whether the status announces a restore this customer must answer with one poll: the
    /// cache lost the event after its ticket was issued (or either time is unreadable), and it
    /// has not polled for this restore yet.
    fn restore_to_answer(&self, status: &EventStatus, queue_id: &str) -> bool {
        let Some(restored_at) = &status.restored_at else {
            return false;
        };
        if self.restore_answered.as_ref() == Some(restored_at) {
            return false;
        }
        match (ticket_issued_at(queue_id), parse_rfc3339(restored_at)) {
            (Some(issued), Some(restored)) => issued < restored,
            _ => true,
        }
    }
}

/// One customer waiting.
pub struct Waiter<'a> {
    pub api: &'a Api,
    pub event: &'a str,
    pub jwt: &'a str,
    pub patience: Patience,
    pub rng: &'a mut StdRng,
    /// Set by the first customer to read that the sale is over: the others read the status at
    /// once instead of sleeping out their interval (a far-back customer's is up to 5 minutes),
    /// so the run ends when the sale does. Their read still goes through the CDN.
    pub sale_over: &'a watch::Sender<bool>,
    pub log: &'a mut WaitLog,
}

impl Waiter<'_> {
    /// Waits from what the join answered (at `joined_at`) until admitted or the wait is over.
    pub async fn wait(
        &mut self,
        joined: Standing,
        joined_at: Instant,
    ) -> Result<Waited, CallError> {
        if let Standing::Numbered(place) = &joined {
            self.log.answered(place, joined_at);
        }
        let mut standing = joined;
        loop {
            let step = match standing {
                Standing::Admitted {
                    queue_id,
                    access_token,
                } => {
                    self.log.called_at.get_or_insert_with(Instant::now);
                    return Ok(Waited::Admitted {
                        queue_id,
                        access_token,
                    });
                }
                Standing::Expired => Step::Over(Outcome::AdmissionExpired),
                Standing::Closed => Step::Over(Outcome::ClosedWhileWaiting),
                Standing::PreQueue(place) => self.until_numbered(place).await?,
                Standing::Numbered(place) => self.until_called(place).await?,
            };
            standing = match step {
                Step::Next(standing) => standing,
                Step::Over(outcome) => return Ok(Waited::Over(outcome)),
            };
        }
    }

    /// In the pre-queue: reads the status (paced by the opening) until the draw is published,
    /// then finds the number in its chunk. Only if the chunk does not list the entrant does it
    /// ask the origin, whose word decides (a customer who left is not listed, nor is one the
    /// draw left out: the order check reports those).
    async fn until_numbered(&mut self, place: PreQueuePlace) -> Result<Step, CallError> {
        self.log.pre_queue = true;
        let mut read_after = self.jittered_retry_after(place.read_status_after);
        let mut looked_up = false;
        loop {
            if let Some(outcome) = self.out_of_patience(&place.queue_id).await? {
                return Ok(Step::Over(outcome));
            }
            self.sleep(read_after).await;
            let status = self.read_status().await?;
            if self.log.restore_to_answer(&status, &place.queue_id) {
                return self.answer_restore(&status, &place.queue_id).await;
            }
            if is_over(&status) {
                return Ok(Step::Over(Outcome::ClosedWhileWaiting));
            }
            let (true, Some(prefix_length)) = (status.draw.published, status.draw.prefix_length)
            else {
                // No number yet (0 stands for none): paced by the opening, then every 5 s until
                // the draw is out, in its first seconds.
                read_after = self.next_read(&status, 0);
                continue;
            };
            // A published chunk never changes: it is fetched once, at the customer's own moment
            // within the window the status gives.
            if !looked_up {
                looked_up = true;
                self.log.chunk_fetch_window_seconds = status.chunk_fetch_window_seconds;
                let u = self.uniform();
                self.sleep(status.chunk_fetch_delay(u)).await;
                if let Some(number) = self.number_in_draw(&place.entrant, prefix_length).await? {
                    // The held ticket (number 0) claims as well as one stating the number: the
                    // claim's answer carries the new one. The status is read again at once.
                    self.log.number = Some(number);
                    self.log.numbered_at = Some(Instant::now());
                    return Ok(Step::Next(Standing::Numbered(NumberedPlace {
                        queue_id: place.queue_id,
                        number,
                        serving_up_to: 0,
                        eta: Duration::ZERO,
                        read_status_after: Duration::ZERO,
                    })));
                }
            }
            read_after = match self.ask_origin(&place.queue_id).await? {
                Step::Next(Standing::PreQueue(again)) => {
                    self.jittered_retry_after(again.read_status_after)
                }
                step => return Ok(step),
            };
            // Still in the pre-queue by the origin's word, and not in the published draw.
            self.log.left_out_of_draw += 1;
            if self.log.left_out_of_draw >= CLAIM_ATTEMPTS {
                return Ok(Step::Over(Outcome::LeftOutOfDraw));
            }
        }
    }

    /// The customer's own uniform sample in `[0, 1)`, a fresh one each time.
    fn uniform(&mut self) -> f64 {
        self.rng.random()
    }

    /// When to read the status after `status`, holding `number` (0: none yet): the page's
    /// moment, at the customer's own jitter.
    fn next_read(&mut self, status: &EventStatus, number: u64) -> Duration {
        let u = self.uniform();
        status.next_read_jittered(number, SystemTime::now(), u)
    }

    /// A server-given delay (an answer's `Retry-After`) with up to 20 % added at random.
    fn jittered_retry_after(&mut self, delay: Duration) -> Duration {
        let u = self.uniform();
        delay.mul_f64(1.0 + RETRY_AFTER_JITTER * u)
    }

    /// After `failures` failed reads in a row, waits as the page does before reading again
    /// ([`backoff`]); gives `error` back once [`READ_FAILURES_TAKEN`] failed.
    async fn back_off(&mut self, failures: u32, error: CallError) -> Result<(), CallError> {
        self.log.reads_backed_off += 1;
        if failures >= READ_FAILURES_TAKEN {
            return Err(error);
        }
        let (u, v) = (self.uniform(), self.uniform());
        self.sleep(backoff(failures - 1, error.retry_after(), u, v))
            .await;
        Ok(())
    }

    /// The entrant's number as its chunk of the published draw lists it (`None`: not listed).
    /// A chunk that could not be read (429, 5xx, no answer) is read again after a backoff.
    async fn number_in_draw(
        &mut self,
        entrant: &str,
        prefix_length: usize,
    ) -> Result<Option<u64>, CallError> {
        let Some(prefix) = entrant.get(..prefix_length) else {
            return Ok(None);
        };
        let mut failures = 0;
        let chunk = loop {
            match self.api.draw_chunk(self.event, prefix).await {
                Ok(chunk) => break chunk,
                Err(error) if error.is_transient() => {
                    failures += 1;
                    self.back_off(failures, error).await?;
                }
                Err(error) => return Err(error),
            }
        };
        self.log.chunk_reads += 1;
        Ok(chunk
            .entries
            .iter()
            .find(|(listed, _)| listed == entrant)
            .map(|(_, number)| *number))
    }

    /// With a number: reads the status at once (as the page does after a join: the ETA range
    /// and the chance of a ticket come from it), then at the pace it sets, predicting the
    /// admission each time, until the number is called; then claims.
    async fn until_called(&mut self, mut place: NumberedPlace) -> Result<Step, CallError> {
        self.log.number = Some(place.number);
        let mut read_after = Duration::ZERO;
        loop {
            if let Some(outcome) = self.out_of_patience(&place.queue_id).await? {
                return Ok(Step::Over(outcome));
            }
            self.sleep(read_after).await;
            let status = self.read_status().await?;
            let read_at = Instant::now();
            if self.log.restore_to_answer(&status, &place.queue_id) {
                return self.answer_restore(&status, &place.queue_id).await;
            }
            // Put back at the front after its number passed: the status shows the number
            // called for good, so the sale's end is read first (or it would claim on forever).
            if self.log.requeued.is_some() && is_over(&status) {
                return Ok(Step::Over(Outcome::ClosedWhileWaiting));
            }
            if status.serving_up_to >= place.number {
                self.log.called_at.get_or_insert(read_at);
                // Told to wait on although called: the order check reports it.
                read_after = match self.ask_origin(&place.queue_id).await? {
                    Step::Next(Standing::Numbered(again)) => {
                        let after = self.jittered_retry_after(again.read_status_after);
                        place = again;
                        after
                    }
                    Step::Next(Standing::PreQueue(again)) => {
                        self.jittered_retry_after(again.read_status_after)
                    }
                    step => return Ok(step),
                };
                if let Some(requeued) = &mut self.log.requeued {
                    // At the front of the queue, as the restore put it (see `Requeued`).
                    requeued.told_to_wait += 1;
                    if requeued.told_to_wait >= REQUEUED_CLAIMS {
                        return Ok(Step::Over(Outcome::PassedOver));
                    }
                    continue;
                }
                self.log.passed_over += 1;
                if self.log.passed_over >= CLAIM_ATTEMPTS {
                    return Ok(Step::Over(Outcome::PassedOver));
                }
                continue;
            }
            if is_over(&status) {
                return Ok(Step::Over(Outcome::ClosedWhileWaiting));
            }
            self.log.predict(
                read_at,
                status.eta_at(place.number, SystemTime::now()),
                PredictionSource::Status,
            );
            self.log.told_sold_out |= status.likely_sold_out(place.number);
            read_after = self.next_read(&status, place.number);
        }
    }

    /// The one poll after a restore: it puts the customer back (or claims, if called meanwhile),
    /// and its answer says where they stand now.
    async fn answer_restore(
        &mut self,
        status: &EventStatus,
        queue_id: &str,
    ) -> Result<Step, CallError> {
        // Whether it saw its number called before this restore (the statuses it read so far).
        let saw_called = self.log.called_at.is_some();
        self.log.restore_answered = status.restored_at.clone();
        self.log.restore_polls += 1;
        if status.serving_up_to >= self.log.number.unwrap_or(u64::MAX) {
            self.log.called_at.get_or_insert_with(Instant::now);
        }
        let step = self.ask_origin(queue_id).await?;
        if let Step::Next(Standing::Numbered(place)) = &step {
            let restored_at = status.restored_at.as_deref().and_then(parse_rfc3339);
            if let (false, None, Some(restored_at)) = (saw_called, &self.log.requeued, restored_at)
            {
                if place.serving_up_to >= place.number {
                    self.log.requeued = Some(Requeued {
                        restored_at,
                        number: place.number,
                        told_to_wait: 0,
                    });
                }
            }
        }
        Ok(step)
    }

    /// One poll of the origin: the claim, or a question on doubt. A 404 for the ticket or the
    /// event is asked again after a while (see [`NOT_FOUND_ATTEMPTS`]) before it is believed.
    async fn ask_origin(&mut self, queue_id: &str) -> Result<Step, CallError> {
        let mut not_found = 0;
        loop {
            self.log.origin_polls += 1;
            let asked_at = Instant::now();
            let (retry_after, last_word) = match self.api.poll(self.jwt, self.event, queue_id).await
            {
                Ok(Polled::Standing(Standing::Numbered(place))) => {
                    self.log.answered(&place, asked_at);
                    return Ok(Step::Next(Standing::Numbered(place)));
                }
                Ok(Polled::Standing(standing)) => return Ok(Step::Next(standing)),
                Ok(Polled::EntryNotFound { retry_after }) => {
                    self.log.entry_not_found += 1;
                    (retry_after, Ok(Step::Over(Outcome::EntryLost)))
                }
                Err(error) if error.is_not_found("event_not_found") => {
                    self.log.event_not_found += 1;
                    (None, Err(error))
                }
                Err(error) => return Err(error),
            };
            not_found += 1;
            if not_found >= NOT_FOUND_ATTEMPTS {
                return last_word;
            }
            self.pause_after_not_found(retry_after).await;
        }
    }

    /// The pause before asking again after a 404: the answer's `Retry-After`, else
    /// [`NOT_FOUND_PAUSE`], give or take a fifth (so a crowd does not come back at once).
    async fn pause_after_not_found(&mut self, retry_after: Option<Duration>) {
        let pause = retry_after
            .unwrap_or(NOT_FOUND_PAUSE)
            .mul_f64(self.rng.random_range(0.8..1.2));
        self.sleep(pause).await;
    }

    /// One read of the public status. A 404 for the event is read again after a while (see
    /// [`NOT_FOUND_ATTEMPTS`]); a 429, a 5xx or no answer after a backoff ([`backoff`]).
    async fn read_status(&mut self) -> Result<EventStatus, CallError> {
        let (mut not_found, mut failures) = (0, 0);
        let status = loop {
            match self.api.status(self.event).await {
                Ok(status) => break status,
                Err(error) if error.is_transient() => {
                    failures += 1;
                    self.back_off(failures, error).await?;
                }
                // The event is ours and exists: the cache lost it. Keep the ticket; read again.
                Err(error) if error.is_not_found("event_not_found") => {
                    self.log.event_not_found += 1;
                    not_found += 1;
                    if not_found >= NOT_FOUND_ATTEMPTS {
                        return Err(error);
                    }
                    self.pause_after_not_found(None).await;
                }
                Err(error) => return Err(error),
            }
        };
        self.log.saw(&status);
        if is_over(&status) {
            self.sale_over.send_replace(true);
        }
        Ok(status)
    }

    /// Sleeps `how_long`, or less if the sale is over.
    async fn sleep(&self, how_long: Duration) {
        let mut over = self.sale_over.subscribe();
        tokio::select! {
            () = tokio::time::sleep(how_long) => {}
            _ = over.wait_for(|over| *over) => {}
        }
    }

    /// Leaves (`DELETE`) or vanishes once the persona's patience, counted in status reads, is
    /// spent.
    async fn out_of_patience(&mut self, queue_id: &str) -> Result<Option<Outcome>, CallError> {
        let reads = self.log.status_reads;
        Ok(match self.patience {
            Patience::LeavesAfter(n) if reads >= n => {
                self.api.leave(self.jwt, self.event, queue_id).await?;
                Some(Outcome::LeftWhileWaiting)
            }
            Patience::VanishesAfter(n) if reads >= n => Some(Outcome::VanishedWhileWaiting),
            _ => None,
        })
    }
}

/// How long to wait before reading again after `failures` failed reads before this one, given
/// two uniform samples `u` and `v` in `[0, 1)`: half the doubling ceiling (2 s, 4 s... at most
/// 60 s) plus `u` of the other half, but not sooner than the answer's `Retry-After` plus `v` of
/// a fifth of it (`web/status.js`'s `backoffMs`).
fn backoff(failures: u32, retry_after: Option<Duration>, u: f64, v: f64) -> Duration {
    let ceiling = BACKOFF_MAX.min(BACKOFF_FIRST * 2u32.pow(failures.min(10)));
    let wait = ceiling / 2 + (ceiling / 2).mul_f64(u);
    let floor = retry_after
        .unwrap_or_default()
        .mul_f64(1.0 + RETRY_AFTER_JITTER * v);
    wait.max(floor)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use axum::extract::State;
    use axum::http::{Method, StatusCode, Uri};
    use axum::response::{IntoResponse, Response};
    use rand::SeedableRng;
    use serde_json::{json, Value};

    use super::super::latency::LatencyRecorder;
    use super::*;

    const ENTRANT: &str = "ab0123456789abcdef0123456789abcd";

    /// A stand-in for the API: canned statuses, draw chunks and poll answers (the last of each
    /// repeats); it records every request it got.
    #[derive(Default)]
    struct FakeApi {
        statuses: VecDeque<Value>,
        chunks: VecDeque<Value>,
        polls: VecDeque<Value>,
        asked: Vec<String>,
    }

    fn next(answers: &mut VecDeque<Value>) -> Value {
        if answers.len() > 1 {
            answers.pop_front().unwrap_or_default()
        } else {
            answers.front().cloned().unwrap_or_default()
        }
    }

    async fn answer(State(fake): State<Arc<Mutex<FakeApi>>>, method: Method, uri: Uri) -> Response {
        let mut fake = fake.lock().unwrap();
        let path = uri.path().to_owned();
        fake.asked.push(format!("{method} {path}"));
        // A canned `{"httpStatus": 404, "code": "..."}` is that error answer.
        let json = |body: Value| match body["httpStatus"].as_u64() {
            Some(status) => (
                StatusCode::from_u16(status as u16).unwrap(),
                [("Retry-After", "0")],
                axum::Json(json!({"error": {"code": body["code"], "message": "canned"}})),
            )
                .into_response(),
            None => ([("Retry-After", "0")], axum::Json(body)).into_response(),
        };
        match (method, path.rsplit('/').nth(1)) {
            (Method::GET, _) if path.ends_with("/status") => json(next(&mut fake.statuses)),
            (Method::GET, Some("draw")) => json(next(&mut fake.chunks)),
            (Method::GET, Some("queue")) => json(next(&mut fake.polls)),
            (Method::DELETE, Some("queue")) => StatusCode::NO_CONTENT.into_response(),
            _ => StatusCode::NOT_FOUND.into_response(),
        }
    }

    /// A status as the public route serves it (no `chunkFetchWindowSeconds`: the chunk is
    /// fetched at once).
    fn status_json(state: &str, serving: u64, published: bool) -> Value {
        json!({
            "eventId": "sim-1", "state": state, "opensAt": "2026-12-01T10:00:00Z",
            "servingUpTo": serving, "advancePerSecond": 2.0, "advanceMeasured": true,
            "lastNumber": 900, "waiting": 500, "claimWindowSeconds": 0,
            "draw": {"commitment": "c", "published": published, "prefixLength": 1},
            "updatedAt": format!("2026-12-01T10:00:{:02}Z", serving % 60),
        })
    }

    /// Runs one customer's wait against the fake, from `joined`. The sale is marked over from
    /// the start, which only skips the pauses between reads: the waits take no time.
    async fn wait_against(
        fake: FakeApi,
        patience: Patience,
        joined: Standing,
    ) -> (Waited, WaitLog, Vec<String>) {
        let fake = Arc::new(Mutex::new(fake));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&fake));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let api = Api::new(&base, 2, Arc::new(LatencyRecorder::default())).unwrap();
        let (sale_over, _) = watch::channel(true);
        let mut rng = StdRng::seed_from_u64(7);
        let mut log = WaitLog::default();
        let waited = Waiter {
            api: &api,
            event: "sim-1",
            jwt: "jwt",
            patience,
            rng: &mut rng,
            sale_over: &sale_over,
            log: &mut log,
        }
        .wait(joined, Instant::now())
        .await
        .unwrap();
        let asked = fake.lock().unwrap().asked.clone();
        (waited, log, asked)
    }

    fn pre_queue() -> Standing {
        Standing::PreQueue(PreQueuePlace {
            queue_id: "0.1.mac".into(),
            entrant: ENTRANT.into(),
            read_status_after: Duration::ZERO,
        })
    }

    fn numbered(number: u64) -> Standing {
        Standing::Numbered(NumberedPlace {
            queue_id: format!("{number}.1.mac"),
            number,
            serving_up_to: 0,
            eta: Duration::from_secs(4),
            read_status_after: Duration::ZERO,
        })
    }

    #[tokio::test]
    async fn a_pre_queue_entrant_finds_its_number_in_the_draw_and_claims_once() {
        let fake = FakeApi {
            statuses: VecDeque::from([
                status_json("pre_queue", 0, false),
                status_json("open", 0, true),
                status_json("open", 1, true),
                status_json("open", 5, true),
            ]),
            chunks: VecDeque::from([json!({"prefix": "a", "entries": [[ENTRANT, 3], ["a9", 1]]})]),
            polls: VecDeque::from([
                json!({"status": "admitted", "queueId": "3.1.mac", "accessToken": "t", "expiresAt": "x"}),
            ]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::Patient, pre_queue()).await;
        let Waited::Admitted { queue_id, .. } = waited else {
            panic!("not admitted");
        };
        assert_eq!(queue_id, "3.1.mac", "the claim's ticket is kept");
        assert!(log.pre_queue);
        assert_eq!(log.number, Some(3));
        assert_eq!(
            (log.status_reads, log.chunk_reads, log.origin_polls),
            (4, 1, 1)
        );
        assert!(log.called_at.is_some());
        // One ETA: the read with 2 numbers to go, at 2 a second.
        assert_eq!(log.predictions.len(), 1);
        let prediction = log.predictions[0];
        assert_eq!(prediction.source, PredictionSource::Status);
        assert_eq!(
            prediction.admission_at - prediction.made_at,
            Duration::from_secs(1)
        );
        // The chunk named by the entrant's first digit, and one claim with the held ticket.
        assert!(
            asked.contains(&"GET /events/sim-1/draw/a".to_owned()),
            "{asked:?}"
        );
        let origin: Vec<&String> = asked.iter().filter(|a| a.contains("/queue")).collect();
        assert_eq!(origin, ["GET /events/sim-1/queue/0.1.mac"]);
    }

    #[tokio::test]
    async fn a_refused_status_or_chunk_is_read_again_after_a_backoff_never_asked_of_the_origin() {
        let refused = |status| json!({"httpStatus": status, "code": "throttled"});
        let fake = FakeApi {
            statuses: VecDeque::from([
                status_json("pre_queue", 0, false),
                refused(503),
                refused(429),
                status_json("open", 0, true),
                status_json("open", 5, true),
            ]),
            chunks: VecDeque::from([
                refused(429),
                refused(502),
                json!({"prefix": "a", "entries": [[ENTRANT, 3]]}),
            ]),
            polls: VecDeque::from([admitted("3.1.mac")]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::Patient, pre_queue()).await;
        assert!(matches!(waited, Waited::Admitted { .. }));
        assert_eq!(log.reads_backed_off, 4);
        assert_eq!((log.status_reads, log.chunk_reads), (3, 1));
        assert!(log.numbered_at.is_some());
        assert_eq!(asked.iter().filter(|a| a.contains("/draw/")).count(), 3);
        let origin: Vec<&String> = asked.iter().filter(|a| a.contains("/queue")).collect();
        assert_eq!(
            origin,
            ["GET /events/sim-1/queue/0.1.mac"],
            "only the claim"
        );
    }

    #[test]
    fn the_backoff_doubles_to_a_minute_with_jitter_and_heeds_retry_after() {
        let seconds = |failures, u| backoff(failures, None, u, 0.0).as_secs_f64();
        assert_eq!((seconds(0, 0.0), seconds(0, 0.5)), (1.0, 1.5), "1-2 s");
        assert_eq!(seconds(1, 0.5), 3.0, "2-4 s");
        assert_eq!(seconds(2, 0.0), 4.0, "4-8 s");
        assert_eq!(seconds(5, 0.0), 30.0, "at most 30-60 s");
        assert_eq!(seconds(40, 1.0), 60.0);
        // Never sooner than Retry-After, plus up to a fifth of it.
        let after = Some(Duration::from_secs(10));
        assert_eq!(backoff(0, after, 1.0, 0.0), Duration::from_secs(10));
        assert_eq!(backoff(0, after, 1.0, 0.5), Duration::from_secs(11));
        assert_eq!(backoff(4, after, 1.0, 0.5), Duration::from_secs(32));
    }

    #[tokio::test]
    async fn an_entrant_the_draw_does_not_list_asks_the_origin_and_gives_up_on_its_word() {
        let fake = FakeApi {
            statuses: VecDeque::from([status_json("open", 0, true)]),
            chunks: VecDeque::from([json!({"prefix": "a", "entries": [["a9", 1]]})]),
            polls: VecDeque::from([json!({
                "status": "waiting", "queueId": "0.1.mac", "entrant": ENTRANT, "etaSeconds": 0,
            })]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::Patient, pre_queue()).await;
        assert!(matches!(waited, Waited::Over(Outcome::LeftOutOfDraw)));
        // The immutable chunk is fetched once; the origin asked each time after.
        assert_eq!((log.chunk_reads, log.origin_polls), (1, CLAIM_ATTEMPTS));
        assert_eq!(log.left_out_of_draw, CLAIM_ATTEMPTS);
        assert_eq!(asked.iter().filter(|a| a.contains("/draw/")).count(), 1);
    }

    #[tokio::test]
    async fn a_called_number_told_to_wait_is_passed_over() {
        let fake = FakeApi {
            statuses: VecDeque::from([status_json("open", 5, true)]),
            polls: VecDeque::from([json!({
                "status": "waiting", "queueId": "3.1.mac", "number": 3, "servingUpTo": 2,
                "etaSeconds": 1,
            })]),
            ..FakeApi::default()
        };
        let (waited, log, _) = wait_against(fake, Patience::Patient, numbered(3)).await;
        assert!(matches!(waited, Waited::Over(Outcome::PassedOver)));
        assert_eq!(
            (log.passed_over, log.origin_polls),
            (CLAIM_ATTEMPTS, CLAIM_ATTEMPTS)
        );
        // The join's ETA is kept; the answers after the call are no predictions.
        assert_eq!(log.predictions.len(), 1);
        assert_eq!(log.predictions[0].source, PredictionSource::Answer);
    }

    fn not_found(code: &str) -> Value {
        json!({"httpStatus": 404, "code": code})
    }

    fn admitted(queue_id: &str) -> Value {
        json!({"status": "admitted", "queueId": queue_id, "accessToken": "t", "expiresAt": "x"})
    }

    #[tokio::test]
    async fn a_ticket_answered_404_is_kept_and_presented_again_until_the_place_is_back() {
        let fake = FakeApi {
            statuses: VecDeque::from([
                not_found("event_not_found"),
                not_found("event_not_found"),
                status_json("open", 5, true),
            ]),
            polls: VecDeque::from([
                not_found("queue_entry_not_found"),
                not_found("event_not_found"),
                admitted("3.1.mac"),
            ]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::Patient, numbered(3)).await;
        assert!(matches!(waited, Waited::Admitted { .. }));
        assert_eq!((log.entry_not_found, log.event_not_found), (1, 3));
        assert_eq!((log.status_reads, log.origin_polls), (1, 3));
        let polls: Vec<&String> = asked.iter().filter(|a| a.contains("/queue/")).collect();
        assert_eq!(polls.len(), 3, "the same ticket each time: {polls:?}");
        assert!(polls.iter().all(|a| a.ends_with("/queue/3.1.mac")));
    }

    #[tokio::test]
    async fn a_ticket_still_unknown_after_asking_again_is_an_entry_lost() {
        let fake = FakeApi {
            statuses: VecDeque::from([status_json("open", 5, true)]),
            polls: VecDeque::from([not_found("queue_entry_not_found")]),
            ..FakeApi::default()
        };
        let (waited, log, _) = wait_against(fake, Patience::Patient, numbered(3)).await;
        assert!(matches!(waited, Waited::Over(Outcome::EntryLost)));
        assert_eq!(
            (log.entry_not_found, log.origin_polls),
            (NOT_FOUND_ATTEMPTS, NOT_FOUND_ATTEMPTS)
        );
    }

    #[tokio::test]
    async fn a_restore_that_puts_a_passed_number_back_in_front_is_waited_out_not_passed_over() {
        let restored = |serving| {
            let mut status = status_json("open", serving, false);
            status["restoredAt"] = json!("2026-12-01T10:00:00Z");
            status
        };
        let waiting = json!({
            "status": "waiting", "queueId": "9.1.mac", "number": 9, "servingUpTo": 12,
            "etaSeconds": 0,
        });
        let fake = FakeApi {
            // It last saw 4 called; then the restore, with admission past its number.
            statuses: VecDeque::from([status_json("open", 4, false), restored(12), restored(13)]),
            polls: VecDeque::from([
                waiting.clone(),
                waiting.clone(),
                waiting,
                admitted("9.1.mac"),
            ]),
            ..FakeApi::default()
        };
        let (waited, log, _) = wait_against(fake, Patience::Patient, numbered(9)).await;
        assert!(matches!(waited, Waited::Admitted { .. }));
        assert_eq!(log.passed_over, 0);
        assert_eq!(log.restore_polls, 1);
        let requeued = log.requeued.expect("put back in front");
        assert_eq!((requeued.number, requeued.told_to_wait), (9, 2));
        assert_eq!(
            requeued.restored_at,
            parse_rfc3339("2026-12-01T10:00:00Z").unwrap()
        );
    }

    #[tokio::test]
    async fn a_restore_telling_a_number_seen_called_to_wait_is_still_passed_over() {
        let mut restored = status_json("open", 12, false);
        restored["restoredAt"] = json!("2026-12-01T10:00:00Z");
        let fake = FakeApi {
            // It saw 9 called (and was told to wait once), then the restore.
            statuses: VecDeque::from([status_json("open", 10, false), restored]),
            polls: VecDeque::from([json!({
                "status": "waiting", "queueId": "9.1.mac", "number": 9, "servingUpTo": 12,
                "etaSeconds": 0,
            })]),
            ..FakeApi::default()
        };
        let (waited, log, _) = wait_against(fake, Patience::Patient, numbered(9)).await;
        assert!(matches!(waited, Waited::Over(Outcome::PassedOver)));
        assert!(log.requeued.is_none());
        assert_eq!(log.passed_over, CLAIM_ATTEMPTS);
    }

    #[tokio::test]
    async fn a_sold_out_status_ends_the_wait_without_asking_the_origin() {
        let fake = FakeApi {
            statuses: VecDeque::from([
                status_json("open", 1, false),
                status_json("sold_out", 2, false),
            ]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::Patient, numbered(9)).await;
        assert!(matches!(waited, Waited::Over(Outcome::ClosedWhileWaiting)));
        assert_eq!((log.status_reads, log.origin_polls), (2, 0));
        assert!(asked.iter().all(|a| a.ends_with("/status")), "{asked:?}");
        // The join's ETA and the first read's: 8 numbers at 2 a second.
        assert_eq!(log.predictions.len(), 2);
        assert_eq!(
            log.predictions[1].admission_at - log.predictions[1].made_at,
            Duration::from_secs(4)
        );
    }

    #[tokio::test]
    async fn a_restore_after_the_ticket_is_answered_with_one_poll() {
        // The ticket "9.1.mac" was issued at 1 ms past the epoch, long before the restore.
        let restored = |serving, state| {
            let mut status = status_json(state, serving, false);
            status["restoredAt"] = json!("2026-12-01T10:00:00Z");
            status
        };
        let fake = FakeApi {
            statuses: VecDeque::from([
                restored(1, "open"),
                restored(2, "open"),
                restored(3, "sold_out"),
            ]),
            polls: VecDeque::from([json!({
                "status": "waiting", "queueId": "9.1.mac", "number": 9, "servingUpTo": 1,
                "etaSeconds": 4,
            })]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::Patient, numbered(9)).await;
        assert!(matches!(waited, Waited::Over(Outcome::ClosedWhileWaiting)));
        let origin: Vec<&String> = asked.iter().filter(|a| a.contains("/queue")).collect();
        assert_eq!(
            origin,
            ["GET /events/sim-1/queue/9.1.mac"],
            "once per restore"
        );
        assert_eq!(
            log.restore_answered.as_deref(),
            Some("2026-12-01T10:00:00Z")
        );
    }

    #[test]
    fn only_a_ticket_older_than_the_restore_answers_it() {
        let mut status: EventStatus =
            serde_json::from_value(status_json("open", 1, false)).unwrap();
        let log = WaitLog::default();
        assert!(
            !log.restore_to_answer(&status, "9.1.mac"),
            "no restore, no poll"
        );
        status.restored_at = Some("2026-12-01T10:00:00Z".into());
        let restored_ms =
            lineup::domain::clock::unix_millis(parse_rfc3339("2026-12-01T10:00:00Z").unwrap());
        assert!(log.restore_to_answer(&status, &format!("9.{}.mac", restored_ms - 1)));
        assert!(!log.restore_to_answer(&status, &format!("9.{}.mac", restored_ms + 1)));
        assert!(
            log.restore_to_answer(&status, "not-a-ticket"),
            "on doubt, poll"
        );
        let answered = WaitLog {
            restore_answered: status.restored_at.clone(),
            ..WaitLog::default()
        };
        assert!(
            !answered.restore_to_answer(&status, "9.1.mac"),
            "once per restore"
        );
    }

    #[tokio::test]
    async fn an_impatient_customer_leaves_after_its_reads() {
        let fake = FakeApi {
            statuses: VecDeque::from([status_json("open", 0, false)]),
            ..FakeApi::default()
        };
        let (waited, log, asked) = wait_against(fake, Patience::LeavesAfter(2), numbered(9)).await;
        assert!(matches!(waited, Waited::Over(Outcome::LeftWhileWaiting)));
        assert_eq!(log.status_reads, 2);
        assert_eq!(
            asked.last().map(String::as_str),
            Some("DELETE /events/sim-1/queue/9.1.mac")
        );
    }

    fn status(state: PublicState, serving: u64, updated_at: &str) -> EventStatus {
        serde_json::from_value(serde_json::json!({
            "eventId": "sim-1",
            "state": state,
            "opensAt": "2026-12-01T10:00:00Z",
            "servingUpTo": serving,
            "advancePerSecond": 10.0,
            "advanceMeasured": true,
            "lastNumber": 900,
            "waiting": 500,
            "claimWindowSeconds": 60,
            "draw": {"commitment": "c", "published": false},
            "updatedAt": updated_at,
        }))
        .expect("a status")
    }

    #[test]
    fn each_status_is_kept_once_and_every_read_counted() {
        let mut log = WaitLog::default();
        let first = status(PublicState::Open, 10, "2026-12-01T10:00:01Z");
        log.saw(&first);
        log.saw(&first); // the CDN's copy, read again
        log.saw(&status(PublicState::Open, 30, "2026-12-01T10:00:03Z"));
        assert_eq!(log.status_reads, 3);
        assert_eq!(log.statuses.len(), 2);
        assert_eq!(log.statuses[1].1, 30);
    }

    #[test]
    fn an_answer_predicts_only_while_the_number_is_not_called() {
        let at = Instant::now();
        let place = |serving_up_to| NumberedPlace {
            queue_id: "41.1.mac".to_owned(),
            number: 41,
            serving_up_to,
            eta: Duration::from_secs(3),
            read_status_after: Duration::from_secs(5),
        };
        let mut log = WaitLog::default();
        log.answered(&place(38), at);
        assert_eq!(log.number, Some(41));
        assert_eq!(
            log.predictions,
            vec![Prediction {
                made_at: at,
                admission_at: at + Duration::from_secs(3),
                source: PredictionSource::Answer,
            }]
        );
        // Called already: an answer's ETA of 0 is no prediction.
        log.answered(&place(41), at);
        assert_eq!(log.predictions.len(), 1);
    }

    #[test]
    fn the_sale_is_over_when_closed_or_sold_out_not_when_paused() {
        let at = "2026-12-01T10:00:01Z";
        assert!(is_over(&status(PublicState::SoldOut, 0, at)));
        assert!(is_over(&status(PublicState::Closed, 0, at)));
        assert!(!is_over(&status(PublicState::Paused, 0, at)));
        assert!(!is_over(&status(PublicState::PreQueue, 0, at)));
    }
}
