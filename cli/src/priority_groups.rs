//! `lineup event group add|set|remove|list|import`: an event's priority groups (presales,
//! docs/decisions/0031-priority-groups.md). Groups are admitted in the order listed, each before
//! everyone in no group; `add` puts a new group last unless `--before` names one.
//!
//! Each change goes through [`EventAdmin::set_groups`]: kept in the event's audit trail, written
//! to the event's durable record, then to every group's line. `import` adds customer ids (one a
//! line, from a file or `-` for stdin) to a group whose members are a list.
//!
//! A group may set sections aside (`--sections`, ADR 0032): every seat of a section given back
//! loses its marks before the record changes, and every seat of every section set aside gets
//! its group and the end of its window after ([`change_groups`]), so running a command once
//! more mends seats a stopped run left half-written.

use std::io::BufRead;
use std::time::SystemTime;

use lineup::application::ports::event_records::{GroupMembers, LayoutStore};
use lineup::application::seeding::SeatWriter;
use lineup::domain::ids::{CustomerId, EventId, GroupName, SeatId};
use lineup::domain::layout::SeatLayout;
use lineup::domain::priority_group::{Membership, PriorityGroup, PriorityGroups};
use lineup::domain::seat_allocation::{SeatAllocations, SeatReservation};

use crate::endpoints::EndpointArgs;
use crate::event_admin::{AdminError, EventAdmin, OpensAt};

/// `lineup event group ...`.
#[derive(Debug, clap::Subcommand)]
pub enum GroupAction {
    /// Add a priority group: admitted before everyone in no group, after the groups before it.
    Add(GroupArgs),
    /// Change a group's members, opening or window (its opening is fixed once anyone is in its
    /// pre-queue).
    Set(GroupArgs),
    /// Remove a group: its line closes (its waiting members may join again, behind).
    Remove(NamedGroup),
    /// Print the event's groups, first admitted first.
    List(EventOnly),
    /// Add customer ids (one a line; `-` reads stdin) to a group whose members are a list.
    Import(ImportArgs),
}

/// A group's definition, as flags.
#[derive(Debug, Clone, clap::Args)]
pub struct GroupArgs {
    /// The event.
    #[arg(long)]
    pub event: String,
    /// The group's name: 1-32 of a-z, 0-9, '-', starting with a letter.
    #[arg(long, value_parser = parse_group)]
    pub group: GroupName,
    /// Who belongs: `claim:<claim>=<value>` (the sign-in's claim equals, or for a list claim
    /// such as `cognito:groups` contains, the value), `list` (ids imported with `import`) or
    /// `code` (holders of codes made with `lineup event codes create --group <group>`).
    #[arg(long, value_parser = parse_membership)]
    pub members: Option<Membership>,
    /// When the group's line opens (its pre-queue is drawn then): RFC 3339 or `+10m`. Default
    /// for a new group: the event's opening.
    #[arg(long, value_parser = crate::event_admin::parse_opens_at)]
    pub opens_at: Option<OpensAt>,
    /// From when the group takes nobody new (members already waiting keep their place and
    /// priority): RFC 3339 or `+2h`.
    #[arg(long, value_parser = crate::event_admin::parse_opens_at, conflicts_with = "no_closes_at")]
    pub closes_at: Option<OpensAt>,
    /// The group takes members until the event closes.
    #[arg(long)]
    pub no_closes_at: bool,
    /// At most this many seats per member bought while admitted through the group (on top of
    /// the event's limit, which spans the presale and the general sale).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "no_ticket_limit")]
    pub ticket_limit: Option<u32>,
    /// The group has no limit of its own (the event's still applies).
    #[arg(long)]
    pub no_ticket_limit: bool,
    /// Sections set aside for the group's members (comma-separated names, as in the layout)
    /// until its window ends (`--closes-at`, required), then back on general sale.
    #[arg(long, value_delimiter = ',', conflicts_with = "no_sections")]
    pub sections: Option<Vec<String>>,
    /// `set` only: give the group's sections back to the general sale now.
    #[arg(long)]
    pub no_sections: bool,
    /// `add` only: put the new group just before this one (default: after every group).
    #[arg(long, value_parser = parse_group)]
    pub before: Option<GroupName>,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// An event and one of its groups.
#[derive(Debug, Clone, clap::Args)]
pub struct NamedGroup {
    #[arg(long)]
    pub event: String,
    #[arg(long, value_parser = parse_group)]
    pub group: GroupName,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// An event only.
#[derive(Debug, Clone, clap::Args)]
pub struct EventOnly {
    #[arg(long)]
    pub event: String,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// `import`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    #[arg(long)]
    pub event: String,
    #[arg(long, value_parser = parse_group)]
    pub group: GroupName,
    /// A file of customer ids (the sign-in's `sub`), one a line; `-` for stdin.
    pub file: std::path::PathBuf,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

fn parse_group(raw: &str) -> Result<GroupName, String> {
    GroupName::parse(raw).map_err(|error| error.to_string())
}

fn parse_membership(raw: &str) -> Result<Membership, String> {
    Membership::parse(raw)
        .ok_or_else(|| format!("{raw:?} is none of claim:<claim>=<value>, list, code"))
}

impl GroupAction {
    /// The event named.
    pub fn event(&self) -> &str {
        match self {
            Self::Add(args) | Self::Set(args) => &args.event,
            Self::Remove(args) => &args.event,
            Self::List(args) => &args.event,
            Self::Import(args) => &args.event,
        }
    }

