//! Every `unsafe` of the agent: thin safe wrappers over the system calls that std and nix do
//! not offer in the form the sampler needs (no allocation, kept descriptors, netlink), the
//! signal handler and `sysconf`. Each wrapper takes descriptors as `BorrowedFd`/`OwnedFd` and
//! buffers as slices, never raw pointers or raw descriptors, so the rest of the crate is
//! `#![deny(unsafe_code)]`. The wrappers add no work: one system call each, as before.

pub(crate) mod dirent;
pub(crate) mod fd;
pub(crate) mod netlink;
pub(crate) mod process;
pub(crate) mod signal;
pub(crate) mod socket;

use nix::errno::Errno;

/// `r` of a system call returning -1 on error: `Ok(r)` or the errno.
fn check(r: isize) -> Result<usize, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}
