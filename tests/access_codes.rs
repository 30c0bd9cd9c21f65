//! Access codes at join (ADR 0030), through the real join handler (the sample API Gateway event
//! `events/join.json`), Redis and the events table in the emulator: a single-use code used by a
//! second account is refused with nothing stored changed (the code's item, the queue, the
//! pre-queue); a code of K uses lets in exactly K distinct accounts; twenty accounts racing on a
//! single-use code at once queue exactly one; wrong, foreign, expired and revoked codes are
//! refused alike with nothing stored; the same account comes back with its code and keeps its
//! place; the requirement survives the cache losing the event; and the operator's commands
//! (`lineup event codes create|revoke|list`) make codes the join takes, revoke them and count
//! them, each kept in the audit trail without the codes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::types::AttributeValue;
use http::StatusCode;
use lambda_http::{Body, Response};
use lineup::adapters::dynamo::access_codes::DynamoAccessCodes;
use lineup::application::join;
use lineup::application::ports::access_codes::AccessCodeBook;
use lineup::application::ports::event_records::{AuditLog, EventRecords};
use lineup::application::ports::queue::WaitingLine;
use lineup::application::queue_api::QueueApi;
use lineup::domain::access_code::{AccessCode, CodeHash, CodeTerms};
use lineup::domain::clock::SystemClock;
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::{CustomerId, EventId};
use lineup_tests::*;
use serde_json::{json, Value};

type Item = std::collections::HashMap<String, AttributeValue>;

/// An event requiring a code, open since a minute ago (or opening in `opens_in`: the pre-queue).
async fn code_event(opens_in: Option<Duration>) -> EventId {
    let event = fresh_event();
    let now = SystemTime::now();
    let opens_at = match opens_in {
        Some(delay) => now + delay,
        None => now - Duration::from_secs(60),
    };
    let settings = EventSettings {
        code_required: true,
        ..EventSettings::opening_at(opens_at)
    };
    // As an operator's open does: the durable record first, then the cache.
    records()
        .await
        .save_settings(&event, &settings, None)
        .await
        .expect("save the settings");
    configure(&queue(), &event, settings).await;
    event
}

async fn book() -> DynamoAccessCodes {
    DynamoAccessCodes::in_events_table(&*records().await)
}

/// `count` new codes for `event`, `uses` accounts each.
async fn new_codes(
    event: &EventId,
    count: usize,
    uses: u32,
    expires_at: Option<SystemTime>,
) -> Vec<AccessCode> {
    let codes: Vec<AccessCode> = (0..count).map(|_| AccessCode::generate()).collect();
    let terms = CodeTerms {
        uses,
        expires_at,
        group: lineup::domain::ids::GroupName::parse("members").ok(),
    };
    book()
        .await
        .create(event, &codes, &terms, SystemTime::now())
        .await
        .expect("create the codes");
    codes
}

async fn queue_api() -> QueueApi {
    api(queue(), Arc::new(SystemClock)).await
}

fn join_with_code(
    event: &EventId,
    caller: &CustomerId,
    code: Option<&str>,
) -> lambda_http::Request {
    let mut sample = route(
        &sample("join.json"),
        &[("eventId", event.as_str())],
        Some(caller),
    );
    sample["body"] = match code {
        Some(code) => json!({ "code": code }).to_string(),
        None => "{}".to_owned(),
    }
    .into();
    request(&sample)
}

async fn join(
    api: &QueueApi,
    event: &EventId,
    caller: &CustomerId,
    code: &AccessCode,
) -> Response<Body> {
    join::handle(api, join_with_code(event, caller, Some(&code.to_string()))).await
}

fn refused_with(response: &Response<Body>, status: StatusCode, code: &str) {
    assert_eq!(
        (response.status(), error_code(response).as_str()),
        (status, code),
        "{}",
        body(response)
    );
}

/// The code's item as stored (`None`: no item), read consistently.
async fn code_item(event: &EventId, code: &AccessCode) -> Option<Item> {
    let hash = code.hash(event);
    aws::dynamo()
        .await
        .get_item()
        .table_name(records().await.table())
        .key(
            "pk",
            AttributeValue::S(format!("CODES#{event}#{}", hash.shard())),
        )
        .key("sk", AttributeValue::S(format!("CODE#{}", hash.as_str())))
        .consistent_read(true)
        .send()
        .await
        .expect("read the code")
        .item
}

