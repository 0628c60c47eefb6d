//! Arbitrary bytes as /proc/stat: never panics; what parses is within the wire's capacities.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::proc_stat::{ProcStat, parse_stat};

fuzz_target!(|data: &[u8]| {
    let mut st = ProcStat::default();
    if parse_stat(data, &mut st).is_ok() {
        assert!(st.total.is_some());
        assert!(st.cpus.iter().all(|c| (c.0 as usize) < 256), "MAX_CPUS");
    }
});
