//! Plausibility checks on what an agent sends, before anything is stored.
//!
//! A record that decodes is not necessarily true: a buggy or hostile agent (or a counter that
//! went backwards without the agent noticing, which turns into a delta near 2^64) can claim a
//! NIC moving 10^18 bytes a second. Such a sample would poison every rate, verdict and export
//! computed from the store, so it is rejected before it is written: the collector logs it with
//! the host's name, counts it, marks the host bad for views, and records its seq as a gap with
//! reason `rejected: ...` (so `nasprobe check` and `report` say exactly what was not kept). The
//! connection is kept: dropping it would make the agent resend the same record on reconnect.
//!
//! What is checked (every bound is derived from the `Hello` and the sample's interval; a counter
//! cannot move faster than its hardware allows):
//!
//! - the `Hello` (`check_hello`): CPU count, clock ticks, page size, interval, sequence range,
//!   start and current time (the connection is refused when it fails);
//! - record times (`TimeWindow`): within the agent's lifetime, not after the agent's clock at
//!   the `Hello` plus the time elapsed on the collector's clock since then (+ slack);
//! - samples ([`check_sample`]) and events (`check_event`): every counter and gauge, every
//!   disk/NIC/mount index against the `Hello`'s lists; process ends (signal, exit status
//!   consistency, report delay), kernel lines (level, pid, suppressed) and TCP connections
//!   (addresses, state, queues, RTT/RTO, cwnd, byte counters, chrono times).
//!
//! Entries the agent flagged `RESET` carry unknown deltas by contract and are not checked (the
//! analysis ignores them). The bounds are far above any real hardware:

mod shaping;

#[cfg(test)]
use std::time::Duration;
use std::time::Instant;

use nasprobe_proto::{Event, Hello, MAX_CPUS, Sample, flags};

