//! AWS clients pointed at the local emulator (the serialised moto server the test command
//! starts), with throw-away credentials. Tests create their own uniquely named tables and queues,
//! so they run in parallel without resetting the emulator under each other.

use aws_config::{BehaviorVersion, Region, SdkConfig};

pub fn endpoint_url() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is not set: these tests need the local DynamoDB/SQS emulator. \
             Run the README's test command (scripts/test.sh), which starts it."
        )
    })
}

pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint_url())
        .region(Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "local",
        ))
        .load()
        .await
}

pub async fn dynamo() -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk_config().await)
}

pub async fn sqs() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config().await)
}

pub async fn dynamodb_streams() -> aws_sdk_dynamodbstreams::Client {
    aws_sdk_dynamodbstreams::Client::new(&sdk_config().await)
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}
