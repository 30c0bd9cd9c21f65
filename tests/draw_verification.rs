//! `lineup verify-draw` against a draw published as the admitter publishes it (through the events
//! table's adapter, in the local DynamoDB) and served as the origin serves it (the real public
//! handler, each HTTP request turned into the API Gateway event `lambda_http` parses), read over
//! HTTP as an outsider reads it: a true draw checks out; two numbers swapped in one stored chunk
//! are exactly two mismatches; a commitment other than the draw's is caught; a status that counts
//! other entrants than the published draw fails the check. And what keeps the draw from being
//! steered or replaced: the published summary is written once (a conditional write in DynamoDB:
//! the same draw again changes nothing, another is refused), and an event's opening cannot move
//! once its pre-queue has entrants.

use std::time::{Duration, SystemTime};

use lineup::adapters::redis::keys::EventKeys;
use lineup::application::ports::event_records::{DrawPublication, DrawPublished};
use lineup::domain::draw;
use lineup::domain::draw::{DrawChunk, DrawMismatch, DrawSeed, DrawSummary};
use lineup::domain::event_settings::QueueState;
use lineup::domain::ids::EventId;
use lineup::domain::status::StatusInputs;
use lineup_cli::verify_draw::{
    self, CommittedBy, DrawCheck, Verdict, VerifyDrawArgs, VerifyDrawError,
};
use lineup_tests::public_routes::serve_public_routes;

const ENTRANTS: usize = 1_000;

/// An event whose 1,000-entrant draw is published and whose status shows its commitment.
struct Published {
    event: EventId,
    seed: DrawSeed,
    summary: DrawSummary,
    chunks: Vec<DrawChunk>,
    /// Where the public routes are served.
    base: String,
}

/// Draws `customer-00000`.. as the admitter does, publishes the draw in the shared events table,
/// writes the event's status where the admit tick writes it, and serves the public routes.
async fn publish_a_draw() -> Published {
    let event = lineup_tests::fresh_event();
    let seed = DrawSeed::generate();
    let now = SystemTime::now();
    let entrants = (0..ENTRANTS).map(|n| seed.entrant(&lineup_tests::customer(n)));
    let drawn = draw::numbers(&seed, entrants);
    let (summary, chunks) = draw::publish(&drawn, &event, &seed, now);
    let records = lineup_tests::records().await;
    records
        .publish_draw(&event, &summary, &chunks)
        .await
        .expect("publish the draw");
    write_status(&event, &seed, now, ENTRANTS as u64).await;
    let base = serve_public_routes(lineup_tests::public_api(records)).await;
    Published {
        event,
        seed,
        summary,
        chunks,
        base,
    }
}

/// The status the admit tick publishes once the draw is out: the commitment, the revealed seed,
/// `entrants` in the closed pre-queue.
async fn write_status(event: &EventId, seed: &DrawSeed, now: SystemTime, entrants: u64) {
    let status = StatusInputs {
        state: QueueState::Open,
        closed_reason: None,
        opens_at: now - Duration::from_secs(10),
        serving: 0,
        measured_advance: None,
        configured_rate: 50,
        last_number: ENTRANTS as u64,
        waiting: ENTRANTS as u64,
        claim_window: Duration::from_secs(60),
        seats_left: None,
        commitment: seed.commitment(),
        entrants: Some(entrants),
        revealed_seed: Some(seed.reveal().to_owned()),
        restored_at: None,
        pre_queue: None,
        edge_budget: lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND,
        first_call_at: None,
        pace: None,
    }
    .status(event.as_str(), now);
    let json = serde_json::to_string(&status).expect("a status serialises");
    let () = redis::cmd("SET")
        .arg(EventKeys::new(event).status)
        .arg(json)
        .arg("EX")
        .arg(600)
        .query_async(&mut lineup_tests::redis().await)
        .await
        .expect("SET the status");
}

/// `lineup verify-draw --event <event> --base <base> [--commitment <commitment>]`.
async fn verify(
    published: &Published,
    commitment: Option<String>,
) -> Result<DrawCheck, VerifyDrawError> {
    verify_draw::run(&VerifyDrawArgs {
        event: published.event.as_str().to_owned(),
        base: published.base.clone(),
        commitment,
        chunks_per_second: 1_000,
    })
    .await
}

