//! Processes: a bounded table keyed by (pid, starttime), the top N by CPU in the interval with
//! the hottest thread of the busiest few, run_delay, command lines, start/exit events.
//!
//! Scan policy (`--scan`): `all` reads /proc/PID/stat of every process every sample;
//! `every:N` lists /proc and reads every process every N samples and, in
//! between, only the processes that used CPU at their last read (the current top and the
//! other busy ones, usually a handful). Tradeoff: a process that wakes up from idle between
//! two full scans enters the top list only at the next full scan (up to N-1 samples late),
//! its CPU over those samples is then averaged per interval; processes that start and exit
//! between two full scans are never seen (only the `forks` counter shows them); exits of idle
//! processes are noticed at the next full scan. In exchange the per-sample cost falls from
//! "every pid" to "busy pids" (see BENCHMARKS.md).
//!
//! `adaptive` (the default) reads the busy processes and the pids the connector announced each
//! sample, and lists /proc only when the host's busy CPU in the interval (user + nice + system
//! of /proc/stat) exceeds what the processes read account for by more than
//! [`UNACCOUNTED_CORE_PERCENT`] of a core: a process woke up or started unannounced. That scan
//! runs in the same sample; the processes it finds busy are read again at the next sample, so
//! their CPU shows exactly, at most two intervals after they began to use it. Without that
//! trigger /proc is listed every `adaptive:S` seconds (every [`ADAPTIVE_EVERY_NO_CONNECTOR`]
//! samples without the connector, whose exits and new pids only a listing finds).
//!
//! With the kernel's process connector (see [`crate::events::connector`]) exits carry their status
//! and are reported at the next sample (zombies included), and new pids (fork, exec) are read
//! at the next sample instead of the next full scan, so short lives are seen; without it
//! exits are found by the scans as above, without status.
//!
//! The table is two sorted arrays (old and new) merged against the sorted pid listing at each
//! full scan: O(n), no hashing, no allocation after start (`scan.rs`); the top list, its
//! threads and command lines are `top.rs`.

mod scan;
mod top;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nasprobe_proto::{
    CMDLINE_LEN, COMM_LEN, Cmdline, Comm, CpuTicks, Event, ExitSeen, ExitStatus, ProcSample,
    ProcessEnd, ProcessExit, ProcessInfo, Sample, ThreadSample, flags,
};

use super::delta::{step, u32s};
use super::io::{self, Once, PathBuf64, ReadError, Root};
use crate::config::{Config, ScanPolicy};
use crate::parse::cmdline::{DEFAULT_REDACT, format_cmdline};
use crate::parse::cn_proc::ExitCode;
use crate::parse::pid_stat::{PidStat, parse_pid_stat};
use crate::parse::schedstat::parse_schedstat;

