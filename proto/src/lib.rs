//! Wire protocol shared by `nasprobe-agent` and the `nasprobe` collector: message types,
//! length-prefixed postcard framing and the HMAC challenge-response.
//!
//! Rules of the wire (see `docs/protocol.md`):
//! - every frame is `u32 little-endian body length` + body; the body starts with the protocol
//!   version byte, then the postcard encoding of one [`Message`]; after the handshake a 16-byte
//!   MAC follows every frame ([`session`]);
//! - fields are never reordered and enum variants are only ever added at the end;
//! - every message has a golden byte vector in the tests: a changed vector is a changed wire.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![no_std]

#[cfg(feature = "std")]
extern crate std;

pub mod auth;
pub mod events;
pub mod frame;
pub mod handshake;
pub mod limits;
pub mod msg;
pub mod sanitize;
pub mod session;
pub mod shaping_msg;
pub mod test_msg;
pub mod test_stream;
pub mod time;
pub mod token;

pub use frame::{FrameError, decode_frame, encode_frame};
pub use msg::*;
pub use shaping_msg::*;
pub use test_msg::*;

/// Version byte at the start of every frame body. Bumped on any incompatible change: 2 added
/// the per-frame MAC after the handshake.
pub const PROTOCOL_VERSION: u8 = 2;

/// What to upgrade when a peer speaks protocol `theirs` and this side [`PROTOCOL_VERSION`]:
/// `peer` and `me` name the sides ("agent", "collector"), e.g. "the agent speaks protocol 1,
/// this collector 2: upgrade the agent".
pub fn version_advice(theirs: u8, peer: &'static str, me: &'static str) -> VersionAdvice {
    VersionAdvice { theirs, peer, me }
}

/// See [`version_advice`].
#[derive(Debug, Clone, Copy)]
pub struct VersionAdvice {
    theirs: u8,
    peer: &'static str,
    me: &'static str,
}

impl core::fmt::Display for VersionAdvice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let older = if self.theirs < PROTOCOL_VERSION {
            self.peer
        } else {
            self.me
        };
        write!(
            f,
            "the {} speaks protocol {}, this {} {}: upgrade the {older}",
            self.peer, self.theirs, self.me, PROTOCOL_VERSION
        )
    }
}

/// Default TCP port of the agent.
pub const DEFAULT_PORT: u16 = 7451;
