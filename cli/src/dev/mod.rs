//! `lineup dev`: the whole on-sale on one machine. It starts the local stack (or uses a Redis and
//! a LocalStack or moto already running: `--redis-url`, `--endpoint-url`), makes the tables, the
//! queues and the secrets as `lineup local-aws` does ([`crate::local_aws`]), seeds and opens a
//! demo event, and serves on one port:
//!
//! - every route of `template.yaml`, through the same handlers the Lambda functions run
//!   ([`api_gateway`], [`routes`]; the caller comes from an UNVERIFIED bearer JWT,
//!   [`unverified_jwt`]);
//! - the waiting-room page ([`page`]: `web/`, compiled in);
//! - `/dev/info`, a payment provider speaking Stripe's API (`/v1/...`, its events to
//!   `/webhooks/stripe`; and the older `/dev/payments`, [`payment_provider`]; or, with
//!   `--payments stripe`, localstripe beside it, [`localstripe`]) and a ticket desk consuming the
//!   ticket queue (`/dev/tickets`, [`ticket_desk`]).
//!
//! Beside it run the schedules ([`schedules`]: admission, expiry) and the outbox pump
//! ([`crate::stream_pump`]). Ctrl-C stops all of it, and the services it started.
//!
//! Its Redis may be lost while it runs: flushed, or killed and replaced by a new, empty server on
//! the same port (a failover; `lineup simulate --chaos flush@..,restart@..` acts both out). It
//! serves on: the Redis connections reconnect on their own, the background loops retry each
//! tick, and the stack says when its Redis went and which one answers now
//! ([`crate::local_stack`]); Ctrl-C stops a replacement too.

pub mod api_gateway;
pub mod edge_cache;
pub mod localstripe;
pub mod page;
pub mod payment_provider;
pub mod routes;
pub mod schedules;
pub mod ticket_desk;
pub mod unverified_jwt;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::handler::HandlerWithoutStateExt;
use axum::http::StatusCode;
use axum::routing::{get, on, MethodFilter};
use axum::{Json, Router};
use lineup::adapters::dynamo::DynamoLedger;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::adapters::sqs::SqsPublisher;
use lineup::domain::clock::SystemClock;
use lineup::domain::ids::EventId;
use lineup::domain::signing::SigningKey;
use lineup::domain::webhook_signature::WebhookSecret;
use lineup::wiring::backends::Queue;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower_http::services::ServeDir;

use crate::endpoints::{self, LOCAL_MOTO_PORT, LOCAL_REDIS_PORT};
use crate::event_admin::{self, SettingsChange};
use crate::local_aws::plan::ResourcePlan;
use crate::local_aws::queues::TICKET_QUEUE;
use crate::local_aws::secrets::{DEV_SIGNING_KEY, DEV_STRIPE_WEBHOOK_SECRET, DEV_WEBHOOK_SECRET};
use crate::local_aws::{self, LocalAwsError};
use crate::local_stack::{CacheDir, LocalStack, Service, StackError, StackServices};
use crate::stream_pump::{self, AvailabilityStream, OutboxStream, PumpError, StartAt, StreamPump};
use crate::venue::{self, VenueError};
use api_gateway::{error, Functions};
use lineup::adapters::dynamo::event_records::DynamoEventRecords;

