//! What the server's parts share: the keep-alive period, the largest frame and `Refused`.

use std::time::Duration;

use nasprobe_proto::frame::{LEN_PREFIX, MAX_FRAME_LEN};
use nasprobe_proto::session::MAC_LEN;
use nasprobe_proto::{Message, Refused};

/// Send a `KeepAlive` after this long without sending anything.
pub(crate) const KEEPALIVE_AFTER: Duration = Duration::from_secs(5);
/// Largest frame the agent ever sends (prefix and MAC included).
pub(super) const MAX_OUT_FRAME: usize = LEN_PREFIX + MAX_FRAME_LEN + MAC_LEN;

/// Copies as much of `s` as fits (on a char boundary) into a heapless string.
pub(crate) fn short_str<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

pub(super) fn refused(reason: &str) -> Message {
    Message::Refused(Refused {
        reason: short_str(reason),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_str_cuts_on_char_boundary() {
        let s: heapless::String<4> = short_str("abcé");
        assert_eq!(s.as_str(), "abc");
        let s: heapless::String<5> = short_str("abcé");
        assert_eq!(s.as_str(), "abcé");
    }
}
