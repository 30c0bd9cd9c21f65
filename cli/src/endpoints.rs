//! Where the services are: the local stack `lineup dev` starts, or AWS. Operator commands take
//! the same flags (with the same environment variables the functions read), so one command line
//! works against both.

use std::time::Duration;

use lineup::aws::AwsSettings;
use lineup::ledger::dynamo::{DynamoLedger, TableNames};
use lineup::queue::redis::RedisQueue;

/// The local stack's default ports (`lineup dev` and the operator commands agree on them).
pub const LOCAL_REDIS_PORT: u16 = 6381;
pub const LOCAL_MOTO_PORT: u16 = 5010;

/// Table names `lineup dev` creates (in AWS they come from the stack's outputs).
pub const LOCAL_SEATS_TABLE: &str = "lineup-seats";
pub const LOCAL_ORDERS_TABLE: &str = "lineup-orders";
pub const LOCAL_OUTBOX_TABLE: &str = "lineup-outbox";

/// The flags every operator command takes to find the services.
#[derive(Debug, Clone, clap::Args)]
pub struct EndpointArgs {
    /// Redis (or Valkey) URL; `rediss://` for TLS.
    #[arg(long, env = "REDIS_URL", default_value_t = format!("redis://127.0.0.1:{LOCAL_REDIS_PORT}"))]
    pub redis_url: String,
    /// Speak the Redis Cluster protocol (ElastiCache Serverless).
    #[arg(long, env = "REDIS_CLUSTER", default_value_t = false)]
    pub redis_cluster: bool,
    /// The DynamoDB/SQS endpoint (moto or LocalStack). Ignored with `--aws`.
    #[arg(long, env = "AWS_ENDPOINT_URL", default_value_t = format!("http://127.0.0.1:{LOCAL_MOTO_PORT}"))]
    pub endpoint_url: String,
    /// Talk to AWS itself: region and credentials from AWS_REGION and AWS_ACCESS_KEY_ID /
    /// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
    #[arg(long)]
    pub aws: bool,
    #[arg(long, env = "SEATS_TABLE", default_value = LOCAL_SEATS_TABLE)]
    pub seats_table: String,
    #[arg(long, env = "ORDERS_TABLE", default_value = LOCAL_ORDERS_TABLE)]
    pub orders_table: String,
    #[arg(long, env = "OUTBOX_TABLE", default_value = LOCAL_OUTBOX_TABLE)]
    pub outbox_table: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("the AWS settings are incomplete")]
    Aws(#[source] lineup::config::ConfigError),
    #[error("the Redis URL {url:?} is not usable")]
    Redis {
        url: String,
        #[source]
        source: redis::RedisError,
    },
}

impl EndpointArgs {
    pub fn aws_settings(&self) -> Result<AwsSettings, EndpointError> {
        if self.aws {
            AwsSettings::from_env().map_err(EndpointError::Aws)
        } else {
            Ok(AwsSettings::local(&self.endpoint_url))
        }
    }

    pub fn tables(&self) -> TableNames {
        TableNames {
            seats: self.seats_table.clone(),
            orders: self.orders_table.clone(),
            outbox: self.outbox_table.clone(),
        }
    }

    pub fn ledger(&self) -> Result<DynamoLedger, EndpointError> {
        Ok(DynamoLedger::new(
            lineup::aws::dynamodb(&self.aws_settings()?),
            self.tables(),
        ))
    }

    pub fn queue(&self) -> Result<RedisQueue, EndpointError> {
        let settings = lineup::config::RedisSettings {
            url: self.redis_url.clone(),
            timeout: Duration::from_secs(2),
            cluster: self.redis_cluster,
        };
        RedisQueue::open(&settings).map_err(|source| EndpointError::Redis {
            url: self.redis_url.clone(),
            source,
        })
    }
}

/// A DynamoDB Streams client (only the local tools read streams directly; in AWS the event
/// source mapping does), built like the library's other clients.
pub fn dynamodb_streams(settings: &AwsSettings) -> aws_sdk_dynamodbstreams::Client {
    use aws_sdk_dynamodbstreams::config::{BehaviorVersion, Region};
    let mut config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(settings.region.clone()))
        .credentials_provider(settings.credentials.clone())
        .http_client(lineup::aws::http_client())
        .timeout_config(lineup::aws::timeouts(settings));
    if let Some(endpoint) = &settings.endpoint_url {
        config = config.endpoint_url(endpoint);
    }
    aws_sdk_dynamodbstreams::Client::from_conf(config.build())
}
