//! The tables' definitions, for local stacks and tests (in AWS, `template.yaml` creates them
//! with the same keys). Why these keys:
//!
//! - seats `pk` = `<eventId>#<seatId>`: one partition per seat, so holds on different seats never
//!   contend, and a hot on-sale spreads over the table. No index: nobody reads an event's seats
//!   from the table; the seat map is the availability projection, kept from the table's stream
//!   (new images) by `availability` (see [`crate::application::ports::availability`]).
//! - orders `pk` = `ORDER#<id>` | `HOLD#<event>#<customer>` | `IDEMPOTENCY#<key>` |
//!   `PAYMENT#<paymentId>` | `TICKETS#<event>#<customer>`: each record its own partition. They
//!   share a table because they share a lifecycle, permissions and capacity (transactions could
//!   span tables; see docs/decisions/0007). Sparse GSI `pending_by_expiry` (`pending_shard`,
//!   `expires_at`) holds only PENDING orders, so the expiry sweep reads nothing else.
//! - outbox `outboxId`, with a stream (new images) feeding `outbox-stream`.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;

use crate::adapters::dynamo::items::PENDING_INDEX;
use crate::adapters::dynamo::{built, store_error, TableNames};
use crate::application::error::LineupError;

fn attribute(name: &str, kind: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .expect("name and type are set")
}

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .expect("name and type are set")
}

fn index(name: &str, hash: &str, range: &str) -> GlobalSecondaryIndex {
    GlobalSecondaryIndex::builder()
        .index_name(name)
        .key_schema(key(hash, KeyType::Hash))
        .key_schema(key(range, KeyType::Range))
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .expect("name, keys and projection are set")
}

/// Creates the three tables (on-demand). For local stacks and tests only.
pub async fn create_tables(client: &Client, tables: &TableNames) -> Result<(), LineupError> {
    use ScalarAttributeType::{N, S};
    client
        .create_table()
        .table_name(&tables.seats)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk", S))
        .key_schema(key("pk", KeyType::Hash))
        .stream_specification(built(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewImage)
                .build(),
        ))
        .send()
        .await
        .map_err(store_error)?;
    client
        .create_table()
        .table_name(&tables.orders)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk", S))
        .attribute_definitions(attribute("pending_shard", S))
        .attribute_definitions(attribute("expires_at", N))
        .key_schema(key("pk", KeyType::Hash))
        .global_secondary_indexes(index(PENDING_INDEX, "pending_shard", "expires_at"))
        .send()
        .await
        .map_err(store_error)?;
    client
        .create_table()
        .table_name(&tables.outbox)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("outboxId", S))
        .key_schema(key("outboxId", KeyType::Hash))
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewImage)
                .build()
                .expect("stream enabled is set"),
        )
        .send()
        .await
        .map_err(store_error)?;
    Ok(())
}