/// Processes tracked at once. pid_max defaults to 32768 and a NAS runs 100-400 processes;
/// 8192 leaves 20x headroom and holds the 5,000-process benchmark tree. Two arrays of this
/// many ~100-byte entries are reserved at start (~1.6 MiB of address space, touched only as
/// far as used). More processes than this: the highest pids are left out, logged once and
/// counted in [`Procs::table_full`].
pub(crate) const PROC_TABLE_CAP: usize = 8192;
/// /proc/PID/stat descriptors kept open on a real procfs (2.5 µs per read instead of 6.6 µs
/// with open/read/close). Each kept seq_file pins about one page of kernel memory, so 256
/// costs at most ~1 MiB of kernel memory; processes past it are opened per read.
pub(crate) const KEPT_PID_FDS: usize = 256;
/// Formatted command lines kept for exit events (a process's cmdline is unreadable once it
/// has gone). 1024 slots of CMDLINE_LEN bytes = 256 KiB reserved, touched as used; when full,
/// exit events of the extra processes carry an empty command line (logged once).
pub(crate) const CMDLINE_SLOTS: usize = 1024;
/// The top processes whose busiest thread is looked for (each costs a /proc/PID/task scan).
pub(crate) const HOT_THREAD_PROCS: usize = 3;
/// Threads read per hot process per sample; more are left out (logged once).
pub(crate) const THREADS_PER_PROC_MAX: usize = 1024;
/// Thread counters kept from one sample to the next: HOT_THREAD_PROCS x 1024 plus headroom.
pub(crate) const THREAD_TABLE_CAP: usize = 4096;
/// Bytes of /proc/PID/cmdline read before formatting (redaction needs the arguments whole;
/// the output is cut to --cmdline-bytes afterwards).
pub(crate) const CMDLINE_READ: usize = 4096;
/// A path redacted whole before it is cut to CMDLINE_LEN: PATH_MAX, the longest link target
/// the open-files sampler reads (its `LINK_MAX`).
pub(crate) const REDACT_PATH_LEN: usize = 4096;
/// getdents64 buffer: ~200 entries of /proc per call.
pub(crate) const DENTS_BUF: usize = 8 * 1024;
/// New pids announced by the process connector (fork, exec) and read at the next sample; more
/// in one interval (a fork storm) are left to the next full scan and counted.
pub(crate) const PENDING_PIDS: usize = 512;
/// Busy CPU of the host not accounted for by the processes read, in percent of one core over
/// the interval, above which `--scan adaptive` lists /proc at once: the bound named by issue 15
/// ("no new process above 5% of a core missed"). Each process read may also be short by up to
/// one tick of rounding, so that many ticks are allowed on top.
pub(crate) const UNACCOUNTED_CORE_PERCENT: u64 = 5;
/// `--scan adaptive` without the process connector: nothing announces new pids and exits,
/// so /proc is listed at least this many samples apart (the old default, every:5).
pub(crate) const ADAPTIVE_EVERY_NO_CONNECTOR: u32 = 5;
/// Unaccounted CPU can also come from processes that started and ended between two samples (a
/// build's compilers) or from many small wakers: no listing finds a process above the bound
/// then. A triggered scan whose newly read processes hold less than the bound's ticks holds the
/// trigger off for 1, 2, 4 ... up to this many samples, so that such a storm costs at most one
/// listing in this many samples; one that finds them ends the hold-off.
pub(crate) const TRIGGER_BACKOFF_MAX: u32 = 8;

const F_START_SENT: u8 = 2;
const F_CMDLINE_SENT: u8 = 4;
const F_WAS_TOP: u8 = 8;
const F_ACTIVE: u8 = 16;
/// The kernel's process connector said this process exited (status in `exit_raw`).
const F_EXITED: u8 = 32;
/// The kernel log says the OOM killer killed this process.
const F_OOM: u8 = 64;
const NO_SLOT: u16 = u16::MAX;

/// One tracked process (not `Copy`: it owns its kept descriptor).
struct Proc {
    pid: u32,
    ppid: u32,
    start: u64,
    utime: u64,
    stime: u64,
    run_delay: u64,
    /// Kept /proc/PID/stat descriptor (closed when the entry goes).
    fd: Option<OwnedFd>,
    /// Sample number of the last stat read, and of the last schedstat read (0: never).
    read_at: u32,
    rd_at: u32,
    threads: u32,
    d_utime: u32,
    d_stime: u32,
    comm: [u8; COMM_LEN],
    comm_len: u8,
    state: u8,
    flags: u8,
    slot: u16,
    /// wait(2) status from the process connector, valid with `F_EXITED`.
    exit_raw: u32,
    /// CLOCK_MONOTONIC ns of the connector's exit message, valid with `F_EXITED`.
    exit_ns: u64,
}

impl Proc {
    fn comm(&self) -> &[u8] {
        &self.comm[..self.comm_len as usize]
    }
    fn ticks(&self) -> u64 {
        self.d_utime as u64 + self.d_stime as u64
    }
}

#[derive(Clone, Copy)]
struct Thr {
    pid: u32,
    tid: u32,
    ticks: u64,
    at: u32,
}

