//! Pure parsers of /proc and /sys text and netlink replies: bytes in, structs out, no I/O, no allocation.
//!
//! Every parser takes the whole content of one file as a byte slice and fills a fixed-size
//! struct (or yields borrowed lines through an iterator). A field the kernel does not have is
//! `None`; input that does not follow the format is a [`ParseError`] and the sampler turns it
//! into `None` after logging it once. A capacity that is too small is [`ParseError::Full`],
//! never a silent truncation.

pub mod cmdline;
pub mod cn_proc;
pub mod diskstats;
pub mod fdinfo;
pub mod kmsg;
pub mod meminfo;
pub mod net_dev;
pub mod netlink;
pub mod pid_io;
pub mod pid_stat;
pub mod proc_net_tcp;
pub mod proc_stat;
pub mod schedstat;
pub mod snmp;
pub mod sock_diag;
pub mod sysfs;
pub mod tc;
pub mod vmstat;

use core::fmt;

/// Why a parser refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The input ended before a required field (a file cut short).
    Truncated(&'static str),
    /// A field is not what the kernel's format says (garbage, a negative count, ...).
    Malformed(&'static str),
    /// More entries than the named capacity holds (the name says which capacity).
    Full(&'static str),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated(what) => write!(f, "truncated: {what}"),
            ParseError::Malformed(what) => write!(f, "malformed: {what}"),
            ParseError::Full(what) => write!(f, "capacity exceeded: {what}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Lines of `buf` without their `\n` (a last line without `\n` is still a line).
pub fn lines(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let buf = buf.strip_suffix(b"\n").unwrap_or(buf);
    Lines((!buf.is_empty()).then_some(buf))
}

/// The iterator of [`lines`]: what is left to split, `None` after the last line. One pass
/// over the bytes (every /proc file the sampler reads goes through here once per sample).
struct Lines<'a>(Option<&'a [u8]>);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.0?;
        let i = find_newline(rest);
        let (line, tail) = rest.split_at_checked(i).unwrap_or((rest, &[]));
        self.0 = tail.split_first().map(|(_, t)| t);
        Some(line)
    }
}

/// Whitespace-separated fields of a line (spaces and tabs; runs count as one separator).
pub fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    Fields(line)
}

fn is_field_sep(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The iterator of [`fields`]: what is left of the line. Skips a run of separators, then
/// takes the field up to the next one (one pass, no empty fields to filter out).
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let mut rest = self.0;
        while let Some((&b, tail)) = rest.split_first()
            && is_field_sep(b)
        {
            rest = tail;
        }
        if rest.is_empty() {
            self.0 = rest;
            return None;
        }
        let i = rest
            .iter()
            .position(|&b| is_field_sep(b))
            .unwrap_or(rest.len());
        let (field, tail) = rest.split_at_checked(i).unwrap_or((rest, &[]));
        self.0 = tail;
        Some(field)
    }
}

/// Index of the first `\n` in `buf`, or `buf.len()`. Looks at eight bytes at a time (the
/// classic has-zero-byte word test on the bytes xor `\n`: the lowest flagged byte is exact):
/// a line of /proc is tens of bytes, a byte-at-a-time loop costs several instructions each.
fn find_newline(buf: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut i = 0;
    while let Some(chunk) = buf.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default()) ^ (ONES * b'\n' as u64);
        let zero = w.wrapping_sub(ONES) & !w & HIGH;
        if zero != 0 {
            return i + (zero.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    buf.get(i..)
        .and_then(|tail| tail.iter().position(|&b| b == b'\n'))
        .map_or(buf.len(), |p| i + p)
}

/// Index of the last `byte` in `buf`. Looks at eight bytes at a time from the end, with an
/// exact per-byte zero test on the bytes xor `byte` (no borrow between bytes, so the highest
/// flagged byte is the last match): /proc/PID/stat's comm ends at its last ')', which is
/// near the start of the line, after ~150 bytes of numbers read backwards.
pub(crate) fn rfind_byte(buf: &[u8], byte: u8) -> Option<usize> {
    const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
    let pat = u64::from_ne_bytes([byte; 8]);
    let mut end = buf.len();
    while let Some(chunk) = end.checked_sub(8).and_then(|start| buf.get(start..end)) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default()) ^ pat;
        let zero = !(((w & LOW7) + LOW7) | w | LOW7);
        if zero != 0 {
            return Some(end - 1 - (zero.leading_zeros() / 8) as usize);
        }
        end -= 8;
    }
    buf.get(..end)?.iter().rposition(|&b| b == byte)
}

/// `buf` without leading and trailing ASCII whitespace.
pub fn trim(buf: &[u8]) -> &[u8] {
    buf.trim_ascii()
}

/// A decimal unsigned integer; `None` when empty, not all digits, or past u64.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    parse_u64_radix::<10>(s)
}

