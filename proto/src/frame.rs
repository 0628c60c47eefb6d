//! Length-prefixed frames: `u32 LE length of body` + body, body = version byte + postcard;
//! after the handshake each frame is followed by its MAC ([`crate::session`]), checked before
//! the body is decoded.
//!
//! Decoding never panics and never allocates: a length over the cap, a body that does not decode
//! or decodes with bytes left over, and a wrong version are each a typed [`FrameError`].

use crate::session::{BadMac, FrameMac, MAC_LEN};
use crate::{Message, PROTOCOL_VERSION};

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 4;

/// Hard cap on a frame body sent by an agent. A sample of a 256-CPU box with every list full
/// stays far below it; anything longer is hostile or broken.
pub const MAX_FRAME_LEN: usize = 64 * 1024;

/// Hard cap on a frame body sent by a collector: it only ever sends `Auth`, `Resume` and
/// `KeepAlive`, all under 100 bytes.
pub const MAX_CLIENT_FRAME_LEN: usize = 256;

/// Why a frame could not be encoded or decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The length prefix announces more than the cap allows.
    TooLong {
        /// Bytes the prefix announces.
        len: usize,
        /// Most bytes allowed here.
        max: usize,
    },
    /// A zero-length body (no version byte).
    Empty,
    /// The body's version byte is not ours.
    UnsupportedVersion(u8),
    /// The body is not a valid message.
    Malformed,
    /// The body decoded but left this many bytes unused (a length that lies).
    TrailingBytes(usize),
    /// The output buffer is too small for the encoded frame.
    BufferFull,
    /// The MAC after the frame does not match (see [`crate::session`]).
    BadMac(BadMac),
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FrameError::TooLong { len, max } => {
                write!(f, "frame of {len} bytes exceeds the cap of {max}")
            }
            FrameError::Empty => write!(f, "empty frame"),
            FrameError::UnsupportedVersion(v) => write!(
                f,
                "protocol version {v} is not supported (this side speaks {PROTOCOL_VERSION})"
            ),
            FrameError::Malformed => write!(f, "frame body is not a valid message"),
            FrameError::TrailingBytes(n) => write!(f, "frame body has {n} bytes past the message"),
            FrameError::BufferFull => write!(f, "output buffer too small for the frame"),
            FrameError::BadMac(b) => write!(f, "{b}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for FrameError {}

/// Encodes `msg` as one frame into `out`; returns the frame's total length.
pub fn encode_frame(msg: &Message, out: &mut [u8]) -> Result<usize, FrameError> {
    if out.len() < LEN_PREFIX + 1 {
        return Err(FrameError::BufferFull);
    }
    out[LEN_PREFIX] = PROTOCOL_VERSION;
    let body_len = postcard::to_slice(msg, &mut out[LEN_PREFIX + 1..])
        .map_err(|_| FrameError::BufferFull)?
        .len()
        + 1;
    if body_len > MAX_FRAME_LEN {
        return Err(FrameError::TooLong {
            len: body_len,
            max: MAX_FRAME_LEN,
        });
    }
    out[..LEN_PREFIX].copy_from_slice(&(body_len as u32).to_le_bytes());
    Ok(LEN_PREFIX + body_len)
}

/// Encodes `msg` as one frame followed by its MAC (the next of `mac`); returns the length of
/// both.
pub fn encode_sealed_frame(
    msg: &Message,
    out: &mut [u8],
    mac: &mut FrameMac,
) -> Result<usize, FrameError> {
    let n = encode_frame(msg, out)?;
    if out.len() < n + MAC_LEN {
        return Err(FrameError::BufferFull);
    }
    let tag = mac.seal(&out[..n]);
    out[n..n + MAC_LEN].copy_from_slice(&tag);
    Ok(n + MAC_LEN)
}

/// Like [`decode_frame`] for a frame followed by its MAC: `Ok(None)` until frame and MAC have
/// arrived; the MAC is checked (and counted) before the body is decoded. Returns the message
/// and the bytes used (frame and MAC).
pub fn decode_sealed_frame(
    buf: &[u8],
    max_len: usize,
    mac: &mut FrameMac,
) -> Result<Option<(Message, usize)>, FrameError> {
    let Some(frame_len) = open_sealed(buf, max_len, mac)? else {
        return Ok(None);
    };
    decode_body(&buf[LEN_PREFIX..frame_len]).map(|m| Some((m, frame_len + MAC_LEN)))
}

/// Checks the MAC of the sealed frame at the start of `buf`: `Ok(Some(frame_len))` (the frame
/// without its MAC; the MAC follows it) once frame and MAC have arrived and match.
pub fn open_sealed(
    buf: &[u8],
    max_len: usize,
    mac: &mut FrameMac,
) -> Result<Option<usize>, FrameError> {
    let Some(body_len) = peek_len(buf, max_len)? else {
        return Ok(None);
    };
    let frame_len = LEN_PREFIX + body_len;
    if buf.len() < frame_len + MAC_LEN {
        return Ok(None);
    }
    mac.open(&buf[..frame_len], &buf[frame_len..frame_len + MAC_LEN])
        .map_err(FrameError::BadMac)?;
    Ok(Some(frame_len))
}

/// Looks at the start of `buf`: `Ok(None)` when a whole frame has not arrived yet (the length
/// prefix is checked against `max_len` as soon as it is there, so an oversize frame is refused
/// before its body is read); `Ok(Some((message, frame_len)))` when one has.
pub fn decode_frame(buf: &[u8], max_len: usize) -> Result<Option<(Message, usize)>, FrameError> {
    let Some(body_len) = peek_len(buf, max_len)? else {
        return Ok(None);
    };
    let total = LEN_PREFIX + body_len;
    if buf.len() < total {
        return Ok(None);
    }
    decode_body(&buf[LEN_PREFIX..total]).map(|m| Some((m, total)))
}

/// The announced body length, once the prefix has arrived; refused when over `max_len`.
pub fn peek_len(buf: &[u8], max_len: usize) -> Result<Option<usize>, FrameError> {
    if buf.len() < LEN_PREFIX {
        return Ok(None);
    }
    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > max_len {
        return Err(FrameError::TooLong { len, max: max_len });
    }
    if len == 0 {
        return Err(FrameError::Empty);
    }
    Ok(Some(len))
}

/// Decodes one frame body (version byte + postcard message).
pub fn decode_body(body: &[u8]) -> Result<Message, FrameError> {
    let (&version, rest) = body.split_first().ok_or(FrameError::Empty)?;
    if version != PROTOCOL_VERSION {
        return Err(FrameError::UnsupportedVersion(version));
    }
    let (msg, unused) =
        postcard::take_from_bytes::<Message>(rest).map_err(|_| FrameError::Malformed)?;
    if !unused.is_empty() {
        return Err(FrameError::TrailingBytes(unused.len()));
    }
    Ok(msg)
}

/// A `Message::Record` taken apart without decoding its sample or event: the store keeps the
/// body bytes as they came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordParts<'a> {
    /// The record's sequence number within its agent instance.
    pub seq: u64,
    /// Agent wall clock of the record, ms since the Unix epoch.
    pub time_ms: u64,
    /// True for `RecordBody::Event`, false for `RecordBody::Sample`.
    pub is_event: bool,
    /// The postcard bytes of the `Sample` or `Event`.
    pub body: &'a [u8],
}

