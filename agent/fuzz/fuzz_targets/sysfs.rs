//! Arbitrary bytes as the small sysfs/procfs value files: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::sysfs::*;

fuzz_target!(|data: &[u8]| {
    let _ = parse_num(data);
    let _ = parse_bool(data);
    let _ = parse_speed(data);
    let _ = parse_duplex(data);
    let _ = parse_operstate(data);
    let _ = parse_word(data);
    let _ = words(data).count();
    let _ = parse_uptime_ms(data);
    let _ = parse_statm_resident(data);
});
