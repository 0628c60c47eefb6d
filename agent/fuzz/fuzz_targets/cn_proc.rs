//! Arbitrary bytes as a process connector datagram: never panics, never loops; an exit's
//! wait status splits into either a code or a signal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::cn_proc::{ExitCode, ProcEvent, messages};

fuzz_target!(|data: &[u8]| {
    let mut n = 0;
    for m in messages(data) {
        n += 1;
        assert!(n <= data.len() / 16 + 1);
        if let Ok(ProcEvent::Exit { exit_code, .. }) = m {
            let c = ExitCode::from_wait_status(exit_code);
            assert!(c.code.is_some() != c.signal.is_some());
        }
    }
});