/// Events stored per host per sampling interval at most; more are dropped and counted (a gap
/// with reason `flood: …`). The agent's own bounds are no defence against a fake agent.
pub const EVENTS_PER_INTERVAL: usize = 512;
/// Receive-buffer overruns of the process connector a second at most: each one is the kernel
/// finding the agent's socket buffer (>= 200 KiB, some 2,000 messages) full; at
/// [`MAX_FORKS_PER_S`] with three messages a process that is at most 1,500 a second.
pub(crate) const MAX_CONNECTOR_OVERRUNS_PER_S: u64 = 2_000;
/// A NIC faster than 1 Tbit/s in either direction.
pub(crate) const MAX_NIC_BYTES_PER_S: u128 = 125_000_000_000;
/// Packets per second of a 1 Tbit/s link at the smallest frame (also bounds TCP counters).
pub(crate) const MAX_PACKETS_PER_S: u128 = 2_000_000_000;
/// A link speed over 1.6 Tbit/s.
pub(crate) const MAX_LINK_MBIT: u32 = 1_600_000;
/// A disk moving more than 100 GB/s (reads + writes; also bounds swap and fault traffic).
pub(crate) const MAX_DISK_BYTES_PER_S: u128 = 100_000_000_000;
/// I/O operations per second of one device.
pub(crate) const MAX_IOPS: u128 = 100_000_000;
/// Requests in flight on one device (and its average queue length).
pub(crate) const MAX_QUEUE: u128 = 65_536;
/// A sample interval over an hour (the agent samples every 100 ms .. a few s).
pub(crate) const MAX_INTERVAL_US: u32 = 3_600_000_000;
/// Sampling intervals a `Hello` may announce: 10 ms .. 1 h.
pub(crate) const HELLO_INTERVAL_MS: std::ops::RangeInclusive<u32> = 10..=3_600_000;
/// `USER_HZ` values a `Hello` may announce (Linux uses 100; some ports 250..1024).
pub(crate) const HELLO_CLOCK_TICKS: std::ops::RangeInclusive<u32> = 10..=10_000;
/// Page sizes a `Hello` may announce (powers of two, 1 KiB .. 1 MiB).
pub(crate) const HELLO_PAGE_SIZE: std::ops::RangeInclusive<u32> = 1024..=(1 << 20);
/// Processes running or blocked at once (the default `pid_max`).
pub(crate) const MAX_TASKS: u16 = 32_768;
/// Threads of one process (default `threads-max` of a small NAS is ~16k).
pub(crate) const MAX_THREADS: u16 = 32_768;
/// `PID_MAX_LIMIT` of Linux.
pub(crate) const MAX_PID: u32 = 4_194_304;
/// Forks, short-lived processes and allocation stalls per second.
pub(crate) const MAX_FORKS_PER_S: u128 = 1_000_000;
/// Context switches per second per CPU (a switch costs about a microsecond: real hardware stays
/// under 10^6; the bound is loose because a simulated /proc tree still shows, at times, one
/// interval in which `ctxt` moves by about its whole value: 352 M/s on synology-replication).
pub(crate) const MAX_CSW_PER_CPU_S: u128 = 1_000_000_000;
/// Memory and swap of one host: 64 TiB.
pub(crate) const MAX_MEM_KIB: u64 = 1 << 36;
/// Size of one mount (used + free): 1 EiB.
pub(crate) const MAX_MOUNT_BYTES: u128 = 1 << 60;
/// Largest sequence number accepted (the store keeps them as SQLite INTEGER, i.e. i64).
pub(crate) const MAX_SEQ: u64 = i64::MAX as u64;
/// Oldest agent start accepted, relative to its clock at the `Hello`.
pub(crate) const MAX_UPTIME_MS: u64 = 10 * 365 * 86_400_000;
/// Agent clock vs collector clock: a `Hello` further off is logged (set the NAS's clock).
pub(crate) const MAX_CLOCK_OFFSET_MS: u64 = 10 * 60_000;
/// Longest history an agent's ring is assumed to hold (for the record time window).
pub(crate) const MAX_RING_SPAN_MS: u64 = 30 * 86_400_000;
/// Slack of the record time window for clock steps (NTP) on either side.
pub(crate) const CLOCK_SLACK_MS: u64 = 86_400_000;
/// A disk's busy time may exceed its sample's interval by this much: the kernel adds a
/// request's whole time in flight to `io_ticks` when it next accounts for the disk, so a
/// sample after a stall carries seconds of busy time in a 100 ms interval (seen in CI: "vda:
/// busy 3020 ms in 99911 µs"; iostat's "%util over 100"). The formulas cap each sample's
/// utilisation at 100 %, so what this lets through cannot steer the verdict.
const IO_TICKS_CATCH_UP_MS: u128 = 30_000;
/// Highest signal number of Linux (`SIGRTMAX` = 64 on every architecture the agent runs on).
pub(crate) const MAX_SIGNAL: u8 = 64;
/// Delay between the kernel's exit report and the record (the next sample) at least allowed:
/// 10 min (longer intervals allow two intervals).
pub(crate) const MAX_EXIT_REPORT_MS: u64 = 600_000;
/// Highest syslog level (7 = debug).
pub(crate) const MAX_SYSLOG_LEVEL: u8 = 7;
/// Kernel log lines the agent can leave out before one it passes: a minute (its rate limit's
/// window) of 100,000 lines/s, more than printk sustains.
pub(crate) const MAX_KMSG_SUPPRESSED: u32 = 6_000_000;
/// TCP states of Linux: 1 ESTABLISHED .. 12 NEW_SYN_RECV, 13 BOUND_INACTIVE (6.8+).
pub(crate) const TCP_STATES: std::ops::RangeInclusive<u8> = 1..=13;
/// Smoothed RTT and retransmission timeout: 10 min (the kernel caps the RTO at 120 s).
pub(crate) const MAX_TCP_RTT_US: u32 = 600_000_000;
/// Bytes waiting in one socket's queue (the kernel's buffer sizes are `int`).
pub(crate) const MAX_TCP_QUEUE: u32 = i32::MAX as u32;
/// Congestion window in segments: 2^24 segments of 1448 bytes are 24 GB in flight.
pub(crate) const MAX_TCP_CWND: u32 = 1 << 24;
/// Age of one TCP connection: a year (with [`MAX_NIC_BYTES_PER_S`] this bounds its byte
/// counters, with 10^6 µs/s its busy and limited times).
pub(crate) const MAX_TCP_CONN_AGE_S: u64 = 365 * 86_400;
/// A file offset or size: the kernel's loff_t is signed 64-bit.
pub(crate) const MAX_FILE_BYTES: u64 = i64::MAX as u64;

fn ms_date(ms: u64) -> String {
    nasprobe_analysis::time::rfc3339(ms)
}

