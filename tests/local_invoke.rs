//! The Docker-free stand-in for `sam local invoke`: with the functions' binaries (the native
//! debug build: this machine cannot run the arm64 ones `sam build` makes) running under
//! cargo-lambda's runtime emulator (started by `scripts/lambda-local.sh`, one emulator per
//! function), this sets up the local stack
//! (tables, ticket queue, a demo event in Redis), invokes every function with its sample events
//! through `cargo lambda invoke`, and checks each answer: status and body for HTTP functions, the
//! admitted count for `admit`, the SQS message for `outbox-stream`, the error for wrong events.
//!
//! `local-invoke healthy` runs against functions whose Redis and AWS endpoint are up;
//! `local-invoke unreachable` against ones pointed at a listener that never answers (answers or
//! reported errors must come within a bound, not hangs).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_sqs::types::MessageSystemAttributeName;
use lineup::adapters::dynamo::{DynamoLedger, TableNames};
use lineup::adapters::redis::keys::EventKeys;
use lineup::application::ports::queue::{EventSettingsStore, WaitingLine};
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::{CustomerId, EventId};
use lineup::domain::seat::NewSeat;
use lineup_tests::on_sale::{seat, webhook_secret};
use lineup_tests::route;
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
/// each function's binary runs under its own `cargo lambda watch --only-lambda-apis`.
fn port(function: &str) -> String {
    env("LAMBDA_PORTS")
        .split(',')
        .find_map(|pair| {
            pair.strip_prefix(&format!("{function}="))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no port for {function} in LAMBDA_PORTS"))
}

/// `cargo lambda invoke --data-file FILE` against the function's runtime emulator, bounded by
/// `timeout`: a function that never answers (say it died at cold start) fails the run instead
/// of hanging it.
fn invoke(function: &str, file: &PathBuf) -> Answer {
    let started = Instant::now();
    let output = Command::new("timeout")
        .args([
            "40",
            "cargo",
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
        .expect("timeout and cargo lambda are on PATH");
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    println!(
        "  invoke {function} {name} -> {:?} in {:.1?}",
        output.status.code(),
        started.elapsed()
    );
    assert_ne!(
        output.status.code(),
        Some(124),
        "{function} {name}: no answer within 40 s"
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

/// A sample, as a scratch file.
fn sample_file(name: &str) -> PathBuf {
    scratch(name, &sample(name))
}

/// `confirm.json` for `order_id` with `body`, signed now with the development webhook secret.
fn signed_confirm(order_id: &str, body: &Value) -> Value {
    let text = body.to_string();
    let mut confirm = route(&sample("confirm.json"), &[("orderId", order_id)], None);
    confirm["body"] = text.clone().into();
    confirm["headers"]["lineup-signature"] = webhook_secret()
        .sign(SystemTime::now(), text.as_bytes())
        .into();
    confirm
}

async fn healthy() {
    let event = EventId::parse(SAMPLE_EVENT).unwrap();
    let alice = CustomerId::parse(SAMPLE_CUSTOMER).unwrap();
    let bob = CustomerId::parse("customer-0002").unwrap();

    // `lineup local-aws` made the tables, queues and secrets (scripts/lambda-local.sh), under
    // the names events/env.json gives the functions; here only the demo event is set up.
    println!("setting up: the demo event");
    let tables = TableNames::from_lookup(|name| std::env::var(name).ok()).expect("table names");
    let aws = lineup_tests::aws::settings();
    let dynamo = lineup::adapters::aws::dynamodb(&aws);
    let records = lineup::adapters::dynamo::event_records::DynamoEventRecords::new(
        dynamo.clone(),
        env("EVENTS_TABLE"),
    );
    let ledger = DynamoLedger::new(dynamo.clone(), tables.clone());
    let seats: Vec<NewSeat> = (1..=8)
        .map(|n| NewSeat {
            seat_id: seat(n),
            section: "Floor".into(),
            row: "A".into(),
            price: 12_000,
            currency: "KRW".into(),
        })
        .collect();
    let sqs = lineup::adapters::aws::sqs(&aws);
    let queue_name = lineup_cli::local_aws::plan::queue_name(&env("TICKET_QUEUE_URL"))
        .expect("TICKET_QUEUE_URL ends in a queue name")
        .to_owned();
    let ticket_queue = lineup_cli::local_aws::queues::find(&sqs, &queue_name)
        .await
        .expect("ask for the ticket queue")
        .expect("`lineup local-aws` made the ticket queue env.json names");
    assert_eq!(ticket_queue.attributes["FifoQueue"], "true");
    let keys = EventKeys::new(&event);
    let mut connection = redis().await;
    let _: i64 = redis::cmd("DEL")
        .arg(&[
            &keys.settings,
            &keys.queue,
            &keys.active,
            &keys.offered,
            &keys.admission,
            &keys.status,
            &keys.layout,
            &keys.seats_available,
            &keys.seats_sold,
            &keys.seats_pending,
        ])
        .query_async(&mut connection)
        .await
        .unwrap();
    let queue = queue();
    let board = queue.availability_board();
    lineup::application::seeding::Seeding {
        ledger: &ledger,
        layouts: &records,
        board: &board,
    }
    .seed(
        &event,
        &lineup::domain::layout::SeatLayout::from_seats(&seats).expect("layout"),
        &Default::default(),
        SystemTime::now(),
    )
    .await
    .expect("seed");
    queue
        .configure(
            &event,
            &EventSettings::opening_at(SystemTime::now() - Duration::from_secs(60)),
            &lineup::domain::draw::DrawSeed::generate(),
        )
        .await
        .unwrap();
    lineup_tests::allow_numbers(&queue, &event).await;
    for n in 100..103 {
        WaitingLine::join(queue.as_ref(), &event, &customer(n), SystemTime::now())
            .await
            .unwrap();
    }

    println!("join, poll");
    let (status, joined) = http("join", &sample_file("join.json"));
    assert_eq!(
        (
            status,
            joined["status"].as_str(),
            joined["position"].as_u64()
        ),
        (201, Some("waiting"), Some(3))
    );
    assert_eq!(joined["number"], 4, "{joined}");
    let (status, again) = http("join", &sample_file("join.json"));
    assert_eq!(
        (status, &again["number"]),
        (200, &joined["number"]),
        "re-joining keeps the place"
    );
    let (status, polled) = http("poll", &sample_file("poll.json"));
    assert_eq!(
        (
            status,
            polled["status"].as_str(),
            polled["position"].as_u64()
        ),
        (200, Some("waiting"), Some(3))
    );
    for (function, file, status, code) in [
        ("join", "join-unauthenticated.json", 401, "unauthenticated"),
        ("join", "join-not-json.json", 400, "invalid_json"),
        ("join", "join-unknown-event.json", 404, "event_not_found"),
        (
            "poll",
            "poll-foreign-queue-id.json",
            404,
            "queue_entry_not_found",
        ),
        (
            "poll",
            "poll-malformed-queue-id.json",
            400,
            "invalid_queue_id",
        ),
    ] {
        let (got, body) = http(function, &sample_file(file));
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (status, Some(code)),
            "{file}: {body}"
        );
    }

    println!("admit");
    match invoke("admit", &sample_file("admit.json")) {
        // Every open event of this Redis is ticked; the demo event alone has 4 waiting.
        Answer::Ok(summary) => assert!(
            summary["admitted"].as_u64().unwrap_or(0) >= 4,
            "admit summary: {summary}"
        ),
        Answer::Failed(report) => panic!("admit failed: {report}"),
    }
    expect_failure(
        "admit",
        &sample_file("admit-wrong-kind.json"),
        "not_a_scheduled_event",
    );
    println!("status, draw, a direct call");
    let (status, public) = http("status", &sample_file("status.json"));
    assert_eq!(status, 200, "{public}");
    assert!(public["servingUpTo"].as_u64().unwrap_or(0) >= 4, "{public}");
    assert_eq!(public["state"], "open", "{public}");
    let (status, draw) = http("status", &sample_file("draw.json"));
    assert_eq!(
        (status, draw["error"]["code"].as_str()),
        (404, Some("draw_not_published")),
        "no pre-queue, no draw: {draw}"
    );
    let mut direct = sample("status.json");
    direct["headers"]
        .as_object_mut()
        .unwrap()
        .remove("x-lineup-origin");
    let (status, refused) = http("status", &scratch("status-direct.json", &direct));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (403, Some("direct_access_refused"))
    );

    let (_, admitted) = http("poll", &sample_file("poll.json"));
    assert_eq!(admitted["status"], "admitted", "{admitted}");
    let token = admitted["accessToken"].as_str().unwrap().to_owned();

    println!("seat map (public), hold, order, release, best available, confirm");
    let (status, map) = http("status", &sample_file("seats.json"));
    assert_eq!(
        (status, map["seats"].as_u64(), map["available"].as_u64()),
        (200, Some(8), Some(8)),
        "{map}"
    );
    let mut layout = sample("layout.json");
    let version = map["layoutVersion"].as_str().expect("a layout version");
    layout["pathParameters"]["version"] = version.into();
    let (status, drawn) = http("status", &scratch("layout.json", &layout));
    assert_eq!(
        (status, drawn["sections"][0]["rows"][0]["seats"][7].as_str()),
        (200, Some("A-008")),
        "{drawn}"
    );
    let mut hold = sample("hold.json");
    hold["headers"]["x-queue-token"] = token.clone().into();
    let (status, first) = http("hold", &scratch("hold.json", &hold));
    assert_eq!(
        (status, first["seatIds"].clone()),
        (201, json!(["A-001", "A-002"])),
        "{first}"
    );
    let first_id = first["orderId"].as_str().unwrap().to_owned();
    let (status, refused) = http("hold", &sample_file("hold-no-token.json"));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (403, Some("access_denied"))
    );
    let mut too_many = sample("hold-too-many-seats.json");
    too_many["headers"]["x-queue-token"] = token.into();
    let (status, refused) = http("hold", &scratch("hold-too-many-seats.json", &too_many));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (400, Some("too_many_seats"))
    );
    let order = |caller: &CustomerId| {
        scratch(
            "order.json",
            &route(
                &sample("order.json"),
                &[("orderId", &first_id)],
                Some(caller),
            ),
        )
    };
    let (status, pending) = http("hold", &order(&alice));
    assert_eq!((status, pending["status"].as_str()), (200, Some("PENDING")));
    let foreign = route(
        &sample("order-foreign.json"),
        &[("orderId", &first_id)],
        Some(&bob),
    );
    let (status, refused) = http("hold", &scratch("order-foreign.json", &foreign));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let release = route(
        &sample("release.json"),
        &[("eventId", SAMPLE_EVENT), ("orderId", &first_id)],
        Some(&alice),
    );
    let (status, _) = http("checkout", &scratch("release.json", &release));
    assert_eq!(status, 204);
    let (_, released) = http("hold", &order(&alice));
    assert_eq!(released["status"], "RELEASED");
    let mut best = sample("hold-best-available.json");
    best["headers"]["x-queue-token"] = hold["headers"]["x-queue-token"].clone();
    let (status, second) = http("hold", &scratch("hold-best-available.json", &best));
    // Eight seats in one row: the pair nearest its middle.
    assert_eq!(
        (status, second["seatIds"].clone()),
        (201, json!(["A-004", "A-005"])),
        "{second}"
    );
    let order_id = second["orderId"].as_str().unwrap().to_owned();

    // The webhook as the README's Docker path makes it: `lineup local-aws --confirm ORDER_ID`
    // prints confirm.json for the order, signed now with the secret the function reads.
    let printed =
        Command::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/lineup"))
            .args(["local-aws", "--endpoint-url", &env("AWS_ENDPOINT_URL")])
            .args(["--confirm", &order_id])
            .output()
            .expect("run lineup local-aws --confirm");
    assert!(
        printed.status.success(),
        "lineup local-aws --confirm: {}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let signed: Value = serde_json::from_slice(&printed.stdout).expect("it prints the event alone");
    assert_eq!(signed["pathParameters"]["orderId"], order_id.as_str());
    let (status, paid) = http("confirm", &scratch("confirm-printed.json", &signed));
    assert_eq!(
        (status, paid["status"].as_str()),
        (200, Some("PAID")),
        "{paid}"
    );
    let paid_body: Value = serde_json::from_str(signed["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        paid_body["amount"], second["amount"],
        "the order's own amount"
    );
    let bad = route(
        &sample("confirm-bad-signature.json"),
        &[("orderId", &order_id)],
        None,
    );
    let (status, refused) = http("confirm", &scratch("confirm-bad-signature.json", &bad));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (401, Some("invalid_signature"))
    );

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
    let received = sqs
        .receive_message()
        .queue_url(env("TICKET_QUEUE_URL"))
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    assert_eq!(
        received.messages().len(),
        1,
        "one ticket message for one sale"
    );
    let sent = &received.messages()[0];
    let message: Value = serde_json::from_str(sent.body().unwrap()).unwrap();
    assert_eq!(
        (message["type"].as_str(), message["orderId"].as_str()),
        (Some("ticket_issued"), Some(order_id.as_str()))
    );
    let attribute = |name: MessageSystemAttributeName| {
        sent.attributes().and_then(|all| all.get(&name)).cloned()
    };
    assert_eq!(
        attribute(MessageSystemAttributeName::MessageGroupId).as_deref(),
        Some(order_id.as_str())
    );
    assert_eq!(
        attribute(MessageSystemAttributeName::MessageDeduplicationId).as_deref(),
        message["outboxId"].as_str()
    );
    expect_failure(
        "outbox-stream",
        &sample_file("outbox-stream-wrong-kind.json"),
        "not_a_dynamodb_stream_event",
    );

    println!("availability: the seats table's stream, into the seat map");
    let changes = lineup_tests::stream::lambda_event_from_stream(&tables.seats).await;
    match invoke("availability", &scratch("availability.json", &changes)) {
        Answer::Ok(response) => assert_eq!(response["batchItemFailures"], json!([]), "{response}"),
        Answer::Failed(report) => panic!("availability failed: {report}"),
    }
    let (status, map) = http("status", &sample_file("seats.json"));
    assert_eq!(
        (status, map["available"].as_u64()),
        (200, Some(6)),
        "the two seats sold are no longer shown available: {map}"
    );
    expect_failure(
        "availability",
        &sample_file("outbox-stream-wrong-kind.json"),
        "not_a_dynamodb_stream_event",
    );

    println!("expire");
    match invoke("expire", &sample_file("expire.json")) {
        Answer::Ok(report) => assert_eq!(
            (
                report["ordersExpired"].as_u64(),
                report["ordersFailed"].as_u64()
            ),
            (Some(0), Some(0)),
            "{report}"
        ),
        Answer::Failed(report) => panic!("expire failed: {report}"),
    }
    expect_failure(
        "expire",
        &sample_file("admit-wrong-kind.json"),
        "not_a_scheduled_event",
    );

    println!("join again, leave");
    let (status, _) = http("join", &sample_file("join.json"));
    assert_eq!(
        status, 201,
        "a paid customer's admission ended; joining again queues them"
    );
    let (status, _) = http("poll", &sample_file("leave.json"));
    assert_eq!(status, 204);
    let (status, refused) = http("poll", &sample_file("leave.json"));
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (404, Some("queue_entry_not_found"))
    );
    println!("every function answered as expected");
}

/// Against functions whose Redis and AWS endpoint never answer: every function answers (503
/// with Retry-After) or reports the error through the runtime, within a bound, never hangs.
async fn unreachable() {
    let bound = Duration::from_secs(30);
    let timed = |function: &str, file: &PathBuf| {
        let started = Instant::now();
        let answer = invoke(function, file);
        assert!(
            started.elapsed() < bound,
            "{function} took {:?}",
            started.elapsed()
        );
        answer
    };
    let payment = json!({
        "orderId": "9b2f6c1e-3d4a-4f8b-a6c2-5e7d8f9a0b1c",
        "paymentId": "pay_local_2",
        "amount": 12000,
        "currency": "KRW",
    });
    let confirm = scratch(
        "confirm-signed.json",
        &signed_confirm("9b2f6c1e-3d4a-4f8b-a6c2-5e7d8f9a0b1c", &payment),
    );
    // Each function waits out its own timeouts: checked all at once (each on its own emulator),
    // so the outage costs the run one bound, not one per function. A failed check's panic
    // fails the run when the scope ends.
    std::thread::scope(|scope| {
        for (function, file) in [
            ("join", sample_file("join.json")),
            ("poll", sample_file("poll.json")),
            ("hold", sample_file("order.json")),
            ("confirm", confirm.clone()),
            ("status", sample_file("status.json")),
            ("status", sample_file("seats.json")),
        ] {
            let timed = &timed;
            scope.spawn(move || match timed(function, &file) {
                Answer::Ok(response) => {
                    assert_eq!(response["statusCode"], 503, "{function}: {response}");
                    assert!(
                        response["headers"]["retry-after"].is_string(),
                        "{function}: {response}"
                    );
                }
                Answer::Failed(report) => {
                    panic!("{function} should answer 503, reported {report}")
                }
            });
        }
        for (function, file) in [("admit", "admit.json"), ("expire", "expire.json")] {
            let timed = &timed;
            scope.spawn(move || match timed(function, &sample_file(file)) {
                Answer::Failed(report) => assert!(
                    report.contains("service_unavailable"),
                    "{function}: {report}"
                ),
                Answer::Ok(answer) => {
                    panic!("{function} should report service_unavailable, answered {answer}")
                }
            });
        }
        let timed = &timed;
        scope.spawn(
            move || match timed("outbox-stream", &sample_file("outbox-stream.json")) {
                Answer::Ok(response) => assert_eq!(
                    response["batchItemFailures"].as_array().map(Vec::len),
                    Some(3),
                    "the first record and every one after it reported for retry: {response}"
                ),
                Answer::Failed(report) => {
                    panic!("outbox-stream should report failures per record: {report}")
                }
            },
        );
        scope.spawn(
            move || match timed("availability", &sample_file("availability.json")) {
                Answer::Ok(response) => assert_eq!(
                    response["batchItemFailures"].as_array().map(Vec::len),
                    Some(2),
                    "the whole batch reported for retry: {response}"
                ),
                Answer::Failed(report) => {
                    panic!("availability should report the batch for retry: {report}")
                }
            },
        );
    });
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
