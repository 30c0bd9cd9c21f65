//! `outbox-stream` end to end on the local emulator: outbox items are written to a table with a
//! stream, read back from the emulator's DynamoDB stream, shaped into the event Lambda delivers,
//! and published to a FIFO queue; then the same with a failing publisher, a poison record and
//! events of the wrong kind. What matters: every outbox item reaches the queue exactly once, a
//! failure never lets a later record be checkpointed, and a retry loses nothing.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use lineup::adapters::sqs::{PublisherConfig, SqsPublisher};
use lineup::application::error::{LineupError, Store};
use lineup::application::outbox_stream::{handle, BatchItemFailure, StreamBatchResponse};
use lineup::application::ports::outbox::{OutboxEvent, OutboxEventKind, TicketPublisher};
use lineup::wiring::config::ConfigError;
use lineup_tests::aws::{dynamo, sqs, unique};
use lineup_tests::sample;
use serde_json::{json, Value};

// ----- the emulator: an outbox table with a stream, and a FIFO ticket queue -----

struct Outbox {
    table: String,
    stream_arn: String,
}

async fn fresh_outbox() -> Outbox {
    let table = unique("outbox");
    let created = dynamo()
        .await
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("outboxId")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("outboxId")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewImage)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("create the outbox table");
    let stream_arn = created
        .table_description()
        .and_then(|table| table.latest_stream_arn())
        .expect("the outbox table has a stream")
        .to_owned();
    Outbox { table, stream_arn }
}

async fn fresh_ticket_queue(client: &aws_sdk_sqs::Client) -> String {
    client
        .create_queue()
        .queue_name(format!("{}.fifo", unique("tickets")))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("create the ticket queue")
        .queue_url()
        .expect("a queue url")
        .to_owned()
}

/// `count` ticket-issued events, each for its own order (so its own message group).
fn outbox_events(count: usize) -> Vec<OutboxEvent> {
    let order = unique("ord");
    (0..count)
        .map(|n| OutboxEvent {
            outbox_id: unique("obx"),
            kind: OutboxEventKind::TicketIssued,
            event_id: "demo".to_owned(),
            order_id: format!("{order}-{n}"),
            customer_id: format!("customer-{n:05}"),
            seat_ids: vec![format!("A-01-{n:02}"), format!("A-02-{n:02}")],
            amount: 24_000 + n as i64,
            currency: "USD".to_owned(),
            payment_id: None,
            occurred_at: format!("2026-01-01T10:00:{n:02}Z"),
        })
        .collect()
}

/// Writes the events as the confirm transaction does: the event's attributes plus a `ttl`.
async fn write_outbox(outbox: &Outbox, events: &[OutboxEvent]) {
    let client = dynamo().await;
    for event in events {
        let mut item: HashMap<String, AttributeValue> =
            serde_dynamo::to_item(event).expect("an outbox event is an item");
        item.insert("ttl".to_owned(), AttributeValue::N("1769853600".to_owned()));
        put(&client, outbox, item).await;
    }
}

async fn put(
    client: &aws_sdk_dynamodb::Client,
    outbox: &Outbox,
    item: HashMap<String, AttributeValue>,
) {
    client
        .put_item()
        .table_name(&outbox.table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(outboxId)")
        .send()
        .await
        .expect("put an outbox item");
}

/// Every record of the outbox table's stream so far, shaped as Lambda delivers them.
async fn stream_records(outbox: &Outbox) -> Vec<Value> {
    lineup_tests::stream::stream_records(&outbox.stream_arn).await
}

fn sequence_numbers(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|record| {
            record["dynamodb"]["SequenceNumber"]
                .as_str()
                .expect("every stream record has a sequence number")
                .to_owned()
        })
        .collect()
}

/// A message as it came off the ticket queue.
struct Received {
    event: OutboxEvent,
    group_id: Option<String>,
    deduplication_id: Option<String>,
}

