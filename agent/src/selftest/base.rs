//! What the tests share: their time budget, clock and the `Failed` result.

use std::time::Duration;

use nasprobe_proto::TestResult;

/// A test's whole budget: the "at most 60 s".
pub(crate) const MAX_TEST_TIME: Duration = Duration::from_secs(60);

pub(super) fn failed(why: &str) -> TestResult {
    TestResult::Failed(bounded(why))
}

pub(super) fn bounded<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

pub(super) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(super) fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}
