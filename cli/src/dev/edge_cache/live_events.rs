//! `lineup dev`'s stand-in for the CloudFront KeyValueStore of live events: the set of events the
//! local events table has settings for (every event `lineup event open|set|...` or `lineup dev`
//! itself configured, closed ones too), read again every second. In AWS the operator's
//! `lineup event` commands put each event's id into the store ([`crate::live_events`]); locally
//! they write no store (none is configured), so the stand-in learns the same events from what
//! those commands wrote to the events table: the same set, a second late at most. Where the
//! KeyValueStore's few seconds of propagation would refuse an event opened a moment ago, the
//! stand-in does not: an id it does not hold waits for the next read that began after the request
//! arrived ([`LiveEventSet::read_since`]), so `lineup simulate` and a developer's
//! `lineup event open` are never refused for having been quick. Until the first read (or if it
//! fails), it knows nothing and lets every request through, as the function does when a lookup
//! fails.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::scan::ScanError;
use aws_sdk_dynamodb::types::AttributeValue;

use super::viewer_request::{KnowsLiveEvents, Lookup};

/// The events table's key of an event's settings (`lineup::adapters::dynamo::event_records`):
/// `pk` = `EVENT#<eventId>`, `sk` = `STATE#SETTINGS`.
const EVENT_PARTITION_PREFIX: &str = "EVENT#";
const SETTINGS_SORT_KEY: &str = "STATE#SETTINGS";

/// How long a request for an id the set does not hold waits for a newer read, at most.
const LONGEST_WAIT_FOR_A_READ: Duration = Duration::from_secs(3);

/// The live events the dev edge knows.
#[derive(Debug, Default)]
pub struct LiveEventSet {
    /// The events, and when the read that found them began; `None` until first read.
    known: RwLock<Option<(HashSet<String>, Instant)>>,
    /// Whether [`keep_refreshed`] reads the table into this set (a fixed set never changes).
    refreshed: AtomicBool,
    /// Woken at every read.
    read: tokio::sync::Notify,
}

impl LiveEventSet {
    /// A set that holds exactly `events` (a test's store).
    pub fn holding<I, S>(events: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set = Self::default();
        set.replace(events.into_iter().map(Into::into).collect(), Instant::now());
        set
    }

    /// Replaces what the set holds with `events`, found by a read that began `read_at`.
    pub fn replace(&self, events: HashSet<String>, read_at: Instant) {
        *self.known.write().unwrap_or_else(|p| p.into_inner()) = Some((events, read_at));
        self.read.notify_waiters();
    }

    fn read_at(&self) -> Option<Instant> {
        let known = self.known.read().unwrap_or_else(|p| p.into_inner());
        known.as_ref().map(|(_, read_at)| *read_at)
    }

    /// Waits until the set holds a read that began at `arrived` or later (at once for a set no
    /// reader keeps, and at most [`LONGEST_WAIT_FOR_A_READ`]). `false` when no such read came
    /// in time (the table slow to answer): then the set cannot say the event is unknown.
    pub async fn read_since(&self, arrived: Instant) -> bool {
        if !self.refreshed.load(Ordering::Relaxed) {
            return true;
        }
        let deadline = tokio::time::Instant::now() + LONGEST_WAIT_FOR_A_READ;
        loop {
            let read = self.read.notified();
            tokio::pin!(read);
            // Registered before the check, so a read that lands in between still wakes it.
            read.as_mut().enable();
            if self.read_at().is_some_and(|read_at| read_at >= arrived) {
                return true;
            }
            if tokio::time::timeout_at(deadline, read).await.is_err() {
                return false;
            }
        }
    }
}

impl KnowsLiveEvents for LiveEventSet {
    fn lookup(&self, event: &str) -> Lookup {
        match &*self.known.read().unwrap_or_else(|p| p.into_inner()) {
            None => Lookup::Failed,
            Some((events, _)) if events.contains(event) => Lookup::Live,
            Some(_) => Lookup::Unknown,
        }
    }
}

