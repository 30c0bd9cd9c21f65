//! The command line: `lineup dev`, `lineup seed`, `lineup event open|close|set|show` and
//! `lineup simulate`. Parsing only; each command's work lives in its own module.

use clap::{Parser, Subcommand};

use crate::dev::DevArgs;
use crate::endpoints::EndpointArgs;
use crate::event_admin::SettingsChange;
use crate::simulate::SimulateArgs;
use crate::venue::VenueArgs;

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
    /// Write an event's seats (all AVAILABLE), against the local stack or AWS (`--aws`).
    Seed(SeedArgs),
    /// Open, close, re-pace or show an event's queue.
    Event {
        #[command(subcommand)]
        action: EventAction,
    },
    /// Drive a crowd of simulated customers through the local API and check the invariants.
    Simulate(SimulateArgs),
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
    /// Change max active, rate, opening time or session length, keeping the state.
    Set {
        event: String,
        #[command(flatten)]
        change: SettingsChange,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Print the event's settings.
    Show {
        event: String,
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
}