/// `Err(why)` when `hello` cannot come from a real agent (names the field); `collector_now_ms`
/// is the collector's clock when it arrived.
pub(crate) fn check_hello(hello: &Hello, collector_now_ms: u64) -> Result<(), String> {
    let n = hello.cpu_count;
    if n == 0 || usize::from(n) > MAX_CPUS {
        return Err(format!("cpu_count {n} (1..={MAX_CPUS})"));
    }
    let hz = hello.clock_ticks_per_sec;
    if !HELLO_CLOCK_TICKS.contains(&hz) {
        return Err(format!("clock_ticks_per_sec {hz} (10..=10000)"));
    }
    let ps = hello.page_size;
    if !HELLO_PAGE_SIZE.contains(&ps) || !ps.is_power_of_two() {
        return Err(format!("page_size {ps} (a power of two, 1 KiB..1 MiB)"));
    }
    let iv = hello.interval_ms;
    if !HELLO_INTERVAL_MS.contains(&iv) {
        return Err(format!("interval_ms {iv} (10 ms..1 h)"));
    }
    if hello.newest_seq > MAX_SEQ || hello.oldest_seq > hello.newest_seq {
        return Err(format!(
            "seq range {}..={} (oldest after newest, or past 2^63)",
            hello.oldest_seq, hello.newest_seq
        ));
    }
    let most = max_seq_since_start(hello);
    if hello.newest_seq > most {
        return Err(format!(
            "newest_seq {} is more than an agent can number in {} s of its life at {} ms \
             (at most {most})",
            hello.newest_seq,
            hello.now_ms.abs_diff(hello.started_ms) / 1000,
            hello.interval_ms
        ));
    }
    // (A start after `now_ms` is possible: the NAS's clock stepped back since, e.g. by NTP.)
    if hello.now_ms.abs_diff(hello.started_ms) > MAX_UPTIME_MS {
        return Err(format!(
            "started_ms {} ({}) is more than 10 years from now_ms {}",
            hello.started_ms,
            ms_date(hello.started_ms),
            hello.now_ms
        ));
    }
    let off = hello.now_ms.abs_diff(collector_now_ms);
    if off > MAX_CLOCK_OFFSET_MS {
        // Not refused: a NAS with a dead clock battery still shows live figures; its records are
        // checked against its own clock (`TimeWindow`), and reports by time need a set clock.
        log::warn!(
            "the agent's clock ({}) is {} s off the collector's: reports by time (--since) will \
             not find its records; set its clock (NTP)",
            ms_date(hello.now_ms),
            off / 1000
        );
    }
    Ok(())
}

/// The highest seq an agent can have numbered since its start (its `Hello`'s `now_ms -
/// started_ms`, + a day of clock slack): a sample and [`EVENTS_PER_INTERVAL`] events per
/// interval. A `Gone` can never reach further than that (the ring overwrites only what it had).
pub(crate) fn max_seq_since_start(hello: &Hello) -> u64 {
    let life = hello.now_ms.abs_diff(hello.started_ms) + CLOCK_SLACK_MS;
    let intervals = life / u64::from(hello.interval_ms.max(1)) + 2;
    intervals
        .saturating_mul(1 + EVENTS_PER_INTERVAL as u64)
        .min(MAX_SEQ)
}

/// The times a record of one connection may carry, in the agent's clock: from a day before the
/// agent started (or before the oldest record its ring can hold, if the clock stepped back since:
/// the ring's seq span times the interval, at most [`MAX_RING_SPAN_MS`]) to a day after the
/// agent's clock at the `Hello` plus what elapsed on the collector's (monotonic) clock since.
/// (The offset between the two clocks is the difference at the `Hello`; it may drift by the
/// slack.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeWindow {
    lower_ms: u64,
    hello_now_ms: u64,
    at: Instant,
}

impl TimeWindow {
    /// The window of a connection whose `Hello` (already checked) arrived now.
    pub(crate) fn new(hello: &Hello) -> TimeWindow {
        TimeWindow {
            lower_ms: {
                let span = (hello.newest_seq.saturating_sub(hello.oldest_seq) + 1)
                    .saturating_mul(u64::from(hello.interval_ms))
                    .min(MAX_RING_SPAN_MS);
                hello
                    .started_ms
                    .min(hello.now_ms.saturating_sub(span))
                    .saturating_sub(CLOCK_SLACK_MS)
            },
            hello_now_ms: hello.now_ms,
            at: Instant::now(),
        }
    }

    /// The earliest plausible time.
    pub(crate) fn lower_ms(&self) -> u64 {
        self.lower_ms
    }

