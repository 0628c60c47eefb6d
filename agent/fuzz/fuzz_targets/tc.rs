//! Arbitrary bytes as an rtnetlink traffic-control dump (qdiscs and classes): never panics; a
//! dump ends at its first Done or error, and every cap read is what the bytes can hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::tc::{TcItem, dump_messages};

fuzz_target!(|data: &[u8]| {
    let mut ended = false;
    for m in dump_messages(data) {
        assert!(!ended, "a message after the end of the dump");
        ended = matches!(m, Ok(TcItem::Done | TcItem::Error(_)) | Err(_));
    }
});
