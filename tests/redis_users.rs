//! Each function signs in to Redis as its own user, allowed only what it does
//! (docs/decisions/0026-redis-user-per-function.md). The access strings are read from
//! `template.yaml` itself, so the template and this test cannot drift: every user is created
//! with `ACL SETUSER` on a private redis-server, each function's real adapter operations run as
//! its user and succeed, and what it has no business doing is refused (NOPERM): `status` and
//! `availability` cannot read the unrevealed draw seed, flush, configure or list the cache, or
//! write the queue. The template's wiring is checked too: every function that reaches Redis names
//! its user and that user's password secret, may read that secret and no other function's, and
//! its user is in the cache's user group beside a default user that is off.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lineup::adapters::redis::connection::{
    RedisConnection, RedisCredentials, RedisPassword, RedisSettings, RedisUser,
};
use lineup::adapters::redis::keys::{EventKeys, OPEN_EVENTS};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::adapters::secret_source::KeySource;
use lineup::adapters::secrets_manager::SecretRef;
use lineup::application::ports::availability::{AvailabilityBoard, Projection, SeatChange};
use lineup::application::ports::event_records::EventRecord;
use lineup::application::ports::ledger::TicketLimits;
use lineup::application::ports::queue::{
    AdmissionRegistry, Admitter, EventSettingsStore, NumberRanges, PlaceRestorer, RestoredPlace,
    Standing, StatusBoard, WaitingLine,
};
use lineup::application::{hold, join, poll};
use lineup::domain::clock::{Clock, FixedClock};
use lineup::domain::draw::DrawSeed;
use lineup::domain::event_settings::{ClosedReason, EventSettings};
use lineup::domain::ids::EventId;
use lineup::domain::keys::SecretKey;
use lineup::domain::seat::SeatStatus;
use lineup::wiring::backends::Queue;
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::redis_server::{RedisCluster, RedisServer};
use lineup_tests::*;
use serde_yaml::Value;

/// The template the stack is deployed from.
const TEMPLATE: &str = include_str!("../template.yaml");

/// Where the Lua scripts are: a function may run only scripts whose every command it is granted.
const SCRIPTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/src/adapters/redis/scripts"
);

/// The scripts each function runs (through `shared/src/adapters/redis/queue.rs` and
/// `availability.rs`, from the ports its handler uses).
const SCRIPTS_RUN: [(&str, &[&str]); 8] = [
    ("JoinFunction", &["join", "extend_numbers", "restore_event"]),
    (
        "PollFunction",
        &[
            "standing",
            "leave",
            "restore_event",
            "restore_context",
            "restore_place",
        ],
    ),
    (
        "AdmitFunction",
        &[
            "admit_tick",
            "publish_status",
            "restore_event",
            "draw_numbers",
            "mark_drawn",
            "extend_numbers",
            "read_availability",
            "set_layout",
            "install",
        ],
    ),
    ("HoldFunction", &["is_admitted", "read_availability"]),
    ("ConfirmFunction", &["end_admission"]),
    (
        "ExpireFunction",
        &[
            "seat_counts",
            "set_seats_left",
            "close",
            "admit_tick",
            "publish_status",
        ],
    ),
    ("StatusFunction", &["read_availability"]),
    ("AvailabilityFunction", &["apply_changes"]),
];

/// A function's Redis user, as `template.yaml` declares it.
#[derive(Debug, Clone)]
struct DeclaredUser {
    /// `REDIS_USER` in the function's environment: the user's `UserName`.
    name: String,
    /// The user's `AccessString`.
    access: String,
}

impl DeclaredUser {
    /// The access string's rules, one `ACL SETUSER` argument each.
    fn rules(&self) -> Vec<&str> {
        self.access.split_whitespace().collect()
    }

    /// Whether the access string grants `command` by name (`+command`).
    fn grants(&self, command: &str) -> bool {
        self.rules()
            .contains(&format!("+{}", command.to_ascii_lowercase()).as_str())
    }
}

fn template() -> Value {
    serde_yaml::from_str(TEMPLATE).expect("template.yaml is YAML")
}

fn resources(template: &Value) -> &serde_yaml::Mapping {
    template["Resources"].as_mapping().expect("Resources")
}

/// The logical id a `!Ref` names, if `value` is one.
fn referenced(value: &Value) -> Option<&str> {
    match value {
        Value::Tagged(tagged) if tagged.tag == "Ref" => tagged.value.as_str(),
        _ => None,
    }
}