/// Receives and deletes every message on the queue. Deleting is needed: a FIFO queue holds a
/// group's later messages back while earlier ones are in flight.
async fn drain(client: &aws_sdk_sqs::Client, queue_url: &str) -> Vec<Received> {
    let mut received = Vec::new();
    loop {
        let messages = client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(0)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive from the ticket queue")
            .messages
            .unwrap_or_default();
        if messages.is_empty() {
            return received;
        }
        for message in messages {
            let body = message.body().expect("a message body");
            let event = serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("message body {body} is not an outbox event: {e}"));
            let attribute = |name| message.attributes().and_then(|a| a.get(&name)).cloned();
            received.push(Received {
                event,
                group_id: attribute(MessageSystemAttributeName::MessageGroupId),
                deduplication_id: attribute(MessageSystemAttributeName::MessageDeduplicationId),
            });
            client
                .delete_message()
                .queue_url(queue_url)
                .receipt_handle(message.receipt_handle().expect("a receipt handle"))
                .send()
                .await
                .expect("delete the message");
        }
    }
}

/// Messages on the queue, without receiving them (so without touching their deduplication).
async fn messages_waiting(client: &aws_sdk_sqs::Client, queue_url: &str) -> usize {
    let attributes = client
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .expect("get queue attributes");
    attributes
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
        .expect("the message count")
        .parse()
        .expect("a count")
}

// ----- publishers standing in around the SQS adapter -----

/// Publishes through `inner`, except for the outbox ids in `failing`, which fail as a throttled
/// SQS does. Remembers every outbox id it was asked to publish.
struct Flaky<'a> {
    inner: &'a dyn TicketPublisher,
    failing: Mutex<HashSet<String>>,
    attempted: Mutex<Vec<String>>,
}

impl<'a> Flaky<'a> {
    fn failing_for(inner: &'a dyn TicketPublisher, outbox_ids: &[&str]) -> Self {
        Self {
            inner,
            failing: Mutex::new(outbox_ids.iter().map(|id| id.to_string()).collect()),
            attempted: Mutex::new(Vec::new()),
        }
    }

    fn heal(&self) {
        self.failing.lock().unwrap().clear();
    }

    fn attempted(&self) -> Vec<String> {
        self.attempted.lock().unwrap().clone()
    }
}

#[async_trait]
impl TicketPublisher for Flaky<'_> {
    async fn publish(&self, event: &OutboxEvent) -> Result<(), LineupError> {
        self.attempted.lock().unwrap().push(event.outbox_id.clone());
        let fails = self.failing.lock().unwrap().contains(&event.outbox_id);
        if fails {
            let throttled = aws_sdk_sqs::Error::RequestThrottled(
                aws_sdk_sqs::types::error::RequestThrottled::builder()
                    .message("Rate exceeded")
                    .build(),
            );
            return Err(LineupError::Unavailable {
                store: Store::TicketQueue,
                source: Box::new(throttled),
            });
        }
        self.inner.publish(event).await
    }
}

/// Keeps what it is given, in order.
#[derive(Default)]
struct Recording {
    published: Mutex<Vec<OutboxEvent>>,
}

#[async_trait]
impl TicketPublisher for Recording {
    async fn publish(&self, event: &OutboxEvent) -> Result<(), LineupError> {
        self.published.lock().unwrap().push(event.clone());
        Ok(())
    }
}

impl Recording {
    fn outbox_ids(&self) -> Vec<String> {
        let published = self.published.lock().unwrap();
        published.iter().map(|e| e.outbox_id.clone()).collect()
    }
}

fn invocation(payload: Value) -> LambdaEvent<Value> {
    LambdaEvent::new(payload, Context::default())
}

fn batch(records: &[Value]) -> Value {
    json!({ "Records": records })
}

fn failures(identifiers: &[String]) -> StreamBatchResponse {
    StreamBatchResponse {
        batch_item_failures: identifiers
            .iter()
            .map(|id| BatchItemFailure {
                item_identifier: id.clone(),
            })
            .collect(),
    }
}

fn by_outbox_id(mut events: Vec<OutboxEvent>) -> Vec<OutboxEvent> {
    events.sort_by(|a, b| a.outbox_id.cmp(&b.outbox_id));
    events
}

