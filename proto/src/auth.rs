//! HMAC-SHA256 challenge-response over the shared token: the token never crosses the wire.
//!
//! The agent sends a fresh random `agent_nonce`; the collector answers with its own
//! `client_nonce` and `HMAC(token, CLIENT_LABEL || agent_nonce || client_nonce)`; the agent
//! checks it in constant time and proves itself back with the same over `AGENT_LABEL`. A
//! captured handshake cannot be replayed: the next connection gets a new agent nonce.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Domain label of the collector's proof.
pub const CLIENT_LABEL: &[u8] = b"nasprobe-client-v1";
/// Domain label of the agent's proof.
pub const AGENT_LABEL: &[u8] = b"nasprobe-agent-v1";

fn mac(token: &[u8], label: &[u8], agent_nonce: &[u8; 32], client_nonce: &[u8; 32]) -> [u8; 32] {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(token).unwrap_or_else(|_| unreachable!());
    m.update(label);
    m.update(agent_nonce);
    m.update(client_nonce);
    m.finalize().into_bytes().into()
}

/// The collector's proof of the token.
pub fn client_proof(token: &[u8], agent_nonce: &[u8; 32], client_nonce: &[u8; 32]) -> [u8; 32] {
    mac(token, CLIENT_LABEL, agent_nonce, client_nonce)
}

/// The agent's proof of the token.
pub fn agent_proof(token: &[u8], agent_nonce: &[u8; 32], client_nonce: &[u8; 32]) -> [u8; 32] {
    mac(token, AGENT_LABEL, agent_nonce, client_nonce)
}

/// Constant-time comparison of two proofs.
pub fn proofs_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_differ_by_side_nonce_and_token() {
        let a = [1u8; 32];
        let c = [2u8; 32];
        let p = client_proof(b"token", &a, &c);
        assert_eq!(p, client_proof(b"token", &a, &c));
        assert!(!proofs_equal(&p, &agent_proof(b"token", &a, &c)));
        assert!(!proofs_equal(&p, &client_proof(b"tokem", &a, &c)));
        assert!(!proofs_equal(&p, &client_proof(b"token", &c, &a)));
    }

    #[test]
    fn rfc4231_case_2() {
        // HMAC-SHA256 with key "Jefe" over "what do ya want for nothing?" (RFC 4231, 4.3).
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        let out: [u8; 32] = m.finalize().into_bytes().into();
        assert_eq!(out[..8], [0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e]);
    }
}
