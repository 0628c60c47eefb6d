//! Netlink sockets (the process connector, sock_diag): creation, options, binding to a
//! multicast group, one datagram to the kernel and one from it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

use super::check;

/// A `SOCK_DGRAM | SOCK_CLOEXEC | extra_flags` netlink socket of `protocol`
/// (`NETLINK_CONNECTOR`, `NETLINK_SOCK_DIAG`).
pub(crate) fn socket(protocol: libc::c_int, extra_flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned right below.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | extra_flags,
            protocol,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// `setsockopt(SOL_SOCKET, opt, value)` of an int option; true when the kernel took it.
pub(crate) fn set_int_option(fd: BorrowedFd<'_>, opt: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: setsockopt with a pointer to a live c_int and its size.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            &value as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// `SO_RCVTIMEO` of `usec` microseconds (below a second); true when the kernel took it.
pub(crate) fn set_recv_timeout(fd: BorrowedFd<'_>, usec: u32) -> bool {
    let tv = libc::timeval {
        tv_sec: 0,
        // `as _`: suseconds_t is i64 or i32 (armv7 musl) and its alias is deprecated there.
        tv_usec: usec as _,
    };
    // SAFETY: setsockopt with a live timeval and its size.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const libc::timeval as *const libc::c_void,
            size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    r == 0
}

fn kernel_addr(groups: u32) -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is plain data; zeroed (pid 0 = the kernel) is a valid value.
    let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    sa.nl_groups = groups;
    sa
}

/// Binds the socket to the multicast `groups`.
pub(crate) fn bind_groups(fd: BorrowedFd<'_>, groups: u32) -> io::Result<()> {
    let sa = kernel_addr(groups);
    // SAFETY: bind with a live sockaddr_nl and its size.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `msg` as one datagram to the kernel (netlink pid 0).
pub(crate) fn send_to_kernel(fd: BorrowedFd<'_>, msg: &[u8]) -> io::Result<usize> {
    let to = kernel_addr(0);
    // SAFETY: sendto with a live buffer and address.
    let r = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            msg.as_ptr() as *const libc::c_void,
            msg.len(),
            0,
            &to as *const libc::sockaddr_nl as *const libc::sockaddr,
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// One datagram of a dump's answer: its length, or why none came (the socket's receive timeout,
/// an error; an empty datagram as the last OS error).
pub(crate) fn recv_dump(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    match recv(fd, buf, 0) {
        Ok(n) if n > 0 => Ok(n),
        Ok(_) => Err(io::Error::last_os_error()),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// One `recv(fd, buf, flags)`: the datagram's length (cut to the buffer).
pub(crate) fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> Result<usize, Errno> {
    // SAFETY: recv into our own buffer of its length.
    let r = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
            flags,
        )
    };
    check(r)
}