    /// The latest plausible time now.
    pub(crate) fn upper_ms(&self) -> u64 {
        let el = u64::try_from(self.at.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.hello_now_ms
            .saturating_add(el)
            .saturating_add(CLOCK_SLACK_MS)
    }

    /// `Err(why)` when a record of this connection cannot carry `time_ms`.
    pub(crate) fn check(&self, time_ms: u64) -> Result<(), String> {
        let upper = self.upper_ms();
        if time_ms < self.lower_ms || time_ms > upper {
            return Err(format!(
                "time_ms {time_ms} outside the agent's plausible window {}..{} ({} .. {})",
                self.lower_ms,
                upper,
                ms_date(self.lower_ms),
                ms_date(upper)
            ));
        }
        Ok(())
    }

    /// A window elapsed `d` ago (for tests).
    #[cfg(test)]
    pub(crate) fn aged(mut self, d: Duration) -> TimeWindow {
        self.at = self.at.checked_sub(d).unwrap_or(self.at);
        self
    }
}

/// [`check_event`] for an event at `time_ms` (the agent's clock): also bounds what grows
/// with the agent's life (`ExitWatch::dropped`).
pub(crate) fn check_event_at(hello: &Hello, time_ms: u64, e: &Event) -> Result<(), String> {
    if let Event::ExitWatch(w) = e {
        let life_s = time_ms
            .abs_diff(hello.started_ms)
            .saturating_add(CLOCK_SLACK_MS)
            / 1000;
        let most = life_s.saturating_mul(MAX_CONNECTOR_OVERRUNS_PER_S);
        if u64::from(w.dropped) > most {
            return Err(format!(
                "exit watch: {} connector overruns in {life_s} s of the agent's life (at most \
                 {MAX_CONNECTOR_OVERRUNS_PER_S} a second)",
                w.dropped
            ));
        }
    }
    check_event(hello, e)
}

/// `Err(why)` when `e` cannot be a true event of the agent that said `hello`.
pub(crate) fn check_event(hello: &Hello, e: &Event) -> Result<(), String> {
    let pid_ok = |what: &str, pid: u32| {
        if pid > MAX_PID {
            Err(format!("{what} pid {pid} over {MAX_PID}"))
        } else {
            Ok(())
        }
    };
    match e {
        Event::ProcessStart(p) => {
            pid_ok("process start", p.pid)?;
            pid_ok("process start ppid", p.ppid)
        }
        Event::ProcessExit(x) => {
            pid_ok("process exit", x.process.pid)?;
            if x.lifetime_ms > MAX_UPTIME_MS {
                return Err(format!("process exit lifetime_ms {}", x.lifetime_ms));
            }
            // CPU time: at most every CPU for the whole lifetime (+ a second of ticks).
            let hz = u128::from(hello.clock_ticks_per_sec.max(1));
            let max =
                u128::from(x.lifetime_ms) * hz * u128::from(hello.cpu_count.max(1)) / 1000 + hz;
            if u128::from(x.cpu_ticks) > max {
                return Err(format!(
                    "process exit cpu_ticks {} in {} ms on {} CPUs",
                    x.cpu_ticks, x.lifetime_ms, hello.cpu_count
                ));
            }
            Ok(())
        }
        Event::LinkChange(l) => {
            if l.speed_mbit > MAX_LINK_MBIT {
                return Err(format!("link change speed_mbit {}", l.speed_mbit));
            }
            Ok(())
        }
        Event::Shaping(s) => shaping::check(hello, s, MAX_LINK_MBIT),
        Event::AgentStart(a) => {
            if !HELLO_INTERVAL_MS.contains(&a.interval_ms) {
                return Err(format!("agent start interval_ms {}", a.interval_ms));
            }
            Ok(())
        }
        Event::ProcessEnd(p) => {
            check_event(hello, &Event::ProcessExit(p.exit.clone()))?;
            check_exit_status(hello, &p.status)
        }
        Event::KernelMessage(k) => {
            if k.level > MAX_SYSLOG_LEVEL {
                return Err(format!(
                    "kernel message level {} over {MAX_SYSLOG_LEVEL}",
                    k.level
                ));
            }
            if let Some(pid) = k.pid {
                pid_ok("kernel message", pid)?;
            }
            if k.suppressed > MAX_KMSG_SUPPRESSED {
                return Err(format!(
                    "kernel message suppressed {} over {MAX_KMSG_SUPPRESSED}",
                    k.suppressed
                ));
            }
            Ok(())
        }
        Event::Connections(c) => {
            for (i, p) in c.procs.iter().enumerate() {
                pid_ok(&format!("connections proc {i}"), p.pid)?;
                for (j, conn) in p.conns.iter().enumerate() {
                    check_tcp_conn(conn)
                        .map_err(|w| format!("connections pid {} conn {j}: {w}", p.pid))?;
                }
            }
            Ok(())
        }
        Event::OpenFiles(o) => {
            for (i, p) in o.procs.iter().enumerate() {
                pid_ok(&format!("open files proc {i}"), p.pid)?;
                if p.files.is_empty() && p.more == 0 {
                    return Err(format!("open files pid {} with no file", p.pid));
                }
                for (j, f) in p.files.iter().enumerate() {
                    check_open_file(f)
                        .map_err(|w| format!("open files pid {} file {j}: {w}", p.pid))?;
                }
            }
            Ok(())
        }
        // `ExitWatch::dropped` grows with the agent's life: `check_event_at` bounds it. Device
        // names are checked by the sanitizer.
        Event::ExitWatch(_) | Event::DeviceAdded(_) => Ok(()),
    }
}

/// `Err(why)` when a process end's status contradicts itself or the `Hello`.
fn check_exit_status(hello: &Hello, s: &nasprobe_proto::ExitStatus) -> Result<(), String> {
    if let Some(sig) = s.signal
        && !(1..=MAX_SIGNAL).contains(&sig)
    {
        return Err(format!("process end signal {sig} outside 1..={MAX_SIGNAL}"));
    }
    // `code` is a u8: 0..=255 by type.
    if s.code.is_some() && s.signal.is_some() {
        return Err("process end code and signal both set".into());
    }
    if s.core_dumped && s.signal.is_none() {
        return Err("process end core_dumped without a signal".into());
    }
    let max_before = MAX_EXIT_REPORT_MS.max(2 * u64::from(hello.interval_ms));
    if u64::from(s.before_ms) > max_before {
        return Err(format!(
            "process end before_ms {} over {max_before}",
            s.before_ms
        ));
    }
    if s.seen == nasprobe_proto::ExitSeen::Scan
        && (s.code.is_some() || s.signal.is_some() || s.before_ms != 0)
    {
        return Err("process end seen by a scan with a status".into());
    }
    Ok(())
}

/// `Err(why)` when one file of an `OpenFiles` event cannot be true.
fn check_open_file(f: &nasprobe_proto::OpenFile) -> Result<(), String> {
    if f.fd > nasprobe_proto::MAX_FD {
        return Err(format!("fd {} over {}", f.fd, nasprobe_proto::MAX_FD));
    }
    // readlink of a descriptor gives an absolute path; a cut one starts with "...".
    if !(f.path.starts_with('/') || f.path.starts_with("...")) {
        return Err(format!("path {:?} is not absolute", f.path.as_str()));
    }
    for (what, v) in [("pos", f.pos), ("size", f.size)] {
        if v > MAX_FILE_BYTES {
            return Err(format!("{what} {v} over {MAX_FILE_BYTES}"));
        }
    }
    Ok(())
}

/// `Err(why)` when one TCP connection of a `Connections` event cannot be true.
fn check_tcp_conn(c: &nasprobe_proto::TcpConn) -> Result<(), String> {
    for (end, a) in [("local", &c.local), ("remote", &c.remote)] {
        if a.addr.len() != 4 && a.addr.len() != 16 {
            return Err(format!("{end} address of {} bytes", a.addr.len()));
        }
    }
    if !TCP_STATES.contains(&c.state) {
        return Err(format!("state {} outside {TCP_STATES:?}", c.state));
    }
    for (what, q) in [("send_queue", c.send_queue), ("recv_queue", c.recv_queue)] {
        if q > MAX_TCP_QUEUE {
            return Err(format!("{what} {q} over {MAX_TCP_QUEUE}"));
        }
    }
    let Some(i) = &c.info else { return Ok(()) };
    for (what, v) in [("rtt_us", i.rtt_us), ("rto_us", i.rto_us)] {
        if v > MAX_TCP_RTT_US {
            return Err(format!("{what} {v} over {MAX_TCP_RTT_US}"));
        }
    }
    if i.snd_cwnd > MAX_TCP_CWND {
        return Err(format!("snd_cwnd {} over {MAX_TCP_CWND}", i.snd_cwnd));
    }
    let max_bytes = MAX_NIC_BYTES_PER_S as u64 * MAX_TCP_CONN_AGE_S;
    for (what, v) in [
        ("bytes_acked", i.bytes_acked),
        ("bytes_received", i.bytes_received),
    ] {
        if let Some(v) = v
            && v > max_bytes
        {
            return Err(format!("{what} {v} over {max_bytes} (a year at 1 Tbit/s)"));
        }
    }
    if let Some(r) = i.delivery_rate
        && u128::from(r) > MAX_NIC_BYTES_PER_S
    {
        return Err(format!("delivery_rate {r} B/s over {MAX_NIC_BYTES_PER_S}"));
    }
    let max_us = MAX_TCP_CONN_AGE_S * 1_000_000;
    for (what, v) in [
        ("busy_time_us", i.busy_time_us),
        ("rwnd_limited_us", i.rwnd_limited_us),
        ("sndbuf_limited_us", i.sndbuf_limited_us),
    ] {
        if let Some(v) = v
            && v > max_us
        {
            return Err(format!("{what} {v} over {max_us} (a year)"));
        }
    }
    // The kernel's busy time is the sum of its busy, rwnd- and sndbuf-limited chronos.
    if let (Some(b), Some(r), Some(s)) = (i.busy_time_us, i.rwnd_limited_us, i.sndbuf_limited_us)
        && r.saturating_add(s) > b
    {
        return Err(format!(
            "rwnd_limited_us {r} + sndbuf_limited_us {s} over busy_time_us {b}"
        ));
    }
    Ok(())
}

/// `Err(why)` unless `v` per interval `iv_us` is at most `per_s` per second.
fn rate(what: impl FnOnce() -> String, v: u128, iv_us: u128, per_s: u128) -> Result<(), String> {
    if v * 1_000_000 > per_s * iv_us {
        return Err(format!(
            "{}: {} per s (over {per_s})",
            what(),
            v * 1_000_000 / iv_us
        ));
    }
    Ok(())
}

/// Devices an agent announced (`DeviceAdded`) after its `Hello`: sample indices may go that far
/// past the `Hello`'s lists (the analysis ignores them until the next `Hello` names them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Added {
    pub(crate) disks: usize,
    pub(crate) nics: usize,
}