/// Splits the postcard bytes of a `Message::Record` (a frame body after its version byte) into
/// sequence number, time and the bytes of its sample or event. Anything else is `Malformed`.
pub fn split_record(m: &[u8]) -> Result<RecordParts<'_>, FrameError> {
    let bad = |_| FrameError::Malformed;
    let (tag, rest) = postcard::take_from_bytes::<u32>(m).map_err(bad)?;
    if tag != MESSAGE_TAG_RECORD {
        return Err(FrameError::Malformed);
    }
    let (seq, rest) = postcard::take_from_bytes::<u64>(rest).map_err(bad)?;
    let (time_ms, rest) = postcard::take_from_bytes::<u64>(rest).map_err(bad)?;
    let (body_tag, body) = postcard::take_from_bytes::<u32>(rest).map_err(bad)?;
    let is_event = match body_tag {
        0 => false,
        1 => true,
        _ => return Err(FrameError::Malformed),
    };
    Ok(RecordParts {
        seq,
        time_ms,
        is_event,
        body,
    })
}

/// The [`crate::accepts`] bits a record frame (length prefix included, as the agent's ring
/// holds it) needs of the collector it goes to: 0 for every kind the first collectors decode,
/// and for anything that is not a record.
pub fn frame_needs(frame: &[u8]) -> u32 {
    let Some(m) = frame.get(LEN_PREFIX + 1..) else {
        return 0;
    };
    match split_record(m) {
        Ok(p) if p.is_event => match postcard::take_from_bytes::<u32>(p.body) {
            Ok((EVENT_TAG_SHAPING, _)) => crate::accepts::SHAPING,
            _ => 0,
        },
        _ => 0,
    }
}

/// Postcard tag of `Event::Shaping` (its variant index).
const EVENT_TAG_SHAPING: u32 = 10;

/// Postcard tag of `Message::Record` (its variant index).
const MESSAGE_TAG_RECORD: u32 = 6;

/// `interval_us` of an encoded `Sample` without decoding the rest: it is the first field, so
/// the bytes start with its varint. `Malformed` when they do not.
pub fn sample_interval_us(sample: &[u8]) -> Result<u32, FrameError> {
    postcard::take_from_bytes::<u32>(sample)
        .map(|(v, _)| v)
        .map_err(|_| FrameError::Malformed)
}
