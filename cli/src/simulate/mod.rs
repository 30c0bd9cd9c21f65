//! `lineup simulate`: a crowd of customers buying tickets from a running `lineup dev` server,
//! through the real routes, on an event of its own; then a check of what was stored and
//! delivered against the promises of the design (no seat sold twice, one ticket per sale...).
//!
//! The run: read where the stack is (`GET /dev/info`), seed a fresh event's seats and open its
//! queue, let the customers loose (each a task with its own seeded behaviour), wait for the
//! ticket desk to catch up, read the tables, check the invariants, report.

mod api_client;
mod customer;
mod desk;
mod error;
mod invariants;
mod latency;
mod persona;
mod progress;
pub mod report;
mod seat_choice;
mod stack;
mod stored;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lineup::ids::EventId;
use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio::task::JoinSet;

use api_client::Api;
use customer::{Context, Customer, CustomerReport};
pub use error::SimulateError;
use latency::LatencyRecorder;
use persona::Persona;
use progress::{LiveCounters, Progress, ProgressMode};
use report::{
    CustomerCounts, HoldCounts, Problem, RunSettings, SimulationReport, StoredCounts, TicketCounts,
};
use stack::{DevInfo, QueuePlan};

/// `lineup simulate` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// How many customers arrive.
    #[arg(long, default_value_t = 2000)]
    pub users: usize,
    /// How many seats the simulated event has (rows of 20, spread over the sections).
    #[arg(long, default_value_t = 300)]
    pub seats: usize,
    /// The venue's sections and prices (minor units of the dev server's currency), dearest
    /// first: the front rows of the first are what everyone wants.
    #[arg(long, default_value = "Floor=150000,Lower=99000,Upper=55000")]
    pub sections: String,
    /// The `lineup dev` server to run against.
    #[arg(long, default_value = "http://127.0.0.1:3000")]
    pub api: String,
    /// At most this many admitted customers shop at once.
    #[arg(long, default_value_t = 150)]
    pub max_active: u32,
    /// Admissions per second.
    #[arg(long, default_value_t = 100)]
    pub rate: u32,
    /// How long an admission lasts (e.g. `2m`).
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    pub session: Duration,
    /// Customers arrive spread over this long (e.g. `5s`).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub ramp: Duration,
    /// Mean pause between a customer's steps, in milliseconds (reading the map, typing card
    /// details); 0 for none.
    #[arg(long, default_value_t = 1000)]
    pub think_ms: u64,
    /// Seed of the crowd's behaviour: the same seed gives the same crowd. Random when absent
    /// (the report prints it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop waiting for customers still going after this long (they are counted unfinished).
    #[arg(long, default_value = "15m", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// How long to wait for the ticket desk to receive every sale's message.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub desk_timeout: Duration,
    /// Do not show progress while running.
    #[arg(long)]
    pub no_progress: bool,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub report_json: Option<PathBuf>,
}

/// How long a payer waits for the order to show PAID.
const PAYMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Late payers wait out the hold; with longer holds than this they pay on time instead.
const LATE_PAYMENT_MAX_HOLD_SECONDS: u64 = 60;

impl SimulateArgs {
    fn validate(&self) -> Result<(), SimulateError> {
        let problem = if self.users == 0 {
            Some("--users must be at least 1")
        } else if self.seats == 0 {
            Some("--seats must be at least 1")
        } else if self.max_active == 0 {
            Some("--max-active must be at least 1")
        } else if self.rate == 0 {
            Some("--rate must be at least 1")
        } else if self.session.is_zero() {
            Some("--session must be longer than 0")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(SimulateError::InvalidArguments(problem.to_owned())),
            None => Ok(()),
        }
    }
}

