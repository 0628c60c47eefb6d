//! Arbitrary bytes as a sock_diag dump, a /proc/net/tcp file and an fd link: never panics; a
//! dump ends at its first Done or error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::proc_net_tcp::{proc_net_tcp, socket_inode};
use nasprobe_agent::parse::sock_diag::{DiagItem, dump_messages};

fuzz_target!(|data: &[u8]| {
    let mut ended = false;
    for m in dump_messages(data) {
        assert!(!ended, "a message after the end of the dump");
        ended = matches!(m, Ok(DiagItem::Done | DiagItem::Error(_)) | Err(_));
    }
    // Every line gives a result: the iterator is bounded by the lines.
    let n = proc_net_tcp(data).count();
    assert!(n <= data.iter().filter(|&&b| b == b'\n').count() + 1);
    let _ = socket_inode(data);
});
