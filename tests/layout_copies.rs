//! Layouts stored in copies (`adapters::dynamo::layouts`), against moto: every copy is stored
//! whole, a new `hold` instance's read is one Query on a copy picked at random (so the opening
//! minute's new instances spread over 32 keys instead of one), and a copy missing a part, or a
//! layout stored before copies existed, is still read whole from copy 0.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::layouts::{LAYOUT_COPIES, LAYOUT_PART_BYTES};
use lineup::application::ports::event_records::LayoutStore;
use lineup_cli::local_aws::tables;
use lineup_tests::aws;
use lineup_tests::fresh_event;
use lineup_tests::on_sale::small_layout;

/// Records the partition key of every Query sent (its `:pk` value).
#[derive(Debug, Clone, Default)]
struct QueriedKeys(Arc<Mutex<Vec<String>>>);

impl Intercept for QueriedKeys {
    fn name(&self) -> &'static str {
        "QueriedKeys"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context.request().headers().get("x-amz-target");
        if target.is_some_and(|target| target.ends_with(".Query")) {
            let body: serde_json::Value =
                serde_json::from_slice(context.request().body().bytes().unwrap_or_default())?;
            let pk = body["ExpressionAttributeValues"][":pk"]["S"]
                .as_str()
                .unwrap_or("?")
                .to_owned();
            self.0.lock().unwrap().push(pk);
        }
        Ok(())
    }
}

/// A fresh events table, read through a client that records the keys it queries.
async fn records() -> (
    DynamoEventRecords,
    aws_sdk_dynamodb::Client,
    QueriedKeys,
    String,
) {
    let plain = aws::dynamo().await;
    let table = aws::unique("layouts");
    tables::create(&plain, tables::EVENTS, &table)
        .await
        .expect("create the events table");
    let keys = QueriedKeys::default();
    let settings = aws::settings();
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new(
            settings.region.clone(),
        ))
        .credentials_provider(settings.credentials.clone())
        .http_client(lineup::adapters::aws::http_client())
        .endpoint_url(aws::endpoint_url())
        .interceptor(keys.clone())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    (DynamoEventRecords::new(client, &table), plain, keys, table)
}

/// The part keys stored under `pk`.
async fn parts(client: &aws_sdk_dynamodb::Client, table: &str, pk: &str) -> Vec<String> {
    client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
        .projection_expression("sk")
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default()
        .iter()
        .map(|item| item["sk"].as_s().unwrap().clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_hold_instances_read_the_layout_from_copies_spread_over_many_keys() {
    let (records, plain, keys, table) = records().await;
    let event = fresh_event();
    // 30,000 seats: a document of two parts.
    let layout = small_layout(30_000);
    let document = layout.to_document(&event);
    let part_count = document.len().div_ceil(LAYOUT_PART_BYTES);
    assert_eq!(part_count, 2, "{} bytes", document.len());
    records.store_layout(&event, &layout).await.unwrap();

    // Every copy is there, whole.
    let version = layout.version();
    for copy in 0..LAYOUT_COPIES {
        let pk = if copy == 0 {
            format!("LAYOUT#{event}#{version}")
        } else {
            format!("LAYOUT#{event}#{version}#{copy}")
        };
        assert_eq!(
            parts(&plain, &table, &pk).await,
            ["PART#000", "PART#001"],
            "copy {copy}"
        );
    }

    // 64 new instances: one Query each, on keys spread over the copies.
    keys.0.lock().unwrap().clear();
    for _ in 0..64 {
        let read = records.layout_document(&event, version).await.unwrap();
        assert_eq!(read.as_deref(), Some(document.as_str()));
    }
    let queried = keys.0.lock().unwrap().clone();
    assert_eq!(queried.len(), 64, "one request per read");
    let distinct: BTreeSet<&String> = queried.iter().collect();
    // 64 draws from 32 copies: about 28 distinct on average; fewer than 12 would mean no spread.
    assert!(
        distinct.len() >= 12,
        "{} keys: {distinct:?}",
        distinct.len()
    );
    let busiest = distinct
        .iter()
        .map(|key| queried.iter().filter(|k| k == key).count())
        .max()
        .unwrap();
    assert!(busiest <= 12, "one key took {busiest} of 64 reads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_missing_a_part_or_a_layout_from_before_copies_is_read_whole_from_copy_0() {
    let (records, plain, keys, table) = records().await;
    let event = fresh_event();
    let layout = small_layout(30_000);
    let document = layout.to_document(&event);
    let version = layout.version().to_owned();
    records.store_layout(&event, &layout).await.unwrap();

    // Every copy but 0 loses its second part (a store that died half-way through them).
    for copy in 1..LAYOUT_COPIES {
        plain
            .delete_item()
            .table_name(&table)
            .key(
                "pk",
                AttributeValue::S(format!("LAYOUT#{event}#{version}#{copy}")),
            )
            .key("sk", AttributeValue::S("PART#001".into()))
            .send()
            .await
            .unwrap();
    }
    keys.0.lock().unwrap().clear();
    for _ in 0..16 {
        let read = records.layout_document(&event, &version).await.unwrap();
        assert_eq!(
            read.as_deref(),
            Some(document.as_str()),
            "never half a layout"
        );
    }
    assert!(
        keys.0.lock().unwrap().len() <= 32,
        "at most a second Query per read"
    );

    // A layout stored before copies: one copy, parts without a count.
    let old_event = fresh_event();
    let old_document = layout.to_document(&old_event);
    for (part, bytes) in old_document
        .as_bytes()
        .chunks(LAYOUT_PART_BYTES)
        .enumerate()
    {
        plain
            .put_item()
            .table_name(&table)
            .item(
                "pk",
                AttributeValue::S(format!("LAYOUT#{old_event}#{version}")),
            )
            .item("sk", AttributeValue::S(format!("PART#{part:03}")))
            .item(
                "body",
                AttributeValue::B(aws_smithy_types::Blob::new(bytes)),
            )
            .send()
            .await
            .unwrap();
    }
    for _ in 0..8 {
        let read = records.layout_document(&old_event, &version).await.unwrap();
        assert_eq!(read.as_deref(), Some(old_document.as_str()));
    }
    // A version never stored is none, whichever copy is asked first.
    assert_eq!(
        records
            .layout_document(&event, "0000000000000000")
            .await
            .unwrap(),
        None
    );
}
