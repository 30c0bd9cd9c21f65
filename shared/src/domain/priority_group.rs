//! Priority groups: who is admitted before whom. A presale's fan club, a card partner's
//! customers or last tour's buyers each form a group, with its own waiting line
//! ([`EventId::group_line`]), its own opening and pre-queue draw, and a window after which it
//! takes no one new. Groups are in strict order: nobody in a line is called while a line ahead
//! of it, open, still has anyone waiting (or is still drawing its pre-queue); everyone in no
//! group waits in the event's own line, behind them all. Every line admits into the event's
//! slots (the active cap and the rate are the event's) and sells its seats under its ticket
//! limit, so one limit spans the presale and the general sale.
//!
//! Who belongs is never stored in what anyone can read: a group names a claim of the customer's
//! sign-in (`cognito:groups` containing `fanclub`, `tier` = `gold`), a list of customer ids an
//! operator imported ([`Membership::List`], kept in the events table, looked up at join), or the
//! holders of access codes made for it ([`Membership::Code`]: a presale code).
//! The public status names the groups and which is being served, never their members.

use std::collections::HashSet;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::ids::{EventId, GroupName};

/// The most groups an event may have: each is one more line ticked every second, and one more
/// membership lookup for a joiner of the groups behind it.
pub const MAX_GROUPS: usize = 8;

/// The most sections one group may set aside ([`crate::domain::seat_allocation`]).
pub const MAX_SECTIONS_PER_GROUP: usize = 64;

/// Whether `name` can be a section's name in a group's allocation (as a hold names a section:
/// 1–64 bytes, no control characters).
pub fn valid_section_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && !name.chars().any(char::is_control)
}

/// Who belongs to a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Membership {
    /// Customers whose sign-in has `claim` equal to `value`, or, for a list claim such as
    /// `cognito:groups` (which the API's JWT authorizer passes as `[a b c]`), containing it.
    Claim {
        /// The claim's name.
        claim: String,
        /// The value that makes a member.
        value: String,
    },
    /// The customer ids an operator imported (`lineup event group import`).
    List,
    /// Holders of an access code made for the group (`lineup event codes create --group`): the
    /// join's `code`, bound to the caller ([`crate::domain::access_code`]).
    Code,
}

impl Membership {
    /// Whether a caller whose sign-in has `claim_value` for this membership's claim belongs
    /// (always `false` for a list: that is looked up, not read from the sign-in).
    pub fn admits_claim(&self, claim_value: Option<&str>) -> bool {
        let (Self::Claim { value, .. }, Some(found)) = (self, claim_value) else {
            return false;
        };
        found == value
            || found
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(|c: char| c == ',' || c.is_whitespace())
                .any(|part| part.trim_matches('"') == value)
    }

    /// How the CLI and the audit trail write it: `claim:<name>=<value>`, `list` or `code`.
    pub fn describe(&self) -> String {
        match self {
            Self::Claim { claim, value } => format!("claim:{claim}={value}"),
            Self::List => "list".to_owned(),
            Self::Code => "code".to_owned(),
        }
    }

    /// The membership [`Membership::describe`] writes; `None` for anything else.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "list" => return Some(Self::List),
            "code" => return Some(Self::Code),
            _ => {}
        }
        let (claim, value) = raw.strip_prefix("claim:")?.split_once('=')?;
        let printable = |text: &str| {
            !text.is_empty() && text.len() <= 128 && text.bytes().all(|b| b.is_ascii_graphic())
        };
        (printable(claim) && printable(value)).then(|| Self::Claim {
            claim: claim.to_owned(),
            value: value.to_owned(),
        })
    }
}