/// Every function whose environment names a Redis (`REDIS_URL`), by logical id, with its
/// declared user; panics on a function that reaches Redis without a user of its own.
fn declared_users() -> BTreeMap<String, DeclaredUser> {
    let template = template();
    let resources = resources(&template);
    let users_by_name: BTreeMap<&str, &Value> = resources
        .values()
        .filter(|resource| resource["Type"] == "AWS::ElastiCache::User")
        .map(|user| (user["Properties"]["UserName"].as_str().unwrap(), user))
        .collect();
    let mut declared = BTreeMap::new();
    for (logical_id, resource) in resources {
        let variables = &resource["Properties"]["Environment"]["Variables"];
        if resource["Type"] != "AWS::Serverless::Function" || variables.get("REDIS_URL").is_none() {
            continue;
        }
        let logical_id = logical_id.as_str().unwrap();
        let name = variables["REDIS_USER"]
            .as_str()
            .unwrap_or_else(|| panic!("{logical_id} reaches Redis without a REDIS_USER"));
        let user = users_by_name
            .get(name)
            .unwrap_or_else(|| panic!("{logical_id}'s REDIS_USER {name} is no ElastiCache user"));
        let access = user["Properties"]["AccessString"].as_str().unwrap();
        declared.insert(
            logical_id.to_owned(),
            DeclaredUser {
                name: name.to_owned(),
                access: access.to_owned(),
            },
        );
    }
    declared
}

/// The test password of `user` (the real ones are generated in Secrets Manager).
fn password(user: &str) -> String {
    format!("test-password-of-{user}")
}

/// Whether `result` is Redis refusing for want of permission: `NOPERM` for a command or a key
/// of the call itself, or the script error Redis gives when a script's own call is refused.
fn refused<T>(result: &redis::RedisResult<T>) -> bool {
    match result {
        Ok(_) => false,
        Err(error) => {
            error.code() == Some("NOPERM")
                || error
                    .to_string()
                    .contains("The user executing the script can't")
        }
    }
}

/// Runs `command` on `connection` and checks Redis refused it.
async fn assert_refused(function: &str, connection: &mut RedisConnection, command: &redis::Cmd) {
    let result: redis::RedisResult<redis::Value> = command.query_async(connection).await;
    assert!(
        refused(&result),
        "{function} may run {:?}: {result:?}",
        command
            .args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<cursor>".to_owned(),
            })
            .collect::<Vec<_>>()
    );
}

/// What no function does: flush, configure, list or scan the cache, manage users, or run a
/// script of its own.
fn what_no_function_does() -> Vec<redis::Cmd> {
    vec![
        redis::cmd("FLUSHALL"),
        redis::cmd("FLUSHDB"),
        redis::cmd("CONFIG").arg("GET").arg("*").clone(),
        redis::cmd("KEYS").arg("*").clone(),
        redis::cmd("SCAN").arg(0).arg("MATCH").arg("*").clone(),
        redis::cmd("ACL").arg("LIST").clone(),
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("intruder")
            .arg("on")
            .arg("+@all")
            .clone(),
        redis::cmd("EVAL").arg("return 1").arg(0).clone(),
    ]
}

/// Creates `users` on the Redis at `url` with `ACL SETUSER`, each with its test password and the
/// rules of its access string. A user made this way starts with nothing (no key, no command), as
/// on ElastiCache, and each rule of the template's string is applied in order.
async fn create_users(url: &str, users: &BTreeMap<String, DeclaredUser>) {
    let mut connection = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for user in users.values() {
        let mut setuser = redis::cmd("ACL");
        setuser
            .arg("SETUSER")
            .arg(&user.name)
            .arg(format!(">{}", password(&user.name)));
        for rule in user.rules() {
            setuser.arg(rule);
        }
        let () = setuser
            .query_async(&mut connection)
            .await
            .unwrap_or_else(|error| panic!("ACL SETUSER {}: {error}", user.name));
    }
}

/// `user` signed in as its function does at cold start (here from a literal password instead
/// of Secrets Manager).
async fn sign_in(user: &DeclaredUser) -> RedisCredentials {
    let password = RedisPassword::from_secret(password(&user.name).into_bytes()).unwrap();
    RedisUser {
        name: user.name.clone(),
        password: KeySource::Literal(password),
    }
    .sign_in()
    .await
    .expect("a literal password needs no fetch")
}

/// A private redis-server (the ACLs of the shared one are left alone) with every function's
/// user created from the template, and the setup's own connection as the default user.
struct UsersRedis {
    server: RedisServer,
    users: BTreeMap<String, DeclaredUser>,
    /// The operator's side: configuring events, seeding seats, inspecting.
    admin: Arc<RedisQueue>,
}

