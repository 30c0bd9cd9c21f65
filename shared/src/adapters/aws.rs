//! AWS SDK clients, built lean. `aws-config`'s credential chain (SSO, STS web identity, IMDS...)
//! and the aws-lc crypto library would add a third to every binary; in Lambda the credentials
//! and region are in the environment, and ring serves TLS for both the SDK and Redis. The same
//! builder points the clients at LocalStack or moto through `AWS_ENDPOINT_URL` (DynamoDB, SQS and
//! Secrets Manager alike).

use std::time::Duration;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region, SharedHttpClient};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use aws_smithy_types::timeout::TimeoutConfig;

/// Where the AWS APIs are and who is calling them.
#[derive(Debug, Clone)]
pub struct AwsSettings {
    /// `AWS_REGION` (or `AWS_DEFAULT_REGION`), e.g. `us-east-1`.
    pub region: String,
    /// `AWS_ENDPOINT_URL`: LocalStack or moto; unset in AWS.
    pub endpoint_url: Option<String>,
    /// The static credentials every request is signed with (Lambda's, from the environment).
    pub credentials: Credentials,
    /// Bound on one attempt of a request (the SDK retries an attempt that timed out); the whole
    /// request is bounded at three times this. Keeps a stalled connection from hanging a request
    /// until API Gateway's 30 s timeout: it answers 503 instead.
    pub attempt_timeout: Duration,
}

impl AwsSettings {
    /// The `attempt_timeout` the functions use in AWS.
    pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
}

impl AwsSettings {
    /// A local emulator at `endpoint_url`, with throw-away credentials. The emulator serialises
    /// DynamoDB requests, so under a race a request may queue for seconds: a longer bound.
    pub fn local(endpoint_url: &str) -> Self {
        Self {
            region: "us-east-1".to_owned(),
            endpoint_url: Some(endpoint_url.to_owned()),
            credentials: Credentials::new("test", "test", None, None, "local"),
            attempt_timeout: Duration::from_secs(30),
        }
    }
}

/// HTTPS through rustls with ring.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// The bounds [`AwsSettings::attempt_timeout`] sets on every client's requests.
pub fn timeouts(settings: &AwsSettings) -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(settings.attempt_timeout)
        .operation_attempt_timeout(settings.attempt_timeout)
        .operation_timeout(settings.attempt_timeout * 3)
        .build()
}

macro_rules! client {
    ($name:ident, $sdk:ident) => {
        /// A client of this AWS API from `settings`: region, credentials, endpoint, timeouts,
        /// and TLS through ring.
        pub fn $name(settings: &AwsSettings) -> $sdk::Client {
            let mut config = $sdk::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(Region::new(settings.region.clone()))
                .credentials_provider(settings.credentials.clone())
                .http_client(http_client())
                .timeout_config(timeouts(settings));
            if let Some(endpoint) = &settings.endpoint_url {
                config = config.endpoint_url(endpoint);
            }
            $sdk::Client::from_conf(config.build())
        }
    };
}

client!(dynamodb, aws_sdk_dynamodb);
client!(sqs, aws_sdk_sqs);
client!(secretsmanager, aws_sdk_secretsmanager);
