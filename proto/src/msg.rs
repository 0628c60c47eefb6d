//! The messages of the protocol and the samples they carry (the events are in
//! [`crate::events`], the capacities of lists and strings in [`crate::limits`]).
//!
//! Counters travel as per-interval deltas (small varints); gauges as plain values. Capacities are
//! fixed so that the agent never allocates on its hot path; a value past a capacity is refused by
//! the decoder as malformed rather than truncated.

use heapless::{String, Vec};
use serde::{Deserialize, Serialize};

pub use crate::events::*;
pub use crate::limits::*;
use crate::test_msg::{TestReady, TestRequest, TestResult};

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

/// The agent's challenge, first frame of every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    /// 32 random bytes, fresh for this connection.
    pub agent_nonce: [u8; 32],
}

/// The collector's proof of the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auth {
    /// 32 random bytes of the collector's.
    pub client_nonce: [u8; 32],
    /// HMAC-SHA256(token, "nasprobe-client-v1" || agent_nonce || client_nonce).
    pub mac: [u8; 32],
}

/// The agent's proof of the token (the collector authenticates the agent too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthOk {
    /// HMAC-SHA256(token, "nasprobe-agent-v1" || agent_nonce || client_nonce).
    pub mac: [u8; 32],
}

/// Why the agent closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    /// The reason, for the user (e.g. a wrong token or an old protocol).
    pub reason: String<REASON_LEN>,
}

/// Proof of life on an idle connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepAlive {
    /// Sender's wall clock, milliseconds since the Unix epoch.
    pub time_ms: u64,
}

/// Where the collector's history of this agent ends.
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
    /// The agent instance the range belongs to.
    pub instance_id: u64,
    /// First sequence number gone.
    pub from_seq: u64,
    /// Last sequence number gone (inclusive).
    pub to_seq: u64,
}

/// Who the agent is. Sent after authentication on every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol the agent speaks ([`crate::PROTOCOL_VERSION`]).
    pub protocol_version: u8,
    /// The agent's version (its Cargo version, e.g. "0.1.0").
    pub agent_version: Short,
    /// Random at every agent start: sequence numbers are contiguous within one instance.
    pub instance_id: u64,
    /// Wall clock at the agent's start, ms since the Unix epoch.
    pub started_ms: u64,
    /// Wall clock now on the agent, ms since the Unix epoch (clock skew check).
    pub now_ms: u64,
    /// The host's name (or `--name`), sanitized.
    pub host_name: String<HOST_NAME_LEN>,
    /// `uname -r` of the NAS.
    pub kernel_release: String<KERNEL_LEN>,
    /// The CPU architecture (`uname -m`, e.g. "x86_64", "armv7l").
    pub arch: Short,
    /// CPUs of the host (the highest CPU number of /proc/stat plus one).
    pub cpu_count: u16,
    /// USER_HZ: the unit of every CPU tick count (100 on every Linux seen).
    pub clock_ticks_per_sec: u32,
    /// Memory page size, bytes (the unit of page counts).
    pub page_size: u32,
    /// /proc/sys/kernel/random/boot_id, empty when unreadable.
    pub boot_id: Short,
    /// Sampling interval, ms (`--interval`).
    pub interval_ms: u32,
    /// Oldest and newest sequence numbers the ring holds now (0, 0 when empty).
    pub oldest_seq: u64,
    /// Newest sequence number the ring holds now (0 when empty).
    pub newest_seq: u64,
    /// Inventory. Indices into these lists are stable for the whole instance: a new device gets
    /// a new index at the end, a gone one keeps its slot.
    pub disks: Vec<DiskInfo, MAX_DISKS>,
    /// The md (software RAID) arrays and their members.
    pub md_arrays: Vec<MdInfo, MAX_MD_ARRAYS>,
    /// The network interfaces (indices stable as for `disks`).
    pub nics: Vec<NicInfo, MAX_NICS>,
    /// The `--mount` paths whose space each sample reports, in the flag's order.
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

/// A block device of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskInfo {
    /// Its kernel name ("sda", "md0", "nvme0n1").
    pub name: DevName,
    /// /sys/block/X/queue/rotational; None when unreadable.
    pub rotational: Option<bool>,
    /// Sectors of 512 bytes.
    pub size_sectors: u64,
    /// True for md arrays (their members carry the truth about busy time).
    pub is_md: bool,
}

