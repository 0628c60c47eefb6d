//! The report: per-host summaries, the flow and the bottleneck, events with restart patterns
//! and the context of each death, gaps and progress — the JSON contract of `nasprobe report
//! --json` (docs/report-json.md). Only the types: [`crate::analyze()`] builds them.

use serde::Serialize;

use crate::vocab::Flow;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub window: Window,
    pub hosts: Vec<HostSummary>,
    pub flow: Option<Flow>,
    pub bottleneck: Bottleneck,
    pub events: Vec<EventOut>,
    pub patterns: Vec<Pattern>,
    /// Restarting commands that only ever ended on their own (status 0, now and then another
    /// status), touched no flow and whose deaths did not line up with its drops: one line each
    /// at the end of the report instead of a pattern ([`RoutineExits`]).
    pub routine_exits: Vec<RoutineExits>,
    pub gaps: Vec<GapOut>,
    /// What the collector refused on its connections that is not missing data (frames that
    /// failed authentication, a host marked bad, a KeepAlive flood): stored gap rows whose
    /// reason starts with [`REFUSED_PREFIX`], `samples` the number of refusals.
    pub refusals: Vec<GapOut>,
    pub progress: Vec<Progress>,
    /// The files the transfer's processes had open in the last minute of the window.
    pub transfers: Vec<crate::transfers::Transfer>,
    /// Periods where a transfer's own progress fell under 5 MB/s, with the file it was on.
    pub stalls: Vec<crate::transfers::Stall>,
    /// Over a long window (`Options::step_ms` set): the events summarised, one entry per host,
    /// kind, process or device and, for exits, how they ended; `events` then lists only the
    /// first and last [`GROUP_KEEP_ENDS`] of each group. Empty over a short window, where
    /// `events` lists every event.
    pub event_groups: Vec<EventGroup>,
    /// The copies of the window, by start time, each with its own verdict
    /// (found and judged by `crate::copies`); `bottleneck` and `flow` above are those of `lead_copy`.
    pub copies: Vec<CopyOut>,
    /// The number of the copy whose verdict leads (`bottleneck`, `flow`, the hosts' figures):
    /// the newest unless asked (`report --copy N`); null without a copy.
    pub lead_copy: Option<usize>,
}

impl Report {
    /// Every event of the window: over a long window `events` lists only some of them.
    pub fn events_total(&self) -> usize {
        if self.event_groups.is_empty() {
            self.events.len()
        } else {
            self.event_groups.iter().map(|g| g.count).sum()
        }
    }
}

/// One copy in the window (`report --json`'s `copies[]`, docs/report-json.md).
#[derive(Debug, Clone, Serialize)]
pub struct CopyOut {
    /// 1, 2, ... by start time within the window (over the whole store without
    /// `--since`/`--until`).
    pub number: usize,
    pub start: String,
    pub end: String,
    /// From its first second above the floor to its last, s.
    pub seconds: f64,
    /// Bytes the flow carried over the copy (its measured NIC), 10^6 = 1 MB.
    pub bytes: f64,
    pub mb_s: CopyRate,
    pub from: Option<String>,
    pub to: Option<String>,
    /// The processes whose connections carried it (host, pid, name), as the flow's
    /// connections show them.
    pub processes: Vec<CopyProcess>,
    /// The copy's own verdict, from its own samples only: the same object as the report's.
    pub bottleneck: Bottleneck,
    pub flow: Option<Flow>,
    /// The window's start cuts it: it was already above the floor at the window's first
    /// sample, so its verdict is of the part inside the window only.
    pub started_before_window: bool,
    /// The wall in a few words, as the Copies table says it.
    pub wall: String,
}

/// A copy's rates, MB/s: sustained (median over its active seconds), mean and peak (best 10 s).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CopyRate {
    pub sustained: f64,
    pub mean: f64,
    pub peak: f64,
}

/// A process whose connection carried a copy.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct CopyProcess {
    pub host: String,
    pub pid: u32,
    pub name: String,
}

/// The bottleneck object of the report (contract in DESIGN.md).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bottleneck {
    pub host: Option<String>,
    pub resource: crate::vocab::Resource,
    pub device: Option<String>,
    pub process: Option<String>,
    /// cpu_thread: the thread's name (comm) when it differs from the process's, else null.
    pub thread: Option<String>,
    pub utilization: f64,
    pub evidence: Vec<String>,
    pub ruled_out: Vec<String>,
    pub would_not_help: Vec<String>,
}

/// Over a long window, each event group keeps this many of its first and of its last events
/// in `events[]`: a group of up to twice as many (a rare OOM kill, a link change, an agent
/// restart) is listed in full, and a crash loop of thousands of exits shows how it began and
/// how it ended next to its one summary line, which keeps a week's report small.
pub const GROUP_KEEP_ENDS: usize = 3;

