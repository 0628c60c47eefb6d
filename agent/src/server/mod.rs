//! The agent's server: one thread, one `poll` loop over the signal pipe, the listening socket,
//! the kernel's process connector and the kernel log (when available), the connected collectors
//! and the sampling deadline. This file is the loop and the sampling tick; the collectors'
//! sessions are in `client.rs` (a client) and `sessions.rs` (the server's side), the state both
//! share in `state.rs`, the rate limit of wrong proofs in `limiter.rs`, the kernel's event sources
//! in [`crate::events`].
//!
//! - Sampling runs on CLOCK_MONOTONIC deadlines (`std::time::Instant`): the next deadline is the
//!   previous one plus the interval; missed ticks are skipped, never burst. A late wake-up is
//!   harmless: the measured interval travels with the sample.
//! - Every sample and event is encoded once into a wire frame and pushed into the history ring (`crate::ring::Ring`); a
//!   client is a cursor into the ring plus one small partial-write buffer. A client the ring
//!   overtakes, or whose socket accepts nothing for `--stall-timeout`, is dropped (it resumes
//!   later). Nothing a client does grows the agent's memory or delays sampling.
//! - The conversation is the one of `docs/protocol.md`.

mod base;
mod client;
mod limiter;
mod sessions;
mod state;

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nasprobe_proto::{
    AgentStart, Event, ExitSeen, ExitWatch, Message, Record, RecordBody, encode_frame,
};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::config::Config;
use crate::daemon::Signals;
use crate::events::connector::Connector;
use crate::events::kmsg::{KMSG_RECORDS_PER_TICK, KMSG_RECORDS_PER_WAKE, KernelLog};
use crate::ring::Ring;
use crate::sampler::{Sampler, wall_ms};
use base::{KEEPALIVE_AFTER, MAX_OUT_FRAME, refused, short_str};
use client::Client;
use limiter::AuthLimiter;
use state::Limits;
pub use state::Server;

/// How long the agent waits at start for the kernel to acknowledge the connector subscription.
const CONNECTOR_ACK_WAIT: Duration = Duration::from_millis(500);
/// Connector datagrams read per wake-up of the loop (one message each): bounded work, so that a
/// fork storm cannot delay sampling or the collectors; the rest are read at the next round.
const CONNECTOR_DGRAMS_PER_WAKE: usize = 256;
/// Connector datagrams read at a sampling tick, before the sample (the exits it reports).
const CONNECTOR_DGRAMS_PER_TICK: usize = 8192;

// ---------------------------------------------------------------------------------------------
// Server

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
            s.kmsg = KernelLog::open()
                .map_err(|e| log::warn!("kernel log unavailable ({e}): OOM kills are not marked"))
                .ok();
        }
        match &s.cfg.allow_tests.disk {
            crate::config::DiskScope::Anywhere => log::warn!(
                "--allow-tests: disk tests in any folder (name them with \
                 --allow-tests=disk:DIR,net)"
            ),
            crate::config::DiskScope::Folders(f) => log::info!(
                "--allow-tests: disk tests in {} folder(s) and below",
                f.len()
            ),
            crate::config::DiskScope::Off => {}
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

    /// Reads what the kernel log holds (a bounded number of records): OOM kills mark the exit
    /// of their process; lines about tracked processes and known NICs become `KernelMessage`
    /// events, rate-limited (see [`KernelLog::drain`]).
    fn read_kmsg(&mut self, max: usize) {
        let Server {
            kmsg,
            sampler,
            ring,
            scratch,
            clients,
            ..
        } = self;
        if let Some(k) = kmsg {
            k.drain(sampler, max, &mut |ev| {
                push_event(ring, scratch, clients, ev)
            });
        }
    }

    pub fn instance_id(&self) -> u64 {
        self.instance_id
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Runs until SIGTERM/SIGINT/SIGHUP; returns the signal that ended it.
    pub fn run(&mut self, signals: &Signals) -> io::Result<i32> {
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
                    let mut r = rev(&fds[first_client + k]);
                    if self.clients[slot].as_ref().is_some_and(|c| c.more) {
                        // Whole frames wait in its buffer.
                        r |= PollFlags::POLLIN;
                    }
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
                return Ok(sig);
            }
            // The kernel log first: an OOM kill's line comes before the exit it causes.
            if kmsg_ready {
                self.read_kmsg(KMSG_RECORDS_PER_WAKE);
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
            if c.more {
                // Frames wait in its buffer: the next round at once.
                return PollTimeout::ZERO;
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
        self.read_kmsg(KMSG_RECORDS_PER_TICK);
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
            kmsg,
            ..
        } = self;
        let Message::Record(rec) = &mut **sample_msg else {
            return;
        };
        let RecordBody::Sample(sample) = &mut rec.body else {
            return;
        };
        sample.interval_us = 0;
        // Exits the scan found without the kernel's word wait for one more read of the kernel
        // log: the agent (nice 19) can be held off the CPU between the tick's read and the scan
        // while an OOM kill completes, and the kill's lines then come after the scan.
        if let Some(k) = kmsg.as_mut() {
            k.take_oom_pids();
        }
        let mut unexplained: Vec<Event> = Vec::new();
        let ok = sampler.sample(sample, &mut |ev| match &ev {
            Event::ProcessEnd(e) if e.status.seen == ExitSeen::Scan && !e.status.oom_killed => {
                unexplained.push(ev)
            }
            _ => push_event(ring, scratch, clients, ev),
        });
        if !unexplained.is_empty() {
            let ooms = kmsg
                .as_mut()
                .map(|k| {
                    k.drain(sampler, KMSG_RECORDS_PER_TICK, &mut |ev| {
                        push_event(ring, scratch, clients, ev)
                    });
                    k.take_oom_pids()
                })
                .unwrap_or_default();
            for mut ev in unexplained {
                if let Event::ProcessEnd(e) = &mut ev
                    && ooms.contains(&e.exit.process.pid)
                {
                    e.status.oom_killed = true;
                }
                push_event(ring, scratch, clients, ev);
            }
        }
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
