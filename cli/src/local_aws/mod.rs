//! `lineup local-aws`: makes, on a LocalStack or a moto, every AWS data resource the functions
//! need, from `template.yaml`'s own resources and under the names `events/env.json` gives them,
//! so `sam local invoke` and `sam local start-api` find what the stack would deploy. `lineup dev`
//! prepares its emulator the same way.
//!
//! - [`plan`]: which resources (those the functions' environments refer to) and their names;
//! - [`tables`], [`queues`], [`secrets`]: each kind made from the template, read back and
//!   compared with it, and removed;
//! - [`samples`]: the samples' event, and the live values some samples need (a signed webhook).
//!
//! [`setup`] looks at everything first: a resource that exists but differs from the template
//! (another key, no stream, a queue without its redrive) stops it before anything is made, with
//! the difference named; one that matches is left alone, so a second run changes nothing.
//! [`teardown`] removes what setup makes.

pub mod plan;
pub mod queues;
pub mod samples;
pub mod secrets;
pub mod tables;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use lineup::adapters::aws::AwsSettings;
use lineup::adapters::dynamo::TableNames;
use lineup::adapters::redis::queue::RedisQueue;

use crate::event_admin;
use plan::{Kind, PlanError, ResourcePlan};
pub use samples::SAMPLES_EVENT;

#[derive(Debug, Clone, clap::Args)]
pub struct LocalAwsArgs {
    /// The emulator: LocalStack (`http://localhost:4566`) or moto. Never AWS itself.
    #[arg(long, env = "AWS_ENDPOINT_URL", value_name = "URL")]
    pub endpoint_url: String,
    /// The region the functions run in (`sam local invoke --region`, default us-east-1):
    /// LocalStack keeps each region's resources apart.
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    pub region: String,
    /// Read the names from this env.json instead of the built-in `events/env.json`.
    #[arg(long, value_name = "FILE")]
    pub env_vars: Option<PathBuf>,
    /// Also seed and open the samples' event (`demo`: seats, 12,000 KRW each) on
    /// this Redis, unless the events table has it already.
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<String>,
    /// Remove what setup makes (tables with their items, queues, secrets) instead.
    #[arg(long, conflicts_with = "redis_url")]
    pub teardown: bool,
    /// Make nothing: print `events/confirm.json` for this order (held with `hold.json`), its
    /// amount and currency read from the orders table and signed now with the webhook secret the
    /// functions read, for `sam local invoke ConfirmFunction -e`.
    #[arg(long, value_name = "ORDER_ID", conflicts_with_all = ["redis_url", "teardown"])]
    pub confirm: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LocalAwsError {
    #[error("{0} is AWS itself; `lineup local-aws` only prepares an emulator (LocalStack, moto)")]
    RealAws(String),
    #[error("could not read {0}")]
    EnvVars(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Table(#[from] tables::TableError),
    #[error(transparent)]
    Queue(#[from] queues::QueueError),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error(
        "what exists differs from template.yaml, so nothing was made (`lineup local-aws \
         --teardown` removes it):\n{}",
        .0.join("\n")
    )]
    Differs(Vec<String>),
    #[error("the samples' event")]
    SamplesEvent(#[from] event_admin::AdminError),
    #[error(transparent)]
    Sample(#[from] samples::SampleError),
    #[error("could not open Redis at {url}")]
    Redis {
        url: String,
        #[source]
        source: redis::RedisError,
    },
}

/// What happened to one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created,
    /// It was there, as the template declares it.
    Exists,
    /// A secret that was there with a value other than the development one (kept).
    ExistsWithOtherValue,
    Removed,
    /// Teardown found nothing to remove.
    Absent,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: Kind,
    pub logical_id: String,
    pub name: String,
    pub outcome: Outcome,
    /// The table's shape, the queue's URL, the variable that names a secret.
    pub detail: String,
}

/// What setup or teardown did, resource by resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub lines: Vec<Line>,
    /// Resources the functions refer to that env.json leaves unnamed (not made).
    pub skipped: Vec<plan::Skipped>,
    /// Each queue's URL, by logical id.
    pub queue_urls: BTreeMap<String, String>,
}

impl Report {
    /// How many resources were created or removed: 0 on a second run.
    pub fn changed(&self) -> usize {
        self.lines
            .iter()
            .filter(|line| matches!(line.outcome, Outcome::Created | Outcome::Removed))
            .count()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .lines
            .iter()
            .map(|line| line.name.len())
            .max()
            .unwrap_or(0);
        for line in &self.lines {
            let outcome = match line.outcome {
                Outcome::Created => "created",
                Outcome::Exists => "exists",
                Outcome::ExistsWithOtherValue => "exists (another value: kept)",
                Outcome::Removed => "removed",
                Outcome::Absent => "absent",
            };
            write!(
                f,
                "  {:<6}  {:<width$}  {:<7}  {}",
                line.kind.word(),
                line.name,
                outcome,
                line.logical_id
            )?;
            if line.detail.is_empty() {
                writeln!(f)?;
            } else {
                writeln!(f, " ({})", line.detail)?;
            }
        }
        for skipped in &self.skipped {
            writeln!(
                f,
                "  not made: {} (env.json leaves {} empty, so the functions go without it)",
                skipped.logical_id, skipped.variable
            )?;
        }
        Ok(())
    }
}

/// The plan for `args`: the built-in env.json's names, or those of `--env-vars`.
pub fn plan_for(args: &LocalAwsArgs) -> Result<ResourcePlan, LocalAwsError> {
    Ok(match &args.env_vars {
        None => ResourcePlan::built_in()?,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| LocalAwsError::EnvVars(path.clone(), source))?;
            ResourcePlan::read(tables::TEMPLATE, &text)?
        }
    })
}

