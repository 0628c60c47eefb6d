//! The declared scenario: hosts and what they do, as plain structs with builders, loadable from
//! JSON (serde). Every rate is "per second"; MB is 10^6 bytes; CPU percentages are "% of one core".
//! Unknown JSON keys are refused so a typo in a shell test's scenario file fails loudly.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Kernel flavour of a host: decides file formats and counter widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Kernel {
    /// Linux 3.10 on armv7 (WD MyCloud style): no MemAvailable, 14-field diskstats,
    /// 32-bit net/dev and diskstats counters, no /proc/PID/schedstat by default.
    #[serde(rename = "k3_10")]
    K3_10,
    /// Linux 4.4 on x86_64 (Synology DSM 6/7 style): 14-field diskstats, MemAvailable.
    #[serde(rename = "k4_4")]
    K4_4,
    /// A modern x86_64 kernel (6.8): 20-field diskstats, node-level vmstat reclaim counters.
    #[default]
    #[serde(rename = "k6")]
    K6,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::K3_10 => "k3_10",
            Kernel::K4_4 => "k4_4",
            Kernel::K6 => "k6",
        }
    }
    pub fn release(self) -> &'static str {
        match self {
            Kernel::K3_10 => "3.10.39",
            Kernel::K4_4 => "4.4.302+",
            Kernel::K6 => "6.8.0-49-generic",
        }
    }
    pub fn arch(self) -> &'static str {
        match self {
            Kernel::K3_10 => "armv7l",
            _ => "x86_64",
        }
    }
    /// `unsigned long` is 32 bits wide: net/dev, sysfs net statistics, diskstats ios/sectors
    /// and vmstat wrap at 2^32.
    pub(crate) fn counters_32bit(self) -> bool {
        self == Kernel::K3_10
    }
    /// Whitespace-separated fields per /proc/diskstats line, major, minor and name included.
    pub fn diskstats_fields(self) -> usize {
        match self {
            Kernel::K6 => 20,
            _ => 14,
        }
    }
    /// Fields in /sys/block/X/stat.
    pub fn sysfs_block_stat_fields(self) -> usize {
        self.diskstats_fields() - 3
    }
    pub(crate) fn has_mem_available(self) -> bool {
        self != Kernel::K3_10
    }
    pub fn parse(s: &str) -> Option<Kernel> {
        match s {
            "k3_10" | "3.10" => Some(Kernel::K3_10),
            "k4_4" | "4.4" => Some(Kernel::K4_4),
            "k6" | "6" => Some(Kernel::K6),
            _ => None,
        }
    }
}

/// A scenario: one or more hosts. `seed` drives thread migration and MAC addresses.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub hosts: Vec<Host>,
}

impl Scenario {
    pub fn new(name: &str) -> Scenario {
        Scenario {
            name: name.into(),
            ..Default::default()
        }
    }
    pub fn description(mut self, d: &str) -> Self {
        self.description = d.into();
        self
    }
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    pub fn host(mut self, h: Host) -> Self {
        self.hosts.push(h);
        self
    }
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| format!("scenario JSON: {e}"))?;
        s.validate()?;
        Ok(s)
    }
    pub fn load(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Scenario::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("scenario serialises")
    }
    pub fn host_named(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }
    /// Checks references and uniqueness; called by the loaders and the runner.
    pub fn validate(&self) -> Result<(), String> {
        if self.hosts.is_empty() {
            return Err("scenario has no hosts".into());
        }
        let mut names = std::collections::HashSet::new();
        for h in &self.hosts {
            if h.name.is_empty() || h.name.contains('/') || h.name.starts_with('.') {
                return Err(format!("bad host name {:?}", h.name));
            }
            if !names.insert(&h.name) {
                return Err(format!("duplicate host name {:?}", h.name));
            }
            h.validate().map_err(|e| format!("host {}: {e}", h.name))?;
        }
        Ok(())
    }
}