impl UsersRedis {
    async fn start() -> Self {
        let server = RedisServer::start();
        let users = declared_users();
        create_users(&server.url(), &users).await;
        let admin = Arc::new(RedisQueue::new(&server.url(), Duration::from_secs(2)).unwrap());
        Self {
            server,
            users,
            admin,
        }
    }

    fn settings(&self) -> RedisSettings {
        RedisSettings {
            url: self.server.url(),
            timeout: Duration::from_secs(2),
            cluster: false,
        }
    }

    async fn credentials(&self, function: &str) -> RedisCredentials {
        sign_in(&self.users[function]).await
    }

    /// The queue adapter as `function` opens it.
    async fn queue_as(&self, function: &str) -> Arc<RedisQueue> {
        let credentials = self.credentials(function).await;
        Arc::new(RedisQueue::open_as(&self.settings(), Some(&credentials)).unwrap())
    }

    /// A bare connection as the default user, as the operator's commands connect locally.
    async fn admin_connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// A bare connection as `function`'s user, for commands no adapter sends.
    async fn connection_as(&self, function: &str) -> RedisConnection {
        let credentials = self.credentials(function).await;
        RedisConnection::open(&self.settings(), Some(&credentials)).unwrap()
    }
}

/// What `status` or `availability` reaching for the seed or past its own keys tries: each is
/// refused.
async fn assert_confined(redis: &UsersRedis, function: &str, event: &EventId) {
    let keys = EventKeys::new(event);
    let mut connection = redis.connection_as(function).await;
    let mut reaching = what_no_function_does();
    reaching.extend([
        redis::cmd("HGET")
            .arg(&keys.settings)
            .arg("draw_seed")
            .clone(),
        redis::cmd("HGETALL").arg(&keys.settings).clone(),
        redis::cmd("ZADD")
            .arg(&keys.queue)
            .arg(1)
            .arg("customer-99999")
            .clone(),
        redis::cmd("SMEMBERS").arg(OPEN_EVENTS).clone(),
        // A script of its own is refused outright, and so are the seed's key as a script's key...
        redis::cmd("EVAL")
            .arg("return redis.call('HGET', KEYS[1], 'draw_seed')")
            .arg(1)
            .arg(&keys.settings)
            .clone(),
    ]);
    for command in &reaching {
        assert_refused(function, &mut connection, command).await;
    }
    // ...and, through SCRIPT LOAD (granted: EVALSHA loads the adapter's scripts after a
    // restart), a script given an allowed key that reaches for the seed as it runs.
    let reach_the_seed = redis::Script::new(&format!(
        "return redis.call('HGET', '{}', 'draw_seed')",
        keys.settings
    ));
    let result: redis::RedisResult<Option<String>> = reach_the_seed
        .key(&keys.layout)
        .invoke_async(&mut connection)
        .await;
    assert!(
        refused(&result),
        "{function} read the seed from a script: {result:?}"
    );
}

