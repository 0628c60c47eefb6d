//! The kernel log (`/dev/kmsg`, Linux 3.5+) as one more descriptor of the poll loop: read
//! without blocking from the agent's start on (the history before it is skipped), one record
//! per read, a bounded number per wake-up. Records the kernel overwrote before the agent read
//! them (EPIPE) are counted, never fatal. What they mean is [`crate::parse::kmsg`]'s business;
//! which of them become events, and how many a minute, is `KernelLog`'s.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use nasprobe_proto::Event;
use nix::errno::Errno;

use crate::parse::kmsg::{Kind, Record, classify, parse_record};
use crate::sampler::Sampler;
use crate::sys::fd;

/// Kernel log records read per wake-up of the loop.
pub(crate) const KMSG_RECORDS_PER_WAKE: usize = 64;
/// Kernel log records read before a sample at most: the whole backlog, so that an OOM kill is
/// marked before the sample's /proc scan finds its process gone. An OOM report lists every
/// process, one line each, before its "Killed process" line (a NAS with 300 processes writes
/// ~350 lines); found on the emulated NAS, where the kill was otherwise missed.
pub(crate) const KMSG_RECORDS_PER_TICK: usize = 2048;
/// `KernelMessage` events per minute at most; the rest are counted in the next one's
/// `suppressed` (a flapping link or a segfault loop must not flood the history ring).
const KMSG_EVENTS_PER_MINUTE: u32 = 12;

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
        let fd = fd::open(
            c"/dev/kmsg",
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
        .map_err(|e| format!("/dev/kmsg: {}", std::io::Error::from(e)))?;
        // SEEK_END on /dev/kmsg means "after the last record".
        if let Err(e) = fd::seek0(fd.as_fd(), libc::SEEK_END) {
            return Err(format!(
                "/dev/kmsg: seek to the end: {}",
                std::io::Error::from(e)
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
            let r = match fd::read(self.fd.as_fd(), &mut self.buf) {
                Ok(r) => r,
                Err(Errno::EINTR) => continue,
                // Overwritten before we read it; the next read gives the oldest left.
                Err(Errno::EPIPE) => {
                    self.lost = self.lost.saturating_add(1);
                    continue;
                }
                // A record longer than the buffer (cannot happen with 8 KiB, but a kernel
                // that did it would make every read fail): skip to the end, count it.
                Err(Errno::EINVAL) => {
                    self.lost = self.lost.saturating_add(1);
                    let _ = fd::seek0(self.fd.as_fd(), libc::SEEK_END);
                    break;
                }
                Err(_) => break, // EAGAIN: nothing more now
            };
            if r == 0 {
                break;
            }
            n += 1;
            if let Ok(rec) = parse_record(&self.buf[..r]) {
                f(rec);
            }
        }
        n
    }
}

/// The kernel log as a source of the server's events: [`Kmsg`] plus the rate limit of the
/// `KernelMessage` events it yields.
pub(crate) struct KernelLog {
    kmsg: Kmsg,
    window: Instant,
    sent: u32,
    suppressed: u32,
    /// The pid of the last OOM kill passed on (its two lines make one event).
    last_oom: u32,
    /// Pids of the OOM kills read since [`KernelLog::take_oom_pids`] last ran (the late marks
    /// of exits a scan found while their kill's lines were still being written).
    oom_pids: heapless::Vec<u32, OOM_PIDS>,
}

/// OOM kills remembered between two samples: one sample's worth is one or two in practice; a
/// kill beyond this many is still marked in the table, only not on an exit already found.
const OOM_PIDS: usize = 8;

impl KernelLog {
    /// Opens /dev/kmsg positioned at its end. Err: why not (for the log).
    pub(crate) fn open() -> Result<KernelLog, String> {
        Ok(KernelLog {
            kmsg: Kmsg::open()?,
            window: Instant::now(),
            sent: 0,
            suppressed: 0,
            last_oom: 0,
            oom_pids: heapless::Vec::new(),
        })
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.kmsg.fd()
    }

    /// The pids of the OOM kills read since the last call.
    pub(crate) fn take_oom_pids(&mut self) -> heapless::Vec<u32, OOM_PIDS> {
        core::mem::take(&mut self.oom_pids)
    }

    /// Reads what the kernel log holds (at most `max` records): OOM kills mark the exit of
    /// their process; lines about tracked processes and known NICs become `KernelMessage`
    /// events, rate-limited, handed to `push`. An OOM kill of a process the sampler no longer
    /// tracks (gone before its line was read) is still passed on with its pid.
    pub(crate) fn drain(&mut self, sampler: &mut Sampler, max: usize, push: &mut dyn FnMut(Event)) {
        let mut found: Vec<Event> = Vec::new();
        let last_oom = &mut self.last_oom;
        let oom_pids = &mut self.oom_pids;
        self.kmsg.drain(max, &mut |rec| {
            let (pid, nic) = match classify(rec.text, &|w| sampler.is_nic(w)) {
                Kind::OomKill { pid } => {
                    // The kill comes as two lines on 4.19+ ("oom-kill:…" and "Killed
                    // process"): one event for it.
                    sampler.oom_kill(pid);
                    if !oom_pids.contains(&pid) {
                        let _ = oom_pids.push(pid);
                    }
                    if std::mem::replace(last_oom, pid) == pid {
                        return;
                    }
                    (Some(pid), None)
                }
                Kind::Segfault { pid } | Kind::HungTask { pid } => {
                    if !sampler.is_tracked(pid) {
                        return;
                    }
                    (Some(pid), None)
                }
                Kind::Nic { name } => (None, Some(name)),
                Kind::TcpMemory => (None, None),
                Kind::Other => return,
            };
            let mut text = nasprobe_proto::Cmdline::new();
            sampler.redact_line(rec.text, &mut text);
            let mut dev = None;
            if let Some(n) = nic {
                let mut d = nasprobe_proto::DevName::new();
                crate::parse::to_label(n, nasprobe_proto::DEV_NAME_LEN, &mut d);
                dev = Some(d);
            }
            found.push(Event::KernelMessage(nasprobe_proto::KernelMessage {
                level: rec.level,
                pid,
                nic: dev,
                text,
                suppressed: 0,
            }));
        });
        let now = Instant::now();
        for mut ev in found {
            if now.duration_since(self.window) >= Duration::from_secs(60) {
                self.window = now;
                self.sent = 0;
            }
            if self.sent >= KMSG_EVENTS_PER_MINUTE {
                if self.suppressed == 0 {
                    log::info!(
                        "kernel messages: more than {KMSG_EVENTS_PER_MINUTE} a minute, the rest of this minute is counted, not sent"
                    );
                }
                self.suppressed = self.suppressed.saturating_add(1);
                continue;
            }
            if let Event::KernelMessage(m) = &mut ev {
                m.suppressed = std::mem::take(&mut self.suppressed);
            }
            self.sent += 1;
            push(ev);
        }
    }
}
