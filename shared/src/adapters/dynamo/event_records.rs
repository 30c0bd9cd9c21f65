//! The events table (`EVENTS_TABLE`): key `pk`, `sk`, every record of an event under
//! `pk` = `EVENT#<eventId>`:
//!
//! | `sk` | what |
//! |---|---|
//! | `STATE#SETTINGS` | the settings, the draw seed and its commitment |
//! | `STATE#CURSOR` | the admission cursor (one write per admit tick at most) |
//! | `STATE#NUMBERS` | `ceiling`: the highest queue number the cache may hand out (raised a range at a time, before the numbers in it are handed out) |
//! | `AUDIT#<ms, 15 digits>#<8 hex>` | one operator change |
//! | `DRAW` | the published draw's summary (JSON, as served) |
//! | `LAYOUT` | the current seat layout's summary (JSON) |
//!
//! plus, each in a partition of its own, the published draw's chunks (`pk` = `DRAW#<eventId>#<prefix>`,
//! `sk` = `CHUNK`; JSON, as served; empty chunks are not stored): at opening every chunk is
//! written and then read in the same minute, tens of thousands of them for a big pre-queue,
//! which one partition (1,000 writes, 3,000 reads a second) could not take; and one item
//! `pk` = `sk` = `OPEN_EVENTS`: the string set of events not closed; and each stored seat layout,
//! in copies of its own ([`super::layouts`]).

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use aws_sdk_dynamodb::Client;

use crate::adapters::dynamo::items::{n, s};
use crate::adapters::dynamo::store_error;
use crate::application::error::LineupError;
use crate::application::ports::event_records::{
    AdmissionCursor, AuditEntry, AuditLog, DrawPublication, DrawPublished, EventRecord,
    EventRecords,
};
use crate::domain::clock::{from_unix_millis, unix_millis};
use crate::domain::draw::{DrawChunk, DrawSeed, DrawSummary};
use crate::domain::event_settings::{EventSettings, QueueState};
use crate::domain::ids::EventId;
use crate::domain::priority_group::PriorityGroups;
use crate::domain::proof_of_work::ChallengeDifficulty;

const SETTINGS_SK: &str = "STATE#SETTINGS";
const CURSOR_SK: &str = "STATE#CURSOR";
const NUMBERS_SK: &str = "STATE#NUMBERS";
const AUDIT_PREFIX: &str = "AUDIT#";
const DRAW_SK: &str = "DRAW";
const CHUNK_SK: &str = "CHUNK";
const OPEN_EVENTS: &str = "OPEN_EVENTS";
/// The event's current layout summary (the layouts themselves: [`super::layouts`]).
pub(crate) const LAYOUT_SK: &str = "LAYOUT";

/// Events' durable records, the audit trail, layouts and the published draw, in the events table.
#[derive(Clone)]
pub struct DynamoEventRecords {
    pub(crate) client: Client,
    pub(crate) table: String,
}

pub(crate) fn event_pk(event: &EventId) -> AttributeValue {
    s(format!("EVENT#{event}"))
}

/// A published chunk's partition: its own.
fn chunk_pk(event: &EventId, prefix: &str) -> AttributeValue {
    s(format!("{DRAW_SK}#{event}#{prefix}"))
}

fn malformed(what: &str) -> LineupError {
    LineupError::SeatStoreReply {
        operation: "events_table",
        reply: format!("malformed {what}"),
    }
}

type Item = std::collections::HashMap<String, AttributeValue>;

fn number(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)?.as_s().ok().map(String::as_str)
}

impl DynamoEventRecords {
    /// Records in the events table named `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The events table's name (for the CLI creating it locally, and tests).
    pub fn table(&self) -> &str {
        &self.table
    }

    pub(crate) async fn body(
        &self,
        pk: AttributeValue,
        sk: &str,
    ) -> Result<Option<String>, LineupError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", pk)
            .key("sk", s(sk))
            .send()
            .await
            .map_err(store_error)?
            .item;
        Ok(item.and_then(|item| text(&item, "body").map(str::to_owned)))
    }

    /// Writes the items, 25 per request and 8 requests at a time (a big draw has tens of
    /// thousands of chunks; one request at a time would take minutes).
    pub(crate) async fn write_all(&self, items: Vec<Item>) -> Result<(), LineupError> {
        crate::adapters::dynamo::batch_write::put_all(&self.client, &self.table, items, 8).await
    }
}

