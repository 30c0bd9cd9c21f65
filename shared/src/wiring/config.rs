//! Settings a function reads from its environment, once, at cold start: a bad setting stops the
//! function before it takes a request instead of failing mid-request. Nothing else in Lineup
//! reads the environment (but [`crate::wiring::logging`], for the log level and format Lambda
//! sets): the adapters' settings (`AwsSettings`, `RedisSettings`, `TableNames`,
//! `PublisherConfig`, `KeySource`) are read here, from a lookup they are given.
//!
//! Each function has its own settings type and reads only what it uses, so each is given only
//! what it uses: a function that never signs anything is never handed the signing key.
//!
//! | function | reads |
//! |---|---|
//! | `join` | [`JoinConfig`]: Redis, the signing key, the events table, the optional required JWT claim |
//! | `poll` | [`PollConfig`]: Redis, the signing key, the events table |
//! | `status` | [`StatusConfig`]: Redis, the events table |
//! | `hold` | [`HoldConfig`]: Redis, the signing key, the tables |
//! | `checkout` | [`CheckoutConfig`]: the tables, the payment provider, its publishable key |
//! | `confirm` | [`ConfirmConfig`]: Redis, the tables, the webhook secrets (generic, Stripe's) |
//! | `admit` | [`AdmitConfig`]: Redis, the events table, the tables (to rebuild a lost seat map), its tick and run time |
//! | `expire` | [`ExpireConfig`]: Redis, the tables |
//! | `outbox-stream` | [`OutboxStreamConfig`]: the ticket queue, how to reach SQS |
//! | `availability` | [`AvailabilityConfig`]: Redis |
//! | `reconcile` | [`ReconcileConfig`]: the tables, the payment provider |
//! | `refund` | [`RefundConfig`]: the tables, the payment provider, the refund queue |
//!
//! Secrets come from Secrets Manager (`*_SECRET_ARN`) or, locally, as literals (see
//! [`crate::adapters::secret_source`]). Each function that uses Redis may also name its own
//! Redis user (`REDIS_USER`, with `LINEUP_REDIS_PASSWORD_SECRET_ARN`; docs/decisions/0026),
//! as every one does in AWS; without one it connects as the default user, as locally.

use std::time::Duration;

use aws_sdk_dynamodb::config::Credentials;

use crate::adapters::aws::AwsSettings;
use crate::adapters::dynamo::{MissingTable, TableNames};
use crate::adapters::redis::connection::{
    RedisSettings, RedisUser, UnusableRedisPassword, REDIS_DEFAULT_TIMEOUT,
};
use crate::adapters::secret_source::KeySource;
use crate::adapters::secrets_manager::SecretRef;
use crate::adapters::sqs::PublisherConfig;
use crate::adapters::stripe::{InvalidApiKey, StripeApiKey};
use crate::application::http::origin::{OriginSecret, OriginSecretTooShort};
use crate::domain::keys::SecretKey;
use crate::domain::signing::{KeyTooShort, SigningKey};
use crate::domain::webhook_signature::{SecretTooShort, WebhookSecret};

/// The signing key's variables: the literal (local runs) or its secret's ARN (AWS).
pub const SIGNING_KEY: &str = "LINEUP_SIGNING_KEY";
/// The ARN of the signing key's secret in Secrets Manager (AWS).
pub const SIGNING_KEY_SECRET_ARN: &str = "LINEUP_SIGNING_KEY_SECRET_ARN";
/// The webhook secret's variables, likewise.
pub const WEBHOOK_SECRET: &str = "LINEUP_WEBHOOK_SECRET";
/// The ARN of the webhook secret's secret in Secrets Manager (AWS).
pub const WEBHOOK_SECRET_SECRET_ARN: &str = "LINEUP_WEBHOOK_SECRET_ARN";
/// Stripe's webhook endpoint secret (`whsec_...`): the literal (local runs) or its secret's ARN
/// (AWS). Neither set: the deployment has no Stripe webhook route.
pub const STRIPE_WEBHOOK_SECRET: &str = "LINEUP_STRIPE_WEBHOOK_SECRET";
/// The ARN of Stripe's webhook endpoint secret in Secrets Manager (AWS).
pub const STRIPE_WEBHOOK_SECRET_ARN: &str = "LINEUP_STRIPE_WEBHOOK_SECRET_ARN";
/// Where Stripe's API is (default `https://api.stripe.com`).
pub const STRIPE_API_BASE: &str = "STRIPE_API_BASE";
/// Lineup's Stripe secret key (`sk_...`), literal: local runs only.
pub const STRIPE_API_KEY: &str = "LINEUP_STRIPE_API_KEY";
/// The ARN of Lineup's Stripe secret key in Secrets Manager (AWS).
pub const STRIPE_API_KEY_ARN: &str = "LINEUP_STRIPE_API_KEY_ARN";
/// Stripe's publishable key (`pk_...`), given to the browser; not a secret.
pub const STRIPE_PUBLISHABLE_KEY: &str = "STRIPE_PUBLISHABLE_KEY";
/// A JWT claim that must be `true` before a customer may join (e.g. `email_verified`).
pub const REQUIRED_CLAIM: &str = "LINEUP_REQUIRED_CLAIM";
/// The JWT claim that, when `"true"`, spares a joiner the event's proof-of-work (`join`).
pub const CHALLENGE_EXEMPT_CLAIM: &str = "LINEUP_CHALLENGE_EXEMPT_CLAIM";
/// The value CloudFront sends in `X-Lineup-Origin`: literal (local) or its secret's ARN (AWS).
/// Unset: the function lets every request through (local runs).
pub const ORIGIN_SECRET: &str = "LINEUP_ORIGIN_SECRET";
/// The ARN of the origin secret's secret in Secrets Manager (AWS).
pub const ORIGIN_SECRET_ARN: &str = "LINEUP_ORIGIN_SECRET_ARN";
/// The Redis user a function signs in as (its own, in AWS: docs/decisions/0026). Unset or
/// empty: the default user (`lineup dev`, the local stack).
pub const REDIS_USER: &str = "REDIS_USER";
/// That user's password, literal: local runs only.
pub const REDIS_PASSWORD: &str = "LINEUP_REDIS_PASSWORD";
/// The ARN of that user's password in Secrets Manager (AWS).
pub const REDIS_PASSWORD_SECRET_ARN: &str = "LINEUP_REDIS_PASSWORD_SECRET_ARN";

