//! `/proc/PID/fdinfo/N`: a descriptor's offset and open flags, what tells which file a
//! transfer is on and how far it got.

use super::{ParseError, fields, lines, parse_u64, parse_u64_radix};

/// One descriptor's `pos:` and `flags:` (kernel 2.6.22+; 3.10 has both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdInfo {
    /// The offset, bytes.
    pub pos: u64,
    /// The open flags (`O_ACCMODE` in the low two bits), as the kernel prints them in octal.
    pub flags: u32,
}

/// The access mode of open `flags`: `(read, write)`; None for the invalid mode 3.
pub fn access(flags: u32) -> Option<(bool, bool)> {
    match flags & 3 {
        0 => Some((true, false)),
        1 => Some((false, true)),
        2 => Some((true, true)),
        _ => None,
    }
}

/// `pos:\t1048576\nflags:\t0100001\nmnt_id:\t29\n...`: the first two lines the kernel writes;
/// other lines (mnt_id, ino, eventfd/inotify details) are ignored.
pub fn parse_fdinfo(buf: &[u8]) -> Result<FdInfo, ParseError> {
    let (mut pos, mut flags) = (None, None);
    for line in lines(buf) {
        let mut f = fields(line);
        match f.next() {
            Some(b"pos:") => {
                let v = f.next().ok_or(ParseError::Truncated("fdinfo pos"))?;
                pos = Some(parse_u64(v).ok_or(ParseError::Malformed("fdinfo pos"))?);
            }
            Some(b"flags:") => {
                let v = f.next().ok_or(ParseError::Truncated("fdinfo flags"))?;
                flags = parse_u64_radix::<8>(v).and_then(|f| u32::try_from(f).ok());
                flags.ok_or(ParseError::Malformed("fdinfo flags"))?;
            }
            _ => {}
        }
        if let (Some(pos), Some(flags)) = (pos, flags) {
            return Ok(FdInfo { pos, flags });
        }
    }
    Err(ParseError::Truncated(if pos.is_none() {
        "fdinfo pos"
    } else {
        "fdinfo flags"
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_of_a_write_a_read_and_old_kernels() {
        // 6.1, a file opened O_WRONLY|O_CREAT|O_TRUNC|O_LARGEFILE.
        let w = b"pos:\t734003200\nflags:\t0100101\nmnt_id:\t29\nino:\t12\n";
        assert_eq!(
            parse_fdinfo(w),
            Ok(FdInfo {
                pos: 734_003_200,
                flags: 0o100101
            })
        );
        assert_eq!(access(0o100101), Some((false, true)));
        // 3.10: two lines only, read-only with O_LARGEFILE|O_NOATIME.
        let r = parse_fdinfo(b"pos:\t0\nflags:\t01100000\n").unwrap();
        assert_eq!(access(r.flags), Some((true, false)));
        assert_eq!(access(0o2), Some((true, true)));
        assert_eq!(access(0o3), None);
    }

    #[test]
    fn fdinfo_refuses_what_the_kernel_never_writes() {
        assert_eq!(parse_fdinfo(b""), Err(ParseError::Truncated("fdinfo pos")));
        assert_eq!(
            parse_fdinfo(b"pos:\t12\n"),
            Err(ParseError::Truncated("fdinfo flags"))
        );
        assert_eq!(
            parse_fdinfo(b"pos:\t-1\nflags:\t02\n"),
            Err(ParseError::Malformed("fdinfo pos"))
        );
        assert_eq!(
            parse_fdinfo(b"pos:\t1\nflags:\t0800\n"),
            Err(ParseError::Malformed("fdinfo flags"))
        );
        assert_eq!(
            parse_fdinfo(b"pos:\t1\nflags:\t77777777777\n"),
            Err(ParseError::Malformed("fdinfo flags"))
        );
        assert_eq!(
            parse_fdinfo(b"pos:\nflags:\t02\n"),
            Err(ParseError::Truncated("fdinfo pos"))
        );
    }
}
