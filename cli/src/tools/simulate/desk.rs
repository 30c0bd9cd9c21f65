//! Waiting for the ticket desk: sales reach it asynchronously (outbox table → DynamoDB stream →
//! outbox handler → SQS FIFO → desk), so after the last customer the simulation waits until the
//! desk has heard of each settled order and the counts have stopped moving.

use std::time::{Duration, Instant};

use lineup::application::ports::outbox::OutboxEventKind;

use super::api_client::{Api, CallError};
use super::SimulateError;
use crate::dev::ticket_desk::Ticket;

/// How many identical readings in a row count as "stopped moving".
const STABLE_READINGS: u32 = 3;
const READ_INTERVAL: Duration = Duration::from_secs(1);

/// What the desk had when the wait ended.
#[derive(Debug)]
pub struct DeskReading {
    pub tickets: Vec<Ticket>,
    /// Whether it reached the expected counts and held them (else the wait timed out).
    pub caught_up: bool,
    pub waited: Duration,
}

/// What the desk received, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeskCounts {
    /// Orders whose message is a `ticket_issued` event.
    pub issued_orders: usize,
    /// Orders whose message is a `refund_required` event.
    pub refund_orders: usize,
    /// Distinct outbox events (by outbox id).
    pub outbox_events: usize,
    /// Distinct SQS messages: more than the outbox events when one was sent twice.
    pub messages: usize,
    /// Receipts of those messages: more than `messages` when SQS delivered one again.
    pub deliveries: u64,
}

impl DeskCounts {
    pub fn of(tickets: &[Ticket]) -> Self {
        let issued_orders = tickets
            .iter()
            .filter(|t| t.ticket.kind == OutboxEventKind::TicketIssued)
            .count();
        Self {
            issued_orders,
            refund_orders: tickets.len() - issued_orders,
            outbox_events: tickets.iter().map(|t| t.outbox_ids.len()).sum(),
            messages: tickets.iter().map(|t| t.messages).sum(),
            deliveries: tickets.iter().map(|t| u64::from(t.deliveries)).sum(),
        }
    }
}

/// Reads `GET /dev/tickets?eventId=` every second until the desk has `paid` ticket_issued and
/// `refunds` refund_required orders, unchanged over a few readings, or `timeout` passes.
pub async fn wait_for_desk(
    api: &Api,
    event: &str,
    (paid, refunds): (usize, usize),
    timeout: Duration,
) -> Result<DeskReading, SimulateError> {
    let started = Instant::now();
    let mut last: Option<(Vec<Ticket>, DeskCounts)> = None;
    let mut last_error: Option<CallError> = None;
    let mut stable = 0;
    let expected =
        |counts: &DeskCounts| counts.issued_orders == paid && counts.refund_orders == refunds;
    loop {
        match api.tickets(event).await {
            Ok(tickets) => {
                let now = DeskCounts::of(&tickets);
                let same = last.as_ref().is_some_and(|(_, before)| *before == now);
                stable = if same { stable + 1 } else { 1 };
                last = Some((tickets, now));
                if expected(&now) && stable >= STABLE_READINGS {
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
        (Some((tickets, counts)), _) => Ok(DeskReading {
            caught_up: expected(&counts) && stable >= STABLE_READINGS,
            tickets,
            waited: started.elapsed(),
        }),
        (None, Some(source)) => Err(SimulateError::Api {
            what: "reading the ticket desk (GET /dev/tickets)",
            source,
        }),
        (None, None) => Ok(DeskReading {
            tickets: Vec::new(),
            caught_up: false,
            waited: started.elapsed(),
        }),
    }
}
