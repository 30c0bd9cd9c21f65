//! Reading a table's DynamoDB stream from the emulator and shaping the records as Lambda's event
//! source mapping delivers them (`{"Records": [...]}`), to feed `outbox-stream` what a real
//! deployment would.

use std::collections::HashMap;

use aws_sdk_dynamodbstreams::types::{AttributeValue as StreamValue, Record, ShardIteratorType};
use serde_json::{json, Map, Value};

use crate::aws::{dynamo, dynamodb_streams};

/// The Lambda event for everything the table's stream holds so far.
pub async fn lambda_event_from_stream(table: &str) -> Value {
    let described = dynamo()
        .await
        .describe_table()
        .table_name(table)
        .send()
        .await
        .expect("describe table");
    let stream_arn = described
        .table()
        .and_then(|table| table.latest_stream_arn())
        .expect("the table has a stream")
        .to_owned();
    json!({ "Records": stream_records(&stream_arn).await })
}

/// Every record of the outbox table's stream so far, in order, each shaped as Lambda delivers it
/// in an event's `Records`.
pub async fn stream_records(stream_arn: &str) -> Vec<Value> {
    let streams = dynamodb_streams().await;
    let description = streams
        .describe_stream()
        .stream_arn(stream_arn)
        .send()
        .await
        .expect("describe the outbox stream")
        .stream_description
        .expect("a stream description");
    let mut records = Vec::new();
    for shard in description.shards() {
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(stream_arn)
            .shard_id(shard.shard_id().expect("a shard id"))
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("get a shard iterator")
            .shard_iterator;
        while let Some(current) = iterator {
            let page = streams
                .get_records()
                .shard_iterator(current)
                .send()
                .await
                .expect("get stream records");
            if page.records().is_empty() {
                break;
            }
            records.extend(
                page.records()
                    .iter()
                    .map(|record| lambda_record(record, stream_arn)),
            );
            iterator = page.next_shard_iterator;
        }
    }
    records
}

/// A DynamoDB Streams API record in the JSON shape of a Lambda event record.
pub fn lambda_record(record: &Record, stream_arn: &str) -> Value {
    let change = record
        .dynamodb()
        .expect("a stream record carries its change");
    let mut dynamodb = Map::new();
    if let Some(created) = change.approximate_creation_date_time() {
        dynamodb.insert("ApproximateCreationDateTime".into(), created.secs().into());
    }
    if let Some(keys) = change.keys() {
        dynamodb.insert("Keys".into(), dynamodb_item(keys));
    }
    if let Some(new_image) = change.new_image() {
        dynamodb.insert("NewImage".into(), dynamodb_item(new_image));
    }
    if let Some(old_image) = change.old_image() {
        dynamodb.insert("OldImage".into(), dynamodb_item(old_image));
    }
    dynamodb.insert("SequenceNumber".into(), change.sequence_number().into());
    dynamodb.insert("SizeBytes".into(), change.size_bytes().unwrap_or(0).into());
    dynamodb.insert(
        "StreamViewType".into(),
        change.stream_view_type().map(|view| view.as_str()).into(),
    );
    json!({
        "eventID": record.event_id(),
        "eventName": record.event_name().map(|name| name.as_str()),
        "eventVersion": record.event_version(),
        "eventSource": record.event_source(),
        "awsRegion": record.aws_region(),
        "eventSourceARN": stream_arn,
        "dynamodb": dynamodb,
    })
}

fn dynamodb_item(item: &HashMap<String, StreamValue>) -> Value {
    Value::Object(
        item.iter()
            .map(|(name, value)| (name.clone(), dynamodb_json(value)))
            .collect(),
    )
}

/// DynamoDB JSON for the attribute types an outbox item can hold.
fn dynamodb_json(value: &StreamValue) -> Value {
    match value {
        StreamValue::S(s) => json!({ "S": s }),
        StreamValue::N(n) => json!({ "N": n }),
        StreamValue::Bool(b) => json!({ "BOOL": b }),
        StreamValue::Null(is_null) => json!({ "NULL": is_null }),
        StreamValue::Ss(strings) => json!({ "SS": strings }),
        StreamValue::L(list) => json!({ "L": list.iter().map(dynamodb_json).collect::<Vec<_>>() }),
        StreamValue::M(map) => json!({ "M": dynamodb_item(map) }),
        other => panic!("an outbox item holds no {other:?}"),
    }
}
