//! The kernel's process connector as one more descriptor of the server's poll loop: how each
//! process ended (exit status, signal, core) without waiting for a /proc scan.
//!
//! A netlink `NETLINK_CONNECTOR` socket bound to the `CN_IDX_PROC` group, subscribed with
//! `PROC_CN_MCAST_LISTEN`. The kernel answers the subscription with an acknowledgement; an
//! agent without CAP_NET_ADMIN gets EPERM, one in a non-initial network namespace cannot create
//! the socket, one in a non-initial pid namespace gets no answer at all (the kernel ignores
//! such listeners). Any of these, or seccomp refusing the syscalls, leaves the agent on /proc
//! scanning ([`crate::sampler`] marks those exits `ExitSeen::Scan`).
//!
//! Work per wake-up is bounded ([`Connector::drain`] reads at most a given number of
//! datagrams; the rest wait for the next round of the loop), and a receive-buffer overrun
//! (ENOBUFS: the kernel dropped messages, e.g. in a fork storm) is counted, never fatal.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::parse::cn_proc::{self, ProcEvent};

/// Receive buffer asked for (SO_RCVBUFFORCE as root, else SO_RCVBUF capped by rmem_max): one
/// message is 76 bytes of payload (~0.8 KiB with skb overhead), so 4 MiB holds ~5,000 events:
/// the server reads at most twice an interval.
const RCVBUF: libc::c_int = 4 << 20;
/// One datagram holds one message; 1 KiB leaves room for future event sizes.
const DGRAM_BUF: usize = 1024;

pub struct Connector {
    fd: OwnedFd,
    buf: Box<[u8]>,
    /// Receive-buffer overruns seen (each is one or more dropped messages).
    pub overruns: u32,
    /// Datagrams that did not parse (logged once).
    pub malformed: u32,
    log_malformed: bool,
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

impl Connector {
    /// Opens the socket, subscribes and waits up to `wait` for the kernel's acknowledgement.
    /// Err: why the connector cannot be used (for the log).
    pub fn open(wait: Duration) -> Result<Connector, String> {
        // SAFETY: plain socket(2); the descriptor is owned right below.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::NETLINK_CONNECTOR,
            )
        };
        if raw < 0 {
            return Err(format!("socket(NETLINK_CONNECTOR): {}", errno()));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: setsockopt with a pointer to a live c_int and its size.
            let r = unsafe {
                libc::setsockopt(
                    raw,
                    libc::SOL_SOCKET,
                    opt,
                    &RCVBUF as *const libc::c_int as *const libc::c_void,
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r == 0 {
                break;
            }
        }
        // SAFETY: sockaddr_nl is plain data; zeroed is a valid value.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        sa.nl_groups = cn_proc::CN_IDX_PROC;
        // SAFETY: bind with a live sockaddr_nl and its size.
        let r = unsafe {
            libc::bind(
                raw,
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(format!("bind(CN_IDX_PROC): {}", errno()));
        }
        let mut rnd = [0u8; 4];
        let _ = crate::token::random_bytes(&mut rnd);
        let nonce = u32::from_ne_bytes(rnd) | 1;
        let msg = cn_proc::listen_message(nonce, nonce, std::process::id());
        // SAFETY: sockaddr_nl is plain data; zeroed (pid 0 = the kernel) is what we want.
        let mut to: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        to.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: sendto with a live buffer and address.
        let r = unsafe {
            libc::sendto(
                raw,
                msg.as_ptr() as *const libc::c_void,
                msg.len(),
                0,
                &to as *const libc::sockaddr_nl as *const libc::sockaddr,
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(format!("send(PROC_CN_MCAST_LISTEN): {}", errno()));
        }
        let mut c = Connector {
            fd,
            buf: vec![0u8; DGRAM_BUF].into_boxed_slice(),
            overruns: 0,
            malformed: 0,
            log_malformed: true,
        };
        // The acknowledgement goes to every listener of the group: ours carries our nonce + 1
        // (the kernel numbers `seq` itself). Events before it are dropped (the scan at start
        // sees those processes).
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "no answer to PROC_CN_MCAST_LISTEN within {} ms (not in the initial pid namespace?)",
                    wait.as_millis()
                ));
            }
            let mut pfd = [nix::poll::PollFd::new(
                c.fd.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let ms = left.as_millis().clamp(1, 60_000) as u16;
            match nix::poll::poll(&mut pfd, nix::poll::PollTimeout::from(ms)) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("poll: {e}")),
            }
            let mut answer = None;
            c.drain(64, &mut |ev| {
                if let ProcEvent::Ack { err, ack } = ev
                    && (ack == nonce.wrapping_add(1) || ack == 0 && err != 0)
                {
                    answer = Some(err);
                }
            });
            match answer {
                Some(0) => return Ok(c),
                Some(e) => {
                    return Err(format!(
                        "PROC_CN_MCAST_LISTEN refused: {}",
                        std::io::Error::from_raw_os_error(e as i32)
                    ));
                }
                None => {}
            }
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Reads at most `max_datagrams` datagrams without blocking and hands every message to
    /// `f`. Returns how many datagrams were read (`max_datagrams`: there may be more).
    pub fn drain(&mut self, max_datagrams: usize, f: &mut dyn FnMut(ProcEvent)) -> usize {
        let mut n = 0;
        while n < max_datagrams {
            // SAFETY: recv into our own buffer of its length.
            let r = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr() as *mut libc::c_void,
                    self.buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if r < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::ENOBUFS) => {
                        self.overruns = self.overruns.saturating_add(1);
                        f(ProcEvent::Overrun);
                        continue;
                    }
                    _ => break, // EAGAIN: nothing more now
                }
            }
            n += 1;
            for m in cn_proc::messages(&self.buf[..r as usize]) {
                match m {
                    Ok(ProcEvent::Overrun) => {
                        self.overruns = self.overruns.saturating_add(1);
                        f(ProcEvent::Overrun);
                    }
                    Ok(ev) => f(ev),
                    Err(e) => {
                        self.malformed = self.malformed.saturating_add(1);
                        if std::mem::take(&mut self.log_malformed) {
                            log::warn!("process connector: datagram skipped: {e}");
                        }
                    }
                }
            }
        }
        n
    }
}
