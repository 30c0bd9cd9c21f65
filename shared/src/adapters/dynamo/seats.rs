//! Seeding an event's seats from its layout (conditional writes: never over a seat in use),
//! reading seats' statuses by key (the projection's rebuild), and freeing a held seat.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use futures::{StreamExt, TryStreamExt};

use crate::adapters::dynamo::items::{n, s, seat_key, seat_pk, to_item, SeatItem};
use crate::adapters::dynamo::{built, is_condition_failure, store_error, DynamoLedger};
use crate::application::error::LineupError;
use crate::application::rebuild::SeatStates;
use crate::application::seeding::SeatWriter;
use crate::domain::clock::unix_millis;
use crate::domain::ids::OrderId;
use crate::domain::ids::{EventId, SeatId};
use crate::domain::layout::SeatLayout;
use crate::domain::seat::SeatStatus;
use crate::domain::seat_allocation::{SeatAllocations, SeatReservation};

/// BatchGetItem takes at most 100 keys.
const READ_BATCH: usize = 100;

impl DynamoLedger {
    /// Writes the layout's seats, all AVAILABLE, each with a conditional put that only replaces a
    /// seat nobody holds or bought (absent, AVAILABLE, or HELD by a lapsed hold): a seat held or
    /// sold is never put back on sale, even by a seeding that races a hold. A seat left alone
    /// gets only its new layout place (so the projection hears of it as it is). Returns the seats
    /// left alone because they were in use. For operators and tests; [`SEED_CONCURRENCY`] puts
    /// in flight (a batch write cannot carry a condition).
    pub async fn seed_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
        now: SystemTime,
    ) -> Result<Vec<SeatId>, LineupError> {
        let now = unix_millis(now);
        let version = layout.version();
        let puts = layout.seats().map(|(index, seat)| async move {
            let reservation = allocations.section(&seat.section);
            let item = SeatItem::new(event, &seat, version, index, reservation);
            let put = self
                .client
                .put_item()
                .table_name(&self.tables.seats)
                .set_item(Some(to_item(&item)?))
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
                Err(error) if is_condition_failure(&error) => {
                    self.move_seat(event, &seat.seat_id, version, index, reservation)
                        .await?;
                    Ok(Some(seat.seat_id.clone()))
                }
                Err(error) => Err(store_error(error)),
            }
        });
        let outcomes: Vec<Option<SeatId>> = futures::stream::iter(puts)
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(outcomes.into_iter().flatten().collect())
    }

    /// Writes the layout's seats, all AVAILABLE, unconditionally, 25 per request: only for an
    /// event that has no current layout yet (its first seeding), where no hold can exist,
    /// because a hold needs the current layout to find its seats.
    pub async fn write_new_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
    ) -> Result<(), LineupError> {
        let version = layout.version();
        let items: Vec<HashMap<String, AttributeValue>> = layout
            .seats()
            .map(|(index, seat)| {
                let reservation = allocations.section(&seat.section);
                to_item(&SeatItem::new(event, &seat, version, index, reservation))
            })
            .collect::<Result<_, _>>()?;
        crate::adapters::dynamo::batch_write::put_all(
            &self.client,
            &self.tables.seats,
            items,
            SEED_CONCURRENCY,
        )
        .await
    }

    /// Sets (or, `None`, removes) the reservation of each seat, [`SEED_CONCURRENCY`] updates in
    /// flight, each conditioned on the seat existing and touching nothing else: a held or sold
    /// seat keeps its hold or sale.
    pub async fn reserve_seats(
        &self,
        event: &EventId,
        seats: &[SeatId],
        reservation: Option<&SeatReservation>,
    ) -> Result<usize, LineupError> {
        let updates = seats.iter().cloned().map(|seat| async move {
            let update = self
                .client
                .update_item()
                .table_name(&self.tables.seats)
                .key("pk", seat_key(event, &seat))
                .condition_expression("attribute_exists(pk)");
            let update = match reservation {
                Some(reserved) => update
                    .update_expression("SET reserved_for = :group, reserved_until = :until")
                    .expression_attribute_values(":group", s(reserved.group.as_str()))
                    .expression_attribute_values(":until", n(unix_millis(reserved.until))),
                None => update.update_expression("REMOVE reserved_for, reserved_until"),
            };
            match update.send().await {
                Ok(_) => Ok(1),
                Err(error) if is_condition_failure(&error) => Ok(0),
                Err(error) => Err(store_error(error)),
            }
        });
        let written: Vec<usize> = futures::stream::iter(updates)
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(written.into_iter().sum())
    }

    /// A seat in use keeps its status and gets its place in a new layout, and its new section's
    /// allocation (set aside, or not: a seat moved out of a section set aside loses its marks).
    async fn move_seat(
        &self,
        event: &EventId,
        seat: &SeatId,
        version: &str,
        index: u32,
        reservation: Option<&SeatReservation>,
    ) -> Result<(), LineupError> {
        let update = self
            .client
            .update_item()
            .table_name(&self.tables.seats)
            .key("pk", seat_key(event, seat))
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":version", s(version))
            .expression_attribute_values(":index", n(index));
        let update = match reservation {
            Some(reserved) => update
                .update_expression(
                    "SET layout_version = :version, layout_index = :index, \
                     reserved_for = :group, reserved_until = :until",
                )
                .expression_attribute_values(":group", s(reserved.group.as_str()))
                .expression_attribute_values(":until", n(unix_millis(reserved.until))),
            None => update.update_expression(
                "SET layout_version = :version, layout_index = :index \
                 REMOVE reserved_for, reserved_until",
            ),
        };
        update.send().await.map_err(store_error)?;
        Ok(())
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

