//! The Docker-free stand-in for `sam local invoke`: with the release binaries that
//! `cargo lambda build --release` made running under cargo-lambda's runtime emulator (started by
//! `scripts/lambda-local.sh`, one emulator per function), this sets up the local stack
//! (tables, ticket queue, a demo event in Redis), invokes every function with its sample events
//! through `cargo lambda invoke`, and checks each answer: status and body for HTTP functions, the
//! admitted count for `admit`, the SQS message for `outbox-stream`, the error for wrong events.
//!
//! `local-invoke healthy` runs against functions whose Redis and AWS endpoint are up;
//! `local-invoke unreachable` against ones pointed at closed ports (answers must come, not hangs).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use lineup::event_settings::EventSettings;
use lineup::ids::EventId;
use lineup::ledger::dynamo::tables::create_tables;
use lineup::ledger::dynamo::{DynamoLedger, TableNames};
use lineup::ledger::NewSeat;
use lineup::queue::keys::EventKeys;
use lineup::queue::EventSettingsStore;
use lineup_tests::on_sale::{route, seat, webhook_secret};
use lineup_tests::{customer, queue, redis, sample, SAMPLE_CUSTOMER, SAMPLE_EVENT};
use serde_json::{json, Value};

/// What `cargo lambda invoke` gave back: the function's answer, or its error report.
enum Answer {
    Ok(Value),
    Failed(String),
}

fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set (run scripts/lambda-local.sh)"))
}

fn scratch(name: &str, event: &Value) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/local-invoke");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(event).unwrap()).expect("write event");
    path
}