/// Events of one host alike (same kind, process or device and, for exits, the same end),
/// summarised over a long window.
#[derive(Debug, Clone, Serialize)]
pub struct EventGroup {
    pub host: String,
    pub kind: &'static str,
    pub process: Option<String>,
    pub device: Option<String>,
    /// `process_exit`: how they ended ("died by SIGKILL", "killed by the OOM killer",
    /// "exited with status 1", "ended (status unknown: seen by a /proc scan)").
    pub ended: Option<String>,
    /// `process_exit`: the cause of the end (`oom`, `killed`, `crashed`, `error_exit`,
    /// `clean` or `unknown`, as in `patterns[].cause`).
    pub cause: Option<&'static str>,
    pub exit_code: Option<u8>,
    pub signal: Option<String>,
    pub oom_killed: Option<bool>,
    pub count: usize,
    /// Times of the first and the last event (RFC 3339, like `events[].at`).
    pub first: String,
    pub last: String,
    /// How many of them `events[]` lists one by one (the first and last few).
    pub listed: usize,
    /// Process events: the median lifetime and the CPU seconds of all of them together.
    pub median_lifetime_s: Option<f64>,
    pub cpu_s: Option<f64>,
    /// One line: "nas1: 10000 × btrfs exited with status 1 (median lifetime 6 s) from .. to ..".
    pub summary: String,
}