#[test]
fn every_function_on_redis_signs_in_as_its_own_user_of_the_caches_group() {
    let template = template();
    let resources = resources(&template);
    let users = declared_users();
    let functions: BTreeSet<&str> = users.keys().map(String::as_str).collect();
    assert_eq!(
        functions,
        SCRIPTS_RUN.iter().map(|(function, _)| *function).collect(),
        "the functions that reach Redis"
    );
    let names: BTreeSet<&str> = users.values().map(|user| user.name.as_str()).collect();
    assert_eq!(names.len(), users.len(), "one user per function");

    // The cache admits its group's users only; the group's default user can do nothing.
    let cache = &resources["QueueCache"]["Properties"];
    let group_id = referenced(&cache["UserGroupId"]).expect("the cache names its user group");
    let group = &resources[group_id]["Properties"];
    assert_eq!(
        group["Engine"], cache["Engine"],
        "the group's engine is the cache's"
    );
    let members: BTreeSet<&str> = group["UserIds"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|id| referenced(id).expect("a !Ref to a user"))
        .collect();
    let default_users: Vec<&str> = members
        .iter()
        .copied()
        .filter(|id| resources[*id]["Properties"]["UserName"] == "default")
        .collect();
    let [default_user] = default_users.as_slice() else {
        panic!("the group needs exactly one user named default: {default_users:?}");
    };
    let default_access = resources[*default_user]["Properties"]["AccessString"]
        .as_str()
        .unwrap();
    assert!(
        default_access.split_whitespace().any(|rule| rule == "off")
            && !default_access.split_whitespace().any(|rule| rule == "on"),
        "the default user is off: {default_access}"
    );

    for (function, user) in &users {
        let (logical_id, declared) = resources
            .iter()
            .find(|(_, resource)| resource["Properties"]["UserName"] == user.name.as_str())
            .unwrap();
        let logical_id = logical_id.as_str().unwrap();
        assert!(members.contains(logical_id), "{logical_id} is in the group");
        assert_eq!(declared["Properties"]["Engine"], cache["Engine"]);
        assert!(
            user.rules().first() == Some(&"on"),
            "{}: the user is on",
            user.name
        );
        assert!(
            user.rules().contains(&"-@all"),
            "{}: everything not granted is refused",
            user.name
        );
        assert!(
            !user
                .rules()
                .iter()
                .any(|rule| *rule == "~*" || rule.starts_with("+@") || rule.starts_with('&')),
            "{}: no key wildcard, no command category, no channel: {}",
            user.name,
            user.access
        );

        // Its password: a generated secret, resolved into the user by dynamic reference, handed
        // to the function by ARN, readable by that function alone.
        let variables = &resources[function.as_str()]["Properties"]["Environment"]["Variables"];
        let secret = referenced(&variables["LINEUP_REDIS_PASSWORD_SECRET_ARN"])
            .unwrap_or_else(|| panic!("{function} names its Redis password's secret by !Ref"));
        assert!(
            resources[secret]["Properties"]["GenerateSecretString"].is_mapping(),
            "{secret} is generated"
        );
        let passwords =
            serde_yaml::to_string(&declared["Properties"]["AuthenticationMode"]["Passwords"])
                .unwrap();
        assert!(
            passwords.contains(&format!(
                "{{{{resolve:secretsmanager:${{{secret}}}:SecretString}}}}"
            )),
            "{logical_id}'s password is {secret}'s: {passwords}"
        );
        for (other, resource) in resources {
            if resource["Type"] != "AWS::Serverless::Function" {
                continue;
            }
            let policies = serde_yaml::to_string(&resource["Properties"]["Policies"]).unwrap();
            let reads = policies.contains(&format!("!Ref {secret}"));
            assert_eq!(
                reads,
                other.as_str() == Some(function.as_str()),
                "{other:?} may read {secret}: {reads}"
            );
        }
    }
}