// ----- against the emulator -----

#[tokio::test]
async fn every_outbox_item_becomes_exactly_one_message_on_the_fifo_queue() {
    let (outbox, sqs) = (fresh_outbox().await, sqs().await);
    let queue_url = fresh_ticket_queue(&sqs).await;
    let events = outbox_events(5);
    write_outbox(&outbox, &events).await;

    let records = stream_records(&outbox).await;
    assert_eq!(records.len(), 5, "one stream record per put: {records:#?}");
    assert!(records.iter().all(|r| r["eventName"] == "INSERT"));

    let publisher = SqsPublisher::new(sqs.clone(), &queue_url);
    let response = handle(&publisher, invocation(batch(&records)))
        .await
        .expect("a DynamoDB stream event is handled");
    assert_eq!(response, StreamBatchResponse::default());
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({ "batchItemFailures": [] }),
        "the answer is in Lambda's partial batch response shape"
    );

    let received = drain(&sqs, &queue_url).await;
    assert_eq!(received.len(), 5, "exactly one message per outbox item");
    for message in &received {
        assert_eq!(message.group_id.as_ref(), Some(&message.event.order_id));
        assert_eq!(
            message.deduplication_id.as_ref(),
            Some(&message.event.outbox_id)
        );
    }
    assert_eq!(
        by_outbox_id(received.into_iter().map(|m| m.event).collect()),
        by_outbox_id(events),
        "each message body is the stored outbox event (without the item's ttl)"
    );
}

#[tokio::test]
async fn a_failure_reports_that_record_and_all_after_it_and_the_retry_loses_nothing() {
    let (outbox, sqs) = (fresh_outbox().await, sqs().await);
    let queue_url = fresh_ticket_queue(&sqs).await;
    let events = outbox_events(5);
    write_outbox(&outbox, &events).await;
    let records = stream_records(&outbox).await;
    let sequence = sequence_numbers(&records);
    let ids: Vec<String> = events.iter().map(|e| e.outbox_id.clone()).collect();

    let sqs_publisher = SqsPublisher::new(sqs.clone(), &queue_url);
    let flaky = Flaky::failing_for(&sqs_publisher, &[&ids[2]]);
    let response = handle(&flaky, invocation(batch(&records))).await.unwrap();
    assert_eq!(
        response,
        failures(&sequence[2..]),
        "the 3rd record failed, so the 3rd, 4th and 5th are reported"
    );
    assert_eq!(
        flaky.attempted(),
        ids[..3],
        "nothing after the failed record is published"
    );
    assert_eq!(messages_waiting(&sqs, &queue_url).await, 2);

    // Lambda retries from the lowest reported sequence number, with the publisher healed.
    let lowest = response
        .batch_item_failures
        .iter()
        .map(|f| {
            f.item_identifier
                .parse::<u128>()
                .expect("a numeric sequence number")
        })
        .min()
        .expect("some failures");
    let from = sequence
        .iter()
        .position(|s| s.parse::<u128>().unwrap() == lowest)
        .expect("the reported sequence number is one of the batch's");
    flaky.heal();
    let retried = handle(&flaky, invocation(batch(&records[from..])))
        .await
        .unwrap();
    assert_eq!(retried, StreamBatchResponse::default());
    assert_eq!(flaky.attempted()[3..], ids[2..]);
    assert_eq!(messages_waiting(&sqs, &queue_url).await, 5);

    // Handing over records already sent (as a retried whole batch would) adds no message: the
    // deduplication id is the outbox id. moto forgets a deduplication id once its message is
    // deleted (AWS keeps it for 5 minutes), so this is checked before the queue is drained.
    let again = handle(&sqs_publisher, invocation(batch(&records)))
        .await
        .unwrap();
    assert_eq!(again, StreamBatchResponse::default());
    assert_eq!(messages_waiting(&sqs, &queue_url).await, 5);

    let received = drain(&sqs, &queue_url).await;
    assert_eq!(received.len(), 5, "no duplicate messages");
    let received_ids: BTreeSet<String> =
        received.iter().map(|m| m.event.outbox_id.clone()).collect();
    assert_eq!(
        received_ids,
        ids.iter().cloned().collect::<BTreeSet<_>>(),
        "no outbox item lost"
    );
}

