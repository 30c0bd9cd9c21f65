//! `lineup simulate`: a crowd of customers buying tickets from a running `lineup dev` server,
//! through the real routes, on an event of its own; then a check of what was stored and
//! delivered against the promises of the design (no seat sold twice, one ticket per sale...),
//! of the queue (numbers called in order), and of the run itself (something sold, no answer the
//! contract does not allow...); and what the waiting cost the origin, and how right its ETAs
//! were.
//!
//! The run, as [`run`] reads: set up (find the stack through `GET /dev/info`, seed a fresh
//! event's seats and open its queue, a little after the first arrivals so that they form a
//! pre-queue), let the crowd in (each customer a task with its own seeded behaviour, every
//! request counted at the edge as it is sent, while the server's traffic counts are read every
//! second), let the sale settle (wait for the ticket desk, read the tables at one moment), check
//! and report, the opening's requests a second at the edge and at the origin among the rest
//! ([`opening`]).
//!
//! With `--lose-webhooks` ([`payments`]), `lineup dev`'s provider loses that share of its Stripe
//! events for the run: after the crowd, the run waits (at most two reconcile periods and a
//! margin) until every payment taken ended sold or refunded in full (reconciliation settles what
//! the lost events did not, the refund queue's consumer gives back what could not buy its
//! order), then checks that, and that no refund passed its payment, beside the rest.
//!
//! With `--chaos` ([`chaos`]), faults are done to the dev server's Redis on schedule beside the
//! crowd (a flush, a failover to an empty server), every answer is kept in time
//! ([`answer_log`]), and the report says what fired when and what each fault cost; every check
//! is evaluated as in any run.

mod answer_log;
mod api_client;
pub mod chaos;
mod customer;
mod desk;
mod edge_traffic;
mod error;
mod eta_accuracy;
mod invariants;
mod latency;
mod opening;
mod origin_traffic;
mod payments;
mod persona;
mod progress;
pub mod report;
mod seat_choice;
mod sold_out_forecast;
mod stack;
mod stored;
mod waiting;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lineup::domain::ids::EventId;
use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio::sync::watch;
use tokio::task::JoinSet;

use api_client::Api;
use customer::{Context, Customer, CustomerReport};
use desk::DeskCounts;
pub use error::SimulateError;
use invariants::{Observed, QueueFacts, RunFacts};
use latency::LatencyRecorder;
use opening::{Moments, Opening};
use origin_traffic::{OriginTraffic, Sampler};
use payments::{PaymentFacts, PaymentsReport};
use persona::Persona;
use progress::{LiveCounters, Progress, ProgressMode};
use report::{
    CustomerCounts, HoldCounts, Problem, RunSettings, SimulationReport, StoredCounts, TicketCounts,
    WaitingRoom,
};
use stack::Stack;
use stored::Snapshot;

use crate::dev::payment_provider::ProviderStats;
use crate::dev::ticket_desk::Ticket;
use crate::event_admin::{OpensAt, SettingsChange};

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
    /// The queue opens this long after the first arrivals: customers arriving earlier join the
    /// pre-queue and find their numbers in the draw published at opening. `0s` opens it at once.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub pre_queue: Duration,
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
    /// Faults to do to the dev server's Redis while the crowd shops, each at an offset from the
    /// crowd's start (the origin of --ramp): `flush` (FLUSHALL) or `restart` (kill the
    /// redis-server, start an empty one on its port: a failover to an empty node; the dev server
    /// stops it with the rest). E.g. `flush@25s,restart@1m`; offsets like 25s, 1m, 1m30s, 500ms.
    /// The report says what fired when, and each fault's 503s per route and seconds until
    /// joins, polls and holds succeeded again; the run fails if a fault could not be done.
    #[arg(long, value_name = "ACTION@OFFSET,...", value_parser = chaos::ChaosPlan::parse)]
    pub chaos: Option<chaos::ChaosPlan>,
    /// The share of its Stripe events (0.0-1.0) `lineup dev`'s provider loses for good during
    /// the run, whatever `lineup dev` was started with (`PUT /dev/payments/settings`; set back to
    /// 0 at the end): reconciliation settles their payments instead. After the crowd the run
    /// waits, at most 2 × the reconcile period + 15 s, until every payment taken ended sold or
    /// refunded in full, and checks it.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION", value_parser = crate::dev::payment_provider::share)]
    pub lose_webhooks: f64,
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
        } else if self.session < Duration::from_secs(1) {
            Some("--session must be at least 1s")
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
    let sale = set_up(&args).await?;
    let report = sell(&args, &sale, started).await;
    // Whatever happened, `lineup dev` loses no more events for this run.
    let reset = sale.api.set_lose_webhooks(0.0).await;
    let mut report = report?;
    if let Err(error) = reset {
        report.notes.push(format!(
            "could not set the provider's share of lost events back to 0 ({error}): `lineup dev` \
             still loses {} of them",
            args.lose_webhooks
        ));
    }
    if let Some(path) = &args.report_json {
        write_json(&report, path).await?;
    }
    Ok(report)
}

