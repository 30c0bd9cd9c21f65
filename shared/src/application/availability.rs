//! The `availability` handler: the seats table's stream, applied to the projection in Redis.
//!
//! Every change is a whole seat's new image, and applying one is setting two bits, so applying
//! a batch twice, or again from its start, comes to the same bits: when Redis fails the whole
//! batch is reported failed and Lambda hands it over again, in order. A record that is not a
//! seat with a layout place (an item seeded before layouts existed) is skipped and logged: the
//! projection is rebuilt from the table anyway after a loss, so nothing durable depends on it.

use aws_lambda_events::dynamodb::EventRecord;
use serde::Deserialize;
use serde_json::Value;

use crate::application::error::LineupError;
use crate::application::ports::availability::{AvailabilityBoard, SeatChange};
use crate::application::stream_batch::{
    failure, sequence_number, stream_event, StreamBatchResponse,
};
use crate::domain::ids::EventId;
use crate::domain::seat::SeatStatus;

/// The attributes of a seat item the projection reads.
#[derive(Deserialize)]
struct SeatImage {
    event_id: String,
    status: SeatStatus,
    layout_version: String,
    layout_index: u32,
}

fn change_of(record: &EventRecord) -> Option<SeatChange> {
    if record.event_name == "REMOVE" {
        return None;
    }
    let image: SeatImage = match serde_dynamo::from_item(record.change.new_image.clone()) {
        Ok(image) => image,
        Err(error) => {
            tracing::warn!(
                sequence_number = sequence_number(record),
                error = &error as &(dyn std::error::Error + 'static),
                "seat record without a layout place; not projected"
            );
            return None;
        }
    };
    let event = EventId::parse(&image.event_id).ok()?;
    Some(SeatChange {
        event,
        version: image.layout_version,
        index: image.layout_index,
        status: image.status,
    })
}

/// Applies every seat change of the batch; on a Redis failure reports the whole batch.
pub async fn apply_batch(
    board: &dyn AvailabilityBoard,
    records: &[EventRecord],
) -> StreamBatchResponse {
    let changes: Vec<SeatChange> = records.iter().filter_map(change_of).collect();
    if changes.is_empty() {
        return StreamBatchResponse::default();
    }
    match board.apply(&changes).await {
        Ok(()) => {
            tracing::debug!(
                records = records.len(),
                changes = changes.len(),
                "seat changes projected"
            );
            StreamBatchResponse::default()
        }
        Err(error) => {
            tracing::warn!(
                records = records.len(),
                error = &error as &(dyn std::error::Error + 'static),
                "seat changes not projected; the batch will be handed over again"
            );
            StreamBatchResponse {
                batch_item_failures: records.iter().map(failure).collect(),
            }
        }
    }
}

/// The function's handler: checks it was given a DynamoDB stream event, then applies it.
pub async fn handle(
    board: &dyn AvailabilityBoard,
    invocation: lambda_runtime::LambdaEvent<Value>,
) -> Result<StreamBatchResponse, LineupError> {
    let event = stream_event(invocation.payload, "availability")?;
    Ok(apply_batch(board, &event.records).await)
}
