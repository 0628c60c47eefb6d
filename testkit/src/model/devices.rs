//! A host's devices and system state: memory and swap, background CPU, disks and md arrays, NICs, TCP, time windows.

use serde::{Deserialize, Serialize};

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