/// The crowd, the settling and the checks, on the event `set_up` made.
async fn sell(
    args: &SimulateArgs,
    sale: &Sale,
    started: Instant,
) -> Result<SimulationReport, SimulateError> {
    let counters = Arc::new(LiveCounters::default());
    let progress = show_progress(args, sale, Arc::clone(&counters));
    // The crowd's start: the origin of the arrivals, of the traffic samples and of the chaos
    // plan's offsets.
    let origin = Instant::now();
    let sampler = Sampler::start(
        Arc::clone(&sale.api),
        sale.stack.info.traffic.clone(),
        origin,
    );
    let (crowd_done, crowd_done_heard) = watch::channel(false);
    let chaos = match (&args.chaos, &sale.chaos_target) {
        (Some(plan), Some(target)) => Some(tokio::spawn(chaos::run(
            plan.clone(),
            target.clone(),
            origin,
            progress.notes(true),
            crowd_done_heard,
        ))),
        _ => None,
    };
    let crowd = let_the_crowd_in(args, sale, counters, origin).await;
    let crowd_end = Instant::now();
    crowd_done.send_replace(true);
    let fired = match chaos {
        Some(task) => Some(task.await.map_err(|_| SimulateError::ChaosPanicked)?),
        None => None,
    };
    let traffic_after = origin_traffic::read(&sale.api).await;
    let traffic = match traffic_after {
        Ok(after) => Ok(sampler.finish(after).await),
        Err(error) => Err(error),
    };

    let settled = async {
        progress.phase(
            "waiting for every payment taken to end sold or refunded in full (reconciliation, \
             refunds)",
        );
        let settlement = payments::wait_for_settlement(
            &sale.stack,
            &sale.provider,
            &sale.event,
            crowd_end,
            Duration::from_secs(sale.stack.info.reconcile_every_seconds),
        )
        .await?;
        progress
            .phase("waiting for the ticket desk to hear of every sale, then reading the tables");
        let settled = settle(args, sale, settlement).await?;
        let payments = payments_report(args, sale, &settled).await?;
        Ok::<_, SimulateError>((settled, payments))
    }
    .await;
    progress.finish();
    let closed = match sale.stack.close_event(&sale.event).await {
        // After a restart, the first command on the simulation's own Redis connection fails
        // while it reconnects to the new server: once more.
        Err(_) if fired.is_some() => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            sale.stack.close_event(&sale.event).await
        }
        closed => closed,
    };
    let (settled, payments) = settled?;

    let mut notes = notes(args, sale, &crowd, &settled, closed.err());
    let samples = match traffic {
        Ok(samples) => Some(samples),
        Err(error) => {
            notes.push(format!(
                "could not read the server's traffic after the crowd ({error}): no origin figures"
            ));
            None
        }
    };
    let origin_figures = samples
        .as_deref()
        .and_then(|samples| OriginTraffic::of(samples, crowd.joined()));
    let opening = Opening::of(
        &Moments {
            crowd_start: origin,
            opening: sale.opening,
            crowd_end,
        },
        &crowd.customers,
        sale.api.edge(),
        samples.as_deref(),
        origin_figures.as_ref(),
    );
    let chaos = match (&args.chaos, fired) {
        (Some(plan), Some(fired)) => Some(chaos_report(
            plan,
            &fired,
            sale,
            origin,
            crowd_end,
            &crowd.customers,
        )),
        _ => None,
    };
    let mut report = check_and_report(
        args,
        sale,
        crowd,
        settled,
        (origin_figures, opening),
        notes,
        started.elapsed(),
    );
    report.payments = payments;
    report.chaos = chaos;
    Ok(report)
}