/// Why a function's settings are refused: it stops at cold start, naming the variable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required variable (named) is unset or empty.
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    /// A variable is set to something unusable.
    #[error("environment variable {name} is not valid: {reason}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// A duration variable (`*_MS`) is not a whole number above 0.
    #[error("environment variable {name} must be a positive number of milliseconds")]
    NotMillis {
        /// The variable.
        name: &'static str,
        /// Why it did not parse; `None` when it parsed as 0.
        #[source]
        source: Option<std::num::ParseIntError>,
    },
    /// A required secret has neither its literal nor its ARN variable set.
    #[error("neither {literal} nor {arn} is set (set {arn} in AWS, {literal} only locally)")]
    NoSecretSource {
        /// The literal value's variable.
        literal: &'static str,
        /// The secret ARN's variable.
        arn: &'static str,
    },
    /// A secret has both its literal and its ARN variable set.
    #[error("both {literal} and {arn} are set; set exactly one")]
    TwoSecretSources {
        /// The literal value's variable.
        literal: &'static str,
        /// The secret ARN's variable.
        arn: &'static str,
    },
    /// The literal signing key is too short.
    #[error("environment variable LINEUP_SIGNING_KEY is not usable")]
    SigningKey(#[source] KeyTooShort),
    /// The literal webhook secret is too short.
    #[error("environment variable LINEUP_WEBHOOK_SECRET is not usable")]
    WebhookSecret(#[source] SecretTooShort),
    /// The literal origin secret is too short.
    #[error("environment variable LINEUP_ORIGIN_SECRET is not usable")]
    OriginSecret(#[source] OriginSecretTooShort),
    /// The literal Stripe API key is not one.
    #[error("environment variable LINEUP_STRIPE_API_KEY is not usable")]
    StripeApiKey(#[source] InvalidApiKey),
    /// The literal Stripe webhook secret is too short.
    #[error("environment variable LINEUP_STRIPE_WEBHOOK_SECRET is not usable")]
    StripeWebhookSecret(#[source] SecretTooShort),
    /// The literal Redis password is not one.
    #[error("environment variable LINEUP_REDIS_PASSWORD is not usable")]
    RedisPassword(#[source] UnusableRedisPassword),
}

impl From<MissingTable> for ConfigError {
    fn from(MissingTable(name): MissingTable) -> Self {
        Self::Missing(name)
    }
}

/// Reading [`RedisSettings`] from the environment: `REDIS_URL`, `REDIS_CLUSTER`, `REDIS_TIMEOUT_MS`.
impl RedisSettings {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let url = lookup("REDIS_URL")
            .filter(|v| !v.is_empty())
            .ok_or(ConfigError::Missing("REDIS_URL"))?;
        if !(url.starts_with("redis://") || url.starts_with("rediss://"))
            || redis::Client::open(url.as_str()).is_err()
        {
            return Err(ConfigError::Invalid {
                name: "REDIS_URL",
                reason: "expected redis://host:port or rediss://host:port".to_owned(),
            });
        }
        let cluster = match lookup("REDIS_CLUSTER").as_deref() {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "REDIS_CLUSTER",
                    reason: format!("expected true or false, got {other:?}"),
                })
            }
        };
        Ok(Self {
            url,
            timeout: millis(lookup, "REDIS_TIMEOUT_MS", REDIS_DEFAULT_TIMEOUT)?,
            cluster,
        })
    }
}

/// The function's own Redis user (`REDIS_USER`) and its password's source, or `None` for the
/// default user: a user without a password, or a password without a user, is refused here.
fn redis_user(lookup: &impl Fn(&str) -> Option<String>) -> Result<Option<RedisUser>, ConfigError> {
    let password = optional_secret(
        lookup,
        REDIS_PASSWORD,
        REDIS_PASSWORD_SECRET_ARN,
        ConfigError::RedisPassword,
    )?;
    let name = lookup(REDIS_USER).filter(|name| !name.is_empty());
    match (name, password) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(ConfigError::Missing(REDIS_USER)),
        (Some(_), None) => Err(ConfigError::NoSecretSource {
            literal: REDIS_PASSWORD,
            arn: REDIS_PASSWORD_SECRET_ARN,
        }),
        (Some(name), Some(_))
            if name.len() > 128 || !name.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Err(ConfigError::Invalid {
                name: REDIS_USER,
                reason: "expected a Redis user name (printable, no spaces)".to_owned(),
            })
        }
        (Some(name), Some(password)) => Ok(Some(RedisUser { name, password })),
    }
}

/// The process environment, as a lookup.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A positive number of milliseconds, or `default` when unset.
fn millis(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match lookup(name) {
        None => Ok(default),
        Some(raw) => match raw.parse::<u64>() {
            Ok(0) => Err(ConfigError::NotMillis { name, source: None }),
            Ok(ms) => Ok(Duration::from_millis(ms)),
            Err(source) => Err(ConfigError::NotMillis {
                name,
                source: Some(source),
            }),
        },
    }
}