#[derive(Debug, Clone, clap::Args)]
pub struct DevArgs {
    /// The port of the API and the page (on 127.0.0.1).
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
    /// The port of the Redis it starts (on 127.0.0.1).
    #[arg(long, default_value_t = LOCAL_REDIS_PORT)]
    pub redis_port: u16,
    /// The port of the moto it starts (on 127.0.0.1).
    #[arg(long, default_value_t = LOCAL_MOTO_PORT)]
    pub moto_port: u16,
    /// The port of the localstripe it starts with `--payments stripe` (on 127.0.0.1).
    #[arg(long, default_value_t = localstripe::LOCAL_STRIPE_PORT)]
    pub stripe_port: u16,
    /// Who takes the payments. `dev`: the dev server's own Stripe-shaped provider (`/v1`, test
    /// cards, 3-D Secure, webhooks retried, duplicated and lost on purpose, refund events,
    /// `/dev/payments/stats`). `stripe`: localstripe (PyPI, installed in the cache directory
    /// and started on `--stripe-port`), through the same Stripe adapter; its events reach
    /// `/webhooks/stripe` signed with the dev server's Stripe webhook secret, and the page's
    /// confirm is relayed to it. localstripe sends each event once, about a second later, with
    /// no retries; it sends no refund or cancellation events (its refunds succeed at once),
    /// ignores `Idempotency-Key`, knows `pm_card_visa`, `pm_card_chargeCustomerFail` and
    /// `pm_card_visa_chargeDeclined` only (no 3-D Secure or processing test card), and keeps
    /// nothing between runs. `--lose-webhooks`, `--duplicate-webhooks`,
    /// `--payment-completion-ms` and `/dev/payments` are the built-in provider's (so is
    /// `lineup simulate`, which reads and sets `/dev/payments`).
    #[arg(long, value_enum, default_value_t = Payments::Dev)]
    pub payments: Payments,
    /// Use this Redis (already running: a local one, an ElastiCache tunnel) instead of starting
    /// one; it is left running.
    #[arg(long, value_name = "URL", conflicts_with = "redis_port")]
    pub redis_url: Option<String>,
    /// Use this DynamoDB/SQS/Secrets Manager emulator (already running: LocalStack, moto)
    /// instead of starting moto; it is prepared as `lineup local-aws` does and left running.
    #[arg(long, value_name = "URL", conflicts_with = "moto_port")]
    pub endpoint_url: Option<String>,
    /// The demo event's id.
    #[arg(long, default_value = "demo")]
    pub event: String,
    #[arg(long, default_value = "Lineup Live: the demo night")]
    pub event_name: String,
    /// The demo event's seats.
    #[command(flatten)]
    pub venue: venue::VenueArgs,
    /// At most this many customers shop at once.
    #[arg(long, default_value_t = 100)]
    pub max_active: u32,
    /// Admissions per second.
    #[arg(long, default_value_t = 20)]
    pub rate: u32,
    /// How long an admission lasts.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_seconds: u64,
    /// How long a hold keeps its seats (5 minutes in AWS; shorten it to watch holds lapse).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub hold_seconds: u64,
    /// The admit loop's tick.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub admit_tick_ms: u64,
    /// What a big pre-queue's opening may take at the edge, requests a second (the template's
    /// `EdgeOpeningRequestsPerSecond`): set it low (e.g. 100) to try a paced opening locally.
    #[arg(long, default_value_t = lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND, value_parser = clap::value_parser!(u64).range(1..))]
    pub edge_budget: u64,
    /// How often the expiry sweep runs (every minute in AWS).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub expire_every_seconds: u64,
    /// How often reconciliation looks at every open payment again (every minute in AWS).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub reconcile_every_seconds: u64,
    /// The share of the payment provider's webhooks (Stripe events, and `/dev/payments`' generic
    /// webhooks) it sends twice at once.
    #[arg(long, default_value_t = 0.1, value_parser = payment_provider::share)]
    pub duplicate_webhooks: f64,
    /// The share of the provider's Stripe events it loses for good (never sent, as when an
    /// endpoint is down longer than Stripe retries); counted at /dev/payments/stats. The built-in
    /// provider's only: refused with `--payments stripe`.
    #[arg(long, default_value_t = 0.0, value_parser = payment_provider::share, value_name = "FRACTION")]
    pub lose_webhooks: f64,
    /// How long the provider's 3-D Secure (`pm_card_threeDSecure2Required`) and processing
    /// (`pm_card_processing`) payments take to succeed (the customer completing 3-D Secure), and
    /// its `pm_card_pendingRefund` and `pm_card_refundFail` refunds to settle.
    #[arg(long, default_value_t = 3000)]
    pub payment_completion_ms: u64,
    /// Serve the waiting-room page from this directory (e.g. `web`, to edit it without
    /// rebuilding) instead of the copy compiled into the binary.
    #[arg(long)]
    pub web_dir: Option<PathBuf>,
    /// Where the moto venv, the installer scripts and the services' logs are kept between runs
    /// (default: $XDG_CACHE_HOME/lineup, else ~/.cache/lineup).
    #[arg(long, env = "LINEUP_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// Who takes `lineup dev`'s payments (`--payments`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Payments {
    /// The dev server's own Stripe-shaped provider, on its `/v1` routes.
    Dev,
    /// localstripe, started beside the dev server.
    Stripe,
}

