//! The local DynamoDB emulator is only fit for race tests if it serialises conflicting writes as
//! DynamoDB does. Stock moto does not (measured: docs/decisions/0013-serialised-moto-launcher.md);
//! `scripts/moto_server.py` puts one lock around DynamoDB requests. These tests hold the launcher
//! to that, so a later race test that passes means Lineup is right, not that moto was lucky.
//! It also rolls cancelled transactions back from the items they touched, not from copies of
//! whole tables; the last tests hold it to leaving everything as it was.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, KeySchemaElement,
    KeyType, Put, PutRequest, ScalarAttributeType, StreamSpecification, StreamViewType,
    TransactWriteItem, Update, WriteRequest,
};
use aws_sdk_dynamodb::Client;
use futures::future::join_all;

async fn client() -> Client {
    lineup_tests::aws::dynamo().await
}

async fn fresh_table(client: &Client) -> String {
    let name = format!("race-{}", uuid::Uuid::new_v4().simple());
    client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("create table");
    name
}

async fn put_available(client: &Client, table: &str, pk: &str) {
    client
        .put_item()
        .table_name(table)
        .item("pk", AttributeValue::S(pk.to_owned()))
        .item("status", AttributeValue::S("AVAILABLE".to_owned()))
        .send()
        .await
        .expect("put seat");
}

async fn holder(client: &Client, table: &str, pk: &str) -> Option<String> {
    let item = client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .expect("get seat")
        .item
        .expect("seat exists");
    item.get("held_by").and_then(|v| v.as_s().ok()).cloned()
}

fn take(table: &str, pk: &str, by: &str) -> Update {
    Update::builder()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.to_owned()))
        .update_expression("SET #status = :held, held_by = :by")
        .condition_expression("#status = :available")
        .expression_attribute_names("#status", "status")
        .expression_attribute_values(":held", AttributeValue::S("HELD".to_owned()))
        .expression_attribute_values(":available", AttributeValue::S("AVAILABLE".to_owned()))
        .expression_attribute_values(":by", AttributeValue::S(by.to_owned()))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_conditional_updates_at_once_have_exactly_one_winner() {
    let client = client().await;
    let table = fresh_table(&client).await;
    for round in 0..10 {
        let seat = format!("seat-{round}");
        put_available(&client, &table, &seat).await;
        let attempts = (0..50).map(|racer| {
            let (client, table, seat) = (client.clone(), table.clone(), seat.clone());
            tokio::spawn(async move {
                let update = take(&table, &seat, &format!("racer-{racer}"));
                let result = client
                    .update_item()
                    .table_name(update.table_name())
                    .set_key(Some(update.key().clone()))
                    .update_expression(update.update_expression())
                    .set_condition_expression(update.condition_expression().map(str::to_owned))
                    .set_expression_attribute_names(update.expression_attribute_names().cloned())
                    .set_expression_attribute_values(update.expression_attribute_values().cloned())
                    .send()
                    .await;
                match result {
                    Ok(_) => Some(racer),
                    Err(SdkError::ServiceError(e))
                        if matches!(
                            e.err(),
                            UpdateItemError::ConditionalCheckFailedException(_)
                        ) =>
                    {
                        None
                    }
                    Err(other) => panic!("racer {racer}: {other:?}"),
                }
            })
        });
        let winners: Vec<usize> = join_all(attempts)
            .await
            .into_iter()
            .filter_map(|r| r.expect("racer ran"))
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        assert_eq!(
            holder(&client, &table, &seat).await,
            Some(format!("racer-{}", winners[0]))
        );
    }
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlapping_transactions_are_all_or_nothing() {
    let client = client().await;
    let table = fresh_table(&client).await;
    let seats = ["A1", "A2", "A3", "A4"];
    for seat in seats {
        put_available(&client, &table, seat).await;
    }
    // Thirty buyers, each wanting two neighbouring seats; neighbours overlap.
    let attempts = (0..30).map(|buyer| {
        let (client, table) = (client.clone(), table.clone());
        let wanted = [seats[buyer % 3], seats[buyer % 3 + 1]];
        tokio::spawn(async move {
            let by = format!("buyer-{buyer}");
            let items = wanted
                .iter()
                .map(|seat| {
                    TransactWriteItem::builder()
                        .update(take(&table, seat, &by))
                        .build()
                })
                .collect();
            client
                .transact_write_items()
                .set_transact_items(Some(items))
                .send()
                .await
                .ok()
                .map(|_| (by, wanted))
        })
    });
    let winners: Vec<(String, [&str; 2])> = join_all(attempts)
        .await
        .into_iter()
        .filter_map(|r| r.expect("buyer ran"))
        .collect();
    assert!(
        !winners.is_empty() && winners.len() <= 2,
        "winners: {winners:?}"
    );
    for (by, wanted) in &winners {
        for seat in wanted {
            assert_eq!(
                holder(&client, &table, seat).await.as_deref(),
                Some(by.as_str()),
                "{by} holds all it bought"
            );
        }
    }
    // No seat held by someone who did not win: no partial writes.
    for seat in seats {
        if let Some(by) = holder(&client, &table, seat).await {
            assert!(
                winners
                    .iter()
                    .any(|(winner, wanted)| *winner == by && wanted.contains(&seat)),
                "{seat} held by loser {by}"
            );
        }
    }
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
}

/// Every item of the table, by key, read back with consistent Scans.
async fn whole_table(client: &Client, table: &str, key: &[&str]) -> BTreeMap<String, Item> {
    let mut items = BTreeMap::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        for item in page.items() {
            let id = key
                .iter()
                .map(|attr| format!("{:?}", item[*attr]))
                .collect::<Vec<_>>()
                .join("|");
            items.insert(id, item.clone());
        }
        start = page.last_evaluated_key().cloned();
        if start.is_none() {
            return items;
        }
    }
}

