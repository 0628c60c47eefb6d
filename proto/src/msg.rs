//! The messages of the protocol and the sample/event records they carry.
//!
//! Counters travel as per-interval deltas (small varints); gauges as plain values. Capacities are
//! fixed so that the agent never allocates on its hot path; a value past a capacity is refused by
//! the decoder as malformed rather than truncated.

use crate::shaping_msg::Shaping;
use heapless::{String, Vec};
use serde::{Deserialize, Serialize};

use crate::test_msg::{TestReady, TestRequest, TestResult};

/// Most CPUs a sample describes. 256 covers every NAS and most servers; a bigger machine is
/// refused with a typed error by the agent rather than silently truncated.
pub const MAX_CPUS: usize = 256;
/// Most top processes per sample (the agent default is 8; `--top` may raise it to this).
pub const MAX_TOP_PROCS: usize = 16;
/// Most block devices in the inventory: 8-bay NAS plus md arrays, flash, USB and loop headroom.
pub const MAX_DISKS: usize = 48;
/// Most md arrays in the inventory.
pub const MAX_MD_ARRAYS: usize = 16;
/// Most members of one md array (24-bay boxes exist).
pub const MAX_MD_MEMBERS: usize = 24;
/// Most network interfaces in the inventory (physical, bonds, bridges, VLANs, docker veths).
pub const MAX_NICS: usize = 32;
/// Most slaves of one bond.
pub const MAX_BOND_SLAVES: usize = 8;
/// Most filesystems sampled through `--mount`.
pub const MAX_MOUNTS: usize = 8;
/// Length of a kernel task name (TASK_COMM_LEN 16, less the NUL).
pub const COMM_LEN: usize = 15;
/// Command lines are truncated to this many bytes (the agent default, `--cmdline-bytes` lowers it).
pub const CMDLINE_LEN: usize = 256;
/// Device names: IFNAMSIZ is 16, block names are short, but dm/nvme names can reach ~32.
pub const DEV_NAME_LEN: usize = 32;
/// Host names (HOST_NAME_MAX is 64).
pub const HOST_NAME_LEN: usize = 64;
/// Kernel release strings ("3.10.39", "4.4.302+", "6.1.0-28-amd64").
pub const KERNEL_LEN: usize = 64;
/// Processes whose TCP connections a sample reports (the busiest first).
pub const MAX_CONN_PROCS: usize = 4;
/// TCP connections reported per process.
pub const MAX_PROC_CONNS: usize = 8;
/// Processes whose open regular files an [`OpenFiles`] event reports (the transfer's movers:
/// busiest by disk I/O, then by CPU).
pub const MAX_FILE_PROCS: usize = 4;
/// Open regular files reported per process (read or written; the rest counted in `more`).
pub const MAX_PROC_FILES: usize = 8;
/// Longest file descriptor number the kernel allows (`fs.nr_open` at most 1073741816).
pub const MAX_FD: u32 = 1_073_741_816;
/// Mount paths named with `--mount`.
pub const PATH_LEN: usize = 128;
/// Short texts: architecture, versions, md level, boot id (36).
pub const SHORT_LEN: usize = 40;
/// Reasons in refusals and errors.
pub const REASON_LEN: usize = 128;

pub type Comm = String<COMM_LEN>;
pub type Cmdline = String<CMDLINE_LEN>;
pub type DevName = String<DEV_NAME_LEN>;
pub type Short = String<SHORT_LEN>;

/// Every message of the protocol. Variants are only ever added at the end.
///
/// Variants differ in size on purpose: everything is fixed-capacity so that the agent never
/// allocates (no_std, no alloc), which rules out boxing the large ones.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// Agent → collector, first frame of a connection: a fresh random challenge.
    Challenge(Challenge),
    /// Collector → agent: proof of the token over both nonces.
    Auth(Auth),
    /// Agent → collector: the agent's own proof (mutual authentication), then [`Message::Hello`].
    AuthOk(AuthOk),
    /// Agent → collector: who the agent is and what it sees.
    Hello(Hello),
    /// Collector → agent: "send me everything after sequence N of this instance".
    Resume(Resume),
    /// Agent → collector: this range of sequence numbers is no longer held (ring overwrote it).
    Gone(Gone),
    /// Agent → collector: one sample or event of the history, with its sequence number.
    Record(Record),
    /// Either way, when idle: proof of life.
    KeepAlive(KeepAlive),
    /// Agent → collector, just before closing: why.
    Refused(Refused),
    /// Collector → agent, instead of `Resume`: run a test (only an agent started with
    /// `--allow-tests` does; others answer `Refused` naming the flag).
    TestRequest(TestRequest),
    /// Agent → collector: the test's outcome; the agent closes the connection after it.
    TestResult(TestResult),
    /// Agent → collector, for a test with a second step (`NetReceive`): ready, listening on
    /// this port; the `TestResult` follows.
    TestReady(TestReady),
    /// Collector → agent, instead of `Resume`, to an agent whose `Hello::agent_version` carries
    /// [`RESUME_WITH_MARK`]: the same request, with the record kinds this collector decodes.
    ResumeWith(ResumeWith),
}

