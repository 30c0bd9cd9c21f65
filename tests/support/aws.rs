//! AWS clients pointed at the local emulator (the serialised moto server the test command
//! starts), with throw-away credentials. Tests create their own uniquely named tables and queues,
//! so they run in parallel without resetting the emulator under each other.

use lineup::adapters::aws::AwsSettings;

pub fn endpoint_url() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is not set: these tests need the local DynamoDB/SQS emulator. \
             Run the README's test command (scripts/test.sh), which starts it."
        )
    })
}

pub fn settings() -> AwsSettings {
    AwsSettings::local(&endpoint_url())
}

pub async fn dynamo() -> aws_sdk_dynamodb::Client {
    lineup::adapters::aws::dynamodb(&settings())
}

pub async fn sqs() -> aws_sdk_sqs::Client {
    lineup::adapters::aws::sqs(&settings())
}

pub async fn dynamodb_streams() -> aws_sdk_dynamodbstreams::Client {
    lineup_cli::endpoints::dynamodb_streams(&settings())
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}