    /// Where the event lives.
    pub fn endpoints(&self) -> &EndpointArgs {
        match self {
            Self::Add(args) | Self::Set(args) => &args.endpoints,
            Self::Remove(args) => &args.endpoints,
            Self::List(args) => &args.endpoints,
            Self::Import(args) => &args.endpoints,
        }
    }

    /// Whether the command changes anything (so is made under the caller's identity).
    pub fn changes(&self) -> bool {
        !matches!(self, Self::List(_))
    }
}

/// Why a group command was refused before anything was changed.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error("event {event} has a group {group} already (`lineup event group set` changes it)")]
    Exists { event: String, group: String },
    #[error("event {event} has no group {group}")]
    Unknown { event: String, group: String },
    #[error("a new group needs --members (claim:<claim>=<value>, list or code)")]
    NoMembers,
    #[error("the group {0} lists its members from the sign-in's claim, not from an import")]
    NotAList(String),
    #[error("the event's layout has no section {0:?}")]
    UnknownSection(String),
    #[error("line {line} of the file is not a customer id")]
    BadCustomer { line: usize },
    #[error("could not read the file: {0}")]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    Invalid(#[from] lineup::domain::priority_group::InvalidGroups),
    #[error(transparent)]
    Admin(#[from] AdminError),
    #[error(transparent)]
    Lineup(#[from] lineup::application::error::LineupError),
}

/// What a command did, for the terminal.
pub enum GroupOutcome {
    /// The groups after the change (or as listed), and how many seats had their allocation
    /// written.
    Groups {
        groups: PriorityGroups,
        seats_written: usize,
    },
    /// How many ids were imported.
    Imported(usize),
}

/// Where the seats set aside by a group are written: the seats table, and the event's layouts
/// (which seats each section has).
pub struct SeatsSetAside<'a> {
    pub seats: &'a dyn SeatWriter,
    pub layouts: &'a dyn LayoutStore,
}

/// Runs one group command.
pub async fn run(
    action: &GroupAction,
    event: &EventId,
    admin: &EventAdmin<'_>,
    members: &dyn GroupMembers,
    set_aside: &SeatsSetAside<'_>,
    now: SystemTime,
) -> Result<GroupOutcome, GroupError> {
    let current = admin.groups(event).await?;
    let changed = match action {
        GroupAction::List(_) => {
            return Ok(GroupOutcome::Groups {
                groups: current,
                seats_written: 0,
            })
        }
        GroupAction::Import(args) => {
            let group = current
                .get(&args.group)
                .ok_or_else(|| GroupError::Unknown {
                    event: event.to_string(),
                    group: args.group.to_string(),
                })?;
            if group.membership != Membership::List {
                return Err(GroupError::NotAList(args.group.to_string()));
            }
            let customers = read_customers(&args.file)?;
            admin
                .record(
                    event,
                    "group-import",
                    serde_json::json!({ "group": args.group.as_str(), "customers": customers.len() }),
                    now,
                )
                .await?;
            let line = event.group_line(&args.group);
            for batch in customers.chunks(1_000) {
                members.import_members(&line, batch).await?;
            }
            return Ok(GroupOutcome::Imported(customers.len()));
        }
        GroupAction::Add(args) => added(&current, event, args, now)?,
        GroupAction::Set(args) => changed(&current, event, args, now)?,
        GroupAction::Remove(args) => {
            if current.get(&args.group).is_none() {
                return Err(GroupError::Unknown {
                    event: event.to_string(),
                    group: args.group.to_string(),
                });
            }
            current
                .iter()
                .filter(|group| group.name != args.group)
                .cloned()
                .collect()
        }
    };
    let action_name = match action {
        GroupAction::Add(_) => "group-add",
        GroupAction::Set(_) => "group-set",
        _ => "group-remove",
    };
    change_groups(
        event,
        &current,
        PriorityGroups::new(changed)?,
        action_name,
        admin,
        set_aside,
        now,
    )
    .await
}

/// Changes the event's groups from `current` to `changed`, with the seats they set aside
/// (ADR 0032), in the one order that a run stopped anywhere can be mended by running it again:
///
/// 1. the seats of every section given back lose their marks, while the record still lists
///    the section (a run stopped here is run again from the same record);
/// 2. the record (and every line) is changed; if that is refused, the seats given back in 1 are
///    set aside again, as the record still says;
/// 3. every seat of every section set aside now is marked (all of them, each run: a run stopped
///    here is mended by running it again, which finds the same record).
///
/// Every section named must be one of the current layout's (a typo would set nothing aside).
pub async fn change_groups(
    event: &EventId,
    current: &PriorityGroups,
    changed: PriorityGroups,
    action_name: &str,
    admin: &EventAdmin<'_>,
    set_aside: &SeatsSetAside<'_>,
    now: SystemTime,
) -> Result<GroupOutcome, GroupError> {
    let layout = match set_aside.layouts.current_layout(event).await? {
        Some(summary) => set_aside.layouts.layout(event, &summary.version).await?,
        None => None,
    };
    if let Some(layout) = &layout {
        for section in changed.iter().flat_map(|group| group.sections.iter()) {
            if !layout.sections().iter().any(|known| &known.name == section) {
                return Err(GroupError::UnknownSection(section.clone()));
            }
        }
    }
    let before = SeatAllocations::of(current);
    let after = SeatAllocations::of(&changed);
    let mut seats_written = 0;
    let given_back = before.given_back_in(&after);
    if let Some(layout) = &layout {
        for section in &given_back {
            seats_written += mark(event, layout, section, None, set_aside).await?;
        }
    }
    let settings = match admin.set_groups(event, changed, action_name, now).await {
        Ok(settings) => settings,
        Err(refused) => {
            if let (Some(layout), false) = (&layout, given_back.is_empty()) {
                for section in &given_back {
                    mark(event, layout, section, before.section(section), set_aside).await?;
                }
            }
            return Err(refused.into());
        }
    };
    if let Some(layout) = &layout {
        for (section, reservation) in after.iter() {
            seats_written += mark(event, layout, section, Some(reservation), set_aside).await?;
        }
    }
    Ok(GroupOutcome::Groups {
        groups: settings.groups,
        seats_written,
    })
}

/// Sets (or takes away) `reservation` on every seat of `section` in `layout`.
async fn mark(
    event: &EventId,
    layout: &SeatLayout,
    section: &str,
    reservation: Option<&SeatReservation>,
    set_aside: &SeatsSetAside<'_>,
) -> Result<usize, GroupError> {
    let seats: Vec<SeatId> = layout
        .seats()
        .filter(|(_, seat)| seat.section == section)
        .map(|(_, seat)| seat.seat_id)
        .collect();
    Ok(set_aside
        .seats
        .reserve_seats(event, &seats, reservation)
        .await?)
}

fn added(
    current: &PriorityGroups,
    event: &EventId,
    args: &GroupArgs,
    now: SystemTime,
) -> Result<Vec<PriorityGroup>, GroupError> {
    if current.get(&args.group).is_some() {
        return Err(GroupError::Exists {
            event: event.to_string(),
            group: args.group.to_string(),
        });
    }
    let group = PriorityGroup {
        name: args.group.clone(),
        membership: args.members.clone().ok_or(GroupError::NoMembers)?,
        opens_at: args.opens_at.map_or(now, |at| at.resolve(now)),
        closes_at: args.closes_at.map(|at| at.resolve(now)),
        ticket_limit: args.ticket_limit,
        sections: args.sections.clone().unwrap_or_default(),
    };
    let mut groups: Vec<PriorityGroup> = current.iter().cloned().collect();
    let at = match &args.before {
        Some(before) => groups
            .iter()
            .position(|g| &g.name == before)
            .ok_or_else(|| GroupError::Unknown {
                event: event.to_string(),
                group: before.to_string(),
            })?,
        None => groups.len(),
    };
    groups.insert(at, group);
    Ok(groups)
}

fn changed(
    current: &PriorityGroups,
    event: &EventId,
    args: &GroupArgs,
    now: SystemTime,
) -> Result<Vec<PriorityGroup>, GroupError> {
    if current.get(&args.group).is_none() {
        return Err(GroupError::Unknown {
            event: event.to_string(),
            group: args.group.to_string(),
        });
    }
    Ok(current
        .iter()
        .map(|group| {
            if group.name != args.group {
                return group.clone();
            }
            PriorityGroup {
                name: group.name.clone(),
                membership: args
                    .members
                    .clone()
                    .unwrap_or_else(|| group.membership.clone()),
                opens_at: args.opens_at.map_or(group.opens_at, |at| at.resolve(now)),
                closes_at: match (args.closes_at, args.no_closes_at) {
                    (Some(at), _) => Some(at.resolve(now)),
                    (None, true) => None,
                    (None, false) => group.closes_at,
                },
                ticket_limit: match (args.ticket_limit, args.no_ticket_limit) {
                    (Some(limit), _) => Some(limit),
                    (None, true) => None,
                    (None, false) => group.ticket_limit,
                },
                sections: match (&args.sections, args.no_sections) {
                    (Some(sections), _) => sections.clone(),
                    (None, true) => Vec::new(),
                    (None, false) => group.sections.clone(),
                },
            }
        })
        .collect())
}

fn read_customers(path: &std::path::Path) -> Result<Vec<CustomerId>, GroupError> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(std::fs::File::open(path)?))
    };
    let mut customers = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line?;
        let id = line.trim();
        if id.is_empty() {
            continue;
        }
        customers
            .push(CustomerId::parse(id).map_err(|_| GroupError::BadCustomer { line: index + 1 })?);
    }
    Ok(customers)
}