/// The runtime emulator port of `function`, from `LAMBDA_PORTS` (`join=9201,poll=9202,...`):
/// each release binary runs under its own `cargo lambda watch --only-lambda-apis`.
fn port(function: &str) -> String {
    env("LAMBDA_PORTS")
        .split(',')
        .find_map(|pair| {
            pair.strip_prefix(&format!("{function}="))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no port for {function} in LAMBDA_PORTS"))
}

/// `cargo lambda invoke --data-file FILE` against the function's runtime emulator.
fn invoke(function: &str, file: &PathBuf) -> Answer {
    let started = Instant::now();
    let output = Command::new("cargo")
        .args([
            "lambda",
            "invoke",
            "_",
            "-A",
            "127.0.0.1",
            "-P",
            &port(function),
            "--data-file",
        ])
        .arg(file)
        .output()
        .expect("cargo lambda is on PATH");
    let took = started.elapsed();
    println!(
        "  invoke {function} {} -> {:?} in {took:.1?}",
        file.file_name().unwrap().to_string_lossy(),
        output.status.code()
    );
    if output.status.success() {
        Answer::Ok(serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "{function}: answer is not JSON ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        }))
    } else {
        Answer::Failed(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// An API Gateway answer: status and parsed JSON body.
fn http(function: &str, file: &PathBuf) -> (u16, Value) {
    match invoke(function, file) {
        Answer::Ok(response) => {
            let status = response["statusCode"].as_u64().expect("statusCode") as u16;
            let body = match response["body"].as_str() {
                Some(text) if !text.is_empty() => serde_json::from_str(text).expect("JSON body"),
                _ => Value::Null,
            };
            (status, body)
        }
        Answer::Failed(report) => panic!("{function} failed instead of answering: {report}"),
    }
}

fn expect_failure(function: &str, file: &PathBuf, code: &str) {
    match invoke(function, file) {
        Answer::Failed(report) => assert!(
            report.contains(code),
            "{function}: expected {code} in {report}"
        ),
        Answer::Ok(answer) => panic!("{function}: expected a reported error {code}, got {answer}"),
    }
}

async fn healthy() {
    let event = EventId::parse(SAMPLE_EVENT).unwrap();
    let alice = lineup::ids::CustomerId::parse(SAMPLE_CUSTOMER).unwrap();

    println!("setting up: tables, ticket queue, the demo event");
    let tables = TableNames::from_env().expect("table names");
    let aws = lineup_tests::aws::settings();
    let dynamo = lineup::aws::dynamodb(&aws);
    create_tables(&dynamo, &tables)
        .await
        .expect("create tables");
    let ledger = DynamoLedger::new(dynamo.clone(), tables.clone());
    let seats: Vec<NewSeat> = (1..=8)
        .map(|n| NewSeat {
            seat_id: seat(n),
            section: "Floor".into(),
            price: 12_000,
            currency: "KRW".into(),
        })
        .collect();
    ledger.seed_seats(&event, &seats).await.expect("seed");
    let sqs = lineup::aws::sqs(&aws);
    let created = sqs
        .create_queue()
        .queue_name("lineup-ticket-issued.fifo")
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("create queue");
    assert_eq!(
        created.queue_url(),
        Some(env("TICKET_QUEUE_URL").as_str()),
        "TICKET_QUEUE_URL matches the queue"
    );
    let keys = EventKeys::new(&event);
    let mut connection = redis().await;
    let _: i64 = redis::cmd("DEL")
        .arg(&[&keys.settings, &keys.queue, &keys.active, &keys.admission])
        .query_async(&mut connection)
        .await
        .unwrap();
    let queue = queue();
    queue
        .configure(
            &event,
            &EventSettings::opening_at(SystemTime::now() - Duration::from_secs(60)),
        )
        .await
        .unwrap();
    for n in 100..103 {
        lineup::queue::WaitingLine::join(queue.as_ref(), &event, &customer(n), SystemTime::now())
            .await
            .unwrap();
    }

    println!("join, poll");
    let (status, joined) = http("join", &scratch("join.json", &sample("join.json")));
    assert_eq!(
        (
            status,
            joined["status"].as_str(),
            joined["position"].as_u64()
        ),
        (201, Some("waiting"), Some(3))
    );
    let (status, _) = http("join", &scratch("join.json", &sample("join.json")));
    assert_eq!(status, 200, "re-joining keeps the place");
    let (status, polled) = http("poll", &scratch("poll.json", &sample("poll.json")));
    assert_eq!((status, polled["status"].as_str()), (200, Some("waiting")));
    for (function, file, status) in [
        ("join", "join-unauthenticated.json", 401),
        ("join", "join-not-json.json", 400),
        ("join", "join-unknown-event.json", 404),
        ("poll", "poll-foreign-queue-id.json", 404),
        ("poll", "poll-malformed-queue-id.json", 400),
    ] {
        let (got, body) = http(function, &scratch(file, &sample(file)));
        assert_eq!(got, status, "{file}: {body}");
        assert!(body["error"]["code"].is_string(), "{file}: {body}");
    }

    println!("admit");
    match invoke("admit", &scratch("admit.json", &sample("admit.json"))) {
        Answer::Ok(summary) => assert!(
            summary["admitted"].as_u64().unwrap_or(0) >= 4,
            "admit summary: {summary}"
        ),
        Answer::Failed(report) => panic!("admit failed: {report}"),
    }
    expect_failure(
        "admit",
        &scratch("admit-wrong-kind.json", &sample("admit-wrong-kind.json")),
        "not_a_scheduled_event",
    );
    let (_, admitted) = http("poll", &scratch("poll.json", &sample("poll.json")));
    assert_eq!(admitted["status"], "admitted", "{admitted}");
    let token = admitted["accessToken"].as_str().unwrap().to_owned();

    println!("seat map, hold, order, confirm");
    let (status, map) = http("hold", &scratch("seats.json", &sample("seats.json")));
    assert_eq!(
        (status, map["seats"].as_array().map(Vec::len)),
        (200, Some(8))
    );
    let mut hold = sample("hold.json");
    hold["headers"]["x-queue-token"] = token.clone().into();
    let (status, order) = http("hold", &scratch("hold.json", &hold));
    assert_eq!(status, 201, "{order}");
    let order_id = order["orderId"].as_str().unwrap().to_owned();
    let (status, _) = http(
        "hold",
        &scratch("hold-no-token.json", &sample("hold-no-token.json")),
    );
    assert_eq!(status, 403);
    let mut too_many = sample("hold-too-many-seats.json");
    too_many["headers"]["x-queue-token"] = token.into();
    let (status, _) = http("hold", &scratch("hold-too-many-seats.json", &too_many));
    assert_eq!(status, 400);
    let (status, pending) = http(
        "hold",
        &scratch(
            "order.json",
            &route(
                &sample("order.json"),
                &[("orderId", &order_id)],
                Some(&alice),
            ),
        ),
    );
    assert_eq!((status, pending["status"].as_str()), (200, Some("PENDING")));

    let body = json!({ "paymentId": "pay_local_1", "amount": order["amount"], "currency": "KRW" })
        .to_string();
    let mut confirm = route(&sample("confirm.json"), &[("orderId", &order_id)], None);
    confirm["body"] = body.clone().into();
    confirm["headers"]["lineup-signature"] = webhook_secret()
        .sign(SystemTime::now(), body.as_bytes())
        .into();
    let (status, paid) = http("confirm", &scratch("confirm.json", &confirm));
    assert_eq!(
        (status, paid["status"].as_str()),
        (200, Some("PAID")),
        "{paid}"
    );
    let bad = route(
        &sample("confirm-bad-signature.json"),
        &[("orderId", &order_id)],
        None,
    );
    let (status, _) = http("confirm", &scratch("confirm-bad-signature.json", &bad));
    assert_eq!(status, 401);

    println!("outbox-stream: the records the sale wrote, from the emulator's stream");
    let records = lineup_tests::stream::lambda_event_from_stream(&tables.outbox).await;
    assert_eq!(
        records["Records"].as_array().map(Vec::len),
        Some(1),
        "one outbox item for one sale"
    );
    match invoke("outbox-stream", &scratch("outbox-stream.json", &records)) {
        Answer::Ok(response) => assert_eq!(response["batchItemFailures"], json!([]), "{response}"),
        Answer::Failed(report) => panic!("outbox-stream failed: {report}"),
    }
    let messages = sqs
        .receive_message()
        .queue_url(env("TICKET_QUEUE_URL"))
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let message: Value = serde_json::from_str(messages.messages()[0].body().unwrap()).unwrap();
    assert_eq!(
        (message["type"].as_str(), message["orderId"].as_str()),
        (Some("ticket_issued"), Some(order_id.as_str()))
    );
    expect_failure(
        "outbox-stream",
        &scratch(
            "outbox-stream-wrong-kind.json",
            &sample("outbox-stream-wrong-kind.json"),
        ),
        "not_a_dynamodb_stream_event",
    );

    println!("expire");
    match invoke("expire", &scratch("expire.json", &sample("expire.json"))) {
        Answer::Ok(report) => assert_eq!(report["ordersExpired"], 0, "{report}"),
        Answer::Failed(report) => panic!("expire failed: {report}"),
    }
    expect_failure(
        "expire",
        &scratch("admit-wrong-kind.json", &sample("admit-wrong-kind.json")),
        "not_a_scheduled_event",
    );
    println!("every function answered as expected");
}

/// Against a watch whose Redis and AWS endpoint are closed ports: every function answers (503)
/// or reports the error through the runtime, within a bound, instead of hanging.
async fn unreachable() {
    let bound = Duration::from_secs(30);
    let timed = |function: &str, file: &str| {
        let started = Instant::now();
        let answer = invoke(function, &scratch(file, &sample(file)));
        assert!(
            started.elapsed() < bound,
            "{function} took {:?}",
            started.elapsed()
        );
        answer
    };
    for (function, file) in [
        ("join", "join.json"),
        ("poll", "poll.json"),
        ("hold", "seats.json"),
    ] {
        match timed(function, file) {
            Answer::Ok(response) => {
                assert_eq!(response["statusCode"], 503, "{function}: {response}");
                assert!(
                    response["headers"]["retry-after"].is_string(),
                    "{function}: {response}"
                );
            }
            Answer::Failed(report) => panic!("{function} should answer 503, reported {report}"),
        }
    }
    for (function, file, code) in [
        ("admit", "admit.json", "service_unavailable"),
        ("expire", "expire.json", "service_unavailable"),
    ] {
        match timed(function, file) {
            Answer::Failed(report) => assert!(report.contains(code), "{function}: {report}"),
            Answer::Ok(answer) => panic!("{function} should report {code}, answered {answer}"),
        }
    }
    match timed("outbox-stream", "outbox-stream.json") {
        Answer::Ok(response) => assert_eq!(
            response["batchItemFailures"].as_array().map(Vec::len),
            Some(3),
            "the first record and every one after it reported for retry: {response}"
        ),
        Answer::Failed(report) => {
            panic!("outbox-stream should report failures per record: {report}")
        }
    }
    println!("every function answered or reported the outage within {bound:?}");
}

#[tokio::main]
async fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("healthy") => healthy().await,
        Some("unreachable") => unreachable().await,
        _ => panic!("usage: local-invoke healthy|unreachable"),
    }
}