/// The origin secret, if the function is given one (every HTTP function is, in AWS).
fn origin_secret(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<Option<KeySource<OriginSecret>>, ConfigError> {
    optional_secret(
        lookup,
        ORIGIN_SECRET,
        ORIGIN_SECRET_ARN,
        ConfigError::OriginSecret,
    )
}

/// A secret the function may go without: `None` when neither of its variables is set.
fn optional_secret<K: SecretKey>(
    lookup: &impl Fn(&str) -> Option<String>,
    literal: &'static str,
    arn: &'static str,
    invalid: impl FnOnce(K::Invalid) -> ConfigError,
) -> Result<Option<KeySource<K>>, ConfigError> {
    let set = |name: &str| lookup(name).is_some_and(|value| !value.is_empty());
    if !set(literal) && !set(arn) {
        return Ok(None);
    }
    KeySource::from_lookup(lookup, literal, arn, invalid).map(Some)
}

fn signing_key(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<KeySource<SigningKey>, ConfigError> {
    KeySource::from_lookup(
        lookup,
        SIGNING_KEY,
        SIGNING_KEY_SECRET_ARN,
        ConfigError::SigningKey,
    )
}

/// The DynamoDB tables and how to reach DynamoDB (`hold`, `confirm`, `expire`).
#[derive(Debug, Clone)]
pub struct LedgerConfig {
    /// `SEATS_TABLE`, `ORDERS_TABLE`, `OUTBOX_TABLE`.
    pub tables: TableNames,
    /// How to reach DynamoDB.
    pub aws: AwsSettings,
}

impl LedgerConfig {
    /// The tables' names and the AWS settings, through `lookup`.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            tables: TableNames::from_lookup(lookup)?,
            aws: AwsSettings::from_lookup(lookup)?,
        })
    }

    /// The ledger these settings describe.
    pub fn ledger(&self) -> crate::adapters::dynamo::DynamoLedger {
        crate::adapters::dynamo::DynamoLedger::new(
            crate::adapters::aws::dynamodb(&self.aws),
            self.tables.clone(),
        )
    }
}

/// `poll` (and the queue side of `join` and `hold`): Redis and the signing key.
#[derive(Debug, Clone)]
pub struct QueueFunctionConfig {
    /// How to reach the queue's Redis.
    pub redis: RedisSettings,
    /// The function's own Redis user; `None`: the default user (local runs).
    pub redis_user: Option<RedisUser>,
    /// Derives queue ids and signs access tokens.
    pub signing_key: KeySource<SigningKey>,
}

impl QueueFunctionConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            redis: RedisSettings::from_lookup(lookup)?,
            redis_user: redis_user(lookup)?,
            signing_key: signing_key(lookup)?,
        })
    }
}

/// The events table (`EVENTS_TABLE`): events' durable settings, cursors, audit and draws.
#[derive(Debug, Clone)]
pub struct EventsTableConfig {
    /// The events table's name.
    pub table: String,
    /// How to reach DynamoDB.
    pub aws: AwsSettings,
}

impl EventsTableConfig {
    /// `EVENTS_TABLE` and the AWS settings, through `lookup`.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            table: lookup("EVENTS_TABLE")
                .filter(|name| !name.is_empty())
                .ok_or(ConfigError::Missing("EVENTS_TABLE"))?,
            aws: AwsSettings::from_lookup(lookup)?,
        })
    }

    /// The events table's adapter.
    pub fn records(&self) -> crate::adapters::dynamo::event_records::DynamoEventRecords {
        crate::adapters::dynamo::event_records::DynamoEventRecords::new(
            crate::adapters::aws::dynamodb(&self.aws),
            self.table.clone(),
        )
    }
}

/// `poll`: Redis, the signing key, and the events table (to restore after a cache loss).
#[derive(Debug, Clone)]
pub struct PollConfig {
    /// Redis and the signing key.
    pub queue: QueueFunctionConfig,
    /// Where a lost event and its customers are restored from.
    pub events: EventsTableConfig,
    /// The origin secret's source; `None`: every request is let through (local runs).
    pub origin: Option<KeySource<OriginSecret>>,
}

impl PollConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            queue: QueueFunctionConfig::from_lookup(lookup)?,
            events: EventsTableConfig::from_lookup(lookup)?,
            origin: origin_secret(lookup)?,
        })
    }
}

/// `status`: Redis (the published status) and the events table (the published draw). No key or
/// webhook secret; only the origin secret, like every HTTP function.
#[derive(Debug, Clone)]
pub struct StatusConfig {
    /// How to reach Redis: the status documents and the seat map.
    pub redis: RedisSettings,
    /// The function's own Redis user; `None`: the default user (local runs).
    pub redis_user: Option<RedisUser>,
    /// The published draw, the layouts, and whether an event exists durably.
    pub events: EventsTableConfig,
    /// The origin secret's source; `None`: every request is let through (local runs).
    pub origin: Option<KeySource<OriginSecret>>,
}

impl StatusConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            redis: RedisSettings::from_lookup(lookup)?,
            redis_user: redis_user(lookup)?,
            events: EventsTableConfig::from_lookup(lookup)?,
            origin: origin_secret(lookup)?,
        })
    }
}

/// `join`: Redis, the signing key, the events table, and the JWT claim a customer must have
/// before joining.
#[derive(Debug, Clone)]
pub struct JoinConfig {
    /// Redis and the signing key.
    pub queue: QueueFunctionConfig,
    /// Where a lost event is restored from and ranges of numbers are reserved.
    pub events: EventsTableConfig,
    /// The origin secret's source; `None`: every request is let through (local runs).
    pub origin: Option<KeySource<OriginSecret>>,
    /// `LINEUP_REQUIRED_CLAIM`: a claim of the caller's JWT that must be `"true"` (e.g.
    /// `email_verified`); unset or empty: none.
    pub required_claim: Option<String>,
    /// `LINEUP_CHALLENGE_EXEMPT_CLAIM`: a claim of the caller's JWT that, when `"true"`, spares
    /// the caller an event's proof-of-work (customers who cannot run the page's solver, support
    /// agents); unset or empty: nobody is exempt.
    pub challenge_exempt_claim: Option<String>,
}

/// A JWT claim name from the environment: short identifiers or URIs (`email_verified`,
/// `custom:verified`, `https://example.com/verified`); whitespace or control characters are a
/// typo. Unset or empty: none.
fn claim_name(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<String>, ConfigError> {
    let claim = lookup(name).filter(|claim| !claim.is_empty());
    if let Some(claim) = &claim {
        if claim.len() > 256 || claim.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::Invalid {
                name,
                reason: "expected a JWT claim name".to_owned(),
            });
        }
    }
    Ok(claim)
}

impl JoinConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let required_claim = claim_name(lookup, REQUIRED_CLAIM)?;
        let challenge_exempt_claim = claim_name(lookup, CHALLENGE_EXEMPT_CLAIM)?;
        Ok(Self {
            queue: QueueFunctionConfig::from_lookup(lookup)?,
            events: EventsTableConfig::from_lookup(lookup)?,
            origin: origin_secret(lookup)?,
            required_claim,
            challenge_exempt_claim,
        })
    }
}