fn settings_from(item: &Item) -> Result<(EventSettings, Option<String>, DrawSeed), LineupError> {
    let required = |name: &str| number(item, name).ok_or_else(|| malformed(name));
    let state = text(item, "state")
        .and_then(QueueState::parse)
        .ok_or_else(|| malformed("state"))?;
    let settings = EventSettings {
        state,
        opens_at: from_unix_millis(required("opens_at_ms")?),
        max_active: required("max_active")? as u32,
        admit_per_second: required("admit_per_sec")? as u32,
        session: Duration::from_millis(required("session_ms")?),
        claim_window: Duration::from_millis(required("claim_ms")?),
        ticket_limit: number(item, "ticket_limit").map(|limit| limit as u32),
        // Absent (or from before the challenge existed): none.
        challenge_difficulty: match number(item, "challenge_difficulty") {
            Some(bits) => ChallengeDifficulty::new(u32::try_from(bits).unwrap_or(u32::MAX))
                .map_err(|_| malformed("challenge_difficulty"))?,
            None => ChallengeDifficulty::NONE,
        },
        // Absent (or from before access codes existed): none required.
        code_required: item
            .get("code_required")
            .and_then(|value| value.as_bool().ok())
            .copied()
            .unwrap_or(false),
        // Absent (or from before priority groups existed): none.
        groups: match text(item, "groups") {
            Some(json) => PriorityGroups::from_json(json).ok_or_else(|| malformed("groups"))?,
            None => PriorityGroups::none(),
        },
    };
    let seed = text(item, "draw_seed")
        .and_then(DrawSeed::parse)
        .ok_or_else(|| malformed("draw_seed"))?;
    Ok((
        settings,
        text(item, "closed_reason").map(str::to_owned),
        seed,
    ))
}

