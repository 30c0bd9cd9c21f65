//! The members imported into priority groups, in the events table: one item per member, each in
//! a partition of its own, `pk` = `MEMBER#<event>.<group>#<customer id>` (the group's line), `sk` =
//! `MEMBER`. A join looks one up with a single `GetItem`: at the opening that is every joiner of
//! an event with a list group, far more than one partition serves (3,000 reads a second), so
//! the lookups must spread as the customers do. Nothing else reads them, and no route shows them.

use async_trait::async_trait;

use crate::adapters::dynamo::event_records::DynamoEventRecords;
use crate::adapters::dynamo::items::s;
use crate::adapters::dynamo::store_error;
use crate::application::error::LineupError;
use crate::application::ports::event_records::GroupMembers;
use crate::domain::ids::{CustomerId, EventId};

const MEMBER: &str = "MEMBER";

/// A member's partition: its own.
fn member_pk(line: &EventId, customer: &CustomerId) -> aws_sdk_dynamodb::types::AttributeValue {
    s(format!("{MEMBER}#{line}#{customer}"))
}

#[async_trait]
impl GroupMembers for DynamoEventRecords {
    async fn is_member(&self, line: &EventId, customer: &CustomerId) -> Result<bool, LineupError> {
        let found = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", member_pk(line, customer))
            .key("sk", s(MEMBER))
            .projection_expression("pk")
            .send()
            .await
            .map_err(store_error)?;
        Ok(found.item.is_some())
    }

    async fn import_members(
        &self,
        line: &EventId,
        customers: &[CustomerId],
    ) -> Result<(), LineupError> {
        let items = customers
            .iter()
            .map(|customer| {
                [
                    ("pk".to_owned(), member_pk(line, customer)),
                    ("sk".to_owned(), s(MEMBER)),
                ]
                .into_iter()
                .collect()
            })
            .collect();
        self.write_all(items).await
    }
}