impl Added {
    /// Counts `e` when it announces a device.
    pub(crate) fn count(&mut self, e: &Event) {
        match e {
            Event::DeviceAdded(nasprobe_proto::DeviceAdded::Disk(_)) => self.disks += 1,
            Event::DeviceAdded(nasprobe_proto::DeviceAdded::Nic(_)) => self.nics += 1,
            _ => {}
        }
    }
}

/// `Err(why)` when `s` cannot be a true sample of the agent that said `hello`.
pub fn check_sample(hello: &Hello, s: &Sample) -> Result<(), String> {
    check_sample_with(hello, Added::default(), s)
}

/// [`check_sample`] for a connection on which the agent announced `added` devices.
pub(crate) fn check_sample_with(hello: &Hello, added: Added, s: &Sample) -> Result<(), String> {
    if s.interval_us == 0 {
        return Err("interval_us is 0".into());
    }
    if s.interval_us > MAX_INTERVAL_US {
        return Err(format!("interval_us {} is over an hour", s.interval_us));
    }
    // Part by part, in this order (the first that fails names the sample).
    let all_ticks = check_cpus(hello, s)?;
    check_nics(hello, added, s)?;
    check_disks(hello, added, s)?;
    check_tasks(hello, s)?;
    check_procs(hello, s, all_ticks)?;
    check_memory(s)?;
    check_vm_tcp(hello, s)?;
    check_mounts_agent(hello, s)
}