#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error(transparent)]
    Stack(#[from] StackError),
    #[error(transparent)]
    Resources(#[from] LocalAwsError),
    #[error(transparent)]
    Venue(#[from] VenueError),
    #[error("{0} is not a valid event id")]
    EventId(String),
    #[error(transparent)]
    Lineup(#[from] lineup::application::error::LineupError),
    #[error(transparent)]
    Admin(#[from] event_admin::AdminError),
    #[error("could not open Redis")]
    Redis(#[from] redis::RedisError),
    #[error(transparent)]
    Pump(#[from] PumpError),
    #[error("LINEUP_SIGNING_KEY is not usable")]
    SigningKey(#[source] lineup::domain::signing::KeyTooShort),
    #[error("LINEUP_WEBHOOK_SECRET is not usable")]
    WebhookSecret(#[source] lineup::domain::webhook_signature::SecretTooShort),
    #[error("the development Stripe key or webhook secret is not usable")]
    StripeSettings(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("could not make the HTTP client the checkout pays through")]
    HttpClient(#[source] reqwest::Error),
    #[error("the emulator made the ticket queue but gave no URL for it")]
    NoQueueUrl,
    #[error(
        "--lose-webhooks applies to lineup dev's own payment provider (--payments dev) only: \
         localstripe sends each event once and loses none on purpose; drop --lose-webhooks or \
         use --payments dev"
    )]
    LoseWebhooksWithStripe,
    #[error("the local stack started no localstripe")]
    NoLocalstripe,
    #[error(transparent)]
    Localstripe(#[from] localstripe::LocalstripeError),
    #[error("route {0} has a method the router cannot take")]
    RouteMethod(String),
    #[error("could not listen on 127.0.0.1:{port}")]
    Listen {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped")]
    Serve(#[source] std::io::Error),
}

/// What `/dev/info` tells the page and the simulation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DevInfo {
    pub event_id: String,
    pub event_name: String,
    pub currency: String,
    pub hold_seconds: u64,
    /// How often reconciliation runs (`--reconcile-every-seconds`): a payment whose webhook never
    /// came is settled within about this long.
    pub reconcile_every_seconds: u64,
    pub redis_url: String,
    pub aws_endpoint_url: String,
    pub region: String,
    pub tables: TablesInfo,
    pub ticket_queue_url: String,
    pub dev: bool,
    /// What reached the functions per route, and what the CDN stand-in answered, so far.
    #[serde(default)]
    pub traffic: std::collections::BTreeMap<String, edge_cache::RouteTraffic>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TablesInfo {
    pub seats: String,
    pub orders: String,
    pub outbox: String,
    pub events: String,
}

pub async fn run(args: DevArgs) -> Result<(), DevError> {
    let cache = CacheDir::resolve(args.cache_dir.as_deref())?;
    let event = EventId::parse(&args.event).map_err(|_| DevError::EventId(args.event.clone()))?;
    let seats = args.venue.layout()?;
    let signing_key = SigningKey::new(secret_from_env("LINEUP_SIGNING_KEY", DEV_SIGNING_KEY))
        .map_err(DevError::SigningKey)?;
    let webhook_secret =
        WebhookSecret::new(secret_from_env("LINEUP_WEBHOOK_SECRET", DEV_WEBHOOK_SECRET))
            .map_err(DevError::WebhookSecret)?;
    lineup::application::metrics::silence();
    if args.payments == Payments::Stripe && args.lose_webhooks > 0.0 {
        return Err(DevError::LoseWebhooksWithStripe);
    }

    // The port first: a busy one is reported before anything is installed or started.
    let address = SocketAddr::from(([127, 0, 0, 1], args.port));
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| DevError::Listen {
            port: args.port,
            source,
        })?;
    // Ctrl-C is heard from here on, also while installing and seeding.
    let stop = StopSignal::listen();

    let services = StackServices {
        redis: match &args.redis_url {
            Some(url) => Service::Running(url.clone()),
            None => Service::Start(args.redis_port),
        },
        aws: match &args.endpoint_url {
            Some(url) => {
                // Refuses AWS's own endpoints: this makes and seeds tables.
                local_aws::emulator(url, "us-east-1")?;
                Service::Running(url.clone())
            }
            None => Service::Start(args.moto_port),
        },
        stripe: (args.payments == Payments::Stripe).then_some(args.stripe_port),
    };
    eprintln!(
        "lineup dev: using {} and {}{}",
        services.redis.describe("Redis"),
        services.aws.describe("AWS emulator"),
        services
            .stripe
            .map(|port| format!(", and localstripe on :{port} for payments"))
            .unwrap_or_default()
    );
    let stack = tokio::select! {
        stack = LocalStack::start(&cache, &services) => stack?,
        // Dropping the half-started stack kills what it had started.
        () = stop.requested() => return Ok(()),
    };
    // From here on the stack is stopped whatever happens.
    let prepared = tokio::select! {
        prepared = prepare(&args, &stack, event, &seats, signing_key, webhook_secret) => Some(prepared),
        () = stop.requested() => None,
    };
    let outcome = match prepared {
        Some(Ok(prepared)) => serve(prepared, listener, &stop, &args).await,
        Some(Err(error)) => Err(error),
        None => Ok(()),
    };
    match (&services.redis, &services.aws) {
        (Service::Running(_), Service::Running(_)) => {
            eprintln!("lineup dev: leaving Redis and the AWS emulator running")
        }
        _ => eprintln!("lineup dev: stopping what it started, leaving running what it was given"),
    }
    stack.stop().await;
    outcome
}

fn secret_from_env(name: &str, development: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| development.to_owned())
}

/// Ctrl-C (SIGINT) or SIGTERM, heard once and told to everyone who asks.
#[derive(Clone)]
struct StopSignal(watch::Receiver<bool>);

impl StopSignal {
    fn listen() -> Self {
        let (sender, receiver) = watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = sender.send(true);
        });
        Self(receiver)
    }

    async fn requested(&self) {
        let mut receiver = self.0.clone();
        if receiver.wait_for(|stop| *stop).await.is_err() {
            // The listener is gone without a signal: never resolve.
            std::future::pending::<()>().await;
        }
    }
}

/// Everything set up and running but the HTTP server.
struct Prepared {
    app: Router,
    /// The schedules, the outbox pump and the ticket desk; aborted when dropped.
    background: JoinSet<()>,
    event: EventId,
    /// localstripe's API base, when it takes the payments (`--payments stripe`).
    localstripe: Option<String>,
}

/// Creates the tables and the ticket queue, seeds and opens the demo event, builds the functions
/// and starts the background loops.
async fn prepare(
    args: &DevArgs,
    stack: &LocalStack,
    event: EventId,
    seats: &lineup::domain::layout::SeatLayout,
    signing_key: SigningKey,
    webhook_secret: WebhookSecret,
) -> Result<Prepared, DevError> {
    let aws = lineup::adapters::aws::AwsSettings::local(&stack.aws_endpoint_url);
    let dynamodb = lineup::adapters::aws::dynamodb(&aws);
    let sqs = lineup::adapters::aws::sqs(&aws);
    // The tables (keys, index, streams, TTL), queues and secrets as template.yaml declares them,
    // named as events/env.json names them: what `lineup local-aws` makes.
    let plan = ResourcePlan::built_in().map_err(LocalAwsError::from)?;
    let made = local_aws::setup(&aws, &plan).await?;
    eprintln!(
        "lineup dev: {} AWS resources made, {} there already",
        made.changed(),
        made.lines.len() - made.changed()
    );
    let (tables, events_table) = local_aws::table_names(&plan).map_err(LocalAwsError::from)?;
    let records = DynamoEventRecords::new(dynamodb.clone(), events_table.clone());
    let ticket_queue_url = made
        .queue_urls
        .get(TICKET_QUEUE)
        .cloned()
        .ok_or(DevError::NoQueueUrl)?;
    let refund_queue_url = made
        .queue_urls
        .get(local_aws::queues::REFUND_QUEUE)
        .cloned()
        .ok_or(DevError::NoQueueUrl)?;
    let ledger = DynamoLedger::new(dynamodb.clone(), tables.clone())
        .with_hold_duration(Duration::from_secs(args.hold_seconds));
    let queue = || {
        RedisQueue::new(&stack.redis_url, Duration::from_secs(2))
            .map(|queue| queue.with_edge_budget(args.edge_budget))
    };

    eprintln!(
        "lineup dev: seeding {} seats for event {event}",
        seats.seat_count()
    );
    let admin_queue = queue()?;
    let opened = event_admin::seed_and_open_new(
        &ledger,
        &records,
        &admin_queue,
        &event,
        seats,
        &SettingsChange {
            max_active: Some(args.max_active),
            rate: Some(args.rate),
            opens_at: None,
            session_seconds: Some(args.session_seconds),
            ..SettingsChange::default()
        },
        "lineup dev",
        SystemTime::now(),
    )
    .await?;
    match opened {
        Some(opened) => eprintln!("lineup dev: {}", event_admin::describe(&event, &opened)),
        None => eprintln!(
            "lineup dev: event {event} is in the events table already (a run before this one): \
             kept as it is; pass --event for a new one"
        ),
    }

    // The handlers as the Lambda functions build them (lineup::wiring::backends), over the
    // local Redis and tables, with the secrets fixed at start-up.
    let backends = Queue::new(Arc::new(queue()?), Arc::new(records.clone()));
    let ledger_handle = Arc::new(ledger.clone());
    let clock: Arc<dyn lineup::domain::clock::Clock> = Arc::new(SystemClock);
    let board: Arc<dyn lineup::application::ports::availability::AvailabilityBoard> =
        Arc::new(backends.seat_map());
    // Checkout, reconciliation and refunds pay through the Stripe adapter, with the key the
    // local stack gives every function (an sk_test_ key, which localstripe takes too): at the
    // dev server's own Stripe-shaped provider (`/v1/...`), or at localstripe.
    let dev_base = format!("http://127.0.0.1:{}", args.port);
    let stripe_api_base = match args.payments {
        Payments::Dev => dev_base.clone(),
        Payments::Stripe => stack
            .stripe_api_url
            .clone()
            .ok_or(DevError::NoLocalstripe)?,
    };
    let provider_for = || {
        lineup::adapters::stripe::StripeProvider::open(
            stripe_api_base.clone(),
            lineup::adapters::stripe::StripeApiKey::new(
                crate::local_aws::secrets::DEV_STRIPE_API_KEY,
            )
            .map_err(|error| DevError::StripeSettings(Box::new(error)))?,
        )
        .map_err(DevError::HttpClient)
    };
    let checkout = lineup::application::checkout::CheckoutApi {
        orders: ledger_handle.clone(),
        checkout: ledger_handle.clone(),
        provider: Arc::new(provider_for()?),
        publishable_key: Some(crate::local_aws::secrets::DEV_PUBLISHABLE_KEY.to_owned()),
        clock: clock.clone(),
    };
    // What the edge knows of live events, as the KeyValueStore in AWS: here the events the events
    // table has settings for, read every second (edge_cache::live_events).
    let live_events = Arc::new(edge_cache::live_events::LiveEventSet::default());
    let live_events_refresh = edge_cache::live_events::keep_refreshed(
        live_events.clone(),
        dynamodb.clone(),
        events_table.clone(),
        Duration::from_secs(1),
    );
    let functions = Arc::new(Functions {
        queue: backends.queue_api(signing_key.clone().into(), clock.clone(), None),
        hold: backends.hold_api(ledger_handle.clone(), signing_key.into(), clock.clone()),
        checkout,
        confirm: lineup::application::confirm::ConfirmApi {
            // Stripe's route too, verified with the development endpoint secret.
            stripe_secret: Some(
                lineup::domain::webhook_signature::WebhookSecret::new(
                    crate::local_aws::secrets::DEV_STRIPE_WEBHOOK_SECRET,
                )
                .map_err(|error| DevError::StripeSettings(Box::new(error)))?
                .into(),
            ),
            ..backends.confirm_api(ledger_handle, webhook_secret.clone().into(), clock)
        },
        status: backends.status_api(),
        edge: Arc::new(edge_cache::EdgeCache::knowing(live_events)),
    });

    let pump = StreamPump {
        streams: endpoints::dynamodb_streams(&aws),
        stream_arn: stream_pump::stream_arn(&dynamodb, &tables.outbox).await?,
        handler: Arc::new(OutboxStream(Arc::new(
            SqsPublisher::new(sqs.clone(), ticket_queue_url.clone())
                .with_refund_queue(refund_queue_url.clone()),
        ))),
        poll_every: Duration::from_millis(250),
        start_at: StartAt::Oldest,
    };
    let seat_pump = StreamPump {
        streams: endpoints::dynamodb_streams(&aws),
        stream_arn: stream_pump::stream_arn(&dynamodb, &tables.seats).await?,
        handler: Arc::new(AvailabilityStream(board)),
        poll_every: Duration::from_millis(250),
        // The seeding just projected its own records (all available), as `template.yaml`'s
        // mapping starts at LATEST.
        start_at: StartAt::Latest,
    };
    let desk = ticket_desk::TicketDesk::default();
    let payments = match args.payments {
        // Stripe's API and the generic webhook's stand-in, both calling this server's own routes.
        Payments::Dev => payment_provider::router(payment_provider::PaymentProvider::new(
            payment_provider::Settings {
                duplicate_share: args.duplicate_webhooks,
                lose_share: args.lose_webhooks,
                completion_delay: Duration::from_millis(args.payment_completion_ms),
                ..payment_provider::Settings::new(
                    dev_base.clone(),
                    webhook_secret,
                    WebhookSecret::new(DEV_STRIPE_WEBHOOK_SECRET)
                        .map_err(|error| DevError::StripeSettings(Box::new(error)))?,
                )
            },
        )),
        // localstripe signs its events with the secret it is given: the one the confirm
        // function verifies with. The page's confirm is relayed to it.
        Payments::Stripe => {
            localstripe::register_webhook(&stripe_api_base, &dev_base, DEV_STRIPE_WEBHOOK_SECRET)
                .await?;
            localstripe::router(
                stripe_api_base.clone(),
                crate::local_aws::secrets::DEV_STRIPE_API_KEY,
            )?
        }
    };
    let info = DevInfo {
        event_id: event.as_str().to_owned(),
        event_name: args.event_name.clone(),
        currency: args.venue.currency.clone(),
        hold_seconds: args.hold_seconds,
        reconcile_every_seconds: args.reconcile_every_seconds,
        redis_url: stack.redis_url.clone(),
        aws_endpoint_url: stack.aws_endpoint_url.clone(),
        region: aws.region.clone(),
        tables: TablesInfo {
            seats: tables.seats.clone(),
            orders: tables.orders.clone(),
            outbox: tables.outbox.clone(),
            events: events_table,
        },
        ticket_queue_url: ticket_queue_url.clone(),
        dev: true,
        traffic: Default::default(),
    };

    let mut background = JoinSet::new();
    background.spawn(schedules::admit_forever(
        queue()?,
        records,
        ledger.clone(),
        Duration::from_millis(args.admit_tick_ms),
        args.edge_budget,
    ));
    background.spawn(schedules::expire_forever(
        ledger.clone(),
        queue()?,
        Duration::from_secs(args.expire_every_seconds),
    ));
    // Reconciliation and refunds call the provider checkout pays through.
    background.spawn(schedules::reconcile_forever(
        ledger.clone(),
        provider_for()?,
        Duration::from_secs(args.reconcile_every_seconds),
    ));
    background.spawn(schedules::refund_forever(
        ledger.clone(),
        provider_for()?,
        sqs.clone(),
        refund_queue_url,
    ));
    background.spawn(live_events_refresh);
    background.spawn(pump.run());
    background.spawn(seat_pump.run());
    background.spawn(desk.clone().consume(sqs, ticket_queue_url));

    Ok(Prepared {
        app: router(functions, payments, desk, info, args.web_dir.as_deref())?,
        background,
        event,
        localstripe: (args.payments == Payments::Stripe).then_some(stripe_api_base),
    })
}

/// Serves until Ctrl-C, then stops the background loops.
async fn serve(
    prepared: Prepared,
    listener: tokio::net::TcpListener,
    stop: &StopSignal,
    args: &DevArgs,
) -> Result<(), DevError> {
    let Prepared {
        app,
        background,
        event,
        localstripe,
    } = prepared;
    let base = format!("http://127.0.0.1:{}", args.port);
    println!();
    println!("  Lineup is running: {base}/");
    println!("  waiting-room page  {base}/");
    println!("  API                {base}/events/{event}/queue  (Authorization: Bearer <JWT>; the sub claim is NOT verified locally)");
    match &localstripe {
        None => println!("  payment provider   {base}/v1 (Stripe's API: STRIPE_API_BASE={base}, any sk_test_ key)   stats {base}/dev/payments/stats"),
        Some(stripe) => {
            println!("  payment provider   localstripe {stripe} (--payments stripe; Stripe's API: STRIPE_API_BASE={stripe}, any sk_test_ key)");
            println!("                     its events to {base}/webhooks/stripe; the page's confirm relayed from {base}/v1/payment_intents/{{id}}/confirm");
        }
    }
    println!("  ticket desk        {base}/dev/tickets");
    println!("  Ctrl-C stops everything.");
    println!();
    let served = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown({
        let stop = stop.clone();
        async move { stop.requested().await }
    });
    // Requests in flight get a few seconds to finish; one stuck on a stalled moto (the SDK waits
    // up to 30 s) does not keep Ctrl-C from stopping everything.
    let served = tokio::select! {
        served = served => served.map_err(DevError::Serve),
        () = async {
            stop.requested().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            eprintln!("lineup dev: requests still in flight after {SHUTDOWN_GRACE:?}; stopping anyway");
            Ok(())
        }
    };
    drop(background);
    served
}

/// How long requests in flight may take to finish once Ctrl-C is heard.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// API Gateway answers an unknown route or method with 404; so does the dev server, in Lineup's
/// error shape, for `/dev/*` and missing files too.
async fn route_not_found() -> axum::response::Response {
    error(
        StatusCode::NOT_FOUND,
        "route_not_found",
        "no route matches this method and path",
    )
}

fn router(
    functions: Arc<Functions>,
    payments: Router,
    desk: ticket_desk::TicketDesk,
    info: DevInfo,
    web_dir: Option<&Path>,
) -> Result<Router, DevError> {
    let mut api = Router::new();
    for route in routes::routes() {
        let filter = MethodFilter::try_from(route.method.clone())
            .map_err(|_| DevError::RouteMethod(route.key()))?;
        let path = route.path;
        let route = Arc::new(route);
        api = api.route(
            path,
            on(filter, move |state, peer, parameters, request| {
                api_gateway::serve(route.clone(), state, peer, parameters, request)
            }),
        );
    }
    let edge = functions.edge.clone();
    let api = api.with_state(functions);
    let tickets = Router::new()
        .route("/dev/tickets", get(ticket_desk::list))
        .route("/dev/tickets/{orderId}", get(ticket_desk::one))
        .with_state(desk);
    let info = Router::new()
        .route(
            "/dev/info",
            get(|State(info): State<Arc<DevInfo>>| async move {
                Json(DevInfo {
                    traffic: edge.traffic(),
                    ..(*info).clone()
                })
            }),
        )
        .with_state(Arc::new(info));
    let app = Router::new()
        .merge(api)
        .merge(payments)
        .merge(tickets)
        .merge(info)
        .method_not_allowed_fallback(route_not_found);
    Ok(match web_dir {
        None => app.fallback(page::serve),
        Some(web_dir) => app.fallback_service(
            ServeDir::new(web_dir)
                .call_fallback_on_method_not_allowed(true)
                .fallback(route_not_found.into_service()),
        ),
    })
}

/// Ctrl-C (SIGINT) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    eprintln!("lineup dev: shutting down");
}
