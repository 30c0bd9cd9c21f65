//! Lambda's contract for DynamoDB stream batches, shared by the two stream functions
//! (`outbox-stream`, `availability`): the event as delivered, and the partial batch response
//! (`ReportBatchItemFailures`) that names the records to hand over again.

use aws_lambda_events::dynamodb::{Event, EventRecord};
use serde::Serialize;
use serde_json::Value;

use crate::application::error::LineupError;

/// The function's answer in Lambda's partial batch response shape. (The `aws_lambda_events`
/// response types are `non_exhaustive`, so they cannot be built outside that crate.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamBatchResponse {
    /// Empty when the whole batch went through.
    pub batch_item_failures: Vec<BatchItemFailure>,
}

/// One record Lambda must hand over again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchItemFailure {
    /// The record's `dynamodb.SequenceNumber`.
    pub item_identifier: String,
}

pub(crate) fn sequence_number(record: &EventRecord) -> &str {
    record.change.sequence_number.as_deref().unwrap_or_default()
}

/// A record without a sequence number cannot be named; an empty identifier makes Lambda treat
/// the whole batch as failed and retry all of it, which loses nothing.
pub(crate) fn failure(record: &EventRecord) -> BatchItemFailure {
    let item_identifier = sequence_number(record).to_owned();
    if item_identifier.is_empty() {
        tracing::warn!(
            stream_event_id = %record.event_id,
            "failed record has no sequence number; the whole batch will be retried"
        );
    }
    BatchItemFailure { item_identifier }
}

/// The payload as a DynamoDB stream event. Any other event (an SQS batch, `{}`) is refused with
/// `not_a_dynamodb_stream_event` instead of being taken for an empty batch.
pub(crate) fn stream_event(payload: Value, function: &str) -> Result<Event, LineupError> {
    const CODE: &str = "not_a_dynamodb_stream_event";
    let Some(records) = payload.get("Records").and_then(Value::as_array) else {
        return Err(LineupError::invalid(
            CODE,
            format!(
                "{function} runs on a DynamoDB stream event (a `Records` list), and this event has none"
            ),
        ));
    };
    if let Some((index, source)) = records.iter().enumerate().find_map(|(index, record)| {
        let source = record.get("eventSource").and_then(Value::as_str);
        (source != Some("aws:dynamodb")).then_some((index, source))
    }) {
        return Err(LineupError::invalid(
            CODE,
            format!(
                "{function} runs on DynamoDB stream records (eventSource \"aws:dynamodb\"), \
                 but record {index} has eventSource {source:?}"
            ),
        ));
    }
    serde_json::from_value(payload).map_err(|error| {
        LineupError::invalid(
            CODE,
            format!("the records say aws:dynamodb but are not DynamoDB stream records: {error}"),
        )
    })
}
