//! The samples in `events/` against a prepared emulator: the event they are about (`demo`, its
//! seats ), and the one live value that cannot be written into a sample once and
//! for all: a webhook signed now, for an order held a moment ago.
//!
//! The other live values come from the functions' own answers, in the order a customer gets
//! them: `poll.json` answers the `accessToken` that goes into `hold.json`'s `x-queue-token`,
//! `hold.json` the `orderId` that goes into `order.json`, `release.json` and `--confirm`.

use std::time::SystemTime;

use lineup::adapters::aws::AwsSettings;
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::DynamoLedger;
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::ports::ledger::{Order, SeatLedger};
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::{EventId, OrderId, SeatId};
use lineup::domain::layout::SeatLayout;
use lineup::domain::seat::NewSeat;
use lineup::domain::webhook_signature::WebhookSecret;
use serde_json::Value;

use super::plan::{PlanError, ResourcePlan};
use super::{secrets, table_names, LocalAwsError};
use crate::event_admin::{self, SettingsChange};

/// The event the samples in `events/` are about.
pub const SAMPLES_EVENT: &str = "demo";

/// `events/confirm.json`, as built.
const CONFIRM_SAMPLE: &str = include_str!("../../../events/confirm.json");

#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error("{0:?} is not an order id (a UUID, as hold.json answers it)")]
    OrderId(String),
    #[error("no order {0} in the orders table")]
    NoOrder(String),
    #[error("the webhook secret {0} is not in the emulator (run `lineup local-aws` first)")]
    NoWebhookSecret(String),
    #[error("the webhook secret {0} is too short to sign with")]
    WebhookSecret(String),
    #[error("reading the order")]
    Ledger(#[source] lineup::application::error::LineupError),
}

/// The samples' event id.
pub fn samples_event() -> EventId {
    EventId::parse(SAMPLES_EVENT).expect("the samples' event id is valid")
}

/// The samples' seats: `A-001` to `A-100` on the Floor, 12,000 KRW each (`hold.json` holds
/// `confirm.json` pays 24,000 KRW for them).
pub fn samples_layout() -> SeatLayout {
    let seats: Vec<NewSeat> = (1..=100)
        .map(|n| NewSeat {
            seat_id: SeatId::parse(&format!("A-{n:03}")).expect("a valid seat id"),
            section: "Floor".into(),
            row: "A".into(),
            price: 12_000,
            currency: "KRW".into(),
        })
        .collect();
    SeatLayout::from_seats(&seats).expect("the samples' layout is valid")
}

/// Seeds and opens the samples' event on `queue` and the plan's tables, unless it exists.
pub async fn open_samples_event(
    aws: &AwsSettings,
    plan: &ResourcePlan,
    queue: &RedisQueue,
) -> Result<Option<EventSettings>, LocalAwsError> {
    let (tables, events_table) = table_names(plan)?;
    let dynamodb = lineup::adapters::aws::dynamodb(aws);
    let ledger = DynamoLedger::new(dynamodb.clone(), tables);
    let records = DynamoEventRecords::new(dynamodb, events_table);
    Ok(event_admin::seed_and_open_new(
        &ledger,
        &records,
        queue,
        &samples_event(),
        &samples_layout(),
        &SettingsChange::default(),
        "lineup local-aws",
        SystemTime::now(),
    )
    .await?)
}

/// `events/confirm.json` for `order`: its id in the path, a body paying its amount in its
/// currency, and a `Lineup-Signature` made at `now` with `secret`.
pub fn signed_confirm(
    order: &Order,
    payment_id: &str,
    secret: &WebhookSecret,
    now: SystemTime,
) -> Value {
    let mut event: Value =
        serde_json::from_str(CONFIRM_SAMPLE).expect("events/confirm.json is JSON");
    let order_id = order.order_id.to_string();
    let path = format!("/orders/{order_id}/confirm");
    event["rawPath"] = path.clone().into();
    event["requestContext"]["http"]["path"] = path.into();
    event["pathParameters"]["orderId"] = order_id.clone().into();
    let body = serde_json::json!({
        "orderId": order_id,
        "paymentId": payment_id,
        "amount": order.amount,
        "currency": order.currency,
    })
    .to_string();
    event["headers"]["lineup-signature"] = secret.sign(now, body.as_bytes()).into();
    event["body"] = body.into();
    event
}

/// [`signed_confirm`] for the order `order_id` as the orders table has it, signed with the
/// webhook secret the functions read from the emulator.
pub async fn signed_confirm_for(
    aws: &AwsSettings,
    plan: &ResourcePlan,
    order_id: &str,
    now: SystemTime,
) -> Result<Value, LocalAwsError> {
    let order_id =
        OrderId::parse(order_id).map_err(|_| SampleError::OrderId(order_id.to_owned()))?;
    let (tables, _) = table_names(plan)?;
    let ledger = DynamoLedger::new(lineup::adapters::aws::dynamodb(aws), tables);
    let order = ledger
        .order(&order_id)
        .await
        .map_err(SampleError::Ledger)?
        .ok_or_else(|| SampleError::NoOrder(order_id.to_string()))?;
    let secret_name = plan
        .name_of("WebhookSecret")
        .ok_or_else(|| PlanError::Unnamed {
            variable: "LINEUP_WEBHOOK_SECRET_ARN".into(),
            logical_id: "WebhookSecret".into(),
        })?;
    let value = secrets::current(&lineup::adapters::aws::secretsmanager(aws), secret_name)
        .await?
        .ok_or_else(|| SampleError::NoWebhookSecret(secret_name.to_owned()))?;
    let secret = WebhookSecret::new(value)
        .map_err(|_| SampleError::WebhookSecret(secret_name.to_owned()))?;
    let payment_id = format!("pay_local_{}", &order_id.to_string()[..8]);
    Ok(signed_confirm(&order, &payment_id, &secret, now))
}
