//! The agent's server: one thread, one `poll` loop over the signal pipe, the listening socket,
//! the kernel's process connector and the kernel log (when available), the connected collectors
//! and the sampling deadline.
//!
//! - Sampling runs on CLOCK_MONOTONIC deadlines (`std::time::Instant`): the next deadline is the
//!   previous one plus the interval; missed ticks are skipped, never burst. A late wake-up is
//!   harmless: the measured interval travels with the sample.
//! - Every sample and event is encoded once into a wire frame and pushed into the [`Ring`]; a
//!   client is a cursor into the ring plus one small partial-write buffer. A client the ring
//!   overtakes, or whose socket accepts nothing for `--stall-timeout`, is dropped (it resumes
//!   later). Nothing a client does grows the agent's memory or delays sampling.
//! - The conversation is the one of `docs/protocol.md`.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nasprobe_proto::frame::{
    LEN_PREFIX, MAX_CLIENT_FRAME_LEN, MAX_FRAME_LEN, decode_frame, decode_sealed_frame,
    encode_sealed_frame,
};
use nasprobe_proto::handshake::{AgentAction, AgentHandshake, HandshakeError};
use nasprobe_proto::session::{FrameMac, MAC_LEN};
use nasprobe_proto::{
    AgentStart, Event, ExitSeen, ExitWatch, FrameError, Gone, Hello, KeepAlive, Message,
    PROTOCOL_VERSION, Record, RecordBody, Refused, encode_frame, version_advice,
};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::config::Config;
use crate::connector::Connector;
use crate::daemon::Signals;
use crate::kmsg::Kmsg;
use crate::parse::kmsg::{Kind, classify};
use crate::ring::Ring;
use crate::sampler::{Sampler, wall_ms};

/// Send a `KeepAlive` after this long without sending anything.
pub(crate) const KEEPALIVE_AFTER: Duration = Duration::from_secs(5);
/// Failed authentications from one address within [`AUTH_FAIL_WINDOW`] answered at once; each
/// further wrong proof from it is answered only after a delay that doubles with every failure
/// ([`AUTH_DELAY_FIRST`] .. [`AUTH_DELAY_MAX`]). A right proof is never delayed or refused: a
/// collector behind the same address as a guesser (NAT, the same desktop) is not locked out.
pub(crate) const AUTH_FAIL_LIMIT: u32 = 3;
pub(crate) const AUTH_FAIL_WINDOW: Duration = Duration::from_secs(60);
/// Delay of the refusal of the first wrong proof over the limit.
pub(crate) const AUTH_DELAY_FIRST: Duration = Duration::from_millis(250);
/// Longest delay of a refusal (below the handshake deadline).
pub(crate) const AUTH_DELAY_MAX: Duration = Duration::from_secs(1);
/// Frames a client may send per second once authenticated (it needs one `KeepAlive` in a
/// while); more and it is dropped.
pub(crate) const CLIENT_FRAMES_PER_S: u32 = 20;
/// Addresses the rate limiter remembers (the oldest entry is forgotten first).
const LIMITER_SLOTS: usize = 16;
/// How long the agent waits at start for the kernel to acknowledge the connector subscription.
const CONNECTOR_ACK_WAIT: Duration = Duration::from_millis(500);
/// Connector datagrams read per wake-up of the loop (one message each): bounded work, so that a
/// fork storm cannot delay sampling or the collectors; the rest are read at the next round.
const CONNECTOR_DGRAMS_PER_WAKE: usize = 256;
/// Connector datagrams read at a sampling tick, before the sample (the exits it reports).
const CONNECTOR_DGRAMS_PER_TICK: usize = 8192;
/// Kernel log records read per wake-up of the loop.
const KMSG_RECORDS_PER_WAKE: usize = 64;
/// `KernelMessage` events per minute at most; the rest are counted in the next one's
/// `suppressed` (a flapping link or a segfault loop must not flood the history ring).
const KMSG_EVENTS_PER_MINUTE: u32 = 12;
/// Largest frame the agent ever sends (prefix and MAC included).
const MAX_OUT_FRAME: usize = LEN_PREFIX + MAX_FRAME_LEN + MAC_LEN;
/// Per-client partial-write buffer: control frames and the tail of a half-sent record.
const OUT_CAP: usize = 2 * MAX_OUT_FRAME;
const IN_CAP: usize = LEN_PREFIX + MAX_CLIENT_FRAME_LEN + MAC_LEN;
/// History frames sealed and handed to one `writev` (two iovecs each: frame, MAC); 64 frames
/// of a 1 Hz agent are a minute of backlog, and 128 iovecs are far under IOV_MAX (1024).
const SEAL_BATCH: usize = 64;

/// Copies as much of `s` as fits (on a char boundary) into a heapless string.
pub(crate) fn short_str<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

fn refused(reason: &str) -> Message {
    Message::Refused(Refused {
        reason: short_str(reason),
    })
}

// ---------------------------------------------------------------------------------------------
// Rate limiting of failed authentications

#[derive(Clone, Copy)]
struct FailEntry {
    ip: IpAddr,
    window_start: Instant,
    failures: u32,
}

/// Remembers failed authentications (per failed nonce pair, counted by address) in a fixed
/// table; see [`AUTH_FAIL_LIMIT`].
pub(crate) struct AuthLimiter {
    slots: [Option<FailEntry>; LIMITER_SLOTS],
}

impl Default for AuthLimiter {
    fn default() -> Self {
        AuthLimiter {
            slots: [None; LIMITER_SLOTS],
        }
    }
}

impl AuthLimiter {
    /// A right proof from `ip`: its failures are forgotten.
    pub fn succeed(&mut self, ip: IpAddr) {
        for e in self.slots.iter_mut() {
            if e.is_some_and(|e| e.ip == ip) {
                *e = None;
            }
        }
    }

