//! Priority groups (presales), against real Redis and the serialised moto server, through the
//! join, poll and hold handlers, the admitter as the `admit` function runs it, the operators'
//! `set_groups`, and `lineup verify-draw` over the public routes:
//! - members of the groups are admitted, group by group, before anyone in no group, whatever
//!   order the lines are ticked in, and each line's pre-queue draw checks out against the
//!   commitment its status showed before the opening;
//! - one ticket limit spans the presale and the general sale;
//! - a member whose group's window has ended joins the general line, and a ticket names the one
//!   line it was issued for;
//! - seats set aside for a group are held by its members alone until its window ends, then by
//!   anyone, and the operator's command writes and gives them back.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use lineup::adapters::redis::keys::EventKeys;
use lineup::application::ports::event_records::GroupMembers;
use lineup::application::ports::queue::StatusBoard;
use lineup::application::{join, poll};
use lineup::domain::clock::{unix_millis, Clock};
use lineup::domain::ids::{CustomerId, EventId, GroupName};
use lineup::domain::priority_group::{Membership, PriorityGroup, PriorityGroups};
use lineup_cli::event_admin::{EventAdmin, OpensAt, SettingsChange};
use lineup_cli::priority_groups::{GroupError, GroupOutcome};
use lineup_cli::verify_draw::{self, Verdict, VerifyDrawArgs};
use lineup_tests::on_sale::{seat, OnSale};
use lineup_tests::public_routes::serve_public_routes;
use lineup_tests::{body, error_code, request, retarget, sample, Admission};
use serde_json::Value;

fn group(name: &str, membership: Membership, opens_at: SystemTime) -> PriorityGroup {
    PriorityGroup {
        name: GroupName::parse(name).unwrap(),
        membership,
        opens_at,
        closes_at: None,
        ticket_limit: None,
        sections: Vec::new(),
    }
}

fn person(name: &str) -> CustomerId {
    CustomerId::parse(name).unwrap()
}

/// `POST /events/{event}/queue` as `caller`, whose sign-in carries `claims`.
async fn join_as(sale: &OnSale, caller: &CustomerId, claims: &[(&str, &str)]) -> Value {
    let mut event = retarget(&sample("join.json"), &sale.event, Some(caller), None);
    for (name, value) in claims {
        event["requestContext"]["authorizer"]["jwt"]["claims"][*name] = (*value).into();
    }
    let response = join::handle(&sale.queue_api, request(&event)).await;
    let answer = body(&response);
    assert!(response.status().is_success(), "join: {answer}");
    answer
}

/// Opens `sale`'s event through the operators' use case (the durable record, then the cache),
/// then gives it `groups`.
async fn open_with_groups(
    sale: &OnSale,
    change: SettingsChange,
    groups: Vec<PriorityGroup>,
    now: SystemTime,
) {
    let admin = EventAdmin::new(&sale.queue, &sale.records, "test");
    admin.open(&sale.event, &change, now).await.expect("open");
    admin
        .set_groups(
            &sale.event,
            PriorityGroups::new(groups).unwrap(),
            "group-add",
            now,
        )
        .await
        .expect("set groups");
}

/// Opens `sale`'s event with `change` and one group, `insiders`, whose members hold its codes
/// (opening at `opened`); one single-use code made for it.
async fn open_with_a_presale_code(
    sale: &OnSale,
    change: SettingsChange,
    opened: SystemTime,
    now: SystemTime,
) -> lineup::domain::access_code::AccessCode {
    use lineup::adapters::dynamo::access_codes::DynamoAccessCodes;
    use lineup::application::ports::access_codes::AccessCodeBook;
    use lineup::domain::access_code::{AccessCode, CodeTerms};

    open_with_groups(
        sale,
        change,
        vec![group("insiders", Membership::Code, opened)],
        now,
    )
    .await;
    let code = AccessCode::generate();
    let terms = CodeTerms {
        uses: 1,
        expires_at: None,
        group: GroupName::parse("insiders").ok(),
    };
    DynamoAccessCodes::in_events_table(&sale.records)
        .create(
            &sale.event,
            std::slice::from_ref(&code),
            &terms,
            SystemTime::now(),
        )
        .await
        .expect("create the code");
    code
}