/// One host: kernel flavour, hardware, and the activity it shows.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Host {
    pub name: String,
    pub kernel: Kernel,
    pub cores: u32,
    /// `model name` in /proc/cpuinfo.
    pub cpu_model: Option<String>,
    pub memory: Memory,
    /// CPU time not attributed to declared threads.
    pub cpu: CpuBackground,
    pub disks: Vec<Disk>,
    pub md: Vec<MdArray>,
    pub nics: Vec<Nic>,
    /// Add `lo` (tiny traffic) unless a NIC named `lo` is declared.
    pub loopback: bool,
    pub swap: Swap,
    pub tcp: Tcp,
    pub processes: Vec<Process>,
    pub churn: Option<Churn>,
    /// Threads are re-placed on cores every this many seconds (they migrate).
    pub migrate_every_s: f64,
    /// Uptime at scenario t=0 (seconds). Counters start at "rate x uptime/5".
    pub uptime_s: f64,
    /// On 32-bit flavours: choose the start value of every byte/sector counter so that it wraps
    /// 2^32 exactly this many seconds after t=0 (ignored on 64-bit flavours).
    pub wrap_at_s: Option<f64>,
    pub pid_max: u32,
    /// First pid handed to processes born during the run (restarts, churn). Default: after the
    /// highest declared pid.
    pub first_dynamic_pid: Option<u32>,
    /// Write /proc/PID/schedstat and task/TID/schedstat. Default: all but k3_10.
    pub schedstat: Option<bool>,
    /// Truncate /proc/PID/stat to this many fields (52 on every flavour here, as on any kernel
    /// since 3.5; 44 mimics a pre-3.3 kernel).
    pub pid_stat_fields: Option<usize>,
    /// `procs_blocked` in /proc/stat (tasks in D state).
    pub procs_blocked: u32,
    pub boot_id: Option<String>,
}

impl Default for Host {
    fn default() -> Self {
        Host {
            name: "host".into(),
            kernel: Kernel::K6,
            cores: 4,
            cpu_model: None,
            memory: Memory::default(),
            cpu: CpuBackground::default(),
            disks: Vec::new(),
            md: Vec::new(),
            nics: Vec::new(),
            loopback: true,
            swap: Swap::default(),
            tcp: Tcp::default(),
            processes: Vec::new(),
            churn: None,
            migrate_every_s: 2.0,
            uptime_s: 3.0 * 86400.0 + 4321.0,
            wrap_at_s: None,
            pid_max: 32768,
            first_dynamic_pid: None,
            schedstat: None,
            pid_stat_fields: None,
            procs_blocked: 0,
            boot_id: None,
        }
    }
}

impl Host {
    pub fn new(name: &str, kernel: Kernel) -> Host {
        Host {
            name: name.into(),
            kernel,
            ..Default::default()
        }
    }
    pub fn cores(mut self, n: u32) -> Self {
        self.cores = n;
        self
    }
    pub(crate) fn cpu_model(mut self, m: &str) -> Self {
        self.cpu_model = Some(m.into());
        self
    }
    pub fn memory(mut self, m: Memory) -> Self {
        self.memory = m;
        self
    }
    pub fn cpu(mut self, c: CpuBackground) -> Self {
        self.cpu = c;
        self
    }
    pub fn disk(mut self, d: Disk) -> Self {
        self.disks.push(d);
        self
    }
    pub fn md(mut self, m: MdArray) -> Self {
        self.md.push(m);
        self
    }
    pub fn nic(mut self, n: Nic) -> Self {
        self.nics.push(n);
        self
    }
    pub fn swap(mut self, s: Swap) -> Self {
        self.swap = s;
        self
    }
    pub fn tcp(mut self, t: Tcp) -> Self {
        self.tcp = t;
        self
    }
    pub fn process(mut self, p: Process) -> Self {
        self.processes.push(p);
        self
    }
    pub fn churn(mut self, c: Churn) -> Self {
        self.churn = Some(c);
        self
    }
    pub fn wrap_at_s(mut self, s: f64) -> Self {
        self.wrap_at_s = Some(s);
        self
    }
    pub fn uptime_s(mut self, s: f64) -> Self {
        self.uptime_s = s;
        self
    }
    pub fn migrate_every_s(mut self, s: f64) -> Self {
        self.migrate_every_s = s;
        self
    }
    pub fn procs_blocked(mut self, n: u32) -> Self {
        self.procs_blocked = n;
        self
    }
    pub fn schedstat(mut self, on: bool) -> Self {
        self.schedstat = Some(on);
        self
    }
    pub fn pid_stat_fields(mut self, n: usize) -> Self {
        self.pid_stat_fields = Some(n);
        self
    }