type Item = std::collections::HashMap<String, AttributeValue>;

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

/// A table of `seats` items keyed `pk` (and `sk`, if `range`), with a NEW_AND_OLD_IMAGES stream.
async fn seeded_table(client: &Client, seats: usize, range: bool) -> (String, String) {
    let name = format!("undo-{}", uuid::Uuid::new_v4().simple());
    let mut create = client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .unwrap(),
        );
    for (attr, kind) in [("pk", KeyType::Hash), ("sk", KeyType::Range)]
        .into_iter()
        .take(if range { 2 } else { 1 })
    {
        create = create
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(attr)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(attr)
                    .key_type(kind)
                    .build()
                    .unwrap(),
            );
    }
    let created = create.send().await.expect("create table");
    let stream_arn = created
        .table_description()
        .and_then(|table| table.latest_stream_arn())
        .expect("the table has a stream")
        .to_owned();
    let items: Vec<Item> = (0..seats)
        .map(|n| {
            let mut item = Item::from([
                ("status".to_owned(), s("AVAILABLE")),
                (
                    "price".to_owned(),
                    AttributeValue::N((4500 + n % 7).to_string()),
                ),
            ]);
            if range {
                // Fifty rows of seats; each row is one partition (hash key).
                item.insert("pk".to_owned(), s(&format!("row-{}", n % 50)));
                item.insert("sk".to_owned(), s(&format!("seat-{n}")));
            } else {
                item.insert("pk".to_owned(), s(&format!("seat-{n}")));
            }
            item
        })
        .collect();
    write_all(client, &name, &items).await;
    (name, stream_arn)
}