/// An unsigned integer in base `RADIX` (2..=10: decimal, octal flags); `None` when empty, a
/// digit is not of the base, or past u64. The base is a constant so that the decimal parser
/// (every number of every /proc file) multiplies by 10, not by a base read at run time.
pub(crate) fn parse_u64_radix<const RADIX: u8>(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 64 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d >= RADIX {
            return None;
        }
        v = v.checked_mul(RADIX as u64)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// A decimal signed integer (`-1` appears in sysfs speed and in /proc/net/snmp).
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', rest)) => {
            let v = parse_u64(rest)?;
            if v > i64::MAX as u64 + 1 {
                None
            } else {
                Some((v as i128).wrapping_neg() as i64)
            }
        }
        _ => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Required u64 field: missing is `Truncated(what)`, garbage is `Malformed(what)`.
pub(crate) fn req_u64(f: Option<&[u8]>, what: &'static str) -> Result<u64, ParseError> {
    let f = f.ok_or(ParseError::Truncated(what))?;
    parse_u64(f).ok_or(ParseError::Malformed(what))
}

/// Copies `src` into a heapless string of capacity N, replacing bytes that are not printable
/// UTF-8 with '?', and cutting at `max` bytes on a character boundary (names are display
/// labels: the kernel's comm limit and our field sizes are documented, so cutting here is the
/// documented behaviour, not a silent loss of data).
/// Returns false when it had to cut.
pub(crate) fn to_label<const N: usize>(
    src: &[u8],
    max: usize,
    out: &mut heapless::String<N>,
) -> bool {
    out.clear();
    let max = max.min(N);
    let mut rest = src;
    while !rest.is_empty() {
        let (good, bad) = match core::str::from_utf8(rest) {
            Ok(s) => (s, 0),
            Err(e) => {
                let s = core::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or("");
                (s, e.error_len().unwrap_or(rest.len() - e.valid_up_to()))
            }
        };
        for c in good.chars() {
            let c = if c.is_control() { ' ' } else { c };
            if out.len() + c.len_utf8() > max {
                return false;
            }
            let _ = out.push(c);
        }
        if bad > 0 {
            if out.len() + 1 > max {
                return false;
            }
            let _ = out.push('?');
        }
        rest = &rest[good.len() + bad..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-"), None);
    }

    #[test]
    fn lines_and_fields() {
        let v: Vec<&[u8]> = lines(b"a b\n\nc").collect();
        assert_eq!(v, vec![&b"a b"[..], b"", b"c"]);
        assert_eq!(lines(b"").count(), 0);
        assert_eq!(lines(b"x\n").count(), 1);
        let f: Vec<&[u8]> = fields(b"  a \t b  ").collect();
        assert_eq!(f, vec![&b"a"[..], b"b"]);
    }

    /// `lines` and `fields` against the plain split-and-filter they replace, on every cut of a
    /// text with newlines, tabs, runs of separators and bytes past 0x7f at all word offsets.
    #[test]
    fn lines_and_fields_match_split() {
        let text =
            b"MemTotal:        8024512 kB\n\nab\tc \r\n\xff\x80\x8a\x0a0123456789abcdef\n  x  \n\n\n";
        for start in 0..text.len() {
            for end in start..=text.len() {
                let buf = &text[start..end];
                let stripped = buf.strip_suffix(b"\n").unwrap_or(buf);
                let want: Vec<&[u8]> = if stripped.is_empty() {
                    Vec::new()
                } else {
                    stripped.split(|&b| b == b'\n').collect()
                };
                assert_eq!(lines(buf).collect::<Vec<_>>(), want, "{buf:?}");
                let want: Vec<&[u8]> = buf
                    .split(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                    .filter(|f| !f.is_empty())
                    .collect();
                assert_eq!(fields(buf).collect::<Vec<_>>(), want, "{buf:?}");
            }
        }
    }

    #[test]
    fn rfind_matches_rposition() {
        let text = b"1 (a) b) (c)) S 1 2 3 \xa9)\x29\xff 4 5 6 7 8 9 10 11 12 13 14 15 16)";
        for start in 0..text.len() {
            for end in start..=text.len() {
                let buf = &text[start..end];
                for byte in [b')', b'(', b' ', 0xa9, 0xff, 0] {
                    let want = buf.iter().rposition(|&b| b == byte);
                    assert_eq!(rfind_byte(buf, byte), want, "{buf:?} {byte}");
                }
            }
        }
    }

    #[test]
    fn labels() {
        let mut s = heapless::String::<8>::new();
        to_label(b"abc\xffd\te", 8, &mut s);
        assert_eq!(s.as_str(), "abc?d e");
        to_label("ééééé".as_bytes(), 8, &mut s);
        assert_eq!(s.as_str(), "éééé");
        to_label(b"abcdefghij", 3, &mut s);
        assert_eq!(s.as_str(), "abc");
    }
}