/// The run's payment figures: its events (from the provider's counts before and after), what
/// reconciliation settled, what the payments taken came to.
async fn payments_report(
    args: &SimulateArgs,
    sale: &Sale,
    settled: &Settled,
) -> Result<PaymentsReport, SimulateError> {
    let reconciled = sale.stack.reconciled().await?;
    let stats_after = sale
        .api
        .payment_stats()
        .await
        .map_err(|source| SimulateError::Api {
            what: "GET /dev/payments/stats",
            source,
        })?;
    Ok(PaymentsReport::of(
        args.lose_webhooks,
        (&sale.stats_before, &stats_after),
        &settled.stored.orders,
        &settled.stored.seats,
        &settled.payments,
        &reconciled,
    ))
}

/// The run's own event on the dev server's stack, and what the crowd needs to shop there.
struct Sale {
    api: Arc<Api>,
    latency: Arc<LatencyRecorder>,
    stack: Stack,
    event: EventId,
    /// When the event's queue opens (the end of its pre-queue), on the simulator's clock.
    opening: Instant,
    /// The venue's section names, in order.
    sections: Vec<String>,
    /// The seeded price of every seat.
    prices: HashMap<String, i64>,
    /// The crowd's seed.
    seed: u64,
    /// Where `--chaos` does its faults (the dev server's Redis), when it is given.
    chaos_target: Option<chaos::Target>,
    /// Every answer in time, kept for `--chaos`.
    answers: Option<Arc<answer_log::AnswerLog>>,
    /// `lineup dev`'s payment provider, read through the Stripe adapter.
    provider: payments::Provider,
    /// The provider's counts when the run began (its share of lost events set).
    stats_before: ProviderStats,
}

/// Finds the dev server and its stack, seeds a fresh event's seats and opens its queue.
async fn set_up(args: &SimulateArgs) -> Result<Sale, SimulateError> {
    let latency = Arc::new(LatencyRecorder::default());
    let pool = args.users.clamp(16, 1024);
    let mut api =
        Api::new(&args.api, pool, Arc::clone(&latency)).map_err(SimulateError::HttpClient)?;
    let answers = args.chaos.as_ref().map(|_| {
        let log = Arc::new(answer_log::AnswerLog::default());
        api.keep_answers(Arc::clone(&log));
        log
    });
    let api = Arc::new(api);
    let stack = Stack::find(&api).await?;
    // Before the event is made: a plan the stack cannot take is refused first.
    let chaos_target = match &args.chaos {
        Some(plan) => Some(
            chaos::Target::find(plan, &stack.info.redis_url)
                .await
                .map_err(SimulateError::Chaos)?,
        ),
        None => None,
    };
    let event = new_event()?;
    let sections = crate::venue::parse_sections(&args.sections)?;
    let venue = lineup::domain::layout::SeatLayout::from_seats(&crate::venue::layout(
        args.seats,
        &sections,
        &stack.info.currency,
        crate::venue::SEATS_PER_ROW,
    )?)
    .map_err(crate::venue::VenueError::from)?;
    let pacing = SettingsChange {
        max_active: Some(args.max_active),
        rate: Some(args.rate),
        opens_at: (!args.pre_queue.is_zero()).then_some(OpensAt::In(args.pre_queue)),
        session_seconds: Some(args.session.as_secs()),
        ..SettingsChange::default()
    };
    let opens_at = stack.create_event(&event, &venue, &pacing).await?;
    let opening = at_instant(opens_at);
    let provider = payments::Provider::at(api.base())?;
    // Last: from here on, the run sets the share back to 0 whatever happens.
    api.set_lose_webhooks(args.lose_webhooks)
        .await
        .map_err(|source| SimulateError::Api {
            what: "PUT /dev/payments/settings",
            source,
        })?;
    let stats_before = api
        .payment_stats()
        .await
        .map_err(|source| SimulateError::Api {
            what: "GET /dev/payments/stats",
            source,
        })?;
    Ok(Sale {
        api,
        latency,
        stack,
        event,
        opening,
        sections: sections.into_iter().map(|section| section.name).collect(),
        prices: venue
            .seats()
            .map(|(_, seat)| (seat.seat_id.as_str().to_owned(), seat.price))
            .collect(),
        seed: args.seed.unwrap_or_else(rand::random),
        chaos_target,
        answers,
        provider,
        stats_before,
    })
}

