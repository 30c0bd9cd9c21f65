//! `lineup`: parses the command line and runs one command. The work is in the library.

use std::process::ExitCode;
use std::time::SystemTime;

use clap::Parser;
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::event_records::EventRecords;
use lineup::application::ports::queue::EventSettingsStore;
use lineup::domain::ids::EventId;
use lineup_cli::commands::{Cli, Command, EventAction, SeedArgs};
use lineup_cli::live_events::{LiveEvents, LiveEventsArgs};
use lineup_cli::local_aws::{self, tables};
use lineup_cli::tools::{plan, simulate};
use lineup_cli::{
    access_codes, dev, event_admin, event_cancellation, payment_reconciliation, priority_groups,
    secret_revocation, verify_draw,
};
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
        Command::LocalAws(args) => local_aws::run(&args).await?,
        Command::Seed(args) => seed(args).await?,
        Command::Event {
            action: EventAction::Cancel(args),
            ..
        } => {
            let operator = args.endpoints.operator().await?;
            return event_cancellation::run(&args, operator).await;
        }
        Command::Event {
            action: EventAction::Codes { action },
            ..
        } => codes(action).await?,
        Command::Event {
            action: EventAction::Group { action },
            live_events,
        } => groups(action, live_events).await?,
        Command::Event {
            action,
            live_events,
        } => event(action, live_events).await?,
        Command::Secrets { action } => println!("{}", secret_revocation::run(&action).await?),
        Command::Payments { action } => println!("{}", payment_reconciliation::run(&action).await?),
        Command::Simulate(args) => {
            let report = simulate::run(args).await?;
            report.print();
            if !report.invariants_hold() {
                eprintln!("simulate: an invariant does not hold");
                return Ok(ExitCode::FAILURE);
            }
            if !report.chaos_carried_out() {
                eprintln!("simulate: a --chaos fault was not done as planned");
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Plan(args) => println!("{}", plan::run(&args)?),
        Command::VerifyDraw(args) => {
            let outcome = verify_draw::run(&args).await;
            match &outcome {
                Ok(check) => print!("{}", check.report()),
                Err(failure) => eprintln!("verify-draw: {}", verify_draw::with_causes(failure)),
            }
            return Ok(ExitCode::from(
                verify_draw::Verdict::of(&outcome).exit_code(),
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn event_id(raw: &str) -> Result<EventId, Failure> {
    EventId::parse(raw).map_err(|_| format!("{raw:?} is not a valid event id").into())
}

async fn seed(args: SeedArgs) -> Result<(), Failure> {
    let event = event_id(&args.event)?;
    let layout = args.venue.layout()?;
    let ledger = args.endpoints.ledger().await?;
    let records = args.endpoints.records().await?;
    if args.create_tables {
        tables::create_ledger_tables(ledger.client(), ledger.tables()).await?;
        tables::create(ledger.client(), tables::EVENTS, records.table()).await?;
    }
    let now = SystemTime::now();
    let queue = args.endpoints.queue().await?;
    let started = std::time::Instant::now();
    // Who seeds, recorded before the seats are written.
    let admin = admin(&queue, &records, args.endpoints.operator().await?);
    admin
        .record(
            &event,
            "seed",
            serde_json::json!({ "seats": layout.seat_count(), "layout": layout.version() }),
            now,
        )
        .await?;
    event_admin::seed(&ledger, &records, &queue, &event, &layout, now).await?;
    println!(
        "seeded {} seats for event {event} (layout {}) in {:.1} s",
        layout.seat_count(),
        layout.version(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn admin<'a>(
    queue: &'a RedisQueue,
    records: &'a DynamoEventRecords,
    operator: String,
) -> event_admin::EventAdmin<'a> {
    event_admin::EventAdmin::new(queue, records, operator)
}

/// `lineup event codes ...` ([`access_codes`]): the events table only (no Redis, no edge).
async fn codes(action: access_codes::CodesAction) -> Result<(), Failure> {
    let event = event_id(action.event())?;
    let endpoints = action.endpoints();
    let records = endpoints.records().await?;
    let operator = match &action {
        access_codes::CodesAction::List(_) => "(reading)".to_owned(),
        _ => endpoints.operator().await?,
    };
    let audit = access_codes::Audit {
        log: &records,
        operator,
    };
    let book = access_codes::book(&records);
    let now = SystemTime::now();
    match access_codes::run(&action, &event, &book, &audit, now).await? {
        access_codes::CodesOutcome::Created(codes) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for code in codes {
                writeln!(out, "{code}")?;
            }
        }
        access_codes::CodesOutcome::Revoked(count) => {
            println!("event {event}: {count} newly revoked");
        }
        access_codes::CodesOutcome::Counted(counts) => {
            println!("{}", access_codes::describe_counts(&event, &counts));
        }
    }
    Ok(())
}

/// `lineup event group ...` ([`priority_groups`]): the event's record and every group's line.
async fn groups(
    action: priority_groups::GroupAction,
    live_events: LiveEventsArgs,
) -> Result<(), Failure> {
    let event = event_id(action.event())?;
    let endpoints = action.endpoints();
    let records = endpoints.records().await?;
    let queue = endpoints.queue().await?;
    let operator = if action.changes() {
        endpoints.operator().await?
    } else {
        "(reading)".to_owned()
    };
    let store = if action.changes() {
        live_events.store(endpoints).await?
    } else {
        None
    };
    let admin = admin(&queue, &records, operator)
        .with_live_events(store.as_ref().map(|store| store as &dyn LiveEvents));
    let ledger = endpoints.ledger().await?;
    let set_aside = priority_groups::SeatsSetAside {
        seats: &ledger,
        layouts: &records,
    };
    let now = SystemTime::now();
    match priority_groups::run(&action, &event, &admin, &records, &set_aside, now).await? {
        priority_groups::GroupOutcome::Groups {
            groups,
            seats_written,
        } => {
            println!("{}", priority_groups::describe(&event, &groups));
            if seats_written > 0 {
                println!("event {event}: {seats_written} seats' allocation written");
            }
        }
        priority_groups::GroupOutcome::Imported(count) => {
            println!("event {event}: {count} customer ids imported");
        }
    }
    Ok(())
}

async fn event(action: EventAction, live_events: LiveEventsArgs) -> Result<(), Failure> {
    let now = SystemTime::now();
    let (event, endpoints) = match &action {
        EventAction::Open {
            event, endpoints, ..
        }
        | EventAction::Set {
            event, endpoints, ..
        }
        | EventAction::Close { event, endpoints }
        | EventAction::Pause { event, endpoints }
        | EventAction::Resume { event, endpoints }
        | EventAction::History { event, endpoints }
        | EventAction::Show { event, endpoints } => (event_id(event)?, endpoints),
        EventAction::Cancel(args) => (event_id(&args.event)?, &args.endpoints),
        EventAction::Codes { action } => (event_id(action.event())?, action.endpoints()),
        EventAction::Group { action } => (event_id(action.event())?, action.endpoints()),
    };
    // DynamoDB first: with `--aws`, a sign-in or region problem is reported before anything.
    let records = endpoints.records().await?;
    let queue = endpoints.queue().await?;
    // A change is recorded under the caller's AWS identity (STS); reading changes nothing.
    let operator = match &action {
        EventAction::History { .. } | EventAction::Show { .. } => "(reading)".to_owned(),
        _ => endpoints.operator().await?,
    };
    // In AWS (--live-events-store): the edge is told of the event before each change.
    let store = match &action {
        EventAction::History { .. } | EventAction::Show { .. } => None,
        _ => live_events.store(endpoints).await?,
    };
    let admin = admin(&queue, &records, operator)
        .with_live_events(store.as_ref().map(|store| store as &dyn LiveEvents));
    let settings = match &action {
        EventAction::Open { change, .. } => admin.open(&event, change, now).await?,
        EventAction::Set { change, .. } => admin.set(&event, change, now).await?,
        EventAction::Close { .. } => admin.close(&event, now).await?,
        EventAction::Pause { .. } => admin.pause(&event, now).await?,
        EventAction::Resume { .. } => admin.resume(&event, now).await?,
        EventAction::History { .. } => {
            for entry in admin.history(&event).await? {
                println!("{}", event_admin::describe_entry(&entry));
            }
            return Ok(());
        }
        EventAction::Show { .. } => {
            let settings = match records.event(&event).await? {
                Some(record) => record.settings,
                None => queue
                    .settings(&event)
                    .await?
                    .ok_or_else(|| format!("no event {event} is configured"))?,
            };
            println!("{}", event_admin::describe(&event, &settings));
            let board = queue.availability_board();
            println!("{}", event_admin::seat_counts(&board, &event).await?);
            return Ok(());
        }
        EventAction::Cancel(_) => unreachable!("`run` hands it to event_cancellation::run"),
        EventAction::Codes { .. } => unreachable!("`run` hands it to `codes`"),
        EventAction::Group { .. } => unreachable!("`run` hands it to `groups`"),
    };
    println!("{}", event_admin::describe(&event, &settings));
    Ok(())
}
