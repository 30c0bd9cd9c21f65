//! Where the services are: the local stack `lineup dev` starts, or AWS. Operator commands take
//! the same flags (with the same environment variables the functions read), so one command line
//! works against both.
//!
//! Against AWS (`--aws`) the clients are configured by `aws-config`, the standard credential and
//! region chain every AWS tool follows (environment, `~/.aws/config` profiles with SSO,
//! `credential_process` or roles to assume, container and instance credentials), because that is
//! how operators sign in. The Lambda functions deliberately do without it
//! (`lineup::adapters::aws`: their credentials are always in the environment, and it would add to every
//! binary); the CLI's size does not matter. Both use the same rustls + ring HTTPS client. Against
//! the local stack nothing is looked up: an explicit endpoint and throw-away credentials.

use std::time::Duration;

use aws_config::profile::ProfileFileCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::{ProvideCredentials, SharedCredentialsProvider};
use aws_smithy_types::timeout::TimeoutConfig;
use lineup::adapters::aws::AwsSettings;
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::{DynamoLedger, TableNames};
use lineup::adapters::redis::queue::RedisQueue;

/// The local stack's default ports (`lineup dev` and the operator commands agree on them).
pub const LOCAL_REDIS_PORT: u16 = 6381;
pub const LOCAL_MOTO_PORT: u16 = 5010;

/// Table names `lineup dev` creates (in AWS they come from the stack's outputs).
pub const LOCAL_SEATS_TABLE: &str = "lineup-seats";
pub const LOCAL_ORDERS_TABLE: &str = "lineup-orders";
pub const LOCAL_OUTBOX_TABLE: &str = "lineup-outbox";
pub const LOCAL_EVENTS_TABLE: &str = "lineup-events";

/// Bound on one attempt of an AWS request from the CLI (an operator's command is not in front of
/// API Gateway's 30 s, so it can wait longer than a function does); the whole request gets three.
const AWS_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The flags every operator command takes to find the services.
#[derive(Debug, Clone, clap::Args)]
pub struct EndpointArgs {
    /// Redis (or Valkey) URL; `rediss://` for TLS.
    #[arg(long, env = "REDIS_URL", default_value_t = format!("redis://127.0.0.1:{LOCAL_REDIS_PORT}"))]
    pub redis_url: String,
    /// Speak the Redis Cluster protocol (ElastiCache Serverless).
    #[arg(long, env = "REDIS_CLUSTER", default_value_t = false)]
    pub redis_cluster: bool,
    /// The Redis user to sign in as: in AWS `lineup-operator` (the cache's default user is off,
    /// docs/decisions/0026); locally none, the default user.
    #[arg(long, env = "REDIS_USER", requires = "redis_password_secret")]
    pub redis_user: Option<String>,
    /// The Secrets Manager secret (ARN or name) holding that user's password: the stack's output
    /// `OperatorRedisPasswordArn`, read with the AWS credentials the command uses.
    #[arg(
        long,
        env = "LINEUP_REDIS_PASSWORD_SECRET_ARN",
        requires = "redis_user"
    )]
    pub redis_password_secret: Option<String>,
    /// The DynamoDB/SQS endpoint (moto or LocalStack). Not used with `--aws` (there the standard
    /// AWS settings apply: AWS_ENDPOINT_URL, or a profile's `endpoint_url`).
    #[arg(long, env = "AWS_ENDPOINT_URL", default_value_t = format!("http://127.0.0.1:{LOCAL_MOTO_PORT}"))]
    pub endpoint_url: String,
    /// Talk to AWS itself, with the standard credential and region chain: AWS_ACCESS_KEY_ID and
    /// friends, else the profile (AWS_PROFILE or `default`: static keys, SSO, credential_process,
    /// a role to assume), else container or instance credentials.
    #[arg(long)]
    pub aws: bool,
    /// With `--aws`: the named profile of ~/.aws/config (or AWS_CONFIG_FILE) and
    /// ~/.aws/credentials. Its credentials are used even if AWS_ACCESS_KEY_ID is set, as the AWS
    /// CLI does; so are its region and `endpoint_url` unless overridden.
    #[arg(long, value_name = "NAME", requires = "aws")]
    pub profile: Option<String>,
    /// With `--aws`: the region (default: AWS_REGION, then the profile's `region`).
    #[arg(long, value_name = "REGION", requires = "aws")]
    pub region: Option<String>,
    #[arg(long, env = "SEATS_TABLE", default_value = LOCAL_SEATS_TABLE)]
    pub seats_table: String,
    #[arg(long, env = "ORDERS_TABLE", default_value = LOCAL_ORDERS_TABLE)]
    pub orders_table: String,
    #[arg(long, env = "OUTBOX_TABLE", default_value = LOCAL_OUTBOX_TABLE)]
    pub outbox_table: String,
    #[arg(long, env = "EVENTS_TABLE", default_value = LOCAL_EVENTS_TABLE)]
    pub events_table: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("no AWS region: pass --region, set AWS_REGION, or give {profile} a region")]
    NoRegion { profile: ProfileName },
    #[error(
        "profile `{profile}` gave no AWS credentials (it needs keys, sso_ settings, a \
         credential_process or a role_arn; with SSO, sign in first: \
         `aws sso login --profile {profile}`)"
    )]
    ProfileCredentials {
        profile: String,
        #[source]
        source: aws_credential_types::provider::error::CredentialsError,
    },
    #[error(
        "no AWS credentials: none in the environment (AWS_ACCESS_KEY_ID), {}, the container \
         or the instance; sign in (e.g. `aws sso login`) or pass --profile",
        ProfileName(None)
    )]
    Credentials(#[source] aws_credential_types::provider::error::CredentialsError),
    #[error(
        "could not learn who you are from AWS (STS GetCallerIdentity): an operator's change is \
         recorded under the caller's AWS identity, and is not made without it"
    )]
    Identity(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the Redis URL {url:?} is not usable")]
    Redis {
        url: String,
        #[source]
        source: redis::RedisError,
    },
    #[error("could not read the Redis password from the secret {secret:?}")]
    RedisPasswordSecret {
        secret: String,
        #[source]
        source: Box<aws_sdk_secretsmanager::Error>,
    },
    #[error("the secret {secret:?} does not hold a usable Redis password")]
    RedisPassword {
        secret: String,
        #[source]
        source: lineup::adapters::redis::connection::UnusableRedisPassword,
    },
}

