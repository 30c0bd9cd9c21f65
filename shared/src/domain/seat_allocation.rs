//! Seats set aside for a priority group (an allocation): whole sections that only customers
//! admitted through that group's line may hold until the group's window ends, when they go back
//! on general sale by themselves (docs/decisions/0032-seat-allocations.md).
//!
//! The rule is kept where the seats are: each seat of an allocated section carries the group and
//! the end of its window in the seats table, and the hold's conditional write checks them, so a
//! cache lost, a stale seat map or a forged request changes nothing. The seat map shows the
//! allocation (from the group's definition) so that a page does not offer those seats to
//! customers who may not hold them.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::domain::ids::GroupName;
use crate::domain::priority_group::PriorityGroups;

/// A section's seats, set aside for `group` until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatReservation {
    /// The group whose members may hold these seats meanwhile.
    pub group: GroupName,
    /// The end of the group's window: from then on, anyone may hold them.
    pub until: SystemTime,
}

impl SeatReservation {
    /// Whether a customer admitted through `group`'s line (`None`: the event's own line) may
    /// hold a seat with this reservation at `now`.
    pub fn lets_hold(&self, group: Option<&GroupName>, now: SystemTime) -> bool {
        now >= self.until || group == Some(&self.group)
    }

    /// Whether the seats are still set aside at `now`.
    pub fn in_force(&self, now: SystemTime) -> bool {
        now < self.until
    }
}

/// The event's allocations: which sections are set aside, for which group, until when.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeatAllocations(BTreeMap<String, SeatReservation>);

impl SeatAllocations {
    /// The allocations the groups define: each section a group lists, until its window ends.
    /// (A group must have a window to set seats aside: [`PriorityGroups::new`] checks it.)
    pub fn of(groups: &PriorityGroups) -> Self {
        let mut sections = BTreeMap::new();
        for group in groups.iter() {
            let Some(until) = group.closes_at else {
                continue;
            };
            for section in &group.sections {
                sections.insert(
                    section.clone(),
                    SeatReservation {
                        group: group.name.clone(),
                        until,
                    },
                );
            }
        }
        Self(sections)
    }

    /// The reservation on `section`, if it has one (in force or not).
    pub fn section(&self, section: &str) -> Option<&SeatReservation> {
        self.0.get(section)
    }

    /// Every allocated section with its reservation, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &SeatReservation)> {
        self.0
            .iter()
            .map(|(section, reservation)| (section.as_str(), reservation))
    }

    /// Whether no section is set aside.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The sections set aside here and no longer in `after`: their seats are to be given back.
    pub fn given_back_in(&self, after: &SeatAllocations) -> Vec<&str> {
        self.0
            .keys()
            .filter(|section| !after.0.contains_key(*section))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::clock::from_unix_millis;
    use crate::domain::priority_group::{Membership, PriorityGroup};

    fn at(seconds: u64) -> SystemTime {
        from_unix_millis(1_800_000_000_000 + seconds * 1_000)
    }

    fn group(name: &str, sections: &[&str], closes: Option<u64>) -> PriorityGroup {
        PriorityGroup {
            name: GroupName::parse(name).unwrap(),
            membership: Membership::List,
            opens_at: at(0),
            closes_at: closes.map(at),
            ticket_limit: None,
            sections: sections.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn only_the_groups_members_hold_its_seats_until_its_window_ends() {
        let groups = PriorityGroups::new(vec![
            group("fanclub", &["Floor", "A"], Some(100)),
            group("card", &[], Some(200)),
        ])
        .unwrap();
        let allocations = SeatAllocations::of(&groups);
        let fanclub = GroupName::parse("fanclub").unwrap();
        let card = GroupName::parse("card").unwrap();
        let floor = allocations.section("Floor").unwrap();
        assert_eq!(floor.group, fanclub);
        assert!(floor.lets_hold(Some(&fanclub), at(50)));
        assert!(!floor.lets_hold(Some(&card), at(50)));
        assert!(!floor.lets_hold(None, at(99)));
        assert!(floor.in_force(at(99)));
        // The window's end: back on general sale, for everyone.
        assert!(floor.lets_hold(None, at(100)));
        assert!(!floor.in_force(at(100)));
        assert!(allocations.section("B").is_none());
    }

    #[test]
    fn the_sections_no_longer_set_aside_are_given_back() {
        let before = SeatAllocations::of(
            &PriorityGroups::new(vec![group("fanclub", &["Floor", "A"], Some(100))]).unwrap(),
        );
        let after = SeatAllocations::of(
            &PriorityGroups::new(vec![group("fanclub", &["A", "B"], Some(100))]).unwrap(),
        );
        assert_eq!(before.given_back_in(&after), ["Floor"]);
        assert!(after.given_back_in(&after).is_empty());
        assert_eq!(
            after.iter().map(|(section, _)| section).collect::<Vec<_>>(),
            ["A", "B"]
        );
    }
}