/// The CPUs: their count, and ticks at most the interval's worth per CPU (x2 + 100 ticks of
/// slack for clock edges). Returns the most ticks all CPUs can hold in the interval.
fn check_cpus(hello: &Hello, s: &Sample) -> Result<u128, String> {
    let iv = u128::from(s.interval_us);
    if s.cpus.len() > usize::from(hello.cpu_count.max(1)) {
        return Err(format!(
            "{} CPUs in the sample, the agent's Hello said {}",
            s.cpus.len(),
            hello.cpu_count
        ));
    }
    let hz = u128::from(hello.clock_ticks_per_sec.max(1));
    let per_cpu_max = iv * hz / 1_000_000 * 2 + 100;
    let ticks = |t: &nasprobe_proto::CpuTicks| -> u128 {
        [
            t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal,
        ]
        .iter()
        .map(|&v| u128::from(v))
        .sum()
    };
    for (i, c) in s.cpus.iter().enumerate() {
        if c.flags & flags::RESET == 0 && ticks(c) > per_cpu_max {
            return Err(format!(
                "cpu{i}: {} ticks in {} µs",
                ticks(c),
                s.interval_us
            ));
        }
    }
    let ncpu = (s.cpus.len() as u128)
        .max(u128::from(hello.cpu_count))
        .max(1);
    if s.cpu_total.flags & flags::RESET == 0 && ticks(&s.cpu_total) > per_cpu_max * ncpu {
        return Err(format!(
            "all CPUs: {} ticks in {} µs",
            ticks(&s.cpu_total),
            s.interval_us
        ));
    }
    Ok(per_cpu_max * ncpu)
}

