//! A stand-in for the downstream ticketing service: consumes the ticket-issued queue (SQS FIFO),
//! keeps each message by order, and counts how many arrived per order, so the page can show the
//! issued ticket and the simulation can check "one ticket message per paid order".

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lineup::outbox::OutboxEvent;
use serde::{Deserialize, Serialize};

use super::api_gateway::error;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub order_id: String,
    /// How many messages arrived for this order (one, unless something was sent twice).
    pub messages: u32,
    /// The first message's body.
    pub ticket: OutboxEvent,
}

#[derive(Clone, Default)]
pub struct TicketDesk {
    tickets: Arc<Mutex<BTreeMap<String, Ticket>>>,
}

impl TicketDesk {
    fn receive(&self, event: OutboxEvent) {
        let Ok(mut tickets) = self.tickets.lock() else {
            return;
        };
        tickets
            .entry(event.order_id.clone())
            .and_modify(|ticket| ticket.messages += 1)
            .or_insert_with(|| Ticket {
                order_id: event.order_id.clone(),
                messages: 1,
                ticket: event,
            });
    }

    /// Receives, records and deletes messages until the task is dropped.
    pub async fn consume(self, sqs: aws_sdk_sqs::Client, queue_url: String) {
        loop {
            let received = sqs
                .receive_message()
                .queue_url(&queue_url)
                .max_number_of_messages(10)
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
            }
            for message in messages {
                match message.body().map(serde_json::from_str::<OutboxEvent>) {
                    Some(Ok(event)) => {
                        tracing::info!(order = %event.order_id, kind = ?event.kind, "ticket desk: message received");
                        self.receive(event);
                    }
                    _ => {
                        tracing::error!(message_id = ?message.message_id(), "ticket desk: a message that is not an outbox event")
                    }
                }
                if let Some(receipt) = message.receipt_handle() {
                    if let Err(delete_error) = sqs
                        .delete_message()
                        .queue_url(&queue_url)
                        .receipt_handle(receipt)
                        .send()
                        .await
                    {
                        tracing::warn!(error = %delete_error, "ticket desk: could not delete a message");
                    }
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