/// Customer `n`'s own seed, so each customer behaves the same whatever the scheduling.
fn customer_seed(seed: u64, n: usize) -> u64 {
    seed ^ (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Runs the simulation, showing progress on stderr, and returns the report (not yet printed).
pub async fn run(args: SimulateArgs) -> Result<SimulationReport, SimulateError> {
    args.validate()?;
    let started = Instant::now();
    let mut notes = Vec::new();
    let latency = Arc::new(LatencyRecorder::default());
    let pool = args.users.clamp(16, 1024);
    let api = Arc::new(
        Api::new(&args.api, pool, Arc::clone(&latency)).map_err(SimulateError::HttpClient)?,
    );
    let info = DevInfo::fetch(&api).await?;

    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let event_name = format!("sim-{unix}");
    let event = EventId::parse(&event_name)
        .map_err(|source| SimulateError::EventId(event_name.clone(), source))?;
    let sections = crate::venue::parse_sections(&args.sections)?;
    let venue = crate::venue::layout(args.seats, &sections, &info.currency)?;
    let prices: HashMap<String, i64> = venue
        .iter()
        .map(|seat| (seat.seat_id.as_str().to_owned(), seat.price))
        .collect();
    let plan = QueuePlan {
        max_active: args.max_active,
        admit_per_second: args.rate,
        session: args.session,
    };
    stack::create_event(&info, &event, &venue, plan).await?;

    let seed = args.seed.unwrap_or_else(rand::random);
    let late_payment_possible = info.hold_seconds <= LATE_PAYMENT_MAX_HOLD_SECONDS;
    if !late_payment_possible {
        notes.push(format!(
            "holds last {} s here: late payers paid on time instead (run `lineup dev \
             --hold-seconds 20` to see lapsed holds paid late)",
            info.hold_seconds
        ));
    }
    let counters = Arc::new(LiveCounters::default());
    let progress = Progress::start(
        ProgressMode::choose(args.no_progress),
        args.users,
        args.seats,
        Arc::clone(&counters),
    );
    progress.note(&format!(
        "event {event}: {} seats seeded, queue open; {} customers arriving over {:.1} s (seed {seed})",
        args.seats,
        args.users,
        args.ramp.as_secs_f64()
    ));
    let context = Arc::new(Context {
        api: Arc::clone(&api),
        event: event.as_str().to_owned(),
        sections: sections.iter().map(|s| s.name.clone()).collect(),
        counters: Arc::clone(&counters),
        think: Duration::from_millis(args.think_ms),
        hold_duration: Duration::from_secs(info.hold_seconds),
        payment_timeout: PAYMENT_TIMEOUT,
    });

    let customers_started = Instant::now();
    let mut tasks = JoinSet::new();
    for n in 0..args.users {
        let mut rng = StdRng::seed_from_u64(customer_seed(seed, n));
        let persona = Persona::draw(&mut rng, args.ramp, late_payment_possible);
        let id = format!("{event}-{n:05}");
        let jwt = crate::dev::unverified_jwt::unsigned_token(&id);
        tasks.spawn(Customer::new(id, jwt, persona, rng, Arc::clone(&context)).run());
    }
    let (customers, unfinished, panicked) = collect(&mut tasks, args.timeout).await;
    let customers_seconds = customers_started.elapsed().as_secs_f64();
    if unfinished > 0 {
        notes.push(format!(
            "{unfinished} customers were still going after --timeout {} and were stopped",
            humantime::format_duration(args.timeout)
        ));
    }
    if panicked > 0 {
        notes.push(format!(
            "{panicked} customer tasks panicked (a simulator bug)"
        ));
    }

    // The desk hears of each settled order asynchronously: wait until it has them all. A payment
    // confirmed while waiting (a customer who gave up waiting for PAID) moves the target: look
    // at the orders again and wait once more if it did.
    progress.phase("waiting for the ticket desk to receive every sale");
    let dynamo = info.dynamodb();
    let mut orders = stored::read_orders(&dynamo, &info.tables.orders, event.as_str()).await?;
    let mut desk_waited = Duration::ZERO;
    let mut reading;
    let mut rounds = 0;
    loop {
        rounds += 1;
        let (paid, refunds) = settled(&orders);
        reading =
            desk::wait_for_desk(&api, event.as_str(), paid, refunds, args.desk_timeout).await?;
        desk_waited += reading.waited;
        orders = stored::read_orders(&dynamo, &info.tables.orders, event.as_str()).await?;
        if settled(&orders) == (paid, refunds) || rounds == 2 {
            break;
        }
    }
    progress.phase("reading the tables and checking the invariants");
    let seats = stored::read_seats(&dynamo, &info.tables.seats, event.as_str()).await?;
    progress.finish();
    if let Err(error) = stack::close_event(&info, &event).await {
        notes.push(format!(
            "could not close the event's queue afterwards: {error}"
        ));
    }
    if !reading.caught_up {
        notes.push(format!(
            "the ticket desk did not reach one message per settled order within {}",
            humantime::format_duration(args.desk_timeout)
        ));
    }

    let seen: Vec<_> = customers.iter().flat_map(|c| c.seen.clone()).collect();
    let checks = invariants::check_all(&invariants::Observed {
        seats: &seats,
        orders: &orders,
        desk: &reading.entries,
        prices: &prices,
        seen: &seen,
    });
    let (issued_orders, refund_orders, messages) = desk::counts(&reading.entries);
    let count_seats = |status: &str| seats.iter().filter(|s| s.status == status).count();
    let mut orders_by_status = BTreeMap::new();
    for order in &orders {
        *orders_by_status.entry(order.status.clone()).or_insert(0) += 1;
    }
    let report = SimulationReport {
        api: api.base().to_owned(),
        event_id: event.as_str().to_owned(),
        seed,
        settings: RunSettings {
            users: args.users,
            seats: args.seats,
            max_active: args.max_active,
            admit_per_second: args.rate,
            session_seconds: args.session.as_secs(),
            hold_seconds: info.hold_seconds,
            ramp_seconds: args.ramp.as_secs_f64(),
            think_ms: args.think_ms,
        },
        customers: CustomerCounts::tally(&customers, unfinished + panicked),
        holds: HoldCounts::tally(&customers),
        stored: StoredCounts {
            seats_total: seats.len(),
            seats_sold: count_seats("SOLD"),
            seats_held: count_seats("HELD"),
            seats_available: count_seats("AVAILABLE"),
            orders: orders.len(),
            orders_by_status,
        },
        tickets: TicketCounts {
            issued_orders,
            refund_orders,
            messages,
            desk_caught_up: reading.caught_up,
            waited_seconds: desk_waited.as_secs_f64(),
        },
        customers_seconds,
        total_seconds: started.elapsed().as_secs_f64(),
        unavailable_answers: api.unavailable_answers(),
        latency: latency.summaries(),
        problems: Problem::group(&customers),
        invariants: checks,
        notes,
    };
    if let Some(path) = &args.report_json {
        let json = serde_json::to_vec_pretty(&report).map_err(SimulateError::EncodeReport)?;
        tokio::fs::write(path, json)
            .await
            .map_err(|source| SimulateError::WriteReport {
                path: path.display().to_string(),
                source,
            })?;
    }
    Ok(report)
}

/// (PAID orders, REFUND_REQUIRED orders).
fn settled(orders: &[stored::StoredOrder]) -> (usize, usize) {
    let count = |status: &str| orders.iter().filter(|o| o.status == status).count();
    (count("PAID"), count("REFUND_REQUIRED"))
}

/// Every customer's report, until they are all done or `timeout` passes (the rest are stopped):
/// `(reports, stopped, panicked)`.
async fn collect(
    tasks: &mut JoinSet<CustomerReport>,
    timeout: Duration,
) -> (Vec<CustomerReport>, usize, usize) {
    let mut reports = Vec::with_capacity(tasks.len());
    let mut panicked = 0;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(Ok(report)) => reports.push(report),
                Some(Err(_)) => panicked += 1,
                None => return (reports, 0, panicked),
            },
            () = &mut deadline => {
                let unfinished = tasks.len();
                tasks.abort_all();
                return (reports, unfinished, panicked);
            }
        }
    }
}
