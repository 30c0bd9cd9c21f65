//! Counting DynamoDB requests: a client whose every request sent is counted by operation (from
//! `X-Amz-Target`), for the benchmarks that report requests per operation.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Counts every DynamoDB request sent, by operation.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<Mutex<BTreeMap<String, u64>>>);

impl RequestCounter {
    /// The counts so far, starting again from zero.
    pub fn take(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("?");
        let operation = target.rsplit('.').next().unwrap_or(target).to_owned();
        *self.0.lock().unwrap().entry(operation).or_default() += 1;
        Ok(())
    }
}

/// A DynamoDB client on the local emulator that counts its requests.
pub fn counting_dynamodb() -> (aws_sdk_dynamodb::Client, RequestCounter) {
    let counter = RequestCounter::default();
    let settings = crate::aws::settings();
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new(
            settings.region.clone(),
        ))
        .credentials_provider(settings.credentials.clone())
        .http_client(lineup::adapters::aws::http_client())
        .endpoint_url(crate::aws::endpoint_url())
        .interceptor(counter.clone())
        .build();
    (aws_sdk_dynamodb::Client::from_conf(config), counter)
}