#[tokio::test]
async fn a_published_draw_checks_out_against_the_saved_or_the_current_commitment() {
    let published = publish_a_draw().await;
    assert_eq!(published.summary.entrants, ENTRANTS as u64);
    assert_eq!(published.chunks.len(), 16);

    let saved = published.seed.commitment();
    let outcome = verify(&published, Some(saved.clone())).await;
    assert_eq!(Verdict::of(&outcome), Verdict::ChecksOut, "{outcome:?}");
    assert_eq!(Verdict::of(&outcome).exit_code(), 0);
    let check = outcome.expect("checked");
    assert_eq!(check.mismatches, vec![]);
    assert_eq!(check.summary, published.summary, "read as published");
    assert_eq!(check.chunks, 16, "every chunk was read");
    assert_eq!(check.committed, CommittedBy::Saved(saved.clone()));
    assert!(check.report().contains("OK: "), "{}", check.report());

    // Without --commitment: the status's, and the report says so.
    let check = verify(&published, None).await.expect("checked");
    assert_eq!(check.mismatches, vec![]);
    assert_eq!(check.committed, CommittedBy::CurrentStatus(saved));
    assert!(
        check.report().contains("(read from the current status)"),
        "{}",
        check.report()
    );
}

#[tokio::test]
async fn two_numbers_swapped_in_a_stored_chunk_are_exactly_two_mismatches() {
    let published = publish_a_draw().await;
    let mut tampered = published
        .chunks
        .iter()
        .find(|chunk| chunk.entries.len() >= 2)
        .expect("1,000 entrants in 16 chunks")
        .clone();
    let (first, second) = (tampered.entries[0].clone(), tampered.entries[1].clone());
    tampered.entries[0].1 = second.1;
    tampered.entries[1].1 = first.1;
    // Overwrites the stored chunk (as whoever can write the table could); the others stay.
    lineup_tests::records()
        .await
        .publish_chunks(&published.event, &[tampered])
        .await
        .expect("overwrite the chunk");

    let outcome = verify(&published, Some(published.seed.commitment())).await;
    assert_eq!(Verdict::of(&outcome), Verdict::Mismatches, "{outcome:?}");
    assert_eq!(Verdict::of(&outcome).exit_code(), 1);
    let check = outcome.expect("checked");
    // Entries are sorted by entrant, and so are the mismatches.
    assert_eq!(
        check.mismatches,
        vec![
            DrawMismatch::WrongNumber {
                entrant: first.0,
                published: second.1,
                computed: first.1,
            },
            DrawMismatch::WrongNumber {
                entrant: second.0,
                published: first.1,
                computed: second.1,
            },
        ]
    );
    assert!(
        check.report().contains("FAILED: 2 mismatches"),
        "{}",
        check.report()
    );
}

#[tokio::test]
async fn a_commitment_other_than_the_draws_is_caught() {
    let published = publish_a_draw().await;
    let another = DrawSeed::generate().commitment();
    let outcome = verify(&published, Some(another)).await;
    assert_eq!(Verdict::of(&outcome), Verdict::Mismatches, "{outcome:?}");
    assert_eq!(Verdict::of(&outcome).exit_code(), 1);
    assert_eq!(
        outcome.expect("checked").mismatches,
        vec![DrawMismatch::CommitmentChanged]
    );
}

