//! Access codes in the events table (docs/decisions/0030-access-codes.md): one item per code,
//! `pk` = `CODES#<eventId>#<shard>` (the hash's first hex digit: an event's codes spread over
//! 16 partitions, so the opening's bindings are not one partition's 1,000 writes a second, and
//! an operator lists them with 16 Queries), `sk` = `CODE#<hash>`; never under the event's own
//! `EVENT#` partition, which a restore reads whole.
//!
//! | attribute | what |
//! |---|---|
//! | `uses_allowed` | how many distinct accounts the code lets in |
//! | `bound_count` | how many are bound (0 at creation) |
//! | `bound_accounts` | the string set of those accounts (absent until the first) |
//! | `expires_at_ms` | after it the code lets nobody in (absent: never) |
//! | `revoked_at_ms` | set by a revocation (absent: not revoked) |
//! | `code_group` | the code's group (absent: none) |
//! | `created_at_ms` | when it was created |
//!
//! The code itself is never stored: only its hash for the event.

use std::time::SystemTime;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use futures::{StreamExt, TryStreamExt};

use crate::adapters::dynamo::event_records::DynamoEventRecords;
use crate::adapters::dynamo::items::{n, s, Item};
use crate::adapters::dynamo::{all_items, store_error};
use crate::application::error::LineupError;
use crate::application::ports::access_codes::{
    AccessCodeBook, AccessCodes, CodeAccepted, CodeCounts,
};
use crate::domain::access_code::{AccessCode, CodeHash, CodeTerms};
use crate::domain::clock::unix_millis;
use crate::domain::ids::{CustomerId, EventId, GroupName};

/// Writes an operator's command keeps in flight at once.
const WRITES_IN_FLIGHT: usize = 16;

/// Access codes in the events table.
#[derive(Clone)]
pub struct DynamoAccessCodes {
    client: Client,
    table: String,
}

fn shard_pk(event: &EventId, shard: char) -> AttributeValue {
    s(format!("CODES#{event}#{shard}"))
}

fn code_sk(hash: &CodeHash) -> AttributeValue {
    s(format!("CODE#{}", hash.as_str()))
}

fn number(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

fn bound_accounts(item: &Item) -> &[String] {
    item.get("bound_accounts")
        .and_then(|value| value.as_ss().ok())
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn group(item: &Item) -> Option<GroupName> {
    GroupName::parse(item.get("code_group")?.as_s().ok()?).ok()
}

/// Whether a stored code lets anyone in at `now`: not revoked, not expired.
fn in_force(item: &Item, now_ms: u64) -> bool {
    !item.contains_key("revoked_at_ms")
        && number(item, "expires_at_ms").is_none_or(|expires| expires > now_ms)
}

impl DynamoAccessCodes {
    /// Codes in the events table named `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// Codes in the same table, through the same client, as `records`.
    pub fn in_events_table(records: &DynamoEventRecords) -> Self {
        Self::new(records.client.clone(), records.table())
    }

    /// Every code item of `event`, from its 16 partitions.
    async fn all_codes(&self, event: &EventId) -> Result<Vec<Item>, LineupError> {
        let shards = futures::stream::iter(CodeHash::SHARDS)
            .map(|shard| {
                all_items(
                    self.client
                        .query()
                        .table_name(&self.table)
                        .key_condition_expression("pk = :pk")
                        .expression_attribute_values(":pk", shard_pk(event, shard))
                        .consistent_read(true)
                        .into_paginator()
                        .items()
                        .send(),
                )
            })
            .buffer_unordered(WRITES_IN_FLIGHT)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(shards.into_iter().flatten().collect())
    }

    /// Stores one new code (refused, as a failure, if its hash is stored already).
    async fn put_code(
        &self,
        event: &EventId,
        code: &AccessCode,
        terms: &CodeTerms,
        now_ms: u64,
    ) -> Result<(), LineupError> {
        let hash = code.hash(event);
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", shard_pk(event, hash.shard()))
            .item("sk", code_sk(&hash))
            .item("uses_allowed", n(terms.uses))
            .item("bound_count", n(0))
            .item("created_at_ms", n(now_ms))
            .condition_expression("attribute_not_exists(sk)");
        if let Some(expires) = terms.expires_at {
            put = put.item("expires_at_ms", n(unix_millis(expires)));
        }
        if let Some(group) = &terms.group {
            put = put.item("code_group", s(group.as_str()));
        }
        // A hash already stored fails its condition: reported as a failure (never an
        // overwrite of a code and its bindings), with DynamoDB's error as the source.
        put.send().await.map_err(store_error)?;
        Ok(())
    }

    /// Marks one code revoked at `now_ms`; `false` when it is unknown or was revoked already.
    async fn revoke_one(
        &self,
        event: &EventId,
        hash: &CodeHash,
        now_ms: u64,
    ) -> Result<bool, LineupError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", shard_pk(event, hash.shard()))
            .key("sk", code_sk(hash))
            .update_expression("SET revoked_at_ms = :now")
            .condition_expression("attribute_exists(sk) AND attribute_not_exists(revoked_at_ms)")
            .expression_attribute_values(":now", n(now_ms))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(service))
                if matches!(
                    service.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                Ok(false)
            }
            Err(other) => Err(store_error(other)),
        }
    }

    async fn revoke_hashes(
        &self,
        event: &EventId,
        hashes: Vec<CodeHash>,
        now: SystemTime,
    ) -> Result<u64, LineupError> {
        let now_ms = unix_millis(now);
        let revoked: Vec<bool> = futures::stream::iter(hashes)
            .map(|hash| async move { self.revoke_one(event, &hash, now_ms).await })
            .buffer_unordered(WRITES_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(revoked.into_iter().filter(|newly| *newly).count() as u64)
    }
}