/// An md array of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdInfo {
    /// Its kernel name ("md0").
    pub name: DevName,
    /// "raid1", "raid5", ... empty when unknown.
    pub level: Short,
    /// Member disks (partitions folded to their disk: "sda3" → "sda").
    pub members: Vec<DevName, MAX_MD_MEMBERS>,
}

/// A network interface of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicInfo {
    /// Its kernel name ("eth0", "bond0").
    pub name: DevName,
    /// MTU at the agent's start, bytes.
    pub mtu: u32,
    /// A bonding master (its slaves are listed).
    pub is_bond: bool,
    /// The bond's slave interfaces; empty for other interfaces.
    pub slaves: Vec<DevName, MAX_BOND_SLAVES>,
    /// Speed given by `--link-speed IF=MBIT`, which overrides the kernel's.
    pub speed_override_mbit: Option<u32>,
    /// Hardware address, for matching across restarts; empty when unknown.
    pub mac: Short,
}

/// One entry of the agent's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Sequence number, contiguous within one agent instance.
    pub seq: u64,
    /// Agent wall clock, ms since the Unix epoch.
    pub time_ms: u64,
    /// A sample or an event.
    pub body: RecordBody,
}

/// What a record holds.
#[allow(clippy::large_enum_variant)] // fixed-capacity by design, see `Message`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordBody {
    /// One sampling interval.
    Sample(Sample),
    /// Something that happened between samples.
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
    /// One entry per CPU (index = CPU number).
    pub cpus: Vec<CpuTicks, MAX_CPUS>,
    /// Gauge: runnable tasks at the end of the interval (`procs_running` of /proc/stat).
    pub procs_running: u16,
    /// Gauge: tasks blocked on I/O at the end of the interval (`procs_blocked`).
    pub procs_blocked: u16,
    /// Processes created in the interval (`processes` of /proc/stat).
    pub forks: u32,
    /// Context switches in the interval (`ctxt` of /proc/stat).
    pub context_switches: u64,
    /// Processes that started and ended between scans without being listed.
    pub short_lived: u32,
    /// Top processes by CPU in the interval, busiest first; only those that used CPU.
    pub top: Vec<ProcSample, MAX_TOP_PROCS>,
    /// Block devices with activity in the interval (idle ones are left out: zero deltas).
    pub disks: Vec<DiskSample, MAX_DISKS>,
    /// Network interfaces, one entry each (/proc/net/dev and sysfs).
    pub nics: Vec<NicSample, MAX_NICS>,
    /// Memory gauges (/proc/meminfo); None when unreadable.
    pub memory: Option<Memory>,
    /// Swap, faults and reclaim (/proc/vmstat); None when unreadable.
    pub vm: Option<VmActivity>,
    /// TCP troubles (/proc/net/snmp, netstat); None when unreadable.
    pub tcp: Option<TcpActivity>,
    /// Space of the `--mount` paths.
    pub mounts: Vec<MountSample, MAX_MOUNTS>,
    /// The agent's own cost.
    pub agent: AgentSelf,
}

/// CPU time deltas in clock ticks (USER_HZ). `flags::RESET` set when unknown this interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    /// `flags::RESET` when the counters went backwards.
    pub flags: u8,
    /// Ticks in user mode.
    pub user: u32,
    /// Ticks in user mode at low priority (nice).
    pub nice: u32,
    /// Ticks in kernel mode.
    pub system: u32,
    /// Ticks idle.
    pub idle: u32,
    /// Ticks idle with I/O outstanding.
    pub iowait: u32,
    /// Ticks serving hardware interrupts.
    pub irq: u32,
    /// Ticks serving soft interrupts.
    pub softirq: u32,
    /// Ticks taken by the hypervisor for other guests.
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

/// One of the top processes of a sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcSample {
    /// Process id.
    pub pid: u32,
    /// Its task name.
    pub comm: Comm,
    /// State letter from /proc/PID/stat ('R', 'S', 'D', ...).
    pub state: u8,
    /// Gauge: its threads.
    pub threads: u16,
    /// User-mode ticks in the interval.
    pub utime: u32,
    /// Kernel-mode ticks in the interval.
    pub stime: u32,
    /// Time spent waiting for a CPU in the interval, µs (schedstat run_delay); None when absent.
    pub run_delay_us: Option<u32>,
    /// For the busiest processes: their busiest thread.
    pub hottest_thread: Option<ThreadSample>,
    /// Only the first time this process is reported on this instance.
    pub cmdline: Option<Cmdline>,
}