/// Puts `items` into `table`, 25 to a BatchWriteItem.
async fn write_all(client: &Client, table: &str, items: &[Item]) {
    for chunk in items.chunks(25) {
        let writes = chunk
            .iter()
            .map(|item| {
                WriteRequest::builder()
                    .put_request(
                        PutRequest::builder()
                            .set_item(Some(item.clone()))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        client
            .batch_write_item()
            .request_items(table, writes)
            .send()
            .await
            .expect("write the items");
    }
}

fn key_of(range: bool, pk: &str, sk: &str) -> Item {
    let mut key = Item::from([("pk".to_owned(), s(pk))]);
    if range {
        key.insert("sk".to_owned(), s(sk));
    }
    key
}

/// One transaction touching five items of the table: an Update of an existing item, a Put of a
/// new one (in a partition of its own), a Put over an existing one, a Delete, and a Put of a new
/// item into an existing partition. With `cancel`, a last ConditionCheck fails.
fn five_writes(table: &str, range: bool, cancel: bool) -> Vec<TransactWriteItem> {
    let key = |pk: &str, sk: &str| key_of(range, pk, sk);
    let mut new_item = key("hold-new", "hold-new");
    new_item.insert("status".to_owned(), s("HOLD"));
    let (over_pk, delete_pk, beside_pk) = if range {
        ("row-3", "row-4", "row-5")
    } else {
        ("seat-3", "seat-4", "seat-5-beside")
    };
    let mut over = key(over_pk, "seat-3");
    over.insert("status".to_owned(), s("SOLD"));
    let mut beside = key(beside_pk, "seat-beside");
    beside.insert("status".to_owned(), s("HOLD"));
    let (update_pk, check_pk) = if range {
        ("row-2", "row-6")
    } else {
        ("seat-2", "seat-6")
    };
    let mut writes = vec![
        TransactWriteItem::builder()
            .update(
                Update::builder()
                    .table_name(table)
                    .set_key(Some(key(update_pk, "seat-2")))
                    .update_expression("SET #status = :held, held_by = :by REMOVE price")
                    .condition_expression("#status = :available")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":held", s("HELD"))
                    .expression_attribute_values(":available", s("AVAILABLE"))
                    .expression_attribute_values(":by", s("buyer"))
                    .build()
                    .unwrap(),
            )
            .build(),
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(new_item))
                    .condition_expression("attribute_not_exists(pk)")
                    .build()
                    .unwrap(),
            )
            .build(),
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(over))
                    .build()
                    .unwrap(),
            )
            .build(),
        TransactWriteItem::builder()
            .delete(
                Delete::builder()
                    .table_name(table)
                    .set_key(Some(key(delete_pk, "seat-4")))
                    .condition_expression("attribute_exists(pk)")
                    .build()
                    .unwrap(),
            )
            .build(),
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(beside))
                    .build()
                    .unwrap(),
            )
            .build(),
    ];
    if cancel {
        writes.push(
            TransactWriteItem::builder()
                .condition_check(
                    ConditionCheck::builder()
                        .table_name(table)
                        .set_key(Some(key(check_pk, "seat-6")))
                        .condition_expression("#status = :sold")
                        .expression_attribute_names("#status", "status")
                        .expression_attribute_values(":sold", s("SOLD"))
                        .build()
                        .unwrap(),
                )
                .build(),
        );
    }
    writes
}

