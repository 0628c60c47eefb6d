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

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;

use crate::parse::cn_proc::{self, ProcEvent};
use crate::sys::netlink;

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

impl Connector {
    /// Opens the socket, subscribes and waits up to `wait` for the kernel's acknowledgement.
    /// Err: why the connector cannot be used (for the log).
    pub fn open(wait: Duration) -> Result<Connector, String> {
        let fd = netlink::socket(libc::NETLINK_CONNECTOR, libc::SOCK_NONBLOCK)
            .map_err(|e| format!("socket(NETLINK_CONNECTOR): {e}"))?;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            if netlink::set_int_option(fd.as_fd(), opt, RCVBUF) {
                break;
            }
        }
        netlink::bind_groups(fd.as_fd(), cn_proc::CN_IDX_PROC)
            .map_err(|e| format!("bind(CN_IDX_PROC): {e}"))?;
        let mut rnd = [0u8; 4];
        let _ = crate::token::random_bytes(&mut rnd);
        let nonce = u32::from_ne_bytes(rnd) | 1;
        let msg = cn_proc::listen_message(nonce, nonce, std::process::id());
        netlink::send_to_kernel(fd.as_fd(), &msg)
            .map_err(|e| format!("send(PROC_CN_MCAST_LISTEN): {e}"))?;
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
            let r = match netlink::recv(self.fd.as_fd(), &mut self.buf, libc::MSG_DONTWAIT) {
                Ok(r) => r,
                Err(Errno::EINTR) => continue,
                Err(Errno::ENOBUFS) => {
                    self.overruns = self.overruns.saturating_add(1);
                    f(ProcEvent::Overrun);
                    continue;
                }
                Err(_) => break, // EAGAIN: nothing more now
            };
            n += 1;
            for m in cn_proc::messages(&self.buf[..r]) {
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
