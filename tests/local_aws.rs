//! `lineup local-aws` against the emulator: what it makes is what `template.yaml` declares (the
//! tables' keys, index, streams and TTL; the queues' attributes and redrive; the secrets' names
//! and development values), a second run changes nothing, something that exists but differs is
//! refused before anything is made, and `--teardown` removes it all. Each test names its
//! resources uniquely through its own env.json (`--env-vars`), so it runs beside the others.

use std::collections::BTreeMap;
use std::path::PathBuf;

use aws_sdk_sqs::types::QueueAttributeName;
use lineup_cli::local_aws::plan::{Kind, ResourcePlan};
use lineup_cli::local_aws::{
    self, queues, secrets, tables, LocalAwsArgs, LocalAwsError, Outcome, Report,
};
use lineup_tests::aws::{dynamo, endpoint_url, settings, sqs, unique};

/// An env.json like `events/env.json` with every name made unique, written to a file, and the
/// command's arguments for it.
fn own_env_json() -> (LocalAwsArgs, ScratchDir) {
    let mut env: serde_json::Value = serde_json::from_str(local_aws::plan::ENV_JSON).unwrap();
    let parameters = &mut env["Parameters"];
    for variable in [
        "SEATS_TABLE",
        "ORDERS_TABLE",
        "OUTBOX_TABLE",
        "EVENTS_TABLE",
        "LINEUP_SIGNING_KEY_SECRET_ARN",
        "LINEUP_WEBHOOK_SECRET_ARN",
        "LINEUP_STRIPE_WEBHOOK_SECRET_ARN",
        "LINEUP_STRIPE_API_KEY_ARN",
    ] {
        parameters[variable] = unique(&variable.to_lowercase().replace('_', "-")).into();
    }
    for (variable, stem) in [
        ("TICKET_QUEUE_URL", "tickets"),
        ("REFUND_QUEUE_URL", "refunds"),
    ] {
        parameters[variable] = format!(
            "http://host.docker.internal:4566/000000000000/{}.fifo",
            unique(stem)
        )
        .into();
    }
    let dir = ScratchDir(std::env::temp_dir().join(unique("lineup-local-aws")));
    std::fs::create_dir_all(&dir.0).unwrap();
    let path: PathBuf = dir.0.join("env.json");
    std::fs::write(&path, env.to_string()).unwrap();
    let args = LocalAwsArgs {
        endpoint_url: endpoint_url(),
        region: "us-east-1".into(),
        env_vars: Some(path),
        redis_url: None,
        teardown: false,
        confirm: None,
    };
    (args, dir)
}

/// A directory removed when the test ends.
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn set_up(plan: &ResourcePlan) -> Result<Report, LocalAwsError> {
    local_aws::setup(&settings(), plan).await
}

fn names(plan: &ResourcePlan, kind: Kind) -> Vec<(String, String)> {
    plan.resources
        .iter()
        .filter(|resource| resource.kind == kind)
        .map(|resource| (resource.logical_id.clone(), resource.name.clone()))
        .collect()
}

/// Everything the emulator says about the plan's resources, creation times and versions
/// included: equal before and after a run that changed nothing.
async fn snapshot(plan: &ResourcePlan) -> Vec<String> {
    let dynamo = dynamo().await;
    let sqs = sqs().await;
    let secrets_manager = lineup::adapters::aws::secretsmanager(&settings());
    let mut seen = Vec::new();
    for (_, name) in names(plan, Kind::Table) {
        let table = dynamo
            .describe_table()
            .table_name(&name)
            .send()
            .await
            .unwrap()
            .table
            .unwrap();
        let ttl = dynamo
            .describe_time_to_live()
            .table_name(&name)
            .send()
            .await
            .unwrap();
        seen.push(format!(
            "{name}: created {:?}, stream {:?}, {:?} / {:?}",
            table.creation_date_time(),
            table.latest_stream_arn(),
            table.global_secondary_indexes(),
            ttl.time_to_live_description()
        ));
    }
    for (_, name) in names(plan, Kind::Queue) {
        let found = queues::find(&sqs, &name).await.unwrap().unwrap();
        seen.push(format!("{name}: {:?}", found.attributes));
    }
    for (_, name) in names(plan, Kind::Secret) {
        let secret = secrets_manager
            .describe_secret()
            .secret_id(&name)
            .send()
            .await
            .unwrap();
        seen.push(format!(
            "{name}: {:?} changed {:?}",
            secret.version_ids_to_stages(),
            secret.last_changed_date()
        ));
    }
    seen
}

