//! `lineup`: parses the command line and runs one command. The work is in the library.

use std::process::ExitCode;
use std::time::SystemTime;

use clap::Parser;
use lineup::ids::EventId;
use lineup::ledger::dynamo::tables::create_tables;
use lineup::queue::EventSettingsStore;
use lineup_cli::commands::{Cli, Command, EventAction, SeedArgs};
use lineup_cli::{dev, event_admin, simulate};
use tracing::level_filters::LevelFilter;

type Failure = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() -> ExitCode {
    init_logging();
    match run(Cli::parse().command).await {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("error: {failure}");
            let mut source = failure.source();
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::from(2)
        }
    }
}

/// Text logs on stderr (stdout is for what a command prints), at `RUST_LOG`'s level or INFO.
fn init_logging() {
    let level = std::env::var("RUST_LOG")
        .ok()
        .and_then(|level| level.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(command: Command) -> Result<ExitCode, Failure> {
    match command {
        Command::Dev(args) => dev::run(args).await?,
        Command::Seed(args) => seed(args).await?,
        Command::Event { action } => event(action).await?,
        Command::Simulate(args) => {
            let report = simulate::run(args).await?;
            report.print();
            if !report.invariants_hold() {
                eprintln!("simulate: an invariant does not hold");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn event_id(raw: &str) -> Result<EventId, Failure> {
    EventId::parse(raw).map_err(|_| format!("{raw:?} is not a valid event id").into())
}

async fn seed(args: SeedArgs) -> Result<(), Failure> {
    let event = event_id(&args.event)?;
    let seats = args.venue.layout()?;
    let ledger = args.endpoints.ledger().await?;
    if args.create_tables {
        create_tables(ledger.client(), ledger.tables()).await?;
    }
    event_admin::seed(&ledger, &event, &seats, SystemTime::now()).await?;
    println!("seeded {} seats for event {event}", seats.len());
    Ok(())
}

async fn event(action: EventAction) -> Result<(), Failure> {
    let now = SystemTime::now();
    let (event, settings) = match action {
        EventAction::Open {
            event,
            change,
            endpoints,
        } => {
            let event = event_id(&event)?;
            let settings = event_admin::open(&endpoints.queue()?, &event, &change, now).await?;
            (event, settings)
        }
        EventAction::Set {
            event,
            change,
            endpoints,
        } => {
            let event = event_id(&event)?;
            let settings = event_admin::set(&endpoints.queue()?, &event, &change, now).await?;
            (event, settings)
        }
        EventAction::Close { event, endpoints } => {
            let event = event_id(&event)?;
            let queue = endpoints.queue()?;
            event_admin::close(&queue, &event).await?;
            let settings = queue
                .settings(&event)
                .await?
                .ok_or_else(|| format!("event {event} vanished"))?;
            (event, settings)
        }
        EventAction::Show { event, endpoints } => {
            let event = event_id(&event)?;
            // The seats are in DynamoDB: with `--aws`, a sign-in or region problem is reported
            // here, before anything is printed.
            let ledger = endpoints.ledger().await?;
            let settings = endpoints
                .queue()?
                .settings(&event)
                .await?
                .ok_or_else(|| format!("no event {event} is configured"))?;
            println!("{}", event_admin::describe(&event, &settings));
            println!("{}", event_admin::seat_counts(&ledger, &event, now).await?);
            return Ok(());
        }
    };
    println!("{}", event_admin::describe(&event, &settings));
    Ok(())
}
