//! The keys and the opening bytes of `nasprobe test net`'s TCP streams, so that a sending agent
//! talks only to the receiving agent of this run, and the receiver counts only its sender.
//!
//! ```text
//! run key     = HMAC-SHA256(receiver's session key, RUN_KEY_LABEL)
//! sealed key  = run key XOR HMAC-SHA256(sender's session key, SEAL_LABEL)   (in NetSendRun)
//! receiver →  challenge (16 random bytes) || BLAKE2s-128(run key, RX_LABEL || challenge)
//! sender   →  run || stream || BLAKE2s-128(run key, TX_LABEL || challenge || run || stream)
//! ```
//!
//! The receiver's session key is the one of the collector's connection to it (the one that
//! carried `NetReceiveRun` and its `TestReady`), so only that collector and that agent know the
//! run key; the collector hands it to the sender sealed with the sender's session key (the
//! traffic is authenticated, not encrypted: a sniffer sees neither key). The receiver speaks
//! first on every stream: the sender sends nothing at all until the peer proved the run key, so
//! a sender aimed at any other service (Redis, memcached, SSH) writes it no byte. The header's
//! MAC covers the receiver's fresh challenge: a header seen on the wire cannot open another
//! stream. The MACs are those of the sealed frames ([`crate::session`]): HMAC-SHA256 for keys,
//! keyed BLAKE2s-128 for the per-stream proofs.

use blake2::Blake2sMac;
use blake2::digest::consts::U16;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::session::MAC_LEN;

/// Domain label of the run key.
pub const RUN_KEY_LABEL: &[u8] = b"nasprobe-test-run-v1";
/// Domain label of the pad that seals the run key for the sender.
pub const SEAL_LABEL: &[u8] = b"nasprobe-test-seal-v1";
/// Domain label of the receiver's proof.
pub const RX_LABEL: &[u8] = b"nasprobe-test-rx";
/// Domain label of the sender's stream header.
pub const TX_LABEL: &[u8] = b"nasprobe-test-tx";
/// The receiver's random challenge on one stream.
pub const CHALLENGE_LEN: usize = 16;
/// What the receiver sends first: challenge and proof.
pub const RECEIVER_HELLO_LEN: usize = CHALLENGE_LEN + MAC_LEN;
/// What the sender answers: run, stream, MAC.
pub const STREAM_HEADER_LEN: usize = 2 + MAC_LEN;

fn hmac(key: &[u8], label: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    m.update(label);
    m.finalize().into_bytes().into()
}

fn blake(key: &[u8; 32], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    // A 32-byte key is what BLAKE2s takes; new_from_slice cannot fail for it.
    let mut m =
        <Blake2sMac<U16> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

fn equal(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() != b.len()) as u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    diff == 0
}

/// The run key of the test a receiver announced on the session of `receiver_session_key`.
pub fn run_key(receiver_session_key: &[u8; 32]) -> [u8; 32] {
    hmac(receiver_session_key, RUN_KEY_LABEL)
}

/// Seals (or opens: the same XOR) `run_key` for the sender of the session
/// `sender_session_key`.
pub fn seal_run_key(sender_session_key: &[u8; 32], run_key: &[u8; 32]) -> [u8; 32] {
    let pad = hmac(sender_session_key, SEAL_LABEL);
    let mut out = [0u8; 32];
    for i in 0..32 {
        out[i] = run_key[i] ^ pad[i];
    }
    out
}

/// What the receiver sends first on a stream, for its fresh random `challenge`.
pub fn receiver_hello(
    run_key: &[u8; 32],
    challenge: &[u8; CHALLENGE_LEN],
) -> [u8; RECEIVER_HELLO_LEN] {
    let mut out = [0u8; RECEIVER_HELLO_LEN];
    out[..CHALLENGE_LEN].copy_from_slice(challenge);
    out[CHALLENGE_LEN..].copy_from_slice(&blake(run_key, &[RX_LABEL, challenge]));
    out
}

/// The challenge of a receiver's hello, when it proves `run_key`.
pub fn check_receiver_hello(
    run_key: &[u8; 32],
    hello: &[u8; RECEIVER_HELLO_LEN],
) -> Option<[u8; CHALLENGE_LEN]> {
    let mut challenge = [0u8; CHALLENGE_LEN];
    challenge.copy_from_slice(&hello[..CHALLENGE_LEN]);
    let want = blake(run_key, &[RX_LABEL, &challenge]);
    equal(&want, &hello[CHALLENGE_LEN..]).then_some(challenge)
}

/// The sender's header of stream `stream` of run `run`, answering `challenge`.
pub fn stream_header(
    run_key: &[u8; 32],
    challenge: &[u8; CHALLENGE_LEN],
    run: u8,
    stream: u8,
) -> [u8; STREAM_HEADER_LEN] {
    let mut out = [0u8; STREAM_HEADER_LEN];
    out[0] = run;
    out[1] = stream;
    out[2..].copy_from_slice(&blake(run_key, &[TX_LABEL, challenge, &[run, stream]]));
    out
}

/// (run, stream) of a sender's header, when its MAC is right for `challenge`.
pub fn check_stream_header(
    run_key: &[u8; 32],
    challenge: &[u8; CHALLENGE_LEN],
    header: &[u8; STREAM_HEADER_LEN],
) -> Option<(u8, u8)> {
    let (run, stream) = (header[0], header[1]);
    let want = blake(run_key, &[TX_LABEL, challenge, &[run, stream]]);
    equal(&want, &header[2..]).then_some((run, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_key_opens_its_streams_only() {
        let key = run_key(&[3; 32]);
        let other = run_key(&[4; 32]);
        assert_ne!(key, other);
        let sealed = seal_run_key(&[9; 32], &key);
        assert_ne!(sealed, key, "the wire never carries the run key");
        assert_eq!(seal_run_key(&[9; 32], &sealed), key);
        assert_ne!(seal_run_key(&[8; 32], &sealed), key);

        let hello = receiver_hello(&key, &[7; 16]);
        assert_eq!(check_receiver_hello(&key, &hello), Some([7; 16]));
        assert_eq!(check_receiver_hello(&other, &hello), None);
        let mut bent = hello;
        bent[0] ^= 1;
        assert_eq!(check_receiver_hello(&key, &bent), None);

        let h = stream_header(&key, &[7; 16], 1, 3);
        assert_eq!(check_stream_header(&key, &[7; 16], &h), Some((1, 3)));
        assert_eq!(
            check_stream_header(&key, &[6; 16], &h),
            None,
            "another challenge"
        );
        assert_eq!(check_stream_header(&other, &[7; 16], &h), None);
        let mut bent = h;
        bent[1] = 4;
        assert_eq!(
            check_stream_header(&key, &[7; 16], &bent),
            None,
            "another stream"
        );
    }
}