/// The launcher rolls a cancelled transaction back from the items it touched (not from copies of
/// whole tables): afterwards every item of a table of thousands is exactly as before, including
/// one the transaction created (gone again) and one it deleted (back), and the stream holds
/// nothing of it; the same writes, not cancelled, all stand, and stream after what came before.
async fn cancelled_transaction_leaves_the_table_as_it_was(range: bool) {
    let client = client().await;
    let (table, stream_arn) = seeded_table(&client, 3000, range).await;
    let key: &[&str] = if range { &["pk", "sk"] } else { &["pk"] };
    let before = whole_table(&client, &table, key).await;
    assert_eq!(before.len(), 3000);
    let streamed_before = lineup_tests::stream::stream_records(&stream_arn).await;
    assert_eq!(streamed_before.len(), 3000);

    let cancelled = client
        .transact_write_items()
        .set_transact_items(Some(five_writes(&table, range, true)))
        .send()
        .await
        .expect_err("the condition check fails");
    match cancelled.into_service_error() {
        TransactWriteItemsError::TransactionCanceledException(e) => {
            let codes: Vec<Option<&str>> = e
                .cancellation_reasons()
                .iter()
                .map(|reason| reason.code().filter(|code| *code != "None"))
                .collect();
            assert_eq!(
                codes,
                [None, None, None, None, None, Some("ConditionalCheckFailed")]
            );
        }
        other => panic!("not cancelled: {other:?}"),
    }
    let after = whole_table(&client, &table, key).await;
    assert!(after == before, "the cancelled transaction left changes");
    let get = |pk: &str, sk: &str| {
        client
            .get_item()
            .table_name(&table)
            .set_key(Some(key_of(range, pk, sk)))
            .consistent_read(true)
            .send()
    };
    assert!(get("hold-new", "hold-new").await.unwrap().item.is_none());
    let deleted = if range { "row-4" } else { "seat-4" };
    assert_eq!(
        get(deleted, "seat-4").await.unwrap().item.unwrap()["status"],
        s("AVAILABLE")
    );
    assert_eq!(
        lineup_tests::stream::stream_records(&stream_arn).await,
        streamed_before,
        "a cancelled transaction streams nothing"
    );

    client
        .transact_write_items()
        .set_transact_items(Some(five_writes(&table, range, false)))
        .send()
        .await
        .expect("the same writes, not cancelled");
    let mut expected = before.clone();
    for write in five_writes(&table, range, false) {
        let id = |item: &Item| {
            key.iter()
                .map(|attr| format!("{:?}", item[*attr]))
                .collect::<Vec<_>>()
                .join("|")
        };
        if let Some(put) = write.put() {
            expected.insert(id(put.item()), put.item().clone());
        } else if let Some(delete) = write.delete() {
            expected.remove(&id(delete.key()));
        } else if let Some(update) = write.update() {
            let item = expected.get_mut(&id(update.key())).unwrap();
            item.insert("status".to_owned(), s("HELD"));
            item.insert("held_by".to_owned(), s("buyer"));
            item.remove("price");
        }
    }
    assert!(
        whole_table(&client, &table, key).await == expected,
        "the committed transaction's writes all stand"
    );
    let streamed = lineup_tests::stream::stream_records(&stream_arn).await;
    assert_eq!(
        streamed[..3000],
        streamed_before[..],
        "earlier records unchanged"
    );
    let events: Vec<&str> = streamed[3000..]
        .iter()
        .map(|r| r["eventName"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["MODIFY", "INSERT", "MODIFY", "REMOVE", "INSERT"]);
    let sequence: Vec<u128> = streamed
        .iter()
        .map(|r| {
            r["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        sequence.windows(2).all(|pair| pair[0] < pair[1]),
        "sequence numbers rise and none is reused"
    );
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_transaction_on_a_big_hash_table_leaves_it_as_it_was() {
    cancelled_transaction_leaves_the_table_as_it_was(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_transaction_on_a_big_hash_and_range_table_leaves_it_as_it_was() {
    cancelled_transaction_leaves_the_table_as_it_was(true).await;
}

/// The launcher answers a Query without sorting the whole table (one key's items for a table
/// query; the items carrying the index's key for an index query): the answers must stay what
/// moto's whole-table way gave, in order, paged, backwards, and after writes.
#[tokio::test]
async fn queries_answer_one_key_in_key_order_and_sparse_index_queries_only_indexed_items() {
    let client = client().await;
    let (table, _) = seeded_table(&client, 0, true).await;
    let index = "by-lane";
    client
        .update_table()
        .table_name(&table)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("lane")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("expires")
                .attribute_type(ScalarAttributeType::N)
                .build()
                .unwrap(),
        )
        .global_secondary_index_updates(
            aws_sdk_dynamodb::types::GlobalSecondaryIndexUpdate::builder()
                .create(
                    aws_sdk_dynamodb::types::CreateGlobalSecondaryIndexAction::builder()
                        .index_name(index)
                        .key_schema(
                            KeySchemaElement::builder()
                                .attribute_name("lane")
                                .key_type(KeyType::Hash)
                                .build()
                                .unwrap(),
                        )
                        .key_schema(
                            KeySchemaElement::builder()
                                .attribute_name("expires")
                                .key_type(KeyType::Range)
                                .build()
                                .unwrap(),
                        )
                        .projection(
                            aws_sdk_dynamodb::types::Projection::builder()
                                .projection_type(aws_sdk_dynamodb::types::ProjectionType::All)
                                .build(),
                        )
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .expect("add the index");
    // 300 items over 10 partitions; every fifth is in the index, in lane `s<n % 2>`, expiring
    // in an order unlike the keys'.
    let mut written = Vec::new();
    for n in 0..300u32 {
        let mut item = Item::from([
            ("pk".to_owned(), s(&format!("row-{}", n % 10))),
            ("sk".to_owned(), s(&format!("seat-{n:03}"))),
        ]);
        if n % 5 == 0 {
            item.insert("lane".to_owned(), s(&format!("s{}", n % 2)));
            item.insert(
                "expires".to_owned(),
                AttributeValue::N(((n * 7919) % 1000).to_string()),
            );
        }
        written.push(item);
    }
    write_all(&client, &table, &written).await;
    let sks = |items: &[Item]| -> Vec<String> {
        items
            .iter()
            .map(|item| item["sk"].as_s().unwrap().clone())
            .collect()
    };
    // Every page (the SDK's paginator follows LastEvaluatedKey).
    let table_query = |pk: &str, forward: bool, limit: Option<i32>| {
        client
            .query()
            .table_name(&table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .scan_index_forward(forward)
            .set_limit(limit)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<Item>, _>>()
    };
    // Paged three at a time, so the index's pagination (by index key, then table key) is used.
    let index_query = |lane: &str, below: u32| {
        client
            .query()
            .table_name(&table)
            .index_name(index)
            .key_condition_expression("lane = :lane AND expires < :below")
            .expression_attribute_values(":lane", s(lane))
            .expression_attribute_values(":below", AttributeValue::N(below.to_string()))
            .limit(3)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<Item>, _>>()
    };
    let expected_row = |row: u32| -> Vec<String> {
        let mut sks: Vec<String> = (0..300u32)
            .filter(|n| n % 10 == row)
            .map(|n| format!("seat-{n:03}"))
            .collect();
        sks.sort();
        sks
    };
    // In index order: expires, then the table's key. `moved` replaces items' (n, expires).
    let expected_index = |lane: u32, below: u32, skip: &[u32], moved: &[(u32, u32)]| {
        let mut entries: Vec<(u32, String, String)> = (0..300u32)
            .filter(|n| n % 5 == 0 && n % 2 == lane && !skip.contains(n))
            .map(|n| (n, (n * 7919) % 1000))
            .chain(moved.iter().copied())
            .map(|(n, expires)| (expires, format!("row-{}", n % 10), format!("seat-{n:03}")))
            .filter(|(expires, _, _)| *expires < below)
            .collect();
        entries.sort();
        entries.into_iter().map(|(_, _, sk)| sk).collect::<Vec<_>>()
    };

    assert_eq!(
        sks(&table_query("row-3", true, None).await.unwrap()),
        expected_row(3)
    );
    let mut backwards = expected_row(3);
    backwards.reverse();
    assert_eq!(
        sks(&table_query("row-3", false, None).await.unwrap()),
        backwards
    );
    assert_eq!(
        sks(&table_query("row-7", true, Some(7)).await.unwrap()),
        expected_row(7),
        "paged"
    );
    assert!(table_query("row-99", true, None).await.unwrap().is_empty());
    assert_eq!(
        sks(&index_query("s0", 600).await.unwrap()),
        expected_index(0, 600, &[], &[])
    );
    assert_eq!(
        sks(&index_query("s1", 1000).await.unwrap()),
        expected_index(1, 1000, &[], &[])
    );

    // One leaves the index (its lane removed), one is deleted, one joins: the answers follow.
    let key = |n: u32| key_of(true, &format!("row-{}", n % 10), &format!("seat-{n:03}"));
    client
        .update_item()
        .table_name(&table)
        .set_key(Some(key(10)))
        .update_expression("REMOVE lane")
        .send()
        .await
        .unwrap();
    client
        .delete_item()
        .table_name(&table)
        .set_key(Some(key(20)))
        .send()
        .await
        .unwrap();
    client
        .update_item()
        .table_name(&table)
        .set_key(Some(key(12)))
        .update_expression("SET lane = :lane, expires = :expires")
        .expression_attribute_values(":lane", s("s0"))
        .expression_attribute_values(":expires", AttributeValue::N("1".to_owned()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        sks(&index_query("s0", 1000).await.unwrap()),
        expected_index(0, 1000, &[10, 20], &[(12, 1)])
    );
    assert!(!sks(&table_query("row-0", true, None).await.unwrap()).contains(&"seat-020".to_owned()));

    // A hash-only table: a Query answers the one item of its key, or none.
    let (hash_only, _) = seeded_table(&client, 30, false).await;
    for (pk, expected) in [("seat-7", 1), ("seat-70", 0)] {
        let answer = client
            .query()
            .table_name(&hash_only)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.items().len(), expected, "{pk}");
        assert!(answer.items().iter().all(|item| item["pk"] == s(pk)));
    }
}