pub(crate) struct Procs {
    table: Vec<Proc>,
    next: Vec<Proc>,
    scan: Vec<u32>,
    tids: Vec<u32>,
    threads: Vec<Thr>,
    threads_next: Vec<Thr>,
    dents: Box<[u8]>,
    cmd_slots: Box<[[u8; CMDLINE_LEN]]>,
    cmd_lens: Box<[u16]>,
    cmd_free: Vec<u16>,
    top: heapless::Vec<usize, { nasprobe_proto::MAX_TOP_PROCS }>,
    path: PathBuf64,
    kept: usize,
    patterns: Vec<Vec<u8>>,
    cmdline_bytes: usize,
    top_n: usize,
    every: u32,
    /// `--scan adaptive`: the longest time between two full scans (with the connector).
    adaptive_max_ms: Option<u64>,
    min_life_ms: u64,
    hz: u64,
    interval_ms: u64,
    sample_no: u32,
    last_full: u32,
    last_full_ms: u64,
    /// Full scans so far, and those of them `--scan adaptive` ran because CPU was unaccounted.
    pub full_scans: u32,
    pub triggered_scans: u32,
    /// CPU ticks (since their last read) of the processes the current full scan read that were
    /// not read before it in this sample.
    found_ticks: u64,
    /// Samples the trigger is still held off, and the length of the last hold-off.
    holdoff: u32,
    backoff: u32,
    uptime: io::Src,
    /// Times the process table (or a thread listing) was full; logged once.
    pub table_full: u32,
    /// Exits come from the process connector: zombies are not taken into the table (their
    /// exit was reported, or was of a process never tracked).
    kernel_exits: bool,
    /// Connector exits of processes the table does not hold (started and ended unseen).
    pub untracked_exits: u32,
    /// Pids the connector announced since the last sample, with their exit status when they
    /// also ended already.
    pending: Vec<(u32, Option<(u32, u64)>)>,
    /// Announced pids left to the next full scan because `pending` was full.
    pub pending_dropped: u32,
    /// Announced pids that ended before a sample read them, since the last sample.
    short_kernel: u32,
    /// Processes left out of [`Procs::io_candidates`] past its bound, since the start.
    pub candidates_left: u32,
    log_candidates: Once,
    log_stat: Once,
    log_full: Once,
    log_slots: Once,
    log_threads: Once,
    log_list: Once,
}