async fn offered(event: &EventId) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(EventKeys::new(event).offered)
        .arg(0)
        .arg(-1)
        .query_async(&mut lineup_tests::redis().await)
        .await
        .expect("ZRANGE offered")
}

async fn status(sale: &OnSale, line: &EventId) -> Value {
    let json = sale
        .queue
        .status_json(line)
        .await
        .expect("status")
        .expect("published");
    serde_json::from_str(&json).expect("status JSON")
}

#[tokio::test]
async fn a_presale_group_is_admitted_before_the_groups_behind_it_and_each_draw_checks_out() {
    let sale = OnSale::with_seats(0).await;
    let t0 = sale.clock.now();
    let opens = t0 + Duration::from_secs(60);
    let change = SettingsChange {
        opens_at: Some(OpensAt::At(opens)),
        rate: Some(3),
        max_active: Some(1_000),
        ..Default::default()
    };
    let gold = Membership::Claim {
        claim: "tier".into(),
        value: "gold".into(),
    };
    open_with_groups(
        &sale,
        change,
        vec![
            group("fanclub", Membership::List, opens),
            group("card", gold, opens),
        ],
        t0,
    )
    .await;
    let fanclub = sale.event.group_line(&GroupName::parse("fanclub").unwrap());
    let card = sale.event.group_line(&GroupName::parse("card").unwrap());
    let fans: Vec<CustomerId> = (0..5).map(|n| person(&format!("fan-{n}"))).collect();
    sale.records
        .import_members(&fanclub, &fans)
        .await
        .expect("import");

    // Before the opening everyone joins their line's pre-queue. `fan-0` also has the card: the
    // first group that counts a customer is theirs.
    let mut line_of = BTreeMap::new();
    for fan in &fans {
        let claims: &[(&str, &str)] = if fan.as_str() == "fan-0" {
            &[("tier", "gold")]
        } else {
            &[]
        };
        let answer = join_as(&sale, fan, claims).await;
        assert_eq!(answer["group"], "fanclub", "{answer}");
        assert!(answer["queueId"].as_str().unwrap().starts_with("fanclub."));
        line_of.insert(fan.to_string(), "fanclub");
    }
    for n in 0..4 {
        let holder = person(&format!("card-{n}"));
        let answer = join_as(&sale, &holder, &[("tier", "[silver gold]")]).await;
        assert_eq!(answer["group"], "card", "{answer}");
        line_of.insert(holder.to_string(), "card");
    }
    for n in 0..10 {
        let everyone = person(&format!("general-{n}"));
        let answer = join_as(&sale, &everyone, &[("tier", "silver")]).await;
        assert!(answer.get("group").is_none(), "{answer}");
        assert!(answer["entrant"].is_string(), "in the pre-queue: {answer}");
        line_of.insert(everyone.to_string(), "general");
    }

    // A group's opening is fixed once its pre-queue has entrants (ADR 0023, per line): moving
    // it is refused, and nothing changes.
    let admin = EventAdmin::new(&sale.queue, &sale.records, "test");
    let mut moved = admin
        .groups(&sale.event)
        .await
        .unwrap()
        .iter()
        .cloned()
        .collect::<Vec<_>>();
    moved[0].opens_at = opens + Duration::from_secs(600);
    let refused = admin
        .set_groups(
            &sale.event,
            PriorityGroups::new(moved).unwrap(),
            "group-set",
            t0,
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(lineup_cli::event_admin::AdminError::OpeningFixed { .. })
        ),
        "{refused:?}"
    );
    let kept = admin
        .groups(&sale.event)
        .await
        .unwrap()
        .iter()
        .next()
        .unwrap()
        .opens_at;
    assert_eq!(
        unix_millis(kept),
        unix_millis(opens),
        "stored to the millisecond"
    );

    // What each line's status shows before the opening: the draw's commitment, kept to check
    // the draw against.
    let admission = Admission::new(sale.queue.clone()).await;
    let lines = [sale.event.clone(), card.clone(), fanclub.clone()];
    let mut committed = BTreeMap::new();
    for line in &lines {
        admission.tick(line, t0).await;
        let shown = status(&sale, line).await;
        assert_eq!(shown["state"], "pre_queue", "{shown}");
        committed.insert(line.to_string(), shown["draw"]["commitment"].clone());
    }
    assert_eq!(
        status(&sale, &sale.event).await["groups"]["order"],
        serde_json::json!(["fanclub", "card", "general"])
    );

    // From the opening, the lines are ticked each second, the event's own first and the first
    // group last (the order must not matter), at 3 admissions a second for the whole event.
    let mut round_of: BTreeMap<String, usize> = BTreeMap::new();
    let mut served_shown = Vec::new();
    for round in 0..30 {
        let now = opens + Duration::from_secs(1 + round as u64);
        for line in &lines {
            admission.tick(line, now).await;
        }
        for customer in offered(&sale.event).await {
            round_of.entry(customer).or_insert(round);
        }
        served_shown.push(
            status(&sale, &sale.event).await["groups"]["serving"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        if round_of.len() == line_of.len() {
            break;
        }
    }
    assert_eq!(round_of.len(), 19, "everyone called: {round_of:?}");
    let rounds = |line: &str| -> Vec<usize> {
        line_of
            .iter()
            .filter(|(_, l)| **l == line)
            .map(|(customer, _)| round_of[customer])
            .collect()
    };
    let (fan_rounds, card_rounds, general_rounds) =
        (rounds("fanclub"), rounds("card"), rounds("general"));
    assert!(
        fan_rounds.iter().max() < card_rounds.iter().min(),
        "every fan before any card holder: {fan_rounds:?} {card_rounds:?}"
    );
    assert!(
        card_rounds.iter().max() < general_rounds.iter().min(),
        "every card holder before anyone else: {card_rounds:?} {general_rounds:?}"
    );
    // The rate is the event's: never more than 3 called in one round, over all lines.
    let mut per_round = BTreeMap::new();
    for round in round_of.values() {
        *per_round.entry(*round).or_insert(0) += 1;
    }
    assert!(
        per_round.values().all(|called| *called <= 3),
        "{per_round:?}"
    );
    // The public status said which group was served.
    assert_eq!(served_shown.first().map(String::as_str), Some("fanclub"));
    assert!(served_shown.iter().any(|served| served == "card"));
    assert_eq!(served_shown.last().map(String::as_str), Some("general"));

    // Each line's draw, as any outsider checks it from the public routes.
    let base = serve_public_routes(lineup_tests::public_api(sale.records.clone())).await;
    for line in &lines {
        let outcome = verify_draw::run(&VerifyDrawArgs {
            event: line.to_string(),
            base: base.clone(),
            commitment: committed[&line.to_string()].as_str().map(str::to_owned),
            chunks_per_second: 1_000,
        })
        .await;
        assert_eq!(
            Verdict::of(&outcome),
            Verdict::ChecksOut,
            "{line}: {outcome:?}"
        );
    }
}

#[tokio::test]
async fn the_events_ticket_limit_spans_the_presale_and_the_general_sale_and_the_presales_own_binds_in_it(
) {
    let sale = OnSale::with_seats(10).await;
    let t0 = sale.clock.now();
    let change = SettingsChange {
        opens_at: Some(OpensAt::At(t0 - Duration::from_secs(60))),
        ticket_limit: Some(4),
        ..Default::default()
    };
    // The presale's own limit: 3 a member, inside the event's 4.
    let presale = PriorityGroup {
        closes_at: Some(t0 + Duration::from_secs(30)),
        ticket_limit: Some(3),
        ..group("fanclub", Membership::List, t0 - Duration::from_secs(60))
    };
    open_with_groups(&sale, change, vec![presale], t0).await;
    let fanclub = sale.event.group_line(&GroupName::parse("fanclub").unwrap());
    let fan = person("fan-limit");
    sale.records
        .import_members(&fanclub, std::slice::from_ref(&fan))
        .await
        .expect("import");
    let admission = Admission::new(sale.queue.clone()).await;

    // In the presale: admitted from the group's line; 4 seats are past the presale's 3 (though
    // within the event's 4), 3 are bought.
    let joined = join_as(&sale, &fan, &[]).await;
    assert_eq!(joined["group"], "fanclub", "{joined}");
    let ticket = joined["queueId"].as_str().unwrap().to_owned();
    admission.tick(&fanclub, t0).await;
    let token = claim(&sale, &fan, &ticket).await;
    let before = sale.seats().await;
    let over = sale
        .hold(&fan, &token, &[seat(1), seat(2), seat(3), seat(4)])
        .await;
    assert_eq!(over.status().as_u16(), 409, "{}", body(&over));
    assert_eq!(error_code(&over), "ticket_limit_reached");
    assert_eq!(sale.seats().await, before, "nothing held");
    let held = sale.hold(&fan, &token, &[seat(1), seat(2), seat(3)]).await;
    assert_eq!(held.status().as_u16(), 201, "{}", body(&held));
    let order = body(&held);
    let paid = sale
        .pay(
            order["orderId"].as_str().unwrap(),
            order["amount"].as_i64().unwrap(),
        )
        .await;
    assert!(paid.status().is_success(), "{}", body(&paid));

    // The presale's window ends: the same customer joins the general sale, and is admitted.
    sale.clock.advance(Duration::from_secs(31));
    let now = sale.clock.now();
    let joined = join_as(&sale, &fan, &[]).await;
    assert!(joined.get("group").is_none(), "the general line: {joined}");
    let ticket = joined["queueId"].as_str().unwrap().to_owned();
    // The general line's ticket opens nothing in the group's line, nor the other way round.
    let moved = format!("fanclub.{ticket}");
    let refused = poll::handle(
        &sale.queue_api,
        lineup_tests::poll_request(&sale.event, &fan, &moved),
    )
    .await;
    assert_eq!(refused.status().as_u16(), 404, "{}", body(&refused));
    admission.tick(&sale.event, now).await;
    let token = claim(&sale, &fan, &ticket).await;

    // 3 bought in the presale + 2 more is past the event's 4: refused, nothing held.
    let before = sale.seats().await;
    let over = sale.hold(&fan, &token, &[seat(4), seat(5)]).await;
    assert_eq!(over.status().as_u16(), 409, "{}", body(&over));
    assert_eq!(error_code(&over), "ticket_limit_reached");
    assert_eq!(sale.seats().await, before, "nothing held");
    let within = sale.hold(&fan, &token, &[seat(4)]).await;
    assert_eq!(within.status().as_u16(), 201, "{}", body(&within));
}

/// Polls with `ticket` until admitted (one poll: the caller was just admitted); the token.
async fn claim(sale: &OnSale, customer: &CustomerId, ticket: &str) -> String {
    let response = poll::handle(
        &sale.queue_api,
        lineup_tests::poll_request(&sale.event, customer, ticket),
    )
    .await;
    let answer = body(&response);
    assert_eq!(answer["status"], "admitted", "{answer}");
    answer["accessToken"].as_str().unwrap().to_owned()
}

/// Deletes every key of `event` (its lines' too) from the shared Redis, as a cache loss would.
async fn lose_the_cache_of(event: &EventId) {
    let mut redis = lineup_tests::redis().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{ev:{event}}}*"))
        .query_async(&mut redis)
        .await
        .expect("KEYS");
    let _: i64 = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut redis)
        .await
        .expect("DEL");
}

