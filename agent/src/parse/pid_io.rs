//! `/proc/PID/io`: the bytes a process made storage read and dirtied for writing.

use super::{ParseError, fields, lines, parse_u64};

/// `/proc/PID/io`: `read_bytes + write_bytes` (what the process made storage read, and the
/// bytes it dirtied for writing). Needs the kernel's task I/O accounting (every distribution
/// kernel and NAS kernel seen has it).
pub fn parse_pid_io(buf: &[u8]) -> Result<u64, ParseError> {
    let (mut r, mut w) = (None, None);
    for line in lines(buf) {
        let mut f = fields(line);
        let slot = match f.next() {
            Some(b"read_bytes:") => &mut r,
            Some(b"write_bytes:") => &mut w,
            _ => continue,
        };
        let v = f.next().ok_or(ParseError::Truncated("io bytes"))?;
        *slot = Some(parse_u64(v).ok_or(ParseError::Malformed("io bytes"))?);
    }
    match (r, w) {
        (Some(r), Some(w)) => Ok(r.saturating_add(w)),
        (None, _) => Err(ParseError::Truncated("io read_bytes")),
        _ => Err(ParseError::Truncated("io write_bytes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_io() {
        let io = b"rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
read_bytes: 4096\nwrite_bytes: 323932160\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_pid_io(io), Ok(323_936_256));
        assert_eq!(
            parse_pid_io(b"rchar: 1\n"),
            Err(ParseError::Truncated("io read_bytes"))
        );
        assert_eq!(
            parse_pid_io(b"read_bytes: x\nwrite_bytes: 1\n"),
            Err(ParseError::Malformed("io bytes"))
        );
        assert_eq!(
            parse_pid_io(b"read_bytes: 18446744073709551615\nwrite_bytes: 1\n"),
            Ok(u64::MAX)
        );
    }
}
