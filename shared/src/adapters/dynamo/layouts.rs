//! Seat layouts in the events table, in copies, so that no single key is read by every new
//! `hold` instance.
//!
//! A layout is immutable under its version. Each new `hold` instance reads it once, whole (about
//! 0.65 MB at 50,000 seats, 1.1 MB at 80,000), and at the opening minute new instances start by
//! the hundred a second: from one partition key that is more than the 3,000 read units a second
//! a partition serves (the capacity plan's former HARD LIMIT). So every version is stored
//! [`LAYOUT_COPIES`] times, each copy under a partition key of its own
//! (`LAYOUT#<eventId>#<version>` for copy 0, `LAYOUT#<eventId>#<version>#<k>` for copy k), in
//! binary parts of at most [`LAYOUT_PART_BYTES`] (an 80,000-seat layout is past an item's
//! 400 KB), each part naming how many parts its copy has. A reader picks a copy at random: one
//! Query per new instance, as before, on one of 32 keys instead of one. A copy missing or with
//! a part missing (a layout stored before copies existed, or a store that died half-way) is
//! passed over for copy 0; only if copy 0 is incomplete too is the layout missing.
//!
//! The current layout's summary stays in the event's partition (`EVENT#<eventId>`, `LAYOUT`):
//! small, and read through the seat map's projection in Redis, not per hold.

use std::hash::{BuildHasher, Hasher};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::adapters::dynamo::event_records::{event_pk, DynamoEventRecords, LAYOUT_SK};
use crate::adapters::dynamo::items::{n, s, Item};
use crate::adapters::dynamo::{all_items, store_error};
use crate::application::error::LineupError;
use crate::application::ports::event_records::LayoutStore;
use crate::domain::ids::EventId;
use crate::domain::layout::{LayoutSummary, SeatLayout};

/// How many copies of each layout version are stored. At the opening minute of the largest
/// on-sale the capacity plan models (80,000 seats, 500 admitted a second) new hold instances
/// read about 12,000 units a second of layouts: about 370 per key with 32 copies, an eighth of a
/// partition's 3,000.
pub const LAYOUT_COPIES: u32 = 32;

/// The most bytes of a layout document one item holds.
pub const LAYOUT_PART_BYTES: usize = 350_000;

const PART_PREFIX: &str = "PART#";

/// The partition key of copy `copy` of a layout version.
fn copy_pk(event: &EventId, version: &str, copy: u32) -> AttributeValue {
    if copy == 0 {
        s(format!("{LAYOUT_SK}#{event}#{version}"))
    } else {
        s(format!("{LAYOUT_SK}#{event}#{version}#{copy}"))
    }
}

/// A copy chosen at random (a new `RandomState` is seeded afresh by the standard library).
fn random_copy() -> u32 {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (random % u64::from(LAYOUT_COPIES)) as u32
}

fn malformed(what: &str) -> LineupError {
    LineupError::SeatStoreReply {
        operation: "layouts",
        reply: format!("malformed {what}"),
    }
}

impl DynamoEventRecords {
    /// Copy `copy` of the layout document, if it is there whole.
    async fn layout_copy(
        &self,
        event: &EventId,
        version: &str,
        copy: u32,
    ) -> Result<Option<String>, LineupError> {
        let parts: Vec<Item> = all_items(
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :part)")
                .expression_attribute_values(":pk", copy_pk(event, version, copy))
                .expression_attribute_values(":part", s(PART_PREFIX))
                .into_paginator()
                .items()
                .send(),
        )
        .await?;
        // Each part names its copy's part count (absent on layouts stored before copies: one
        // copy, written whole or not at all as before).
        let expected = parts
            .first()
            .and_then(|part| part.get("parts"))
            .and_then(|count| count.as_n().ok())
            .and_then(|count| count.parse::<usize>().ok());
        if parts.is_empty() || expected.is_some_and(|count| count != parts.len()) {
            return Ok(None);
        }
        // Parts come in key order: PART#000, PART#001...
        let mut document = Vec::new();
        for part in &parts {
            let bytes = part
                .get("body")
                .and_then(|body| body.as_b().ok())
                .ok_or_else(|| malformed("layout part"))?;
            document.extend_from_slice(bytes.as_ref());
        }
        String::from_utf8(document)
            .map(Some)
            .map_err(|_| malformed("layout document"))
    }
}

#[async_trait]
impl LayoutStore for DynamoEventRecords {
    /// Every copy, copy 0 first (the one readers fall back to).
    async fn store_layout(&self, event: &EventId, layout: &SeatLayout) -> Result<(), LineupError> {
        let document = layout.to_document(event);
        let parts: Vec<&[u8]> = document.as_bytes().chunks(LAYOUT_PART_BYTES).collect();
        let parts = &parts;
        let items = (0..LAYOUT_COPIES)
            .flat_map(|copy| {
                parts.iter().enumerate().map(move |(part, bytes)| {
                    [
                        ("pk".to_owned(), copy_pk(event, layout.version(), copy)),
                        ("sk".to_owned(), s(format!("{PART_PREFIX}{part:03}"))),
                        ("parts".to_owned(), n(parts.len() as u64)),
                        (
                            "body".to_owned(),
                            AttributeValue::B(aws_smithy_types::Blob::new(*bytes)),
                        ),
                    ]
                    .into_iter()
                    .collect()
                })
            })
            .collect();
        self.write_all(items).await
    }

    async fn set_current_layout(
        &self,
        event: &EventId,
        summary: &LayoutSummary,
    ) -> Result<(), LineupError> {
        let body = serde_json::to_string(summary).map_err(|_| malformed("layout summary"))?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", event_pk(event))
            .item("sk", s(LAYOUT_SK))
            .item("body", s(body))
            .send()
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn current_layout(&self, event: &EventId) -> Result<Option<LayoutSummary>, LineupError> {
        self.body(event_pk(event), LAYOUT_SK)
            .await?
            .map(|body| serde_json::from_str(&body).map_err(|_| malformed("layout summary")))
            .transpose()
    }

    /// A copy at random; copy 0 if that one is not there whole.
    async fn layout_document(
        &self,
        event: &EventId,
        version: &str,
    ) -> Result<Option<String>, LineupError> {
        let copy = random_copy();
        if let Some(document) = self.layout_copy(event, version, copy).await? {
            return Ok(Some(document));
        }
        if copy == 0 {
            return Ok(None);
        }
        self.layout_copy(event, version, 0).await
    }
}
