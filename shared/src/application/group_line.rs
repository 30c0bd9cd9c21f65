//! Which line a joiner waits in ([`crate::domain::priority_group`]): the first of the event's
//! priority groups that counts them as a member and still takes joiners, else the event's own.
//! A member whose group's window has ended keeps the place they took in it (one place per
//! customer: joining again never gives a second one in a line behind).
//!
//! The groups come from the event's durable record as this instance last read it (at most
//! [`crate::application::known_events::RECORD_MAX_AGE`] old), so an event without groups costs
//! a join nothing more; a group listing its members costs one lookup of the caller.

use std::time::SystemTime;

use crate::application::error::LineupError;
use crate::application::queue_api::QueueApi;
use crate::domain::ids::{CustomerId, EventId, GroupName};
use crate::domain::priority_group::Membership;
use crate::domain::proof_of_work::WorkShown;

/// Whether a join's code is to be checked before its line is chosen: the event has a group
/// whose members are the holders of its codes, and the join showed the event's proof-of-work
/// (or is exempt). Without the work, the code is not looked at: the join is refused with a
/// challenge first, as every join is (ADR 0028), so a flood of guessed codes costs the guesser
/// the work before it costs the store a conditional write.
pub async fn checks_code_first(
    api: &QueueApi,
    event: &EventId,
    work: WorkShown,
) -> Result<bool, LineupError> {
    Ok(api
        .restorer
        .known
        .record(event)
        .await?
        .is_some_and(|record| {
            work.bits() >= record.settings.challenge_difficulty.bits()
                && record
                    .settings
                    .groups
                    .iter()
                    .any(|group| group.membership == Membership::Code)
        }))
}

/// The line `customer` joins `event` in at `now`; `claim` reads their sign-in's claims, and
/// `code_group` is the group named by the access code the join brought, if one was accepted.
pub async fn line_for<'c>(
    api: &QueueApi,
    claim: impl Fn(&str) -> Option<&'c str>,
    code_group: Option<&GroupName>,
    event: &EventId,
    customer: &CustomerId,
    now: SystemTime,
) -> Result<EventId, LineupError> {
    let Some(record) = api.restorer.known.record(event).await? else {
        // Unknown here: the join itself says whether the event exists.
        return Ok(event.clone());
    };
    for group in record.settings.groups.iter() {
        let line = event.group_line(&group.name);
        let member = match &group.membership {
            Membership::Claim { claim: name, .. } => group.membership.admits_claim(claim(name)),
            Membership::List => api.restorer.members.is_member(&line, customer).await?,
            Membership::Code => code_group == Some(&group.name),
        };
        if !member {
            continue;
        }
        if group.takes_joiners(now) {
            return Ok(line);
        }
        // The window has ended: a place taken in it is kept, with its priority.
        if api.line.standing(&line, customer, now).await?.is_some() {
            return Ok(line);
        }
    }
    Ok(event.clone())
}

/// The ticket limit of the priority group whose line is `line` (`None`: the event's own line,
/// or a group without a limit of its own): the access token of an admission from that line
/// carries it.
pub async fn group_ticket_limit(
    api: &QueueApi,
    line: &EventId,
) -> Result<Option<u32>, LineupError> {
    let Some(group) = line.group() else {
        return Ok(None);
    };
    Ok(api
        .restorer
        .known
        .record(&line.event())
        .await?
        .and_then(|record| {
            record
                .settings
                .groups
                .get(&group)
                .and_then(|g| g.ticket_limit)
        }))
}
