//! The events a record carries: processes starting and ending (and how), links, devices,
//! kernel messages, and the per-sample TCP connections and open files.

use heapless::Vec;
use serde::{Deserialize, Serialize};

use crate::limits::{
    Cmdline, Comm, DevName, MAX_CONN_PROCS, MAX_FILE_PROCS, MAX_PROC_CONNS, MAX_PROC_FILES, Short,
};
use crate::shaping_msg::Shaping;

/// Something that happened between samples.
#[allow(clippy::large_enum_variant)] // fixed-capacity by design, see `Message`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A process that lived a while or was among the top was first seen.
    ProcessStart(ProcessInfo),
    /// A process seen before is gone.
    ProcessExit(ProcessExit),
    /// A NIC's link state, speed or duplex changed.
    LinkChange(LinkChange),
    /// The agent (this instance) started.
    AgentStart(AgentStart),
    /// A device appeared after start; see the current `Hello` for its inventory entry.
    DeviceAdded(DeviceAdded),
    /// A process seen before is gone, with how it ended. Agents that know this variant send it
    /// instead of [`Event::ProcessExit`] for every exit.
    ProcessEnd(ProcessEnd),
    /// How this agent instance learns of exits; sent at start and whenever `dropped` grew.
    ExitWatch(ExitWatch),
    /// A kernel log line about a tracked process or a NIC, redacted like command lines.
    KernelMessage(KernelMessage),
    /// The TCP connections of the top processes at this sample (sparse: only active or
    /// troubled ones, only in samples that have some).
    Connections(Connections),
    /// The regular files the transfer's processes have open, with their positions (sparse:
    /// only when a process has one, and at most every few seconds).
    OpenFiles(OpenFiles),
    /// The traffic-control caps of every shaped NIC (tbf, htb, cake, hfsc), whole each time:
    /// sent when they change and hourly while a NIC is shaped (an empty list: none now), only
    /// to collectors that accept them (`ResumeWith`).
    Shaping(ShapingPayload),
}

/// The payload of [`Event::Shaping`]: boxed where there is a heap (the `std` feature), so that
/// an `Event` keeps the size of its other variants (9.4 KB, not the 21.3 KB of a full
/// [`Shaping`]): a decoded event is moved by value through the decoder's layers, and a report
/// decodes each stored event more than once (a week of two hosts spent 11 % more instructions
/// on those copies before this). Boxed or not, the wire is the same: serde encodes a `Box<T>`
/// as its `T`. Build one with `.into()` from a `Shaping` in either case.
#[cfg(feature = "std")]
pub type ShapingPayload = std::boxed::Box<Shaping>;
/// The payload of [`Event::Shaping`] (inline without a heap; boxed with `std`).
#[cfg(not(feature = "std"))]
pub type ShapingPayload = Shaping;

impl Event {
    /// [`Event::kind`] of [`Event::Connections`].
    pub const KIND_CONNECTIONS: &'static str = "tcp_connections";
    /// [`Event::kind`] of [`Event::OpenFiles`].
    pub const KIND_OPEN_FILES: &'static str = "open_files";
    /// [`Event::kind`] of [`Event::Shaping`].
    pub const KIND_SHAPING: &'static str = "shaping";

    /// The exit of a process in either form, with its status when the event carries one.
    pub fn as_exit(&self) -> Option<(&ProcessExit, Option<&ExitStatus>)> {
        match self {
            Event::ProcessExit(x) => Some((x, None)),
            Event::ProcessEnd(e) => Some((&e.exit, Some(&e.status))),
            _ => None,
        }
    }
}

impl Event {
    /// Per-sample measurements carried as events (TCP connections, open files): not listed
    /// among the events of a report.
    pub fn is_measurement(&self) -> bool {
        matches!(
            self,
            Event::Connections(_) | Event::OpenFiles(_) | Event::Shaping(_)
        )
    }

    /// The `kind` of an event as stored, exported and reported ("process_start", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::ProcessStart(_) => "process_start",
            Event::ProcessExit(_) | Event::ProcessEnd(_) => "process_exit",
            Event::LinkChange(_) => "link_change",
            Event::AgentStart(_) => "agent_start",
            Event::DeviceAdded(_) => "device_added",
            Event::ExitWatch(_) => "exit_watch",
            Event::KernelMessage(_) => "kernel_message",
            Event::Connections(_) => Event::KIND_CONNECTIONS,
            Event::OpenFiles(_) => Event::KIND_OPEN_FILES,
            Event::Shaping(_) => Event::KIND_SHAPING,
        }
    }
}

