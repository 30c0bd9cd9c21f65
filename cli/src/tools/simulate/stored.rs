//! What the ledger actually stored for the simulated event, read straight from the tables
//! (not through the API, which shows the customer's view): the ground truth the invariants are
//! checked against. Attribute names as in `shared/src/adapters/dynamo/items.rs`.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use lineup::adapters::dynamo::items::{IDEMPOTENCY_PREFIX, ORDER_PREFIX};
use lineup::adapters::dynamo::TableNames;
use serde::Serialize;

use super::SimulateError;

type Item = HashMap<String, AttributeValue>;

/// A seat item: `pk` = `<event>#<seat>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSeat {
    pub seat_id: String,
    /// AVAILABLE, HELD or SOLD.
    pub status: String,
    /// The order holding (or, once SOLD, owning) the seat.
    pub held_by: Option<String>,
    pub price: i64,
}

/// An order item: `pk` = `ORDER#<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredOrder {
    pub order_id: String,
    pub customer_id: String,
    /// PENDING, PAID, EXPIRED, RELEASED, REFUND_REQUIRED or REFUNDED.
    pub status: String,
    pub seat_ids: Vec<String>,
    pub amount: i64,
    pub currency: String,
    /// The provider payment checkout made for the order, once it made one.
    pub checkout_payment_id: Option<String>,
    /// The payment that settled the order (PAID, REFUND_REQUIRED, REFUNDED).
    pub payment_id: Option<String>,
}

/// Every item of `table` whose `pk` starts with `prefix`, and (when given) whose `event_id` is
/// `event`.
async fn scan(
    client: &Client,
    table: &str,
    prefix: &str,
    event: Option<&str>,
) -> Result<Vec<Item>, SimulateError> {
    let mut request = client
        .scan()
        .table_name(table)
        .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_owned()));
    request = match event {
        Some(event) => request
            .filter_expression("begins_with(pk, :prefix) AND event_id = :event")
            .expression_attribute_values(":event", AttributeValue::S(event.to_owned())),
        None => request.filter_expression("begins_with(pk, :prefix)"),
    };
    let mut pages = request.into_paginator().items().send();
    let mut items = Vec::new();
    while let Some(item) = pages.next().await {
        let item = item.map_err(|error| SimulateError::Scan {
            table: table.to_owned(),
            source: Box::new(aws_sdk_dynamodb::Error::from(error)),
        })?;
        items.push(item);
    }
    Ok(items)
}

/// Reads typed attributes of one item, naming the table and key when one is missing.
struct Reader<'a> {
    table: &'a str,
    item: &'a Item,
}

impl Reader<'_> {
    fn problem(&self, problem: String) -> SimulateError {
        let key = match self.item.get("pk") {
            Some(AttributeValue::S(pk)) => pk.clone(),
            _ => "(no pk)".to_owned(),
        };
        SimulateError::UnreadableItem {
            table: self.table.to_owned(),
            key,
            problem,
        }
    }

    fn string(&self, name: &str) -> Result<String, SimulateError> {
        self.optional_string(name)?
            .ok_or_else(|| self.problem(format!("no string attribute `{name}`")))
    }

    fn optional_string(&self, name: &str) -> Result<Option<String>, SimulateError> {
        match self.item.get(name) {
            None | Some(AttributeValue::Null(_)) => Ok(None),
            Some(AttributeValue::S(value)) => Ok(Some(value.clone())),
            Some(_) => Err(self.problem(format!("`{name}` is not a string"))),
        }
    }

    fn number(&self, name: &str) -> Result<i64, SimulateError> {
        match self.item.get(name) {
            Some(AttributeValue::N(value)) => value
                .parse()
                .map_err(|_| self.problem(format!("`{name}` is not an integer: {value}"))),
            _ => Err(self.problem(format!("no number attribute `{name}`"))),
        }
    }

    fn strings(&self, name: &str) -> Result<Vec<String>, SimulateError> {
        match self.item.get(name) {
            Some(AttributeValue::Ss(values)) => Ok(values.clone()),
            Some(AttributeValue::L(values)) => values
                .iter()
                .map(|value| match value {
                    AttributeValue::S(value) => Ok(value.clone()),
                    _ => Err(self.problem(format!("`{name}` holds a non-string"))),
                })
                .collect(),
            _ => Err(self.problem(format!("no list attribute `{name}`"))),
        }
    }
}

