//! The expiry sweep: finds lapsed PENDING orders through the sparse `pending_by_expiry` index,
//! marks them EXPIRED and returns their seats to AVAILABLE (but those with a payment tied to them:
//! reconciliation cancels the payment first). Correctness never waits for it (a
//! hold re-takes lapsed seats by itself); it only makes the seat map and order status true.

use std::time::SystemTime;

use crate::adapters::dynamo::items::{
    from_item, n, pending_shard_key, s, OrderItem, PENDING_INDEX, PENDING_SHARDS,
};
use crate::adapters::dynamo::{store_error, DynamoLedger};
use crate::application::error::LineupError;
use crate::application::ports::ledger::{OrderStatus, SweepReport};
use crate::domain::clock::unix_millis;

impl DynamoLedger {
    pub(crate) async fn sweep_lapsed(&self, now: SystemTime) -> Result<SweepReport, LineupError> {
        let now_ms = unix_millis(now);
        let mut report = SweepReport::default();
        for shard in 0..PENDING_SHARDS {
            let lapsed: Vec<OrderItem> = self
                .client
                .query()
                .table_name(&self.tables.orders)
                .index_name(PENDING_INDEX)
                .key_condition_expression("pending_shard = :shard AND expires_at < :now")
                // An order with a payment is reconciliation's: its payment is cancelled before
                // its seats go back on sale (`application::reconcile`).
                .filter_expression("attribute_not_exists(checkout_payment_id)")
                .expression_attribute_values(":shard", s(pending_shard_key(shard)))
                .expression_attribute_values(":now", n(now_ms))
                .into_paginator()
                .items()
                .send()
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .map(|item| from_item(item.map_err(store_error)?))
                .collect::<Result<_, LineupError>>()?;
            for item in lapsed {
                // One bad order must not stop the sweep (nor the sold-out check after it): it
                // is logged and counted, and tried again on the next run.
                match self.expire_order(item, now_ms).await {
                    Ok(Some(seats_released)) => {
                        report.orders_expired += 1;
                        report.seats_released += seats_released;
                    }
                    Ok(None) => {}
                    Err(error) => {
                        report.orders_failed += 1;
                        tracing::warn!(error = %error, source = ?std::error::Error::source(&error), "could not expire an order");
                    }
                }
            }
        }
        Ok(report)
    }

    /// Expires one lapsed order; `None` when a payment (or release) settled it first.
    async fn expire_order(&self, item: OrderItem, now_ms: u64) -> Result<Option<u64>, LineupError> {
        let order = item.into_order()?;
        // The order first: if a payment won the race, it is no longer PENDING and its seats are
        // sold; nothing to free.
        if !self
            .end_pending_order(&order.order_id, OrderStatus::Expired, None, Some(now_ms))
            .await?
        {
            return Ok(None);
        }
        let mut released = 0;
        for seat in &order.seat_ids {
            if self
                .free_seat(&order.event_id, seat, &order.order_id, Some(now_ms))
                .await?
            {
                released += 1;
            }
        }
        Ok(Some(released))
    }
}