impl Message {
    /// The variant's name, for logs and errors ("Challenge", "Record", ...).
    pub fn name(&self) -> &'static str {
        match self {
            Message::Challenge(_) => "Challenge",
            Message::Auth(_) => "Auth",
            Message::AuthOk(_) => "AuthOk",
            Message::Hello(_) => "Hello",
            Message::Resume(_) => "Resume",
            Message::Gone(_) => "Gone",
            Message::Record(_) => "Record",
            Message::KeepAlive(_) => "KeepAlive",
            Message::Refused(_) => "Refused",
            Message::TestRequest(_) => "TestRequest",
            Message::TestResult(_) => "TestResult",
            Message::TestReady(_) => "TestReady",
            Message::ResumeWith(_) => "ResumeWith",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    pub agent_nonce: [u8; 32],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auth {
    pub client_nonce: [u8; 32],
    /// HMAC-SHA256(token, "nasprobe-client-v1" || agent_nonce || client_nonce).
    pub mac: [u8; 32],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthOk {
    /// HMAC-SHA256(token, "nasprobe-agent-v1" || agent_nonce || client_nonce).
    pub mac: [u8; 32],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub reason: String<REASON_LEN>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepAlive {
    /// Sender's wall clock, milliseconds since the Unix epoch.
    pub time_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The agent instance the sequence number belongs to; 0 when the collector has none.
    pub instance_id: u64,
    /// Send records with `seq > after_seq`. Ignored when `instance_id` is not the agent's
    /// current one: then everything held is sent.
    pub after_seq: u64,
}

/// [`Message::ResumeWith`]: a [`Resume`] that says which newer record kinds the collector
/// decodes ([`accepts`] bits). An agent sends a record of a kind the collector did not accept
/// as a one-record `Gone` instead, so the sequence stays contiguous for old collectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeWith {
    /// As in [`Resume`].
    pub instance_id: u64,
    /// As in [`Resume`].
    pub after_seq: u64,
    /// [`accepts`] bits; unknown bits are ignored.
    pub accepts: u32,
}

impl From<&Resume> for ResumeWith {
    /// A plain `Resume`: a collector that accepts none of the newer record kinds.
    fn from(r: &Resume) -> Self {
        ResumeWith {
            instance_id: r.instance_id,
            after_seq: r.after_seq,
            accepts: 0,
        }
    }
}

/// The record kinds added after the first collectors, one bit each, for [`ResumeWith::accepts`].
pub mod accepts {
    /// `Event::Shaping` (issue 29).
    pub const SHAPING: u32 = 1 << 0;
    /// Every kind this build decodes.
    pub const ALL: u32 = SHAPING;
}

/// The build-metadata word an agent puts in `Hello::agent_version` (`0.1.0+resume-with`) when it
/// takes [`Message::ResumeWith`]: older collectors only show the version, older agents do not
/// have the word, so a collector sends `ResumeWith` only to an agent that reads it.
pub const RESUME_WITH_MARK: &str = "resume-with";

/// Whether an agent announcing `agent_version` takes [`Message::ResumeWith`] (its semver build
/// metadata, after `+`, has the dot-separated word [`RESUME_WITH_MARK`]).
pub fn takes_resume_with(agent_version: &str) -> bool {
    agent_version
        .split_once('+')
        .is_some_and(|(_, meta)| meta.split('.').any(|w| w == RESUME_WITH_MARK))
}

/// Records `from_seq..=to_seq` of `instance_id` are gone for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gone {
    pub instance_id: u64,
    pub from_seq: u64,
    pub to_seq: u64,
}

/// Who the agent is. Sent after authentication on every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u8,
    pub agent_version: Short,
    /// Random at every agent start: sequence numbers are contiguous within one instance.
    pub instance_id: u64,
    /// Wall clock at the agent's start, ms since the Unix epoch.
    pub started_ms: u64,
    /// Wall clock now on the agent, ms since the Unix epoch (clock skew check).
    pub now_ms: u64,
    pub host_name: String<HOST_NAME_LEN>,
    pub kernel_release: String<KERNEL_LEN>,
    pub arch: Short,
    pub cpu_count: u16,
    /// USER_HZ: the unit of every CPU tick count (100 on every Linux seen).
    pub clock_ticks_per_sec: u32,
    pub page_size: u32,
    /// /proc/sys/kernel/random/boot_id, empty when unreadable.
    pub boot_id: Short,
    pub interval_ms: u32,
    /// Oldest and newest sequence numbers the ring holds now (0, 0 when empty).
    pub oldest_seq: u64,
    pub newest_seq: u64,
    /// Inventory. Indices into these lists are stable for the whole instance: a new device gets
    /// a new index at the end, a gone one keeps its slot.
    pub disks: Vec<DiskInfo, MAX_DISKS>,
    pub md_arrays: Vec<MdInfo, MAX_MD_ARRAYS>,
    pub nics: Vec<NicInfo, MAX_NICS>,
    pub mounts: Vec<String<PATH_LEN>, MAX_MOUNTS>,
}

impl Default for Hello {
    /// A Hello with nothing in it, for the sampler to fill (or the collector before the first
    /// one arrives): the current protocol version, USER_HZ 100, 4 KiB pages, empty inventory.
    fn default() -> Self {
        Hello {
            protocol_version: crate::PROTOCOL_VERSION,
            agent_version: String::new(),
            instance_id: 0,
            started_ms: 0,
            now_ms: 0,
            host_name: String::new(),
            kernel_release: String::new(),
            arch: String::new(),
            cpu_count: 0,
            clock_ticks_per_sec: 100,
            page_size: 4096,
            boot_id: String::new(),
            interval_ms: 0,
            oldest_seq: 0,
            newest_seq: 0,
            disks: Vec::new(),
            md_arrays: Vec::new(),
            nics: Vec::new(),
            mounts: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskInfo {
    pub name: DevName,
    /// /sys/block/X/queue/rotational; None when unreadable.
    pub rotational: Option<bool>,
    /// Sectors of 512 bytes.
    pub size_sectors: u64,
    /// True for md arrays (their members carry the truth about busy time).
    pub is_md: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdInfo {
    pub name: DevName,
    /// "raid1", "raid5", ... empty when unknown.
    pub level: Short,
    /// Member disks (partitions folded to their disk: "sda3" → "sda").
    pub members: Vec<DevName, MAX_MD_MEMBERS>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicInfo {
    pub name: DevName,
    pub mtu: u32,
    pub is_bond: bool,
    pub slaves: Vec<DevName, MAX_BOND_SLAVES>,
    /// Speed given by `--link-speed IF=MBIT`, which overrides the kernel's.
    pub speed_override_mbit: Option<u32>,
    /// Hardware address, for matching across restarts; empty when unknown.
    pub mac: Short,
}

/// One entry of the agent's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    /// Agent wall clock, ms since the Unix epoch.
    pub time_ms: u64,
    pub body: RecordBody,
}

#[allow(clippy::large_enum_variant)] // fixed-capacity by design, see `Message`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordBody {
    Sample(Sample),
    Event(Event),
}

/// Bit flags shared by per-device entries.
pub mod flags {
    /// Counters of this entry went backwards (reset, not a 32-bit wrap): its deltas are unknown
    /// for this interval and must not be used.
    pub const RESET: u8 = 1;
    /// NIC: operstate up with carrier.
    pub const LINK_UP: u8 = 2;
    /// NIC: full duplex (else half or unknown).
    pub const FULL_DUPLEX: u8 = 4;
    /// NIC: duplex unknown.
    pub const DUPLEX_UNKNOWN: u8 = 8;
}

/// One sampling interval. Counters are deltas over `interval_us`. `Default` is the empty
/// sample the agent fills in place.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// CLOCK_MONOTONIC time since the previous sample (a late wake-up shows here, not in rates).
    pub interval_us: u32,
    /// All CPUs together, then one entry per CPU (index = CPU number).
    pub cpu_total: CpuTicks,
    pub cpus: Vec<CpuTicks, MAX_CPUS>,
    pub procs_running: u16,
    pub procs_blocked: u16,
    pub forks: u32,
    pub context_switches: u64,
    /// Processes that started and ended between scans without being listed.
    pub short_lived: u32,
    /// Top processes by CPU in the interval, busiest first; only those that used CPU.
    pub top: Vec<ProcSample, MAX_TOP_PROCS>,
    /// Block devices with activity in the interval (idle ones are left out: zero deltas).
    pub disks: Vec<DiskSample, MAX_DISKS>,
    pub nics: Vec<NicSample, MAX_NICS>,
    pub memory: Option<Memory>,
    pub vm: Option<VmActivity>,
    pub tcp: Option<TcpActivity>,
    pub mounts: Vec<MountSample, MAX_MOUNTS>,
    pub agent: AgentSelf,
}

/// CPU time deltas in clock ticks (USER_HZ). `flags::RESET` set when unknown this interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    pub flags: u8,
    pub user: u32,
    pub nice: u32,
    pub system: u32,
    pub idle: u32,
    pub iowait: u32,
    pub irq: u32,
    pub softirq: u32,
    pub steal: u32,
}

impl CpuTicks {
    /// All ticks of the entry (every mode), widened so that saturated fields cannot overflow.
    pub fn total(&self) -> u64 {
        u64::from(self.user)
            + u64::from(self.nice)
            + u64::from(self.system)
            + u64::from(self.idle)
            + u64::from(self.iowait)
            + u64::from(self.irq)
            + u64::from(self.softirq)
            + u64::from(self.steal)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcSample {
    pub pid: u32,
    pub comm: Comm,
    /// State letter from /proc/PID/stat ('R', 'S', 'D', ...).
    pub state: u8,
    pub threads: u16,
    /// user + system ticks in the interval.
    pub utime: u32,
    pub stime: u32,
    /// Time spent waiting for a CPU in the interval, µs (schedstat run_delay); None when absent.
    pub run_delay_us: Option<u32>,
    /// For the busiest processes: their busiest thread.
    pub hottest_thread: Option<ThreadSample>,
    /// Only the first time this process is reported on this instance.
    pub cmdline: Option<Cmdline>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSample {
    pub tid: u32,
    /// None when the thread's name equals the process's.
    pub comm: Option<Comm>,
    /// user + system ticks in the interval.
    pub ticks: u32,
}

/// /proc/diskstats deltas (iostat -x inputs) for one disk. Partitions are folded in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSample {
    /// Index into `Hello::disks`.
    pub disk: u16,
    pub flags: u8,
    pub reads: u32,
    pub reads_merged: u32,
    pub sectors_read: u64,
    pub read_ms: u32,
    pub writes: u32,
    pub writes_merged: u32,
    pub sectors_written: u64,
    pub write_ms: u32,
    /// Gauge: requests in flight at the end of the interval.
    pub in_flight: u32,
    /// Busy time in ms over the interval (util = io_ms / interval).
    pub io_ms: u32,
    /// Weighted busy time in ms (avg queue size = weighted_ms / interval).
    pub weighted_ms: u32,
}

/// /proc/net/dev deltas and sysfs link state for one interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicSample {
    /// Index into `Hello::nics`.
    pub nic: u16,
    /// `flags::RESET`, `LINK_UP`, `FULL_DUPLEX`, `DUPLEX_UNKNOWN`.
    pub flags: u8,
    /// Link speed in Mbit/s (override first, then sysfs); 0 when unknown or link down.
    pub speed_mbit: u32,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u32,
    pub tx_packets: u32,
    pub rx_errors: u32,
    pub tx_errors: u32,
    pub rx_dropped: u32,
    pub tx_dropped: u32,
}

/// /proc/meminfo gauges in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub total_kib: u64,
    pub free_kib: u64,
    pub available_kib: u64,
    /// True when the kernel lacks MemAvailable (3.10) and the agent estimated it.
    pub available_estimated: bool,
    pub buffers_kib: u64,
    pub cached_kib: u64,
    pub dirty_kib: u64,
    pub writeback_kib: u64,
    pub swap_total_kib: u64,
    pub swap_free_kib: u64,
}

/// /proc/vmstat deltas; a field the kernel lacks is None.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmActivity {
    pub swap_in_pages: u32,
    pub swap_out_pages: u32,
    pub major_faults: u32,
    /// allocstall (sum of allocstall_* on newer kernels).
    pub alloc_stalls: Option<u32>,
    /// pgscan_direct (sum of its zone variants on older kernels).
    pub direct_scanned: Option<u32>,
}

/// /proc/net/snmp and /proc/net/netstat deltas that explain a dying connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpActivity {
    pub retrans_segs: u32,
    pub out_rsts: u32,
    pub in_errs: u32,
    pub estab_resets: u32,
    pub attempt_fails: u32,
    pub timeouts: Option<u32>,
    pub keepalive_aborts: Option<u32>,
    pub timeout_aborts: Option<u32>,
    pub listen_drops: Option<u32>,
}

