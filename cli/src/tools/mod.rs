//! The engineers' instruments, kept apart from the operator commands and from the product:
//! they measure Lineup, they do not run an on-sale.
//!
//! - [`simulate`]: `lineup simulate`, a crowd driven through the local API, with a report and
//!   the invariants checked over what was stored (and, with `--chaos`, Redis lost mid-run).
//! - [`plan`]: `lineup plan`, an on-sale's peak load on each AWS service beside its default
//!   quota, what to raise, and the cost per million queued customers.

pub mod plan;
pub mod simulate;