/// The wall-clock moment `at` on the simulator's monotonic clock (now, if it cannot be told).
fn at_instant(at: SystemTime) -> Instant {
    let (now, wall_now) = (Instant::now(), SystemTime::now());
    match at.duration_since(wall_now) {
        Ok(ahead) => now + ahead,
        Err(past) => now.checked_sub(past.duration()).unwrap_or(now),
    }
}

/// Starts showing the crowd's progress on stderr.
fn show_progress(args: &SimulateArgs, sale: &Sale, counters: Arc<LiveCounters>) -> Progress {
    let progress = Progress::start(
        ProgressMode::choose(args.no_progress),
        args.users,
        args.seats,
        counters,
    );
    progress.note(&format!(
        "event {}: {} seats seeded, queue opening in {:.1} s; {} customers arriving over {:.1} s \
         (seed {})",
        sale.event,
        args.seats,
        args.pre_queue.as_secs_f64(),
        args.users,
        args.ramp.as_secs_f64(),
        sale.seed
    ));
    progress
}

/// A fresh event id: `sim-<unix seconds>-<6 random hex digits>`, so two runs started within the
/// same second still get events of their own.
fn new_event() -> Result<EventId, SimulateError> {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let name = event_name(unix, rand::random());
    EventId::parse(&name).map_err(|source| SimulateError::EventId(name.clone(), source))
}

fn event_name(unix: u64, random: u32) -> String {
    format!("sim-{unix}-{:06x}", random & 0xFF_FFFF)
}

/// Whether late payers can wait out the hold here (else they pay on time instead).
fn late_payment_possible(hold_seconds: u64) -> bool {
    hold_seconds <= LATE_PAYMENT_MAX_HOLD_SECONDS
}

/// What the crowd did.
struct Crowd {
    customers: Vec<CustomerReport>,
    /// Still going at `--timeout` (stopped).
    unfinished: usize,
    panicked: usize,
    took: Duration,
}

impl Crowd {
    /// Customers whose join was accepted.
    fn joined(&self) -> usize {
        self.customers.iter().filter(|c| c.joined).count()
    }
}

/// Lets the customers loose, each a task with its own seeded behaviour, and waits for them all
/// (at most `--timeout`).
async fn let_the_crowd_in(
    args: &SimulateArgs,
    sale: &Sale,
    counters: Arc<LiveCounters>,
    started: Instant,
) -> Crowd {
    let info = &sale.stack.info;
    let context = Arc::new(Context {
        api: Arc::clone(&sale.api),
        event: sale.event.as_str().to_owned(),
        sections: sale.sections.clone(),
        counters,
        think: Duration::from_millis(args.think_ms),
        hold_duration: Duration::from_secs(info.hold_seconds),
        payment_timeout: PAYMENT_TIMEOUT,
        sale_over: watch::channel(false).0,
    });
    let late_payment_possible = late_payment_possible(info.hold_seconds);
    let mut tasks = JoinSet::new();
    for n in 0..args.users {
        let mut rng = StdRng::seed_from_u64(customer_seed(sale.seed, n));
        let persona = Persona::draw(&mut rng, args.ramp, late_payment_possible);
        let id = format!("{}-{n:05}", sale.event);
        let jwt = crate::dev::unverified_jwt::unsigned_token(&id);
        tasks.spawn(Customer::new(id, jwt, persona, rng, Arc::clone(&context)).run());
    }
    let (customers, unfinished, panicked) = collect(&mut tasks, args.timeout).await;
    Crowd {
        customers,
        unfinished,
        panicked,
        took: started.elapsed(),
    }
}