/// statvfs of a `--mount` path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountSample {
    /// Index into `Hello::mounts`.
    pub mount: u16,
    pub used_bytes: u64,
    pub free_bytes: u64,
}

/// The agent's own cost, so it is visible.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSelf {
    /// user + system CPU time of the agent in the interval, µs.
    pub cpu_us: u32,
    pub rss_kib: u32,
    /// Clients connected now.
    pub clients: u8,
}

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
    /// sent at start when one is shaped and whenever they change (an empty list: none now).
    Shaping(Shaping),
}

impl Event {
    /// [`Event::kind`] of [`Event::Connections`].
    pub const KIND_CONNECTIONS: &'static str = "tcp_connections";
    /// [`Event::kind`] of [`Event::OpenFiles`].
    pub const KIND_OPEN_FILES: &'static str = "open_files";
    /// The stored `kind` of [`Event::Shaping`].
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: u32,
    pub comm: Comm,
    pub cmdline: Cmdline,
    /// Start time in ticks since boot (/proc/PID/stat field 22): with pid, the identity.
    pub start_ticks: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessExit {
    pub process: ProcessInfo,
    /// How long it lived, ms (as far as the agent saw: from its start time to the scan that
    /// found it gone).
    pub lifetime_ms: u64,
    /// user + system ticks used over its whole life (as last seen).
    pub cpu_ticks: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkChange {
    pub nic: DevName,
    pub up: bool,
    pub speed_mbit: u32,
    pub full_duplex: Option<bool>,
    pub mtu: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStart {
    pub agent_version: Short,
    pub instance_id: u64,
    pub interval_ms: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeviceAdded {
    Disk(DevName),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessEnd {
    pub exit: ProcessExit,
    pub status: ExitStatus,
}

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connections {
    pub procs: Vec<ProcConnections, MAX_CONN_PROCS>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcConnections {
    pub pid: u32,
    pub comm: Comm,
    pub conns: Vec<TcpConn, MAX_PROC_CONNS>,
    /// Its TCP sockets left out (past MAX_PROC_CONNS, or idle and untroubled).
    pub more: u16,
}

/// One end of a connection: 4 address bytes (IPv4) or 16 (IPv6), as on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SockAddr {
    pub addr: Vec<u8, 16>,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpConn {
    pub local: SockAddr,
    pub remote: SockAddr,
    /// TCP state (1 ESTABLISHED, 2 SYN_SENT, ... 8 CLOSE_WAIT, ...).
    pub state: u8,
    /// Bytes sent and not yet acknowledged / received and not yet read by the process.
    pub send_queue: u32,
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
    pub probes: u8,
    pub backoff: u8,
    pub rto_us: u32,
    pub rtt_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub last_data_sent_ms: u32,
    pub last_data_recv_ms: u32,
    /// 4.2+.
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    /// 4.9+, bytes/s.
    pub delivery_rate: Option<u64>,
    /// 4.10+, µs totals.
    pub busy_time_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFiles {
    pub procs: Vec<ProcFiles, MAX_FILE_PROCS>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcFiles {
    pub pid: u32,
    pub comm: Comm,
    pub files: Vec<OpenFile, MAX_PROC_FILES>,
    /// Its open regular files left out (past MAX_PROC_FILES).
    pub more: u16,
}

/// How a file descriptor was opened (`flags:` of `/proc/PID/fdinfo/N`, O_ACCMODE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileMode {
    Read,
    Write,
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
    pub fd: u32,
    /// The path (`readlink /proc/PID/fd/N`), redacted like command lines; a path longer than
    /// CMDLINE_LEN keeps its end, after `...`; a deleted file ends in ` (deleted)`.
    pub path: Cmdline,
    /// The descriptor's offset, bytes (`pos:` of fdinfo).
    pub pos: u64,
    /// The file's size now, bytes.
    pub size: u64,
    pub mode: FileMode,
}