/// Each NIC: its index, link speed, packets and bytes per second.
fn check_nics(hello: &Hello, added: Added, s: &Sample) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    for n in &s.nics {
        if usize::from(n.nic) >= hello.nics.len() + added.nics {
            return Err(format!(
                "nic index {} outside the Hello's {} NICs (+{} announced)",
                n.nic,
                hello.nics.len(),
                added.nics
            ));
        }
        let nic_name = || {
            hello
                .nics
                .get(usize::from(n.nic))
                .map_or_else(|| format!("nic #{}", n.nic), |i| i.name.to_string())
        };
        if n.speed_mbit > MAX_LINK_MBIT {
            return Err(format!(
                "{}: link speed {} Mbit/s (over {MAX_LINK_MBIT})",
                nic_name(),
                n.speed_mbit
            ));
        }
        if n.flags & flags::RESET != 0 {
            continue;
        }
        let pk = [
            n.rx_packets,
            n.tx_packets,
            n.rx_errors,
            n.tx_errors,
            n.rx_dropped,
            n.tx_dropped,
        ]
        .into_iter()
        .map(u128::from)
        .max()
        .unwrap_or(0);
        rate(
            || format!("{} packets", nic_name()),
            pk,
            iv,
            MAX_PACKETS_PER_S,
        )?;
        let top = u128::from(n.rx_bytes.max(n.tx_bytes));
        if top * 1_000_000 > MAX_NIC_BYTES_PER_S * iv {
            let name = hello
                .nics
                .get(usize::from(n.nic))
                .map_or_else(|| format!("nic #{}", n.nic), |i| i.name.to_string());
            return Err(format!(
                "{name}: {} bytes/s (over 1 Tbit/s)",
                top * 1_000_000 / iv
            ));
        }
    }
    Ok(())
}

/// Each disk: its index, queue, I/Os, busy time and bytes per second.
fn check_disks(hello: &Hello, added: Added, s: &Sample) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    for d in &s.disks {
        if usize::from(d.disk) >= hello.disks.len() + added.disks {
            return Err(format!(
                "disk index {} outside the Hello's {} disks (+{} announced)",
                d.disk,
                hello.disks.len(),
                added.disks
            ));
        }
        let name = || {
            hello
                .disks
                .get(usize::from(d.disk))
                .map_or_else(|| format!("disk #{}", d.disk), |i| i.name.to_string())
        };
        if u128::from(d.in_flight) > MAX_QUEUE {
            return Err(format!("{}: {} requests in flight", name(), d.in_flight));
        }
        if d.flags & flags::RESET != 0 {
            continue;
        }
        let iv_ms = iv / 1000 + 1;
        rate(
            || format!("{} I/Os", name()),
            u128::from(d.reads)
                + u128::from(d.writes)
                + u128::from(d.reads_merged)
                + u128::from(d.writes_merged),
            iv,
            MAX_IOPS,
        )?;
        if u128::from(d.io_ms) > iv_ms * 2 + IO_TICKS_CATCH_UP_MS {
            return Err(format!(
                "{}: busy {} ms in {} µs",
                name(),
                d.io_ms,
                s.interval_us
            ));
        }
        for (what, v) in [
            ("read_ms", d.read_ms),
            ("write_ms", d.write_ms),
            ("weighted_ms", d.weighted_ms),
        ] {
            if u128::from(v) > iv_ms * MAX_QUEUE {
                return Err(format!(
                    "{}: {what} {v} in {} µs (queue over {MAX_QUEUE})",
                    name(),
                    s.interval_us
                ));
            }
        }
        let bytes = (u128::from(d.sectors_read) + u128::from(d.sectors_written)) * 512;
        if bytes * 1_000_000 > MAX_DISK_BYTES_PER_S * iv {
            let name = hello
                .disks
                .get(usize::from(d.disk))
                .map_or_else(|| format!("disk #{}", d.disk), |i| i.name.to_string());
            return Err(format!(
                "{name}: {} bytes/s (over 100 GB/s)",
                bytes * 1_000_000 / iv
            ));
        }
    }
    Ok(())
}

/// The scheduler's counts: runnable and blocked tasks, forks, context switches.
fn check_tasks(hello: &Hello, s: &Sample) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    let ncpu = u128::from(hello.cpu_count.max(1));
    for (what, v) in [
        ("procs_running", s.procs_running),
        ("procs_blocked", s.procs_blocked),
    ] {
        if v > MAX_TASKS {
            return Err(format!("{what} {v} (over {MAX_TASKS})"));
        }
    }
    rate(|| "forks".into(), s.forks.into(), iv, MAX_FORKS_PER_S)?;
    rate(
        || "short-lived processes".into(),
        s.short_lived.into(),
        iv,
        MAX_FORKS_PER_S,
    )?;
    rate(
        || "context switches".into(),
        s.context_switches.into(),
        iv,
        MAX_CSW_PER_CPU_S * ncpu,
    )?;
    Ok(())
}