/// How often the settling waits for the desk again when payments kept being confirmed.
const SETTLE_ROUNDS: u32 = 3;

/// What was stored and delivered once the sale settled.
struct Settled {
    /// The orders and seats, read at one moment.
    stored: Snapshot,
    desk: Vec<Ticket>,
    /// Whether the desk heard of every order settled in `stored`.
    desk_caught_up: bool,
    desk_waited: Duration,
    /// What the provider has of the orders' payments, read after `stored`, and how the wait for
    /// them went.
    payments: PaymentFacts,
}

/// Waits for the ticket desk to hear of every settled order (it does asynchronously), then reads
/// the orders and seats, then the provider's side of their payments. A payment confirmed
/// meanwhile (a customer who gave up waiting for PAID) moves the target: then it waits again, a
/// few times at most.
async fn settle(
    args: &SimulateArgs,
    sale: &Sale,
    settlement: payments::Settlement,
) -> Result<Settled, SimulateError> {
    let mut stored = sale.stack.snapshot(&sale.event).await?;
    let mut desk_waited = Duration::ZERO;
    let mut rounds = 0;
    loop {
        rounds += 1;
        let target = settled_orders(&stored.orders);
        let reading =
            desk::wait_for_desk(&sale.api, sale.event.as_str(), target, args.desk_timeout).await?;
        desk_waited += reading.waited;
        stored = sale.stack.snapshot(&sale.event).await?;
        let unmoved = settled_orders(&stored.orders) == target;
        if unmoved || rounds == SETTLE_ROUNDS {
            let payments = PaymentFacts {
                provider: sale.provider.view(&stored.orders).await?,
                settlement,
            };
            return Ok(Settled {
                stored,
                desk: reading.tickets,
                desk_caught_up: reading.caught_up && unmoved,
                desk_waited,
                payments,
            });
        }
    }
}

/// (PAID orders, REFUND_REQUIRED or REFUNDED orders): the orders with an outbox event each.
fn settled_orders(orders: &[stored::StoredOrder]) -> (usize, usize) {
    let count = |status: &str| orders.iter().filter(|o| o.status == status).count();
    (count("PAID"), count("REFUND_REQUIRED") + count("REFUNDED"))
}

/// What the reader of the report should know about how the run went.
fn notes(
    args: &SimulateArgs,
    sale: &Sale,
    crowd: &Crowd,
    settled: &Settled,
    close_error: Option<SimulateError>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let hold_seconds = sale.stack.info.hold_seconds;
    if !late_payment_possible(hold_seconds) {
        notes.push(format!(
            "holds last {hold_seconds} s here: late payers paid on time instead (run `lineup dev \
             --hold-seconds 20` to see lapsed holds paid late)"
        ));
    }
    if crowd.unfinished > 0 {
        notes.push(format!(
            "{} customers were still going after --timeout {} and were stopped",
            crowd.unfinished,
            humantime::format_duration(args.timeout)
        ));
    }
    if crowd.panicked > 0 {
        notes.push(format!(
            "{} customer tasks panicked (a simulator bug)",
            crowd.panicked
        ));
    }
    if !settled.desk_caught_up {
        notes.push(format!(
            "the ticket desk did not hear of every settled order within {}",
            humantime::format_duration(args.desk_timeout)
        ));
    }
    if !settled.stored.stable {
        notes.push(
            "the orders and seats kept changing while they were read: the checks may compare \
             moments apart"
                .to_owned(),
        );
    }
    if let Some(error) = close_error {
        notes.push(format!(
            "could not close the event's queue afterwards: {error}"
        ));
    }
    notes
}