#[async_trait]
impl AccessCodes for DynamoAccessCodes {
    async fn accept(
        &self,
        event: &EventId,
        code: &AccessCode,
        customer: &CustomerId,
        now: SystemTime,
    ) -> Result<CodeAccepted, LineupError> {
        let hash = code.hash(event);
        let now_ms = unix_millis(now);
        // One conditional write binds a new account: the code exists for this event, is in
        // force, has a use left and does not have this account yet. Two accounts racing for the
        // last use are two writes on one item: DynamoDB applies one, the other's condition fails.
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", shard_pk(event, hash.shard()))
            .key("sk", code_sk(&hash))
            .update_expression(
                "ADD bound_accounts :customers, bound_count :one SET last_bound_at_ms = :now",
            )
            .condition_expression(
                "attribute_exists(sk) AND attribute_not_exists(revoked_at_ms) \
                 AND (attribute_not_exists(expires_at_ms) OR expires_at_ms > :now) \
                 AND bound_count < uses_allowed \
                 AND NOT contains(bound_accounts, :customer)",
            )
            .expression_attribute_values(
                ":customers",
                AttributeValue::Ss(vec![customer.as_str().to_owned()]),
            )
            .expression_attribute_values(":customer", s(customer.as_str()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":now", n(now_ms))
            .return_values(ReturnValue::AllNew)
            // A refusal returns the item as it was: an account already bound is let in again
            // (the same join retried, or a second join after leaving) without a second write.
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(output) => Ok(CodeAccepted {
                group: output.attributes.as_ref().and_then(group),
            }),
            Err(SdkError::ServiceError(service))
                if matches!(
                    service.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                let UpdateItemError::ConditionalCheckFailedException(failed) = service.err() else {
                    return Err(LineupError::CodeRefused);
                };
                match failed.item() {
                    Some(item)
                        if in_force(item, now_ms)
                            && bound_accounts(item)
                                .iter()
                                .any(|bound| bound == customer.as_str()) =>
                    {
                        Ok(CodeAccepted { group: group(item) })
                    }
                    _ => Err(LineupError::CodeRefused),
                }
            }
            Err(other) => Err(store_error(other)),
        }
    }
}

#[async_trait]
impl AccessCodeBook for DynamoAccessCodes {
    async fn create(
        &self,
        event: &EventId,
        codes: &[AccessCode],
        terms: &CodeTerms,
        now: SystemTime,
    ) -> Result<(), LineupError> {
        let now_ms = unix_millis(now);
        let puts: Vec<_> = codes
            .iter()
            .map(|code| self.put_code(event, code, terms, now_ms))
            .collect();
        futures::stream::iter(puts)
            .buffer_unordered(WRITES_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn revoke(
        &self,
        event: &EventId,
        codes: &[CodeHash],
        now: SystemTime,
    ) -> Result<u64, LineupError> {
        self.revoke_hashes(event, codes.to_vec(), now).await
    }

    async fn revoke_all(&self, event: &EventId, now: SystemTime) -> Result<u64, LineupError> {
        let hashes = self
            .all_codes(event)
            .await?
            .iter()
            .filter(|item| !item.contains_key("revoked_at_ms"))
            .filter_map(|item| {
                let sk = item.get("sk")?.as_s().ok()?;
                CodeHash::parse(sk.strip_prefix("CODE#")?)
            })
            .collect();
        self.revoke_hashes(event, hashes, now).await
    }

    async fn counts(&self, event: &EventId, now: SystemTime) -> Result<CodeCounts, LineupError> {
        let now_ms = unix_millis(now);
        let mut counts = CodeCounts::default();
        for item in self.all_codes(event).await? {
            counts.tally(
                number(&item, "uses_allowed").unwrap_or(0),
                number(&item, "bound_count").unwrap_or(0),
                item.contains_key("revoked_at_ms"),
                !in_force(&item, now_ms),
            );
        }
        Ok(counts)
    }
}