#[tokio::test]
async fn a_poison_record_is_reported_failed_with_every_record_after_it() {
    let (outbox, sqs) = (fresh_outbox().await, sqs().await);
    let queue_url = fresh_ticket_queue(&sqs).await;
    let events = outbox_events(2);
    write_outbox(&outbox, &events[..1]).await;
    // An item missing most of the event's fields (a hand edit, or a bug in a writer).
    let poison = HashMap::from([
        ("outboxId".to_owned(), AttributeValue::S(unique("obx"))),
        (
            "type".to_owned(),
            AttributeValue::S("ticket_issued".to_owned()),
        ),
        ("eventId".to_owned(), AttributeValue::S("demo".to_owned())),
    ]);
    put(&dynamo().await, &outbox, poison).await;
    write_outbox(&outbox, &events[1..]).await;
    let records = stream_records(&outbox).await;
    assert_eq!(records.len(), 3);
    let sequence = sequence_numbers(&records);

    let publisher = SqsPublisher::new(sqs.clone(), &queue_url);
    let response = handle(&publisher, invocation(batch(&records)))
        .await
        .unwrap();
    assert_eq!(response, failures(&sequence[1..]));

    let received = drain(&sqs, &queue_url).await;
    assert_eq!(
        received.into_iter().map(|m| m.event).collect::<Vec<_>>(),
        events[..1],
        "only the record before the poison one is published"
    );
}

#[tokio::test]
async fn a_queue_that_does_not_exist_is_publish_failed_with_the_sdk_error_kept() {
    let sqs = sqs().await;
    let queue_url = fresh_ticket_queue(&sqs).await;
    let publisher = SqsPublisher::new(
        sqs,
        format!("{}-gone.fifo", queue_url.trim_end_matches(".fifo")),
    );
    let error = publisher
        .publish(&outbox_events(1)[0])
        .await
        .expect_err("no such queue");
    let LineupError::Unavailable {
        store: Store::TicketQueue,
        source,
    } = &error
    else {
        panic!("expected the ticket queue unavailable, got {error:?}");
    };
    // The adapter keeps the SDK's error whole, behind the application's boxed source.
    let sdk_error: &aws_sdk_sqs::Error = source.downcast_ref().expect("the SDK's error");
    assert!(
        matches!(sdk_error, aws_sdk_sqs::Error::QueueDoesNotExist(_)),
        "{sdk_error:?}"
    );
    assert!(std::error::Error::source(&error).is_some());
    assert_eq!(error.code(), "service_unavailable");
}

// ----- the sample events, without the emulator -----

#[tokio::test]
async fn the_sample_event_publishes_its_two_inserts_and_skips_the_remove() {
    let recording = Recording::default();
    let response = handle(&recording, invocation(sample("outbox-stream.json")))
        .await
        .expect("the sample is a DynamoDB stream event");
    assert_eq!(response, StreamBatchResponse::default());
    let published = recording.published.lock().unwrap().clone();
    assert_eq!(
        published,
        [
            OutboxEvent {
                outbox_id: "obx-01jgx3k9v2a7f4m8q6r1t5w0yz".to_owned(),
                kind: OutboxEventKind::TicketIssued,
                event_id: "demo".to_owned(),
                order_id: "ord-4f1c2a9e7b3d".to_owned(),
                customer_id: "customer-0001".to_owned(),
                seat_ids: vec!["A-12-07".to_owned(), "A-12-08".to_owned()],
                amount: 24_000,
                currency: "USD".to_owned(),
                payment_id: None,
                occurred_at: "2026-01-01T10:00:00Z".to_owned(),
            },
            OutboxEvent {
                outbox_id: "obx-01jgx3mb8d5c2e9h7k4n3p6s1u".to_owned(),
                kind: OutboxEventKind::RefundRequired,
                event_id: "demo".to_owned(),
                order_id: "ord-9a8b7c6d5e4f".to_owned(),
                customer_id: "customer-0002".to_owned(),
                seat_ids: vec!["B-03-11".to_owned()],
                amount: 12_000,
                currency: "USD".to_owned(),
                payment_id: None,
                occurred_at: "2026-01-01T10:01:00Z".to_owned(),
            },
        ]
    );
}

