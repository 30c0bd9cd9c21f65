//! The waiting-room page reads the status and fetches its draw chunk by the policy of
//! `shared/src/domain/wait_policy.rs`, with its numbers written again in JavaScript
//! (`web/status.js`, `web/config.js`): this checks each is the same, so the page and the policy
//! the capacity plan and `lineup simulate` assume cannot drift apart.

use lineup::domain::wait_policy;

/// The number a page module exports as `export const NAME = <number>;`.
fn exported(module: &str, name: &str) -> f64 {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../web")
        .join(module);
    let source = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    let prefix = format!("export const {name} = ");
    let line = source
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("web/{module} exports no {name}"));
    let value = line.split(';').next().unwrap_or_default().trim();
    value
        .parse()
        .unwrap_or_else(|_| panic!("web/{module}: {name} = {value} is not a number"))
}

#[test]
fn the_page_reads_by_the_wait_policys_numbers() {
    assert_eq!(
        exported("config.js", "DEFAULT_POLL_S"),
        wait_policy::MIN_STATUS_INTERVAL.as_secs_f64()
    );
    assert_eq!(
        exported("config.js", "MAX_STATUS_READ_S"),
        wait_policy::MAX_STATUS_INTERVAL.as_secs_f64()
    );
    assert_eq!(
        exported("status.js", "READ_JITTER"),
        wait_policy::STATUS_READ_JITTER
    );
    assert_eq!(
        exported("status.js", "OPENING_READ_SPREAD_S"),
        wait_policy::OPENING_READ_SPREAD.as_secs_f64()
    );
    assert_eq!(
        exported("status.js", "MIN_PRE_QUEUE_READ_S"),
        wait_policy::MIN_PRE_QUEUE_INTERVAL.as_secs_f64()
    );
    assert_eq!(
        exported("status.js", "CHUNK_FETCH_SHARE_OF_CLAIM_WINDOW"),
        f64::from(wait_policy::CHUNK_FETCH_SHARE_OF_CLAIM_WINDOW)
    );
    assert_eq!(
        exported("status.js", "MAX_CHUNK_FETCH_WINDOW_S"),
        wait_policy::MAX_CHUNK_FETCH_WINDOW.as_secs_f64()
    );
    assert_eq!(
        exported("status.js", "MAX_OPENING_READ_SPREAD_S"),
        wait_policy::MAX_OPENING_READ_SPREAD.as_secs_f64()
    );
    // The ETA range and the "likely sold out" margin (`web/status.js`'s `etaRange`,
    // `likelySoldOut`, as `wait_forecast`).
    assert_eq!(
        exported("status.js", "ETA_RANGE_SHARE"),
        lineup::domain::wait_forecast::ETA_RANGE_SHARE
    );
    assert_eq!(
        exported("status.js", "SOLD_OUT_MARGIN"),
        lineup::domain::wait_forecast::SOLD_OUT_MARGIN
    );
}
