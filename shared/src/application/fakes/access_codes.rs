//! An in-memory book of access codes, answering as the DynamoDB adapter does: one item per
//! code hash and event, the binding checked and made in one step under the lock, as the
//! adapter's conditional write does.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::access_codes::{
    AccessCodeBook, AccessCodes, CodeAccepted, CodeCounts,
};
use crate::domain::access_code::{AccessCode, CodeHash, CodeTerms};
use crate::domain::ids::{CustomerId, EventId};

/// One stored code.
#[derive(Debug, Clone)]
struct StoredCode {
    terms: CodeTerms,
    bound: BTreeSet<CustomerId>,
    revoked: bool,
}

impl StoredCode {
    fn expired(&self, now: SystemTime) -> bool {
        self.terms.expires_at.is_some_and(|at| at <= now)
    }
}

#[derive(Default)]
struct State {
    codes: HashMap<(EventId, CodeHash), StoredCode>,
    outage: Outage,
}

/// Access codes in memory.
#[derive(Default)]
pub struct MemoryAccessCodes {
    state: Mutex<State>,
}

impl MemoryAccessCodes {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn enter(&self, operation: &'static str) -> Result<MutexGuard<'_, State>, LineupError> {
        let mut state = self.lock();
        state
            .outage
            .enter(Store::Seats, "memory access codes", operation)?;
        Ok(state)
    }

    /// The accounts bound to `code` for `event` (empty for an unknown code).
    pub fn bound(&self, event: &EventId, code: &AccessCode) -> Vec<CustomerId> {
        self.lock()
            .codes
            .get(&(event.clone(), code.hash(event)))
            .map(|stored| stored.bound.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl Faulty for MemoryAccessCodes {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

#[async_trait]
impl AccessCodes for MemoryAccessCodes {
    async fn accept(
        &self,
        event: &EventId,
        code: &AccessCode,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<CodeAccepted, LineupError> {
        let mut state = self.enter("accept")?;
        let Some(stored) = state.codes.get_mut(&(event.clone(), code.hash(event))) else {
            return Err(LineupError::CodeRefused);
        };
        if stored.revoked || stored.expired(now) {
            return Err(LineupError::CodeRefused);
        }
        let has_room = stored.bound.len() < stored.terms.uses as usize;
        if !stored.bound.contains(customer) && !has_room {
            return Err(LineupError::CodeRefused);
        }
        stored.bound.insert(customer.clone());
        Ok(CodeAccepted {
            group: stored.terms.group.clone(),
        })
    }
}

#[async_trait]
impl AccessCodeBook for MemoryAccessCodes {
    async fn create(
        &self,
        event: &EventId,
        codes: &[AccessCode],
        terms: &CodeTerms,
        _now: SystemTime,
    ) -> Result<(), LineupError> {
        let mut state = self.enter("create")?;
        for code in codes {
            let stored = StoredCode {
                terms: terms.clone(),
                bound: BTreeSet::new(),
                revoked: false,
            };
            if state
                .codes
                .insert((event.clone(), code.hash(event)), stored)
                .is_some()
            {
                return Err(LineupError::Failed {
                    store: Store::Seats,
                    source: "an access code's hash is already stored".into(),
                });
            }
        }
        Ok(())
    }

    async fn revoke(
        &self,
        event: &EventId,
        codes: &[CodeHash],
        _now: SystemTime,
    ) -> Result<u64, LineupError> {
        let mut state = self.enter("revoke")?;
        let mut revoked = 0;
        for hash in codes {
            if let Some(stored) = state.codes.get_mut(&(event.clone(), hash.clone())) {
                revoked += u64::from(!stored.revoked);
                stored.revoked = true;
            }
        }
        Ok(revoked)
    }

    async fn revoke_all(&self, event: &EventId, _now: SystemTime) -> Result<u64, LineupError> {
        let mut state = self.enter("revoke_all")?;
        let mut revoked = 0;
        for ((of, _), stored) in state.codes.iter_mut() {
            if of == event && !stored.revoked {
                stored.revoked = true;
                revoked += 1;
            }
        }
        Ok(revoked)
    }

    async fn counts(&self, event: &EventId, now: SystemTime) -> Result<CodeCounts, LineupError> {
        let state = self.enter("counts")?;
        let mut counts = CodeCounts::default();
        for ((of, _), stored) in &state.codes {
            if of != event {
                continue;
            }
            counts.tally(
                u64::from(stored.terms.uses),
                stored.bound.len() as u64,
                stored.revoked,
                stored.expired(now),
            );
        }
        Ok(counts)
    }
}