#[test]
fn every_command_of_every_script_a_function_runs_is_granted_to_its_user() {
    let users = declared_users();
    for (function, scripts) in SCRIPTS_RUN {
        let user = &users[function];
        for script in scripts {
            let path = format!("{SCRIPTS}/{script}.lua");
            let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let calls: BTreeSet<&str> = source
                .split("redis.call(")
                .skip(1)
                .map(|call| call.trim_start_matches(['\'', '"']))
                .map(|call| call.split(['\'', '"']).next().unwrap())
                .collect();
            assert!(!calls.is_empty(), "{script}.lua calls nothing?");
            for command in calls {
                assert!(
                    user.grants(command),
                    "{function} runs {script}.lua, which calls {command}, not granted to {}: {}",
                    user.name,
                    user.access
                );
            }
        }
        assert!(user.grants("EVALSHA") && user.grants("SCRIPT|LOAD"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_availability_do_their_reads_and_writes_and_cannot_reach_the_seed() {
    let redis = UsersRedis::start().await;
    let sale = OnSale::with_seats_on(4, redis.admin.clone()).await;
    let event = sale.event.clone();
    // The admitter publishes the status (as the admit user).
    Admission::new(redis.queue_as("AdmitFunction").await)
        .await
        .tick(&event, sale.clock.now())
        .await;

    // availability: the seats table's stream applied to the seat map.
    let board = redis
        .queue_as("AvailabilityFunction")
        .await
        .availability_board();
    let version = redis
        .admin
        .availability_board()
        .summary(&event)
        .await
        .unwrap()
        .expect("a seeded layout")
        .version;
    let held = SeatChange {
        event: event.clone(),
        version,
        index: 0,
        status: SeatStatus::Held,
    };
    board
        .apply(&[held])
        .await
        .expect("availability applies seat changes");

    // status, signed in as in AWS (its password read from Secrets Manager at cold start): the
    // published status, the seat map and its layout summary.
    let user = &redis.users["StatusFunction"];
    let secret = lineup::adapters::aws::secretsmanager(&aws::settings())
        .create_secret()
        .name(aws::unique("lineup-status-redis-password"))
        .secret_string(password(&user.name))
        .send()
        .await
        .expect("create the secret in moto")
        .arn
        .expect("moto returns the ARN");
    let signed_in = RedisUser {
        name: user.name.clone(),
        password: KeySource::SecretsManager(SecretRef {
            secret_id: secret,
            aws: aws::settings(),
        }),
    }
    .sign_in()
    .await
    .expect("the password is fetched");
    let status = RedisQueue::open_as(&redis.settings(), Some(&signed_in)).unwrap();
    let published = status.status_json(&event).await.unwrap();
    assert!(published.is_some_and(|json| json.contains(event.as_str())));
    let seats = status.availability_board();
    match seats.availability(&event).await.unwrap() {
        Projection::Ready(availability) => {
            assert_eq!(
                availability.available[0] & 0x80,
                0,
                "the held seat is not available"
            );
        }
        other => panic!("the seat map: {other:?}"),
    }
    assert!(seats.summary(&event).await.unwrap().is_some());

    // The unrevealed seed is there (the admin can read it); neither function can.
    let seed: Option<String> = redis::cmd("HGET")
        .arg(EventKeys::new(&event).settings)
        .arg("draw_seed")
        .query_async(&mut redis.admin_connection().await)
        .await
        .unwrap();
    assert!(seed.is_some(), "the event has a seed");
    for function in ["StatusFunction", "AvailabilityFunction"] {
        assert_confined(&redis, function, &event).await;
    }
    // And each writes nothing it only reads: status cannot overwrite the status or the seat
    // map; availability cannot touch the status.
    let keys = EventKeys::new(&event);
    let mut status_connection = redis.connection_as("StatusFunction").await;
    for command in [
        redis::cmd("SET").arg(&keys.status).arg("{}").clone(),
        redis::cmd("HSET")
            .arg(&keys.layout)
            .arg("summary")
            .arg("{}")
            .clone(),
        redis::cmd("SETBIT")
            .arg(&keys.seats_available)
            .arg(0)
            .arg(1)
            .clone(),
        redis::cmd("DEL").arg(&keys.seats_available).clone(),
    ] {
        assert_refused("status", &mut status_connection, &command).await;
    }
    let mut availability_connection = redis.connection_as("AvailabilityFunction").await;
    let read_the_status = redis::cmd("GET").arg(&keys.status).clone();
    assert_refused(
        "availability",
        &mut availability_connection,
        &read_the_status,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_other_function_runs_its_own_path_as_its_user() {
    let redis = UsersRedis::start().await;
    let sale = OnSale::with_seats_on(4, redis.admin.clone()).await;
    let (event, clock, now) = (sale.event.clone(), sale.clock.clone(), sale.clock.now());
    let records = sale.records.clone();
    let buyer = customer(1);

    // join: through its handler (the join script, a range of numbers reserved).
    let join_api = Queue::new(redis.queue_as("JoinFunction").await, records.clone()).queue_api(
        signing_key().into(),
        clock.clone(),
        None,
    );
    let joined = join::handle(&join_api, join_request(&event, &buyer)).await;
    assert!(joined.status().is_success(), "join: {}", body(&joined));

    // admit: a tick of the admission loop admits the buyer and publishes the status.
    let admit = redis.queue_as("AdmitFunction").await;
    let report = Admission::new(admit.clone()).await.tick(&event, now).await;
    assert_eq!(report.waiting, 0, "{report:?}");

    // poll: the buyer claims the admission and gets an access token.
    let poll_api = Queue::new(redis.queue_as("PollFunction").await, records.clone()).queue_api(
        signing_key().into(),
        clock.clone(),
        None,
    );
    let ticket = ticket_at(&event, &buyer, None, now);
    let polled = body(&poll::handle(&poll_api, poll_request(&event, &buyer, &ticket)).await);
    assert_eq!(polled["status"], "admitted", "{polled}");
    let token = polled["accessToken"].as_str().expect("a token").to_owned();

    // hold: the live admission checked, the seat map read, a seat held.
    let hold_api = Queue::new(redis.queue_as("HoldFunction").await, records.clone()).hold_api(
        sale.ledger.clone(),
        signing_key().into(),
        clock.clone(),
    );
    let held = hold::handle(
        &hold_api,
        sale.hold_request(&buyer, Some(&token), &[seat(1)]),
    )
    .await;
    assert!(held.status().is_success(), "hold: {}", body(&held));

    // confirm: the event's ticket limit and the payer's admission ended.
    let confirm = redis.queue_as("ConfirmFunction").await;
    assert_eq!(confirm.ticket_limit(&event).await.unwrap(), None);
    confirm
        .end_admission(&event, &buyer, now + Duration::from_secs(3_600))
        .await
        .expect("confirm ends an admission");

    // expire: the open events, the seat counts, the seats left, a sold-out closing and the
    // closed event's last status.
    let expire = redis.queue_as("ExpireFunction").await;
    assert!(expire.open_events().await.unwrap().contains(&event));
    let counts = expire
        .availability_board()
        .counts(&event)
        .await
        .unwrap()
        .expect("counted");
    assert_eq!(counts.seats, 4);
    expire.set_seats_left(&event, counts.seats).await.unwrap();
    assert!(expire.close(&event, ClosedReason::SoldOut).await.unwrap());
    expire.publish_tick(&event, now).await.unwrap();

    // None of them may flush, configure or list the cache, or run a script of its own; and
    // each keeps to its keys: confirm and hold touch no queue, join and poll no status, only
    // admit the draw's lock.
    let keys = EventKeys::new(&event);
    for (function, not_its_key) in [
        ("JoinFunction", &keys.status),
        ("PollFunction", &keys.status),
        ("AdmitFunction", &keys.restored),
        ("HoldFunction", &keys.queue),
        ("ConfirmFunction", &keys.queue),
        ("ExpireFunction", &keys.draw_lock),
    ] {
        let mut connection = redis.connection_as(function).await;
        let mut reaching = what_no_function_does();
        reaching.push(redis::cmd("EXISTS").arg(not_its_key).clone());
        for command in &reaching {
            assert_refused(function, &mut connection, command).await;
        }
    }
}

#[tokio::test]
async fn a_priority_groups_line_runs_as_the_functions_users() {
    use lineup::application::ports::event_records::GroupMembers;
    use lineup::domain::ids::GroupName;
    use lineup::domain::priority_group::{Membership, PriorityGroup, PriorityGroups};

    let redis = UsersRedis::start().await;
    let sale = OnSale::with_seats_on(2, redis.admin.clone()).await;
    let (event, clock, now) = (sale.event.clone(), sale.clock.clone(), sale.clock.now());
    let records = sale.records.clone();
    let fanclub = GroupName::parse("fanclub").unwrap();
    let line = event.group_line(&fanclub);
    // The operator gives the event a group (the record, the event's and the line's settings).
    let admin = lineup_cli::event_admin::EventAdmin::new(&redis.admin, &records, "test");
    admin
        .open(&event, &Default::default(), now)
        .await
        .expect("open");
    let groups = PriorityGroups::new(vec![PriorityGroup {
        name: fanclub.clone(),
        membership: Membership::List,
        opens_at: now - Duration::from_secs(60),
        closes_at: None,
        ticket_limit: None,
        sections: Vec::new(),
    }])
    .unwrap();
    admin
        .set_groups(&event, groups, "group-add", now)
        .await
        .expect("groups");
    let fan = customer(7);
    records
        .import_members(&line, std::slice::from_ref(&fan))
        .await
        .unwrap();

    // join: into the group's line.
    let join_api = Queue::new(redis.queue_as("JoinFunction").await, records.clone()).queue_api(
        signing_key().into(),
        clock.clone(),
        None,
    );
    let joined = body(&join::handle(&join_api, join_request(&event, &fan)).await);
    assert_eq!(joined["group"], "fanclub", "{joined}");
    let ticket = joined["queueId"].as_str().unwrap().to_owned();

    // admit: the line's tick (and the event's, behind it) as the admit function's user.
    let admit = redis.queue_as("AdmitFunction").await;
    let admission = Admission::new(admit.clone()).await;
    admission.tick(&event, now).await;
    assert_eq!(admission.tick(&line, now).await.waiting, 0);

    // poll: claimed with the line's ticket; status: the line's own status.
    let poll_api = Queue::new(redis.queue_as("PollFunction").await, records.clone()).queue_api(
        signing_key().into(),
        clock.clone(),
        None,
    );
    let polled = body(&poll::handle(&poll_api, poll_request(&event, &fan, &ticket)).await);
    assert_eq!(polled["status"], "admitted", "{polled}");
    let status = redis.queue_as("StatusFunction").await;
    assert!(status.status_json(&line).await.unwrap().is_some());

    // expire: the sold-out closing closes the group's line with the event.
    let expire = redis.queue_as("ExpireFunction").await;
    assert!(expire.close(&event, ClosedReason::SoldOut).await.unwrap());
    let settings = redis
        .admin
        .settings(&line)
        .await
        .unwrap()
        .expect("the line");
    assert_eq!(
        settings.state,
        lineup::domain::event_settings::QueueState::Closed
    );

    // Hold and confirm keep off the lines' keys.
    let keys = EventKeys::new(&line);
    for function in ["HoldFunction", "ConfirmFunction"] {
        let mut connection = redis.connection_as(function).await;
        assert_refused(
            function,
            &mut connection,
            redis::cmd("EXISTS").arg(&keys.settings),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pre_queue_draw_and_a_cache_loss_run_as_the_functions_users() {
    let redis = UsersRedis::start().await;
    let start = SystemTime::now();
    let opens_at = start + Duration::from_secs(3_600);

    // A pre-queue joined through the join handler, as the join user.
    let event = fresh_event();
    configure(
        &redis.admin,
        &event,
        EventSettings {
            admit_per_second: 0,
            ..EventSettings::opening_at(opens_at)
        },
    )
    .await;
    let join = redis.queue_as("JoinFunction").await;
    let join_api = Queue::new(join.clone(), records().await).queue_api(
        signing_key().into(),
        Arc::new(FixedClock::at(start)),
        None,
    );
    for n in 0..5 {
        let joined = join::handle(&join_api, join_request(&event, &customer(n))).await;
        assert!(joined.status().is_success(), "join: {}", body(&joined));
    }

    // The opening tick draws it, as the admit user: the seed read, the entrants scanned, their
    // numbers written, the draw marked.
    let opened = opens_at + Duration::from_secs(1);
    Admission::new(redis.queue_as("AdmitFunction").await)
        .await
        .tick(&event, opened)
        .await;
    let poll = redis.queue_as("PollFunction").await;
    for n in 0..5 {
        assert!(matches!(
            poll.standing(&event, &customer(n), opened).await.unwrap(),
            Some(Standing::Waiting { .. })
        ));
    }
    assert!(poll.leave(&event, &customer(4)).await.unwrap());

    // After a cache loss: join, poll and admit each re-load an event, poll puts a customer back.
    let record = |settings: EventSettings| EventRecord {
        settings,
        closed_reason: None,
        seed: DrawSeed::generate(),
        cursor: Default::default(),
        number_ceiling: 1_000,
    };
    let now = SystemTime::now();
    for function in ["JoinFunction", "PollFunction", "AdmitFunction"] {
        let lost = fresh_event();
        let queue = redis.queue_as(function).await;
        assert!(queue
            .lock_restore(&lost, Duration::from_secs(5))
            .await
            .unwrap());
        let settings = EventSettings::opening_at(now - Duration::from_secs(60));
        assert!(
            queue
                .restore_event(&lost, &record(settings), now)
                .await
                .unwrap(),
            "{function} restores the event"
        );
        if function == "PollFunction" {
            let context = queue.restore_context(&lost, &customer(1)).await.unwrap();
            assert!(context.is_some(), "restored");
            queue
                .restore_place(
                    &lost,
                    &customer(1),
                    now - Duration::from_secs(30),
                    RestoredPlace::Queue { number: 7 },
                )
                .await
                .expect("poll puts a customer back");
        }
        if function == "JoinFunction" {
            assert!(queue.number_range(&lost).await.unwrap().is_some());
        }
    }
    // The seat map the cache lost, rebuilt by the admitter from the tables.
    let sale = OnSale::with_seats_on(3, redis.admin.clone()).await;
    let keys = EventKeys::new(&sale.event);
    let () = redis::cmd("DEL")
        .arg(&keys.layout)
        .arg(&keys.seats_available)
        .arg(&keys.seats_sold)
        .query_async(&mut redis.admin_connection().await)
        .await
        .unwrap();
    let admit = redis.queue_as("AdmitFunction").await;
    let board = admit.availability_board();
    let rebuilt = lineup::application::rebuild::AvailabilityRebuild {
        board: &board,
        layouts: sale.records.as_ref(),
        states: sale.ledger.as_ref(),
    }
    .ensure(&sale.event)
    .await
    .expect("admit rebuilds the seat map");
    assert!(
        matches!(
            rebuilt,
            lineup::application::rebuild::RebuildOutcome::Rebuilt { seats: 3 }
        ),
        "{rebuilt:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_as_in_aws_a_user_connects_and_keeps_to_its_string() {
    // ElastiCache Serverless speaks cluster mode: the client asks for the slots (CLUSTER SLOTS)
    // and pings each node as the function's user before the first command.
    let cluster = RedisCluster::start();
    let users = declared_users();
    for node in &cluster.nodes {
        create_users(&node.url(), &users).await;
    }
    let settings = RedisSettings {
        url: cluster.url(),
        timeout: Duration::from_secs(2),
        cluster: true,
    };
    let admin = RedisQueue::open(&settings).unwrap();
    let now = SystemTime::now();
    let event = open_event(&admin, now).await;

    let admit =
        RedisQueue::open_as(&settings, Some(&sign_in(&users["AdmitFunction"]).await)).unwrap();
    assert!(admit.open_events().await.unwrap().contains(&event));
    admit.admit_tick(&event, now).await.expect("admit ticks");
    let status_user = sign_in(&users["StatusFunction"]).await;
    let status = RedisQueue::open_as(&settings, Some(&status_user)).unwrap();
    assert!(status.status_json(&event).await.unwrap().is_some());

    let mut connection = RedisConnection::open(&settings, Some(&status_user)).unwrap();
    let settings_key = EventKeys::new(&event).settings;
    for command in [
        redis::cmd("HGET")
            .arg(&settings_key)
            .arg("draw_seed")
            .clone(),
        redis::cmd("FLUSHALL"),
    ] {
        assert_refused("status", &mut connection, &command).await;
    }
    // A wrong password is refused at the first command, not at cold start.
    let wrong = RedisCredentials {
        user: status_user.user.clone(),
        password: RedisPassword::from_secret(b"not-the-password-at-all".to_vec()).unwrap(),
    };
    let intruder = RedisQueue::open_as(&settings, Some(&wrong)).unwrap();
    assert!(intruder.status_json(&event).await.is_err());
}

/// The operators' user as the template declares it (`OperatorRedisUser`).
fn operator_user() -> DeclaredUser {
    let template = template();
    let user = &resources(&template)["OperatorRedisUser"]["Properties"];
    DeclaredUser {
        name: user["UserName"].as_str().unwrap().to_owned(),
        access: user["AccessString"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_command_signs_in_as_the_operator_user_and_cannot_empty_the_cache() {
    use lineup_cli::endpoints::EndpointArgs;
    let redis = UsersRedis::start().await;
    let operator = operator_user();
    assert!(
        !operator.rules().contains(&"~*") && !operator.rules().iter().any(|r| r.starts_with("+@")),
        "{}",
        operator.access
    );
    create_users(
        &redis.server.url(),
        &BTreeMap::from([("operator".to_owned(), operator.clone())]),
    )
    .await;
    let secret = lineup::adapters::aws::secretsmanager(&aws::settings())
        .create_secret()
        .name(aws::unique("lineup-operator-redis-password"))
        .secret_string(password(&operator.name))
        .send()
        .await
        .expect("create the secret in moto")
        .arn
        .expect("moto returns the ARN");
    let endpoints = EndpointArgs {
        redis_url: redis.server.url(),
        redis_cluster: false,
        redis_user: Some(operator.name.clone()),
        redis_password_secret: Some(secret),
        endpoint_url: aws::endpoint_url(),
        aws: false,
        profile: None,
        region: None,
        seats_table: "unused".to_owned(),
        orders_table: "unused".to_owned(),
        outbox_table: "unused".to_owned(),
        events_table: "unused".to_owned(),
    };

    // What the operator's commands do: configure an event, read it back, close it.
    let queue = endpoints.queue().await.expect("signed in as the operator");
    let event = fresh_event();
    let seed = DrawSeed::generate();
    queue
        .configure(&event, &EventSettings::opening_at(SystemTime::now()), &seed)
        .await
        .expect("the operator configures an event");
    assert!(queue.settings(&event).await.unwrap().is_some());
    queue
        .tick(
            &event,
            SystemTime::now(),
            lineup::application::ports::queue::TickMode::Admit { up_to: None },
        )
        .await
        .expect("and ticks it (a status published)");

    // Nothing that empties, lists or reconfigures the cache, nor another key space.
    let credentials = lineup::adapters::redis::connection::RedisCredentials {
        user: operator.name.clone(),
        password: RedisPassword::from_secret(password(&operator.name).into_bytes()).unwrap(),
    };
    let mut connection = RedisConnection::open(&redis.settings(), Some(&credentials)).unwrap();
    for command in what_no_function_does() {
        assert_refused("the operator", &mut connection, &command).await;
    }
    assert_refused(
        "the operator",
        &mut connection,
        redis::cmd("SET").arg("not-lineup").arg("x"),
    )
    .await;

    // A wrong secret: the command stops before anything is done, saying which secret.
    let wrong = EndpointArgs {
        redis_password_secret: Some("no-such-secret".to_owned()),
        ..endpoints.clone()
    };
    let refused = wrong.queue().await.map(|_| ()).unwrap_err();
    assert!(refused.to_string().contains("no-such-secret"), "{refused}");
}
