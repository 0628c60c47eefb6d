//! Tests that cannot run where they are: said once, counted by `scripts/test`, and failed under
//! CI (`CI=true`), where every tool the suite needs must be installed.
//!
//! A skip is appended as one line to the file named by `NASPROBE_SKIP_LOG` (scripts/test sets
//! it and prints every skip in its summary) and printed on stderr.

use std::io::Write;

/// Whether this run is CI's (`CI=true`, as CI sets it).
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

fn record(test: &str, why: &str) {
    eprintln!("{test}: SKIPPED: {why}");
    if let Some(path) = std::env::var_os("NASPROBE_SKIP_LOG") {
        let line = format!("{test}: {why}\n");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        if let Err(e) = f.and_then(|mut f| f.write_all(line.as_bytes())) {
            eprintln!("{test}: cannot note the skip in {}: {e}", path.display());
        }
    }
}

/// `test` cannot run because something it needs is missing (a tool, root): under CI this panics
/// (the test fails); elsewhere the skip is recorded and the caller returns.
pub fn missing(test: &str, what: &str) {
    assert!(
        !in_ci(),
        "{test}: {what} (CI=true: a missing tool fails the test)"
    );
    record(test, what);
}
