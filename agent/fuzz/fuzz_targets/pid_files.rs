//! Arbitrary bytes as /proc/PID/stat, schedstat and cmdline: never panics; a parsed comm lies
//! inside the input; a formatted command line respects its byte limit and masks every
//! `password=` value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::cmdline::{DEFAULT_REDACT, format_cmdline};
use nasprobe_agent::parse::pid_stat::parse_pid_stat;
use nasprobe_agent::parse::schedstat::parse_schedstat;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = parse_pid_stat(data) {
        assert!(p.comm().len() <= data.len());
    }
    let _ = parse_schedstat(data);
    let max = data.first().map_or(256, |&b| b as usize + 1);
    let mut out = heapless::String::<256>::new();
    format_cmdline(data, DEFAULT_REDACT.iter().copied(), max, &mut out);
    assert!(out.len() <= max.min(256));
    // Whatever follows "password=" in the output is the mask (or the output was cut there).
    let lower = out.to_ascii_lowercase();
    for (i, _) in lower.match_indices("password=") {
        let rest = &out[i + 9..];
        assert!(
            rest.is_empty() || rest.starts_with('*'),
            "unmasked: {out:?}"
        );
    }
});
