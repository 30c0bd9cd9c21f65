//! Reading the seat map (the sharded GSI, all shards at once), seeding an event's seats
//! (conditional writes: never over a seat in use), and freeing a held seat.

use std::time::SystemTime;

use futures::future::try_join_all;
use futures::{StreamExt, TryStreamExt};

use super::items::{
    from_item, n, s, seat_key, seat_map_shard, to_item, SeatItem, SEAT_MAP_INDEX, SEAT_MAP_SHARDS,
};
use super::{is_condition_failure, store_error, DynamoLedger};
use crate::clock::unix_millis;
use crate::ids::OrderId;
use crate::ids::{EventId, SeatId};
use crate::ledger::{NewSeat, Seat, SeatStatus};
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

    /// Writes an event's seats, all AVAILABLE, each with a conditional put that only replaces a
    /// seat nobody holds or bought (absent, AVAILABLE, or HELD by a lapsed hold): a seat held or
    /// sold is never put back on sale, even by a seeding that races a hold. Returns the seats left
    /// alone because they were in use. For operators and tests; [`SEED_CONCURRENCY`] puts in
    /// flight (a batch write cannot carry a condition).
    pub async fn seed_seats(
        &self,
        event: &EventId,
        seats: &[NewSeat],
        now: SystemTime,
    ) -> Result<Vec<SeatId>, LineupError> {
        let now = unix_millis(now);
        let puts = seats.iter().map(|seat| async move {
            let put = self
                .client
                .put_item()
                .table_name(&self.tables.seats)
                .set_item(Some(to_item(&SeatItem::new(event, seat))?))
                .condition_expression(
                    "attribute_not_exists(pk) OR #status = :available \
                     OR (#status = :held AND hold_expires_at < :now)",
                )
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":available", s(SeatStatus::Available.as_str()))
                .expression_attribute_values(":held", s(SeatStatus::Held.as_str()))
                .expression_attribute_values(":now", n(now))
                .send()
                .await;
            match put {
                Ok(_) => Ok(None),
                Err(error) if is_condition_failure(&error) => Ok(Some(seat.seat_id.clone())),
                Err(error) => Err(store_error(error)),
            }
        });
        let outcomes: Vec<Option<SeatId>> = futures::stream::iter(puts)
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(outcomes.into_iter().flatten().collect())
    }

    /// HELD by `order` → AVAILABLE (only if `lapsed_before` is passed: only when lapsed).
    /// `Ok(false)` when the seat was no longer this order's.
    pub(crate) async fn free_seat(
        &self,
        event: &EventId,
        seat: &SeatId,
        order: &OrderId,
        lapsed_before: Option<u64>,
    ) -> Result<bool, LineupError> {
        let mut condition = "#status = :held AND held_by = :order".to_owned();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.tables.seats)
            .key("pk", seat_key(event, seat))
            .update_expression("SET #status = :available REMOVE held_by, hold_expires_at")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":held", s(SeatStatus::Held.as_str()))
            .expression_attribute_values(":available", s(SeatStatus::Available.as_str()))
            .expression_attribute_values(":order", s(order.as_str()));
        if let Some(before) = lapsed_before {
            condition.push_str(" AND hold_expires_at < :now");
            update = update.expression_attribute_values(":now", n(before));
        }
        match update.condition_expression(condition).send().await {
            Ok(_) => Ok(true),
            Err(error) if is_condition_failure(&error) => Ok(false),
            Err(error) => Err(store_error(error)),
        }
    }
}

/// How many seat writes a seeding keeps in flight.
pub const SEED_CONCURRENCY: usize = 32;
