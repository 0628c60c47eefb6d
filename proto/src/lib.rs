//! Wire protocol shared by `nasprobe-agent` and the `nasprobe` collector: message types,
//! length-prefixed postcard framing and the HMAC challenge-response.
//!
//! Rules of the wire (see `docs/protocol.md`):
//! - every frame is `u32 little-endian body length` + body; the body starts with the protocol
//!   version byte, then the postcard encoding of one [`Message`];
//! - fields are never reordered and enum variants are only ever added at the end;
//! - every message has a golden byte vector in the tests: a changed vector is a changed wire.
#![no_std]

#[cfg(feature = "std")]
extern crate std;

pub mod auth;
pub mod frame;
pub mod handshake;
pub mod msg;
pub mod sanitize;
pub mod time;
pub mod token;

pub use frame::{FrameError, decode_frame, encode_frame};
pub use msg::*;

/// Version byte at the start of every frame body. Bumped on any incompatible change.
pub const PROTOCOL_VERSION: u8 = 1;

/// Default TCP port of the agent.
pub const DEFAULT_PORT: u16 = 7451;
