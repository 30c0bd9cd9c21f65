//! `lineup event codes create|revoke|list`: the access codes an event may require at join
//! (docs/decisions/0030-access-codes.md; `lineup event open|set --code-required true` turns the
//! requirement on).
//!
//! `create` prints the new codes one a line, the only time they are shown: the events table
//! keeps their hashes only. `list` counts them (never a code). Each change is first kept in the
//! event's audit trail under the caller's AWS identity (how many, for how many accounts, until
//! when, which group; never a code), then made.

use std::time::{Duration, SystemTime};

use lineup::adapters::dynamo::access_codes::DynamoAccessCodes;
use lineup::application::ports::access_codes::{AccessCodeBook, CodeCounts};
use lineup::application::ports::event_records::{AuditEntry, AuditLog};
use lineup::domain::access_code::{AccessCode, CodeTerms};
use lineup::domain::clock::unix_millis;
use lineup::domain::ids::{EventId, GroupName};

use crate::endpoints::EndpointArgs;

/// The most codes one `create` makes (run it again for more).
pub const MAX_COUNT: u32 = 100_000;

/// `lineup event codes ...`.
#[derive(Debug, clap::Subcommand)]
pub enum CodesAction {
    /// Make access codes for an event and print them, one a line: the only time they are shown.
    Create(CreateArgs),
    /// Revoke codes (named, or `--all`): they let nobody else in; accounts already in the queue
    /// keep their place.
    Revoke(RevokeArgs),
    /// Count the event's codes: created, revoked, expired, used up, accounts bound, uses left.
    List(ListArgs),
}

/// `lineup event codes create`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct CreateArgs {
    /// The event the codes are for (a code lets in to this event only).
    #[arg(long)]
    pub event: String,
    /// How many codes to make.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_COUNT)))]
    pub count: u32,
    /// How many distinct accounts one code lets in, each bound to it at first use.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(CodeTerms::MAX_USES)))]
    pub uses: u32,
    /// When the codes stop letting anyone in: an RFC 3339 time or a delay from now (`+7d`).
    #[arg(long, value_parser = parse_expiry)]
    pub expires: Option<Expiry>,
    /// A group name (a slug: a-z, 0-9, '-') kept with each code and handed to the join.
    #[arg(long, value_parser = parse_group)]
    pub group: Option<GroupName>,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// `lineup event codes revoke`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RevokeArgs {
    /// The event whose codes to revoke.
    #[arg(long)]
    pub event: String,
    /// The codes, as printed by `create`.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub codes: Vec<String>,
    /// Revoke every code of the event.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// `lineup event codes list`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ListArgs {
    /// The event whose codes to count.
    #[arg(long)]
    pub event: String,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

impl CodesAction {
    /// `lineup event codes <args>` as the command line parses it (for tests and tools).
    pub fn parse_from<I: AsRef<str>>(args: &[I]) -> Result<Self, clap::Error> {
        use clap::Parser;
        let line = ["lineup", "event", "codes"]
            .into_iter()
            .map(str::to_owned)
            .chain(args.iter().map(|arg| arg.as_ref().to_owned()));
        match crate::commands::Cli::try_parse_from(line)?.command {
            crate::commands::Command::Event {
                action: crate::commands::EventAction::Codes { action },
                ..
            } => Ok(action),
            _ => unreachable!("`lineup event codes` parses as a codes action"),
        }
    }

    /// The event the command is about, as typed.
    pub fn event(&self) -> &str {
        match self {
            Self::Create(args) => &args.event,
            Self::Revoke(args) => &args.event,
            Self::List(args) => &args.event,
        }
    }

    /// Where the stores are.
    pub fn endpoints(&self) -> &EndpointArgs {
        match self {
            Self::Create(args) => &args.endpoints,
            Self::Revoke(args) => &args.endpoints,
            Self::List(args) => &args.endpoints,
        }
    }
}

/// When codes expire.
#[derive(Debug, Clone, Copy)]
pub enum Expiry {
    /// At this time.
    At(SystemTime),
    /// This long from now.
    In(Duration),
}