#[tokio::test]
async fn after_a_cache_loss_the_general_line_waits_until_the_presales_members_are_back() {
    let sale = OnSale::with_seats(0).await;
    let t0 = sale.clock.now();
    let change = SettingsChange {
        opens_at: Some(OpensAt::At(t0 - Duration::from_secs(60))),
        rate: Some(1),
        ..Default::default()
    };
    let opened = t0 - Duration::from_secs(60);
    open_with_groups(
        &sale,
        change,
        vec![group("fanclub", Membership::List, opened)],
        t0,
    )
    .await;
    let fanclub = sale.event.group_line(&GroupName::parse("fanclub").unwrap());
    let fans: Vec<CustomerId> = (0..3).map(|n| person(&format!("fan-{n}"))).collect();
    sale.records
        .import_members(&fanclub, &fans)
        .await
        .expect("import");
    let mut tickets = BTreeMap::new();
    for fan in &fans {
        let answer = join_as(&sale, fan, &[]).await;
        tickets.insert(
            fan.to_string(),
            answer["queueId"].as_str().unwrap().to_owned(),
        );
    }
    let everyone: Vec<CustomerId> = (0..3).map(|n| person(&format!("general-{n}"))).collect();
    for customer in &everyone {
        let answer = join_as(&sale, customer, &[]).await;
        tickets.insert(
            customer.to_string(),
            answer["queueId"].as_str().unwrap().to_owned(),
        );
    }
    let admission = Admission::new(sale.queue.clone()).await;
    // One fan called (1 a second), two still waiting, when the cache is lost.
    admission.tick(&fanclub, t0).await;
    assert_eq!(offered(&sale.event).await.len(), 1);
    lose_the_cache_of(&sale.event).await;

    // The admitter restores both lines from their records; nobody has come back yet. For a
    // long while (the fan club's restore frontier short of the numbers it had handed out) the
    // general line calls nobody.
    let mut now = t0 + Duration::from_secs(1);
    for _ in 0..30 {
        admission.tick(&sale.event, now).await;
        admission.tick(&fanclub, now).await;
        now += Duration::from_secs(1);
    }
    let called = offered(&sale.event).await;
    assert!(
        called
            .iter()
            .all(|customer| !customer.starts_with("general")),
        "the general line waited: {called:?}"
    );
    assert_eq!(
        status(&sale, &sale.event).await["groups"]["serving"],
        "fanclub"
    );

    // Everyone comes back with their tickets, the general line first; the fans are called
    // before anyone else.
    sale.clock.advance(now.duration_since(t0).unwrap());
    for fan in everyone.iter().chain(&fans) {
        let response = poll::handle(
            &sale.queue_api,
            lineup_tests::poll_request(&sale.event, fan, &tickets[fan.as_str()]),
        )
        .await;
        assert!(response.status().is_success(), "{}", body(&response));
    }
    let mut round_of: BTreeMap<String, usize> = BTreeMap::new();
    for round in 0..600 {
        admission.tick(&sale.event, now).await;
        admission.tick(&fanclub, now).await;
        for customer in offered(&sale.event).await {
            round_of.entry(customer).or_insert(round);
        }
        if everyone.iter().all(|c| round_of.contains_key(c.as_str())) {
            break;
        }
        now += Duration::from_secs(1);
    }
    let last_fan = fans.iter().filter_map(|f| round_of.get(f.as_str())).max();
    let first_general = everyone
        .iter()
        .filter_map(|c| round_of.get(c.as_str()))
        .min();
    assert!(
        last_fan.is_some() && first_general.is_some() && last_fan < first_general,
        "every fan before anyone else: {round_of:?}"
    );
}