/// One priority group, as an operator defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityGroup {
    /// Its name, in its line's id and in the status.
    pub name: GroupName,
    /// Who belongs.
    pub membership: Membership,
    /// When its line opens: members who join earlier form its pre-queue, drawn at this time.
    pub opens_at: SystemTime,
    /// From this time its line takes nobody new (members then join the lines behind it); those
    /// already in it keep their place and their priority. `None`: open until the event closes.
    pub closes_at: Option<SystemTime>,
    /// At most this many seats per member bought while admitted through the group's line
    /// (a presale's own limit, on top of the event's, which spans every line); `None`: the
    /// event's limit alone.
    pub ticket_limit: Option<u32>,
    /// The sections set aside for its members until its window ends (an allocation,
    /// [`crate::domain::seat_allocation`]): only customers admitted through its line may hold
    /// their seats meanwhile. Empty: none.
    pub sections: Vec<String>,
}

impl PriorityGroup {
    /// Whether its line still takes new members at `now` (before its opening too: its
    /// pre-queue).
    pub fn takes_joiners(&self, now: SystemTime) -> bool {
        self.closes_at.is_none_or(|closes| now < closes)
    }
}

/// An event's groups, in priority order (the first is admitted first), each name once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriorityGroups(Vec<PriorityGroup>);

/// Why a list of groups was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidGroups {
    /// The same name twice.
    #[error("the group {0} is listed twice")]
    Repeated(String),
    /// More than [`MAX_GROUPS`].
    #[error("an event has at most {MAX_GROUPS} groups")]
    TooMany,
    /// A window that closes before it opens.
    #[error("the group {0} closes before it opens")]
    ClosesBeforeOpening(String),
    /// Seats set aside with no window to give them back at.
    #[error("the group {0} sets seats aside, so it needs a window's end (--closes-at) to give them back at")]
    AllocationWithoutWindow(String),
    /// A section set aside for two groups, or twice.
    #[error("the section {0:?} is set aside twice")]
    SectionTwice(String),
    /// A section name no hold could name, or too many sections.
    #[error("the group {0} sets aside a section with an invalid name, or more than {MAX_SECTIONS_PER_GROUP} sections")]
    InvalidSections(String),
}

impl PriorityGroups {
    /// The groups, in priority order, once checked.
    pub fn new(groups: Vec<PriorityGroup>) -> Result<Self, InvalidGroups> {
        if groups.len() > MAX_GROUPS {
            return Err(InvalidGroups::TooMany);
        }
        let mut seen = HashSet::new();
        let mut sections = HashSet::new();
        for group in &groups {
            if !seen.insert(group.name.clone()) {
                return Err(InvalidGroups::Repeated(group.name.to_string()));
            }
            if group
                .closes_at
                .is_some_and(|closes| closes <= group.opens_at)
            {
                return Err(InvalidGroups::ClosesBeforeOpening(group.name.to_string()));
            }
            if group.sections.is_empty() {
                continue;
            }
            if group.closes_at.is_none() {
                return Err(InvalidGroups::AllocationWithoutWindow(
                    group.name.to_string(),
                ));
            }
            if group.sections.len() > MAX_SECTIONS_PER_GROUP
                || !group.sections.iter().all(|name| valid_section_name(name))
            {
                return Err(InvalidGroups::InvalidSections(group.name.to_string()));
            }
            for section in &group.sections {
                if !sections.insert(section.as_str()) {
                    return Err(InvalidGroups::SectionTwice(section.clone()));
                }
            }
        }
        Ok(Self(groups))
    }

    /// No groups: everyone waits in the event's own line.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// The groups, first admitted first.
    pub fn iter(&self) -> std::slice::Iter<'_, PriorityGroup> {
        self.0.iter()
    }

    /// Whether the event has no groups.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The group named `name`.
    pub fn get(&self, name: &GroupName) -> Option<&PriorityGroup> {
        self.0.iter().find(|group| &group.name == name)
    }

    /// The lines of `event` in priority order: each group's, then the event's own.
    pub fn lines(&self, event: &EventId) -> Vec<EventId> {
        let event = event.event();
        let mut lines: Vec<EventId> = self
            .0
            .iter()
            .map(|group| event.group_line(&group.name))
            .collect();
        lines.push(event);
        lines
    }

    /// The lines admitted before `line`'s (none for the first group's).
    pub fn lines_ahead_of(&self, line: &EventId) -> Vec<EventId> {
        let all = self.lines(line);
        let at = all.iter().position(|l| l == line).unwrap_or(all.len());
        all[..at].to_vec()
    }

    /// The groups as their stored JSON (the event record's `groups`).
    pub fn to_json(&self) -> String {
        let stored: Vec<StoredGroup> = self.0.iter().map(StoredGroup::from).collect();
        serde_json::to_string(&stored).unwrap_or_else(|_| "[]".to_owned())
    }

    /// The groups [`PriorityGroups::to_json`] wrote; `None` when the text is not that.
    pub fn from_json(text: &str) -> Option<Self> {
        let stored: Vec<StoredGroup> = serde_json::from_str(text).ok()?;
        let groups = stored
            .into_iter()
            .map(PriorityGroup::try_from)
            .collect::<Result<Vec<_>, ()>>()
            .ok()?;
        Self::new(groups).ok()
    }
}