    pub(crate) fn has_schedstat(&self) -> bool {
        self.schedstat.unwrap_or(self.kernel != Kernel::K3_10)
    }
    pub fn disk_named(&self, name: &str) -> Option<&Disk> {
        self.disks.iter().find(|d| d.name == name)
    }
    pub(crate) fn nic_named(&self, name: &str) -> Option<&Nic> {
        self.nics.iter().find(|n| n.name == name)
    }

    fn validate(&self) -> Result<(), String> {
        if self.cores == 0 || self.cores > 4096 {
            return Err(format!("cores must be 1..=4096, got {}", self.cores));
        }
        if self.migrate_every_s <= 0.0 {
            return Err("migrate_every_s must be > 0".into());
        }
        if self.pid_max < 1000 {
            return Err("pid_max must be >= 1000".into());
        }
        let mut ids = std::collections::HashSet::new();
        for p in &self.processes {
            if p.pid < 1 || p.pid >= self.pid_max {
                return Err(format!("pid {} out of range", p.pid));
            }
            if !ids.insert(p.pid) {
                return Err(format!("pid {} declared twice", p.pid));
            }
            if p.comm.is_empty() {
                return Err(format!("pid {}: empty comm", p.pid));
            }
            for t in &p.threads {
                if let Some(tid) = t.tid
                    && tid != p.pid
                    && !ids.insert(tid)
                {
                    return Err(format!("tid {tid} used twice"));
                }
                if !(0.0..=100.0).contains(&t.cpu_pct) {
                    return Err(format!(
                        "pid {}: thread cpu_pct {} not in 0..=100",
                        p.pid, t.cpu_pct
                    ));
                }
            }
            if let Some(r) = &p.restart
                && r.every_s <= 0.0
            {
                return Err(format!("pid {}: restart.every_s must be > 0", p.pid));
            }
        }
        for d in &self.disks {
            if d.name.is_empty() || d.name.contains('/') {
                return Err(format!("bad disk name {:?}", d.name));
            }
        }
        for m in &self.md {
            for member in &m.members {
                if split_partition(self, member).is_none() {
                    return Err(format!(
                        "md {}: member {member} is neither a declared disk nor one of its partitions",
                        m.name
                    ));
                }
            }
        }
        for n in &self.nics {
            for s in &n.slaves {
                if self.nic_named(s).is_none() {
                    return Err(format!("bond {}: slave {s} not declared", n.name));
                }
            }
        }
        if let Some(c) = &self.churn
            && (c.per_s < 0.0 || c.lifetime_s <= 0.0)
        {
            return Err("churn: per_s must be >= 0 and lifetime_s > 0".into());
        }
        Ok(())
    }
}

/// Memory, in MiB. Static over the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Memory {
    pub total_mib: f64,
    pub free_mib: f64,
    pub buffers_mib: f64,
    pub cached_mib: f64,
    /// MemAvailable; default free + buffers + 80% of cached. Never written on k3_10.
    pub available_mib: Option<f64>,
    pub swap_total_mib: f64,
    pub swap_free_mib: f64,
    pub dirty_mib: f64,
    pub shmem_mib: f64,
    pub slab_mib: f64,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            total_mib: 4096.0,
            free_mib: 1200.0,
            buffers_mib: 64.0,
            cached_mib: 1800.0,
            available_mib: None,
            swap_total_mib: 2048.0,
            swap_free_mib: 2040.0,
            dirty_mib: 8.0,
            shmem_mib: 20.0,
            slab_mib: 120.0,
        }
    }
}

impl Memory {
    pub fn new(total_mib: f64, free_mib: f64, cached_mib: f64) -> Memory {
        Memory {
            total_mib,
            free_mib,
            cached_mib,
            ..Default::default()
        }
    }
    pub fn swap(mut self, total_mib: f64, free_mib: f64) -> Self {
        self.swap_total_mib = total_mib;
        self.swap_free_mib = free_mib;
        self
    }
    pub fn buffers(mut self, mib: f64) -> Self {
        self.buffers_mib = mib;
        self
    }
    pub fn available(mut self, mib: f64) -> Self {
        self.available_mib = Some(mib);
        self
    }
    pub fn dirty(mut self, mib: f64) -> Self {
        self.dirty_mib = mib;
        self
    }
}

