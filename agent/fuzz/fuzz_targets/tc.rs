//! Arbitrary bytes as an rtnetlink traffic-control dump (qdiscs, classes and filters): never
//! panics; a dump ends at its first Done or error, and every cap and port read is what the
//! bytes can hold (a u32 key of 16 bytes gives at most two ports).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::tc::{TcItem, dump_messages};

fuzz_target!(|data: &[u8]| {
    let mut ended = false;
    let mut ports = 0usize;
    for m in dump_messages(data) {
        assert!(!ended, "a message after the end of the dump");
        ended = matches!(m, Ok(TcItem::Done | TcItem::Error(_)) | Err(_));
        if let Ok(TcItem::Filter(f)) = m {
            ports += f.ports.len() + usize::from(f.more_ports);
        }
    }
    assert!(
        ports <= data.len() / 16 * 2,
        "{ports} ports from {} bytes",
        data.len()
    );
});
