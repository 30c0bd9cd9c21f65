//! The members imported into priority groups, in the events table: one item per member,
//! `pk` = `EVENT#<event>.<group>` (the group's line), `sk` = `MEMBER#<customer id>`. A join
//! looks one up with a single `GetItem`; nothing else reads them, and no route shows them.

use async_trait::async_trait;

use crate::adapters::dynamo::event_records::{event_pk, DynamoEventRecords};
use crate::adapters::dynamo::items::s;
use crate::adapters::dynamo::store_error;
use crate::application::error::LineupError;
use crate::application::ports::event_records::GroupMembers;
use crate::domain::ids::{CustomerId, EventId};

const MEMBER_PREFIX: &str = "MEMBER#";

#[async_trait]
impl GroupMembers for DynamoEventRecords {
    async fn is_member(&self, line: &EventId, customer: &CustomerId) -> Result<bool, LineupError> {
        let found = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", event_pk(line))
            .key("sk", s(format!("{MEMBER_PREFIX}{customer}")))
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
                    ("pk".to_owned(), event_pk(line)),
                    ("sk".to_owned(), s(format!("{MEMBER_PREFIX}{customer}"))),
                ]
                .into_iter()
                .collect()
            })
            .collect();
        self.write_all(items).await
    }
}
