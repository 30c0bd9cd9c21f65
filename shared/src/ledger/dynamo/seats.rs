//! Reading the seat map (the sharded GSI, all shards at once) and seeding an event's seats.

use std::time::SystemTime;

use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
use futures::future::try_join_all;

use super::items::{
    from_item, s, seat_map_shard, to_item, SeatItem, SEAT_MAP_INDEX, SEAT_MAP_SHARDS,
};
use super::{store_error, DynamoLedger};
use crate::clock::unix_millis;
use crate::ids::EventId;
use crate::ledger::{NewSeat, Seat};
use crate::LineupError;

impl DynamoLedger {
    /// Every seat of one event, sorted by seat id.
    pub(crate) async fn read_seat_map(
        &self,
        event: &EventId,
        now: SystemTime,
    ) -> Result<Vec<Seat>, LineupError> {
        let shards = (0..SEAT_MAP_SHARDS).map(|shard| self.read_seat_map_shard(event, shard));
        let now_ms = unix_millis(now);
        let mut seats: Vec<Seat> = try_join_all(shards)
            .await?
            .into_iter()
            .flatten()
            .map(|item| item.into_seat(now_ms))
            .collect::<Result<_, _>>()?;
        seats.sort_by(|a, b| a.seat_id.cmp(&b.seat_id));
        Ok(seats)
    }

    async fn read_seat_map_shard(
        &self,
        event: &EventId,
        shard: u32,
    ) -> Result<Vec<SeatItem>, LineupError> {
        let pages = self
            .client
            .query()
            .table_name(&self.tables.seats)
            .index_name(SEAT_MAP_INDEX)
            .key_condition_expression("map_shard = :shard")
            .expression_attribute_values(":shard", s(seat_map_shard(event, shard)))
            .into_paginator()
            .items()
            .send()
            .collect::<Vec<_>>()
            .await;
        pages
            .into_iter()
            .map(|item| from_item(item.map_err(store_error)?))
            .collect()
    }

    /// Writes an event's seats, all AVAILABLE (overwriting any with the same ids). For operators
    /// and tests; 25 seats per request, as BatchWriteItem allows.
    pub async fn seed_seats(&self, event: &EventId, seats: &[NewSeat]) -> Result<(), LineupError> {
        for chunk in seats.chunks(25) {
            let mut requests = chunk
                .iter()
                .map(|seat| {
                    let item = to_item(&SeatItem::new(event, seat))?;
                    let put = PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .map_err(|_| LineupError::UnexpectedReply {
                            operation: "seed",
                            reply: "PutRequest without item".to_owned(),
                        })?;
                    Ok(WriteRequest::builder().put_request(put).build())
                })
                .collect::<Result<Vec<_>, LineupError>>()?;
            // Unprocessed items (throttling) are sent again until none are left.
            while !requests.is_empty() {
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(&self.tables.seats, requests)
                    .send()
                    .await
                    .map_err(store_error)?;
                requests = output
                    .unprocessed_items
                    .and_then(|mut tables| tables.remove(&self.tables.seats))
                    .unwrap_or_default();
            }
        }
        Ok(())
    }
}