/// One line per group, first admitted first, then everyone else.
pub fn describe(event: &EventId, groups: &PriorityGroups) -> String {
    let mut lines: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(index, group)| {
            let window = match group.closes_at {
                Some(closes) => format!(
                    "takes members until {}",
                    humantime::format_rfc3339_seconds(closes)
                ),
                None => "takes members until the event closes".to_owned(),
            };
            let limit = match group.ticket_limit {
                Some(limit) => format!("at most {limit} tickets per member"),
                None => "the event's ticket limit".to_owned(),
            };
            let set_aside = if group.sections.is_empty() {
                String::new()
            } else {
                format!(
                    ", sets aside {} until its window ends",
                    group.sections.join(", ")
                )
            };
            format!(
                "{}. {} ({}): opens at {}, {}, {}{} — status /events/{}/status",
                index + 1,
                group.name,
                group.membership.describe(),
                humantime::format_rfc3339_seconds(group.opens_at),
                window,
                limit,
                set_aside,
                event.group_line(&group.name),
            )
        })
        .collect();
    lines.push(format!(
        "{}. general (everyone else): status /events/{event}/status",
        lines.len() + 1
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        lineup::domain::clock::from_unix_millis(1_800_000_000_000 + seconds * 1_000)
    }

    /// The flags as an operator types them (so the test covers their parsing too).
    fn parsed(flags: &[&str]) -> GroupArgs {
        #[derive(clap::Parser)]
        struct Line {
            #[command(flatten)]
            args: GroupArgs,
        }
        let line: Line =
            clap::Parser::try_parse_from(["group", "--event", "e1"].iter().chain(flags)).unwrap();
        line.args
    }

    /// A list group opening at 10 s.
    fn args(group: &str) -> GroupArgs {
        let opens = humantime::format_rfc3339_millis(at(10)).to_string();
        parsed(&["--group", group, "--members", "list", "--opens-at", &opens])
    }

    #[test]
    fn a_new_group_goes_last_or_before_the_one_named_and_never_twice() {
        let event = EventId::parse("e1").unwrap();
        let one = PriorityGroups::new(
            added(&PriorityGroups::none(), &event, &args("card"), at(0)).unwrap(),
        )
        .unwrap();
        let two = added(&one, &event, &args("fanclub"), at(0)).unwrap();
        assert_eq!(two[1].name.as_str(), "fanclub");
        let first = GroupArgs {
            before: Some(GroupName::parse("card").unwrap()),
            ..args("fanclub")
        };
        assert_eq!(
            added(&one, &event, &first, at(0)).unwrap()[0].name.as_str(),
            "fanclub"
        );
        assert!(matches!(
            added(&one, &event, &args("card"), at(0)),
            Err(GroupError::Exists { .. })
        ));
        let unnamed = GroupArgs {
            members: None,
            ..args("vip")
        };
        assert!(matches!(
            added(&one, &event, &unnamed, at(0)),
            Err(GroupError::NoMembers)
        ));
    }

    #[test]
    fn a_change_keeps_what_it_does_not_name() {
        let event = EventId::parse("e1").unwrap();
        let mut first = args("fanclub");
        first.closes_at = Some(OpensAt::At(at(100)));
        let groups =
            PriorityGroups::new(added(&PriorityGroups::none(), &event, &first, at(0)).unwrap())
                .unwrap();
        let change = GroupArgs {
            members: None,
            opens_at: None,
            ..args("fanclub")
        };
        let after = changed(&groups, &event, &change, at(0)).unwrap();
        assert_eq!(after[0].opens_at, at(10));
        assert_eq!(after[0].closes_at, Some(at(100)));
        assert_eq!(after[0].membership, Membership::List);
        let open_ended = GroupArgs {
            no_closes_at: true,
            ..change
        };
        assert_eq!(
            changed(&groups, &event, &open_ended, at(0)).unwrap()[0].closes_at,
            None
        );
        assert!(changed(&groups, &event, &args("card"), at(0)).is_err());
    }

    #[test]
    fn sections_are_set_aside_by_a_comma_separated_list_and_given_back_by_set() {
        let closes = humantime::format_rfc3339_millis(at(100)).to_string();
        let flags = parsed(&[
            "--group",
            "fanclub",
            "--members",
            "list",
            "--closes-at",
            &closes,
            "--sections",
            "Floor,Lower A",
        ]);
        let event = EventId::parse("e1").unwrap();
        let groups =
            PriorityGroups::new(added(&PriorityGroups::none(), &event, &flags, at(0)).unwrap())
                .unwrap();
        let fanclub = groups.iter().next().unwrap();
        assert_eq!(fanclub.sections, ["Floor", "Lower A"]);
        // A change that does not name them keeps them; --no-sections gives them back.
        let keep = GroupArgs {
            sections: None,
            ..flags.clone()
        };
        assert_eq!(
            changed(&groups, &event, &keep, at(0)).unwrap()[0]
                .sections
                .len(),
            2
        );
        let give_back = GroupArgs {
            sections: None,
            no_sections: true,
            ..flags
        };
        assert!(changed(&groups, &event, &give_back, at(0)).unwrap()[0]
            .sections
            .is_empty());
        // Set aside with no window to give them back at: refused.
        let forever = PriorityGroup {
            closes_at: None,
            ..fanclub.clone()
        };
        assert!(PriorityGroups::new(vec![forever]).is_err());
    }
}