/// `hold`: Redis, the signing key (to check access tokens) and the tables.
#[derive(Debug, Clone)]
pub struct HoldConfig {
    /// Redis (live admissions, the seat map) and the signing key.
    pub queue: QueueFunctionConfig,
    /// The seats, orders and outbox tables.
    pub ledger: LedgerConfig,
    /// Where the seat layouts are stored.
    pub events: EventsTableConfig,
    /// The origin secret's source; `None`: every request is let through (local runs).
    pub origin: Option<KeySource<OriginSecret>>,
}

impl HoldConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            queue: QueueFunctionConfig::from_lookup(lookup)?,
            ledger: LedgerConfig::from_lookup(lookup)?,
            events: EventsTableConfig::from_lookup(lookup)?,
            origin: origin_secret(lookup)?,
        })
    }
}

/// `confirm`: Redis (to end a payer's admission), the tables and the webhook secrets.
#[derive(Debug, Clone)]
pub struct ConfirmConfig {
    /// How to reach Redis: admissions to end, events' ticket limits.
    pub redis: RedisSettings,
    /// The function's own Redis user; `None`: the default user (local runs).
    pub redis_user: Option<RedisUser>,
    /// The seats, orders and outbox tables.
    pub ledger: LedgerConfig,
    /// Shared with the payment provider: verifies its webhooks.
    pub webhook_secret: KeySource<WebhookSecret>,
    /// Stripe's endpoint secret, verifying `POST /webhooks/stripe`; `None`: no such route.
    pub stripe_webhook_secret: Option<KeySource<WebhookSecret>>,
    /// The origin secret's source; `None`: every request is let through (local runs).
    pub origin: Option<KeySource<OriginSecret>>,
}

impl ConfirmConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            redis: RedisSettings::from_lookup(lookup)?,
            redis_user: redis_user(lookup)?,
            ledger: LedgerConfig::from_lookup(lookup)?,
            webhook_secret: KeySource::from_lookup(
                lookup,
                WEBHOOK_SECRET,
                WEBHOOK_SECRET_SECRET_ARN,
                ConfigError::WebhookSecret,
            )?,
            stripe_webhook_secret: optional_secret(
                lookup,
                STRIPE_WEBHOOK_SECRET,
                STRIPE_WEBHOOK_SECRET_ARN,
                ConfigError::StripeWebhookSecret,
            )?,
            origin: origin_secret(lookup)?,
        })
    }
}

/// `admit`: Redis, the events table (cursors, restores, the draw) and its pace, one tick per
/// `tick`, for `run` per invocation. No secret.
#[derive(Debug, Clone)]
pub struct AdmitConfig {
    /// How to reach the queue's Redis.
    pub redis: RedisSettings,
    /// The function's own Redis user; `None`: the default user (local runs).
    pub redis_user: Option<RedisUser>,
    /// Cursors, number ranges, restores and the published draw.
    pub events: EventsTableConfig,
    /// The seats table, read (by key) only to rebuild a lost availability projection.
    pub ledger: LedgerConfig,
    /// `ADMIT_TICK_MS`: the time between ticks.
    pub tick: Duration,
    /// `ADMIT_RUN_MS`: how long one invocation ticks (under the schedule's minute).
    pub run: Duration,
    /// `EDGE_OPENING_REQUESTS_PER_SECOND`: what a big pre-queue's opening may take at the edge
    /// (`wait_policy::opening_reads`); the default unless CloudFront's quota was raised.
    pub edge_budget: u64,
    /// The local disk (`/tmp`) the pre-queue draw may use: the function's `EphemeralStorage`
    /// (`EPHEMERAL_STORAGE_MB`, 512 to 10,240; Lambda's default 512 when unset) less 64 MiB
    /// kept for anything else.
    pub draw_disk_bytes: u64,
}

impl AdmitConfig {
    /// `tick` when `ADMIT_TICK_MS` is unset.
    pub const DEFAULT_TICK: Duration = Duration::from_millis(1_000);
    /// `run` when `ADMIT_RUN_MS` is unset.
    pub const DEFAULT_RUN: Duration = Duration::from_secs(55);

    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            redis: RedisSettings::from_lookup(lookup)?,
            redis_user: redis_user(lookup)?,
            events: EventsTableConfig::from_lookup(lookup)?,
            ledger: LedgerConfig::from_lookup(lookup)?,
            tick: millis(lookup, "ADMIT_TICK_MS", Self::DEFAULT_TICK)?,
            run: millis(lookup, "ADMIT_RUN_MS", Self::DEFAULT_RUN)?,
            edge_budget: match lookup("EDGE_OPENING_REQUESTS_PER_SECOND") {
                None => crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
                Some(raw) => {
                    raw.parse()
                        .ok()
                        .filter(|n: &u64| *n > 0)
                        .ok_or(ConfigError::Invalid {
                            name: "EDGE_OPENING_REQUESTS_PER_SECOND",
                            reason: "a positive number of requests a second".to_owned(),
                        })?
                }
            },
            draw_disk_bytes: match lookup("EPHEMERAL_STORAGE_MB") {
                None => crate::application::admit::pre_queue_draw::DEFAULT_DISK_BYTES,
                Some(raw) => {
                    let mib = raw
                        .parse::<u64>()
                        .ok()
                        .filter(|mib| (512..=10_240).contains(mib))
                        .ok_or(ConfigError::Invalid {
                            name: "EPHEMERAL_STORAGE_MB",
                            reason: "the function's EphemeralStorage, 512 to 10240 MiB".to_owned(),
                        })?;
                    (mib - 64) * 1024 * 1024
                }
            },
        })
    }

    /// How each invocation runs.
    pub fn pace(&self) -> crate::application::admit::AdmitPace {
        crate::application::admit::AdmitPace {
            run: self.run,
            tick: self.tick,
            edge_budget: self.edge_budget,
            draw_disk_bytes: self.draw_disk_bytes,
        }
    }
}

