//! Arbitrary bytes as /proc/PID/fdinfo/N and /proc/PID/io: never panics; an accepted access
//! mode is one of the three the kernel has.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::fdinfo::{access, parse_fdinfo};
use nasprobe_agent::parse::pid_io::parse_pid_io;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = parse_fdinfo(data) {
        assert_eq!(access(f.flags).is_some(), f.flags & 3 != 3);
    }
    let _ = parse_pid_io(data);
});