/// A process as the agent saw it first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Its task name.
    pub comm: Comm,
    /// Its command line, redacted.
    pub cmdline: Cmdline,
    /// Start time in ticks since boot (/proc/PID/stat field 22): with pid, the identity.
    pub start_ticks: u64,
}

/// A process seen before is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessExit {
    /// The process as it was first seen.
    pub process: ProcessInfo,
    /// How long it lived, ms (as far as the agent saw: from its start time to the scan that
    /// found it gone).
    pub lifetime_ms: u64,
    /// user + system ticks used over its whole life (as last seen).
    pub cpu_ticks: u64,
}

/// A NIC's link as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkChange {
    /// The interface's name.
    pub nic: DevName,
    /// Operstate up with carrier.
    pub up: bool,
    /// Link speed, Mbit/s; 0 when unknown or down.
    pub speed_mbit: u32,
    /// Full duplex; None when unknown.
    pub full_duplex: Option<bool>,
    /// MTU, bytes.
    pub mtu: u32,
}

/// This agent instance started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStart {
    /// The agent's version.
    pub agent_version: Short,
    /// The new instance's id (as in its `Hello`).
    pub instance_id: u64,
    /// Its sampling interval, ms.
    pub interval_ms: u32,
}

/// A device that appeared after the agent's start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeviceAdded {
    /// A block device, by name.
    Disk(DevName),
    /// A network interface, by name.
    Nic(DevName),
}

/// How the agent learnt that a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitSeen {
    /// The kernel said so (process connector, `PROC_EVENT_EXIT`): the status is known.
    Kernel,
    /// A scan of /proc found it gone: the status is unknown.
    Scan,
}

/// How a process ended, as far as the agent knows.
impl ExitSeen {
    /// The name in reports: `kernel` or `scan`.
    pub fn name(self) -> &'static str {
        match self {
            ExitSeen::Kernel => "kernel",
            ExitSeen::Scan => "scan",
        }
    }
}

/// The name of Linux signal `n` (the numbers every Linux architecture the agent runs on
/// shares: x86, arm, aarch64), None for a number without a fixed name (real-time signals).
pub fn signal_name(n: u8) -> Option<&'static str> {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    NAMES.get((n as usize).checked_sub(1)?).copied()
}

/// How a process ended, as far as the agent knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    /// How the agent learnt of the exit.
    pub seen: ExitSeen,
    /// Exit status (0..=255) of a process that called exit; None when a signal ended it or when
    /// the status is unknown.
    pub code: Option<u8>,
    /// Number of the signal that ended it (9 = SIGKILL); None when it exited or is unknown.
    pub signal: Option<u8>,
    /// The signal left a core dump.
    pub core_dumped: bool,
    /// The kernel's OOM killer chose it (kernel log).
    pub oom_killed: bool,
    /// How long before the record's time the kernel reported the exit, ms (the record is
    /// written at the next sample); 0 when seen by a scan.
    pub before_ms: u32,
}

/// A process gone, with how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessEnd {
    /// The process and its life.
    pub exit: ProcessExit,
    /// How it ended.
    pub status: ExitStatus,
}

/// How this agent instance learns of exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitWatch {
    /// `Kernel`: exits come from the process connector; `Scan`: it was refused or is missing,
    /// exits are found by scanning /proc.
    pub source: ExitSeen,
    /// Connector messages the kernel dropped since the agent started (receive buffer overruns):
    /// exits among them are seen by the scan, without status.
    pub dropped: u32,
}

/// A kernel log line (`/dev/kmsg`) the agent passes on: an OOM kill, a segfault or hung task of
/// a tracked process, link loss, a transmit timeout or reset of a known NIC, TCP out of memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelMessage {
    /// Syslog level, 0 (emerg) .. 7 (debug).
    pub level: u8,
    /// The process it names, if any.
    pub pid: Option<u32>,
    /// The NIC it names, if any.
    pub nic: Option<DevName>,
    /// The line, redacted like command lines and cut to CMDLINE_LEN bytes.
    pub text: Cmdline,
    /// Lines of these kinds left out before this one by the agent's rate limit.
    pub suppressed: u32,
}

/// The TCP connections of the top processes at one sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connections {
    /// Per process, busiest first.
    pub procs: Vec<ProcConnections, MAX_CONN_PROCS>,
}