/// `expire`: Redis (to close sold-out queues) and the tables.
#[derive(Debug, Clone)]
pub struct ExpireConfig {
    /// How to reach Redis: seat counts, open events, closing sold-out queues.
    pub redis: RedisSettings,
    /// The function's own Redis user; `None`: the default user (local runs).
    pub redis_user: Option<RedisUser>,
    /// The orders and seats tables the sweep writes.
    pub ledger: LedgerConfig,
}

impl ExpireConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            redis: RedisSettings::from_lookup(lookup)?,
            redis_user: redis_user(lookup)?,
            ledger: LedgerConfig::from_lookup(lookup)?,
        })
    }
}

/// `outbox-stream`: the ticket queue and how to reach SQS (`AWS_ENDPOINT_URL` points it at moto
/// or LocalStack).
#[derive(Debug, Clone)]
pub struct OutboxStreamConfig {
    /// The ticket queue's URL.
    pub publisher: crate::adapters::sqs::PublisherConfig,
    /// How to reach SQS.
    pub aws: AwsSettings,
}

impl OutboxStreamConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            publisher: crate::adapters::sqs::PublisherConfig::from_lookup(lookup)?,
            aws: AwsSettings::from_lookup(lookup)?,
        })
    }
}

/// How to reach the payment provider (Stripe): its API's address and Lineup's secret key.
#[derive(Debug, Clone)]
pub struct StripeSettings {
    /// `STRIPE_API_BASE`: `https://api.stripe.com` unless set (locally: localstripe or
    /// `lineup dev`'s provider).
    pub api_base: String,
    /// `LINEUP_STRIPE_API_KEY_ARN` (AWS) or `LINEUP_STRIPE_API_KEY` (local runs only).
    pub api_key: KeySource<StripeApiKey>,
}

impl StripeSettings {
    /// Stripe's own address.
    pub const DEFAULT_API_BASE: &'static str = "https://api.stripe.com";

    /// Through `lookup`.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let api_base = lookup(STRIPE_API_BASE)
            .filter(|base| !base.is_empty())
            .unwrap_or_else(|| Self::DEFAULT_API_BASE.to_owned());
        if !(api_base.starts_with("https://")
            || api_base.starts_with("http://127.0.0.1")
            || api_base.starts_with("http://localhost"))
        {
            return Err(ConfigError::Invalid {
                name: STRIPE_API_BASE,
                reason: "expected an https:// address (plain http only on this machine)".to_owned(),
            });
        }
        Ok(Self {
            api_base: api_base.trim_end_matches('/').to_owned(),
            api_key: KeySource::from_lookup(
                lookup,
                STRIPE_API_KEY,
                STRIPE_API_KEY_ARN,
                ConfigError::StripeApiKey,
            )?,
        })
    }
}

/// `checkout`: the tables (orders read, tied to a payment, released), the provider, Stripe's
/// publishable key for the browser, and the origin check.
#[derive(Debug, Clone)]
pub struct CheckoutConfig {
    /// The tables.
    pub ledger: LedgerConfig,
    /// The payment provider.
    pub stripe: StripeSettings,
    /// `STRIPE_PUBLISHABLE_KEY` (`pk_...`, not a secret); unset or empty: none given out.
    pub publishable_key: Option<String>,
    /// The origin secret's source; `None`: every request is let through (local runs).
    pub origin: Option<KeySource<OriginSecret>>,
}

impl CheckoutConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let publishable_key = lookup(STRIPE_PUBLISHABLE_KEY).filter(|key| !key.is_empty());
        if let Some(key) = &publishable_key {
            if !key.starts_with("pk_") || !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ConfigError::Invalid {
                    name: STRIPE_PUBLISHABLE_KEY,
                    reason: "expected a Stripe publishable key (pk_...)".to_owned(),
                });
            }
        }
        Ok(Self {
            ledger: LedgerConfig::from_lookup(lookup)?,
            stripe: StripeSettings::from_lookup(lookup)?,
            publishable_key,
            origin: origin_secret(lookup)?,
        })
    }
}

/// `reconcile`: the tables (open payments, settlements, holds kept or ended) and the provider.
#[derive(Debug, Clone)]
pub struct ReconcileConfig {
    /// The tables.
    pub ledger: LedgerConfig,
    /// The payment provider.
    pub stripe: StripeSettings,
}

impl ReconcileConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            ledger: LedgerConfig::from_lookup(lookup)?,
            stripe: StripeSettings::from_lookup(lookup)?,
        })
    }
}

/// `refund`: the orders table (refund records, payments' totals), the provider, and the refund
/// queue (to hand a message back for later).
#[derive(Debug, Clone)]
pub struct RefundConfig {
    /// The tables.
    pub ledger: LedgerConfig,
    /// The payment provider.
    pub stripe: StripeSettings,
    /// `REFUND_QUEUE_URL`: the queue the function consumes.
    pub queue_url: String,
}

impl RefundConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let queue_url = lookup(crate::adapters::sqs::PublisherConfig::REFUND_QUEUE_URL)
            .filter(|url| !url.trim().is_empty())
            .ok_or(ConfigError::Missing(
                crate::adapters::sqs::PublisherConfig::REFUND_QUEUE_URL,
            ))?;
        Ok(Self {
            ledger: LedgerConfig::from_lookup(lookup)?,
            stripe: StripeSettings::from_lookup(lookup)?,
            queue_url,
        })
    }
}

/// `availability`: Redis, where the seats table's stream is projected.
#[derive(Debug, Clone)]
pub struct AvailabilityConfig {
    /// How to reach the Redis that holds the projection.
    pub redis: RedisSettings,
    /// The function's own Redis user; `None`: the default user (local runs).
    pub redis_user: Option<RedisUser>,
}

impl AvailabilityConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&env)
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            redis: RedisSettings::from_lookup(lookup)?,
            redis_user: redis_user(lookup)?,
        })
    }
}

