//! Waiting for the ticket desk: sales reach it asynchronously (outbox table → DynamoDB stream →
//! outbox handler → SQS FIFO → desk), so after the last customer the simulation waits until the
//! desk has one message for each settled order and the count has stopped moving.

use std::time::{Duration, Instant};

use super::api_client::{Api, CallError, DeskEntry};
use super::SimulateError;

/// How many identical readings in a row count as "stopped moving".
const STABLE_READINGS: u32 = 3;
const READ_INTERVAL: Duration = Duration::from_secs(1);

/// What the desk had when the wait ended.
#[derive(Debug)]
pub struct DeskReading {
    pub entries: Vec<DeskEntry>,
    /// Whether it reached the expected counts and held them (else the wait timed out).
    pub caught_up: bool,
    pub waited: Duration,
}

/// `(orders with a ticket_issued message, orders with a refund_required one, all messages)`.
pub fn counts(entries: &[DeskEntry]) -> (usize, usize, u64) {
    let issued = entries
        .iter()
        .filter(|e| e.ticket.is_ticket_issued())
        .count();
    let refunds = entries.len() - issued;
    let messages = entries.iter().map(|e| e.messages).sum();
    (issued, refunds, messages)
}

/// Reads `GET /dev/tickets?eventId=` every second until the desk has `paid` ticket_issued and
/// `refunds` refund_required orders, unchanged over a few readings, or `timeout` passes.
pub async fn wait_for_desk(
    api: &Api,
    event: &str,
    paid: usize,
    refunds: usize,
    timeout: Duration,
) -> Result<DeskReading, SimulateError> {
    let started = Instant::now();
    let mut last: Option<(Vec<DeskEntry>, (usize, usize, u64))> = None;
    let mut last_error: Option<CallError> = None;
    let mut stable = 0;
    loop {
        match api.tickets(event).await {
            Ok(entries) => {
                let now = counts(&entries);
                let same = last.as_ref().is_some_and(|(_, before)| *before == now);
                stable = if same { stable + 1 } else { 1 };
                let expected = now.0 == paid && now.1 == refunds;
                last = Some((entries, now));
                if expected && stable >= STABLE_READINGS {
                    break;
                }
            }
            Err(error) => last_error = Some(error),
        }
        if started.elapsed() >= timeout {
            break;
        }
        tokio::time::sleep(READ_INTERVAL).await;
    }
    match (last, last_error) {
        (Some((entries, (issued, refunded, _))), _) => Ok(DeskReading {
            caught_up: issued == paid && refunded == refunds && stable >= STABLE_READINGS,
            entries,
            waited: started.elapsed(),
        }),
        (None, Some(source)) => Err(SimulateError::Api {
            what: "reading the ticket desk (GET /dev/tickets)",
            source,
        }),
        (None, None) => Ok(DeskReading {
            entries: Vec::new(),
            caught_up: false,
            waited: started.elapsed(),
        }),
    }
}
