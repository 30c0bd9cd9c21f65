//! The DynamoDB adapter of the ledger ports.
//!
//! Three tables (declared in `template.yaml`; their keys and why in `docs/ARCHITECTURE.md`):
//! - seats: one item per seat, keyed by event and seat, so an on-sale's writes spread over as
//!   many partitions as it has seats and no item is written by every hold;
//! - orders: orders, plus the small records that make rules atomic conditions: one open hold per
//!   customer per event (`HOLD#`), one answer per idempotency key (`IDEMPOTENCY#`), one order per
//!   payment (`PAYMENT#`, with what refunds took of it), the seats a customer bought
//!   (`TICKETS#`, for the ticket limit), one record per refund (`REFUND#`);
//! - outbox: events for `outbox-stream`, written in the same transaction as the sale.

pub mod access_codes;
pub(crate) mod batch_write;
pub mod cancellation;
pub mod checkout;
pub mod confirm;
pub mod error;
pub mod event_records;
pub mod expire;
pub mod group_members;
pub mod hold;
pub mod items;
pub mod layouts;
pub mod open_payments;
pub mod orders;
pub mod refunds;
pub mod seats;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::CancellationReason;
use aws_sdk_dynamodb::Client;

use crate::application::error::LineupError;

/// The table names (`SEATS_TABLE`, `ORDERS_TABLE`, `OUTBOX_TABLE` in a function's environment).
#[derive(Debug, Clone)]
pub struct TableNames {
    /// `SEATS_TABLE`: one item per seat.
    pub seats: String,
    /// `ORDERS_TABLE`: orders and the records that make the rules conditions.
    pub orders: String,
    /// `OUTBOX_TABLE`: the events `outbox-stream` publishes.
    pub outbox: String,
}

/// A table name's variable (named) is unset or empty.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {0} is not set")]
pub struct MissingTable(pub &'static str);

impl TableNames {
    /// The three names through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, MissingTable> {
        let required = |name: &'static str| {
            lookup(name)
                .filter(|v| !v.is_empty())
                .ok_or(MissingTable(name))
        };
        Ok(Self {
            seats: required("SEATS_TABLE")?,
            orders: required("ORDERS_TABLE")?,
            outbox: required("OUTBOX_TABLE")?,
        })
    }
}

/// The seat ledger over the three tables: implements the ledger ports, seeding and seat states.
#[derive(Clone)]
pub struct DynamoLedger {
    pub(crate) client: Client,
    pub(crate) tables: TableNames,
    pub(crate) hold_duration: std::time::Duration,
}

impl DynamoLedger {
    /// A ledger whose holds last [`HOLD_DURATION`](crate::application::ports::ledger::HOLD_DURATION).
    pub fn new(client: Client, tables: TableNames) -> Self {
        Self {
            client,
            tables,
            hold_duration: crate::application::ports::ledger::HOLD_DURATION,
        }
    }

    /// Holds that last `duration` instead: `lineup dev --hold-seconds` shortens them so a local
    /// run shows lapsed holds going back on sale within minutes. Deployed functions keep the
    /// five minutes.
    pub fn with_hold_duration(mut self, duration: std::time::Duration) -> Self {
        self.hold_duration = duration;
        self
    }

    /// The table names this ledger writes to.
    pub fn tables(&self) -> &TableNames {
        &self.tables
    }

    /// The DynamoDB client it uses (for seeding and operator commands on the same tables).
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// How many times a transaction is tried when DynamoDB reports a conflict with another one in
/// flight on the same items (`TransactionConflict`); each retry waits a little longer.
pub(crate) const TRANSACTION_ATTEMPTS: u32 = 4;

/// Why a transaction was cancelled, item by item (in the order the items were sent).
pub(crate) enum TransactionOutcome<T> {
    Done(T),
    Cancelled(Vec<CancellationReason>),
}

/// Any SDK error of an operation, into the domain error (keeping it as the source).
pub(crate) fn store_error<E, R>(error: SdkError<E, R>) -> LineupError
where
    aws_sdk_dynamodb::Error: From<SdkError<E, R>>,
{
    LineupError::from(aws_sdk_dynamodb::Error::from(error))
}

/// Every item of a paginated Query or Scan (`.into_paginator().items().send()`), all pages, or
/// the first error.
pub(crate) async fn all_items<E, R>(
    pages: aws_smithy_async::future::pagination_stream::PaginationStream<
        Result<crate::adapters::dynamo::items::Item, SdkError<E, R>>,
    >,
) -> Result<Vec<crate::adapters::dynamo::items::Item>, LineupError>
where
    aws_sdk_dynamodb::Error: From<SdkError<E, R>>,
{
    pages
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|item| item.map_err(store_error))
        .collect()
}

/// What a cancelled transaction's reasons mean.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Cancellation {
    /// At least one condition failed: a domain answer (taken seat, used key...), final.
    ConditionFailed,
    /// Another transaction was working on the same items: worth trying again soon.
    Conflict,
    /// Throttled, over capacity, or anything else: not a condition, so never read as one.
    Other,
}

pub(crate) fn classify(reasons: &[CancellationReason]) -> Cancellation {
    if reasons.iter().any(condition_failed) {
        Cancellation::ConditionFailed
    } else if reasons
        .iter()
        .any(|reason| reason.code() == Some("TransactionConflict"))
    {
        Cancellation::Conflict
    } else {
        Cancellation::Other
    }
}

