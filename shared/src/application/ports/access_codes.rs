//! The access codes an event may require at join (docs/decisions/0030-access-codes.md): the
//! join's one question, [`AccessCodes::accept`], and the operator's book of codes,
//! [`AccessCodeBook`]. Durable (DynamoDB): which accounts a code is bound to is never kept in
//! the cache, so no cache loss can forget it.

use std::time::SystemTime;

use async_trait::async_trait;

use crate::application::error::LineupError;
use crate::domain::access_code::{AccessCode, CodeHash, CodeTerms};
use crate::domain::ids::{CustomerId, EventId, GroupName};

/// A code accepted for a customer: they are bound to it (now or before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeAccepted {
    /// The code's group, if it was created with one (not acted on by the join yet).
    pub group: Option<GroupName>,
}

/// The join's side: may this customer join `event` with this code?
#[async_trait]
pub trait AccessCodes: Send + Sync {
    /// Binds `customer` to `code` for `event` and answers [`CodeAccepted`], in one conditional
    /// write: allowed when the customer is already bound to it (idempotent: a retry, a second
    /// join after leaving), or fewer accounts than its uses are bound, and the code is neither
    /// revoked nor expired at `now`. Anything else (no such code for this event, used up by
    /// others, revoked, expired) is [`LineupError::CodeRefused`] and changes nothing.
    async fn accept(
        &self,
        event: &EventId,
        code: &AccessCode,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<CodeAccepted, LineupError>;
}

/// An event's codes counted (never the codes: only their holders have them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeCounts {
    /// Codes created.
    pub codes: u64,
    /// Of which revoked.
    pub revoked: u64,
    /// Of which past their expiry (and not revoked).
    pub expired: u64,
    /// Of the others, those with every use taken.
    pub used_up: u64,
    /// Accounts bound to any code.
    pub accounts_bound: u64,
    /// Uses left on codes still valid.
    pub uses_left: u64,
}

impl CodeCounts {
    /// Counts one code that allows `uses` accounts, has `bound` bound, and is `revoked` or
    /// `expired` (a revoked code counts as revoked, whatever its expiry).
    pub fn tally(&mut self, uses: u64, bound: u64, revoked: bool, expired: bool) {
        let left = uses.saturating_sub(bound);
        self.codes += 1;
        self.accounts_bound += bound;
        if revoked {
            self.revoked += 1;
        } else if expired {
            self.expired += 1;
        } else if left == 0 {
            self.used_up += 1;
        } else {
            self.uses_left += left;
        }
    }
}

/// The operator's side: create, revoke, count.
#[async_trait]
pub trait AccessCodeBook: Send + Sync {
    /// Stores `codes` (by their hash) for `event` under `terms`. A hash already stored is an
    /// error, not an overwrite ([`LineupError::Failed`]): 80 random bits never repeat, so one
    /// would mean a broken generator.
    async fn create(
        &self,
        event: &EventId,
        codes: &[AccessCode],
        terms: &CodeTerms,
        now: SystemTime,
    ) -> Result<(), LineupError>;

    /// Revokes these codes of `event`; answers how many existed and were not revoked before.
    async fn revoke(
        &self,
        event: &EventId,
        codes: &[CodeHash],
        now: SystemTime,
    ) -> Result<u64, LineupError>;

    /// Revokes every code of `event`; answers how many were newly revoked.
    async fn revoke_all(&self, event: &EventId, now: SystemTime) -> Result<u64, LineupError>;

    /// The event's codes, counted at `now`.
    async fn counts(&self, event: &EventId, now: SystemTime) -> Result<CodeCounts, LineupError>;
}