#[tokio::test]
async fn a_failure_also_reports_the_later_records_that_publish_nothing() {
    let recording = Recording::default();
    let flaky = Flaky::failing_for(&recording, &["obx-01jgx3k9v2a7f4m8q6r1t5w0yz"]);
    let sample = sample("outbox-stream.json");
    let records = sample["Records"].as_array().unwrap().clone();
    let response = handle(&flaky, invocation(sample)).await.unwrap();
    assert_eq!(
        response,
        failures(&sequence_numbers(&records)),
        "the first INSERT failed: it, the second INSERT and the REMOVE are all reported"
    );
    assert_eq!(flaky.attempted(), ["obx-01jgx3k9v2a7f4m8q6r1t5w0yz"]);
    assert!(recording.outbox_ids().is_empty());
}

#[tokio::test]
async fn events_that_are_not_dynamodb_stream_events_are_refused() {
    let recording = Recording::default();
    let mut mixed = sample("outbox-stream.json");
    mixed["Records"][1]["eventSource"] = "aws:kinesis".into();
    let mut no_change = sample("outbox-stream.json");
    no_change["Records"][0]
        .as_object_mut()
        .unwrap()
        .remove("dynamodb");
    for (what, payload) in [
        ("an SQS event", sample("outbox-stream-wrong-kind.json")),
        ("an empty object", json!({})),
        ("a scheduled event", sample("admit.json")),
        ("a batch with a Kinesis record", mixed),
        ("a record without its change", no_change),
    ] {
        let error = handle(&recording, invocation(payload))
            .await
            .expect_err(what);
        assert_eq!(error.code(), "not_a_dynamodb_stream_event", "{what}");
        let diagnostic = Diagnostic::from(error);
        assert_eq!(
            diagnostic.error_type, "not_a_dynamodb_stream_event",
            "{what}"
        );
        assert!(!diagnostic.error_message.is_empty());
    }
    assert!(
        recording.outbox_ids().is_empty(),
        "nothing published from a refused event"
    );
}

#[test]
fn the_ticket_queue_url_is_required_at_cold_start() {
    let missing = PublisherConfig::from_lookup(|_| None).expect_err("no queue url");
    assert!(matches!(missing, ConfigError::Missing("TICKET_QUEUE_URL")));
    assert!(missing.to_string().contains("TICKET_QUEUE_URL"));
    assert!(PublisherConfig::from_lookup(|_| Some(String::new())).is_err());
    let url = "https://sqs.us-east-1.amazonaws.com/123456789012/lineup-tickets.fifo";
    let config =
        PublisherConfig::from_lookup(|name| (name == "TICKET_QUEUE_URL").then(|| url.to_owned()))
            .unwrap();
    assert_eq!(config.queue_url, url);
}

// ----- the local event source mapping (`lineup dev`'s outbox pump) -----

/// Fails the first `failures` attempts to publish one outbox id, then succeeds; keeps every
/// successful publish in order and counts every attempt.
struct FailsAtFirst {
    outbox_id: String,
    failures: Mutex<u32>,
    published: Mutex<Vec<String>>,
    attempts: Mutex<u32>,
}

#[async_trait]
impl TicketPublisher for FailsAtFirst {
    async fn publish(&self, event: &OutboxEvent) -> Result<(), LineupError> {
        *self.attempts.lock().unwrap() += 1;
        if event.outbox_id == self.outbox_id {
            let mut failures = self.failures.lock().unwrap();
            if *failures > 0 {
                *failures -= 1;
                return Err(LineupError::Unavailable {
                    store: Store::TicketQueue,
                    source: Box::new(aws_sdk_sqs::Error::RequestThrottled(
                        aws_sdk_sqs::types::error::RequestThrottled::builder().build(),
                    )),
                });
            }
        }
        self.published.lock().unwrap().push(event.outbox_id.clone());
        Ok(())
    }
}

