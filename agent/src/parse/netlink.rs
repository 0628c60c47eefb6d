//! Netlink framing shared by the connector and sock_diag parsers: messages of a datagram
//! (`nlmsghdr`, 16 bytes, each padded to 4) and host-order integer reads.

use super::ParseError;

pub const NLMSG_HDR: usize = 16;
pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLMSG_OVERRUN: u16 = 4;

pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The u64 at `at`, None past the end.
pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_ne_bytes(a))
}

/// The messages of one datagram as (type, payload after the header). A message whose length
/// is impossible ends the iteration with an error (the rest cannot be framed).
pub fn frames(buf: &[u8]) -> Frames<'_> {
    Frames { buf, done: false }
}

pub struct Frames<'a> {
    buf: &'a [u8],
    done: bool,
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<(u16, &'a [u8]), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.buf.is_empty() {
            return None;
        }
        let b = self.buf;
        if b.len() < NLMSG_HDR {
            self.done = true;
            return Some(Err(ParseError::Truncated("nlmsghdr")));
        }
        let len = u32_at(b, 0) as usize;
        if len < NLMSG_HDR || len > b.len() {
            self.done = true;
            return Some(Err(ParseError::Malformed("nlmsg_len")));
        }
        // The next message starts at the 4-aligned end (the last one may lack the padding).
        self.buf = &b[(len.div_ceil(4) * 4).min(b.len())..];
        Some(Ok((u16_at(b, 4), &b[NLMSG_HDR..len])))
    }
}

/// The errno of an `NLMSG_ERROR` payload (`struct nlmsgerr`: a negative errno first).
pub fn error_code(p: &[u8]) -> Result<u32, ParseError> {
    if p.len() < 4 {
        return Err(ParseError::Truncated("nlmsgerr"));
    }
    Ok((u32_at(p, 0) as i32).unsigned_abs())
}
