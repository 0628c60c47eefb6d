//! Per-frame authentication after the handshake: a session key from the token and both nonces,
//! and a 16-byte MAC over (direction, frame counter, frame bytes) after every frame.
//!
//! ```text
//! session key = HMAC-SHA256(token, SESSION_LABEL || PROTOCOL_VERSION || agent_nonce || client_nonce)
//! frame MAC   = BLAKE2s-128(key = session key, direction || counter (u64 LE) || frame)
//! ```
//!
//! The frame MAC is keyed BLAKE2s with a 16-byte output (RFC 7693) rather than HMAC-SHA256
//! truncated: on the armv7 NAS (no SHA instructions) HMAC-SHA256 of a 256-byte frame costs
//! ~17,000 instructions, 6 % of a 1 Hz sample; BLAKE2s is a third of that (BENCHMARKS.md).
//!
//! `frame` is the whole frame as sent (length prefix included); the MAC follows it on the wire
//! and is not counted in the length prefix. The agent seals every frame after `AuthOk`, the
//! collector every frame after `Auth`; each direction counts its frames from 0. The counter is
//! not sent: the receiver expects the next one, so a frame altered, dropped, replayed, injected
//! or reordered fails the check, which runs before the body is decoded. The token never
//! crosses the wire; the traffic is not encrypted (docs/security.md says why).

use blake2::Blake2sMac;
use blake2::digest::consts::U16;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::PROTOCOL_VERSION;

/// Bytes of the MAC after each frame (BLAKE2s-128).
pub const MAC_LEN: usize = 16;

/// Domain label of the session key derivation.
pub const SESSION_LABEL: &[u8] = b"nasprobe-session";

/// Who sends a frame: part of every MAC, so that a frame cannot be reflected back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Direction {
    /// Agent to collector.
    ToCollector = 0,
    /// Collector to agent.
    ToAgent = 1,
}

/// The session key of one connection, derived on both sides.
pub fn session_key(token: &[u8], agent_nonce: &[u8; 32], client_nonce: &[u8; 32]) -> [u8; 32] {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(token).unwrap_or_else(|_| unreachable!());
    m.update(SESSION_LABEL);
    m.update(&[PROTOCOL_VERSION]);
    m.update(agent_nonce);
    m.update(client_nonce);
    m.finalize().into_bytes().into()
}

/// One direction of one connection: its keyed MAC and the counter of its next frame.
#[derive(Clone)]
pub struct FrameMac {
    /// BLAKE2s-128 keyed with the session key (cloned per frame).
    keyed: Blake2sMac<U16>,
    direction: Direction,
    next: u64,
}

impl core::fmt::Debug for FrameMac {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key.
        f.debug_struct("FrameMac")
            .field("direction", &self.direction)
            .field("next", &self.next)
            .finish()
    }
}

impl FrameMac {
    /// The MAC of `direction` for the session of `token` and these nonces, counting from 0.
    pub fn new(
        token: &[u8],
        agent_nonce: &[u8; 32],
        client_nonce: &[u8; 32],
        direction: Direction,
    ) -> FrameMac {
        let key = session_key(token, agent_nonce, client_nonce);
        FrameMac {
            // A 32-byte key is what BLAKE2s takes; new_from_slice cannot fail for it.
            keyed: <Blake2sMac<U16> as KeyInit>::new_from_slice(&key)
                .unwrap_or_else(|_| unreachable!()),
            direction,
            next: 0,
        }
    }

    /// The counter the next frame gets (frames sealed or opened so far).
    pub fn counter(&self) -> u64 {
        self.next
    }

    /// The MAC of `frame` as the `counter`-th frame of this direction (no state change: a
    /// sender that writes frames in batches computes their MACs ahead, then
    /// [`FrameMac::advance`]s over the ones it sent).
    pub fn tag_at(&self, counter: u64, frame: &[u8]) -> [u8; MAC_LEN] {
        let mut m = self.keyed.clone();
        m.update(&[self.direction as u8]);
        m.update(&counter.to_le_bytes());
        m.update(frame);
        m.finalize().into_bytes().into()
    }

    /// The MAC of `frame` as the next frame; counts it.
    pub fn seal(&mut self, frame: &[u8]) -> [u8; MAC_LEN] {
        let t = self.tag_at(self.next, frame);
        self.next += 1;
        t
    }

    /// Counts `n` frames sealed with [`FrameMac::tag_at`].
    pub fn advance(&mut self, n: u64) {
        self.next += n;
    }

    /// Checks `tag` (constant time) for `frame` as the next frame; counts it when it matches.
    /// A mismatch leaves the counter alone: the connection is to be closed.
    pub fn open(&mut self, frame: &[u8], tag: &[u8]) -> Result<(), BadMac> {
        let want = self.tag_at(self.next, frame);
        let mut diff = (tag.len() != MAC_LEN) as u8;
        for (a, b) in want.iter().zip(tag.iter()) {
            diff |= a ^ b;
        }
        if diff != 0 {
            return Err(BadMac { counter: self.next });
        }
        self.next += 1;
        Ok(())
    }
}

/// A frame whose MAC does not match: altered, dropped before it, replayed, injected or
/// reordered (the receiver cannot tell which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadMac {
    /// The counter the frame was checked as (frames of this direction before it).
    pub counter: u64,
}

impl core::fmt::Display for BadMac {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "authentication failed: frame {} after the handshake has a wrong MAC (altered, \
             dropped, replayed, injected or reordered in transit)",
            self.counter
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BadMac {}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (FrameMac, FrameMac) {
        (
            FrameMac::new(b"token", &[7; 32], &[1; 32], Direction::ToCollector),
            FrameMac::new(b"token", &[7; 32], &[1; 32], Direction::ToCollector),
        )
    }

    #[test]
    fn sealed_frames_open_in_order_only() {
        let (mut tx, mut rx) = pair();
        let a = tx.seal(b"frame a");
        let b = tx.seal(b"frame b");
        // Reordered: b checked as the first frame fails, nothing is counted.
        assert_eq!(rx.open(b"frame b", &b), Err(BadMac { counter: 0 }));
        assert_eq!(rx.open(b"frame a", &a), Ok(()));
        // Replayed: a again as the second frame fails.
        assert!(rx.open(b"frame a", &a).is_err());
        // Altered: one bit.
        assert!(rx.open(b"frame c", &b).is_err());
        assert_eq!(rx.open(b"frame b", &b), Ok(()));
        assert_eq!(rx.counter(), 2);
    }

    #[test]
    fn direction_token_and_nonces_change_every_mac() {
        let base = FrameMac::new(b"token", &[7; 32], &[1; 32], Direction::ToCollector);
        let t = base.tag_at(0, b"x");
        for other in [
            FrameMac::new(b"token", &[7; 32], &[1; 32], Direction::ToAgent),
            FrameMac::new(b"tokem", &[7; 32], &[1; 32], Direction::ToCollector),
            FrameMac::new(b"token", &[8; 32], &[1; 32], Direction::ToCollector),
            FrameMac::new(b"token", &[7; 32], &[2; 32], Direction::ToCollector),
        ] {
            assert_ne!(other.tag_at(0, b"x"), t);
        }
        assert_ne!(base.tag_at(1, b"x"), t);
        assert!(
            FrameMac::new(b"token", &[7; 32], &[1; 32], Direction::ToCollector)
                .open(b"x", &t[..15])
                .is_err(),
            "a short tag never matches"
        );
    }
}