impl Procs {
    pub fn new(cfg: &Config, hz: u64) -> Procs {
        let mut patterns: Vec<Vec<u8>> = DEFAULT_REDACT.iter().map(|p| p.to_vec()).collect();
        patterns.extend(
            cfg.redact
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| p.as_bytes().to_vec()),
        );
        Procs {
            table: Vec::with_capacity(PROC_TABLE_CAP),
            next: Vec::with_capacity(PROC_TABLE_CAP),
            scan: Vec::with_capacity(PROC_TABLE_CAP),
            tids: Vec::with_capacity(THREADS_PER_PROC_MAX),
            threads: Vec::with_capacity(THREAD_TABLE_CAP),
            threads_next: Vec::with_capacity(THREAD_TABLE_CAP),
            dents: vec![0u8; DENTS_BUF].into_boxed_slice(),
            cmd_slots: vec![[0u8; CMDLINE_LEN]; CMDLINE_SLOTS].into_boxed_slice(),
            cmd_lens: vec![0u16; CMDLINE_SLOTS].into_boxed_slice(),
            cmd_free: (0..CMDLINE_SLOTS as u16).rev().collect(),
            top: heapless::Vec::new(),
            path: PathBuf64::default(),
            kept: 0,
            patterns,
            cmdline_bytes: cfg.cmdline_bytes.min(CMDLINE_LEN),
            top_n: cfg.top.min(nasprobe_proto::MAX_TOP_PROCS),
            every: match cfg.scan {
                ScanPolicy::All => 1,
                ScanPolicy::Every(n) => n.max(1),
                ScanPolicy::Adaptive(_) => ADAPTIVE_EVERY_NO_CONNECTOR,
            },
            adaptive_max_ms: match cfg.scan {
                ScanPolicy::Adaptive(s) => Some(s.max(1) as u64 * 1000),
                _ => None,
            },
            min_life_ms: cfg.event_min_lifetime_ms as u64,
            hz: hz.max(1),
            interval_ms: cfg.interval_ms.max(1) as u64,
            sample_no: 0,
            last_full: 0,
            last_full_ms: 0,
            full_scans: 0,
            triggered_scans: 0,
            found_ticks: 0,
            holdoff: 0,
            backoff: 0,
            uptime: io::Src::new("uptime"),
            table_full: 0,
            kernel_exits: false,
            untracked_exits: 0,
            pending: Vec::with_capacity(PENDING_PIDS),
            pending_dropped: 0,
            short_kernel: 0,
            candidates_left: 0,
            log_candidates: Once::default(),
            log_stat: Once::default(),
            log_full: Once::default(),
            log_slots: Once::default(),
            log_threads: Once::default(),
            log_list: Once::default(),
        }
    }

    /// The process connector is (or is no longer) the source of exits.
    pub fn set_kernel_exits(&mut self, on: bool) {
        self.kernel_exits = on;
    }

    /// A process ended, says the kernel: its status is kept on its table entry and the exit is
    /// reported at the next sample. Exits of threads and of untracked processes are dropped
    /// here (a binary search: the table is sorted by pid), so a fork storm costs little.
    pub fn kernel_exit(&mut self, pid: u32, tgid: u32, exit_raw: u32, exit_ns: u64) {
        if pid != tgid {
            return;
        }
        match self.table.binary_search_by_key(&pid, |p| p.pid) {
            Ok(i) => {
                let p = &mut self.table[i];
                p.flags |= F_EXITED;
                p.exit_raw = exit_raw;
                p.exit_ns = exit_ns;
            }
            // Announced and gone before a sample read it (a build's compiler runs, a fork
            // storm): counted as short-lived, not read (it lived less than one interval).
            Err(_) => match self.pending.iter().position(|p| p.0 == pid) {
                Some(k) => {
                    self.pending.swap_remove(k);
                    self.short_kernel = self.short_kernel.saturating_add(1);
                }
                None => self.untracked_exits = self.untracked_exits.saturating_add(1),
            },
        }
    }

    /// The OOM killer killed `pid` (kernel log): its exit is marked `oom_killed`. False when
    /// the agent does not track it.
    pub fn oom_kill(&mut self, pid: u32) -> bool {
        match self.table.binary_search_by_key(&pid, |p| p.pid) {
            Ok(i) => {
                self.table[i].flags |= F_OOM;
                true
            }
            Err(_) => false,
        }
    }

    /// The busiest processes of the last sample (pid, comm), at most `n`.
    pub fn top_procs(&self, n: usize) -> Vec<(u32, Comm)> {
        self.top
            .iter()
            .take(n)
            .map(|&i| {
                let p = &self.table[i];
                let mut comm = Comm::new();
                crate::parse::to_label(p.comm(), COMM_LEN, &mut comm);
                (p.pid, comm)
            })
            .collect()
    }

    /// Processes that may be moving data now, for the open-files sampler to rank by I/O: those
    /// running or in uninterruptible (I/O) sleep at their last read, or that used CPU then;
    /// (pid, comm), the agent itself left out. At most `n`: those in I/O sleep first, then the
    /// busiest; the others are counted in `candidates_left` (and logged once).
    pub fn io_candidates(&mut self, n: usize) -> Vec<(u32, Comm)> {
        let me = std::process::id();
        let mut c: Vec<&Proc> = self
            .table
            .iter()
            .filter(|p| p.pid != me && (matches!(p.state, b'R' | b'D') || p.ticks() > 0))
            .collect();
        if c.len() > n {
            let left = c.len() - n;
            c.sort_unstable_by_key(|p| (p.state != b'D', std::cmp::Reverse(p.ticks())));
            c.truncate(n);
            self.candidates_left = self.candidates_left.saturating_add(left as u32);
            self.log_candidates.warn(format_args!(
                "more than {n} processes running or in I/O sleep: the open-files sampler looks \
                 at those in I/O sleep and the busiest ({left} left out this time)"
            ));
        }
        c.iter()
            .map(|p| {
                let mut comm = Comm::new();
                crate::parse::to_label(p.comm(), COMM_LEN, &mut comm);
                (p.pid, comm)
            })
            .collect()
    }

    /// A file path redacted like a command line (one argument), whole: only then is a path
    /// longer than CMDLINE_LEN cut, keeping its end (the file's name) after `...`. Cut first,
    /// a pattern in the part cut away left its value in clear (issue 28: a 336-byte path with
    /// `token=SECRET` near its start arrived with the secret).
    pub fn redact_path(&self, path: &[u8], out: &mut Cmdline) {
        let mut whole = heapless::String::<REDACT_PATH_LEN>::new();
        format_cmdline(
            &path[..path.len().min(REDACT_PATH_LEN)],
            self.patterns.iter().map(|p| p.as_slice()),
            REDACT_PATH_LEN,
            &mut whole,
        );
        out.clear();
        if whole.len() <= CMDLINE_LEN {
            let _ = out.push_str(&whole);
            return;
        }
        let mut from = whole.len() - (CMDLINE_LEN - 3);
        while !whole.is_char_boundary(from) {
            from += 1;
        }
        let _ = out.push_str("...");
        let _ = out.push_str(&whole[from..]);
    }

    /// True when the agent tracks `pid` now.
    pub fn is_tracked(&self, pid: u32) -> bool {
        self.table.binary_search_by_key(&pid, |p| p.pid).is_ok()
    }

    /// A kernel log line redacted like a command line (its words as the arguments).
    pub fn redact_line(&self, line: &[u8], out: &mut Cmdline) {
        let mut words = [0u8; CMDLINE_READ];
        let n = line.len().min(words.len());
        for (w, &b) in words.iter_mut().zip(&line[..n]) {
            *w = if b == b' ' { 0 } else { b };
        }
        format_cmdline(
            &words[..n],
            self.patterns.iter().map(|p| p.as_slice()),
            CMDLINE_LEN,
            out,
        );
    }

    /// A new process (fork of a process, or exec), says the kernel: it is read at the next
    /// sample instead of waiting for a full scan, so that short lives are seen too.
    pub fn kernel_new(&mut self, pid: u32) {
        if self.pending.iter().any(|p| p.0 == pid) {
            return;
        }
        if self.pending.len() < PENDING_PIDS {
            self.pending.push((pid, None));
        } else {
            self.pending_dropped = self.pending_dropped.saturating_add(1);
        }
    }

    /// Processes tracked now.
    pub fn tracked(&self) -> usize {
        self.table.len()
    }

    /// Milliseconds since boot: CLOCK_BOOTTIME on a real procfs (the clock of /proc/uptime and
    /// of process start times, one vDSO call instead of a read), /proc/uptime of the tree else.
    fn now_ms(&mut self, root: &Root, buf: &mut [u8]) -> u64 {
        if !root.real
            && let Ok(b) = self.uptime.read(root, buf)
        {
            match crate::parse::sysfs::parse_uptime_ms(b) {
                Ok(ms) => return ms,
                Err(e) => self.uptime.complain(root, &e),
            }
        }
        nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
            .map(|t| t.tv_sec() as u64 * 1000 + t.tv_nsec() as u64 / 1_000_000)
            .unwrap_or(0)
    }

    /// One sample. `priming`: the first call, which only learns what runs.
    pub fn sample(
        &mut self,
        root: &Root,
        buf: &mut [u8],
        priming: bool,
        out: &mut Sample,
        emit: &mut dyn FnMut(Event),
    ) {
        self.sample_no += 1;
        let now_ms = self.now_ms(root, buf);
        // The sample after priming is always full: priming gave every process a baseline.
        let mut full = priming || self.last_full == 1 || self.scan_due(now_ms);
        self.add_pending(root, buf, now_ms);
        let mut short_lived = 0;
        if full {
            short_lived += self.full_scan(root, buf, priming, now_ms, emit);
        } else {
            short_lived += self.partial_scan(root, buf, now_ms, emit);
            if self.holdoff > 0 {
                self.holdoff -= 1;
            } else if self.adaptive_max_ms.is_some() && self.unaccounted(&out.cpu_total) {
                // Someone not read used CPU: list /proc now (what was read stays as read).
                self.triggered_scans += 1;
                self.found_ticks = 0;
                short_lived += self.full_scan(root, buf, priming, now_ms, emit);
                full = true;
                if self.found_ticks < self.unaccounted_allowance(0) {
                    self.backoff = (self.backoff * 2).clamp(1, TRIGGER_BACKOFF_MAX);
                    self.holdoff = self.backoff;
                } else {
                    self.backoff = 0;
                }
            }
        }
        if full {
            self.full_scans += 1;
            self.last_full = self.sample_no;
            self.last_full_ms = now_ms;
        }
        if priming {
            for i in 0..self.table.len() {
                self.table[i].flags |= F_START_SENT;
                self.capture_cmdline(root, buf, i);
            }
            return;
        }
        out.short_lived = short_lived + std::mem::take(&mut self.short_kernel);
        self.select_top();
        // Start events: processes that reached the minimum lifetime or are in the top.
        for i in 0..self.table.len() {
            let p = &self.table[i];
            if p.flags & F_START_SENT != 0 {
                continue;
            }
            let in_top = self.top.contains(&i);
            if !in_top && now_ms.saturating_sub(p.start * 1000 / self.hz) < self.min_life_ms {
                continue;
            }
            self.table[i].flags |= F_START_SENT;
            self.capture_cmdline(root, buf, i);
            emit(Event::ProcessStart(self.info(i)));
        }
        self.fill_top(root, buf, out);
    }

    /// A full scan is due by the policy's clock (samples, or seconds for `adaptive`).
    fn scan_due(&self, now_ms: u64) -> bool {
        match self.adaptive_max_ms {
            Some(max_ms) if self.kernel_exits => now_ms.saturating_sub(self.last_full_ms) >= max_ms,
            _ => self.sample_no - self.last_full >= self.every,
        }
    }

    /// The host's busy ticks in the interval (`cpu` of /proc/stat: user, nice, system) exceed
    /// the ticks of the processes read in this sample by more than the allowance. False when
    /// the host's CPU is unknown this time.
    fn unaccounted(&self, host: &CpuTicks) -> bool {
        if host.flags & flags::RESET != 0 || host.total() == 0 {
            return false;
        }
        let busy = u64::from(host.user) + u64::from(host.nice) + u64::from(host.system);
        let (mut read, mut ticks) = (0u64, 0u64);
        for p in self.table.iter().filter(|p| p.read_at == self.sample_no) {
            read += 1;
            ticks += p.ticks();
        }
        busy > ticks + self.unaccounted_allowance(read)
    }

    /// Ticks of [`UNACCOUNTED_CORE_PERCENT`] of a core over one interval, plus one tick of
    /// rounding for each of `read` processes.
    fn unaccounted_allowance(&self, read: u64) -> u64 {
        self.hz * self.interval_ms * UNACCOUNTED_CORE_PERCENT / 100_000 + read
    }

    fn info(&self, i: usize) -> ProcessInfo {
        let p = &self.table[i];
        let mut comm = Comm::new();
        crate::parse::to_label(p.comm(), COMM_LEN, &mut comm);
        let mut cmdline = Cmdline::new();
        if p.slot != NO_SLOT {
            let s = p.slot as usize;
            let bytes = &self.cmd_slots[s][..self.cmd_lens[s] as usize];
            let _ = cmdline.push_str(core::str::from_utf8(bytes).unwrap_or(""));
        }
        ProcessInfo {
            pid: p.pid,
            ppid: p.ppid,
            comm,
            cmdline,
            start_ticks: p.start,
        }
    }
}

