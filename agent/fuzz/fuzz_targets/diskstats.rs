//! Arbitrary bytes as /proc/diskstats: never panics; a partition's parent is a prefix of its name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::diskstats::{diskstats, partition_parent};

fuzz_target!(|data: &[u8]| {
    for d in diskstats(data).flatten() {
        if let Some(p) = partition_parent(d.name) {
            assert!(d.name.starts_with(p) && p.len() < d.name.len());
        }
    }
});
