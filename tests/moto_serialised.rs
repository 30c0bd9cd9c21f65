//! The local DynamoDB emulator is only fit for race tests if it serialises conflicting writes as
//! DynamoDB does. Stock moto does not (measured: docs/decisions/0013-serialised-moto-launcher.md);
//! `scripts/moto_server.py` puts one lock around DynamoDB requests. These tests hold the launcher
//! to that, so a later race test that passes means Lineup is right, not that moto was lucky.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, TransactWriteItem, Update,
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