#[async_trait]
impl EventRecords for DynamoEventRecords {
    async fn event(&self, event: &EventId) -> Result<Option<EventRecord>, LineupError> {
        // Both state records in one request: they share the partition and the `STATE#` prefix.
        let items = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :state)")
            .expression_attribute_values(":pk", event_pk(event))
            .expression_attribute_values(":state", s("STATE#"))
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?
            .items
            .unwrap_or_default();
        let find = |sk: &str| items.iter().find(|item| text(item, "sk") == Some(sk));
        let Some(settings) = find(SETTINGS_SK) else {
            return Ok(None);
        };
        let (settings, closed_reason, seed) = settings_from(settings)?;
        let cursor = match find(CURSOR_SK).and_then(|item| text(item, "body")) {
            Some(body) => serde_json::from_str(body).map_err(|_| malformed("cursor"))?,
            None => AdmissionCursor::default(),
        };
        let number_ceiling = find(NUMBERS_SK)
            .and_then(|item| number(item, "ceiling"))
            .unwrap_or(0);
        Ok(Some(EventRecord {
            settings,
            closed_reason,
            seed,
            cursor,
            number_ceiling,
        }))
    }

    async fn save_settings(
        &self,
        event: &EventId,
        settings: &EventSettings,
        closed_reason: Option<&str>,
    ) -> Result<DrawSeed, LineupError> {
        let new_seed = DrawSeed::generate();
        let mut update = String::from(
            "SET #state = :state, opens_at_ms = :opens, max_active = :max, admit_per_sec = :rate, \
             session_ms = :session, claim_ms = :claim, updated_at_ms = :now, \
             draw_seed = if_not_exists(draw_seed, :seed), \
             draw_commitment = if_not_exists(draw_commitment, :commitment)",
        );
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", event_pk(event))
            .key("sk", s(SETTINGS_SK))
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":state", s(settings.state.as_str()))
            .expression_attribute_values(":opens", n(unix_millis(settings.opens_at)))
            .expression_attribute_values(":max", n(settings.max_active))
            .expression_attribute_values(":rate", n(settings.admit_per_second))
            .expression_attribute_values(":session", n(settings.session.as_millis()))
            .expression_attribute_values(":claim", n(settings.claim_window.as_millis()))
            .expression_attribute_values(":now", n(unix_millis(std::time::SystemTime::now())))
            .expression_attribute_values(":seed", s(new_seed.reveal()))
            .expression_attribute_values(":commitment", s(new_seed.commitment()));
        if let Some(limit) = settings.ticket_limit {
            update.push_str(", ticket_limit = :limit");
            request = request.expression_attribute_values(":limit", n(limit));
        }
        if settings.challenge_difficulty.is_required() {
            update.push_str(", challenge_difficulty = :difficulty");
            request = request.expression_attribute_values(
                ":difficulty",
                n(settings.challenge_difficulty.bits()),
            );
        }
        if settings.code_required {
            update.push_str(", code_required = :code_required");
            request =
                request.expression_attribute_values(":code_required", AttributeValue::Bool(true));
        }
        if !settings.groups.is_empty() {
            update.push_str(", groups = :groups");
            request = request.expression_attribute_values(":groups", s(settings.groups.to_json()));
        }
        if let Some(reason) = closed_reason {
            update.push_str(", closed_reason = :reason");
            request = request.expression_attribute_values(":reason", s(reason));
        }
        let mut removed = Vec::new();
        if settings.ticket_limit.is_none() {
            removed.push("ticket_limit");
        }
        if !settings.challenge_difficulty.is_required() {
            removed.push("challenge_difficulty");
        }
        if !settings.code_required {
            removed.push("code_required");
        }
        if settings.groups.is_empty() {
            removed.push("groups");
        }
        if closed_reason.is_none() {
            removed.push("closed_reason");
        }
        if !removed.is_empty() {
            update.push_str(" REMOVE ");
            update.push_str(&removed.join(", "));
        }
        let stored = request
            .update_expression(update)
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(store_error)?
            .attributes
            .unwrap_or_default();
        let seed = text(&stored, "draw_seed")
            .and_then(DrawSeed::parse)
            .ok_or_else(|| malformed("draw_seed"))?;

        let open_set = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(OPEN_EVENTS))
            .key("sk", s(OPEN_EVENTS))
            .expression_attribute_values(
                ":event",
                AttributeValue::Ss(vec![event.as_str().to_owned()]),
            );
        let open_set = if settings.state == QueueState::Closed {
            open_set.update_expression("DELETE events :event")
        } else {
            open_set.update_expression("ADD events :event")
        };
        open_set.send().await.map_err(store_error)?;
        Ok(seed)
    }

    async fn save_cursor(
        &self,
        event: &EventId,
        cursor: &AdmissionCursor,
    ) -> Result<(), LineupError> {
        let body = serde_json::to_string(cursor).map_err(|_| malformed("cursor"))?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", event_pk(event))
            .item("sk", s(CURSOR_SK))
            .item("serving", n(cursor.serving))
            .item("next_number", n(cursor.next_number))
            .item("body", s(body))
            // Two admitters may save at once: the one further along wins (a refused save leaves a
            // `serving` at or past this one's, which is all an admitter relies on).
            .condition_expression("attribute_not_exists(serving) OR serving <= :serving")
            .expression_attribute_values(":serving", n(cursor.serving))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(service))
                if matches!(
                    service.err(),
                    PutItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                Ok(())
            }
            Err(other) => Err(store_error(other)),
        }
    }

    async fn reserve_numbers(&self, event: &EventId, at_least: u64) -> Result<u64, LineupError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", event_pk(event))
            .key("sk", s(NUMBERS_SK))
            .update_expression("SET ceiling = :ceiling")
            .condition_expression("attribute_not_exists(ceiling) OR ceiling < :ceiling")
            .expression_attribute_values(":ceiling", n(at_least))
            .send()
            .await;
        match result {
            Ok(_) => Ok(at_least),
            // Someone reserved further already: that ceiling is durable too.
            Err(SdkError::ServiceError(service))
                if matches!(
                    service.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                let stored = self
                    .client
                    .get_item()
                    .table_name(&self.table)
                    .key("pk", event_pk(event))
                    .key("sk", s(NUMBERS_SK))
                    .consistent_read(true)
                    .send()
                    .await
                    .map_err(store_error)?
                    .item
                    .and_then(|item| number(&item, "ceiling"))
                    .ok_or_else(|| malformed("number ceiling"))?;
                Ok(stored)
            }
            Err(other) => Err(store_error(other)),
        }
    }

    async fn open_events(&self) -> Result<Vec<EventId>, LineupError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(OPEN_EVENTS))
            .key("sk", s(OPEN_EVENTS))
            .send()
            .await
            .map_err(store_error)?
            .item
            .unwrap_or_default();
        let names = item
            .get("events")
            .and_then(|set| set.as_ss().ok())
            .cloned()
            .unwrap_or_default();
        // Groups' lines (`<event>.<group>`) are ticked like events.
        Ok(names
            .iter()
            .filter_map(|name| EventId::parse_line(name).ok())
            .collect())
    }
}

