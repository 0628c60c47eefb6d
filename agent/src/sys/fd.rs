//! Files by descriptor: `openat` (relative to a kept directory) and `pread` at offset 0 without
//! allocation, `readlinkat` and `fstatat` into the caller's buffers, seeks and the page-cache
//! hint of the disk test.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

use super::check;

/// `openat(dir, path, flags)`; the descriptor is owned by the result.
pub(crate) fn openat(
    dir: BorrowedFd<'_>,
    path: &CStr,
    flags: libc::c_int,
) -> Result<OwnedFd, Errno> {
    open_raw(dir.as_raw_fd(), path, flags)
}

/// `open(path, flags)` (relative paths from the working directory).
pub(crate) fn open(path: &CStr, flags: libc::c_int) -> Result<OwnedFd, Errno> {
    open_raw(libc::AT_FDCWD, path, flags)
}

fn open_raw(dir: libc::c_int, path: &CStr, flags: libc::c_int) -> Result<OwnedFd, Errno> {
    // SAFETY: path is NUL-terminated; `dir` is a live descriptor or AT_FDCWD.
    let fd = unsafe { libc::openat(dir, path.as_ptr(), flags) };
    if fd < 0 {
        Err(Errno::last())
    } else {
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// One `pread` at offset 0 into `buf`: the bytes read.
pub(crate) fn pread0(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    check(n)
}

/// One `read` into `buf`: the bytes read.
pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    check(n)
}

/// `lseek(fd, 0, whence)`.
pub(crate) fn seek0(fd: BorrowedFd<'_>, whence: libc::c_int) -> Result<(), Errno> {
    // SAFETY: lseek on a live descriptor.
    let r = unsafe { libc::lseek(fd.as_raw_fd(), 0, whence) };
    if r < 0 { Err(Errno::last()) } else { Ok(()) }
}

/// `readlinkat` into `buf`; None when it is not a link or longer than the buffer.
pub(crate) fn readlinkat<'b>(
    dir: BorrowedFd<'_>,
    rel: &CStr,
    buf: &'b mut [u8],
) -> Option<&'b [u8]> {
    // SAFETY: readlinkat into our own buffer of its length.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            rel.as_ptr(),
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
        )
    };
    if n <= 0 || n as usize >= buf.len() {
        return None;
    }
    Some(&buf[..n as usize])
}

/// `fstatat(dir, rel, 0)` (following links): the size of `rel` when it is a regular file,
/// None when it is something else or cannot be stat'ed.
pub(crate) fn regular_file_size_at(dir: BorrowedFd<'_>, rel: &CStr) -> Option<u64> {
    // SAFETY: stat is plain data, filled by fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat on a NUL-terminated name relative to a live directory descriptor.
    if unsafe { libc::fstatat(dir.as_raw_fd(), rel.as_ptr(), &mut st, 0) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
    {
        return None;
    }
    Some(st.st_size.max(0) as u64)
}

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`: drops the file's clean pages from the page
/// cache; true when the kernel took the hint.
pub(crate) fn drop_cache(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: an advisory call on a live descriptor.
    unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}