/// CPU time not owned by a declared thread. `*_pct` are per core (every core gets them), except
/// `softirq_pct`/`irq_pct`, which land on core `irq_core` only (NIC interrupts usually do).
/// Each is clamped to what the core has left after the declared threads.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct CpuBackground {
    pub user_pct: f64,
    pub system_pct: f64,
    pub iowait_pct: f64,
    pub steal_pct: f64,
    pub softirq_pct: f64,
    pub irq_pct: f64,
    pub irq_core: u32,
}

impl CpuBackground {
    pub fn new(user_pct: f64, system_pct: f64) -> Self {
        CpuBackground {
            user_pct,
            system_pct,
            ..Default::default()
        }
    }
    pub fn iowait(mut self, pct: f64) -> Self {
        self.iowait_pct = pct;
        self
    }
    pub fn softirq(mut self, pct: f64) -> Self {
        self.softirq_pct = pct;
        self
    }
    pub fn irq(mut self, pct: f64) -> Self {
        self.irq_pct = pct;
        self
    }
}

/// A whole disk. With `partitions: N`, partitions 1..=N exist and the highest-numbered one
/// carries all of the disk's I/O (it is the md member on a NAS); the others are idle. A
/// partition named by an md member is created automatically.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Disk {
    pub name: String,
    pub rotational: bool,
    pub size_gib: f64,
    /// %util as iostat computes it: io_ticks grows by util/100 x 1000 ms per second.
    pub util_pct: f64,
    pub read_mbs: f64,
    pub write_mbs: f64,
    /// Average request time (iostat await), ms.
    pub await_ms: f64,
    /// Average queue size (iostat aqu-sz). Default: IOPS x await (Little's law).
    pub queue: Option<f64>,
    /// Average request size, KiB (decides IOPS from MB/s).
    pub req_kib: f64,
    pub partitions: u32,
}

impl Default for Disk {
    fn default() -> Self {
        Disk {
            name: "sda".into(),
            rotational: true,
            size_gib: 3726.0,
            util_pct: 0.0,
            read_mbs: 0.0,
            write_mbs: 0.0,
            await_ms: 5.0,
            queue: None,
            req_kib: 128.0,
            partitions: 0,
        }
    }
}

impl Disk {
    pub fn new(name: &str) -> Disk {
        Disk {
            name: name.into(),
            ..Default::default()
        }
    }
    pub fn rotational(mut self, r: bool) -> Self {
        self.rotational = r;
        self
    }
    pub(crate) fn size_gib(mut self, g: f64) -> Self {
        self.size_gib = g;
        self
    }
    pub fn util(mut self, pct: f64) -> Self {
        self.util_pct = pct;
        self
    }
    pub fn rw(mut self, read_mbs: f64, write_mbs: f64) -> Self {
        self.read_mbs = read_mbs;
        self.write_mbs = write_mbs;
        self
    }
    pub fn await_ms(mut self, ms: f64) -> Self {
        self.await_ms = ms;
        self
    }
    pub fn queue(mut self, q: f64) -> Self {
        self.queue = Some(q);
        self
    }
    pub(crate) fn req_kib(mut self, k: f64) -> Self {
        self.req_kib = k;
        self
    }
    pub fn partitions(mut self, n: u32) -> Self {
        self.partitions = n;
        self
    }
    pub(crate) fn read_iops(&self) -> f64 {
        self.read_mbs * 1e6 / (self.req_kib.max(0.5) * 1024.0)
    }
    pub(crate) fn write_iops(&self) -> f64 {
        self.write_mbs * 1e6 / (self.req_kib.max(0.5) * 1024.0)
    }
    pub(crate) fn queue_size(&self) -> f64 {
        self.queue
            .unwrap_or((self.read_iops() + self.write_iops()) * self.await_ms / 1000.0)
    }
}

/// An md array. Like real md, it reports throughput but zero busy time (io_ticks = 0).
/// Throughput default: reads = sum of member reads; writes = sum of member writes for raid0,
/// the mean for raid1, sum x (n-1)/n for raid5, sum x (n-2)/n for raid6.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct MdArray {
    pub name: String,
    pub level: String,
    pub members: Vec<String>,
    pub read_mbs: Option<f64>,
    pub write_mbs: Option<f64>,
}

