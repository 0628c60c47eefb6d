//! Arbitrary bytes as /proc/meminfo and /proc/vmstat: never panics; the MemAvailable estimate
//! never exceeds MemTotal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::meminfo::{estimate_available, parse_meminfo};
use nasprobe_agent::parse::vmstat::parse_vmstat;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = parse_meminfo(data) {
        for min_free in [None, Some(0), Some(4096), Some(u32::MAX as u64)] {
            if let (Some(a), Some(t)) = (estimate_available(&m, min_free), m.total) {
                assert!(a <= t);
            }
        }
    }
    let _ = parse_vmstat(data);
});