#[tokio::test]
async fn setup_makes_what_the_template_declares_and_a_second_run_changes_nothing() {
    let (args, _dir) = own_env_json();
    let plan = local_aws::plan_for(&args).unwrap();
    let report = set_up(&plan).await.expect("setup");
    assert_eq!(report.changed(), 12, "{report}");
    assert!(report
        .lines
        .iter()
        .all(|line| line.outcome == Outcome::Created));
    assert_eq!(
        report.skipped.len(),
        9,
        "the origin secret and the eight functions' Redis passwords, left out by env.json"
    );

    // The tables: keys, index, stream, TTL, read back, against the template.
    let dynamo = dynamo().await;
    for (logical_id, name) in names(&plan, Kind::Table) {
        let found = tables::describe(&dynamo, &logical_id, &name)
            .await
            .unwrap()
            .expect("the table exists");
        let declared = tables::shape(tables::TEMPLATE, &logical_id).unwrap();
        assert_eq!(
            found.clone().normalised(),
            declared.clone().normalised(),
            "{logical_id}"
        );
        assert!(found.differences(&declared).is_empty());
    }
    let orders = tables::describe(&dynamo, "OrdersTable", plan.name_of("OrdersTable").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        orders.global_secondary_indexes[0].index_name,
        "pending_by_expiry"
    );
    assert_eq!(
        orders.time_to_live_specification.unwrap().attribute_name,
        "ttl"
    );

    // The queues: every attribute the template sets, and the redrive to the dead-letter queue.
    let sqs = sqs().await;
    let ticket_queue = plan.name_of("TicketQueue").unwrap();
    let dead_letter = plan.name_of("TicketDeadLetterQueue").unwrap();
    assert_eq!(
        dead_letter,
        queues::dead_letter_name(ticket_queue),
        "named after its queue"
    );
    let found = queues::find(&sqs, ticket_queue).await.unwrap().unwrap();
    let dead_letter = queues::find(&sqs, dead_letter).await.unwrap().unwrap();
    for (logical_id, queue) in [
        ("TicketQueue", &found),
        ("TicketDeadLetterQueue", &dead_letter),
    ] {
        for (attribute, value) in queues::declared(tables::TEMPLATE, logical_id)
            .unwrap()
            .attributes
        {
            assert_eq!(
                queue.attributes.get(&attribute),
                Some(&value),
                "{logical_id}.{attribute}"
            );
        }
    }
    assert_eq!(found.attributes["FifoQueue"], "true");
    assert_eq!(found.attributes["DeduplicationScope"], "messageGroup");
    let redrive: serde_json::Value =
        serde_json::from_str(&found.attributes["RedrivePolicy"]).unwrap();
    assert_eq!(
        redrive["deadLetterTargetArn"],
        dead_letter.attributes["QueueArn"]
    );
    assert_eq!(redrive["maxReceiveCount"], 5);
    assert_eq!(report.queue_urls["TicketQueue"], found.url);
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(&found.url)
        .attribute_names(QueueAttributeName::FifoQueue)
        .send()
        .await
        .unwrap();
    assert!(attributes.attributes.is_some(), "the URL reported answers");

    // The secrets, under env.json's names, with the development values.
    let secrets_manager = lineup::adapters::aws::secretsmanager(&settings());
    for (logical_id, name) in names(&plan, Kind::Secret) {
        assert_eq!(
            secrets::current(&secrets_manager, &name)
                .await
                .unwrap()
                .as_deref(),
            secrets::development_value(&logical_id),
            "{logical_id}"
        );
    }

    // Again: nothing made, nothing changed.
    let before = snapshot(&plan).await;
    let again = set_up(&plan).await.expect("second setup");
    assert_eq!(again.changed(), 0, "{again}");
    assert!(again
        .lines
        .iter()
        .all(|line| line.outcome == Outcome::Exists));
    assert_eq!(
        snapshot(&plan).await,
        before,
        "a second run changed something"
    );
    assert_eq!(again.queue_urls, report.queue_urls);

    local_aws::teardown(&settings(), &plan).await.unwrap();
}

#[tokio::test]
async fn something_that_differs_from_the_template_is_refused_before_anything_is_made() {
    let (args, _dir) = own_env_json();
    let plan = local_aws::plan_for(&args).unwrap();
    set_up(&plan).await.expect("setup");
    let dynamo = dynamo().await;
    let sqs = sqs().await;
    // An orders table gone, and the ticket queue made again by hand without its redrive.
    let orders = plan.name_of("OrdersTable").unwrap();
    assert!(tables::delete(&dynamo, "OrdersTable", orders)
        .await
        .unwrap());
    let ticket_queue = plan.name_of("TicketQueue").unwrap();
    assert!(queues::delete(&sqs, ticket_queue).await.unwrap());
    sqs.create_queue()
        .queue_name(ticket_queue)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .unwrap();
    // And a seats table of another shape (no stream).
    let seats = plan.name_of("SeatsTable").unwrap();
    tables::delete(&dynamo, "SeatsTable", seats).await.unwrap();
    tables::create(&dynamo, "EventsTable", seats).await.unwrap();

    let refused = set_up(&plan).await;
    let Err(LocalAwsError::Differs(differences)) = &refused else {
        panic!("expected the differences, got {refused:?}");
    };
    let said = differences.join("\n");
    assert!(said.contains(&format!("queue {ticket_queue}")), "{said}");
    assert!(said.contains("redrive"), "{said}");
    assert!(said.contains("DeduplicationScope"), "{said}");
    assert!(said.contains(&format!("table {seats}")), "{said}");
    assert!(
        said.contains("stream none where the template has NEW_IMAGE"),
        "{said}"
    );
    assert!(
        tables::describe(&dynamo, "OrdersTable", orders)
            .await
            .unwrap()
            .is_none(),
        "nothing is made when something differs"
    );

    // Teardown removes what is there, whatever its shape; then setup makes it all again.
    let removed = local_aws::teardown(&settings(), &plan).await.unwrap();
    assert_eq!(
        removed
            .lines
            .iter()
            .filter(|line| line.outcome == Outcome::Absent)
            .map(|line| line.name.as_str())
            .collect::<Vec<_>>(),
        [orders],
        "{removed}"
    );
    let made = set_up(&plan).await.expect("setup after teardown");
    assert_eq!(made.changed(), 12, "{made}");
    local_aws::teardown(&settings(), &plan).await.unwrap();
}