impl MdArray {
    pub fn new(name: &str, level: &str, members: &[&str]) -> MdArray {
        MdArray {
            name: name.into(),
            level: level.into(),
            members: members.iter().map(|s| s.to_string()).collect(),
            read_mbs: None,
            write_mbs: None,
        }
    }
    pub fn rw(mut self, read_mbs: f64, write_mbs: f64) -> Self {
        self.read_mbs = Some(read_mbs);
        self.write_mbs = Some(write_mbs);
        self
    }
}

/// A time window; with `every_s` it repeats: [from + k x every, to + k x every) for k >= 0.
#[derive(Clone, Debug, Serialize, Deserialize, Default, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Window {
    pub from_s: f64,
    pub to_s: f64,
    pub every_s: Option<f64>,
}

impl Window {
    pub fn new(from_s: f64, to_s: f64) -> Window {
        Window {
            from_s,
            to_s,
            every_s: None,
        }
    }
    pub fn every(mut self, s: f64) -> Self {
        self.every_s = Some(s);
        self
    }
    /// Seconds of [0, t) that fall inside the window.
    pub(crate) fn overlap(&self, t: f64) -> f64 {
        let len = (self.to_s - self.from_s).max(0.0);
        let one = |from: f64| (t.min(from + len) - from.max(0.0)).max(0.0);
        match self.every_s {
            Some(p) if p > 0.0 => {
                let mut sum = 0.0;
                let mut k = 0.0;
                while self.from_s + k * p < t {
                    sum += one(self.from_s + k * p);
                    k += 1.0;
                }
                sum
            }
            _ => one(self.from_s),
        }
    }
    pub fn contains(&self, t: f64) -> bool {
        let len = (self.to_s - self.from_s).max(0.0);
        match self.every_s {
            Some(p) if p > 0.0 => {
                if t < self.from_s {
                    return false;
                }
                let k = ((t - self.from_s) / p).floor();
                t < self.from_s + k * p + len
            }
            _ => t >= self.from_s && t < self.to_s,
        }
    }
    /// How many windows have started in [0, t].
    pub(crate) fn starts_before(&self, t: f64) -> u64 {
        if t < self.from_s {
            return 0;
        }
        match self.every_s {
            Some(p) if p > 0.0 => ((t - self.from_s) / p).floor() as u64 + 1,
            _ => 1,
        }
    }
}

/// A network interface. For a bond (non-empty `slaves`), the declared rates are ignored and
/// the bond shows the sum of its slaves; its speed defaults to the sum of the slaves' speeds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Nic {
    pub name: String,
    /// Negotiated speed in Mbit/s; `None` writes "-1" (unknown) while the link is up.
    pub speed_mbit: Option<u32>,
    /// "full", "half" or "unknown".
    pub duplex: String,
    pub mtu: u32,
    /// "up", "down", "unknown". A declared "down" is an administratively down interface: speed,
    /// duplex and carrier are unreadable (absent files), no traffic.
    pub operstate: String,
    pub address: Option<String>,
    pub rx_mbs: f64,
    pub tx_mbs: f64,
    pub rx_errors_s: f64,
    pub tx_errors_s: f64,
    pub rx_drops_s: f64,
    pub tx_drops_s: f64,
    /// Average packet size in bytes on the wire side that carries the data; the other direction
    /// is counted in ACK-sized packets when its rate is small.
    pub packet_bytes: f64,
    pub slaves: Vec<String>,
    pub bond_mode: String,
    /// Carrier lost during these windows: operstate down, carrier 0, speed -1, duplex unknown,
    /// no traffic; carrier_changes counts the flaps.
    pub down: Vec<Window>,
}

impl Default for Nic {
    fn default() -> Self {
        Nic {
            name: "eth0".into(),
            speed_mbit: Some(1000),
            duplex: "full".into(),
            mtu: 1500,
            operstate: "up".into(),
            address: None,
            rx_mbs: 0.0,
            tx_mbs: 0.0,
            rx_errors_s: 0.0,
            tx_errors_s: 0.0,
            rx_drops_s: 0.0,
            tx_drops_s: 0.0,
            packet_bytes: 1448.0,
            slaves: Vec::new(),
            bond_mode: "802.3ad 4".into(),
            down: Vec::new(),
        }
    }
}

