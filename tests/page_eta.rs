//! The waiting-room page computes each customer's ETA (`web/status.js`'s `etaRange`) with the
//! arithmetic of `wait_forecast` (`EventStatus::eta_range_at`), step by step the same: this runs
//! the page's code in node on statuses the Rust model made (with and without the forecast of
//! the slots, cap- and rate-limited, early and late in a sale) and checks each figure.

use std::time::{Duration, SystemTime};

use lineup::domain::event_settings::QueueState;
use lineup::domain::status::StatusInputs;
use lineup::domain::wait_forecast::{PaceCounters, PaceWindows, WINDOWS};
use serde_json::json;

/// The repository's root (the tests crate is one level down).
fn repository() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_owned()
}

/// A sale `seconds` into admission, drawn from `seed` (a small linear congruential generator:
/// the same cases every run).
fn counters(seed: u64, seconds: u64, windows: bool) -> PaceCounters {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % below.max(1)
    };
    let max_active = 10 + next(400);
    let in_use = next(max_active + 1);
    let admitted = in_use + 20 + next(5_000);
    let freed = admitted - in_use;
    let session = Duration::from_secs(60 + next(600));
    let ended = next(freed / 4 + 1);
    let mut held = [0; WINDOWS];
    let mut admitted_by_window = [0; WINDOWS];
    let mut left = in_use;
    for j in 0..WINDOWS {
        held[j] = if j == WINDOWS - 1 {
            left
        } else {
            next(left + 1)
        };
        left -= held[j];
        admitted_by_window[j] = held[j] + next(50);
    }
    PaceCounters {
        max_active,
        in_use,
        admitted,
        freed,
        slot_ms: (freed as f64 * (5.0 + next(60) as f64) + ended as f64 * session.as_secs_f64())
            * 1_000.0,
        no_shows: next(admitted / 10 + 1),
        numbers: admitted + next(admitted / 5 + 1),
        seats_base: None,
        observed: Duration::from_secs(seconds),
        session,
        ended,
        windows: windows.then(|| PaceWindows {
            width: session / 8,
            into_newest: (session / 8).mul_f64(next(1_000) as f64 / 1_000.0),
            held,
            admitted: admitted_by_window,
        }),
    }
}

#[test]
fn the_page_computes_the_eta_range_as_the_rust_model_does() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_320_800);
    let mut cases = Vec::new();
    let mut forecasts = 0;
    for seed in 0..40u64 {
        let pace = counters(seed, 10 + seed * 17, seed % 4 != 0);
        let inputs = StatusInputs {
            state: QueueState::Open,
            closed_reason: None,
            opens_at: now - Duration::from_secs(600),
            serving: 1_000,
            measured_advance: Some(3.0),
            configured_rate: [5, 50, 500][(seed % 3) as usize],
            last_number: 100_000,
            waiting: 5_000,
            claim_window: Duration::from_secs(60),
            seats_left: None,
            commitment: "c".repeat(64),
            entrants: None,
            revealed_seed: None,
            restored_at: None,
            pre_queue: None,
            edge_budget: 125_000,
            first_call_at: None,
            pace: (seed % 10 != 9).then_some(pace),
        };
        let status = inputs.status("gala", now);
        forecasts += usize::from(status.pace.is_some_and(|p| p.held_to_deadline.is_some()));
        for distance in [1, 7, 40, 333, 2_500, 40_000] {
            let number = status.serving_up_to + distance;
            let range = status.eta_range_at(number, now);
            cases.push(json!({
                "status": status,
                "number": number,
                "nowMs": lineup::domain::clock::unix_millis(now),
                "expected": {
                    "earliest": range.earliest.as_secs_f64(),
                    "likely": range.likely.as_secs_f64(),
                    "latest": range.latest.as_secs_f64(),
                },
            }));
        }
    }
    assert!(
        forecasts >= 20,
        "most cases have a forecast of the slots: {forecasts}"
    );
    let file = std::env::temp_dir().join(format!("lineup-eta-cases-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_string(&cases).unwrap()).unwrap();
    let ran = std::process::Command::new("node")
        .args(["--test", "tests/web/eta.test.mjs"])
        .env("ETA_CASES", &file)
        .current_dir(repository())
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run node (the browser test's runtime, needed here too): {error}")
        });
    let _ = std::fs::remove_file(&file);
    let report = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success() && report.contains("# pass 3\n"),
        "node --test tests/web/eta.test.mjs failed:\n{report}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}
