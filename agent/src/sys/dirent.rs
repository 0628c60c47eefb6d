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

/// The names in the first `n` bytes of records `getdents` filled (a truncated record ends the
/// walk).
pub(crate) fn names(buf: &[u8], n: usize) -> impl Iterator<Item = &[u8]> {
    let n = n.min(buf.len());
    let mut off = 0;
    std::iter::from_fn(move || {
        // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
        if off + 19 > n {
            return None;
        }
        let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
        if reclen == 0 || off + reclen > n {
            return None;
        }
        let name = &buf[off + 19..off + reclen];
        off += reclen;
        Some(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())])
    })
}