impl Nic {
    pub fn new(name: &str) -> Nic {
        Nic {
            name: name.into(),
            ..Default::default()
        }
    }
    pub fn speed(mut self, mbit: u32) -> Self {
        self.speed_mbit = Some(mbit);
        self
    }
    pub fn no_speed(mut self) -> Self {
        self.speed_mbit = None;
        self
    }
    pub fn duplex(mut self, d: &str) -> Self {
        self.duplex = d.into();
        self
    }
    pub fn mtu(mut self, m: u32) -> Self {
        self.mtu = m;
        self
    }
    pub fn operstate(mut self, s: &str) -> Self {
        self.operstate = s.into();
        self
    }
    pub fn rx(mut self, mbs: f64) -> Self {
        self.rx_mbs = mbs;
        self
    }
    pub fn tx(mut self, mbs: f64) -> Self {
        self.tx_mbs = mbs;
        self
    }
    pub fn errors(mut self, rx_s: f64, tx_s: f64) -> Self {
        self.rx_errors_s = rx_s;
        self.tx_errors_s = tx_s;
        self
    }
    pub fn drops(mut self, rx_s: f64, tx_s: f64) -> Self {
        self.rx_drops_s = rx_s;
        self.tx_drops_s = tx_s;
        self
    }
    pub fn bond(mut self, slaves: &[&str]) -> Self {
        self.slaves = slaves.iter().map(|s| s.to_string()).collect();
        self.speed_mbit = None;
        self
    }
    pub fn down_during(mut self, w: Window) -> Self {
        self.down.push(w);
        self
    }
    pub fn address(mut self, mac: &str) -> Self {
        self.address = Some(mac.into());
        self
    }
    pub(crate) fn is_admin_down(&self) -> bool {
        self.operstate == "down"
    }
}

/// Swap and reclaim activity (per second).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Swap {
    pub in_pages_s: f64,
    pub out_pages_s: f64,
    pub major_faults_s: f64,
    pub minor_faults_s: f64,
    pub allocstall_s: f64,
    pub pgscan_direct_s: f64,
    pub pgscan_kswapd_s: f64,
}

impl Default for Swap {
    fn default() -> Self {
        Swap {
            in_pages_s: 0.0,
            out_pages_s: 0.0,
            major_faults_s: 0.2,
            minor_faults_s: 1500.0,
            allocstall_s: 0.0,
            pgscan_direct_s: 0.0,
            pgscan_kswapd_s: 0.0,
        }
    }
}

impl Swap {
    pub fn new(in_pages_s: f64, out_pages_s: f64) -> Swap {
        Swap {
            in_pages_s,
            out_pages_s,
            ..Default::default()
        }
    }
    pub fn major_faults(mut self, s: f64) -> Self {
        self.major_faults_s = s;
        self
    }
    pub fn allocstall(mut self, s: f64) -> Self {
        self.allocstall_s = s;
        self
    }
    pub fn pgscan(mut self, direct_s: f64, kswapd_s: f64) -> Self {
        self.pgscan_direct_s = direct_s;
        self.pgscan_kswapd_s = kswapd_s;
        self
    }
}

/// TCP counters (per second), plus bursts in windows (e.g. retransmits before each death).
/// InSegs/OutSegs follow the NICs' packet rates.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tcp {
    pub retrans_s: f64,
    /// OutRsts.
    pub resets_s: f64,
    pub estab_resets_s: f64,
    /// TcpExt TCPTimeouts.
    pub timeouts_s: f64,
    pub curr_estab: u32,
    pub active_opens_s: f64,
    pub passive_opens_s: f64,
    pub bursts: Vec<TcpBurst>,
}

impl Default for Tcp {
    fn default() -> Self {
        Tcp {
            retrans_s: 0.0,
            resets_s: 0.0,
            estab_resets_s: 0.0,
            timeouts_s: 0.0,
            curr_estab: 6,
            active_opens_s: 0.05,
            passive_opens_s: 0.05,
            bursts: Vec::new(),
        }
    }
}

