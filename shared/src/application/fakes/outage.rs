//! An outage played on a fake, and the controls every fake shares for it: a test takes a store
//! down, fails its next calls, and counts what was called, the same way on each fake.

use std::collections::HashMap;

use crate::application::error::{LineupError, Store};

/// An outage played on a fake: every call fails while down, and the next `failures` calls fail,
/// whatever they are. Every call is counted by operation (the port method's name).
#[derive(Debug, Default)]
pub(crate) struct Outage {
    down: bool,
    failures: u32,
    calls: HashMap<&'static str, usize>,
}

impl Outage {
    /// Counts the call, and fails it during an outage, as `Unavailable` from `store`.
    pub(crate) fn enter(
        &mut self,
        store: Store,
        fake: &'static str,
        operation: &'static str,
    ) -> Result<(), LineupError> {
        *self.calls.entry(operation).or_default() += 1;
        if self.down || self.failures > 0 {
            self.failures = self.failures.saturating_sub(1);
            return Err(LineupError::Unavailable {
                store,
                source: Box::new(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    format!("the {fake} is down (a played outage, in {operation})"),
                )),
            });
        }
        Ok(())
    }

    fn go_down(&mut self) {
        self.down = true;
    }

    fn come_back(&mut self) {
        self.down = false;
        self.failures = 0;
    }

    fn fail_next(&mut self, calls: u32) {
        self.failures = calls;
    }

    fn calls(&self, operation: &str) -> usize {
        self.calls.get(operation).copied().unwrap_or(0)
    }
}

/// The outage controls of a fake whose state holds an [`Outage`].
pub(crate) trait Faulty {
    /// Runs `f` on the fake's outage, under its lock.
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R;

    /// Every call fails until [`Faulty::come_back`].
    fn go_down(&self) {
        self.with_outage(Outage::go_down)
    }

    /// The outage is over (and no further call is set to fail).
    fn come_back(&self) {
        self.with_outage(Outage::come_back)
    }

    /// The next `calls` calls fail, whatever they are.
    fn fail_next(&self, calls: u32) {
        self.with_outage(|outage| outage.fail_next(calls))
    }

    /// How many times the port operation `operation` (its method name) was called.
    fn calls(&self, operation: &str) -> usize {
        self.with_outage(|outage| outage.calls(operation))
    }
}