async fn read_seats(
    client: &Client,
    table: &str,
    event: &str,
) -> Result<Vec<StoredSeat>, SimulateError> {
    let mut seats = scan(client, table, &format!("{event}#"), Some(event))
        .await?
        .iter()
        .map(|item| {
            let read = Reader { table, item };
            Ok(StoredSeat {
                seat_id: read.string("seat_id")?,
                status: read.string("status")?,
                held_by: read.optional_string("held_by")?,
                price: read.number("price")?,
            })
        })
        .collect::<Result<Vec<_>, SimulateError>>()?;
    seats.sort_by(|a, b| a.seat_id.cmp(&b.seat_id));
    Ok(seats)
}

async fn read_orders(
    client: &Client,
    table: &str,
    event: &str,
) -> Result<Vec<StoredOrder>, SimulateError> {
    let mut orders = scan(client, table, ORDER_PREFIX, Some(event))
        .await?
        .iter()
        .map(|item| {
            let read = Reader { table, item };
            Ok(StoredOrder {
                order_id: read.string("order_id")?,
                customer_id: read.string("customer_id")?,
                status: read.string("status")?,
                seat_ids: read.strings("seat_ids")?,
                amount: read.number("amount")?,
                currency: read.string("currency")?,
                checkout_payment_id: read.optional_string("checkout_payment_id")?,
                payment_id: read.optional_string("payment_id")?,
            })
        })
        .collect::<Result<Vec<_>, SimulateError>>()?;
    orders.sort_by(|a, b| a.order_id.cmp(&b.order_id));
    Ok(orders)
}

/// The prefix of the idempotency records reconciliation settles under (`reconcile:<paymentId>`,
/// `shared/src/application/reconcile.rs`): written in the settling transaction itself, so one
/// exists only for a payment reconciliation settled (not for one the webhook settled first).
const RECONCILE_KEY_PREFIX: &str = "reconcile:";

/// A settlement reconciliation made: the order and what it became (`PAID`, `REFUND_REQUIRED`...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciled {
    pub payment_id: String,
    pub order_id: String,
    pub outcome: String,
}

/// Every settlement reconciliation made (all events: the records name no event; the caller
/// keeps its own orders').
pub async fn reconciled(
    client: &Client,
    tables: &TableNames,
) -> Result<Vec<Reconciled>, SimulateError> {
    let table = tables.orders.as_str();
    let prefix = format!("{IDEMPOTENCY_PREFIX}{RECONCILE_KEY_PREFIX}");
    scan(client, table, &prefix, None)
        .await?
        .iter()
        .map(|item| {
            let read = Reader { table, item };
            let pk = read.string("pk")?;
            Ok(Reconciled {
                payment_id: pk.strip_prefix(&prefix).unwrap_or(&pk).to_owned(),
                order_id: read.string("order_id")?,
                outcome: read.string("outcome")?,
            })
        })
        .collect()
}

/// The event's orders and seats read once, in that order: a reading taken while settlements
/// land may pair an order with its seats from a moment later (a sale sells the seats and pays
/// the order in one transaction, so a PAID order's seats are SOLD in any later reading).
pub async fn read_once(
    client: &Client,
    tables: &TableNames,
    event: &str,
) -> Result<Snapshot, SimulateError> {
    Ok(Snapshot {
        orders: read_orders(client, &tables.orders, event).await?,
        seats: read_seats(client, &tables.seats, event).await?,
        stable: false,
    })
}

/// How many times the tables are read before settling for a reading that kept moving.
const SNAPSHOT_ATTEMPTS: u32 = 5;
const SNAPSHOT_RETRY: Duration = Duration::from_secs(1);

/// The event's orders and seats at one moment (as far as scans can tell).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub orders: Vec<StoredOrder>,
    pub seats: Vec<StoredSeat>,
    /// Whether a second reading found both unchanged (else writes kept landing while reading).
    pub stable: bool,
}

/// Two scans never see one instant: a webhook or the expiry sweep landing between them would
/// pair orders with seats from another moment, and the checks would find a "broken" sale that
/// never was. So the orders, the seats, then both again: when neither moved in between, they
/// agree. Otherwise read again, a few times.
pub async fn snapshot(
    client: &Client,
    tables: &TableNames,
    event: &str,
) -> Result<Snapshot, SimulateError> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let orders = read_orders(client, &tables.orders, event).await?;
        let seats = read_seats(client, &tables.seats, event).await?;
        let orders_again = read_orders(client, &tables.orders, event).await?;
        let seats_again = read_seats(client, &tables.seats, event).await?;
        let stable = orders == orders_again && seats == seats_again;
        if stable || attempts >= SNAPSHOT_ATTEMPTS {
            return Ok(Snapshot {
                orders: orders_again,
                seats: seats_again,
                stable,
            });
        }
        tokio::time::sleep(SNAPSHOT_RETRY).await;
    }
}