impl EventGroup {
    /// "process_exit rsync exited with status 12": its kind, process or device and end.
    pub fn what(&self) -> String {
        [
            Some(self.kind),
            self.process.as_deref(),
            self.device.as_deref(),
            self.ended.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// " (median lifetime 8 s, 22 h 13 min of CPU in all)" for exits, else "".
    pub fn figures(&self) -> String {
        self.median_lifetime_s
            .map(|l| {
                format!(
                    " (median lifetime {}, {} of CPU in all)",
                    crate::time::dur(l),
                    crate::time::dur(self.cpu_s.unwrap_or(0.0))
                )
            })
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub from: String,
    pub to: String,
    pub seconds: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostSummary {
    pub name: String,
    pub samples: usize,
    pub cpu: CpuSummary,
    pub top_processes: Vec<ProcSummary>,
    pub disks: Vec<DiskSummary>,
    pub nics: Vec<NicSummary>,
    pub memory: MemSummary,
    pub tcp: TcpSummary,
    /// The agent's own CPU, µs per second of wall time (median).
    pub agent_cpu_us_per_s: f64,
    /// The agent's clock minus the collector's (ms), measured over the connection handshake;
    /// null when not measured (a store written by an older collector).
    pub clock_offset_ms: Option<i64>,
    /// How exact that is: half the handshake's round trip (ms).
    pub clock_offset_precision_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CpuSummary {
    pub cores: usize,
    /// All cores together, 0..1.
    pub busy: f64,
    pub busy_peak: f64,
    pub iowait: f64,
    pub per_core_busy: Vec<f64>,
    pub run_queue: f64,
    pub hottest_thread: Option<ThreadSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadSummary {
    pub process: String,
    pub thread: String,
    pub pid: u32,
    pub tid: u32,
    /// Fraction of one core, median over the active period.
    pub core_fraction: f64,
    pub peak: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcSummary {
    pub name: String,
    pub pid: u32,
    /// CPU in cores (1.0 = one full core), median and mean over the active period.
    pub cpu_cores: f64,
    pub cpu_cores_mean: f64,
    pub threads: u16,
    /// Share of the time spent waiting for a CPU (schedstat run_delay), when known.
    pub run_delay: Option<f64>,
    pub cmdline: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiskSummary {
    pub name: String,
    pub is_md: bool,
    pub rotational: Option<bool>,
    pub util: f64,
    pub util_peak: f64,
    pub await_ms: f64,
    pub queue: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NicSummary {
    pub name: String,
    pub speed_mbit: u32,
    pub full_duplex: bool,
    pub mtu: u32,
    pub rx_mb_s: f64,
    pub tx_mb_s: f64,
    pub rx_peak_mb_s: f64,
    pub tx_peak_mb_s: f64,
    /// Against the link speed; null when the speed is unknown.
    pub util: Option<f64>,
    pub errors_per_s: f64,
    pub drops_per_s: f64,
    pub is_bond: bool,
    pub slaves: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemSummary {
    pub total_mib: f64,
    pub available_mib_min: f64,
    pub available_estimated: bool,
    pub swap_used_mib: f64,
    pub swap_in_pages_s: f64,
    pub swap_out_pages_s: f64,
    pub major_faults_s: f64,
    pub alloc_stalls_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TcpSummary {
    pub retransmits: f64,
    pub resets: f64,
    pub timeouts: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventOut {
    pub host: String,
    pub at: String,
    pub kind: &'static str,
    pub pid: Option<u32>,
    pub process: Option<String>,
    pub cmdline: Option<String>,
    pub lifetime_s: Option<f64>,
    pub cpu_s: Option<f64>,
    pub device: Option<String>,
    pub detail: Option<String>,
    /// `process_exit`: the status it exited with; null when a signal ended it or unknown.
    pub exit_code: Option<u8>,
    /// `process_exit`: the signal that ended it ("SIGKILL"), null when none or unknown.
    pub signal: Option<String>,
    pub core_dumped: Option<bool>,
    pub oom_killed: Option<bool>,
    /// `process_exit`: `kernel` (process connector: the status is known) or `scan`.
    pub exit_seen: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeathContext {
    pub at: String,
    pub pid: u32,
    pub lifetime_s: f64,
    pub cmdline: String,
    /// "died by SIGKILL after 8 s", "exited with status 1 after 2 min".
    pub ended: String,
    /// The cause of this death alone (see [`Pattern::cause`]).
    pub cause: &'static str,
    /// Seconds before the death the figures below cover: the minute before, or the second half
    /// of the process's life when that is shorter (at least 2 s), so one death's context never
    /// holds the previous one's and the first half of the life gives the usual rates.
    pub window_s: f64,
    pub tcp_retransmits: f64,
    pub tcp_resets: f64,
    pub tcp_timeouts: f64,
    pub nic_errors: f64,
    pub nic_drops: f64,
    pub link_down: bool,
    pub swap_pages: f64,
    pub process_cpu_cores: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pattern {
    pub host: String,
    pub process: String,
    /// The command with its changing numbers replaced by `N`.
    pub command: String,
    pub restarts: usize,
    pub every_s: Option<f64>,
    pub new_arguments_each_time: bool,
    /// The argument that changes looks like a resume token: a long token, or a number that
    /// grows from one run to the next (an offset), not `sleep 3` then `sleep 5`.
    pub resume_token: bool,
    pub summary: String,
    /// What most deaths had in the time before them, against the host's usual (a burst of TCP
    /// retransmits or timeouts, the link going down, NIC errors, swapping); or that none of it
    /// was seen (then a watchdog or the program itself is the suspect).
    pub before_deaths: Vec<String>,
    /// How the deaths ended: `oom`, `killed`, `crashed`, `error_exit`, `clean` or `unknown`
    /// (the cause of most of them).
    pub cause: &'static str,
    /// Sentences with the counts and times behind `cause`.
    pub cause_evidence: Vec<String>,
    /// Each death with its context; over a long window only the first and last
    /// [`GROUP_KEEP_ENDS`] (`deaths_total` counts them all, the other fields are of all).
    pub deaths: Vec<DeathContext>,
    pub deaths_total: usize,
}

/// The routine exits of one process on one host: the restart patterns of that name that only
/// ended on their own (see [`Report::routine_exits`]), counted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RoutineExits {
    pub host: String,
    pub process: String,
    /// The commands (shapes, as `patterns[].command`) merged into this line.
    pub commands: Vec<String>,
    /// Exits with status 0.
    pub clean: usize,
    /// The other statuses, each with how many exits had it, by status.
    pub other_statuses: Vec<StatusCount>,
    /// "nas: `bash`: 15 clean exits, 2 with status 1".
    pub line: String,
}

/// How many exits had one status.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatusCount {
    pub status: u8,
    pub exits: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct GapOut {
    pub host: String,
    pub from: String,
    pub to: String,
    pub samples: Option<u64>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    pub host: String,
    pub mount: String,
    pub landed_bytes: f64,
    pub rate_mb_s: f64,
    pub used_bytes: f64,
    pub expected_bytes: Option<u64>,
    pub eta_seconds: Option<f64>,
}

/// Prefix of the reason of a stored refusal of the collector (see [`Report::refusals`]).
pub const REFUSED_PREFIX: &str = "refused:";

/// True for the reason of a stored refusal: not missing data, listed apart from the gaps.
pub fn is_refusal(reason: &str) -> bool {
    reason.starts_with(REFUSED_PREFIX)
}

/// Prefix of the gap reason of a stored row that could not be decoded (a corrupt row): it is
/// left out of every figure and listed as a gap instead of being dropped silently.
pub const UNDECODABLE_PREFIX: &str = "undecodable";

/// The gap reason of stored `what` ("sample", "event") `seq` that does not decode.
pub fn undecodable_reason(what: &str, seq: u64) -> String {
    format!("{UNDECODABLE_PREFIX}: the stored {what} seq {seq} does not decode")
}
