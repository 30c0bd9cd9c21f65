//! The integration tests: one test binary, whose modules are every `tests/*.rs` file (found by
//! `build.rs`, so a new file runs without being registered). They share one process, so a test
//! may not change the process's environment (`std::env::set_var`), rely on a fixed port or on
//! Redis keys outside its own fresh event (see `lineup_tests::fresh_event`), or assume it runs
//! alone; `lineup_tests::logs()` is safe to call from any of them.

include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The modules compiled in are exactly the directory's test files now (a stale build-script
/// output would show here, not as a file that silently never runs).
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .expect("read the tests directory")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".rs") && !NOT_MODULES.contains(&name.as_str()))
        .collect();
    found.sort();
    assert_eq!(found, MODULE_FILES, "the test files in {}", dir.display());
}
