//! The declared scenario: hosts and what they do, as plain structs with builders, loadable from
//! JSON (serde). Every rate is "per second"; MB is 10^6 bytes; CPU percentages are "% of one core".
//! Unknown JSON keys are refused so a typo in a shell test's scenario file fails loudly.

use serde::{Deserialize, Serialize};
use std::path::Path;

mod devices;
mod process;

pub use devices::*;
pub use process::*;

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
