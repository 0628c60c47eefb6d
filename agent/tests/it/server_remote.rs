//! Reads samples from an agent that runs elsewhere (the one `tests/e2e/agent_deploy.sh`
//! deployed over ssh). Without `NASPROBE_REMOTE_ADDR` it has nothing to do and passes.
//!
//!     NASPROBE_REMOTE_ADDR=127.0.0.1:7451 NASPROBE_REMOTE_TOKEN_FILE=e2e.token \
//!         cargo test -p nasprobe-agent --test it server_remote::

use crate::server_common::*;
use nasprobe_proto::RecordBody;

#[test]
fn remote_agent_serves_samples() {
    let Some(addr) = std::env::var_os("NASPROBE_REMOTE_ADDR") else {
        eprintln!("NASPROBE_REMOTE_ADDR not set: nothing to check");
        return;
    };
    big_stack(move || {
        let addr = addr
            .to_str()
            .unwrap()
            .parse()
            .expect("NASPROBE_REMOTE_ADDR is ADDR:PORT");
        let file = std::env::var("NASPROBE_REMOTE_TOKEN_FILE").expect("NASPROBE_REMOTE_TOKEN_FILE");
        let token = std::fs::read(&file).unwrap().trim_ascii().to_vec();
        let mut c = Conn::connect(addr);
        let hello = c
            .handshake(&token)
            .expect("handshake with the deployed agent");
        assert!(hello.oldest_seq >= 1);
        c.resume(0, 0);
        // Everything held, then live: contiguous from the oldest held, with samples in it.
        let first = match c.recv().expect("first frame after Resume") {
            // A ring that no longer starts at 1 says so first.
            nasprobe_proto::Message::Gone(_) => c.record(),
            nasprobe_proto::Message::Record(r) => r,
            m => panic!("unexpected {m:?}"),
        };
        let recs = read_contiguous(&mut c, first.seq + 1, hello.newest_seq.max(first.seq) + 5);
        let samples = recs
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Sample(_)))
            .count();
        assert!(samples >= 5, "{samples} samples");
        eprintln!(
            "remote agent {} ({}, {}): {} records read, last seq {}",
            hello.host_name,
            hello.arch,
            hello.kernel_release,
            recs.len() + 1,
            recs.last().unwrap().seq
        );
    });
}