#[async_trait]
impl AuditLog for DynamoEventRecords {
    async fn record(&self, event: &EventId, entry: &AuditEntry) -> Result<(), LineupError> {
        let tiebreak = format!("{:08x}", uuid::Uuid::new_v4().as_u128() as u32);
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", event_pk(event))
            .item(
                "sk",
                s(format!("{AUDIT_PREFIX}{:015}#{tiebreak}", entry.at_ms)),
            )
            .item(
                "body",
                s(serde_json::to_string(entry).map_err(|_| malformed("audit entry"))?),
            )
            .send()
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn history(&self, event: &EventId) -> Result<Vec<AuditEntry>, LineupError> {
        let mut entries = Vec::new();
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :audit)")
            .expression_attribute_values(":pk", event_pk(event))
            .expression_attribute_values(":audit", s(AUDIT_PREFIX))
            .into_paginator()
            .items()
            .send();
        while let Some(item) = pages.next().await {
            let item = item.map_err(store_error)?;
            let body = text(&item, "body").ok_or_else(|| malformed("audit entry"))?;
            entries.push(serde_json::from_str(body).map_err(|_| malformed("audit entry"))?);
        }
        Ok(entries)
    }
}

#[async_trait]
impl DrawPublication for DynamoEventRecords {
    async fn publish_chunks(
        &self,
        event: &EventId,
        chunks: &[DrawChunk],
    ) -> Result<(), LineupError> {
        let mut items = Vec::new();
        for chunk in chunks.iter().filter(|chunk| !chunk.entries.is_empty()) {
            let body = serde_json::to_string(chunk).map_err(|_| malformed("draw chunk"))?;
            items.push(
                [
                    ("pk".to_owned(), chunk_pk(event, &chunk.prefix)),
                    ("sk".to_owned(), s(CHUNK_SK)),
                    ("body".to_owned(), s(body)),
                ]
                .into_iter()
                .collect(),
            );
        }
        self.write_all(items).await
    }

    /// A put conditioned on no summary being stored. Refused, the stored one is read (a
    /// consistent read) and compared: the same draw is [`DrawPublished::AlreadyPublished`] and
    /// keeps its first publication time, another one a [`DrawPublished::Conflict`].
    async fn publish_summary(
        &self,
        event: &EventId,
        summary: &DrawSummary,
    ) -> Result<DrawPublished, LineupError> {
        let body = serde_json::to_string(summary).map_err(|_| malformed("draw summary"))?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", event_pk(event))
            .item("sk", s(DRAW_SK))
            .item("body", s(body))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match result {
            Ok(_) => return Ok(DrawPublished::Published),
            Err(SdkError::ServiceError(service))
                if matches!(
                    service.err(),
                    PutItemError::ConditionalCheckFailedException(_)
                ) => {}
            Err(other) => return Err(store_error(other)),
        }
        let stored = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", event_pk(event))
            .key("sk", s(DRAW_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?
            .item;
        let published: DrawSummary = stored
            .as_ref()
            .and_then(|item| text(item, "body"))
            .ok_or_else(|| malformed("draw summary"))
            .and_then(|body| serde_json::from_str(body).map_err(|_| malformed("draw summary")))?;
        Ok(if published.same_draw(summary) {
            DrawPublished::AlreadyPublished
        } else {
            DrawPublished::Conflict(Box::new(published))
        })
    }

    async fn draw_summary(&self, event: &EventId) -> Result<Option<DrawSummary>, LineupError> {
        self.body(event_pk(event), DRAW_SK)
            .await?
            .map(|body| serde_json::from_str(&body).map_err(|_| malformed("draw summary")))
            .transpose()
    }

    async fn draw_chunk(
        &self,
        event: &EventId,
        prefix: &str,
    ) -> Result<Option<DrawChunk>, LineupError> {
        if let Some(body) = self.body(chunk_pk(event, prefix), CHUNK_SK).await? {
            return serde_json::from_str(&body)
                .map(Some)
                .map_err(|_| malformed("draw chunk"));
        }
        // Not stored: empty if the draw is published, unknown if not.
        Ok(self.draw_summary(event).await?.map(|_| DrawChunk {
            prefix: prefix.to_owned(),
            entries: Vec::new(),
        }))
    }
}