impl Expiry {
    fn resolve(self, now: SystemTime) -> SystemTime {
        match self {
            Self::At(at) => at,
            Self::In(delay) => now + delay,
        }
    }
}

fn parse_expiry(raw: &str) -> Result<Expiry, String> {
    if let Some(delay) = raw.strip_prefix('+') {
        return humantime::parse_duration(delay)
            .map(Expiry::In)
            .map_err(|error| format!("{raw:?} is not a delay such as +7d: {error}"));
    }
    humantime::parse_rfc3339_weak(raw)
        .map(Expiry::At)
        .map_err(|error| format!("{raw:?} is not an RFC 3339 time or a +delay: {error}"))
}

fn parse_group(raw: &str) -> Result<GroupName, String> {
    GroupName::parse(raw).map_err(|error| error.to_string())
}

/// Why a codes command failed.
#[derive(Debug, thiserror::Error)]
pub enum CodesError {
    /// The expiry is not in the future.
    #[error("--expires is not in the future: the codes would let nobody in")]
    ExpiryPast,
    /// A code to revoke is not a code.
    #[error("{0:?} is not an access code (16 letters and digits, as `create` printed them)")]
    NotACode(String),
    /// The store (or the audit trail) refused.
    #[error(transparent)]
    Store(#[from] lineup::application::error::LineupError),
}

/// What a codes command did, for the terminal.
#[derive(Debug)]
pub enum CodesOutcome {
    /// The codes made: print one a line on stdout.
    Created(Vec<AccessCode>),
    /// How many codes were newly revoked.
    Revoked(u64),
    /// The event's codes counted.
    Counted(CodeCounts),
}

/// Who runs the commands, and where their changes are kept first.
pub struct Audit<'a> {
    /// The event's audit trail (the events table).
    pub log: &'a dyn AuditLog,
    /// The caller's identity (in AWS, its ARN from STS).
    pub operator: String,
}

impl Audit<'_> {
    async fn record(
        &self,
        event: &EventId,
        action: &str,
        detail: serde_json::Value,
        now: SystemTime,
    ) -> Result<(), CodesError> {
        let entry = AuditEntry {
            at_ms: unix_millis(now),
            action: action.to_owned(),
            operator: self.operator.clone(),
            detail,
        };
        Ok(self.log.record(event, &entry).await?)
    }
}

