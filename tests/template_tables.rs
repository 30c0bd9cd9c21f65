//! The tables the local stack and the tests create are the ones `template.yaml` deploys: each is
//! created from the template (`lineup_cli::local_stack::tables`) and read back from the
//! emulator, and its keys, index, stream and time to live are compared with the template's.

use std::collections::BTreeSet;

use lineup_cli::local_stack::tables::{self, TableShape};
use lineup_tests::aws::{dynamo, unique};

/// What DynamoDB says a table is, in the template's terms.
async fn described(name: &str) -> TableShape {
    let client = dynamo().await;
    let table = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .expect("describe the table")
        .table
        .expect("a table");
    let keys = |schema: &[aws_sdk_dynamodb::types::KeySchemaElement]| {
        schema
            .iter()
            .map(|key| tables::Key {
                attribute_name: key.attribute_name().to_owned(),
                key_type: key.key_type().as_str().to_owned(),
            })
            .collect()
    };
    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .expect("describe its time to live")
        .time_to_live_description
        .filter(|ttl| {
            ttl.time_to_live_status()
                .is_some_and(|status| status.as_str() == "ENABLED")
        })
        .map(|ttl| tables::TimeToLive {
            attribute_name: ttl.attribute_name().unwrap_or_default().to_owned(),
            enabled: true,
        });
    TableShape {
        attribute_definitions: table
            .attribute_definitions()
            .iter()
            .map(|attribute| tables::Attribute {
                attribute_name: attribute.attribute_name().to_owned(),
                attribute_type: attribute.attribute_type().as_str().to_owned(),
            })
            .collect(),
        key_schema: keys(table.key_schema()),
        global_secondary_indexes: table
            .global_secondary_indexes()
            .iter()
            .map(|index| tables::Index {
                index_name: index.index_name().unwrap_or_default().to_owned(),
                key_schema: keys(index.key_schema()),
                projection: tables::IndexProjection {
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
            .map(|stream| tables::Stream {
                stream_view_type: stream
                    .stream_view_type()
                    .map(|view| view.as_str().to_owned())
                    .unwrap_or_default(),
            }),
        time_to_live_specification: ttl,
    }
}

/// Attribute definitions compared as a set (DynamoDB does not keep their order).
fn normalised(mut shape: TableShape) -> TableShape {
    let attributes: BTreeSet<(String, String)> = shape
        .attribute_definitions
        .iter()
        .map(|a| (a.attribute_name.clone(), a.attribute_type.clone()))
        .collect();
    shape.attribute_definitions = attributes
        .into_iter()
        .map(|(attribute_name, attribute_type)| tables::Attribute {
            attribute_name,
            attribute_type,
        })
        .collect();
    shape
}

#[tokio::test]
async fn every_table_created_locally_has_the_templates_keys_index_stream_and_ttl() {
    let client = dynamo().await;
    for logical_id in [
        tables::EVENTS,
        tables::SEATS,
        tables::ORDERS,
        tables::OUTBOX,
    ] {
        let name = unique(&logical_id.to_lowercase());
        tables::create(&client, logical_id, &name)
            .await
            .expect("create from the template");
        let declared = normalised(tables::shape(tables::TEMPLATE, logical_id).unwrap());
        assert_eq!(
            normalised(described(&name).await),
            declared,
            "{logical_id}: what the emulator holds against template.yaml"
        );
    }
}

#[tokio::test]
async fn a_table_missing_from_the_template_is_an_error_not_a_guess() {
    let client = dynamo().await;
    let refused = tables::create(&client, "NoSuchTable", &unique("nope")).await;
    assert!(matches!(
        refused,
        Err(tables::TableError::Missing("NoSuchTable"))
    ));
}