/// The emulator's settings, refusing AWS's own endpoints.
pub fn emulator(endpoint_url: &str, region: &str) -> Result<AwsSettings, LocalAwsError> {
    let host = endpoint_url
        .split("://")
        .nth(1)
        .unwrap_or(endpoint_url)
        .split(['/', ':'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if host.ends_with(".amazonaws.com") || host.ends_with(".amazonaws.com.cn") {
        return Err(LocalAwsError::RealAws(endpoint_url.to_owned()));
    }
    Ok(AwsSettings {
        region: region.to_owned(),
        ..AwsSettings::local(endpoint_url)
    })
}

/// `lineup local-aws`: setup (and the samples' event with `--redis-url`) or teardown, printed.
pub async fn run(args: &LocalAwsArgs) -> Result<(), LocalAwsError> {
    let aws = emulator(&args.endpoint_url, &args.region)?;
    let plan = plan_for(args)?;
    let source = args
        .env_vars
        .as_ref()
        .map_or("events/env.json (built in)".to_owned(), |path| {
            path.display().to_string()
        });
    if let Some(order) = &args.confirm {
        let event = samples::signed_confirm_for(&aws, &plan, order, SystemTime::now()).await?;
        println!("{event:#}");
        return Ok(());
    }
    if args.teardown {
        println!(
            "lineup local-aws: removing from {} ({}) what setup makes:",
            args.endpoint_url, args.region
        );
        print!("{}", teardown(&aws, &plan).await?);
        return Ok(());
    }
    println!(
        "lineup local-aws: {} ({}), from template.yaml, named as in {source}:",
        args.endpoint_url, args.region
    );
    let report = setup(&aws, &plan).await?;
    print!("{report}");
    println!(
        "  {} made, {} already there as the template declares them",
        report.changed(),
        report.lines.len() - report.changed()
    );
    if let Some(redis_url) = &args.redis_url {
        let queue = RedisQueue::new(redis_url, Duration::from_secs(2)).map_err(|source| {
            LocalAwsError::Redis {
                url: redis_url.clone(),
                source,
            }
        })?;
        match samples::open_samples_event(&aws, &plan, &queue).await? {
            Some(settings) => println!(
                "  the samples' event: {}",
                event_admin::describe(&samples::samples_event(), &settings)
            ),
            None => println!(
                "  the samples' event `{SAMPLES_EVENT}` is in the events table already: kept as it is"
            ),
        }
    }
    println!();
    println!("The functions find these through events/env.json (sam local invoke --env-vars):");
    println!("  AWS_ENDPOINT_URL: this endpoint as a container reaches it (env.json: host.docker.internal:4566)");
    println!(
        "  AWS_REGION: {} (sam local invoke --region {})",
        args.region, args.region
    );
    for (logical_id, url) in &report.queue_urls {
        if let Some(variable) = plan
            .resources
            .iter()
            .find(|resource| &resource.logical_id == logical_id)
            .and_then(|resource| resource.variable.as_deref())
        {
            println!("  {variable}: {url} (any host will do: requests go to AWS_ENDPOINT_URL, the queue is found by its name)");
        }
    }
    Ok(())
}

/// What is there, before anything is made.
enum Found {
    Missing,
    Matches,
    OtherValue,
}

/// Makes every resource of `plan` that is missing, after checking that those present match the
/// template; a second run changes nothing.
pub async fn setup(aws: &AwsSettings, plan: &ResourcePlan) -> Result<Report, LocalAwsError> {
    let dynamodb = lineup::adapters::aws::dynamodb(aws);
    let sqs = lineup::adapters::aws::sqs(aws);
    let secrets_manager = lineup::adapters::aws::secretsmanager(aws);

    // Look first: what exists must be what the template declares.
    let mut found = Vec::new();
    let mut queues_found: BTreeMap<&str, queues::FoundQueue> = BTreeMap::new();
    let mut differences = Vec::new();
    for resource in &plan.resources {
        let (id, name) = (resource.logical_id.as_str(), resource.name.as_str());
        let state = match resource.kind {
            Kind::Table => match tables::describe(&dynamodb, id, name).await? {
                None => Found::Missing,
                Some(shape) => {
                    let declared = tables::shape(tables::TEMPLATE, id)?;
                    for difference in shape.differences(&declared) {
                        differences.push(format!("  table {name} ({id}): {difference}"));
                    }
                    Found::Matches
                }
            },
            Kind::Queue => match queues::find(&sqs, name).await? {
                None => Found::Missing,
                Some(queue) => {
                    let declared = queues::declared(tables::TEMPLATE, id)?;
                    let dead_letter_arn = dead_letter_arn(plan, &declared, &queues_found);
                    for difference in
                        queues::differences(&queue, &declared, dead_letter_arn.as_deref())
                    {
                        differences.push(format!("  queue {name} ({id}): {difference}"));
                    }
                    queues_found.insert(id, queue);
                    Found::Matches
                }
            },
            Kind::Secret => {
                let value = secrets::development_value(id)
                    .ok_or_else(|| secrets::SecretError::NoDevelopmentValue(id.to_owned()))?;
                match secrets::current(&secrets_manager, name).await? {
                    None => Found::Missing,
                    Some(current) if current == value => Found::Matches,
                    Some(_) => Found::OtherValue,
                }
            }
        };
        found.push(state);
    }
    if !differences.is_empty() {
        return Err(LocalAwsError::Differs(differences));
    }

    let mut report = Report {
        skipped: plan.skipped.clone(),
        ..Report::default()
    };
    for (resource, state) in plan.resources.iter().zip(found) {
        let (id, name) = (resource.logical_id.as_str(), resource.name.as_str());
        let outcome = match state {
            Found::Missing => Outcome::Created,
            Found::Matches => Outcome::Exists,
            Found::OtherValue => Outcome::ExistsWithOtherValue,
        };
        let detail = match resource.kind {
            Kind::Table => {
                if let Found::Missing = state {
                    tables::create(&dynamodb, id, name).await?;
                }
                tables::shape(tables::TEMPLATE, id)?.normalised().summary()
            }
            Kind::Queue => {
                let queue = match queues_found.get(id) {
                    Some(queue) => queue.clone(),
                    None => {
                        let declared = queues::declared(tables::TEMPLATE, id)?;
                        let dead_letter_arn = dead_letter_arn(plan, &declared, &queues_found);
                        queues::create(&sqs, name, &declared, dead_letter_arn.as_deref()).await?
                    }
                };
                report.queue_urls.insert(id.to_owned(), queue.url.clone());
                let url = queue.url.clone();
                queues_found.insert(id, queue);
                url
            }
            Kind::Secret => {
                if let Found::Missing = state {
                    let value = secrets::development_value(id)
                        .ok_or_else(|| secrets::SecretError::NoDevelopmentValue(id.to_owned()))?;
                    secrets::create(&secrets_manager, name, value).await?;
                }
                resource.variable.clone().unwrap_or_default()
            }
        };
        report.lines.push(Line {
            kind: resource.kind,
            logical_id: id.to_owned(),
            name: name.to_owned(),
            outcome,
            detail,
        });
    }
    Ok(report)
}

/// The ARN of `declared`'s dead-letter queue, once it has been found or made.
fn dead_letter_arn(
    plan: &ResourcePlan,
    declared: &queues::DeclaredQueue,
    found: &BTreeMap<&str, queues::FoundQueue>,
) -> Option<String> {
    let dead_letter = declared.dead_letter.as_ref()?;
    plan.name_of(&dead_letter.logical_id)?;
    found
        .get(dead_letter.logical_id.as_str())
        .and_then(|queue| queue.arn())
        .map(str::to_owned)
}

/// Removes every resource of `plan`, the queues' before their dead-letter queues.
pub async fn teardown(aws: &AwsSettings, plan: &ResourcePlan) -> Result<Report, LocalAwsError> {
    let dynamodb = lineup::adapters::aws::dynamodb(aws);
    let sqs = lineup::adapters::aws::sqs(aws);
    let secrets_manager = lineup::adapters::aws::secretsmanager(aws);
    let mut report = Report::default();
    for resource in plan.resources.iter().rev() {
        let (id, name) = (resource.logical_id.as_str(), resource.name.as_str());
        let removed = match resource.kind {
            Kind::Table => tables::delete(&dynamodb, id, name).await?,
            Kind::Queue => queues::delete(&sqs, name).await?,
            Kind::Secret => secrets::delete(&secrets_manager, name).await?,
        };
        report.lines.push(Line {
            kind: resource.kind,
            logical_id: id.to_owned(),
            name: name.to_owned(),
            outcome: if removed {
                Outcome::Removed
            } else {
                Outcome::Absent
            },
            detail: resource.variable.clone().unwrap_or_default(),
        });
    }
    Ok(report)
}

/// The table names of `plan` (setup made them).
pub fn table_names(plan: &ResourcePlan) -> Result<(TableNames, String), PlanError> {
    let name = |logical_id: &str| {
        plan.name_of(logical_id)
            .map(str::to_owned)
            .ok_or_else(|| PlanError::Unnamed {
                variable: "a table variable".to_owned(),
                logical_id: logical_id.to_owned(),
            })
    };
    Ok((
        TableNames {
            seats: name(tables::SEATS)?,
            orders: name(tables::ORDERS)?,
            outbox: name(tables::OUTBOX)?,
        },
        name(tables::EVENTS)?,
    ))
}