#[tokio::test]
async fn teardown_removes_everything_setup_made_and_a_secret_set_by_hand_is_kept() {
    let (args, _dir) = own_env_json();
    let plan = local_aws::plan_for(&args).unwrap();
    // A developer's own webhook secret, there before setup: kept, and said so.
    let secrets_manager = lineup::adapters::aws::secretsmanager(&settings());
    let webhook = plan.name_of("WebhookSecret").unwrap();
    secrets::create(
        &secrets_manager,
        webhook,
        "whsec-my-own-value-for-this-laptop-00",
    )
    .await
    .unwrap();
    let report = set_up(&plan).await.unwrap();
    let line = report
        .lines
        .iter()
        .find(|line| line.name == webhook)
        .unwrap();
    assert_eq!(line.outcome, Outcome::ExistsWithOtherValue);
    assert_eq!(
        secrets::current(&secrets_manager, webhook)
            .await
            .unwrap()
            .as_deref(),
        Some("whsec-my-own-value-for-this-laptop-00")
    );
    assert!(
        report.to_string().contains("another value: kept"),
        "{report}"
    );

    let removed = local_aws::teardown(&settings(), &plan).await.unwrap();
    assert!(removed
        .lines
        .iter()
        .all(|line| line.outcome == Outcome::Removed));
    assert_eq!(removed.changed(), 12);
    let dynamo = dynamo().await;
    let sqs = sqs().await;
    for resource in &plan.resources {
        let gone = match resource.kind {
            Kind::Table => tables::describe(&dynamo, &resource.logical_id, &resource.name)
                .await
                .unwrap()
                .is_none(),
            Kind::Queue => queues::find(&sqs, &resource.name).await.unwrap().is_none(),
            Kind::Secret => secrets::current(&secrets_manager, &resource.name)
                .await
                .unwrap()
                .is_none(),
        };
        assert!(gone, "{} is still there", resource.name);
    }
    let again = local_aws::teardown(&settings(), &plan).await.unwrap();
    assert!(again
        .lines
        .iter()
        .all(|line| line.outcome == Outcome::Absent));
}

#[tokio::test]
async fn aws_itself_is_refused() {
    for endpoint in [
        "https://dynamodb.us-east-1.amazonaws.com",
        "https://sqs.eu-west-1.amazonaws.com/",
        "https://dynamodb.cn-north-1.amazonaws.com.cn",
    ] {
        assert!(matches!(
            local_aws::emulator(endpoint, "us-east-1"),
            Err(LocalAwsError::RealAws(_))
        ));
    }
    assert!(local_aws::emulator("http://localhost:4566", "us-east-1").is_ok());
}

#[tokio::test]
async fn the_samples_event_is_seeded_once_and_kept_after() {
    let (args, _dir) = own_env_json();
    let plan = local_aws::plan_for(&args).unwrap();
    set_up(&plan).await.unwrap();
    // A Redis of its own: other tests use the samples' event id on the shared one.
    let server = lineup_tests::redis_server::RedisServer::start();
    let queue = lineup::adapters::redis::queue::RedisQueue::new(
        &server.url(),
        std::time::Duration::from_secs(2),
    )
    .unwrap();
    let opened = local_aws::samples::open_samples_event(&settings(), &plan, &queue)
        .await
        .unwrap();
    let settings_opened = opened.expect("a new event is seeded and opened");
    assert_eq!(
        settings_opened.state,
        lineup::domain::event_settings::QueueState::Open
    );
    let dynamo = dynamo().await;
    let seats = dynamo
        .scan()
        .table_name(plan.name_of("SeatsTable").unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(seats.count(), 100, "A-001 to A-100");
    let again = local_aws::samples::open_samples_event(&settings(), &plan, &queue)
        .await
        .unwrap();
    assert!(again.is_none(), "an event already there is kept");
    let unchanged: BTreeMap<_, _> = dynamo
        .scan()
        .table_name(plan.name_of("SeatsTable").unwrap())
        .send()
        .await
        .unwrap()
        .items()
        .iter()
        .map(|item| (format!("{:?}", item.get("pk")), format!("{item:?}")))
        .collect();
    assert_eq!(unchanged.len(), 100);
    local_aws::teardown(&settings(), &plan).await.unwrap();
}
