//! Directory listings without allocation: `getdents64` into the caller's buffer, and the names
//! of the `linux_dirent64` records it filled.

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

use super::check;

/// Rewinds the directory `dir` to its first entry.
pub(crate) fn rewind(dir: BorrowedFd<'_>) -> Result<(), Errno> {
    super::fd::seek0(dir, libc::SEEK_SET)
}

/// One `getdents64` into `buf`: the bytes of records filled (0 at the end of the directory).
pub(crate) fn getdents(dir: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for its length; getdents64 writes at most that much.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            dir.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    check(n as isize)
}

/// The size of `linux_dirent64`'s fixed head: d_ino (8), d_off (8), d_reclen (2), d_type (1).
const HEAD: usize = 19;

/// The names in the first `n` bytes of records `getdents` filled (a truncated record, or one
/// whose length is shorter than its own head, ends the walk).
pub(crate) fn names(buf: &[u8], n: usize) -> impl Iterator<Item = &[u8]> {
    let n = n.min(buf.len());
    let mut off = 0;
    std::iter::from_fn(move || {
        // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
        if off + HEAD > n {
            return None;
        }
        let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
        if reclen < HEAD || off + reclen > n {
            return None;
        }
        let name = &buf[off + HEAD..off + reclen];
        off += reclen;
        Some(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as the kernel lays it out: the head, the name, a NUL, padding to 8 bytes.
    fn record(name: &[u8], reclen: Option<u16>) -> Vec<u8> {
        let len = (HEAD + name.len() + 1).next_multiple_of(8);
        let mut r = vec![0u8; len];
        r[16..18].copy_from_slice(&reclen.unwrap_or(len as u16).to_ne_bytes());
        r[HEAD..HEAD + name.len()].copy_from_slice(name);
        r
    }

    #[test]
    fn names_walks_records_and_stops_at_a_bad_length() {
        let mut buf = record(b"1234", None);
        buf.extend(record(b"self", None));
        let n = buf.len();
        assert_eq!(names(&buf, n).collect::<Vec<_>>(), [&b"1234"[..], b"self"]);
        // A truncated last record ends the walk.
        assert_eq!(names(&buf, n - 1).count(), 1);
        // Every length shorter than the head (0 and 1-18) ends it without a panic.
        for bad in 0..HEAD as u16 {
            let mut b = record(b"1234", None);
            b.extend(record(b"x", Some(bad)));
            let m = b.len();
            assert_eq!(
                names(&b, m).collect::<Vec<_>>(),
                [&b"1234"[..]],
                "reclen {bad}"
            );
        }
    }
}