#[tokio::test]
async fn a_presale_code_puts_its_holder_in_the_groups_line_and_lets_nobody_else_in_with_it() {
    let sale = OnSale::with_seats(0).await;
    let t0 = sale.clock.now();
    let opened = t0 - Duration::from_secs(60);
    let change = SettingsChange {
        opens_at: Some(OpensAt::At(opened)),
        ..Default::default()
    };
    let code = open_with_a_presale_code(&sale, change, opened, t0).await;

    // Its holder joins the group's line; without a code, anyone joins the event's own.
    let join_with = |who: CustomerId, code: Option<String>| {
        let sale = &sale;
        async move {
            let mut event = retarget(&sample("join.json"), &sale.event, Some(&who), None);
            if let Some(code) = code {
                event["body"] = serde_json::json!({ "code": code }).to_string().into();
            }
            join::handle(&sale.queue_api, request(&event)).await
        }
    };
    let holder = join_with(person("insider"), Some(code.to_string())).await;
    assert_eq!(holder.status().as_u16(), 201, "{}", body(&holder));
    assert_eq!(body(&holder)["group"], "insiders");
    let plain = join_with(person("plain"), None).await;
    assert!(body(&plain).get("group").is_none(), "{}", body(&plain));

    // The single-use code passed on: refused, and nothing of the second account is stored.
    let before = lineup_tests::snapshot(&sale.event).await;
    let passed_on = join_with(person("friend"), Some(code.to_string())).await;
    assert_eq!(passed_on.status().as_u16(), 403, "{}", body(&passed_on));
    assert_eq!(error_code(&passed_on), "code_invalid");
    assert_eq!(lineup_tests::snapshot(&sale.event).await, before);
}