/// A group as stored: plain fields, times in Unix milliseconds.
#[derive(Serialize, Deserialize)]
struct StoredGroup {
    name: String,
    membership: String,
    opens_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    closes_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ticket_limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sections: Vec<String>,
}

impl From<&PriorityGroup> for StoredGroup {
    fn from(group: &PriorityGroup) -> Self {
        Self {
            name: group.name.to_string(),
            membership: group.membership.describe(),
            opens_at_ms: unix_millis(group.opens_at),
            closes_at_ms: group.closes_at.map(unix_millis),
            ticket_limit: group.ticket_limit,
            sections: group.sections.clone(),
        }
    }
}

impl TryFrom<StoredGroup> for PriorityGroup {
    type Error = ();
    fn try_from(stored: StoredGroup) -> Result<Self, ()> {
        Ok(Self {
            name: GroupName::parse(&stored.name).map_err(|_| ())?,
            membership: Membership::parse(&stored.membership).ok_or(())?,
            opens_at: from_unix_millis(stored.opens_at_ms),
            closes_at: stored.closes_at_ms.map(from_unix_millis),
            ticket_limit: stored.ticket_limit.filter(|limit| *limit > 0),
            sections: stored.sections,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(seconds: u64) -> SystemTime {
        from_unix_millis(1_800_000_000_000 + seconds * 1_000)
    }

    fn group(name: &str, membership: Membership) -> PriorityGroup {
        PriorityGroup {
            name: GroupName::parse(name).unwrap(),
            membership,
            opens_at: at(0),
            closes_at: Some(at(3_600)),
            ticket_limit: None,
            sections: Vec::new(),
        }
    }

    #[test]
    fn a_claim_admits_its_value_alone_or_in_a_list() {
        let fans = Membership::Claim {
            claim: "cognito:groups".into(),
            value: "fanclub".into(),
        };
        for member in [
            "fanclub",
            "[fanclub]",
            "[admins fanclub]",
            "[\"a\",\"fanclub\"]",
        ] {
            assert!(fans.admits_claim(Some(member)), "{member}");
        }
        for stranger in ["fanclubs", "[fan club]", "", "[fanclub-old]"] {
            assert!(!fans.admits_claim(Some(stranger)), "{stranger}");
        }
        assert!(!fans.admits_claim(None));
        assert!(!Membership::List.admits_claim(Some("fanclub")));
    }

    #[test]
    fn memberships_read_back_as_written_and_refuse_anything_else() {
        for written in [
            "list",
            "code",
            "claim:tier=gold",
            "claim:cognito:groups=fanclub",
        ] {
            assert_eq!(Membership::parse(written).unwrap().describe(), written);
        }
        for bad in [
            "",
            "claim:",
            "claim:tier",
            "claim:=gold",
            "claim:tier=",
            "everyone",
        ] {
            assert_eq!(Membership::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn lines_are_the_groups_in_order_then_the_event() {
        let event = EventId::parse("e1").unwrap();
        let groups = PriorityGroups::new(vec![
            group("fanclub", Membership::List),
            group("card", Membership::List),
        ])
        .unwrap();
        let names: Vec<String> = groups.lines(&event).iter().map(|l| l.to_string()).collect();
        assert_eq!(names, ["e1.fanclub", "e1.card", "e1"]);
        let card = event.group_line(&GroupName::parse("card").unwrap());
        assert_eq!(groups.lines_ahead_of(&card).len(), 1);
        assert_eq!(groups.lines_ahead_of(&event).len(), 2);
        assert!(groups
            .lines_ahead_of(&event.group_line(&GroupName::parse("fanclub").unwrap()))
            .is_empty());
        assert_eq!(PriorityGroups::none().lines(&event), vec![event.clone()]);
    }

    #[test]
    fn a_group_takes_joiners_until_its_window_ends() {
        let fans = group("fanclub", Membership::List);
        assert!(fans.takes_joiners(at(0) - Duration::from_secs(60)));
        assert!(fans.takes_joiners(at(3_599)));
        assert!(!fans.takes_joiners(at(3_600)));
        let open_ended = PriorityGroup {
            closes_at: None,
            ..fans
        };
        assert!(open_ended.takes_joiners(at(1_000_000)));
    }

    #[test]
    fn groups_are_checked_and_stored_as_json() {
        let twice = PriorityGroups::new(vec![
            group("fanclub", Membership::List),
            group("fanclub", Membership::List),
        ]);
        assert_eq!(twice, Err(InvalidGroups::Repeated("fanclub".into())));
        let backwards = PriorityGroup {
            closes_at: Some(at(0)),
            ..group("fanclub", Membership::List)
        };
        assert!(PriorityGroups::new(vec![backwards]).is_err());
        let many = (0..=MAX_GROUPS)
            .map(|i| group(&format!("g{i}"), Membership::List))
            .collect();
        assert_eq!(PriorityGroups::new(many), Err(InvalidGroups::TooMany));

        let groups = PriorityGroups::new(vec![
            group(
                "fanclub",
                Membership::Claim {
                    claim: "tier".into(),
                    value: "gold".into(),
                },
            ),
            PriorityGroup {
                closes_at: None,
                ticket_limit: Some(2),
                ..group("card", Membership::List)
            },
        ])
        .unwrap();
        assert_eq!(PriorityGroups::from_json(&groups.to_json()), Some(groups));
        assert_eq!(PriorityGroups::from_json("[{\"name\":\"General\"}]"), None);
    }

    #[test]
    fn seats_are_set_aside_for_one_group_and_only_with_a_window_to_give_them_back_at() {
        let with = |name: &str, sections: &[&str]| PriorityGroup {
            sections: sections.iter().map(|s| (*s).to_owned()).collect(),
            ..group(name, Membership::List)
        };
        let allocated =
            PriorityGroups::new(vec![with("fanclub", &["Floor"]), with("card", &["A"])]).unwrap();
        assert_eq!(
            PriorityGroups::from_json(&allocated.to_json()),
            Some(allocated)
        );
        assert_eq!(
            PriorityGroups::new(vec![with("fanclub", &["Floor"]), with("card", &["Floor"])]),
            Err(InvalidGroups::SectionTwice("Floor".into()))
        );
        let forever = PriorityGroup {
            closes_at: None,
            ..with("fanclub", &["Floor"])
        };
        assert_eq!(
            PriorityGroups::new(vec![forever]),
            Err(InvalidGroups::AllocationWithoutWindow("fanclub".into()))
        );
        assert!(PriorityGroups::new(vec![with("fanclub", &[""])]).is_err());
        let too_many: Vec<String> = (0..=MAX_SECTIONS_PER_GROUP)
            .map(|i| format!("S{i}"))
            .collect();
        let too_many: Vec<&str> = too_many.iter().map(String::as_str).collect();
        assert!(PriorityGroups::new(vec![with("fanclub", &too_many)]).is_err());
    }

    #[test]
    fn section_names_are_what_a_hold_can_name() {
        assert!(valid_section_name("Floor A"));
        assert!(!valid_section_name(""));
        assert!(!valid_section_name(&"x".repeat(65)));
        assert!(!valid_section_name("A\nB"));
    }
}