#[tokio::test]
async fn a_draw_not_published_cannot_be_checked() {
    let base = serve_public_routes(lineup_tests::public_api(lineup_tests::records().await)).await;
    let outcome = verify_draw::run(&VerifyDrawArgs {
        event: lineup_tests::fresh_event().as_str().to_owned(),
        base,
        commitment: None,
        chunks_per_second: 1_000,
    })
    .await;
    assert_eq!(Verdict::of(&outcome).exit_code(), 2);
    assert!(
        matches!(outcome, Err(VerifyDrawError::NotPublished { .. })),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_status_that_counts_other_entrants_than_the_published_draw_fails_the_check() {
    let published = publish_a_draw().await;
    // The pre-queue closed with one more entrant than the published draw numbers.
    write_status(
        &published.event,
        &published.seed,
        SystemTime::now(),
        ENTRANTS as u64 + 1,
    )
    .await;
    let outcome = verify(&published, Some(published.seed.commitment())).await;
    assert_eq!(Verdict::of(&outcome), Verdict::Mismatches, "{outcome:?}");
    assert_eq!(Verdict::of(&outcome).exit_code(), 1);
    let check = outcome.expect("checked");
    assert_eq!(
        check.mismatches,
        vec![DrawMismatch::StatusCountMismatch {
            status: ENTRANTS as u64 + 1,
            published: ENTRANTS as u64,
        }]
    );
    assert!(
        check.report().contains(
            "the status counts 1001 entrants in the closed pre-queue, the draw numbers 1000"
        ),
        "{}",
        check.report()
    );
}

#[tokio::test]
async fn a_published_draw_is_written_once_and_never_replaced_by_another() {
    let published = publish_a_draw().await;
    let records = lineup_tests::records().await;
    let stored = || async {
        records
            .draw_summary(&published.event)
            .await
            .expect("read the summary")
            .expect("published")
    };

    // The same draw again, later (a tick that failed after publishing, run again): nothing
    // changes, not even the publication time.
    let (again, chunks) = draw::publish(
        &draw::numbers(
            &published.seed,
            (0..ENTRANTS).map(|n| published.seed.entrant(&lineup_tests::customer(n))),
        ),
        &published.event,
        &published.seed,
        SystemTime::now() + Duration::from_secs(90),
    );
    assert_ne!(again.published_at, published.summary.published_at);
    assert_eq!(
        records
            .publish_summary(&published.event, &again)
            .await
            .expect("republish"),
        DrawPublished::AlreadyPublished
    );
    assert_eq!(
        records
            .publish_draw(&published.event, &again, &chunks)
            .await
            .expect("republish"),
        DrawPublished::AlreadyPublished
    );
    assert_eq!(stored().await, published.summary);

    // Another draw (the entrant list lost with the cache, drawn empty; or one entrant fewer):
    // refused by DynamoDB's condition, the published one returned and kept.
    for entrants in [0, ENTRANTS - 1] {
        let (other, other_chunks) = draw::publish(
            &draw::numbers(
                &published.seed,
                (0..entrants).map(|n| published.seed.entrant(&lineup_tests::customer(n))),
            ),
            &published.event,
            &published.seed,
            SystemTime::now(),
        );
        assert_eq!(
            records
                .publish_summary(&published.event, &other)
                .await
                .expect("a refusal is an answer"),
            DrawPublished::Conflict(Box::new(published.summary.clone()))
        );
        assert_eq!(
            records
                .publish_draw(&published.event, &other, &other_chunks)
                .await
                .expect("a refusal is an answer"),
            DrawPublished::Conflict(Box::new(published.summary.clone()))
        );
    }
    assert_eq!(stored().await, published.summary);
    let outcome = verify(&published, Some(published.seed.commitment())).await;
    assert_eq!(Verdict::of(&outcome), Verdict::ChecksOut, "{outcome:?}");
}

#[tokio::test]
async fn the_opening_cannot_move_once_the_pre_queue_has_entrants() {
    use lineup::application::ports::event_records::EventRecords;
    use lineup::application::ports::queue::{EventSettingsStore, WaitingLine};
    use lineup_cli::event_admin::{AdminError, EventAdmin, SettingsChange};

    let queue = lineup_tests::queue();
    let records = lineup_tests::records().await;
    let admin = EventAdmin::new(queue.as_ref(), records.as_ref(), "a test");
    let event = lineup_tests::fresh_event();
    let now = SystemTime::now();
    let opening = |at: SystemTime| SettingsChange {
        opens_at: Some(lineup_cli::event_admin::OpensAt::At(at)),
        ..SettingsChange::default()
    };
    let first = now + Duration::from_secs(600);
    admin
        .open(&event, &opening(first), now)
        .await
        .expect("open");
    // Nobody in the pre-queue yet: the opening may move.
    let moved = now + Duration::from_secs(1_200);
    admin
        .set(&event, &opening(moved), now)
        .await
        .expect("move the opening");

    queue
        .join(&event, &lineup_tests::customer(1), now)
        .await
        .expect("join the pre-queue");
    for refused in [
        admin
            .set(&event, &opening(now + Duration::from_secs(300)), now)
            .await,
        admin
            .open(&event, &opening(now + Duration::from_secs(1_800)), now)
            .await,
    ] {
        assert!(
            matches!(refused, Err(AdminError::OpeningFixed { entrants: 1, .. })),
            "{refused:?}"
        );
    }
    let record = records.event(&event).await.unwrap().expect("a record");
    assert_eq!(
        lineup::domain::clock::unix_millis(record.settings.opens_at),
        lineup::domain::clock::unix_millis(moved),
        "nothing was saved"
    );
    let cached = queue.settings(&event).await.unwrap().expect("in the cache");
    assert_eq!(
        lineup::domain::clock::unix_millis(cached.opens_at),
        lineup::domain::clock::unix_millis(moved)
    );
    // The same opening, or any other change, still goes through.
    let kept = admin
        .set(
            &event,
            &SettingsChange {
                rate: Some(9),
                ..opening(moved)
            },
            now,
        )
        .await
        .expect("the same opening");
    assert_eq!(kept.admit_per_second, 9);
}