impl Tcp {
    pub fn new(retrans_s: f64, resets_s: f64) -> Tcp {
        Tcp {
            retrans_s,
            resets_s,
            ..Default::default()
        }
    }
    pub fn burst(mut self, b: TcpBurst) -> Self {
        self.bursts.push(b);
        self
    }
}

/// Extra TCP event rates inside a window.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TcpBurst {
    pub window: Window,
    pub retrans_s: f64,
    pub resets_s: f64,
    pub estab_resets_s: f64,
    pub timeouts_s: f64,
}

/// A process. `threads[0]` is the main thread (tid = pid, comm = the process comm unless given);
/// with no threads declared the process has one idle main thread.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// Truncated to 15 bytes when written, as the kernel does (TASK_COMM_LEN).
    pub comm: String,
    /// argv; `{token}` is replaced by this instance's token, `{instance}` by its number.
    pub cmdline: Vec<String>,
    pub threads: Vec<Thread>,
    pub uid: u32,
    pub nice: i32,
    pub rss_mib: f64,
    pub vsize_mib: f64,
    /// Birth time (s since t=0; negative = before the scenario started). Default: 30 s after
    /// boot for an idle process, 600 s before t=0 for one with CPU load.
    pub born_s: Option<f64>,
    /// Death time of the (last) instance.
    pub dies_s: Option<f64>,
    pub restart: Option<Restart>,
    /// Base of `{token}`; instance i gets token + i x 104729.
    pub token: u64,
    /// Kernel thread: empty cmdline, ppid 2, no memory.
    pub kernel_thread: bool,
    pub minor_faults_s: f64,
    pub major_faults_s: f64,
    /// Fraction of wall time blocked on I/O (delayacct_blkio_ticks).
    pub blkio_pct: f64,
}

impl Default for Process {
    fn default() -> Self {
        Process {
            pid: 1000,
            ppid: 1,
            comm: "proc".into(),
            cmdline: Vec::new(),
            threads: Vec::new(),
            uid: 0,
            nice: 0,
            rss_mib: 6.0,
            vsize_mib: 48.0,
            born_s: None,
            dies_s: None,
            restart: None,
            token: 0,
            kernel_thread: false,
            minor_faults_s: 0.0,
            major_faults_s: 0.0,
            blkio_pct: 0.0,
        }
    }
}

impl Process {
    /// A process with an idle main thread and cmdline = [comm].
    pub fn new(pid: u32, comm: &str) -> Process {
        Process {
            pid,
            comm: comm.into(),
            cmdline: vec![comm.into()],
            ..Default::default()
        }
    }
    /// A kernel thread (e.g. kswapd0) at `cpu_pct`.
    pub fn kthread(pid: u32, comm: &str, cpu_pct: f64) -> Process {
        Process {
            pid,
            ppid: 2,
            comm: comm.into(),
            cmdline: Vec::new(),
            kernel_thread: true,
            rss_mib: 0.0,
            vsize_mib: 0.0,
            threads: vec![Thread::new(cpu_pct).sys(1.0)],
            ..Default::default()
        }
    }
    pub fn cmdline(mut self, args: &[&str]) -> Self {
        self.cmdline = args.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn ppid(mut self, ppid: u32) -> Self {
        self.ppid = ppid;
        self
    }
    pub fn uid(mut self, uid: u32) -> Self {
        self.uid = uid;
        self
    }
    pub fn nice(mut self, n: i32) -> Self {
        self.nice = n;
        self
    }
    /// Adds a thread; the first one added is the main thread.
    pub fn thread(mut self, t: Thread) -> Self {
        self.threads.push(t);
        self
    }
    /// Single-threaded process at `cpu_pct` (replaces the thread list).
    pub fn cpu(mut self, cpu_pct: f64) -> Self {
        self.threads = vec![Thread::new(cpu_pct)];
        self
    }
    pub fn mem(mut self, rss_mib: f64, vsize_mib: f64) -> Self {
        self.rss_mib = rss_mib;
        self.vsize_mib = vsize_mib;
        self
    }
    pub fn born(mut self, s: f64) -> Self {
        self.born_s = Some(s);
        self
    }
    pub fn dies(mut self, s: f64) -> Self {
        self.dies_s = Some(s);
        self
    }
    pub fn restart(mut self, every_s: f64, gap_s: f64) -> Self {
        self.restart = Some(Restart { every_s, gap_s });
        self
    }
    pub fn token(mut self, t: u64) -> Self {
        self.token = t;
        self
    }
    pub fn faults(mut self, minor_s: f64, major_s: f64) -> Self {
        self.minor_faults_s = minor_s;
        self.major_faults_s = major_s;
        self
    }
    pub(crate) fn blkio(mut self, pct: f64) -> Self {
        self.blkio_pct = pct;
        self
    }
    /// Total declared CPU of the process, % of a core.
    pub fn cpu_pct(&self) -> f64 {
        self.threads.iter().map(|t| t.cpu_pct).sum()
    }
}

/// Each instance lives `every_s` seconds, then dies; the next one is born `gap_s` later with a
/// new pid and a new token.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Restart {
    pub every_s: f64,
    pub gap_s: f64,
}