/// The profile an error is about, as the operator named it (or did not).
#[derive(Debug, Clone)]
pub struct ProfileName(Option<String>);

impl std::fmt::Display for ProfileName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(name) => write!(f, "profile `{name}`"),
            None => f.write_str("the default profile (or AWS_PROFILE's)"),
        }
    }
}

/// Where the AWS clients point, and as whom.
#[derive(Debug, Clone)]
pub enum AwsTarget {
    /// A local emulator: explicit endpoint, test credentials (`lineup::adapters::aws`'s own builders).
    Local(AwsSettings),
    /// AWS, as the standard chain resolved it.
    Aws(Box<SdkConfig>),
}

impl AwsTarget {
    pub fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        match self {
            Self::Local(settings) => lineup::adapters::aws::dynamodb(settings),
            Self::Aws(config) => aws_sdk_dynamodb::Client::new(config),
        }
    }

    pub fn dynamodb_streams(&self) -> aws_sdk_dynamodbstreams::Client {
        match self {
            Self::Local(settings) => dynamodb_streams(settings),
            Self::Aws(config) => aws_sdk_dynamodbstreams::Client::new(config),
        }
    }

    /// The caller's AWS identity, its ARN (e.g. `arn:aws:sts::123456789012:assumed-role/Ops/alice`),
    /// as STS's GetCallerIdentity answers for the credentials every other request is signed with:
    /// what the audit trail records an operator's change under. Nothing the caller sets (an
    /// environment variable, a flag) can change it.
    pub async fn caller_identity(&self) -> Result<String, EndpointError> {
        let client = match self {
            Self::Local(settings) => sts(settings),
            Self::Aws(config) => aws_sdk_sts::Client::new(config),
        };
        let identity = client
            .get_caller_identity()
            .send()
            .await
            .map_err(|error| EndpointError::Identity(Box::new(error)))?;
        identity
            .arn
            .ok_or_else(|| EndpointError::Identity("STS answered without an ARN".into()))
    }

    pub fn sqs(&self) -> aws_sdk_sqs::Client {
        match self {
            Self::Local(settings) => lineup::adapters::aws::sqs(settings),
            Self::Aws(config) => aws_sdk_sqs::Client::new(config),
        }
    }
}

