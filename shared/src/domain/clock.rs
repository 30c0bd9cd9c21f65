//! The clock port. Handlers ask it for "now" instead of calling `SystemTime::now()`, so tests can
//! fix time (an expired token, a pre-opening join) without sleeping.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where handlers get the time: [`SystemClock`] in the functions, [`FixedClock`] in tests.
pub trait Clock: Send + Sync {
    /// The current wall-clock time.
    fn now(&self) -> SystemTime;
}

/// The real wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that stands still until told to move. For tests.
#[derive(Debug)]
pub struct FixedClock(Mutex<SystemTime>);

impl FixedClock {
    /// A clock standing at `now`.
    pub fn at(now: SystemTime) -> Self {
        Self(Mutex::new(now))
    }

    /// Moves the clock forward by `by`; through `&self`, so a test can move the clock it shares
    /// with the handler under test.
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Milliseconds since the Unix epoch: the unit every Redis score and token expiry uses.
pub fn unix_millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|since| since.as_millis() as u64)
        .unwrap_or(0)
}

/// The time [`unix_millis`] wrote: milliseconds since the Unix epoch back to a `SystemTime`.
pub fn from_unix_millis(millis: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(millis)
}

/// RFC 3339 in UTC with milliseconds, the contract's format for times.
pub fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// Reads a time written by [`rfc3339`] (or any RFC 3339 time in UTC).
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}