/// Sends a transaction, retrying conflicts with other transactions; returns the cancellation
/// reasons only when a condition failed. Conflicts that outlast the retries, throttling and
/// capacity errors are the store being unavailable (503 with `Retry-After`), never a domain
/// answer: a throttled payment must not be mistaken for a taken seat.
pub(crate) async fn transact(
    client: &Client,
    items: Vec<aws_sdk_dynamodb::types::TransactWriteItem>,
) -> Result<TransactionOutcome<()>, LineupError> {
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = client
            .transact_write_items()
            .set_transact_items(Some(items.clone()))
            .send()
            .await;
        let service = match result {
            Ok(_) => return Ok(TransactionOutcome::Done(())),
            Err(SdkError::ServiceError(service)) => service,
            Err(other) => return Err(store_error(other)),
        };
        let TransactWriteItemsError::TransactionCanceledException(cancelled) = service.err() else {
            return Err(store_error(SdkError::ServiceError(service)));
        };
        let reasons = cancelled.cancellation_reasons().to_vec();
        match classify(&reasons) {
            Cancellation::ConditionFailed => return Ok(TransactionOutcome::Cancelled(reasons)),
            Cancellation::Conflict if attempt < TRANSACTION_ATTEMPTS => {
                tokio::time::sleep(backoff(attempt)).await;
            }
            Cancellation::Conflict | Cancellation::Other => {
                let error = aws_sdk_dynamodb::Error::from(SdkError::ServiceError(service));
                return Err(error::unavailable(error));
            }
        }
    }
}

/// 20 ms, 40 ms, 80 ms..., with up to 50 % random jitter so retries do not collide again.
fn backoff(attempt: u32) -> std::time::Duration {
    let base = 20u64 << attempt.min(6);
    let jitter = (uuid::Uuid::new_v4().as_u128() as u64) % (base / 2 + 1);
    std::time::Duration::from_millis(base + jitter)
}

/// Unwraps an SDK builder's result. The builders only fail when a required field is missing,
/// and every call site sets them all: a failure here is a bug in this crate, not bad input.
pub(crate) fn built<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
    result.expect("all required fields are set")
}

/// Whether a single-item write failed its condition (an answer, not an error).
pub(crate) fn is_condition_failure<E, R>(error: &aws_sdk_dynamodb::error::SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    error
        .as_service_error()
        .is_some_and(|service| service.code() == Some("ConditionalCheckFailedException"))
}

/// Whether a cancellation reason is a failed condition (rather than "None": not the cause).
pub(crate) fn condition_failed(reason: &CancellationReason) -> bool {
    reason.code() == Some("ConditionalCheckFailed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons(codes: &[&str]) -> Vec<CancellationReason> {
        codes
            .iter()
            .map(|code| CancellationReason::builder().code(*code).build())
            .collect()
    }

    #[test]
    fn only_a_failed_condition_is_a_domain_answer() {
        assert_eq!(
            classify(&reasons(&["None", "ConditionalCheckFailed", "None"])),
            Cancellation::ConditionFailed
        );
        assert_eq!(
            classify(&reasons(&["TransactionConflict", "ConditionalCheckFailed"])),
            Cancellation::ConditionFailed
        );
        assert_eq!(
            classify(&reasons(&["None", "TransactionConflict"])),
            Cancellation::Conflict
        );
        for other in [
            "ThrottlingError",
            "ProvisionedThroughputExceeded",
            "ValidationError",
            "ItemCollectionSizeLimitExceeded",
        ] {
            assert_eq!(
                classify(&reasons(&["None", other])),
                Cancellation::Other,
                "{other}"
            );
        }
    }
}

mod ports {
    //! The ledger ports, implemented by delegating to the operation modules.
    use std::time::SystemTime;

    use async_trait::async_trait;

    use super::DynamoLedger;
    use crate::application::error::LineupError;
    use crate::application::ports::ledger::{
        Confirmation, HoldRequest, HoldSweeper, Order, PaymentConfirmation, PaymentLedger,
        SeatLedger, SweepReport, TicketLimits,
    };
    use crate::domain::ids::OrderId;

    #[async_trait]
    impl SeatLedger for DynamoLedger {
        async fn hold(&self, request: &HoldRequest) -> Result<Order, LineupError> {
            self.hold_seats(request).await
        }

        async fn order(&self, order: &OrderId) -> Result<Option<Order>, LineupError> {
            self.read_order(order)
                .await?
                .map(|item| item.into_order())
                .transpose()
        }

        async fn release(&self, order: &Order) -> Result<(), LineupError> {
            self.release_order(order).await
        }
    }

    #[async_trait]
    impl PaymentLedger for DynamoLedger {
        async fn confirm(
            &self,
            payment: &PaymentConfirmation,
            limits: &dyn TicketLimits,
        ) -> Result<Confirmation, LineupError> {
            self.confirm_payment(payment, limits).await
        }
    }

    #[async_trait]
    impl HoldSweeper for DynamoLedger {
        async fn expire_lapsed(&self, now: SystemTime) -> Result<SweepReport, LineupError> {
            self.sweep_lapsed(now).await
        }
    }
}
