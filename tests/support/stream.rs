//! Reading a table's DynamoDB stream from the emulator and shaping the records as Lambda's event
//! source mapping delivers them (`{"Records": [...]}`), to feed `outbox-stream` what a real
//! deployment would. The reading is `lineup dev`'s outbox pump's; tests take a snapshot.

use serde_json::{json, Value};

use crate::aws::{dynamo, dynamodb_streams};

/// The Lambda event for everything the table's stream holds so far.
pub async fn lambda_event_from_stream(table: &str) -> Value {
    let arn = lineup_cli::stream_pump::stream_arn(&dynamo().await, table)
        .await
        .expect("the table has a stream");
    json!({ "Records": stream_records(&arn).await })
}

/// Every record of the stream so far, in order, each shaped as Lambda delivers it.
pub async fn stream_records(stream_arn: &str) -> Vec<Value> {
    lineup_cli::stream_pump::read_all(&dynamodb_streams().await, stream_arn)
        .await
        .expect("read the stream")
}
