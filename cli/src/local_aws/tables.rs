//! The four DynamoDB tables, created from `template.yaml`'s own resources: the template is the
//! one definition of their keys, index, streams and time to live, so what `lineup dev`, the
//! tests and a LocalStack get is what AWS gets. The template is compiled in (the binary runs
//! without the checkout).
//!
//! Only what a table's shape is made of is read (attributes, key schema, global secondary
//! indexes, stream, TTL); billing, encryption and point-in-time recovery are AWS's concern.
//! [`describe`] reads a table back in the same terms, so what exists can be compared with what
//! the template declares ([`TableShape::normalised`]).

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
        logical_id: String,
        /// What the YAML reader said.
        #[source]
        source: serde_yaml::Error,
    },
    /// The template has no such resource.
    #[error("template.yaml has no resource {0}")]
    Missing(String),
    /// DynamoDB refused to create, read or delete it.
    #[error("{doing} table {table} ({logical_id})")]
    Request {
        /// What was being done: "creating", "describing", "deleting".
        doing: &'static str,
        /// The table.
        logical_id: String,
        /// Its name.
        table: String,
        /// DynamoDB's answer.
        #[source]
        source: Box<aws_sdk_dynamodb::Error>,
    },
}

/// The shape of `logical_id` in `template` (usually [`TEMPLATE`]).
pub fn shape(template: &str, logical_id: &str) -> Result<TableShape, TableError> {
    let invalid = |source| TableError::Template {
        logical_id: logical_id.to_owned(),
        source,
    };
    let document: serde_yaml::Value = serde_yaml::from_str(template).map_err(invalid)?;
    let properties = document
        .get("Resources")
        .and_then(|resources| resources.get(logical_id))
        .and_then(|resource| resource.get("Properties"))
        .ok_or_else(|| TableError::Missing(logical_id.to_owned()))?;
    serde_yaml::from_value(properties.clone()).map_err(invalid)
}

/// Creates table `name` with the shape `logical_id` has in the template, with its TTL.
pub async fn create(client: &Client, logical_id: &str, name: &str) -> Result<(), TableError> {
    let shape = shape(TEMPLATE, logical_id)?;
    let failed = failed("creating", logical_id, name);
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

/// What `name` is in DynamoDB, in the template's terms; `None` when there is no such table.
pub async fn describe(
    client: &Client,
    logical_id: &str,
    name: &str,
) -> Result<Option<TableShape>, TableError> {
    let failed = failed("describing", logical_id, name);
    let table = match client.describe_table().table_name(name).send().await {
        Ok(answer) => answer.table,
        Err(error) => {
            let error = aws_sdk_dynamodb::Error::from(error);
            if matches!(error, aws_sdk_dynamodb::Error::ResourceNotFoundException(_)) {
                return Ok(None);
            }
            return Err(failed(error));
        }
    };
    let Some(table) = table else {
        return Ok(None);
    };
    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|error| failed(error.into()))?
        .time_to_live_description
        .filter(|ttl| {
            ttl.time_to_live_status()
                .is_some_and(|status| status.as_str() == "ENABLED")
        })
        .map(|ttl| TimeToLive {
            attribute_name: ttl.attribute_name().unwrap_or_default().to_owned(),
            enabled: true,
        });
    let described_keys = |schema: &[KeySchemaElement]| {
        schema
            .iter()
            .map(|key| Key {
                attribute_name: key.attribute_name().to_owned(),
                key_type: key.key_type().as_str().to_owned(),
            })
            .collect()
    };
    Ok(Some(TableShape {
        attribute_definitions: table
            .attribute_definitions()
            .iter()
            .map(|attribute| Attribute {
                attribute_name: attribute.attribute_name().to_owned(),
                attribute_type: attribute.attribute_type().as_str().to_owned(),
            })
            .collect(),
        key_schema: described_keys(table.key_schema()),
        global_secondary_indexes: table
            .global_secondary_indexes()
            .iter()
            .map(|index| Index {
                index_name: index.index_name().unwrap_or_default().to_owned(),
                key_schema: described_keys(index.key_schema()),
                projection: IndexProjection {
                    projection_type: index
                        .projection()
                        .and_then(|projection| projection.projection_type())
                        .map(|kind| kind.as_str().to_owned())
                        .unwrap_or_default(),
                },
            })
            .collect(),
        stream_specification: table
            .stream_specification()
            .filter(|stream| stream.stream_enabled())
            .map(|stream| Stream {
                stream_view_type: stream
                    .stream_view_type()
                    .map(|view| view.as_str().to_owned())
                    .unwrap_or_default(),
            }),
        time_to_live_specification: ttl,
    }))
}