/// The page's lines (`web/lines.js`), run in node: the group read from the ticket, the line's
/// status and draw paths, the issue time whatever the line, what the page says is served.
#[test]
fn the_pages_lines_pass_their_node_test() {
    lineup_tests::node_test_passes("tests/web/lines.test.mjs", 3);
}

#[test]
fn the_pages_sections_set_aside_pass_their_node_test() {
    lineup_tests::node_test_passes("tests/web/allocations.test.mjs", 3);
}

#[tokio::test]
async fn a_presale_code_is_not_looked_at_before_the_events_proof_of_work() {
    use lineup::adapters::dynamo::access_codes::DynamoAccessCodes;
    use lineup::application::ports::access_codes::AccessCodeBook;
    use lineup::domain::proof_of_work::{self, ChallengeDifficulty};

    const BITS: u32 = 8;
    let sale = OnSale::with_seats(0).await;
    let t0 = sale.clock.now();
    let opened = t0 - Duration::from_secs(60);
    let change = SettingsChange {
        opens_at: Some(OpensAt::At(opened)),
        challenge_difficulty: Some(ChallengeDifficulty::new(BITS).unwrap()),
        ..Default::default()
    };
    let code = open_with_a_presale_code(&sale, change, opened, t0).await;
    let book = DynamoAccessCodes::in_events_table(&sale.records);
    let join_with = |body: Value| {
        let sale = &sale;
        async move {
            let mut event = retarget(
                &sample("join.json"),
                &sale.event,
                Some(&person("insider")),
                None,
            );
            event["body"] = body.to_string().into();
            join::handle(&sale.queue_api, request(&event)).await
        }
    };

    // A code without the work (a guesser's flood): the challenge, the code not even bound.
    let before = lineup_tests::snapshot(&sale.event).await;
    let bare = join_with(serde_json::json!({ "code": code.to_string() })).await;
    assert_eq!(bare.status().as_u16(), 403, "{}", body(&bare));
    assert_eq!(error_code(&bare), "challenge_required");
    assert_eq!(lineup_tests::snapshot(&sale.event).await, before);
    let counts = book.counts(&sale.event, SystemTime::now()).await.unwrap();
    assert_eq!(counts.accounts_bound, 0, "{counts:?}");

    // With the work done, the code puts its holder in the group's line.
    let challenge = body(&bare)["error"]["challenge"]
        .as_str()
        .expect("a challenge")
        .to_owned();
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(&challenge, &mut bytes).unwrap();
    let (nonce, _) = proof_of_work::solve(&bytes, ChallengeDifficulty::new(BITS).unwrap());
    let joined = join_with(serde_json::json!({
        "code": code.to_string(),
        "proofOfWork": { "challenge": challenge, "nonce": nonce },
    }))
    .await;
    assert_eq!(joined.status().as_u16(), 201, "{}", body(&joined));
    assert_eq!(body(&joined)["group"], "insiders");
    let counts = book.counts(&sale.event, SystemTime::now()).await.unwrap();
    assert_eq!(counts.accounts_bound, 1, "{counts:?}");
}