/// Checks the invariants over what was stored, delivered and seen, and writes it all up.
fn check_and_report(
    args: &SimulateArgs,
    sale: &Sale,
    crowd: Crowd,
    settled: Settled,
    (origin, opening): (Option<OriginTraffic>, Opening),
    notes: Vec<String>,
    took: Duration,
) -> SimulationReport {
    let Crowd {
        customers,
        unfinished,
        panicked,
        took: customers_took,
    } = crowd;
    let Settled {
        stored: Snapshot { orders, seats, .. },
        desk,
        desk_caught_up,
        desk_waited,
        payments,
    } = settled;
    let seen: Vec<_> = customers.iter().flat_map(|c| c.seen.clone()).collect();
    let run = RunFacts {
        unfinished,
        panicked,
        desk_caught_up,
        server_errors: sale.api.server_errors(),
        ..RunFacts::of(&customers)
    };
    let queue = QueueFacts::of(&customers);
    let invariants = invariants::check_all(&Observed {
        seats: &seats,
        orders: &orders,
        desk: &desk,
        prices: &sale.prices,
        seen: &seen,
        run: &run,
        queue: &queue,
        payments: &payments,
    });
    let desk_counts = DeskCounts::of(&desk);
    let count_seats = |status: &str| seats.iter().filter(|s| s.status == status).count();
    let mut orders_by_status = BTreeMap::new();
    for order in &orders {
        *orders_by_status.entry(order.status.clone()).or_insert(0) += 1;
    }
    SimulationReport {
        api: sale.api.base().to_owned(),
        event_id: sale.event.as_str().to_owned(),
        seed: sale.seed,
        settings: RunSettings {
            users: args.users,
            seats: args.seats,
            max_active: args.max_active,
            admit_per_second: args.rate,
            session_seconds: args.session.as_secs(),
            hold_seconds: sale.stack.info.hold_seconds,
            ramp_seconds: args.ramp.as_secs_f64(),
            pre_queue_seconds: args.pre_queue.as_secs_f64(),
            think_ms: args.think_ms,
        },
        customers: CustomerCounts::tally(&customers, unfinished + panicked),
        waiting_room: WaitingRoom::tally(&customers, origin, Some(opening)),
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
            issued_orders: desk_counts.issued_orders,
            refund_orders: desk_counts.refund_orders,
            outbox_events: desk_counts.outbox_events,
            messages: desk_counts.messages,
            deliveries: desk_counts.deliveries,
            desk_caught_up,
            waited_seconds: desk_waited.as_secs_f64(),
        },
        customers_seconds: customers_took.as_secs_f64(),
        total_seconds: took.as_secs_f64(),
        unavailable_answers: sale.api.unavailable_answers(),
        latency: sale.latency.summaries(),
        problems: Problem::group(&customers),
        invariants,
        notes,
        // Filled in by the caller.
        payments: PaymentsReport::default(),
        chaos: None,
    }
}

/// What the faults did and cost: each from when it fired to the next (or the crowd's end).
fn chaos_report(
    plan: &chaos::ChaosPlan,
    fired: &[chaos::Fired],
    sale: &Sale,
    origin: Instant,
    crowd_end: Instant,
    customers: &[CustomerReport],
) -> chaos::ChaosReport {
    let answers = sale
        .answers
        .as_ref()
        .map(|log| log.answers())
        .unwrap_or_default();
    let faults: Vec<Instant> = fired.iter().filter_map(|fired| fired.at).collect();
    let impacts = answer_log::impacts(&answers, &faults, crowd_end.max(origin));
    chaos::ChaosReport::of(plan, fired, impacts, origin, customers)
}

async fn write_json(
    report: &SimulationReport,
    path: &std::path::Path,
) -> Result<(), SimulateError> {
    let json = serde_json::to_vec_pretty(report).map_err(SimulateError::EncodeReport)?;
    tokio::fs::write(path, json)
        .await
        .map_err(|source| SimulateError::WriteReport {
            path: path.display().to_string(),
            source,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_started_in_the_same_second_get_events_of_their_own() {
        let first = event_name(1_796_043_231, 0x00ab_cdef);
        let second = event_name(1_796_043_231, 0x1200_0001);
        assert_eq!(first, "sim-1796043231-abcdef");
        assert_eq!(second, "sim-1796043231-000001");
        assert_ne!(first, second);
        assert!(EventId::parse(&event_name(u64::MAX, u32::MAX)).is_ok());
        assert_ne!(new_event().unwrap(), new_event().unwrap());
    }
}