/// The events table could not be read.
#[derive(Debug, thiserror::Error)]
#[error("could not scan the events table {table} for its events")]
pub struct ScanFailed {
    table: String,
    #[source]
    source: Box<SdkError<ScanError>>,
}

/// Every event the events table has settings for.
pub async fn configured_events(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<HashSet<String>, ScanFailed> {
    let mut pages = dynamodb
        .scan()
        .table_name(table)
        .filter_expression("sk = :settings")
        .expression_attribute_values(":settings", AttributeValue::S(SETTINGS_SORT_KEY.into()))
        .projection_expression("pk")
        .into_paginator()
        .send();
    let mut events = HashSet::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|source| ScanFailed {
            table: table.to_owned(),
            source: Box::new(source),
        })?;
        for item in page.items() {
            if let Some(AttributeValue::S(partition)) = item.get("pk") {
                if let Some(event) = partition.strip_prefix(EVENT_PARTITION_PREFIX) {
                    events.insert(event.to_owned());
                }
            }
        }
    }
    Ok(events)
}

/// Reads the table into `set` now, then every `every`, for ever. A failed read keeps what the set
/// held (and says so once until a read succeeds again).
pub async fn keep_refreshed(
    set: Arc<LiveEventSet>,
    dynamodb: aws_sdk_dynamodb::Client,
    table: String,
    every: Duration,
) {
    set.refreshed.store(true, Ordering::Relaxed);
    let mut failing = false;
    loop {
        let read_at = Instant::now();
        match configured_events(&dynamodb, &table).await {
            Ok(events) => {
                set.replace(events, read_at);
                failing = false;
            }
            Err(error) if !failing => {
                tracing::warn!(error = %error, "the dev edge could not read the live events; it keeps what it knew");
                failing = true;
            }
            Err(_) => {}
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_nothing_until_read_then_exactly_what_was_read() {
        let set = LiveEventSet::default();
        assert_eq!(
            set.lookup("gala"),
            Lookup::Failed,
            "fail open before the first read"
        );
        set.replace(HashSet::from(["gala".to_owned()]), Instant::now());
        assert_eq!(set.lookup("gala"), Lookup::Live);
        assert_eq!(set.lookup("Gala"), Lookup::Unknown);
        assert_eq!(LiveEventSet::holding(["x"]).lookup("gala"), Lookup::Unknown);
    }

    #[tokio::test]
    async fn a_request_waits_for_the_first_read_that_began_after_it_arrived() {
        let set = Arc::new(LiveEventSet::default());
        set.refreshed.store(true, Ordering::Relaxed);
        set.replace(HashSet::new(), Instant::now());
        let arrived = Instant::now();
        let waiting = tokio::spawn({
            let set = set.clone();
            async move {
                set.read_since(arrived).await;
                set.lookup("gala")
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        // A read that began before the request does not count; the next one does.
        set.replace(HashSet::new(), arrived - Duration::from_millis(1));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "still waiting for a newer read");
        set.replace(HashSet::from(["gala".to_owned()]), Instant::now());
        assert_eq!(waiting.await.unwrap(), Lookup::Live);
        // A set nobody reads into answers at once.
        let fixed = LiveEventSet::holding(["x"]);
        let answered =
            tokio::time::timeout(Duration::from_millis(100), fixed.read_since(Instant::now()))
                .await
                .expect("no wait");
        assert!(answered, "a fixed set says what it holds");
    }

    #[tokio::test]
    async fn a_table_too_slow_to_read_lets_the_request_through_rather_than_refuse_it() {
        // The table's reads stopped coming (moto slow under a crowd): the set still holds an old
        // read without the event just opened.
        let set = LiveEventSet::default();
        set.refreshed.store(true, Ordering::Relaxed);
        set.replace(HashSet::new(), Instant::now());
        let arrived = Instant::now();
        assert!(!set.read_since(arrived).await, "no newer read came");
        let verdict = super::super::viewer_request::decide_at_dev_edge(
            &axum::http::Method::GET,
            "/events/just-opened/status",
            &set,
            arrived,
        )
        .await;
        assert!(
            matches!(verdict, super::super::viewer_request::Verdict::Pass),
            "{verdict:?}"
        );
    }
}