/// Every item stored under the event's code partitions, by sort key.
async fn code_items(event: &EventId) -> BTreeMap<String, Item> {
    let client = aws::dynamo().await;
    let table = records().await.table().to_owned();
    let mut items = BTreeMap::new();
    for shard in CodeHash::SHARDS {
        let found = client
            .query()
            .table_name(&table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(format!("CODES#{event}#{shard}")))
            .consistent_read(true)
            .send()
            .await
            .expect("query the codes")
            .items
            .unwrap_or_default();
        for item in found {
            let sk = item["sk"].as_s().unwrap().clone();
            items.insert(sk, item);
        }
    }
    items
}

fn bound_accounts(item: &Item) -> Vec<String> {
    let mut bound = item
        .get("bound_accounts")
        .map(|set| set.as_ss().unwrap().clone())
        .unwrap_or_default();
    bound.sort();
    bound
}

#[tokio::test]
async fn a_single_use_code_used_by_a_second_account_is_refused_and_nothing_stored_changes() {
    logs();
    let api = queue_api().await;
    for opens_in in [None, Some(Duration::from_secs(3_600))] {
        let event = code_event(opens_in).await;
        let code = &new_codes(&event, 1, 1, None).await[0];
        let (alice, bob) = (customer(1), customer(2));
        let joined = join(&api, &event, &alice, code).await;
        assert_eq!(joined.status(), StatusCode::CREATED, "{}", body(&joined));
        assert_eq!(
            bound_accounts(&code_item(&event, code).await.unwrap()),
            [alice.as_str()]
        );

        let redis_before = snapshot(&event).await;
        let codes_before = code_items(&event).await;
        let passed_on = join(&api, &event, &bob, code).await;
        refused_with(&passed_on, StatusCode::FORBIDDEN, "code_invalid");
        assert_eq!(
            snapshot(&event).await,
            redis_before,
            "the queue and pre-queue are unchanged"
        );
        assert_eq!(
            code_items(&event).await,
            codes_before,
            "the code is unchanged"
        );
        assert!(queue()
            .standing(&event, &bob, SystemTime::now())
            .await
            .unwrap()
            .is_none());
    }
}

#[tokio::test]
async fn a_code_of_three_uses_lets_in_exactly_three_distinct_accounts() {
    let api = queue_api().await;
    let event = code_event(None).await;
    let code = &new_codes(&event, 1, 3, None).await[0];
    let mut answers = Vec::new();
    for n in 1..=5 {
        answers.push(join(&api, &event, &customer(n), code).await.status());
    }
    assert_eq!(
        answers,
        [
            StatusCode::CREATED,
            StatusCode::CREATED,
            StatusCode::CREATED,
            StatusCode::FORBIDDEN,
            StatusCode::FORBIDDEN
        ]
    );
    let item = code_item(&event, code).await.unwrap();
    assert_eq!(
        bound_accounts(&item),
        [customer(1), customer(2), customer(3)].map(|c| c.as_str().to_owned())
    );
    assert_eq!(item["bound_count"].as_n().unwrap(), "3");
    // The first three again: let in again (the same places), the code unchanged.
    for n in 1..=3 {
        assert_eq!(
            join(&api, &event, &customer(n), code).await.status(),
            StatusCode::OK
        );
    }
    assert_eq!(
        code_item(&event, code).await.unwrap()["bound_count"]
            .as_n()
            .unwrap(),
        "3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_accounts_racing_on_a_single_use_code_queue_exactly_one() {
    let api = queue_api().await;
    let event = code_event(None).await;
    let code = &new_codes(&event, 1, 1, None).await[0];
    let racers: Vec<CustomerId> = (100..120).map(customer).collect();
    let answers = futures::future::join_all(racers.iter().map(|who| {
        let api = api.clone();
        let event = event.clone();
        let request = join_with_code(&event, who, Some(&code.to_string()));
        tokio::spawn(async move { join::handle(&api, request).await })
    }))
    .await;
    let statuses: Vec<StatusCode> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().status())
        .collect();
    let admitted: Vec<&CustomerId> = racers
        .iter()
        .zip(&statuses)
        .filter(|(_, status)| **status == StatusCode::CREATED)
        .map(|(who, _)| who)
        .collect();
    assert_eq!(admitted.len(), 1, "{statuses:?}");
    for answer in answers.iter().map(|a| a.as_ref().unwrap()) {
        if answer.status() != StatusCode::CREATED {
            refused_with(answer, StatusCode::FORBIDDEN, "code_invalid");
        }
    }
    let queue = queue();
    let mut queued = Vec::new();
    for who in &racers {
        if queue
            .standing(&event, who, SystemTime::now())
            .await
            .unwrap()
            .is_some()
        {
            queued.push(who);
        }
    }
    assert_eq!(queued, admitted, "the one answered 201 is the one queued");
    assert_eq!(
        bound_accounts(&code_item(&event, code).await.unwrap()),
        [admitted[0].as_str()]
    );
}