/// Deletes table `name`; `false` when there was none.
pub async fn delete(client: &Client, logical_id: &str, name: &str) -> Result<bool, TableError> {
    match client.delete_table().table_name(name).send().await {
        Ok(_) => Ok(true),
        Err(error) => match aws_sdk_dynamodb::Error::from(error) {
            aws_sdk_dynamodb::Error::ResourceNotFoundException(_) => Ok(false),
            error => Err(failed("deleting", logical_id, name)(error)),
        },
    }
}

impl TableShape {
    /// The same shape with what DynamoDB does not keep in order (attribute definitions, indexes)
    /// sorted, and a disabled TTL as none: two tables are the same when these are equal.
    pub fn normalised(mut self) -> Self {
        self.attribute_definitions.sort_by(|a, b| {
            (&a.attribute_name, &a.attribute_type).cmp(&(&b.attribute_name, &b.attribute_type))
        });
        self.global_secondary_indexes
            .sort_by(|a, b| a.index_name.cmp(&b.index_name));
        self.time_to_live_specification = self.time_to_live_specification.filter(|ttl| ttl.enabled);
        self
    }

    /// How `self` (what exists) differs from `declared`, in words; empty when it does not.
    pub fn differences(&self, declared: &TableShape) -> Vec<String> {
        let (found, declared) = (self.clone().normalised(), declared.clone().normalised());
        let mut differences = Vec::new();
        if found.key_schema != declared.key_schema
            || found.attribute_definitions != declared.attribute_definitions
        {
            differences.push(format!(
                "key {} where the template has {}",
                describe_keys(&found.key_schema),
                describe_keys(&declared.key_schema)
            ));
        }
        if found.global_secondary_indexes != declared.global_secondary_indexes {
            let names = |shape: &TableShape| {
                shape
                    .global_secondary_indexes
                    .iter()
                    .map(|index| index.index_name.clone())
                    .collect::<Vec<_>>()
            };
            differences.push(format!(
                "indexes {:?} where the template has {:?} (or their keys differ)",
                names(&found),
                names(&declared)
            ));
        }
        if found.stream_specification != declared.stream_specification {
            differences.push(format!(
                "stream {} where the template has {}",
                describe_stream(&found),
                describe_stream(&declared)
            ));
        }
        if found.time_to_live_specification != declared.time_to_live_specification {
            let ttl = |shape: &TableShape| {
                shape
                    .time_to_live_specification
                    .as_ref()
                    .map_or("none".to_owned(), |ttl| ttl.attribute_name.clone())
            };
            differences.push(format!(
                "time to live {} where the template has {}",
                ttl(&found),
                ttl(&declared)
            ));
        }
        differences
    }

    /// A one-line summary: key, index, stream and TTL.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("key {}", describe_keys(&self.key_schema))];
        for index in &self.global_secondary_indexes {
            parts.push(format!("index {}", index.index_name));
        }
        if self.stream_specification.is_some() {
            parts.push(format!("stream {}", describe_stream(self)));
        }
        if let Some(ttl) = &self.time_to_live_specification {
            parts.push(format!("TTL {}", ttl.attribute_name));
        }
        parts.join(", ")
    }
}

fn describe_keys(keys: &[Key]) -> String {
    keys.iter()
        .map(|key| key.attribute_name.as_str())
        .collect::<Vec<_>>()
        .join("+")
}

fn describe_stream(shape: &TableShape) -> String {
    shape
        .stream_specification
        .as_ref()
        .map_or("none".to_owned(), |stream| stream.stream_view_type.clone())
}

fn failed<'a>(
    doing: &'static str,
    logical_id: &'a str,
    name: &'a str,
) -> impl Fn(aws_sdk_dynamodb::Error) -> TableError + 'a {
    move |source| TableError::Request {
        doing,
        logical_id: logical_id.to_owned(),
        table: name.to_owned(),
        source: Box::new(source),
    }
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
