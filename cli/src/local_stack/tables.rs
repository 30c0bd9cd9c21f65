//! The four DynamoDB tables, created from `template.yaml`'s own resources: the template is the
//! one definition of their keys, index, streams and time to live, so what `lineup dev`, the
//! tests and a LocalStack get is what AWS gets. The template is compiled in (the binary runs
//! without the checkout).
//!
//! Only what a table's shape is made of is read (attributes, key schema, global secondary
//! indexes, stream, TTL); billing, encryption and point-in-time recovery are AWS's concern.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use serde::Deserialize;

/// `template.yaml`, as built.
pub const TEMPLATE: &str = include_str!("../../../template.yaml");

/// The tables' logical ids in the template.
pub const EVENTS: &str = "EventsTable";
/// See [`EVENTS`].
pub const SEATS: &str = "SeatsTable";
/// See [`EVENTS`].
pub const ORDERS: &str = "OrdersTable";
/// See [`EVENTS`].
pub const OUTBOX: &str = "OutboxTable";

/// A table's shape, as the template declares it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TableShape {
    /// The key and index attributes, with their types.
    pub attribute_definitions: Vec<Attribute>,
    /// The primary key.
    pub key_schema: Vec<Key>,
    /// Global secondary indexes.
    #[serde(default)]
    pub global_secondary_indexes: Vec<Index>,
    /// The stream, if any.
    pub stream_specification: Option<Stream>,
    /// The time-to-live attribute, if any.
    pub time_to_live_specification: Option<TimeToLive>,
}

/// An attribute definition.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Attribute {
    /// Its name.
    pub attribute_name: String,
    /// `S`, `N` or `B`.
    pub attribute_type: String,
}

/// A key schema element.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Key {
    /// The attribute.
    pub attribute_name: String,
    /// `HASH` or `RANGE`.
    pub key_type: String,
}

/// A global secondary index.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Index {
    /// Its name.
    pub index_name: String,
    /// Its key.
    pub key_schema: Vec<Key>,
    /// What it projects.
    pub projection: IndexProjection,
}

/// An index's projection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct IndexProjection {
    /// `ALL`, `KEYS_ONLY` or `INCLUDE`.
    pub projection_type: String,
}

/// A table's stream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Stream {
    /// `NEW_IMAGE`, `NEW_AND_OLD_IMAGES`...
    pub stream_view_type: String,
}

/// A table's time to live.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TimeToLive {
    /// The attribute holding the expiry (seconds since the epoch).
    pub attribute_name: String,
    /// Whether it is on.
    pub enabled: bool,
}

/// Why a table could not be read from the template or created.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The template is not YAML, or the table's properties are not in the expected shape.
    #[error("template.yaml: {logical_id} is not a table definition this tool reads")]
    Template {
        /// The table.
        logical_id: &'static str,
        /// What the YAML reader said.
        #[source]
        source: serde_yaml::Error,
    },
    /// The template has no such resource.
    #[error("template.yaml has no resource {0}")]
    Missing(&'static str),
    /// DynamoDB refused to create it.
    #[error("creating table {table} ({logical_id})")]
    Create {
        /// The table.
        logical_id: &'static str,
        /// Its name.
        table: String,
        /// DynamoDB's answer.
        #[source]
        source: Box<aws_sdk_dynamodb::Error>,
    },
}

/// The shape of `logical_id` in `template` (usually [`TEMPLATE`]).
pub fn shape(template: &str, logical_id: &'static str) -> Result<TableShape, TableError> {
    let invalid = |source| TableError::Template { logical_id, source };
    let document: serde_yaml::Value = serde_yaml::from_str(template).map_err(invalid)?;
    let properties = document
        .get("Resources")
        .and_then(|resources| resources.get(logical_id))
        .and_then(|resource| resource.get("Properties"))
        .ok_or(TableError::Missing(logical_id))?;
    serde_yaml::from_value(properties.clone()).map_err(invalid)
}

/// Creates table `name` with the shape `logical_id` has in the template, with its TTL.
pub async fn create(
    client: &Client,
    logical_id: &'static str,
    name: &str,
) -> Result<(), TableError> {
    let shape = shape(TEMPLATE, logical_id)?;
    let failed = |source: aws_sdk_dynamodb::Error| TableError::Create {
        logical_id,
        table: name.to_owned(),
        source: Box::new(source),
    };
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(
            shape
                .attribute_definitions
                .iter()
                .map(|attribute| {
                    AttributeDefinition::builder()
                        .attribute_name(&attribute.attribute_name)
                        .attribute_type(ScalarAttributeType::from(
                            attribute.attribute_type.as_str(),
                        ))
                        .build()
                        .expect("name and type are set")
                })
                .collect(),
        ))
        .set_key_schema(Some(keys(&shape.key_schema)));
    for index in &shape.global_secondary_indexes {
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&index.index_name)
                .set_key_schema(Some(keys(&index.key_schema)))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(
                            index.projection.projection_type.as_str(),
                        ))
                        .build(),
                )
                .build()
                .expect("name, keys and projection are set"),
        );
    }
    if let Some(stream) = &shape.stream_specification {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(stream.stream_view_type.as_str()))
                .build()
                .expect("stream enabled is set"),
        );
    }
    request.send().await.map_err(|error| failed(error.into()))?;
    if let Some(ttl) = shape.time_to_live_specification.filter(|ttl| ttl.enabled) {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(ttl.attribute_name)
                    .enabled(true)
                    .build()
                    .expect("name and enabled are set"),
            )
            .send()
            .await
            .map_err(|error| failed(error.into()))?;
    }
    Ok(())
}

/// The ledger's three tables (seats, orders, outbox) under `names`.
pub async fn create_ledger_tables(
    client: &Client,
    names: &lineup::adapters::dynamo::TableNames,
) -> Result<(), TableError> {
    create(client, SEATS, &names.seats).await?;
    create(client, ORDERS, &names.orders).await?;
    create(client, OUTBOX, &names.outbox).await
}

fn keys(keys: &[Key]) -> Vec<KeySchemaElement> {
    keys.iter()
        .map(|key| {
            KeySchemaElement::builder()
                .attribute_name(&key.attribute_name)
                .key_type(KeyType::from(key.key_type.as_str()))
                .build()
                .expect("name and type are set")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_declares_the_four_tables_as_the_code_reads_them() {
        let orders = shape(TEMPLATE, ORDERS).unwrap();
        assert_eq!(orders.key_schema[0].attribute_name, "pk");
        assert_eq!(
            orders.global_secondary_indexes[0].index_name,
            lineup::adapters::dynamo::items::PENDING_INDEX
        );
        assert_eq!(
            orders.time_to_live_specification.unwrap().attribute_name,
            "ttl"
        );
        let outbox = shape(TEMPLATE, OUTBOX).unwrap();
        assert_eq!(outbox.key_schema[0].attribute_name, "outboxId");
        assert_eq!(
            outbox.stream_specification.unwrap().stream_view_type,
            "NEW_IMAGE"
        );
        let seats = shape(TEMPLATE, SEATS).unwrap();
        assert!(seats.stream_specification.is_some());
        assert!(seats.time_to_live_specification.is_none());
        let events = shape(TEMPLATE, EVENTS).unwrap();
        assert_eq!(events.key_schema.len(), 2, "pk and sk");
        assert!(matches!(
            shape(TEMPLATE, "TicketQueueX"),
            Err(TableError::Missing(_))
        ));
    }
}