/// The top processes: pid, threads, CPU ticks against what all CPUs (`all_ticks`) and one CPU
/// hold, run delay.
fn check_procs(hello: &Hello, s: &Sample, all_ticks: u128) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    let ncpu = u128::from(hello.cpu_count.max(1));
    for p in &s.top {
        let name = || format!("process {} ({})", p.pid, p.comm);
        if p.pid > MAX_PID {
            return Err(format!("{}: pid over {MAX_PID}", name()));
        }
        if p.threads > MAX_THREADS {
            return Err(format!("{}: {} threads", name(), p.threads));
        }
        let ticks = u128::from(p.utime) + u128::from(p.stime);
        if ticks > all_ticks {
            return Err(format!(
                "{}: {ticks} ticks in {} µs (more than {} CPUs)",
                name(),
                s.interval_us,
                hello.cpu_count
            ));
        }
        if let Some(t) = &p.hottest_thread
            && u128::from(t.ticks) > all_ticks / ncpu
        {
            return Err(format!(
                "{}: thread {} at {} ticks in {} µs (more than one CPU)",
                name(),
                t.tid,
                t.ticks,
                s.interval_us
            ));
        }
        if let Some(d) = p.run_delay_us
            && u128::from(d) > iv * u128::from(p.threads.max(1)) * 2 + 1_000_000
        {
            return Err(format!(
                "{}: run delay {d} µs in {} µs",
                name(),
                s.interval_us
            ));
        }
    }
    Ok(())
}

/// Memory and swap: the totals, and no part over its total.
fn check_memory(s: &Sample) -> Result<(), String> {
    if let Some(m) = &s.memory {
        if m.total_kib > MAX_MEM_KIB || m.swap_total_kib > MAX_MEM_KIB {
            return Err(format!(
                "memory total {} KiB, swap {} KiB (over 64 TiB)",
                m.total_kib, m.swap_total_kib
            ));
        }
        for (what, v) in [
            ("free", m.free_kib),
            ("available", m.available_kib),
            ("buffers", m.buffers_kib),
            ("cached", m.cached_kib),
            ("dirty", m.dirty_kib),
            ("writeback", m.writeback_kib),
        ] {
            if v > m.total_kib {
                return Err(format!(
                    "memory {what} {v} KiB over the total {} KiB",
                    m.total_kib
                ));
            }
        }
        if m.swap_free_kib > m.swap_total_kib {
            return Err(format!(
                "swap free {} KiB over the total {} KiB",
                m.swap_free_kib, m.swap_total_kib
            ));
        }
    }
    Ok(())
}

/// VM activity (swapping, major faults, allocation stalls) and the TCP counters per second.
fn check_vm_tcp(hello: &Hello, s: &Sample) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    if let Some(v) = &s.vm {
        let page = u128::from(hello.page_size.max(1));
        for (what, n) in [
            ("swap in", v.swap_in_pages),
            ("swap out", v.swap_out_pages),
            ("major faults", v.major_faults),
        ] {
            rate(
                || format!("{what} bytes"),
                u128::from(n) * page,
                iv,
                MAX_DISK_BYTES_PER_S,
            )?;
        }
        rate(
            || "allocation stalls".into(),
            v.alloc_stalls.unwrap_or(0).into(),
            iv,
            MAX_FORKS_PER_S,
        )?;
    }
    if let Some(t) = &s.tcp {
        let top = [
            Some(t.retrans_segs),
            Some(t.out_rsts),
            Some(t.in_errs),
            Some(t.estab_resets),
            Some(t.attempt_fails),
            t.timeouts,
            t.keepalive_aborts,
            t.timeout_aborts,
            t.listen_drops,
        ]
        .into_iter()
        .flatten()
        .map(u128::from)
        .max()
        .unwrap_or(0);
        rate(|| "TCP counters".into(), top, iv, MAX_PACKETS_PER_S)?;
    }
    Ok(())
}

/// Each mount: its index and size; then the agent's own CPU time (one thread).
fn check_mounts_agent(hello: &Hello, s: &Sample) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    for m in &s.mounts {
        if usize::from(m.mount) >= hello.mounts.len() {
            return Err(format!(
                "mount index {} outside the Hello's {} mounts",
                m.mount,
                hello.mounts.len()
            ));
        }
        if u128::from(m.used_bytes) + u128::from(m.free_bytes) > MAX_MOUNT_BYTES {
            return Err(format!(
                "mount {}: {} bytes used + {} free (over 1 EiB)",
                hello.mounts[usize::from(m.mount)],
                m.used_bytes,
                m.free_bytes
            ));
        }
    }
    if u128::from(s.agent.cpu_us) > iv * 2 + 1_000_000 {
        return Err(format!(
            "agent cpu_us {} in {} µs (one thread)",
            s.agent.cpu_us, s.interval_us
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