    /// Records a wrong proof; returns how long to wait before refusing it (None: at once).
    pub fn fail(&mut self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let idx = match self
            .slots
            .iter()
            .position(|e| e.is_some_and(|e| e.ip == ip))
        {
            Some(i) => i,
            None => {
                // A free slot, else forget the entry with the oldest window.
                let i = self
                    .slots
                    .iter()
                    .position(|e| e.is_none())
                    .unwrap_or_else(|| {
                        (0..LIMITER_SLOTS)
                            .min_by_key(|&i| self.slots[i].map(|e| e.window_start))
                            .unwrap_or(0)
                    });
                self.slots[i] = Some(FailEntry {
                    ip,
                    window_start: now,
                    failures: 0,
                });
                i
            }
        };
        let e = self.slots[idx].as_mut()?;
        if now.duration_since(e.window_start) > AUTH_FAIL_WINDOW {
            e.window_start = now;
            e.failures = 0;
        }
        e.failures = e.failures.saturating_add(1);
        let over = e.failures.checked_sub(AUTH_FAIL_LIMIT + 1)?;
        Some(
            AUTH_DELAY_FIRST
                .saturating_mul(1u32 << over.min(16))
                .min(AUTH_DELAY_MAX),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Clients

struct Client {
    stream: TcpStream,
    peer: SocketAddr,
    /// Where the handshake is (streaming once `Resume` has arrived).
    hs: AgentHandshake,
    /// Handshake deadline (until `Resume` has arrived).
    deadline: Instant,
    inbuf: [u8; IN_CAP],
    in_len: usize,
    out: Vec<u8>,
    out_pos: usize,
    /// Next record to send.
    next_seq: u64,
    /// Its offset in the ring, once known (`None` while it is not written yet).
    next_off: Option<usize>,
    last_send: Instant,
    /// Last time the socket accepted bytes or there was nothing to send.
    last_progress: Instant,
    records_sent: u64,
    /// Frames received since `frames_since` once streaming (at most [`CLIENT_FRAMES_PER_S`] a
    /// second).
    frames: u32,
    frames_since: Instant,
    /// A wrong proof over the limit: refused at `deadline`, input ignored until then.
    refusing: bool,
    /// MACs of the frames to the collector (after `AuthOk`) and from it (after `Auth`).
    tx_mac: Option<FrameMac>,
    rx_mac: Option<FrameMac>,
}

impl Client {
    fn pending(&self, ring: &Ring) -> bool {
        self.out_pos < self.out.len() || (self.hs.is_streaming() && self.next_seq < ring.next_seq())
    }

    /// Queues one control frame. Fails (the client is dropped) only if the partial-write buffer
    /// cannot take it, which needs a client that reads nothing.
    fn queue(&mut self, msg: &Message, scratch: &mut [u8]) -> Result<(), String> {
        let n = match self.tx_mac.as_mut() {
            Some(mac) => encode_sealed_frame(msg, scratch, mac),
            None => encode_frame(msg, scratch),
        }
        .map_err(|e| format!("encoding a reply: {e}"))?;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        if self.out.len() + n > OUT_CAP {
            return Err("send buffer full".into());
        }
        self.out.extend_from_slice(&scratch[..n]);
        Ok(())
    }

    /// Writes what is pending: the partial-write buffer first, then whole runs of ring frames.
    /// `Err` means drop the client.
    fn flush(&mut self, ring: &Ring, now: Instant) -> Result<(), String> {
        loop {
            if self.out_pos < self.out.len() {
                match self.stream.write(&self.out[self.out_pos..]) {
                    Ok(0) => return Err("connection closed while sending".into()),
                    Ok(n) => {
                        self.out_pos += n;
                        self.last_send = now;
                        self.last_progress = now;
                        if self.out_pos == self.out.len() {
                            self.out.clear();
                            self.out_pos = 0;
                        }
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("send failed: {e}")),
                }
            }
            if !self.hs.is_streaming() || self.next_seq >= ring.next_seq() {
                self.last_progress = now;
                return Ok(());
            }
            if !ring.holds(self.next_seq) {
                return Err(format!(
                    "fell behind: record {} was overwritten before it could be sent \
                     (ring holds {}..); it will resume",
                    self.next_seq,
                    ring.oldest_seq()
                ));
            }
            let Some(mac) = self.tx_mac.as_mut() else {
                return Err("streaming before the handshake sealed the connection".into());
            };
            let off = match self.next_off {
                Some(o) => o,
                None => ring.find(self.next_seq).unwrap_or(0),
            };
            // The next frames of the shared ring, each followed by this client's MAC of it.
            let mut offs = [0usize; SEAL_BATCH];
            let mut tags = [[0u8; MAC_LEN]; SEAL_BATCH];
            let count = ((ring.next_seq() - self.next_seq) as usize).min(SEAL_BATCH);
            let mut o = off;
            for i in 0..count {
                if i > 0 {
                    o = ring.next_off(o);
                }
                offs[i] = o;
                tags[i] = mac.tag_at(mac.counter() + i as u64, ring.frame_at(o));
            }
            let mut iov = [io::IoSlice::new(&[]); 2 * SEAL_BATCH];
            for i in 0..count {
                iov[2 * i] = io::IoSlice::new(ring.frame_at(offs[i]));
                iov[2 * i + 1] = io::IoSlice::new(&tags[i]);
            }
            let n = match self.stream.write_vectored(&iov[..2 * count]) {
                Ok(0) => return Err("connection closed while sending".into()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.next_off = Some(off);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("send failed: {e}")),
            };
            self.last_send = now;
            self.last_progress = now;
            // Step over the frames written; one written in part leaves its tail and MAC in `out`.
            let mut at = 0usize;
            let mut started = 0usize;
            while started < count && at < n {
                let frame = ring.frame_at(offs[started]);
                let end = at + frame.len() + MAC_LEN;
                if end > n {
                    self.out.clear();
                    let from = n - at;
                    if from < frame.len() {
                        self.out.extend_from_slice(&frame[from..]);
                        self.out.extend_from_slice(&tags[started]);
                    } else {
                        self.out
                            .extend_from_slice(&tags[started][from - frame.len()..]);
                    }
                    self.out_pos = 0;
                }
                at = end;
                started += 1;
            }
            mac.advance(started as u64);
            self.next_seq += started as u64;
            self.records_sent += started as u64;
            self.next_off =
                (self.next_seq < ring.next_seq()).then(|| ring.next_off(offs[started - 1]));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// Timeouts and limits of the server (from the flags).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max_clients: usize,
    pub handshake_timeout: Duration,
    pub stall_timeout: Duration,
    /// SO_SNDBUF of client sockets; 0 leaves the kernel's default.
    pub client_sndbuf: usize,
}

impl Limits {
    pub(crate) fn from_config(cfg: &Config) -> Limits {
        Limits {
            max_clients: cfg.max_clients,
            handshake_timeout: Duration::from_millis(cfg.handshake_timeout_ms as u64),
            stall_timeout: Duration::from_millis(cfg.stall_timeout_ms as u64),
            client_sndbuf: cfg.client_sndbuf,
        }
    }
}

pub struct Server {
    cfg: Config,
    limits: Limits,
    token: Vec<u8>,
    listener: TcpListener,
    ring: Ring,
    sampler: Sampler,
    clients: Vec<Option<Client>>,
    scratch: Box<[u8]>,
    /// The sample being built: a `Record` message allocated once.
    sample_msg: Box<Message>,
    limiter: AuthLimiter,
    instance_id: u64,
    started_ms: u64,
    interval: Duration,
    next_tick: Instant,
    last_sample_at: Option<Instant>,
    samples: u64,
    skipped_ticks: u64,
    ring_full: bool,
    accept_paused_until: Option<Instant>,
    /// The test running for a collector (`--allow-tests`), and when the last one ended.
    test: Option<crate::selftest::Running>,
    last_test_end: Option<Instant>,
    /// The kernel's process connector, when it could be subscribed to.
    connector: Option<Connector>,
    /// Connector overruns already announced in an `ExitWatch` event.
    overruns_sent: u32,
    /// The connector's descriptor is polled: once it woke the loop, it waits for the next tick
    /// (at most two reads an interval: a busy machine forks thousands of times a second, and a
    /// wake-up per message cost ~0.5-1 ms of CPU per 100 ms sample on this one).
    connector_armed: bool,
    /// The kernel log, for OOM kills and kernel messages about tracked processes and NICs.
    kmsg: Option<Kmsg>,
    kmsg_window: Instant,
    kmsg_sent: u32,
    kmsg_suppressed: u32,
    /// The pid of the last OOM kill passed on (its two lines make one event).
    kmsg_last_oom: u32,
}

/// Why `run` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Signal(i32),
}

impl Server {
    /// Sets up the ring, the sampler and the first records (`AgentStart`, then whatever the
    /// sampler's priming emits). `listener` must already be bound.
    pub fn new(cfg: Config, token: Vec<u8>, listener: TcpListener) -> io::Result<Server> {
        listener.set_nonblocking(true)?;
        let mut id = [0u8; 8];
        crate::token::random_bytes(&mut id)?;
        let instance_id = u64::from_le_bytes(id).max(1);
        let limits = Limits::from_config(&cfg);
        let interval = Duration::from_millis(cfg.interval_ms as u64);
        let sampler = Sampler::new(&cfg);
        let mut s = Server {
            ring: Ring::new(cfg.history_bytes),
            clients: (0..limits.max_clients).map(|_| None).collect(),
            scratch: vec![0u8; MAX_OUT_FRAME].into_boxed_slice(),
            sample_msg: Box::new(Message::Record(Record {
                seq: 0,
                time_ms: 0,
                body: RecordBody::Sample(nasprobe_proto::Sample::default()),
            })),
            limiter: AuthLimiter::default(),
            instance_id,
            started_ms: wall_ms(),
            interval,
            next_tick: Instant::now() + interval,
            last_sample_at: None,
            samples: 0,
            skipped_ticks: 0,
            ring_full: false,
            accept_paused_until: None,
            test: None,
            last_test_end: None,
            connector: None,
            overruns_sent: 0,
            connector_armed: true,
            kmsg: None,
            kmsg_window: Instant::now(),
            kmsg_sent: 0,
            kmsg_suppressed: 0,
            kmsg_last_oom: 0,
            cfg,
            limits,
            token,
            listener,
            sampler,
        };
        let start = Event::AgentStart(AgentStart {
            agent_version: short_str(env!("CARGO_PKG_VERSION")),
            instance_id,
            interval_ms: s.cfg.interval_ms,
        });
        push_event(&mut s.ring, &mut s.scratch, &mut s.clients, start);
        s.connector = s.open_connector();
        s.sampler.set_kernel_exits(s.connector.is_some());
        s.push_exit_watch();
        if s.sampler.proc_is_real() {
            s.kmsg = Kmsg::open()
                .map_err(|e| log::warn!("kernel log unavailable ({e}): OOM kills are not marked"))
                .ok();
        }
        s.take_sample(Instant::now());
        Ok(s)
    }

    /// The process connector, unless `--no-connector`, a generated `--proc-root` (its pids
    /// are not the kernel's) or the kernel refuses it: then exits come from /proc scans.
    fn open_connector(&self) -> Option<Connector> {
        if !self.cfg.connector {
            log::info!(
                "process connector off (--no-connector): exits are found by scanning /proc, without status"
            );
            return None;
        }
        if !self.sampler.proc_is_real() {
            log::info!("process connector off: --proc-root is not the kernel's procfs");
            return None;
        }
        match Connector::open(CONNECTOR_ACK_WAIT) {
            Ok(c) => {
                log::info!("process connector on: exits carry their status");
                Some(c)
            }
            Err(e) => {
                log::warn!(
                    "process connector unavailable ({e}): exits are found by scanning /proc, without status"
                );
                None
            }
        }
    }

    fn push_exit_watch(&mut self) {
        let ev = Event::ExitWatch(ExitWatch {
            source: if self.connector.is_some() {
                ExitSeen::Kernel
            } else {
                ExitSeen::Scan
            },
            dropped: self.overruns_sent,
        });
        push_event(&mut self.ring, &mut self.scratch, &mut self.clients, ev);
    }

    /// Reads what the connector holds, at most `max` datagrams.
    fn read_connector(&mut self, max: usize) {
        let Server {
            connector, sampler, ..
        } = self;
        if let Some(c) = connector {
            c.drain(max, &mut |ev| sampler.proc_event(ev));
        }
    }

    /// Reads what the kernel log holds (at most `KMSG_RECORDS_PER_WAKE` records): OOM kills
    /// mark the exit of their process; lines about tracked processes and known NICs become
    /// `KernelMessage` events, rate-limited.
    fn read_kmsg(&mut self) {
        let Some(mut k) = self.kmsg.take() else {
            return;
        };
        let mut found: Vec<Event> = Vec::new();
        let last_oom = &mut self.kmsg_last_oom;
        k.drain(KMSG_RECORDS_PER_WAKE, &mut |rec| {
            let sampler = &mut self.sampler;
            let (pid, nic) = match classify(rec.text, &|w| sampler.is_nic(w)) {
                Kind::OomKill { pid } => {
                    // The kill comes as two lines on 4.19+ ("oom-kill:…" and "Killed
                    // process"): one event for it.
                    if !sampler.oom_kill(pid) || std::mem::replace(last_oom, pid) == pid {
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
        self.kmsg = Some(k);
        let now = Instant::now();
        for mut ev in found {
            if now.duration_since(self.kmsg_window) >= Duration::from_secs(60) {
                self.kmsg_window = now;
                self.kmsg_sent = 0;
            }
            if self.kmsg_sent >= KMSG_EVENTS_PER_MINUTE {
                if self.kmsg_suppressed == 0 {
                    log::info!(
                        "kernel messages: more than {KMSG_EVENTS_PER_MINUTE} a minute, the rest of this minute is counted, not sent"
                    );
                }
                self.kmsg_suppressed = self.kmsg_suppressed.saturating_add(1);
                continue;
            }
            if let Event::KernelMessage(m) = &mut ev {
                m.suppressed = std::mem::take(&mut self.kmsg_suppressed);
            }
            self.kmsg_sent += 1;
            push_event(&mut self.ring, &mut self.scratch, &mut self.clients, ev);
        }
    }

    pub fn instance_id(&self) -> u64 {
        self.instance_id
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Runs until SIGTERM/SIGINT/SIGHUP.
    pub fn run(&mut self, signals: &Signals) -> io::Result<Exit> {
        let mut ready_clients: Vec<(usize, PollFlags)> = Vec::with_capacity(self.clients.len());
        let mut test_done;
        loop {
            let now = Instant::now();
            let timeout = self.poll_timeout(now);
            let (sig_ready, listener_ready, connector_ready, kmsg_ready) = {
                let mut fds: Vec<PollFd> = Vec::with_capacity(4 + self.clients.len());
                let mut slots: Vec<usize> = Vec::with_capacity(self.clients.len());
                fds.push(PollFd::new(signals.fd(), PollFlags::POLLIN));
                let listen_ev = match self.accept_paused_until {
                    Some(t) if t > now => PollFlags::empty(),
                    _ => PollFlags::POLLIN,
                };
                fds.push(PollFd::new(self.listener.as_fd(), listen_ev));
                let mut at_connector = None;
                if let Some(c) = self.connector.as_ref().filter(|_| self.connector_armed) {
                    at_connector = Some(fds.len());
                    fds.push(PollFd::new(c.fd(), PollFlags::POLLIN));
                }
                let mut at_kmsg = None;
                if let Some(k) = &self.kmsg {
                    at_kmsg = Some(fds.len());
                    fds.push(PollFd::new(k.fd(), PollFlags::POLLIN));
                }
                let first_client = fds.len();
                // The running test's "done" pipe, last so that the client indices stay
                // first_client + k.
                for (i, c) in self.clients.iter().enumerate() {
                    if let Some(c) = c {
                        let mut ev = PollFlags::POLLIN;
                        if c.pending(&self.ring) {
                            ev |= PollFlags::POLLOUT;
                        }
                        fds.push(PollFd::new(c.stream.as_fd(), ev));
                        slots.push(i);
                    }
                }
                let test_at = fds.len();
                if let Some(t) = &self.test {
                    fds.push(PollFd::new(t.fd(), PollFlags::POLLIN));
                }
                match poll(&mut fds, timeout) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
                let rev = |f: &PollFd| f.revents().unwrap_or(PollFlags::empty());
                ready_clients.clear();
                for (k, &slot) in slots.iter().enumerate() {
                    let r = rev(&fds[first_client + k]);
                    if !r.is_empty() {
                        ready_clients.push((slot, r));
                    }
                }
                test_done = fds.get(test_at).is_some_and(|f| !rev(f).is_empty());
                (
                    !rev(&fds[0]).is_empty(),
                    !rev(&fds[1]).is_empty(),
                    at_connector.is_some_and(|k| !rev(&fds[k]).is_empty()),
                    at_kmsg.is_some_and(|k| !rev(&fds[k]).is_empty()),
                )
            };
            if sig_ready && let Some(sig) = signals.take() {
                self.shutdown(sig);
                return Ok(Exit::Signal(sig));
            }
            // The kernel log first: an OOM kill's line comes before the exit it causes.
            if kmsg_ready {
                self.read_kmsg();
            }
            if connector_ready {
                self.read_connector(CONNECTOR_DGRAMS_PER_WAKE);
                self.connector_armed = false;
            }
            let now = Instant::now();
            if now >= self.next_tick {
                self.tick(now);
            }
            for &(slot, r) in &ready_clients {
                self.service(slot, r, now);
            }
            if listener_ready {
                self.accept_all(now);
            }
            if test_done {
                self.finish_test(now);
            }
            self.check_timers(now);
        }
    }

    fn poll_timeout(&self, now: Instant) -> PollTimeout {
        let mut until = self.next_tick;
        if let Some(t) = self.accept_paused_until {
            until = until.min(t);
        }
        for c in self.clients.iter().flatten() {
            if c.hs.is_testing() {
                continue;
            }
            if !c.hs.is_streaming() {
                until = until.min(c.deadline);
            } else if c.pending(&self.ring) {
                until = until.min(c.last_progress + self.limits.stall_timeout);
            } else {
                until = until.min(c.last_send + KEEPALIVE_AFTER);
            }
        }
        let d = until.saturating_duration_since(now);
        // Round up so that we never wake just before a deadline and spin.
        let ms = d.as_micros().div_ceil(1000).min(60_000) as u16;
        PollTimeout::from(ms)
    }

    fn shutdown(&mut self, sig: i32) {
        let n = self.clients.iter().flatten().count();
        log::info!(
            "signal {sig}: exiting ({} samples taken, {} ticks skipped, {n} clients closed)",
            self.samples,
            self.skipped_ticks
        );
        for slot in self.clients.iter_mut() {
            if let Some(mut c) = slot.take()
                && c.out_pos == c.out.len()
                && c.queue(&refused("agent stopping"), &mut self.scratch)
                    .is_ok()
            {
                let _ = c.stream.write(&c.out[c.out_pos..]);
            }
        }
    }

    /// Sampling tick: take a sample, schedule the next deadline (skipping missed ones) and send.
    ///
    /// The next deadline stays on the interval grid but at least half an interval after this
    /// sample is done: a late wake-up (or a sample descheduled half-way on a starved CPU) is
    /// never followed by one a fraction of a millisecond later, whose deltas would be too small
    /// to mean anything (found by the reliability stress test: 0.4 ms intervals at nice 19 on
    /// pegged cores).
    fn tick(&mut self, now: Instant) {
        // Exits the kernel reported up to now are in this sample, OOM kills marked.
        self.read_kmsg();
        self.read_connector(CONNECTOR_DGRAMS_PER_TICK);
        self.connector_armed = true;
        self.take_sample(now);
        if let Some(c) = &self.connector
            && c.overruns != self.overruns_sent
        {
            log::warn!(
                "process connector: the kernel dropped messages ({} overruns so far); exits among them are found by the scan, without status",
                c.overruns
            );
            self.overruns_sent = c.overruns;
            self.push_exit_watch();
        }
        let done = Instant::now();
        self.next_tick += self.interval;
        let earliest = done + self.interval / 2;
        if self.next_tick < earliest {
            let behind = earliest.duration_since(self.next_tick);
            let skip = (behind.as_nanos() / self.interval.as_nanos()) as u64 + 1;
            self.next_tick += self.interval * skip as u32;
            self.skipped_ticks += skip;
            log::debug!("late by {behind:?}: skipped {skip} ticks");
        }
        self.flush_streaming(now);
    }

    fn take_sample(&mut self, now: Instant) {
        let Server {
            sampler,
            sample_msg,
            ring,
            scratch,
            clients,
            ..
        } = self;
        let Message::Record(rec) = &mut **sample_msg else {
            return;
        };
        let RecordBody::Sample(sample) = &mut rec.body else {
            return;
        };
        sample.interval_us = 0;
        let ok = sampler.sample(sample, &mut |ev| push_event(ring, scratch, clients, ev));
        let prev = self.last_sample_at.replace(now);
        if !ok {
            return;
        }
        if sample.interval_us == 0
            && let Some(p) = prev
        {
            sample.interval_us = now.duration_since(p).as_micros().min(u32::MAX as u128) as u32;
        }
        sample.agent.clients = self.clients.iter().flatten().count().min(255) as u8;
        rec.seq = self.ring.next_seq();
        rec.time_ms = self.sampler.sample_wall_ms();
        match encode_frame(&self.sample_msg, &mut self.scratch) {
            Ok(n) => {
                push_frame(&mut self.ring, &self.scratch[..n], &mut self.clients);
                self.samples += 1;
                if !self.ring_full && self.ring.oldest_seq() > 1 {
                    self.ring_full = true;
                    let (oldest, newest) = self.ring.seq_range();
                    log::info!(
                        "history ring full after {} samples: it holds records {oldest}..={newest} \
                         ({} bytes, about {} s of history); the oldest are overwritten from now on",
                        self.samples,
                        self.ring.used_bytes(),
                        self.samples * self.cfg.interval_ms as u64 / 1000
                    );
                }
            }
            Err(e) => log::error!("sample not recorded: {e}"),
        }
    }

    fn flush_streaming(&mut self, now: Instant) {
        for slot in 0..self.clients.len() {
            let Some(c) = self.clients[slot].as_mut() else {
                continue;
            };
            if !c.hs.is_streaming() {
                continue;
            }
            if let Err(reason) = c.flush(&self.ring, now) {
                self.drop_client(slot, &reason, log::Level::Warn);
            }
        }
    }

    fn drop_client(&mut self, slot: usize, reason: &str, level: log::Level) {
        if let Some(t) = self.test.as_ref().filter(|t| t.slot == slot) {
            // The collector went away: the test stops and deletes its file; its end is
            // collected when the thread says it is done.
            t.cancel();
        }
        if let Some(c) = self.clients[slot].take() {
            log::log!(
                level,
                "client {}: closed: {reason} ({} records sent)",
                c.peer,
                c.records_sent
            );
        }
    }

    fn accept_all(&mut self, now: Instant) {
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE, ENOBUFS...: the listener stays readable, so stop polling it for a
                    // second instead of spinning.
                    log::warn!("accept failed: {e}; pausing accepts for 1 s");
                    self.accept_paused_until = Some(now + Duration::from_secs(1));
                    return;
                }
            };
            if let Err(e) = stream.set_nonblocking(true) {
                log::warn!("client {peer}: closed: set_nonblocking: {e}");
                continue;
            }
            let _ = stream.set_nodelay(true);
            let Some(slot) = self.clients.iter().position(|c| c.is_none()) else {
                let reason = format!(
                    "too many clients (at most {}, see --max-clients)",
                    self.limits.max_clients
                );
                self.refuse_now(stream, peer, &reason, log::Level::Warn);
                continue;
            };
            if self.limits.client_sndbuf > 0 {
                let _ = nix::sys::socket::setsockopt(
                    &stream,
                    nix::sys::socket::sockopt::SndBuf,
                    &self.limits.client_sndbuf,
                );
            }
            let mut nonce = [0u8; 32];
            if let Err(e) = crate::token::random_bytes(&mut nonce) {
                log::error!("client {peer}: closed: /dev/urandom: {e}");
                continue;
            }
            let mut c = Client {
                stream,
                peer,
                hs: AgentHandshake::new(nonce),
                deadline: now + self.limits.handshake_timeout,
                inbuf: [0u8; IN_CAP],
                in_len: 0,
                out: Vec::with_capacity(OUT_CAP),
                tx_mac: None,
                rx_mac: None,
                out_pos: 0,
                next_seq: 0,
                next_off: None,
                last_send: now,
                last_progress: now,
                records_sent: 0,
                frames: 0,
                frames_since: now,
                refusing: false,
            };
            log::debug!("client {peer}: connected");
            let challenge = c.hs.challenge();
            let r = c
                .queue(&challenge, &mut self.scratch)
                .and_then(|_| c.flush(&self.ring, now));
            self.clients[slot] = Some(c);
            if let Err(reason) = r {
                self.drop_client(slot, &reason, log::Level::Info);
            }
        }
    }

    /// Sends `Refused` on a fresh socket (best effort: it fits in any socket buffer) and closes.
    fn refuse_now(
        &mut self,
        mut stream: TcpStream,
        peer: SocketAddr,
        reason: &str,
        lvl: log::Level,
    ) {
        log::log!(lvl, "client {peer}: refused: {reason}");
        if let Ok(n) = encode_frame(&refused(reason), &mut self.scratch) {
            let _ = stream.write(&self.scratch[..n]);
        }
    }

    /// Handles readiness of one client.
    fn service(&mut self, slot: usize, revents: PollFlags, now: Instant) {
        if revents.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            && let Err((reason, level)) = self.read_client(slot, now)
        {
            self.drop_client(slot, &reason, level);
            return;
        }
        if let Some(c) = self.clients[slot].as_mut()
            && (revents.contains(PollFlags::POLLOUT) || c.pending(&self.ring))
            && let Err(reason) = c.flush(&self.ring, now)
        {
            self.drop_client(slot, &reason, log::Level::Warn);
        }
    }

    /// Reads what the client sent and acts on every whole frame.
    fn read_client(&mut self, slot: usize, now: Instant) -> Result<(), (String, log::Level)> {
        loop {
            let Some(c) = self.clients[slot].as_mut() else {
                return Ok(());
            };
            if c.in_len == IN_CAP {
                // Cannot happen: a whole frame fits and is consumed below; be safe anyway.
                return Err(("input buffer full".into(), log::Level::Warn));
            }
            let n = match c.stream.read(&mut c.inbuf[c.in_len..]) {
                Ok(0) => {
                    return Err((
                        "connection closed by the collector".into(),
                        log::Level::Info,
                    ));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err((format!("receive failed: {e}"), log::Level::Info)),
            };
            c.in_len += n;
            loop {
                let Some(c) = self.clients[slot].as_mut() else {
                    return Ok(());
                };
                let got = match c.rx_mac.as_mut() {
                    Some(mac) => {
                        decode_sealed_frame(&c.inbuf[..c.in_len], MAX_CLIENT_FRAME_LEN, mac)
                    }
                    None => decode_frame(&c.inbuf[..c.in_len], MAX_CLIENT_FRAME_LEN),
                };
                let (msg, used) = match got {
                    Ok(Some(x)) => x,
                    Ok(None) => break,
                    Err(FrameError::UnsupportedVersion(v)) => {
                        let reason = version_advice(v, "collector", "agent").to_string();
                        self.refuse_and_drop(slot, &reason);
                        return Ok(());
                    }
                    Err(e @ FrameError::BadMac(_)) => {
                        // Nothing more is believed from it, nor sent to it in this session.
                        let reason = e.to_string();
                        self.drop_client(slot, &reason, log::Level::Warn);
                        return Ok(());
                    }
                    Err(e) => {
                        let reason = format!("bad frame: {e}");
                        self.refuse_and_drop(slot, &reason);
                        return Ok(());
                    }
                };
                c.inbuf.copy_within(used..c.in_len, 0);
                c.in_len -= used;
                self.on_message(slot, msg, now);
            }
        }
    }

    /// Queues `Refused { reason }`, tries to send it, and drops the client (logged).
    fn refuse_and_drop(&mut self, slot: usize, reason: &str) {
        if let Some(c) = self.clients[slot].as_mut()
            && c.queue(&refused(reason), &mut self.scratch).is_ok()
        {
            let _ = c.flush(&self.ring, Instant::now());
        }
        self.drop_client(slot, reason, log::Level::Warn);
    }

    fn on_message(&mut self, slot: usize, msg: Message, now: Instant) {
        let Some(c) = self.clients[slot].as_mut() else {
            return;
        };
        if c.refusing {
            return;
        }
        if c.hs.is_streaming() {
            if now.duration_since(c.frames_since) >= Duration::from_secs(1) {
                c.frames_since = now;
                c.frames = 0;
            }
            c.frames += 1;
            if c.frames > CLIENT_FRAMES_PER_S {
                let reason =
                    format!("sends too much: more than {CLIENT_FRAMES_PER_S} messages in a second");
                self.refuse_and_drop(slot, &reason);
                return;
            }
        }
        let r = match c.hs.on_message(&self.token, &msg) {
            Ok(AgentAction::Nothing) => return,
            Ok(AgentAction::SendAuthOk(ok)) => {
                self.limiter.succeed(c.peer.ip());
                let ok = Message::AuthOk(ok);
                let hello = Message::Hello(self.hello());
                let Some(c) = self.clients[slot].as_mut() else {
                    return;
                };
                // AuthOk goes out as it is; every frame after it, both ways, carries a MAC.
                let r = c.queue(&ok, &mut self.scratch);
                if let Some((tx, rx)) = c.hs.frame_macs(&self.token) {
                    c.tx_mac = Some(tx);
                    c.rx_mac = Some(rx);
                }
                let r = r
                    .and_then(|_| c.queue(&hello, &mut self.scratch))
                    .and_then(|_| c.flush(&self.ring, now));
                if let Err(reason) = r {
                    self.drop_client(slot, &reason, log::Level::Warn);
                }
                return;
            }
            Ok(AgentAction::Resume(r)) => r,
            Ok(AgentAction::Test(req)) => {
                self.start_test(slot, req, now);
                return;
            }
            Err(HandshakeError::BadProof) => {
                let ip = c.peer.ip();
                match self.limiter.fail(ip, now) {
                    Some(delay) => {
                        if delay == AUTH_DELAY_FIRST {
                            log::warn!(
                                "{ip}: {AUTH_FAIL_LIMIT} failed authentications within {} s: its \
                                 wrong proofs are now refused after a delay (up to {} ms); a \
                                 right one is not delayed",
                                AUTH_FAIL_WINDOW.as_secs(),
                                AUTH_DELAY_MAX.as_millis()
                            );
                        }
                        c.refusing = true;
                        c.deadline = now + delay;
                    }
                    None => self.refuse_and_drop(slot, &HandshakeError::BadProof.to_string()),
                }
                return;
            }
            Err(e) => {
                self.refuse_and_drop(slot, &e.to_string());
                return;
            }
        };
        let ring = &self.ring;
        let oldest = ring.oldest_seq();
        let next = ring.next_seq();
        let (start, gone) = if r.instance_id == self.instance_id {
            let want = r.after_seq.saturating_add(1);
            if want < oldest {
                (oldest, Some((want, oldest - 1)))
            } else {
                (want.min(next), None)
            }
        } else {
            (oldest, (oldest > 1).then_some((1, oldest - 1)))
        };
        c.next_seq = start;
        c.next_off = ring.find(start);
        log::info!(
            "client {}: authenticated; resuming at {start} (instance {}, ring {}..{})",
            c.peer,
            if r.instance_id == self.instance_id {
                "same"
            } else {
                "new"
            },
            oldest,
            next.saturating_sub(1)
        );
        let mut res = Ok(());
        if let Some((from_seq, to_seq)) = gone {
            let g = Message::Gone(Gone {
                instance_id: self.instance_id,
                from_seq,
                to_seq,
            });
            res = c.queue(&g, &mut self.scratch);
        }
        let res = res.and_then(|_| c.flush(&self.ring, now));
        if let Err(reason) = res {
            self.drop_client(slot, &reason, log::Level::Warn);
        }
    }

    /// A collector asked for a test: start it in its thread, or refuse and say why.
    fn start_test(&mut self, slot: usize, req: nasprobe_proto::TestRequest, now: Instant) {
        let why = crate::selftest::refusal(
            self.cfg.allow_tests,
            self.test.is_some(),
            self.last_test_end,
            now,
        );
        if let Some(why) = why.or_else(|| crate::selftest::precheck(&req).err()) {
            self.refuse_and_drop(slot, &why);
            return;
        }
        // A receiver binds its test port now, says so, and its thread takes the listener.
        let listener = match &req {
            nasprobe_proto::TestRequest::NetReceive(_) => {
                let addr = SocketAddr::new(self.cfg.listen.ip(), self.cfg.test_port);
                match std::net::TcpListener::bind(addr) {
                    Ok(l) => Some(l),
                    Err(e) => {
                        self.refuse_and_drop(slot, &format!("cannot listen on {addr}: {e}"));
                        return;
                    }
                }
            }
            _ => None,
        };
        if let Some(l) = &listener {
            let port = l.local_addr().map_or(self.cfg.test_port, |a| a.port());
            let ready = Message::TestReady(nasprobe_proto::TestReady { port });
            let Some(c) = self.clients[slot].as_mut() else {
                return;
            };
            if let Err(reason) = c
                .queue(&ready, &mut self.scratch)
                .and_then(|_| c.flush(&self.ring, now))
            {
                self.drop_client(slot, &reason, log::Level::Warn);
                return;
            }
        }
        match crate::selftest::start(req, slot, self.cfg.sys_root.clone(), listener) {
            Ok(t) => {
                if let Some(c) = self.clients[slot].as_ref() {
                    log::info!("client {}: test started", c.peer);
                }
                self.test = Some(t);
            }
            Err(e) => self.refuse_and_drop(slot, &format!("cannot start the test: {e}")),
        }
    }

    /// The test's thread is done: send its result to the collector that asked (if it is still
    /// there) and close that connection.
    fn finish_test(&mut self, now: Instant) {
        let Some(t) = self.test.take() else {
            return;
        };
        let slot = t.slot;
        let result = t.finish();
        self.last_test_end = Some(now);
        let Some(c) = self.clients[slot].as_mut().filter(|c| c.hs.is_testing()) else {
            log::info!("test ended after its collector went away: {result:?}");
            return;
        };
        log::info!("client {}: test done", c.peer);
        let msg = Message::TestResult(result);
        if c.queue(&msg, &mut self.scratch).is_ok() {
            let _ = c.flush(&self.ring, now);
        }
        self.drop_client(slot, "test done", log::Level::Info);
    }

    /// The Hello of this instance: the host facts and inventory as the sampler read them (it
    /// also applies and sanitizes `--name`), then what only the server knows.
    fn hello(&self) -> Hello {
        let (oldest_seq, newest_seq) = self.ring.seq_range();
        let mut h = Hello {
            agent_version: short_str(env!("CARGO_PKG_VERSION")),
            now_ms: wall_ms(),
            ..Hello::default()
        };
        self.sampler.fill_hello(&mut h);
        h.protocol_version = PROTOCOL_VERSION;
        h.instance_id = self.instance_id;
        h.started_ms = self.started_ms;
        h.interval_ms = self.cfg.interval_ms;
        h.oldest_seq = oldest_seq;
        h.newest_seq = newest_seq;
        h
    }

    /// Handshake deadlines, stalled senders and keep-alives.
    fn check_timers(&mut self, now: Instant) {
        for slot in 0..self.clients.len() {
            let Some(c) = self.clients[slot].as_mut() else {
                continue;
            };
            if c.hs.is_testing() {
                continue;
            }
            if !c.hs.is_streaming() {
                if now >= c.deadline {
                    if c.refusing {
                        self.refuse_and_drop(slot, &HandshakeError::BadProof.to_string());
                        continue;
                    }
                    let reason = format!(
                        "handshake not completed within {} ms",
                        self.limits.handshake_timeout.as_millis()
                    );
                    self.refuse_and_drop(slot, &reason);
                }
                continue;
            }
            if c.pending(&self.ring) {
                if now.duration_since(c.last_progress) >= self.limits.stall_timeout {
                    let reason = format!(
                        "not reading: nothing could be sent for {} ms (record {} waiting); it \
                         will resume",
                        self.limits.stall_timeout.as_millis(),
                        c.next_seq
                    );
                    self.drop_client(slot, &reason, log::Level::Warn);
                }
            } else if now.duration_since(c.last_send) >= KEEPALIVE_AFTER {
                let ka = Message::KeepAlive(KeepAlive { time_ms: wall_ms() });
                let r = c
                    .queue(&ka, &mut self.scratch)
                    .and_then(|_| c.flush(&self.ring, now));
                if let Err(reason) = r {
                    self.drop_client(slot, &reason, log::Level::Warn);
                }
            }
        }
    }
}

/// Pushes one encoded record frame and gives its offset to clients waiting for exactly it.
fn push_frame(ring: &mut Ring, frame: &[u8], clients: &mut [Option<Client>]) {
    let Some((seq, off)) = ring.push(frame) else {
        log::error!(
            "record of {} bytes does not fit the history ring",
            frame.len()
        );
        return;
    };
    for c in clients.iter_mut().flatten() {
        if c.hs.is_streaming() && c.next_seq == seq && c.next_off.is_none() {
            c.next_off = Some(off);
        }
    }
}

fn push_event(ring: &mut Ring, scratch: &mut [u8], clients: &mut [Option<Client>], ev: Event) {
    let msg = Message::Record(Record {
        seq: ring.next_seq(),
        time_ms: wall_ms(),
        body: RecordBody::Event(ev),
    });
    match encode_frame(&msg, scratch) {
        Ok(n) => push_frame(ring, &scratch[..n], clients),
        Err(e) => log::error!("event not recorded: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_delays_wrong_proofs_after_three_and_forgets_on_success() {
        let mut l = AuthLimiter::default();
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        let other: IpAddr = "127.0.0.3".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..AUTH_FAIL_LIMIT {
            assert_eq!(l.fail(ip, t0), None);
        }
        let ms = |d: Option<Duration>| d.map(|d| d.as_millis());
        assert_eq!(ms(l.fail(ip, t0)), Some(250));
        assert_eq!(ms(l.fail(ip, t0)), Some(500));
        assert_eq!(ms(l.fail(ip, t0)), Some(1000));
        assert_eq!(ms(l.fail(ip, t0)), Some(1000), "capped");
        assert_eq!(l.fail(other, t0), None, "per address");
        l.succeed(ip);
        assert_eq!(l.fail(ip, t0), None, "a right proof resets");
    }

    #[test]
    fn limiter_window_expires() {
        let mut l = AuthLimiter::default();
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..AUTH_FAIL_LIMIT {
            l.fail(ip, t0);
        }
        assert_eq!(
            l.fail(ip, t0 + AUTH_FAIL_WINDOW + Duration::from_secs(1)),
            None
        );
    }

    #[test]
    fn limiter_table_is_bounded() {
        let mut l = AuthLimiter::default();
        let t0 = Instant::now();
        for i in 0..100u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            l.fail(ip, t0 + Duration::from_millis(i as u64));
        }
        assert_eq!(l.slots.iter().flatten().count(), LIMITER_SLOTS);
    }

    #[test]
    fn short_str_cuts_on_char_boundary() {
        let s: heapless::String<4> = short_str("abcé");
        assert_eq!(s.as_str(), "abc");
        let s: heapless::String<5> = short_str("abcé");
        assert_eq!(s.as_str(), "abcé");
    }
}
