//! The kernel log (`/dev/kmsg`, Linux 3.5+) as one more descriptor of the poll loop: read
//! without blocking from the agent's start on (the history before it is skipped), one record
//! per read, a bounded number per wake-up. Records the kernel overwrote before the agent read
//! them (EPIPE) are counted, never fatal. What they mean is [`crate::parse::kmsg`]'s business.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::parse::kmsg::{Record, parse_record};

/// A record is at most ~1 KiB of text plus its dictionary (CONSOLE_EXT_LOG_MAX is 8 KiB).
const RECORD_BUF: usize = 8 * 1024;

pub struct Kmsg {
    fd: OwnedFd,
    buf: Box<[u8]>,
    /// Records overwritten before they were read.
    pub lost: u32,
}

impl Kmsg {
    /// Opens /dev/kmsg positioned at its end. Err: why not (for the log).
    pub fn open() -> Result<Kmsg, String> {
        // SAFETY: open(2) of a constant NUL-terminated path.
        let raw = unsafe {
            libc::open(
                c"/dev/kmsg".as_ptr(),
                libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(format!("/dev/kmsg: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: lseek on our descriptor; SEEK_END on /dev/kmsg means "after the last record".
        if unsafe { libc::lseek(raw, 0, libc::SEEK_END) } < 0 {
            return Err(format!(
                "/dev/kmsg: seek to the end: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Kmsg {
            fd,
            buf: vec![0u8; RECORD_BUF].into_boxed_slice(),
            lost: 0,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Reads at most `max` records without blocking and hands each to `f` (a record that does
    /// not parse is skipped). Returns how many were read.
    pub fn drain(&mut self, max: usize, f: &mut dyn FnMut(Record)) -> usize {
        let mut n = 0;
        while n < max {
            // SAFETY: read into our own buffer of its length.
            let r = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr() as *mut libc::c_void,
                    self.buf.len(),
                )
            };
            if r < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // Overwritten before we read it; the next read gives the oldest left.
                    Some(libc::EPIPE) => {
                        self.lost = self.lost.saturating_add(1);
                        continue;
                    }
                    // A record longer than the buffer (cannot happen with 8 KiB, but a kernel
                    // that did it would make every read fail): skip to the end, count it.
                    Some(libc::EINVAL) => {
                        self.lost = self.lost.saturating_add(1);
                        // SAFETY: lseek on our own descriptor.
                        unsafe { libc::lseek(self.fd.as_raw_fd(), 0, libc::SEEK_END) };
                        break;
                    }
                    _ => break, // EAGAIN: nothing more now
                }
            }
            if r == 0 {
                break;
            }
            n += 1;
            if let Ok(rec) = parse_record(&self.buf[..r as usize]) {
                f(rec);
            }
        }
        n
    }
}