/// A thread and its load: `cpu_pct` of one core, `sys_frac` of it in system time.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thread {
    pub tid: Option<u32>,
    pub comm: Option<String>,
    pub cpu_pct: f64,
    pub sys_frac: f64,
    /// Time spent runnable but waiting for a CPU (schedstat run_delay), % of wall time.
    pub delay_pct: f64,
}

impl Default for Thread {
    fn default() -> Self {
        Thread {
            tid: None,
            comm: None,
            cpu_pct: 0.0,
            sys_frac: 0.2,
            delay_pct: 0.5,
        }
    }
}

impl Thread {
    pub fn new(cpu_pct: f64) -> Thread {
        Thread {
            cpu_pct,
            ..Default::default()
        }
    }
    pub fn comm(mut self, c: &str) -> Self {
        self.comm = Some(c.into());
        self
    }
    pub fn tid(mut self, tid: u32) -> Self {
        self.tid = Some(tid);
        self
    }
    pub fn sys(mut self, frac: f64) -> Self {
        self.sys_frac = frac;
        self
    }
    pub fn delay(mut self, pct: f64) -> Self {
        self.delay_pct = pct;
        self
    }
}

/// Short-lived processes: one born every 1/per_s seconds from t=0, each living `lifetime_s`,
/// with comms cycling through `comms` (default includes names with spaces and parentheses).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Churn {
    pub per_s: f64,
    pub lifetime_s: f64,
    pub comms: Vec<String>,
    pub cpu_pct: f64,
    pub threads: u32,
}

impl Default for Churn {
    fn default() -> Self {
        Churn {
            per_s: 100.0,
            lifetime_s: 0.5,
            comms: [
                "sh",
                "cat",
                "Web Content",
                "(sd-pam)",
                "find",
                "du -s",
                "a) b (c",
                "sleep",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            cpu_pct: 2.0,
            threads: 1,
        }
    }
}

impl Churn {
    pub fn new(per_s: f64, lifetime_s: f64) -> Churn {
        Churn {
            per_s,
            lifetime_s,
            ..Default::default()
        }
    }
    pub fn threads(mut self, n: u32) -> Self {
        self.threads = n;
        self
    }
    pub fn cpu(mut self, pct: f64) -> Self {
        self.cpu_pct = pct;
        self
    }
}

/// `sda3` -> (index of disk `sda`, Some(3)); `sda` -> (index, None); nvme0n1p2 -> (.., Some(2)).
pub fn split_partition(host: &Host, name: &str) -> Option<(usize, Option<u32>)> {
    let mut best: Option<(usize, Option<u32>, usize)> = None;
    for (i, d) in host.disks.iter().enumerate() {
        if name == d.name {
            return Some((i, None));
        }
        if let Some(rest) = name.strip_prefix(d.name.as_str()) {
            let digits = rest
                .strip_prefix('p')
                .filter(|_| d.name.ends_with(|c: char| c.is_ascii_digit()));
            let digits = digits.unwrap_or(rest);
            if let Ok(n) = digits.parse::<u32>()
                && n > 0
                && best.as_ref().is_none_or(|b| d.name.len() > b.2)
            {
                best = Some((i, Some(n), d.name.len()));
            }
        }
    }
    best.map(|(i, n, _)| (i, n))
}
