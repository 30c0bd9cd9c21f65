//! A stand-in for the downstream ticketing service: consumes the ticket-issued queue (SQS FIFO),
//! keeps each message by order, and counts how many arrived per order, so the page can show the
//! issued ticket and the simulation can check "one ticket message per paid order".

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lineup::application::ports::outbox::OutboxEvent;
use serde::{Deserialize, Serialize};

use super::api_gateway::error;

/// One order's messages as `GET /dev/tickets` shows them (`lineup simulate` reads them back).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub order_id: String,
    /// How many distinct SQS messages arrived for this order (one, unless it was sent twice).
    pub messages: usize,
    /// How many times a message for it was received: more than `messages` when SQS delivered
    /// one again (at-least-once delivery; consumers must be idempotent on `outboxId`).
    pub deliveries: u32,
    /// The distinct outbox events the messages carried.
    pub outbox_ids: Vec<String>,
    /// The first message's body.
    pub ticket: OutboxEvent,
    #[serde(skip)]
    message_ids: BTreeSet<String>,
}

/// How long a received message stays invisible to other receives: far longer than recording
/// and deleting a batch takes, even on a busy emulator.
const VISIBILITY_SECONDS: i32 = 300;

#[derive(Clone, Default)]
pub struct TicketDesk {
    tickets: Arc<Mutex<BTreeMap<String, Ticket>>>,
}

impl TicketDesk {
    fn receive(&self, message_id: &str, event: OutboxEvent) {
        let Ok(mut tickets) = self.tickets.lock() else {
            return;
        };
        let ticket = tickets
            .entry(event.order_id.clone())
            .or_insert_with(|| Ticket {
                order_id: event.order_id.clone(),
                messages: 0,
                deliveries: 0,
                outbox_ids: Vec::new(),
                ticket: event.clone(),
                message_ids: BTreeSet::new(),
            });
        ticket.deliveries += 1;
        if ticket.message_ids.insert(message_id.to_owned()) {
            ticket.messages += 1;
        }
        if !ticket.outbox_ids.contains(&event.outbox_id) {
            ticket.outbox_ids.push(event.outbox_id);
        }
    }

    /// Receives, records and deletes messages until the task is dropped.
    pub async fn consume(self, sqs: aws_sdk_sqs::Client, queue_url: String) {
        loop {
            let received = sqs
                .receive_message()
                .queue_url(&queue_url)
                .max_number_of_messages(10)
                .visibility_timeout(VISIBILITY_SECONDS)
                .wait_time_seconds(1)
                .send()
                .await;
            let messages = match received {
                Ok(output) => output.messages.unwrap_or_default(),
                Err(receive_error) => {
                    tracing::warn!(error = %receive_error, "ticket desk: could not receive; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if messages.is_empty() {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            let mut deletes = Vec::new();
            for (n, message) in messages.iter().enumerate() {
                let message_id = message.message_id().unwrap_or_default();
                match message.body().map(serde_json::from_str::<OutboxEvent>) {
                    Some(Ok(event)) => {
                        tracing::info!(order = %event.order_id, kind = ?event.kind, message_id, "ticket desk: message received");
                        self.receive(message_id, event);
                    }
                    _ => tracing::error!(
                        message_id,
                        "ticket desk: a message that is not an outbox event"
                    ),
                }
                if let Some(receipt) = message.receipt_handle() {
                    let entry = DeleteMessageBatchRequestEntry::builder()
                        .id(n.to_string())
                        .receipt_handle(receipt)
                        .build();
                    match entry {
                        Ok(entry) => deletes.push(entry),
                        Err(build_error) => {
                            tracing::error!(error = %build_error, "ticket desk: cannot delete a message")
                        }
                    }
                }
            }
            let deleted = sqs
                .delete_message_batch()
                .queue_url(&queue_url)
                .set_entries(Some(deletes))
                .send()
                .await;
            match deleted {
                Ok(output) if output.failed().is_empty() => {}
                Ok(output) => tracing::warn!(
                    failed = output.failed().len(),
                    "ticket desk: some messages were not deleted; SQS will deliver them again"
                ),
                Err(delete_error) => {
                    tracing::warn!(error = %delete_error, "ticket desk: could not delete messages; SQS will deliver them again")
                }
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TicketQuery {
    event_id: Option<String>,
}

/// `GET /dev/tickets?eventId=`: every order's ticket messages (of one event).
pub async fn list(State(desk): State<TicketDesk>, Query(query): Query<TicketQuery>) -> Response {
    let tickets: Vec<Ticket> = desk
        .tickets
        .lock()
        .map(|tickets| {
            tickets
                .values()
                .filter(|ticket| {
                    query
                        .event_id
                        .as_ref()
                        .is_none_or(|event| &ticket.ticket.event_id == event)
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    Json(serde_json::json!({ "tickets": tickets })).into_response()
}

/// `GET /dev/tickets/{orderId}`: the order's ticket, once its message has arrived.
pub async fn one(State(desk): State<TicketDesk>, Path(order_id): Path<String>) -> Response {
    let found = desk
        .tickets
        .lock()
        .ok()
        .and_then(|tickets| tickets.get(&order_id).cloned());
    match found {
        Some(ticket) => Json(ticket).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "ticket_not_issued",
            "no ticket message has arrived for this order (yet)",
        ),
    }
}
