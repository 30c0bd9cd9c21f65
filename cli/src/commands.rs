//! The command line: `lineup dev`, `lineup local-aws`, `lineup seed`,
//! `lineup event open|close|set|show`, `lineup secrets revoke-previous`, `lineup simulate`, `lineup plan` and `lineup verify-draw`. Parsing only; each command's work
//! lives in its own module.

use clap::{Parser, Subcommand};

use crate::access_codes::CodesAction;
use crate::dev::DevArgs;
use crate::endpoints::EndpointArgs;
use crate::event_admin::SettingsChange;
use crate::event_cancellation::CancelArgs;
use crate::live_events::LiveEventsArgs;
use crate::local_aws::LocalAwsArgs;
use crate::payment_reconciliation::PaymentsAction;
use crate::secret_revocation::SecretsAction;
use crate::tools::plan::PlanArgs;
use crate::tools::simulate::SimulateArgs;
use crate::venue::VenueArgs;
use crate::verify_draw::VerifyDrawArgs;

#[derive(Debug, Parser)]
#[command(
    name = "lineup",
    version,
    about = "Run, seed, configure and load-test a Lineup on-sale"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the whole on-sale locally: Redis, moto, the API on 127.0.0.1:3000 through the real
    /// handlers, the schedules, the outbox pump, the waiting-room page, a payment provider.
    Dev(DevArgs),
    /// Prepare a LocalStack (or moto) for `sam local invoke`: the tables, queues and secrets of
    /// template.yaml, named as in events/env.json (`--teardown` removes them).
    LocalAws(LocalAwsArgs),
    /// Write an event's seats (all AVAILABLE), against the local stack or AWS (`--aws`).
    Seed(SeedArgs),
    /// Open, close, re-pace or show an event's queue.
    Event {
        #[command(subcommand)]
        action: EventAction,
        /// In AWS: the store of live events the edge reads, written before each change.
        #[command(flatten)]
        live_events: LiveEventsArgs,
    },
    /// Payments: look at an event's open payments again through the provider (`reconcile`).
    Payments {
        #[command(subcommand)]
        action: PaymentsAction,
    },
    /// The functions' secrets: revoke a leaked one's previous value (`revoke-previous`).
    Secrets {
        #[command(subcommand)]
        action: SecretsAction,
    },
    /// Drive a crowd of simulated customers through the local API and check the invariants.
    Simulate(SimulateArgs),
    /// Size an on-sale on AWS: each service's peak beside its default quota, what to raise, and
    /// the cost per million queued customers.
    Plan(PlanArgs),
    /// Check an event's published pre-queue draw from its public routes, as any outsider can:
    /// exit 0 when it checks out, 1 on a mismatch, 2 when it could not be read.
    VerifyDraw(VerifyDrawArgs),
}

#[derive(Debug, clap::Args)]
pub struct SeedArgs {
    /// The event's id.
    #[arg(long)]
    pub event: String,
    #[command(flatten)]
    pub venue: VenueArgs,
    /// Create the tables first (local stacks only; in AWS the stack creates them).
    #[arg(long)]
    pub create_tables: bool,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

#[derive(Debug, Subcommand)]
pub enum EventAction {
    /// Open the queue (creating the event's settings if new).
    Open {
        event: String,
        #[command(flatten)]
        change: SettingsChange,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Close the queue: joins are refused and waiting customers are told.
    Close {
        event: String,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Stop admission for a while: places and the queue stay, the status says `paused`.
    Pause {
        event: String,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Go on admitting after a pause.
    Resume {
        event: String,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Print every operator change to the event (open, set, pause, resume, close, seed).
    History {
        event: String,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Change max active, rate, opening time, session length or ticket limit, keeping the state.
    Set {
        event: String,
        #[command(flatten)]
        change: SettingsChange,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Print the event's settings (its durable record, else the cache's copy) and how many of its seats are available, held and
    /// sold (from DynamoDB).
    Show {
        event: String,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Cancel the event: close its queue and refund every PAID order, once each (their seats
    /// stay SOLD). Without --yes, only says how many PAID orders it would refund (exit 2).
    Cancel(CancelArgs),
    /// The event's access codes: create (printed once), revoke, list (counts only).
    Codes {
        #[command(subcommand)]
        action: CodesAction,
    },
    /// The event's priority groups (presales): add, set, remove, list, import members.
    Group {
        #[command(subcommand)]
        action: crate::priority_groups::GroupAction,
    },
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command, EventAction};

    fn change(args: &[&str]) -> Result<crate::event_admin::SettingsChange, clap::Error> {
        let cli = Cli::try_parse_from(["lineup", "event"].iter().chain(args))?;
        match cli.command {
            Command::Event {
                action: EventAction::Set { change, .. } | EventAction::Open { change, .. },
                ..
            } => Ok(change),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_store_of_live_events_is_named_after_any_event_action() {
        const STORE: &str = "arn:aws:cloudfront::123456789012:key-value-store/live";
        let store =
            |args: &[&str]| match Cli::try_parse_from(["lineup", "event"].iter().chain(args))
                .expect("parses")
                .command
            {
                Command::Event { live_events, .. } => live_events.live_events_store,
                other => panic!("parsed as {other:?}"),
            };
        for action in ["open", "set", "close", "pause", "resume"] {
            assert_eq!(
                store(&[action, "gala", "--aws", "--live-events-store", STORE]).as_deref(),
                Some(STORE),
                "{action}"
            );
        }
        if std::env::var_os("LINEUP_LIVE_EVENTS_STORE").is_none() {
            assert_eq!(store(&["open", "gala"]), None, "none unless named");
        }
    }

    #[test]
    fn the_ticket_limit_flags_parse_and_refuse_nonsense() {
        let set = change(&["set", "gala", "--ticket-limit", "4"]).unwrap();
        assert_eq!((set.ticket_limit, set.no_ticket_limit), (Some(4), false));
        let opened = change(&["open", "gala", "--ticket-limit", "2"]).unwrap();
        assert_eq!(opened.ticket_limit, Some(2));
        let removed = change(&["set", "gala", "--no-ticket-limit"]).unwrap();
        assert_eq!(
            (removed.ticket_limit, removed.no_ticket_limit),
            (None, true)
        );
        let untouched = change(&["set", "gala", "--rate", "5"]).unwrap();
        assert_eq!(
            (untouched.ticket_limit, untouched.no_ticket_limit),
            (None, false)
        );
        for refused in [
            &["set", "gala", "--ticket-limit", "0"][..],
            &["set", "gala", "--ticket-limit", "-1"],
            &["set", "gala", "--ticket-limit", "many"],
            &["set", "gala", "--ticket-limit", "3", "--no-ticket-limit"],
        ] {
            assert!(change(refused).is_err(), "{refused:?} was accepted");
        }
    }
}
