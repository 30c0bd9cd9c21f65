//! `lineup … --aws` signs in the way operators do: from a profile of the AWS config files
//! (static keys, `credential_process`, SSO), with `--profile` and `--region`. Checked with the
//! built binary against the local stack: the profiles' `endpoint_url` points at the moto server
//! the test command starts, so the same chain that would reach AWS reaches it, and the child
//! process gets no AWS variable from this one (no keys, no endpoint): whatever it reads, it read
//! through the profile. Needs REDIS_URL and AWS_ENDPOINT_URL (scripts/test.sh sets both).

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, SystemTime};

use lineup::adapters::aws::AwsSettings;
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::{DynamoLedger, TableNames};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::domain::ids::{EventId, SeatId};
use lineup::domain::seat::NewSeat;
use lineup_cli::event_admin::{self, SettingsChange};
use lineup_cli::local_aws::tables as local_tables;

fn required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: this test needs the local Redis and moto server. Run the README's \
             test command (scripts/test.sh), which starts them."
        )
    })
}

/// An event with five seats in tables of its own, open in Redis.
struct Stage {
    event: EventId,
    tables: TableNames,
    events_table: String,
    redis_url: String,
    endpoint_url: String,
    dir: PathBuf,
}

impl Stage {
    async fn new() -> Self {
        let (redis_url, endpoint_url) = (required("REDIS_URL"), required("AWS_ENDPOINT_URL"));
        let id = uuid::Uuid::new_v4().simple().to_string();
        let event = EventId::parse(&format!("cli-profile-{}", &id[..12])).unwrap();
        let tables = TableNames {
            seats: format!("cli-profile-{id}-seats"),
            orders: format!("cli-profile-{id}-orders"),
            outbox: format!("cli-profile-{id}-outbox"),
        };
        let dynamodb = lineup::adapters::aws::dynamodb(&AwsSettings::local(&endpoint_url));
        local_tables::create_ledger_tables(&dynamodb, &tables)
            .await
            .expect("tables");
        let events_table = format!("cli-profile-{id}-events");
        local_tables::create(&dynamodb, local_tables::EVENTS, &events_table)
            .await
            .expect("events table");
        let records = DynamoEventRecords::new(dynamodb.clone(), events_table.clone());
        let ledger = DynamoLedger::new(dynamodb, tables.clone());
        let seats: Vec<NewSeat> = (1..=5)
            .map(|n| NewSeat {
                seat_id: SeatId::parse(&format!("A-{n:03}")).unwrap(),
                section: "Floor".to_owned(),
                row: "A".to_owned(),
                price: 5000,
                currency: "EUR".to_owned(),
            })
            .collect();
        let now = SystemTime::now();
        let queue = RedisQueue::new(&redis_url, Duration::from_secs(2)).expect("redis");
        let layout = lineup::domain::layout::SeatLayout::from_seats(&seats).expect("layout");
        event_admin::seed(&ledger, &records, &queue, &event, &layout, now)
            .await
            .expect("seed");
        let admin = event_admin::EventAdmin::new(&queue, &records, "a test");
        admin
            .open(&event, &SettingsChange::default(), now)
            .await
            .expect("open");

        let dir = std::env::temp_dir().join(format!("lineup-aws-profile-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            event,
            tables,
            events_table,
            redis_url,
            endpoint_url,
            dir,
        }
    }

    /// Writes the two AWS files: a profile with keys, one whose keys come from a process (which
    /// leaves a mark when run), one without a region and one without credentials.
    fn write_profiles(&self) {
        let endpoint = &self.endpoint_url;
        let marker = self.marker();
        let config = format!(
            "[profile ops]\n\
             region = us-east-1\n\
             endpoint_url = {endpoint}\n\
             \n\
             [profile ops-process]\n\
             region = us-east-1\n\
             endpoint_url = {endpoint}\n\
             credential_process = sh -c \"echo ran >> '{marker}'; echo '{{\\\"Version\\\": 1, \\\"AccessKeyId\\\": \\\"AKIDPROCESS\\\", \\\"SecretAccessKey\\\": \\\"process-secret\\\"}}'\"\n\
             \n\
             [profile ops-no-region]\n\
             endpoint_url = {endpoint}\n\
             \n\
             [profile ops-no-credentials]\n\
             region = us-east-1\n\
             endpoint_url = {endpoint}\n",
            marker = marker.display()
        );
        let credentials = "[ops]\n\
             aws_access_key_id = AKIDPROFILE\n\
             aws_secret_access_key = profile-secret\n\
             \n\
             [ops-no-region]\n\
             aws_access_key_id = AKIDPROFILE\n\
             aws_secret_access_key = profile-secret\n";
        std::fs::write(self.dir.join("config"), config).unwrap();
        std::fs::write(self.dir.join("credentials"), credentials).unwrap();
    }

    fn marker(&self) -> PathBuf {
        self.dir.join("credential-process-ran")
    }

    /// `lineup event show <event> --aws <extra…>`, with only the AWS files this test wrote (no
    /// AWS_* variable from this process, no instance metadata, a HOME of its own).
    async fn show(&self, extra: &[&str]) -> Output {
        self.show_with_env(extra, &[]).await
    }

    /// The same, with these variables set on top.
    async fn show_with_env(&self, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_lineup"));
        command
            .args(["event", "show", self.event.as_str(), "--aws"])
            .args(extra)
            .args(["--redis-url", &self.redis_url])
            .args(["--seats-table", &self.tables.seats])
            .args(["--orders-table", &self.tables.orders])
            .args(["--outbox-table", &self.tables.outbox])
            .args(["--events-table", &self.events_table]);
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("AWS_")
                || ["REDIS_URL", "SEATS_TABLE", "ORDERS_TABLE", "OUTBOX_TABLE"]
                    .contains(&name.as_ref())
            {
                command.env_remove(name.as_ref());
            }
        }
        command
            .env("AWS_CONFIG_FILE", self.dir.join("config"))
            .env("AWS_SHARED_CREDENTIALS_FILE", self.dir.join("credentials"))
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("HOME", &self.dir)
            .envs(env.iter().copied())
            .kill_on_drop(true);
        tokio::time::timeout(Duration::from_secs(60), command.output())
            .await
            .expect("lineup answered within a minute")
            .expect("lineup ran")
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_read_the_stack(stage: &Stage, output: &Output) {
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("event {}: open", stage.event)),
        "the settings, from Redis: {stdout}"
    );
    assert!(
        stdout.contains("seats: 5 (5 available, 0 held, 0 sold)"),
        "the seats, from DynamoDB through the profile: {stdout}\n{stderr}"
    );
}