/// Reading [`AwsSettings`] from the environment.
impl AwsSettings {
    /// From the variables Lambda sets (`AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), plus `AWS_ENDPOINT_URL` when present, looked
    /// up through `lookup` (the function's config reads the environment; tests pass a map).
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |name: &'static str| lookup(name).filter(|value| !value.is_empty());
        let required = |name: &'static str| var(name).ok_or(ConfigError::Missing(name));
        Ok(Self {
            region: var("AWS_REGION")
                .or_else(|| var("AWS_DEFAULT_REGION"))
                .ok_or(ConfigError::Missing("AWS_REGION"))?,
            endpoint_url: var("AWS_ENDPOINT_URL"),
            credentials: Credentials::new(
                required("AWS_ACCESS_KEY_ID")?,
                required("AWS_SECRET_ACCESS_KEY")?,
                var("AWS_SESSION_TOKEN"),
                None,
                "environment",
            ),
            attempt_timeout: Self::DEFAULT_ATTEMPT_TIMEOUT,
        })
    }
}

/// Reading [`PublisherConfig`] from the environment.
impl PublisherConfig {
    /// The variable holding the ticket queue's URL.
    pub const QUEUE_URL: &'static str = "TICKET_QUEUE_URL";
    /// The variable holding the refund queue's URL (optional).
    pub const REFUND_QUEUE_URL: &'static str = "REFUND_QUEUE_URL";

    /// From a lookup of the environment ([`crate::wiring::config::OutboxStreamConfig`] passes it).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let queue_url = lookup(Self::QUEUE_URL)
            .filter(|url| !url.trim().is_empty())
            .ok_or(ConfigError::Missing(Self::QUEUE_URL))?;
        let refund_queue_url = lookup(Self::REFUND_QUEUE_URL).filter(|url| !url.trim().is_empty());
        Ok(Self {
            queue_url,
            refund_queue_url,
        })
    }
}