/// One process's TCP connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcConnections {
    /// Process id.
    pub pid: u32,
    /// Its task name.
    pub comm: Comm,
    /// Its active or troubled connections.
    pub conns: Vec<TcpConn, MAX_PROC_CONNS>,
    /// Its TCP sockets left out (past MAX_PROC_CONNS, or idle and untroubled).
    pub more: u16,
}

/// One end of a connection: 4 address bytes (IPv4) or 16 (IPv6), as on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SockAddr {
    /// The address bytes, network order: 4 (IPv4) or 16 (IPv6).
    pub addr: Vec<u8, 16>,
    /// The port.
    pub port: u16,
}

/// One TCP connection of a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpConn {
    /// This end.
    pub local: SockAddr,
    /// The peer's end.
    pub remote: SockAddr,
    /// TCP state (1 ESTABLISHED, 2 SYN_SENT, ... 8 CLOSE_WAIT, ...).
    pub state: u8,
    /// Bytes sent and not yet acknowledged / received and not yet read by the process.
    pub send_queue: u32,
    /// Bytes received and not yet read by the process.
    pub recv_queue: u32,
    /// From sock_diag's tcp_info; None from the /proc/net/tcp fallback.
    pub info: Option<TcpConnInfo>,
    /// Retransmissions of the current segment (tcp_info's, or /proc/net/tcp's `retrnsmt`).
    pub retransmits: u8,
}

/// `struct tcp_info` values (counters are totals over the connection's life, as the kernel
/// keeps them; the collector takes differences).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpConnInfo {
    /// Unanswered zero-window or keep-alive probes (`tcpi_probes`).
    pub probes: u8,
    /// Retransmission timer backoffs (`tcpi_backoff`).
    pub backoff: u8,
    /// Retransmission timeout, µs (`tcpi_rto`).
    pub rto_us: u32,
    /// Smoothed round-trip time, µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub snd_cwnd: u32,
    /// Retransmissions over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Time since data was last sent, ms (`tcpi_last_data_sent`).
    pub last_data_sent_ms: u32,
    /// Time since data was last received, ms (`tcpi_last_data_recv`).
    pub last_data_recv_ms: u32,
    /// 4.2+.
    pub bytes_acked: Option<u64>,
    /// Bytes received (`tcpi_bytes_received`, 4.2+).
    pub bytes_received: Option<u64>,
    /// 4.9+, bytes/s.
    pub delivery_rate: Option<u64>,
    /// 4.10+, µs totals.
    pub busy_time_us: Option<u64>,
    /// Time limited by the receiver's window, µs (`tcpi_rwnd_limited`, 4.10+).
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, µs (`tcpi_sndbuf_limited`, 4.10+).
    pub sndbuf_limited_us: Option<u64>,
}

/// The regular files the transfer's processes have open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFiles {
    /// Per process, the movers first.
    pub procs: Vec<ProcFiles, MAX_FILE_PROCS>,
}

/// One process's open regular files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcFiles {
    /// Process id.
    pub pid: u32,
    /// Its task name.
    pub comm: Comm,
    /// Its open regular files.
    pub files: Vec<OpenFile, MAX_PROC_FILES>,
    /// Its open regular files left out (past MAX_PROC_FILES).
    pub more: u16,
}

/// How a file descriptor was opened (`flags:` of `/proc/PID/fdinfo/N`, O_ACCMODE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileMode {
    /// O_RDONLY.
    Read,
    /// O_WRONLY.
    Write,
    /// O_RDWR.
    ReadWrite,
}

impl FileMode {
    /// The name in reports: `read`, `write` or `read_write`.
    pub fn name(self) -> &'static str {
        match self {
            FileMode::Read => "read",
            FileMode::Write => "write",
            FileMode::ReadWrite => "read_write",
        }
    }
}

/// One open regular file of a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFile {
    /// The file descriptor's number.
    pub fd: u32,
    /// The path (`readlink /proc/PID/fd/N`), redacted like command lines; a path longer than
    /// CMDLINE_LEN keeps its end, after `...`; a deleted file ends in ` (deleted)`.
    pub path: Cmdline,
    /// The descriptor's offset, bytes (`pos:` of fdinfo).
    pub pos: u64,
    /// The file's size now, bytes.
    pub size: u64,
    /// How it was opened.
    pub mode: FileMode,
}
