//! The `expire` function's work, once a minute: return lapsed holds' seats to AVAILABLE and mark
//! their orders EXPIRED (the seat map and order status become true; correctness never waited for
//! this), then close the queue of every open event whose seats are all sold (counted from the
//! availability projection: no table read).

use serde::Serialize;

use crate::application::error::LineupError;
use crate::application::ports::availability::AvailabilityBoard;
use crate::application::ports::ledger::{HoldSweeper, SweepReport};
use crate::application::ports::queue::{Admitter, EventSettingsStore};
use crate::domain::clock::Clock;
use crate::domain::event_settings::ClosedReason;

/// What one run did: the function's JSON answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpiryReport {
    /// What the sweep of lapsed holds did (its fields flattened into the answer).
    #[serde(flatten)]
    pub sweep: SweepReport,
    /// Events whose queues were closed because every seat is sold.
    pub sold_out: Vec<String>,
}

/// The `expire` function's chores and the ports they go through.
pub struct Expiry<'a> {
    /// Expires lapsed holds (DynamoDB).
    pub sweeper: &'a dyn HoldSweeper,
    /// Counts each event's seats by state, from the availability projection.
    pub seats: &'a dyn AvailabilityBoard,
    /// Lists the open events, and publishes a sold-out event's last status.
    pub events: &'a dyn Admitter,
    /// Records the seats left and closes a sold-out event's queue.
    pub settings: &'a dyn EventSettingsStore,
    /// The time holds are judged lapsed at.
    pub clock: &'a dyn Clock,
}

impl Expiry<'_> {
    /// One run: the sweep, then the sold-out check of every open event (which runs even when the
    /// sweep fails; the sweep's error is returned after it).
    pub async fn run(&self) -> Result<ExpiryReport, LineupError> {
        let now = self.clock.now();
        // The sold-out check runs even when the sweep fails: they are independent chores.
        let swept = self.sweeper.expire_lapsed(now).await;
        let mut sold_out = Vec::new();
        for event in self.events.open_events().await? {
            let counts = match self.seats.counts(&event).await {
                Ok(Some(counts)) => counts,
                // No seats seeded, or the projection is being rebuilt: the next sweep counts.
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(event = %event, error = %error, "could not count the seats for the sold-out check");
                    continue;
                }
            };
            // The public status shows what is left (sold seats excepted; held ones may lapse back).
            let left = counts.seats - counts.sold;
            if let Err(error) = self.settings.set_seats_left(&event, left).await {
                tracing::warn!(event = %event, error = %error, "could not record the seats left");
            }
            // Sold out: seats exist and none is AVAILABLE or HELD (a held seat may still lapse back).
            if counts.seats > 0 && left == 0 {
                self.settings.close(&event, ClosedReason::SoldOut).await?;
                // A closed event is no longer ticked: one last tick publishes its status (at the
                // time of the closing, not of the sweep's start, so it is the newest).
                if let Err(error) = self.events.publish_tick(&event, self.clock.now()).await {
                    tracing::warn!(event = %event, error = %error, "could not publish the sold-out status");
                }
                tracing::info!(event = %event, seats = counts.seats, "sold out: queue closed");
                sold_out.push(event.as_str().to_owned());
            }
        }
        let sweep = swept?;
        if sweep == SweepReport::default() && sold_out.is_empty() {
            tracing::debug!("expiry sweep: nothing lapsed");
        } else {
            tracing::info!(
                orders_expired = sweep.orders_expired,
                seats_released = sweep.seats_released,
                orders_failed = sweep.orders_failed,
                sold_out = sold_out.len(),
                "expiry sweep done"
            );
        }
        Ok(ExpiryReport { sweep, sold_out })
    }

    /// The handler: checks it was given an EventBridge scheduled event, then runs.
    pub async fn handle(
        &self,
        invocation: lambda_runtime::LambdaEvent<serde_json::Value>,
    ) -> Result<ExpiryReport, LineupError> {
        crate::application::admit::expect_scheduled_event(invocation.payload, "expire")?;
        self.run().await
    }
}