fn assert_refused(output: &Output, expected: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in: {stderr}"
    );
    assert_eq!(
        text(&output.stdout),
        "",
        "printed something before refusing"
    );
}

#[tokio::test]
async fn event_show_signs_in_with_a_named_profile_and_refuses_clearly_without_one() {
    let stage = Stage::new().await;
    stage.write_profiles();

    // Static keys in the credentials file; region and endpoint in the config file.
    assert_read_the_stack(&stage, &stage.show(&["--profile", "ops"]).await);

    // Keys from a credential_process: it must have been run.
    assert!(!stage.marker().exists());
    assert_read_the_stack(&stage, &stage.show(&["--profile", "ops-process"]).await);
    assert!(
        stage.marker().exists(),
        "the profile's credential_process was not run"
    );

    // A profile without a region: refused, unless --region gives one.
    let no_region = stage.show(&["--profile", "ops-no-region"]).await;
    assert_refused(&no_region, "no AWS region: pass --region");
    assert_read_the_stack(
        &stage,
        &stage
            .show(&["--profile", "ops-no-region", "--region", "us-east-1"])
            .await,
    );

    // No profile named and nothing else in the chain (no keys in the environment, no
    // `default` profile, no instance metadata): refused before anything is read.
    assert_refused(
        &stage.show(&[]).await,
        "no AWS credentials: none in the environment",
    );
    // A profile without credentials, or one that does not exist: refused, naming it.
    assert_refused(
        &stage.show(&["--profile", "ops-no-credentials"]).await,
        "profile `ops-no-credentials` gave no AWS credentials",
    );
    let missing = stage.show(&["--profile", "nobody"]).await;
    assert_refused(&missing, "profile `nobody` was not defined");
}

#[tokio::test]
async fn a_named_profile_wins_over_keys_in_the_environment() {
    // As with the AWS CLI: naming a profile means acting as it. Keys in the environment (which
    // moto would accept just as well) must not be used instead: the profile's process must run.
    let stage = Stage::new().await;
    stage.write_profiles();
    let output = stage
        .show_with_env(
            &["--profile", "ops-process"],
            &[
                ("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT"),
                ("AWS_SECRET_ACCESS_KEY", "environment-secret"),
            ],
        )
        .await;
    assert_read_the_stack(&stage, &output);
    assert!(
        stage.marker().exists(),
        "the environment's keys were used instead of the profile's"
    );
}