/// The busiest thread of a top process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSample {
    /// Thread id.
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
    /// `flags::RESET` when the counters went backwards.
    pub flags: u8,
    /// Reads completed.
    pub reads: u32,
    /// Reads merged with adjacent ones.
    pub reads_merged: u32,
    /// Sectors read (512 bytes each).
    pub sectors_read: u64,
    /// Time spent reading, ms (all requests summed).
    pub read_ms: u32,
    /// Writes completed.
    pub writes: u32,
    /// Writes merged with adjacent ones.
    pub writes_merged: u32,
    /// Sectors written (512 bytes each).
    pub sectors_written: u64,
    /// Time spent writing, ms (all requests summed).
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
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets received.
    pub rx_packets: u32,
    /// Packets sent.
    pub tx_packets: u32,
    /// Receive errors.
    pub rx_errors: u32,
    /// Transmit errors.
    pub tx_errors: u32,
    /// Received packets dropped.
    pub rx_dropped: u32,
    /// Packets dropped on sending.
    pub tx_dropped: u32,
}

/// /proc/meminfo gauges in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// MemTotal, KiB.
    pub total_kib: u64,
    /// MemFree, KiB.
    pub free_kib: u64,
    /// MemAvailable (or the agent's estimate), KiB.
    pub available_kib: u64,
    /// True when the kernel lacks MemAvailable (3.10) and the agent estimated it.
    pub available_estimated: bool,
    /// Buffers, KiB.
    pub buffers_kib: u64,
    /// Cached (page cache), KiB.
    pub cached_kib: u64,
    /// Dirty: written, not yet on disk, KiB.
    pub dirty_kib: u64,
    /// Writeback: being written to disk now, KiB.
    pub writeback_kib: u64,
    /// SwapTotal, KiB.
    pub swap_total_kib: u64,
    /// SwapFree, KiB.
    pub swap_free_kib: u64,
}

/// /proc/vmstat deltas; a field the kernel lacks is None.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmActivity {
    /// Pages swapped in (`pswpin`).
    pub swap_in_pages: u32,
    /// Pages swapped out (`pswpout`).
    pub swap_out_pages: u32,
    /// Major page faults, served from disk (`pgmajfault`).
    pub major_faults: u32,
    /// allocstall (sum of allocstall_* on newer kernels).
    pub alloc_stalls: Option<u32>,
    /// pgscan_direct (sum of its zone variants on older kernels).
    pub direct_scanned: Option<u32>,
}

/// /proc/net/snmp and /proc/net/netstat deltas that explain a dying connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpActivity {
    /// Segments retransmitted (`RetransSegs`).
    pub retrans_segs: u32,
    /// Resets sent (`OutRsts`).
    pub out_rsts: u32,
    /// Segments received in error (`InErrs`).
    pub in_errs: u32,
    /// Established connections reset (`EstabResets`).
    pub estab_resets: u32,
    /// Connection attempts failed (`AttemptFails`).
    pub attempt_fails: u32,
    /// Retransmission timeouts (`TCPTimeouts`); None when the kernel lacks it.
    pub timeouts: Option<u32>,
    /// Connections aborted by keep-alive; None (Linux has no separate counter: they are in
    /// `timeout_aborts`).
    pub keepalive_aborts: Option<u32>,
    /// Connections killed when the retransmission or keep-alive timer gave up
    /// (`TCPAbortOnTimeout`); None when the kernel lacks it.
    pub timeout_aborts: Option<u32>,
    /// SYNs dropped at a listening socket (`ListenDrops`); None when the kernel lacks it.
    pub listen_drops: Option<u32>,
}

/// statvfs of a `--mount` path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountSample {
    /// Index into `Hello::mounts`.
    pub mount: u16,
    /// Bytes used.
    pub used_bytes: u64,
    /// Bytes free for unprivileged users (`f_bavail`).
    pub free_bytes: u64,
}

/// The agent's own cost, so it is visible.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSelf {
    /// user + system CPU time of the agent in the interval, µs.
    pub cpu_us: u32,
    /// The agent's resident memory, KiB.
    pub rss_kib: u32,
    /// Clients connected now.
    pub clients: u8,
}