/// Every seat item's reservation (`reserved_for`, `reserved_until`), by seat id.
async fn reservations(sale: &OnSale) -> BTreeMap<String, (Option<String>, Option<u64>)> {
    sale.seats()
        .await
        .into_iter()
        .map(|(id, item)| {
            let group = item
                .get("reserved_for")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let until = item.get("reserved_until").and_then(Value::as_u64);
            (id, (group, until))
        })
        .collect()
}

#[tokio::test]
async fn seats_set_aside_for_a_presale_are_its_members_alone_until_its_window_ends() {
    // Ten seats: the even ones are the Floor, the odd ones the Balcony.
    let sale = OnSale::with_seats(10).await;
    let t0 = sale.clock.now();
    let window_end = t0 + Duration::from_secs(600);
    let change = SettingsChange {
        opens_at: Some(OpensAt::At(t0 - Duration::from_secs(60))),
        ..Default::default()
    };
    let presale = PriorityGroup {
        closes_at: Some(window_end),
        sections: vec!["Floor".into()],
        ..group("fanclub", Membership::List, t0 - Duration::from_secs(60))
    };
    open_with_groups(&sale, change, Vec::new(), t0).await;
    let admin = EventAdmin::new(&sale.queue, &sale.records, "test");
    let set_aside = lineup_cli::priority_groups::SeatsSetAside {
        seats: sale.ledger.as_ref(),
        layouts: sale.records.as_ref(),
    };
    // `lineup event group add --sections Floor`: the record, then the Floor's seats.
    let changed = |current: &PriorityGroups, groups: Vec<PriorityGroup>| {
        let changed = PriorityGroups::new(groups).unwrap();
        let current = current.clone();
        let (admin, set_aside, event) = (&admin, &set_aside, sale.event.clone());
        async move {
            lineup_cli::priority_groups::change_groups(
                &event,
                &current,
                changed,
                "group-set",
                admin,
                set_aside,
                t0,
            )
            .await
            .map(|outcome| match outcome {
                GroupOutcome::Groups {
                    groups,
                    seats_written,
                } => (groups, seats_written),
                GroupOutcome::Imported(_) => unreachable!("no import here"),
            })
        }
    };
    // A section the layout does not have is refused before anything is written.
    let typo = PriorityGroup {
        sections: vec!["Flor".into()],
        ..presale.clone()
    };
    assert!(matches!(
        changed(&PriorityGroups::none(), vec![typo]).await,
        Err(GroupError::UnknownSection(_))
    ));
    assert!(admin.groups(&sale.event).await.unwrap().is_empty());
    // A second group, the card's, opens in an hour (its pre-queue takes an entrant later on).
    let card = PriorityGroup {
        closes_at: Some(t0 + Duration::from_secs(7_200)),
        ..group(
            "card",
            Membership::Claim {
                claim: "tier".into(),
                value: "gold".into(),
            },
            t0 + Duration::from_secs(3_600),
        )
    };
    let (groups, written) = changed(&PriorityGroups::none(), vec![presale.clone(), card.clone()])
        .await
        .expect("set aside");
    assert_eq!(written, 5, "the Floor's five seats");
    let stored = reservations(&sale).await;
    for n in 1..=10 {
        let expected = (n % 2 == 0).then(|| ("fanclub".to_owned(), unix_millis(window_end)));
        let (group, until) = stored[seat(n).as_str()].clone();
        assert_eq!(group.zip(until), expected, "seat {n}");
    }

    // The seat map says which sections are set aside, for whom and until when.
    let map = body(&sale.seat_map().await);
    let sections = map["sections"].as_array().expect("sections");
    let floor = sections.iter().find(|s| s["name"] == "Floor").unwrap();
    let balcony = sections.iter().find(|s| s["name"] == "Balcony").unwrap();
    assert_eq!(floor["reservedFor"], "fanclub", "{map}");
    assert!(floor["reservedUntil"].is_string(), "{map}");
    assert!(balcony.get("reservedFor").is_none(), "{map}");

    // A fan joins the fan club's line, a customer in no group the general line; both admitted.
    let fanclub = sale.event.group_line(&GroupName::parse("fanclub").unwrap());
    let fan = person("fan-floor");
    sale.records
        .import_members(&fanclub, std::slice::from_ref(&fan))
        .await
        .expect("import");
    let other = person("general-floor");
    let admission = Admission::new(sale.queue.clone()).await;
    let fan_ticket = join_as(&sale, &fan, &[]).await["queueId"]
        .as_str()
        .unwrap()
        .to_owned();
    let other_ticket = join_as(&sale, &other, &[]).await["queueId"]
        .as_str()
        .unwrap()
        .to_owned();
    admission.tick(&fanclub, t0).await;
    let fan_token = claim(&sale, &fan, &fan_ticket).await;
    admission.tick(&sale.event, t0).await;
    let other_token = claim(&sale, &other, &other_ticket).await;

    // The general customer, asking for Floor seats by id or best available: 409 seats_reserved,
    // and nothing stored changes.
    let seats_before = sale.seats().await;
    let orders_before = sale.orders().await;
    let by_id = sale.hold(&other, &other_token, &[seat(2), seat(4)]).await;
    assert_eq!(by_id.status().as_u16(), 409, "{}", body(&by_id));
    assert_eq!(error_code(&by_id), "seats_reserved");
    assert_eq!(
        body(&by_id)["error"]["seatIds"],
        serde_json::json!(["A-002", "A-004"])
    );
    // One seat of the Floor among Balcony seats refuses the whole hold.
    let mixed = sale.hold(&other, &other_token, &[seat(1), seat(2)]).await;
    assert_eq!(error_code(&mixed), "seats_reserved", "{}", body(&mixed));
    assert_eq!(
        body(&mixed)["error"]["seatIds"],
        serde_json::json!(["A-002"])
    );
    let best = sale.hold_best(&other, &other_token, "Floor", 2).await;
    assert_eq!(best.status().as_u16(), 409, "{}", body(&best));
    assert_eq!(error_code(&best), "seats_reserved");
    assert_eq!(sale.seats().await, seats_before, "no seat changed");
    assert_eq!(sale.orders().await, orders_before, "no order written");
    // The Balcony is on general sale.
    let balcony_hold = sale.hold(&other, &other_token, &[seat(1)]).await;
    assert_eq!(
        balcony_hold.status().as_u16(),
        201,
        "{}",
        body(&balcony_hold)
    );

    // The fan, admitted through the fan club's line, holds Floor seats.
    let fan_hold = sale.hold(&fan, &fan_token, &[seat(2), seat(4)]).await;
    assert_eq!(fan_hold.status().as_u16(), 201, "{}", body(&fan_hold));

    // The window ends: the Floor's other seats are on general sale, with no one writing a thing.
    sale.clock.advance(Duration::from_secs(601));
    let late = person("general-late");
    let late_ticket = join_as(&sale, &late, &[]).await["queueId"]
        .as_str()
        .unwrap()
        .to_owned();
    admission.tick(&sale.event, sale.clock.now()).await;
    let late_token = claim(&sale, &late, &late_ticket).await;
    let after_window = sale.hold_best(&late, &late_token, "Floor", 2).await;
    assert_eq!(
        after_window.status().as_u16(),
        201,
        "{}",
        body(&after_window)
    );

    // A change the record refuses (moving a group's opening once its pre-queue has entrants)
    // while it gives the Floor back: the Floor is set aside again, as the record still says.
    let now = sale.clock.now();
    let entrant = join_as(&sale, &person("gold-entrant"), &[("tier", "gold")]).await;
    assert_eq!(
        entrant["group"], "card",
        "in the card's pre-queue: {entrant}"
    );
    let refused = changed(
        &groups,
        vec![
            PriorityGroup {
                sections: Vec::new(),
                ..presale.clone()
            },
            PriorityGroup {
                opens_at: now + Duration::from_secs(3_000),
                ..card.clone()
            },
        ],
    )
    .await;
    assert!(
        matches!(refused, Err(GroupError::Admin(_))),
        "the opening is fixed"
    );
    let marked = reservations(&sale).await;
    for n in (2..=10).step_by(2) {
        assert_eq!(
            marked[seat(n).as_str()].0.as_deref(),
            Some("fanclub"),
            "seat {n} still set aside"
        );
    }

    // The operator gives the allocation back (`group set --no-sections`): its marks are taken
    // off every seat, held or not, and the holds are untouched.
    let (_, cleared) = changed(
        &groups,
        vec![
            PriorityGroup {
                sections: Vec::new(),
                ..presale.clone()
            },
            card,
        ],
    )
    .await
    .expect("given back");
    assert_eq!(cleared, 5);
    assert!(reservations(&sale)
        .await
        .values()
        .all(|(group, until)| group.is_none() && until.is_none()));
    let held: Vec<String> = sale
        .seats()
        .await
        .into_iter()
        .filter(|(_, item)| item["status"] == "HELD")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(held.len(), 5, "1 + 2 + 2 seats still held: {held:?}");
}