/// Reading a [`KeySource`] from the environment.
impl<K: SecretKey> KeySource<K> {
    /// Reads `literal` or `arn` (exactly one must be set), checking a literal key now: a bad
    /// setting stops the function before it takes a request. `invalid` names the literal's
    /// problem in the function's own error type.
    pub fn from_lookup(
        lookup: &impl Fn(&str) -> Option<String>,
        literal: &'static str,
        arn: &'static str,
        invalid: impl FnOnce(K::Invalid) -> ConfigError,
    ) -> Result<Self, ConfigError> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        match (set(literal), set(arn)) {
            (Some(_), Some(_)) => Err(ConfigError::TwoSecretSources { literal, arn }),
            (None, None) => Err(ConfigError::NoSecretSource { literal, arn }),
            (Some(value), None) => K::from_secret(value.into_bytes())
                .map(Self::Literal)
                .map_err(invalid),
            (None, Some(secret_id)) => {
                if secret_id.trim() != secret_id || secret_id.len() > 2048 {
                    return Err(ConfigError::Invalid {
                        name: arn,
                        reason: "expected a Secrets Manager secret ARN".to_owned(),
                    });
                }
                Ok(Self::SecretsManager(SecretRef {
                    secret_id,
                    aws: AwsSettings::from_lookup(lookup)?,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";
    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:lineup-signing-Ab12Cd";
    const AWS: [(&str, &str); 3] = [
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
    ];
    const TABLES: [(&str, &str); 3] = [
        ("SEATS_TABLE", "seats"),
        ("ORDERS_TABLE", "orders"),
        ("OUTBOX_TABLE", "outbox"),
    ];
    /// The events table and how to reach DynamoDB: what join, poll, status and admit add.
    const EVENTS: [(&str, &str); 4] = [
        ("EVENTS_TABLE", "events"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
    ];

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    fn with(
        base: &[(&'static str, &'static str)],
        more: &[(&'static str, &'static str)],
    ) -> Vec<(&'static str, &'static str)> {
        base.iter().chain(more).copied().collect()
    }

    #[test]
    fn minimal_settings_take_defaults() {
        let config = AdmitConfig::from_lookup(&lookup(
            &with(&EVENTS, &[("REDIS_URL", "redis://127.0.0.1:6379")])
                .into_iter()
                .chain(AWS)
                .chain(TABLES)
                .collect::<Vec<_>>(),
        ))
        .expect("admit needs no secret");
        assert_eq!(config.events.table, "events");
        assert_eq!(config.tick, AdmitConfig::DEFAULT_TICK);
        assert_eq!(config.run, AdmitConfig::DEFAULT_RUN);
        assert_eq!(config.redis.timeout, REDIS_DEFAULT_TIMEOUT);
        let join = JoinConfig::from_lookup(&lookup(&with(
            &EVENTS,
            &[
                ("REDIS_URL", "redis://127.0.0.1:6379"),
                (SIGNING_KEY, KEY),
                (REQUIRED_CLAIM, ""),
                (CHALLENGE_EXEMPT_CLAIM, ""),
            ],
        )))
        .unwrap();
        assert_eq!(join.required_claim, None, "empty means none");
        assert_eq!(join.challenge_exempt_claim, None, "empty means nobody");
        assert!(matches!(join.queue.signing_key, KeySource::Literal(_)));
    }

    #[tokio::test]
    async fn tls_redis_urls_are_accepted() {
        // ElastiCache Serverless only speaks TLS: the redis client must be built with it.
        let config = QueueFunctionConfig::from_lookup(&lookup(&[
            ("REDIS_URL", "rediss://cache.example.com:6379"),
            (SIGNING_KEY, KEY),
        ]))
        .unwrap();
        assert!(crate::adapters::redis::queue::RedisQueue::open(&config.redis).is_ok());
    }

    #[test]
    fn each_function_reads_what_it_uses() {
        let redis = [("REDIS_URL", "redis://x")];
        let join = JoinConfig::from_lookup(&lookup(
            &with(
                &redis,
                &[
                    (SIGNING_KEY_SECRET_ARN, ARN),
                    (REQUIRED_CLAIM, "email_verified"),
                    (CHALLENGE_EXEMPT_CLAIM, "custom:pow_exempt"),
                ],
            )
            .into_iter()
            .chain(EVENTS)
            .collect::<Vec<_>>(),
        ))
        .unwrap();
        assert_eq!(join.required_claim.as_deref(), Some("email_verified"));
        assert_eq!(
            join.challenge_exempt_claim.as_deref(),
            Some("custom:pow_exempt")
        );
        match join.queue.signing_key {
            KeySource::SecretsManager(secret) => assert_eq!(secret.secret_id, ARN),
            KeySource::Literal(_) => panic!("the ARN was set"),
        }

        // The queue functions that restore after a cache loss need the events table.
        let poll = |more: &[(&'static str, &'static str)]| {
            PollConfig::from_lookup(&lookup(&with(&with(&redis, &[(SIGNING_KEY, KEY)]), more)))
        };
        assert!(matches!(
            poll(&AWS),
            Err(ConfigError::Missing("EVENTS_TABLE"))
        ));
        assert_eq!(poll(&EVENTS).unwrap().events.table, "events");
        assert!(matches!(
            StatusConfig::from_lookup(&lookup(&redis)),
            Err(ConfigError::Missing("EVENTS_TABLE"))
        ));
        assert!(StatusConfig::from_lookup(&lookup(&with(&redis, &EVENTS))).is_ok());
        // The origin secret is optional (local runs), but when named it must be usable.
        let status = |more: &[(&'static str, &'static str)]| {
            StatusConfig::from_lookup(&lookup(&with(&with(&redis, &EVENTS), more)))
        };
        assert!(status(&[]).unwrap().origin.is_none());
        assert!(matches!(
            status(&[(ORIGIN_SECRET_ARN, ARN)]).unwrap().origin,
            Some(KeySource::SecretsManager(_))
        ));
        assert!(matches!(
            status(&[(ORIGIN_SECRET, "short")]),
            Err(ConfigError::OriginSecret(_))
        ));
        assert!(matches!(
            status(&[(ORIGIN_SECRET, KEY), (ORIGIN_SECRET_ARN, ARN)]),
            Err(ConfigError::TwoSecretSources { .. })
        ));

        let confirm = ConfirmConfig::from_lookup(&lookup(
            &with(&redis, &[(WEBHOOK_SECRET, KEY)])
                .into_iter()
                .chain(AWS)
                .chain(TABLES)
                .collect::<Vec<_>>(),
        ))
        .expect("confirm needs no signing key");
        assert_eq!(confirm.ledger.tables.orders, "orders");

        let hold = HoldConfig::from_lookup(&lookup(
            &with(&redis, &[(SIGNING_KEY, KEY)])
                .into_iter()
                .chain(AWS)
                .chain(TABLES)
                .chain(EVENTS)
                .collect::<Vec<_>>(),
        ))
        .expect("hold needs no webhook secret");
        assert_eq!(hold.ledger.tables.seats, "seats");
        assert_eq!(hold.events.table, "events");
        assert!(
            AvailabilityConfig::from_lookup(&lookup(&redis)).is_ok(),
            "availability needs Redis only"
        );

        assert!(ExpireConfig::from_lookup(&lookup(
            &redis
                .into_iter()
                .chain(AWS)
                .chain(TABLES)
                .collect::<Vec<_>>()
        ))
        .is_ok());
    }

    #[test]
    fn bad_settings_fail_at_start() {
        let queue = |vars: &[(&'static str, &'static str)]| {
            QueueFunctionConfig::from_lookup(&lookup(&with(&AWS, vars)))
        };
        assert!(matches!(
            queue(&[(SIGNING_KEY, KEY)]),
            Err(ConfigError::Missing("REDIS_URL"))
        ));
        assert!(matches!(
            queue(&[("REDIS_URL", "http://x"), (SIGNING_KEY, KEY)]),
            Err(ConfigError::Invalid {
                name: "REDIS_URL",
                ..
            })
        ));
        assert!(matches!(
            queue(&[("REDIS_URL", "redis://x"), (SIGNING_KEY, "short")]),
            Err(ConfigError::SigningKey(_))
        ));
        assert!(matches!(
            queue(&[("REDIS_URL", "redis://x")]),
            Err(ConfigError::NoSecretSource {
                literal: SIGNING_KEY,
                arn: SIGNING_KEY_SECRET_ARN
            })
        ));
        assert!(matches!(
            queue(&[
                ("REDIS_URL", "redis://x"),
                (SIGNING_KEY, KEY),
                (SIGNING_KEY_SECRET_ARN, ARN)
            ]),
            Err(ConfigError::TwoSecretSources { .. })
        ));
        assert!(matches!(
            queue(&[("REDIS_URL", "redis://x"), (SIGNING_KEY_SECRET_ARN, " x ")]),
            Err(ConfigError::Invalid {
                name: SIGNING_KEY_SECRET_ARN,
                ..
            })
        ));
        // The ARN needs the AWS settings to reach Secrets Manager.
        assert!(matches!(
            QueueFunctionConfig::from_lookup(&lookup(&[
                ("REDIS_URL", "redis://x"),
                (SIGNING_KEY_SECRET_ARN, ARN)
            ])),
            Err(ConfigError::Missing("AWS_REGION"))
        ));
        assert!(matches!(
            JoinConfig::from_lookup(&lookup(&with(
                &EVENTS,
                &[
                    ("REDIS_URL", "redis://x"),
                    (SIGNING_KEY, KEY),
                    (REQUIRED_CLAIM, "email verified")
                ]
            ))),
            Err(ConfigError::Invalid {
                name: REQUIRED_CLAIM,
                ..
            })
        ));
        assert!(matches!(
            JoinConfig::from_lookup(&lookup(&with(
                &EVENTS,
                &[
                    ("REDIS_URL", "redis://x"),
                    (SIGNING_KEY, KEY),
                    (CHALLENGE_EXEMPT_CLAIM, "pow exempt")
                ]
            ))),
            Err(ConfigError::Invalid {
                name: CHALLENGE_EXEMPT_CLAIM,
                ..
            })
        ));
        let admit = |more: &[(&'static str, &'static str)]| {
            AdmitConfig::from_lookup(&lookup(&with(
                &[EVENTS.as_slice(), TABLES.as_slice(), AWS.as_slice()].concat(),
                &[[("REDIS_URL", "redis://x")].as_slice(), more].concat(),
            )))
        };
        let pace = admit(&[]).unwrap().pace();
        assert_eq!(
            pace.edge_budget,
            crate::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND
        );
        assert_eq!(pace.draw_disk_bytes, 448 * 1024 * 1024);
        let pace = admit(&[
            ("EDGE_OPENING_REQUESTS_PER_SECOND", "600000"),
            ("EPHEMERAL_STORAGE_MB", "1536"),
        ])
        .unwrap()
        .pace();
        assert_eq!(pace.edge_budget, 600_000);
        assert_eq!(pace.draw_disk_bytes, 1_472 * 1024 * 1024);
        for (name, bad) in [
            ("EDGE_OPENING_REQUESTS_PER_SECOND", "0"),
            ("EDGE_OPENING_REQUESTS_PER_SECOND", "lots"),
            ("EPHEMERAL_STORAGE_MB", "100"),
            ("EPHEMERAL_STORAGE_MB", "20000"),
        ] {
            assert!(
                matches!(admit(&[(name, bad)]), Err(ConfigError::Invalid { name: n, .. }) if n == name),
                "{name}={bad}"
            );
        }
        assert!(matches!(
            AdmitConfig::from_lookup(&lookup(&with(
                &[EVENTS.as_slice(), TABLES.as_slice(), AWS.as_slice()].concat(),
                &[("REDIS_URL", "redis://x"), ("ADMIT_TICK_MS", "0")]
            ))),
            Err(ConfigError::NotMillis {
                name: "ADMIT_TICK_MS",
                ..
            })
        ));
        assert!(matches!(
            AdmitConfig::from_lookup(&lookup(&with(
                &[EVENTS.as_slice(), TABLES.as_slice(), AWS.as_slice()].concat(),
                &[("REDIS_URL", "redis://x"), ("ADMIT_RUN_MS", "soon")]
            ))),
            Err(ConfigError::NotMillis {
                name: "ADMIT_RUN_MS",
                source: Some(_)
            })
        ));
        let confirm = |vars: &[(&'static str, &'static str)]| {
            ConfirmConfig::from_lookup(&lookup(
                &with(&AWS, &[("REDIS_URL", "redis://x")])
                    .into_iter()
                    .chain(TABLES)
                    .chain(vars.iter().copied())
                    .collect::<Vec<_>>(),
            ))
        };
        assert!(matches!(
            confirm(&[(WEBHOOK_SECRET, "short")]),
            Err(ConfigError::WebhookSecret(_))
        ));
        assert!(matches!(
            confirm(&[(WEBHOOK_SECRET, KEY), (WEBHOOK_SECRET_SECRET_ARN, ARN)]),
            Err(ConfigError::TwoSecretSources { .. })
        ));
        assert!(matches!(
            confirm(&[(SIGNING_KEY, KEY)]),
            Err(ConfigError::NoSecretSource {
                literal: WEBHOOK_SECRET,
                ..
            })
        ));
        assert!(matches!(
            ExpireConfig::from_lookup(&lookup(&with(&AWS, &[("REDIS_URL", "redis://x")]))),
            Err(ConfigError::Missing("SEATS_TABLE"))
        ));
    }

    #[test]
    fn a_redis_user_comes_with_its_password_or_not_at_all() {
        const PASSWORD: &str = "redis-password-of-the-status-user";
        let status = |more: &[(&'static str, &'static str)]| {
            StatusConfig::from_lookup(&lookup(&with(
                &with(&[("REDIS_URL", "rediss://cache:6379")], &EVENTS),
                more,
            )))
        };
        // Neither (local runs), or both empty (events/env.json): the default user.
        assert!(status(&[]).unwrap().redis_user.is_none());
        assert!(status(&[(REDIS_USER, ""), (REDIS_PASSWORD_SECRET_ARN, "")])
            .unwrap()
            .redis_user
            .is_none());
        // AWS: the user's name and its password's secret.
        let user = status(&[
            (REDIS_USER, "lineup-status"),
            (REDIS_PASSWORD_SECRET_ARN, ARN),
        ])
        .unwrap()
        .redis_user
        .expect("a user");
        assert_eq!(user.name, "lineup-status");
        assert!(
            matches!(user.password, KeySource::SecretsManager(ref secret) if secret.secret_id == ARN)
        );
        // Locally, the password itself may be given.
        assert!(matches!(
            status(&[(REDIS_USER, "lineup-status"), (REDIS_PASSWORD, PASSWORD)])
                .unwrap()
                .redis_user
                .map(|user| user.password),
            Some(KeySource::Literal(_))
        ));
        // One without the other, a password too short, or a name with a space: refused at start.
        assert!(matches!(
            status(&[(REDIS_USER, "lineup-status")]),
            Err(ConfigError::NoSecretSource {
                literal: REDIS_PASSWORD,
                arn: REDIS_PASSWORD_SECRET_ARN
            })
        ));
        assert!(matches!(
            status(&[(REDIS_PASSWORD_SECRET_ARN, ARN)]),
            Err(ConfigError::Missing(REDIS_USER))
        ));
        assert!(matches!(
            status(&[(REDIS_USER, "lineup-status"), (REDIS_PASSWORD, "short")]),
            Err(ConfigError::RedisPassword(_))
        ));
        assert!(matches!(
            status(&[(REDIS_USER, "lineup status"), (REDIS_PASSWORD, PASSWORD)]),
            Err(ConfigError::Invalid {
                name: REDIS_USER,
                ..
            })
        ));
        // Every function that uses Redis reads it the same way.
        let both = [(REDIS_USER, "lineup-x"), (REDIS_PASSWORD, PASSWORD)];
        assert!(AvailabilityConfig::from_lookup(&lookup(&with(
            &[("REDIS_URL", "redis://x")],
            &both
        )))
        .unwrap()
        .redis_user
        .is_some());
        let printed = format!(
            "{:?}",
            status(&[(REDIS_USER, "lineup-status"), (REDIS_PASSWORD, PASSWORD)]).unwrap()
        );
        assert!(!printed.contains(PASSWORD), "{printed}");
    }

    #[test]
    fn secrets_are_never_printed() {
        let config = JoinConfig::from_lookup(&lookup(&with(
            &EVENTS,
            &[("REDIS_URL", "redis://x"), (SIGNING_KEY, KEY)],
        )))
        .unwrap();
        assert!(!format!("{config:?}").contains(KEY));
    }
}