impl EndpointArgs {
    /// The local emulator, or (`--aws`) AWS with credentials and region resolved now, so that a
    /// missing sign-in or region is reported before any work starts.
    pub async fn aws_target(&self) -> Result<AwsTarget, EndpointError> {
        if !self.aws {
            return Ok(AwsTarget::Local(AwsSettings::local(&self.endpoint_url)));
        }
        let config = self.load_aws_config().await;
        // Resolved here once to fail early and clearly; the clients resolve (and cache) their own.
        if let Some(credentials) = config.credentials_provider() {
            credentials
                .provide_credentials()
                .await
                .map_err(|source| match &self.profile {
                    Some(profile) => EndpointError::ProfileCredentials {
                        profile: profile.clone(),
                        source,
                    },
                    None => EndpointError::Credentials(source),
                })?;
        }
        if config.region().is_none() {
            return Err(EndpointError::NoRegion {
                profile: ProfileName(self.profile.clone()),
            });
        }
        Ok(AwsTarget::Aws(Box::new(config)))
    }

    async fn load_aws_config(&self) -> SdkConfig {
        let http_client = lineup::adapters::aws::http_client();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .http_client(http_client.clone())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(AWS_ATTEMPT_TIMEOUT)
                    .operation_attempt_timeout(AWS_ATTEMPT_TIMEOUT)
                    .operation_timeout(AWS_ATTEMPT_TIMEOUT * 3)
                    .build(),
            );
        if let Some(region) = &self.region {
            loader = loader.region(Region::new(region.clone()));
        }
        let Some(profile) = &self.profile else {
            return loader.load().await;
        };
        // The profile's region, endpoint and the rest, through the standard chain.
        let config = loader.profile_name(profile).load().await;
        // Its credentials, though, even over AWS_ACCESS_KEY_ID (the standard chain reads the
        // environment first): naming a profile means acting as it, as with the AWS CLI.
        let provider_config = ProviderConfig::default()
            .with_http_client(http_client)
            .with_region(config.region().cloned())
            .with_behavior_version(Some(BehaviorVersion::latest()));
        let credentials = ProfileFileCredentialsProvider::builder()
            .configure(&provider_config)
            .profile_name(profile)
            .build();
        config
            .into_builder()
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .build()
    }

    pub fn tables(&self) -> TableNames {
        TableNames {
            seats: self.seats_table.clone(),
            orders: self.orders_table.clone(),
            outbox: self.outbox_table.clone(),
        }
    }

    /// Who is calling, for the audit trail ([`AwsTarget::caller_identity`]).
    pub async fn operator(&self) -> Result<String, EndpointError> {
        self.aws_target().await?.caller_identity().await
    }

    /// The events table: durable settings, cursors, the audit trail and published draws.
    pub async fn records(&self) -> Result<DynamoEventRecords, EndpointError> {
        Ok(DynamoEventRecords::new(
            self.aws_target().await?.dynamodb(),
            self.events_table.clone(),
        ))
    }

    pub async fn ledger(&self) -> Result<DynamoLedger, EndpointError> {
        Ok(DynamoLedger::new(
            self.aws_target().await?.dynamodb(),
            self.tables(),
        ))
    }

    /// The queue's Redis, signed in as `--redis-user` when given (its password read from
    /// `--redis-password-secret` first).
    pub async fn queue(&self) -> Result<RedisQueue, EndpointError> {
        let settings = lineup::adapters::redis::connection::RedisSettings {
            url: self.redis_url.clone(),
            timeout: Duration::from_secs(2),
            cluster: self.redis_cluster,
        };
        let credentials = match (&self.redis_user, &self.redis_password_secret) {
            (Some(user), Some(secret)) => Some(self.redis_credentials(user, secret).await?),
            _ => None,
        };
        RedisQueue::open_as(&settings, credentials.as_ref()).map_err(|source| {
            EndpointError::Redis {
                url: self.redis_url.clone(),
                source,
            }
        })
    }

    /// `user`'s password, from the Secrets Manager `secret`.
    async fn redis_credentials(
        &self,
        user: &str,
        secret: &str,
    ) -> Result<lineup::adapters::redis::connection::RedisCredentials, EndpointError> {
        use lineup::domain::keys::SecretKey;
        let client = crate::secret_revocation::client(&self.aws_target().await?);
        let answer = client
            .get_secret_value()
            .secret_id(secret)
            .send()
            .await
            .map_err(|error| EndpointError::RedisPasswordSecret {
                secret: secret.to_owned(),
                source: Box::new(error.into()),
            })?;
        let bytes = answer
            .secret_string()
            .unwrap_or_default()
            .as_bytes()
            .to_vec();
        let password = lineup::adapters::redis::connection::RedisPassword::from_secret(bytes)
            .map_err(|source| EndpointError::RedisPassword {
                secret: secret.to_owned(),
                source,
            })?;
        Ok(lineup::adapters::redis::connection::RedisCredentials {
            user: user.to_owned(),
            password,
        })
    }
}