/// A transaction item putting `event` into the outbox unless its id is there already.
fn outbox_put(outbox: &Outbox, event: &OutboxEvent) -> aws_sdk_dynamodb::types::TransactWriteItem {
    let put = aws_sdk_dynamodb::types::Put::builder()
        .table_name(&outbox.table)
        .set_item(Some(
            serde_dynamo::to_item(event).expect("an outbox event is an item"),
        ))
        .condition_expression("attribute_not_exists(outboxId)")
        .build()
        .expect("table, item and condition are set");
    aws_sdk_dynamodb::types::TransactWriteItem::builder()
        .put(put)
        .build()
}

#[tokio::test]
async fn the_pump_follows_the_stream_and_resumes_a_failed_batch_from_its_failed_record() {
    let outbox = fresh_outbox().await;
    let first = outbox_events(5);
    let later = outbox_events(20);
    let publisher = Arc::new(FailsAtFirst {
        outbox_id: first[2].outbox_id.clone(),
        failures: Mutex::new(2),
        published: Mutex::default(),
        attempts: Mutex::default(),
    });
    write_outbox(&outbox, &first).await;
    let pump = lineup_cli::stream_pump::StreamPump {
        streams: lineup_tests::aws::dynamodb_streams().await,
        stream_arn: outbox.stream_arn.clone(),
        handler: Arc::new(lineup_cli::stream_pump::OutboxStream(publisher.clone())),
        poll_every: Duration::from_millis(5),
        start_at: lineup_cli::stream_pump::StartAt::Oldest,
    };
    let running = tokio::spawn(pump.run());

    let published = |publisher: &FailsAtFirst| publisher.published.lock().unwrap().clone();
    let wait_for = |count: usize| {
        let publisher = publisher.clone();
        async move {
            for _ in 0..200 {
                if published(&publisher).len() >= count {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("the pump published {:?}", published(&publisher));
        }
    };
    wait_for(5).await;
    // Cancelled transactions that would have written outbox items (as a replayed webhook's
    // does), between real writes, while the pump reads: nothing of them may be published, and
    // nothing after them lost. (moto once streamed them to readers holding an iterator taken
    // before the rollback; scripts/moto_server.py keeps the shard.)
    for event in &later {
        let phantom = outbox_events(1).remove(0);
        let cancelled = dynamo()
            .await
            .transact_write_items()
            .transact_items(outbox_put(&outbox, &phantom))
            .transact_items(outbox_put(&outbox, &first[0]))
            .send()
            .await;
        assert!(cancelled.is_err(), "the second put's condition fails");
        write_outbox(&outbox, std::slice::from_ref(event)).await;
    }
    wait_for(first.len() + later.len()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.abort();

    let expected: Vec<String> = first
        .iter()
        .chain(&later)
        .map(|event| event.outbox_id.clone())
        .collect();
    // Each exactly once, in the order written: records before the failed one were not handed
    // over again, and none after it was published ahead of it.
    assert_eq!(published(&publisher), expected);
    // The failed record was tried three times (two failures); nothing else more than once.
    assert_eq!(*publisher.attempts.lock().unwrap(), 25 + 2);
}

/// A pump that starts at LATEST (the seat map's, after a seeding that projected its own records)
/// hands over only what is written after it starts: nothing before, everything after, in order,
/// also across the empty reads in between.
#[tokio::test]
async fn a_pump_started_at_latest_skips_what_was_there_and_misses_nothing_after() {
    let outbox = fresh_outbox().await;
    let before = outbox_events(30);
    write_outbox(&outbox, &before).await;
    let publisher = Arc::new(FailsAtFirst {
        outbox_id: String::new(),
        failures: Mutex::new(0),
        published: Mutex::default(),
        attempts: Mutex::default(),
    });
    let pump = pump_from_latest(
        &outbox,
        lineup_tests::aws::dynamodb_streams().await,
        publisher.clone(),
    );
    let running = tokio::spawn(pump.run());
    // Several empty passes, then writes one at a time with passes between them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = outbox_events(6);
    for event in &after {
        write_outbox(&outbox, std::slice::from_ref(event)).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..200 {
        if publisher.published.lock().unwrap().len() >= after.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.abort();
    let expected: Vec<String> = after.iter().map(|e| e.outbox_id.clone()).collect();
    assert_eq!(*publisher.published.lock().unwrap(), expected);
}

/// Fails every GetRecords while switched on, as a stalled emulator or a network fault would.
#[derive(Debug, Clone, Default)]
struct UnreadableStream(Arc<std::sync::atomic::AtomicBool>);

impl aws_smithy_runtime_api::client::interceptors::Intercept for UnreadableStream {
    fn name(&self) -> &'static str {
        "UnreadableStream"
    }

    fn read_before_transmit(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("");
        if self.0.load(std::sync::atomic::Ordering::SeqCst) && target.ends_with("GetRecords") {
            return Err("the stream cannot be read just now".into());
        }
        Ok(())
    }
}

/// A pump at LATEST whose reads fail for a while (after it has taken its place) loses nothing
/// written meanwhile: it keeps its iterator and reads on from it once reads work again. (It once
/// fell back to a fresh LATEST iterator and skipped those records, leaving the seat map wrong.)
#[tokio::test]
async fn a_pump_whose_reads_fail_for_a_while_misses_nothing_written_meanwhile() {
    let outbox = fresh_outbox().await;
    write_outbox(&outbox, &outbox_events(3)).await;
    let publisher = Arc::new(FailsAtFirst {
        outbox_id: String::new(),
        failures: Mutex::new(0),
        published: Mutex::default(),
        attempts: Mutex::default(),
    });
    let unreadable = UnreadableStream::default();
    let streams = lineup_tests::aws::dynamodb_streams().await;
    let streams = aws_sdk_dynamodbstreams::Client::from_conf(
        streams
            .config()
            .to_builder()
            .interceptor(unreadable.clone())
            .build(),
    );
    let pump = pump_from_latest(&outbox, streams, publisher.clone());
    let running = tokio::spawn(pump.run());
    // It takes its place (empty reads), then reads fail while records are written.
    tokio::time::sleep(Duration::from_millis(300)).await;
    unreadable
        .0
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // A read sent just before that is still answered (the interceptor stops requests before
    // they go out): let it land before anything is written, or under load it can carry the
    // first record written (seen in CI).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = outbox_events(5);
    for event in &during {
        write_outbox(&outbox, std::slice::from_ref(event)).await;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        publisher.published.lock().unwrap().is_empty(),
        "nothing read while reads fail"
    );
    unreadable
        .0
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let after = outbox_events(2);
    write_outbox(&outbox, &after).await;
    let expected: Vec<String> = during
        .iter()
        .chain(&after)
        .map(|event| event.outbox_id.clone())
        .collect();
    for _ in 0..200 {
        if publisher.published.lock().unwrap().len() >= expected.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.abort();
    assert_eq!(*publisher.published.lock().unwrap(), expected);
}

/// A pump over the outbox's stream from LATEST, polling every 5 ms, publishing to `publisher`.
fn pump_from_latest(
    outbox: &Outbox,
    streams: aws_sdk_dynamodbstreams::Client,
    publisher: Arc<FailsAtFirst>,
) -> lineup_cli::stream_pump::StreamPump {
    lineup_cli::stream_pump::StreamPump {
        streams,
        stream_arn: outbox.stream_arn.clone(),
        handler: Arc::new(lineup_cli::stream_pump::OutboxStream(publisher)),
        poll_every: Duration::from_millis(5),
        start_at: lineup_cli::stream_pump::StartAt::Latest,
    }
}