#[tokio::test]
async fn wrong_foreign_expired_and_revoked_codes_are_refused_alike_and_store_nothing() {
    let api = queue_api().await;
    let event = code_event(None).await;
    let other = code_event(None).await;
    let foreign = new_codes(&other, 1, 1, None).await.remove(0);
    let expired = new_codes(
        &event,
        1,
        1,
        Some(SystemTime::now() + Duration::from_millis(300)),
    )
    .await
    .remove(0);
    let revoked = new_codes(&event, 1, 1, None).await.remove(0);
    assert_eq!(
        book()
            .await
            .revoke(&event, &[revoked.hash(&event)], SystemTime::now())
            .await
            .unwrap(),
        1
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let wrong = AccessCode::generate();
    let alice = customer(1);
    let redis_before = snapshot(&event).await;
    let codes_before = (code_items(&event).await, code_items(&other).await);
    let mut messages = Vec::new();
    for code in [&wrong, &foreign, &expired, &revoked] {
        let answer = join(&api, &event, &alice, code).await;
        refused_with(&answer, StatusCode::FORBIDDEN, "code_invalid");
        messages.push(body(&answer));
    }
    assert!(
        messages.windows(2).all(|pair| pair[0] == pair[1]),
        "{messages:?}"
    );
    // Without a code, and with one that cannot be a code.
    refused_with(
        &join::handle(&api, join_with_code(&event, &alice, None)).await,
        StatusCode::FORBIDDEN,
        "code_required",
    );
    refused_with(
        &join::handle(&api, join_with_code(&event, &alice, Some("let me in"))).await,
        StatusCode::BAD_REQUEST,
        "invalid_code",
    );
    assert_eq!(snapshot(&event).await, redis_before);
    assert_eq!(
        (code_items(&event).await, code_items(&other).await),
        codes_before
    );
    // The foreign code still lets in at its own event.
    assert_eq!(
        join(&api, &other, &alice, &foreign).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn the_same_account_coming_back_keeps_its_place_and_the_requirement_survives_a_cache_loss() {
    let api = queue_api().await;
    let event = code_event(None).await;
    let code = &new_codes(&event, 1, 1, None).await[0];
    let alice = customer(1);
    let first = join(&api, &event, &alice, code).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let number = body(&first)["number"].clone();
    let again = join(&api, &event, &alice, code).await;
    assert_eq!(
        (again.status(), body(&again)["number"].clone()),
        (StatusCode::OK, number.clone())
    );
    let bare = join::handle(&api, join_with_code(&event, &alice, None)).await;
    assert_eq!(
        (bare.status(), body(&bare)["number"].clone()),
        (StatusCode::OK, number),
        "queued: no code needed"
    );

    // Leaving and coming back: a newcomer again, let in by the code it is bound to (a second
    // binding of the same account takes no second use), while another account is still refused.
    let queue_id = body(&first)["queueId"].as_str().unwrap().to_owned();
    let left =
        lineup::application::poll::handle(&api, leave_request(&event, &alice, &queue_id)).await;
    assert!(left.status().is_success(), "{}", body(&left));
    refused_with(
        &join::handle(&api, join_with_code(&event, &alice, None)).await,
        StatusCode::FORBIDDEN,
        "code_required",
    );
    let rejoined = join(&api, &event, &alice, code).await;
    assert_eq!(
        rejoined.status(),
        StatusCode::CREATED,
        "{}",
        body(&rejoined)
    );
    assert_eq!(
        code_item(&event, code).await.unwrap()["bound_count"]
            .as_n()
            .unwrap(),
        "1"
    );
    refused_with(
        &join(&api, &event, &customer(2), code).await,
        StatusCode::FORBIDDEN,
        "code_invalid",
    );

    // The cache loses the event: re-loaded from its record, it still asks newcomers for a code.
    let mut redis = redis().await;
    let keys = lineup::adapters::redis::keys::EventKeys::new(&event);
    let _: () = redis::cmd("DEL")
        .arg(&keys.settings)
        .arg(&keys.queue)
        .query_async(&mut redis)
        .await
        .unwrap();
    refused_with(
        &join::handle(&api, join_with_code(&event, &customer(2), None)).await,
        StatusCode::FORBIDDEN,
        "code_required",
    );
    // ... and the binding was never in the cache: the code still lets only alice in.
    refused_with(
        &join(&api, &event, &customer(2), code).await,
        StatusCode::FORBIDDEN,
        "code_invalid",
    );
    let back = join(&api, &event, &alice, code).await;
    assert!(back.status().is_success(), "{}", body(&back));
}

#[tokio::test]
async fn the_operators_commands_make_codes_the_join_takes_revoke_and_count_them() {
    use lineup_cli::access_codes::{self, CodesAction, CodesOutcome};

    let api = queue_api().await;
    let event = code_event(None).await;
    let records = records().await;
    let audit = access_codes::Audit {
        log: &*records,
        operator: "arn:aws:iam::000000000000:user/tester".to_owned(),
    };
    let book = access_codes::book(&records);
    let action = |args: &[&str]| -> CodesAction {
        let line: Vec<String> = args
            .iter()
            .map(|arg| arg.replace("EVENT", event.as_str()))
            .collect();
        CodesAction::parse_from(&line).unwrap()
    };
    let now = SystemTime::now();
    let CodesOutcome::Created(codes) = access_codes::run(
        &action(&[
            "create", "--event", "EVENT", "--count", "3", "--uses", "2", "--group", "members",
        ]),
        &event,
        &book,
        &audit,
        now,
    )
    .await
    .unwrap() else {
        panic!("not created")
    };
    assert_eq!(codes.len(), 3);
    let printed: Vec<String> = codes.iter().map(ToString::to_string).collect();
    assert_eq!(
        join(
            &api,
            &event,
            &customer(1),
            &AccessCode::parse(&printed[0]).unwrap()
        )
        .await
        .status(),
        StatusCode::CREATED
    );

    let CodesOutcome::Revoked(revoked) = access_codes::run(
        &action(&["revoke", "--event", "EVENT", &printed[1]]),
        &event,
        &book,
        &audit,
        now + Duration::from_millis(1),
    )
    .await
    .unwrap() else {
        panic!("not revoked")
    };
    assert_eq!(revoked, 1);
    refused_with(
        &join(&api, &event, &customer(2), &codes[1]).await,
        StatusCode::FORBIDDEN,
        "code_invalid",
    );

    let CodesOutcome::Counted(counts) = access_codes::run(
        &action(&["list", "--event", "EVENT"]),
        &event,
        &book,
        &audit,
        now + Duration::from_millis(2),
    )
    .await
    .unwrap() else {
        panic!("not counted")
    };
    assert_eq!(
        (
            counts.codes,
            counts.revoked,
            counts.accounts_bound,
            counts.uses_left
        ),
        (3, 1, 1, 3)
    );
    let CodesOutcome::Revoked(rest) = access_codes::run(
        &action(&["revoke", "--event", "EVENT", "--all"]),
        &event,
        &book,
        &audit,
        now + Duration::from_millis(3),
    )
    .await
    .unwrap() else {
        panic!("not revoked")
    };
    assert_eq!(rest, 2, "the two not revoked before");
    refused_with(
        &join(&api, &event, &customer(3), &codes[2]).await,
        StatusCode::FORBIDDEN,
        "code_invalid",
    );

    // The audit trail says who made and revoked codes, and never shows one.
    let history = records.history(&event).await.unwrap();
    let actions: Vec<&str> = history.iter().map(|entry| entry.action.as_str()).collect();
    assert_eq!(actions, ["codes-create", "codes-revoke", "codes-revoke"]);
    let trail: Value = json!(history
        .iter()
        .map(|entry| entry.detail.clone())
        .collect::<Vec<_>>());
    for code in &printed {
        let bare = code.replace('-', "");
        assert!(!trail.to_string().contains(&bare) && !trail.to_string().contains(code.as_str()));
    }
}