/// An STS client (only the CLI asks who its caller is), built like the library's other clients.
pub fn sts(settings: &AwsSettings) -> aws_sdk_sts::Client {
    use aws_sdk_sts::config::{BehaviorVersion, Region};
    let mut config = aws_sdk_sts::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(settings.region.clone()))
        .credentials_provider(settings.credentials.clone())
        .http_client(lineup::adapters::aws::http_client())
        .timeout_config(lineup::adapters::aws::timeouts(settings));
    if let Some(endpoint) = &settings.endpoint_url {
        config = config.endpoint_url(endpoint);
    }
    aws_sdk_sts::Client::from_conf(config.build())
}

/// A DynamoDB Streams client (only the local tools read streams directly; in AWS the event
/// source mapping does), built like the library's other clients.
pub fn dynamodb_streams(settings: &AwsSettings) -> aws_sdk_dynamodbstreams::Client {
    use aws_sdk_dynamodbstreams::config::{BehaviorVersion, Region};
    let mut config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(settings.region.clone()))
        .credentials_provider(settings.credentials.clone())
        .http_client(lineup::adapters::aws::http_client())
        .timeout_config(lineup::adapters::aws::timeouts(settings));
    if let Some(endpoint) = &settings.endpoint_url {
        config = config.endpoint_url(endpoint);
    }
    aws_sdk_dynamodbstreams::Client::from_conf(config.build())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::commands::{Cli, Command, EventAction};

    fn show(args: &[&str]) -> Result<super::EndpointArgs, clap::Error> {
        let cli = Cli::try_parse_from(["lineup", "event", "show", "gala"].iter().chain(args))?;
        match cli.command {
            Command::Event {
                action: EventAction::Show { endpoints, .. },
                ..
            } => Ok(endpoints),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn profile_and_region_go_with_aws_only() {
        let parsed = show(&["--aws", "--profile", "ops", "--region", "eu-west-1"]).unwrap();
        assert!(parsed.aws);
        assert_eq!(parsed.profile.as_deref(), Some("ops"));
        assert_eq!(parsed.region.as_deref(), Some("eu-west-1"));
        // Against the local stack a profile or region would be silently ignored: refused.
        assert!(show(&["--profile", "ops"]).is_err());
        assert!(show(&["--region", "eu-west-1"]).is_err());
    }

    #[tokio::test]
    async fn the_local_stack_needs_no_credentials_or_region_lookup() {
        let parsed = show(&["--endpoint-url", "http://127.0.0.1:1"]).unwrap();
        match parsed.aws_target().await.unwrap() {
            super::AwsTarget::Local(settings) => {
                assert_eq!(settings.endpoint_url.as_deref(), Some("http://127.0.0.1:1"));
            }
            other => panic!("{other:?}"),
        }
    }
}
