//! Putting many items without conditions: BatchWriteItem, 25 items a request, several requests
//! in flight, unprocessed items (throttling) sent again with a growing pause. Used where no
//! condition is needed: a published draw's chunks, a layout's parts, a new event's seats.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use futures::{StreamExt, TryStreamExt};

use crate::adapters::dynamo::{built, store_error};
use crate::application::error::LineupError;

/// BatchWriteItem takes at most 25 items.
const BATCH: usize = 25;

/// Puts every item into `table`, `in_flight` requests at a time.
pub(crate) async fn put_all(
    client: &Client,
    table: &str,
    items: Vec<HashMap<String, AttributeValue>>,
    in_flight: usize,
) -> Result<(), LineupError> {
    let batches: Vec<Vec<_>> = items.chunks(BATCH).map(<[_]>::to_vec).collect();
    futures::stream::iter(
        batches
            .into_iter()
            .map(|batch| put_batch(client, table, batch)),
    )
    .buffer_unordered(in_flight)
    .try_collect::<Vec<()>>()
    .await?;
    Ok(())
}

async fn put_batch(
    client: &Client,
    table: &str,
    batch: Vec<HashMap<String, AttributeValue>>,
) -> Result<(), LineupError> {
    let mut pending: Vec<WriteRequest> = batch
        .into_iter()
        .map(|item| {
            WriteRequest::builder()
                .put_request(built(PutRequest::builder().set_item(Some(item)).build()))
                .build()
        })
        .collect();
    for attempt in 0u32.. {
        let answer = client
            .batch_write_item()
            .request_items(table, pending)
            .send()
            .await
            .map_err(store_error)?;
        pending = answer
            .unprocessed_items
            .and_then(|mut unprocessed| unprocessed.remove(table))
            .unwrap_or_default();
        if pending.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50 << attempt.min(6))).await;
    }
    Ok(())
}