fn root_read<'b>(
    dir: BorrowedFd<'_>,
    rel: &std::ffi::CStr,
    buf: &'b mut [u8],
) -> Result<&'b [u8], ReadError> {
    let f = io::open_raw(Some(dir), rel, libc::O_RDONLY).map_err(ReadError::from_errno)?;
    io::read_at(f.as_fd(), buf)
}

/// CLOCK_MONOTONIC in ns: the clock of the connector's timestamps.
fn mono_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Per-interval average of a delta over `n` intervals, rounded to nearest but never rounding
/// a nonzero delta down to 0 (a process that used CPU must stay visible).
fn avg(d: u64, n: u64) -> u64 {
    if n <= 1 {
        return d;
    }
    let a = (d + n / 2) / n;
    if a == 0 && d > 0 { 1 } else { a }
}

fn set_comm(p: &mut Proc, name: &[u8]) {
    let n = name.len().min(COMM_LEN);
    p.comm[..n].copy_from_slice(&name[..n]);
    p.comm_len = n as u8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_candidates_are_bounded_io_sleep_first_then_the_busiest() {
        let mut p = Procs::new(&Config::default(), 100);
        let proc = |pid, state, ticks| Proc {
            pid,
            ppid: 1,
            start: 0,
            utime: 0,
            stime: 0,
            run_delay: 0,
            fd: None,
            read_at: 0,
            rd_at: 0,
            threads: 1,
            d_utime: ticks,
            d_stime: 0,
            comm: [b'x'; COMM_LEN],
            comm_len: 1,
            state,
            flags: 0,
            slot: NO_SLOT,
            exit_raw: 0,
            exit_ns: 0,
        };
        p.table = vec![
            proc(10, b'R', 0),
            proc(11, b'S', 0),
            proc(12, b'S', 5),
            proc(13, b'D', 0),
        ];
        let all: Vec<u32> = p.io_candidates(8).iter().map(|c| c.0).collect();
        assert_eq!(
            all,
            [10, 12, 13],
            "running, busy or in I/O sleep; idle left out"
        );
        let two: Vec<u32> = p.io_candidates(2).iter().map(|c| c.0).collect();
        assert_eq!(two, [13, 12], "I/O sleep first, then the busiest");
        assert_eq!(p.candidates_left, 1);
    }

    #[test]
    fn paths_are_redacted_and_long_ones_keep_their_end() {
        let cfg = Config {
            redact: vec!["secret".into()],
            ..Config::default()
        };
        let p = Procs::new(&cfg, 100);
        let mut out = Cmdline::new();
        p.redact_path(b"/share/key=abc/a.mkv", &mut out);
        assert_eq!(out.as_str(), "/share/key=***");
        p.redact_path(b"/share/my secret dir/b", &mut out);
        assert!(!out.contains("dir/b"), "{out}");
        // 336 bytes, the secret in the part a cut to its end would drop (issue 28).
        let long = format!("/share/token=SECRET/{}/x.mkv", "d".repeat(310));
        assert_eq!(long.len(), 336);
        p.redact_path(long.as_bytes(), &mut out);
        assert_eq!(out.as_str(), "/share/token=***");
        let long = format!("/share/{}/key=abc/film.mkv", "d/".repeat(200));
        p.redact_path(long.as_bytes(), &mut out);
        assert!(!out.contains("abc") && out.ends_with("key=***"), "{out}");
        let long = format!("/share/{}/film.mkv", "d/".repeat(200));
        p.redact_path(long.as_bytes(), &mut out);
        assert!(
            out.starts_with("...") && out.ends_with("/film.mkv"),
            "{out}"
        );
        assert_eq!(out.len(), CMDLINE_LEN);
    }
}