/// Runs `action` against `book`, keeping each change in `audit` first.
pub async fn run(
    action: &CodesAction,
    event: &EventId,
    book: &dyn AccessCodeBook,
    audit: &Audit<'_>,
    now: SystemTime,
) -> Result<CodesOutcome, CodesError> {
    match action {
        CodesAction::Create(args) => {
            let expires_at = args.expires.map(|expiry| expiry.resolve(now));
            if expires_at.is_some_and(|at| at <= now) {
                return Err(CodesError::ExpiryPast);
            }
            let terms = CodeTerms {
                uses: args.uses,
                expires_at,
                group: args.group.clone(),
            };
            let codes: Vec<AccessCode> = (0..args.count).map(|_| AccessCode::generate()).collect();
            audit
                .record(
                    event,
                    "codes-create",
                    serde_json::json!({
                        "count": args.count,
                        "uses": terms.uses,
                        "expiresAtMs": terms.expires_at.map(unix_millis),
                        "group": terms.group.as_ref().map(|group| group.as_str()),
                    }),
                    now,
                )
                .await?;
            book.create(event, &codes, &terms, now).await?;
            Ok(CodesOutcome::Created(codes))
        }
        CodesAction::Revoke(args) => {
            let revoked = if args.all {
                audit
                    .record(
                        event,
                        "codes-revoke",
                        serde_json::json!({ "all": true }),
                        now,
                    )
                    .await?;
                book.revoke_all(event, now).await?
            } else {
                let hashes = args
                    .codes
                    .iter()
                    .map(|typed| {
                        AccessCode::parse(typed)
                            .map(|code| code.hash(event))
                            .map_err(|_| CodesError::NotACode(typed.clone()))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                // The hashes' first digits only: enough to tell entries apart, nothing to guess from.
                let named: Vec<&str> = hashes.iter().map(|hash| &hash.as_str()[..12]).collect();
                audit
                    .record(
                        event,
                        "codes-revoke",
                        serde_json::json!({ "count": hashes.len(), "hashes": named }),
                        now,
                    )
                    .await?;
                book.revoke(event, &hashes, now).await?
            };
            Ok(CodesOutcome::Revoked(revoked))
        }
        CodesAction::List(_) => Ok(CodesOutcome::Counted(book.counts(event, now).await?)),
    }
}

/// `counts` as a sentence.
pub fn describe_counts(event: &EventId, counts: &CodeCounts) -> String {
    format!(
        "event {event}: access codes {} ({} revoked, {} expired, {} used up), accounts bound {}, uses left {}",
        counts.codes,
        counts.revoked,
        counts.expired,
        counts.used_up,
        counts.accounts_bound,
        counts.uses_left
    )
}

/// The codes book of the events table `records` is.
pub fn book(
    records: &lineup::adapters::dynamo::event_records::DynamoEventRecords,
) -> DynamoAccessCodes {
    DynamoAccessCodes::in_events_table(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(args: &[&str]) -> Result<CodesAction, clap::Error> {
        CodesAction::parse_from(args)
    }

    #[test]
    fn create_takes_a_count_uses_an_expiry_and_a_group() {
        let CodesAction::Create(args) = codes(&[
            "create",
            "--event",
            "gala",
            "--count",
            "3",
            "--uses",
            "2",
            "--expires",
            "+7d",
            "--group",
            "fan-club",
        ])
        .unwrap() else {
            panic!("not create")
        };
        assert_eq!((args.count, args.uses), (3, 2));
        assert!(
            matches!(args.expires, Some(Expiry::In(d)) if d == Duration::from_secs(7 * 86_400))
        );
        assert_eq!(args.group.unwrap().as_str(), "fan-club");
        let CodesAction::Create(one) =
            codes(&["create", "--event", "gala", "--count", "1"]).unwrap()
        else {
            panic!("not create")
        };
        assert_eq!(one.uses, 1, "one account a code unless told");
        for refused in [
            &["create", "--event", "gala"][..],
            &["create", "--event", "gala", "--count", "0"],
            &["create", "--event", "gala", "--count", "1", "--uses", "0"],
            &[
                "create", "--event", "gala", "--count", "1", "--group", "Fan Club",
            ],
            &[
                "create",
                "--event",
                "gala",
                "--count",
                "1",
                "--expires",
                "soon",
            ],
        ] {
            assert!(codes(refused).is_err(), "{refused:?} was accepted");
        }
    }

    #[test]
    fn revoke_takes_codes_or_all_never_both_or_neither() {
        assert!(matches!(
            codes(&["revoke", "--event", "gala", "AAAA-BBBB-CCCC-DDDD"]).unwrap(),
            CodesAction::Revoke(RevokeArgs { all: false, .. })
        ));
        assert!(matches!(
            codes(&["revoke", "--event", "gala", "--all"]).unwrap(),
            CodesAction::Revoke(RevokeArgs { all: true, .. })
        ));
        assert!(codes(&["revoke", "--event", "gala"]).is_err());
        assert!(codes(&["revoke", "--event", "gala", "--all", "AAAA-BBBB-CCCC-DDDD"]).is_err());
    }

    #[test]
    fn counts_read_as_a_sentence() {
        let counts = CodeCounts {
            codes: 10,
            revoked: 1,
            expired: 2,
            used_up: 3,
            accounts_bound: 5,
            uses_left: 4,
        };
        assert_eq!(
            describe_counts(&EventId::parse("gala").unwrap(), &counts),
            "event gala: access codes 10 (1 revoked, 2 expired, 3 used up), accounts bound 5, uses left 4"
        );
    }
}
