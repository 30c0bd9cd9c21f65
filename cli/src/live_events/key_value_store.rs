//! The store of live events in AWS: the CloudFront KeyValueStore the stack declares
//! (`LiveEventsStore`), key = an event id, value "1". Its API (`cloudfront-keyvaluestore`) is
//! signed with SigV4A; every write names the store's current ETag, so an add reads it first
//! (DescribeKeyValueStore), and tries again if another writer moved it in between.

use async_trait::async_trait;
use aws_sdk_cloudfrontkeyvaluestore::error::SdkError;
use aws_sdk_cloudfrontkeyvaluestore::operation::get_key::GetKeyError;
use aws_sdk_cloudfrontkeyvaluestore::operation::put_key::PutKeyError;
use aws_sdk_cloudfrontkeyvaluestore::Client;
use lineup::domain::ids::EventId;

use super::{LiveEvents, LiveEventsError};

/// The value every live event's key holds: the function asks only whether the key exists.
const LIVE: &str = "1";

/// How many times an add reads the ETag and writes, when other writers keep moving it.
const ATTEMPTS: usize = 3;

pub struct KeyValueStoreLiveEvents {
    client: Client,
    /// The store's ARN (`arn:aws:cloudfront::<account>:key-value-store/<id>`).
    store: String,
}

impl KeyValueStoreLiveEvents {
    /// The store `store_arn`, with the operator's AWS settings (`lineup event ... --aws`).
    pub fn new(config: &aws_config::SdkConfig, store_arn: impl Into<String>) -> Self {
        Self {
            client: Client::new(config),
            store: store_arn.into(),
        }
    }

    fn failure(
        &self,
        action: &'static str,
        event: &EventId,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> LiveEventsError {
        LiveEventsError {
            store: self.store.clone(),
            action,
            event: event.as_str().to_owned(),
            source: Box::new(source),
        }
    }
}

#[async_trait]
impl LiveEvents for KeyValueStoreLiveEvents {
    async fn add(&self, event: &EventId) -> Result<(), LiveEventsError> {
        if self.exists(event).await? {
            return Ok(());
        }
        let mut attempt = 1;
        loop {
            let described = self
                .client
                .describe_key_value_store()
                .kvs_arn(&self.store)
                .send()
                .await
                .map_err(|error| self.failure("add", event, error))?;
            let written = self
                .client
                .put_key()
                .kvs_arn(&self.store)
                .key(event.as_str())
                .value(LIVE)
                .if_match(described.e_tag())
                .send()
                .await;
            match written {
                Ok(_) => return Ok(()),
                // Another writer changed the store since its ETag was read: read it again.
                Err(SdkError::ServiceError(conflict))
                    if matches!(conflict.err(), PutKeyError::ConflictException(_))
                        && attempt < ATTEMPTS =>
                {
                    attempt += 1;
                }
                Err(error) => return Err(self.failure("add", event, error)),
            }
        }
    }

    async fn exists(&self, event: &EventId) -> Result<bool, LiveEventsError> {
        let found = self
            .client
            .get_key()
            .kvs_arn(&self.store)
            .key(event.as_str())
            .send()
            .await;
        match found {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(missing))
                if matches!(missing.err(), GetKeyError::ResourceNotFoundException(_)) =>
            {
                Ok(false)
            }
            Err(error) => Err(self.failure("look up", event, error)),
        }
    }
}