#[async_trait]
impl SeatWriter for DynamoLedger {
    async fn write_new_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
    ) -> Result<(), LineupError> {
        DynamoLedger::write_new_seats(self, event, layout, allocations).await
    }

    async fn seed_seats(
        &self,
        event: &EventId,
        layout: &SeatLayout,
        allocations: &SeatAllocations,
        now: SystemTime,
    ) -> Result<Vec<SeatId>, LineupError> {
        DynamoLedger::seed_seats(self, event, layout, allocations, now).await
    }

    async fn reserve_seats(
        &self,
        event: &EventId,
        seats: &[SeatId],
        reservation: Option<&SeatReservation>,
    ) -> Result<usize, LineupError> {
        DynamoLedger::reserve_seats(self, event, seats, reservation).await
    }
}

#[async_trait]
impl SeatStates for DynamoLedger {
    /// The stored status of every seat of the layout, in layout order, by key (100 per request,
    /// [`SEED_CONCURRENCY`] requests in flight). A seat not stored counts as held: not on sale.
    async fn seat_states(
        &self,
        event: &EventId,
        layout: &SeatLayout,
    ) -> Result<Vec<SeatStatus>, LineupError> {
        let pks: Vec<String> = layout
            .seats()
            .map(|(_, seat)| seat_pk(event, &seat.seat_id))
            .collect();
        let batches: Vec<Vec<String>> = pks.chunks(READ_BATCH).map(<[String]>::to_vec).collect();
        let reads = batches
            .into_iter()
            .map(|batch| async move { self.read_statuses(&batch).await });
        let found: Vec<HashMap<String, SeatStatus>> = futures::stream::iter(reads)
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect()
            .await?;
        let mut statuses: HashMap<String, SeatStatus> = found.into_iter().flatten().collect();
        Ok(pks
            .iter()
            .map(|pk| statuses.remove(pk).unwrap_or(SeatStatus::Held))
            .collect())
    }
}

impl DynamoLedger {
    async fn read_statuses(
        &self,
        pks: &[String],
    ) -> Result<HashMap<String, SeatStatus>, LineupError> {
        let key = |pk: &String| HashMap::from([("pk".to_owned(), s(pk.as_str()))]);
        let mut pending: Vec<HashMap<String, AttributeValue>> = pks.iter().map(key).collect();
        let mut statuses = HashMap::new();
        // Unprocessed keys (throttling) are asked for again, with a growing pause.
        for attempt in 0u32.. {
            let keys = built(
                KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .projection_expression("pk, #status")
                    .expression_attribute_names("#status", "status")
                    .build(),
            );
            let answer = self
                .client
                .batch_get_item()
                .request_items(&self.tables.seats, keys)
                .send()
                .await
                .map_err(store_error)?;
            for item in answer
                .responses
                .and_then(|mut tables| tables.remove(&self.tables.seats))
                .unwrap_or_default()
            {
                let pk = item.get("pk").and_then(|pk| pk.as_s().ok());
                let status = item.get("status").and_then(|status| status.as_s().ok());
                let status = match status.map(String::as_str) {
                    Some("AVAILABLE") => SeatStatus::Available,
                    Some("HELD") => SeatStatus::Held,
                    Some("SOLD") => SeatStatus::Sold,
                    _ => {
                        return Err(LineupError::SeatStoreReply {
                            operation: "seat status",
                            reply: format!("{pk:?}: {status:?}"),
                        })
                    }
                };
                if let Some(pk) = pk {
                    statuses.insert(pk.clone(), status);
                }
            }
            pending = answer
                .unprocessed_keys
                .and_then(|mut tables| tables.remove(&self.tables.seats))
                .map(|keys| keys.keys)
                .unwrap_or_default();
            if pending.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50 << attempt.min(6))).await;
        }
        Ok(statuses)
    }
}
