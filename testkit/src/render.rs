//! Text of every generated file, in the kernel flavour's exact format. Pure: state in, text out.
//!
//! Formats follow the kernel sources of each flavour (fs/proc/stat.c, fs/proc/array.c,
//! block/genhd.c, net/core/net-procfs.c, net/ipv4/proc.c, net/core/net-sysfs.c) and
//! Documentation/filesystems/proc.txt, Documentation/iostats.txt.

use crate::model::{Disk, Kernel, Nic};
use crate::sim::{
    HZ, HostSim, LiveProc, LiveThread, hash_str, mix, partition_name, split_partition,
};
use std::fmt::Write as _;

/// An entry of the /sys tree (paths relative to the sys root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysEntry {
    File(String, String),
    Symlink(String, String),
}

const MB: f64 = 1e6;

// ----- helpers --------------------------------------------------------------------------------

fn kb(mib: f64) -> u64 {
    (mib.max(0.0) * 1024.0).round() as u64
}

/// The kernel keeps 15 bytes of a command name (TASK_COMM_LEN 16 with the NUL).
pub fn kernel_comm(comm: &str) -> String {
    let mut end = comm.len().min(15);
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    comm[..end].to_string()
}

fn meminfo_line(out: &mut String, name: &str, kb: u64) {
    let label = format!("{name}:");
    let _ = writeln!(out, "{label:<16}{kb:>8} kB");
}

fn meminfo_count(out: &mut String, name: &str, n: u64) {
    let label = format!("{name}:");
    let _ = writeln!(out, "{label:<16}{n:>8}");
}

fn header_values(out: &mut String, prefix: &str, pairs: &[(&str, i64)]) {
    let _ = write!(out, "{prefix}:");
    for (k, _) in pairs {
        let _ = write!(out, " {k}");
    }
    out.push('\n');
    let _ = write!(out, "{prefix}:");
    for (_, v) in pairs {
        let _ = write!(out, " {v}");
    }
    out.push('\n');
}

// ----- block devices ----------------------------------------------------------------------------

/// Per-second rates of one block device, as the kernel counts them.
#[derive(Clone, Debug, Default)]
pub struct BlockRates {
    pub r_ios: f64,
    pub r_merges: f64,
    pub r_sectors: f64,
    pub r_ticks: f64,
    pub w_ios: f64,
    pub w_merges: f64,
    pub w_sectors: f64,
    pub w_ticks: f64,
    pub in_flight: u64,
    pub io_ticks: f64,
    pub time_in_queue: f64,
    pub flush_ios: f64,
    pub flush_ticks: f64,
}

impl BlockRates {
    pub(crate) fn of_disk(d: &Disk) -> BlockRates {
        let r = d.read_iops();
        let w = d.write_iops();
        let q = d.queue_size();
        BlockRates {
            r_ios: r,
            r_merges: r * 0.12,
            r_sectors: d.read_mbs * MB / 512.0,
            r_ticks: r * d.await_ms,
            w_ios: w,
            w_merges: w * 0.3,
            w_sectors: d.write_mbs * MB / 512.0,
            w_ticks: w * d.await_ms,
            in_flight: if d.util_pct > 0.0 {
                q.round() as u64
            } else {
                0
            },
            io_ticks: d.util_pct.clamp(0.0, 100.0) * 10.0,
            time_in_queue: q * 1000.0,
            flush_ios: w * 0.02,
            flush_ticks: w * 0.02 * d.await_ms,
        }
    }
    /// md: throughput only; busy time, queue and request times stay 0.
    pub(crate) fn of_md(read_mbs: f64, write_mbs: f64) -> BlockRates {
        let req = 131072.0;
        BlockRates {
            r_ios: read_mbs * MB / req,
            r_sectors: read_mbs * MB / 512.0,
            w_ios: write_mbs * MB / req,
            w_sectors: write_mbs * MB / 512.0,
            ..Default::default()
        }
    }
}

/// One line of /proc/diskstats or one /sys/block/X/stat: the 11 (or 17) counters.
pub(crate) fn block_counters(sim: &HostSim, r: &BlockRates) -> Vec<u64> {
    let t = sim.t;
    let mut v = vec![
        sim.counter(r.r_ios, t, true),
        sim.counter(r.r_merges, t, true),
        sim.counter_fast(r.r_sectors, t),
        sim.counter_u32(r.r_ticks, t),
        sim.counter(r.w_ios, t, true),
        sim.counter(r.w_merges, t, true),
        sim.counter_fast(r.w_sectors, t),
        sim.counter_u32(r.w_ticks, t),
        r.in_flight,
        sim.counter_u32(r.io_ticks, t),
        sim.counter_u32(r.time_in_queue, t),
    ];
    if sim.kernel() == Kernel::K6 {
        v.extend([
            0,
            0,
            0,
            0,
            sim.counter(r.flush_ios, t, true),
            sim.counter_u32(r.flush_ticks, t),
        ]);
    }
    v
}

/// A block device as listed in diskstats: name, major, minor, size (512-byte sectors), rates.
#[derive(Clone, Debug)]
pub struct BlockDev {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub sectors: u64,
    pub rates: BlockRates,
    /// For a partition: (disk name, partition number).
    pub parent: Option<(String, u32)>,
    pub rotational: bool,
    pub is_md: bool,
}

fn disk_major_minor(name: &str, idx: usize) -> (u32, u32) {
    if let Some(rest) = name.strip_prefix("sd")
        && rest.len() == 1
    {
        let l = rest.as_bytes()[0];
        if l.is_ascii_lowercase() {
            return (8, (l - b'a') as u32 * 16);
        }
    }
    if name.starts_with("nvme") {
        return (259, idx as u32 * 8);
    }
    if name.starts_with("mmcblk") {
        return (179, idx as u32 * 8);
    }
    (253, idx as u32 * 16)
}

/// Partitions of a disk: max(declared count, highest md member partition on it).
pub(crate) fn partition_count(sim: &HostSim, disk_idx: usize) -> u32 {
    let h = &sim.host;
    let mut n = h.disks[disk_idx].partitions;
    for m in &h.md {
        for member in &m.members {
            if let Some((i, Some(p))) = split_partition(h, member)
                && i == disk_idx
            {
                n = n.max(p);
            }
        }
    }
    n
}

/// Throughput of an md array (MB/s read, write), declared or derived from its members.
pub(crate) fn md_rates(sim: &HostSim, md: &crate::model::MdArray) -> (f64, f64) {
    let h = &sim.host;
    let mut reads = 0.0;
    let mut writes = 0.0;
    let mut n: f64 = 0.0;
    for member in &md.members {
        if let Some((i, part)) = split_partition(h, member) {
            let d = &h.disks[i];
            // Only the disk itself or its active (highest) partition carries I/O.
            let active = match part {
                None => true,
                Some(p) => p == partition_count(sim, i),
            };
            if active {
                reads += d.read_mbs;
                writes += d.write_mbs;
            }
            n += 1.0;
        }
    }
    let w = match md.level.as_str() {
        "raid0" | "linear" => writes,
        "raid1" | "raid10" => {
            if md.level == "raid10" {
                writes / 2.0
            } else {
                writes / n.max(1.0)
            }
        }
        "raid5" => writes * (n - 1.0).max(1.0) / n.max(1.0),
        "raid6" => writes * (n - 2.0).max(1.0) / n.max(1.0),
        _ => writes,
    };
    (md.read_mbs.unwrap_or(reads), md.write_mbs.unwrap_or(w))
}

/// Every block device in diskstats order: disks with their partitions, md arrays, loops.
pub fn block_devices(sim: &HostSim) -> Vec<BlockDev> {
    let h = &sim.host;
    let mut out = Vec::new();
    for (i, d) in h.disks.iter().enumerate() {
        let (maj, min) = disk_major_minor(&d.name, i);
        let sectors = (d.size_gib * 1024.0 * 1024.0 * 2.0) as u64;
        let parts = partition_count(sim, i);
        out.push(BlockDev {
            name: d.name.clone(),
            major: maj,
            minor: min,
            sectors,
            rates: BlockRates::of_disk(d),
            parent: None,
            rotational: d.rotational,
            is_md: false,
        });
        let small = 2 * 1024 * 1024 * 2u64; // 2 GiB in sectors
        for p in 1..=parts {
            let psize = if p < parts {
                small
            } else {
                sectors.saturating_sub(small * (parts as u64 - 1) + 2048)
            };
            out.push(BlockDev {
                name: partition_name(&d.name, p),
                major: maj,
                minor: min + p,
                sectors: psize,
                rates: if p == parts {
                    BlockRates::of_disk(d)
                } else {
                    BlockRates::default()
                },
                parent: Some((d.name.clone(), p)),
                rotational: d.rotational,
                is_md: false,
            });
        }
    }
    for m in &h.md {
        let minor = m
            .name
            .trim_start_matches("md")
            .parse::<u32>()
            .unwrap_or(127);
        let (r, w) = md_rates(sim, m);
        let data_members = match m.level.as_str() {
            "raid1" => 1.0,
            "raid5" => (m.members.len() as f64 - 1.0).max(1.0),
            "raid6" => (m.members.len() as f64 - 2.0).max(1.0),
            "raid10" => (m.members.len() as f64 / 2.0).max(1.0),
            _ => m.members.len() as f64,
        };
        let member_sectors = m
            .members
            .first()
            .and_then(|mem| block_devices_size(sim, mem))
            .unwrap_or(0);
        out.push(BlockDev {
            name: m.name.clone(),
            major: 9,
            minor,
            sectors: (member_sectors as f64 * data_members) as u64,
            rates: BlockRates::of_md(r, w),
            parent: None,
            rotational: false,
            is_md: true,
        });
    }
    for l in 0..8 {
        out.push(BlockDev {
            name: format!("loop{l}"),
            major: 7,
            minor: l,
            sectors: 0,
            rates: BlockRates::default(),
            parent: None,
            rotational: false,
            is_md: false,
        });
    }
    out
}

fn block_devices_size(sim: &HostSim, name: &str) -> Option<u64> {
    let h = &sim.host;
    let (i, part) = split_partition(h, name)?;
    let d = &h.disks[i];
    let sectors = (d.size_gib * 1024.0 * 1024.0 * 2.0) as u64;
    Some(match part {
        None => sectors,
        Some(p) => {
            let parts = partition_count(sim, i);
            let small = 2 * 1024 * 1024 * 2u64;
            if p < parts {
                small
            } else {
                sectors.saturating_sub(small * (parts as u64 - 1) + 2048)
            }
        }
    })
}

pub fn diskstats(sim: &HostSim) -> String {
    let mut out = String::new();
    for b in block_devices(sim) {
        let _ = write!(out, "{:4} {:7} {}", b.major, b.minor, b.name);
        for v in block_counters(sim, &b.rates) {
            let _ = write!(out, " {v}");
        }
        out.push('\n');
    }
    out
}

pub fn sys_block_stat(sim: &HostSim, r: &BlockRates) -> String {
    let mut out = String::new();
    for v in block_counters(sim, r) {
        let _ = write!(out, "{v:>8} ");
    }
    out.pop();
    out.push('\n');
    out
}

// ----- NICs -------------------------------------------------------------------------------------

/// The 16 counters of a /proc/net/dev line, in column order.
pub(crate) type NetCounters = [u64; 16];

fn nic_counters_one(sim: &HostSim, n: &Nic) -> NetCounters {
    let a = sim.nic_active_s(n);
    let rx = n.rx_mbs * MB;
    let tx = n.tx_mbs * MB;
    let pkt = n.packet_bytes.max(64.0);
    let mut rx_p = rx / pkt;
    let mut tx_p = tx / pkt;
    // The quiet direction of a bulk flow is mostly ACKs: one per two data segments.
    if tx < rx * 0.05 && rx_p > 0.0 {
        tx_p = (rx_p / 2.0).max(tx / pkt);
    }
    if rx < tx * 0.05 && tx_p > 0.0 {
        rx_p = (tx_p / 2.0).max(rx / pkt);
    }
    [
        sim.counter_fast(rx, a),
        sim.counter(rx_p, a, true),
        sim.counter(n.rx_errors_s, a, true),
        sim.counter(n.rx_drops_s, a, true),
        0,
        sim.counter(n.rx_errors_s * 0.3, a, true),
        0,
        sim.counter(0.2, a, true),
        sim.counter_fast(tx, a),
        sim.counter(tx_p, a, true),
        sim.counter(n.tx_errors_s, a, true),
        sim.counter(n.tx_drops_s, a, true),
        0,
        0,
        sim.counter(n.tx_errors_s * 0.5, a, true),
        0,
    ]
}

/// Counters of a NIC; a bond sums its slaves (wrapping like the flavour's counters).
pub(crate) fn nic_counters(sim: &HostSim, n: &Nic) -> NetCounters {
    if n.slaves.is_empty() {
        return nic_counters_one(sim, n);
    }
    let mut sum = [0u64; 16];
    for s in &n.slaves {
        if let Some(sn) = sim.host.nic_named(s) {
            let c = nic_counters_one(sim, sn);
            for i in 0..16 {
                sum[i] = sum[i].wrapping_add(c[i]);
                if sim.is32() {
                    sum[i] &= 0xffff_ffff;
                }
            }
        }
    }
    sum
}

/// All NICs in order: `lo` first (unless declared), then as declared.
pub fn nics(sim: &HostSim) -> Vec<Nic> {
    let h = &sim.host;
    let mut v = Vec::new();
    if h.loopback && h.nic_named("lo").is_none() {
        v.push(Nic {
            name: "lo".into(),
            speed_mbit: None,
            mtu: 65536,
            operstate: "unknown".into(),
            rx_mbs: 0.002,
            tx_mbs: 0.002,
            packet_bytes: 200.0,
            ..Default::default()
        });
    }
    v.extend(h.nics.iter().cloned());
    v
}

pub fn net_dev(sim: &HostSim) -> String {
    let mut out = String::from(
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n",
    );
    for n in nics(sim) {
        let c = nic_counters(sim, &n);
        let _ = writeln!(
            out,
            "{:>6}: {:7} {:7} {:4} {:4} {:4} {:5} {:10} {:9} {:8} {:7} {:4} {:4} {:4} {:5} {:7} {:10}",
            n.name,
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            c[8],
            c[9],
            c[10],
            c[11],
            c[12],
            c[13],
            c[14],
            c[15]
        );
    }
    out
}

fn mac_of(sim: &HostSim, n: &Nic) -> String {
    if let Some(a) = &n.address {
        return a.clone();
    }
    if n.name == "lo" {
        return "00:00:00:00:00:00".into();
    }
    let oui = match sim.kernel() {
        Kernel::K3_10 => [0x00, 0x90, 0xa9],
        Kernel::K4_4 => [0x00, 0x11, 0x32],
        Kernel::K6 => [0x52, 0x54, 0x00],
    };
    let h = mix(sim.seed ^ hash_str(&sim.host.name) ^ hash_str(&n.name).rotate_left(17));
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        oui[0],
        oui[1],
        oui[2],
        (h >> 16) as u8,
        (h >> 8) as u8,
        h as u8
    )
}

/// Speed a NIC shows in sysfs while up: declared, or for a bond the sum of its up slaves.
pub(crate) fn nic_speed(sim: &HostSim, n: &Nic) -> Option<u32> {
    if !n.slaves.is_empty() && n.speed_mbit.is_none() {
        let s: u32 = n
            .slaves
            .iter()
            .filter_map(|s| sim.host.nic_named(s))
            .filter(|s| sim.nic_is_up(s))
            .filter_map(|s| s.speed_mbit)
            .sum();
        return if s > 0 { Some(s) } else { None };
    }
    n.speed_mbit
}

pub fn sys_net(sim: &HostSim) -> Vec<SysEntry> {
    let mut v = Vec::new();
    let all = nics(sim);
    for (idx, n) in all.iter().enumerate() {
        let d = format!("class/net/{}", n.name);
        let f = |name: &str, val: String| SysEntry::File(format!("{d}/{name}"), val);
        let up = sim.nic_is_up(n);
        let lo = n.name == "lo";
        v.push(f("address", format!("{}\n", mac_of(sim, n))));
        v.push(f("mtu", format!("{}\n", n.mtu)));
        v.push(f("ifindex", format!("{}\n", idx + 1)));
        v.push(f("type", format!("{}\n", if lo { 772 } else { 1 })));
        v.push(f("tx_queue_len", "1000\n".into()));
        v.push(f(
            "flags",
            format!(
                "{}\n",
                if n.is_admin_down() {
                    "0x1002"
                } else if lo {
                    "0x9"
                } else {
                    "0x1003"
                }
            ),
        ));
        let oper = if up { n.operstate.as_str() } else { "down" };
        v.push(f("operstate", format!("{oper}\n")));
        // Admin down: carrier, speed and duplex are unreadable (EINVAL): absent here.
        if !n.is_admin_down() {
            v.push(f("carrier", format!("{}\n", if up { 1 } else { 0 })));
            if !lo {
                let speed = if up {
                    nic_speed(sim, n).map(|s| s as i64).unwrap_or(-1)
                } else {
                    -1
                };
                v.push(f("speed", format!("{speed}\n")));
                let duplex = if up { n.duplex.as_str() } else { "unknown" };
                v.push(f("duplex", format!("{duplex}\n")));
            }
        }
        if sim.kernel() != Kernel::K3_10 {
            let starts: u64 = n.down.iter().map(|w| w.starts_before(sim.t)).sum();
            let inside = n.down.iter().filter(|w| w.contains(sim.t)).count() as u64;
            let changes = starts + starts.saturating_sub(inside);
            v.push(f("carrier_changes", format!("{}\n", changes + 1)));
        }
        let c = nic_counters(sim, n);
        let names: [(&str, u64); 9] = [
            ("rx_bytes", c[0]),
            ("rx_packets", c[1]),
            ("rx_errors", c[2]),
            ("rx_dropped", c[3]),
            ("multicast", c[7]),
            ("tx_bytes", c[8]),
            ("tx_packets", c[9]),
            ("tx_errors", c[10]),
            ("tx_dropped", c[11]),
        ];
        for (k, val) in names {
            v.push(f(&format!("statistics/{k}"), format!("{val}\n")));
        }
        for k in [
            "collisions",
            "rx_compressed",
            "rx_crc_errors",
            "rx_fifo_errors",
            "rx_length_errors",
            "rx_missed_errors",
            "rx_over_errors",
            "tx_aborted_errors",
            "tx_compressed",
            "tx_fifo_errors",
            "tx_heartbeat_errors",
            "tx_window_errors",
        ] {
            v.push(f(&format!("statistics/{k}"), "0\n".into()));
        }
        v.push(f("statistics/rx_frame_errors", format!("{}\n", c[5])));
        v.push(f("statistics/tx_carrier_errors", format!("{}\n", c[14])));
        if sim.kernel() == Kernel::K6 {
            v.push(f("statistics/rx_nohandler", "0\n".into()));
        }
        if !n.slaves.is_empty() {
            v.push(f("bonding/slaves", format!("{}\n", n.slaves.join(" "))));
            v.push(f("bonding/mode", format!("{}\n", n.bond_mode)));
            for s in &n.slaves {
                v.push(SysEntry::Symlink(
                    format!("class/net/{s}/master"),
                    format!("../{}", n.name),
                ));
                v.push(SysEntry::Symlink(
                    format!("{d}/lower_{s}"),
                    format!("../{s}"),
                ));
            }
        }
    }
    v
}

// ----- /proc system files -----------------------------------------------------------------------

pub fn proc_stat(sim: &HostSim) -> String {
    let mut out = String::new();
    let line = |out: &mut String, name: &str, c: &crate::sim::CoreTicks| {
        let f = |x: f64| x.max(0.0).floor() as u64;
        let _ = writeln!(
            out,
            "{name} {} {} {} {} {} {} {} {} 0 0",
            f(c.user),
            f(c.nice),
            f(c.system),
            f(c.idle),
            f(c.iowait),
            f(c.irq),
            f(c.softirq),
            f(c.steal)
        );
    };
    // The `cpu` line is the sum of the floored per-core values, as the kernel sums per-cpu u64s.
    let mut sum = crate::sim::CoreTicks::default();
    for c in &sim.cores {
        sum.user += c.user.floor();
        sum.nice += c.nice.floor();
        sum.system += c.system.floor();
        sum.idle += c.idle.floor();
        sum.iowait += c.iowait.floor();
        sum.irq += c.irq.floor();
        sum.softirq += c.softirq.floor();
        sum.steal += c.steal.floor();
    }
    line(&mut out, "cpu ", &sum);
    for (i, c) in sim.cores.iter().enumerate() {
        line(&mut out, &format!("cpu{i}"), c);
    }
    let t = sim.t;
    let cores = sim.host.cores as f64;
    let pps: f64 = sim
        .host
        .nics
        .iter()
        .map(|n| (n.rx_mbs + n.tx_mbs) * MB / n.packet_bytes.max(64.0))
        .sum();
    let iops: f64 = sim
        .host
        .disks
        .iter()
        .map(|d| d.read_iops() + d.write_iops())
        .sum();
    let timer = 250.0 * cores;
    let intr_rate = timer + pps / 8.0 + iops;
    let mut irqs: Vec<u64> = vec![0; 48];
    irqs[16] = sim.counter(timer, t, false);
    irqs[24] = sim.counter(pps / 8.0, t, false);
    irqs[30] = sim.counter(iops, t, false);
    let total = sim.counter(intr_rate, t, false);
    let _ = write!(out, "intr {total}");
    for v in &irqs {
        let _ = write!(out, " {v}");
    }
    out.push('\n');
    let _ = writeln!(out, "ctxt {}", sim.ctxt.floor() as u64);
    let _ = writeln!(out, "btime {}", sim.btime);
    let _ = writeln!(out, "processes {}", sim.forks);
    let running = sim
        .procs
        .values()
        .flat_map(|p| p.threads.iter())
        .filter(|th| th.cpu_pct >= 50.0)
        .count()
        .max(1);
    let _ = writeln!(out, "procs_running {running}");
    let _ = writeln!(out, "procs_blocked {}", sim.host.procs_blocked);
    let sirq = [
        cores * 250.0 * 0.1,
        timer * 0.6,
        pps / 4.0,
        pps / 8.0,
        iops,
        0.0,
        cores * 20.0,
        timer * 0.3,
        0.0,
        cores * 50.0,
    ];
    let vals: Vec<u64> = sirq.iter().map(|r| sim.counter(*r, t, false)).collect();
    let _ = write!(out, "softirq {}", vals.iter().sum::<u64>());
    for v in vals {
        let _ = write!(out, " {v}");
    }
    out.push('\n');
    out
}

pub fn meminfo(sim: &HostSim) -> String {
    let m = &sim.host.memory;
    let k = sim.kernel();
    let mut out = String::new();
    let used = (m.total_mib - m.free_mib - m.cached_mib - m.buffers_mib - m.slab_mib).max(0.0);
    let anon = used * 0.85;
    meminfo_line(&mut out, "MemTotal", kb(m.total_mib));
    meminfo_line(&mut out, "MemFree", kb(m.free_mib));
    if k.has_mem_available() {
        let avail = m
            .available_mib
            .unwrap_or(m.free_mib + m.buffers_mib + m.cached_mib * 0.8);
        meminfo_line(&mut out, "MemAvailable", kb(avail));
    }
    meminfo_line(&mut out, "Buffers", kb(m.buffers_mib));
    meminfo_line(&mut out, "Cached", kb(m.cached_mib));
    let swap_used = (m.swap_total_mib - m.swap_free_mib).max(0.0);
    meminfo_line(&mut out, "SwapCached", kb(swap_used * 0.05));
    meminfo_line(&mut out, "Active", kb(anon * 0.6 + m.cached_mib * 0.5));
    meminfo_line(
        &mut out,
        "Inactive",
        kb(anon * 0.4 + m.cached_mib * 0.5 + m.buffers_mib),
    );
    meminfo_line(&mut out, "Active(anon)", kb(anon * 0.6));
    meminfo_line(&mut out, "Inactive(anon)", kb(anon * 0.4));
    meminfo_line(&mut out, "Active(file)", kb(m.cached_mib * 0.5));
    meminfo_line(
        &mut out,
        "Inactive(file)",
        kb(m.cached_mib * 0.5 + m.buffers_mib),
    );
    meminfo_line(&mut out, "Unevictable", 0);
    meminfo_line(&mut out, "Mlocked", 0);
    if k == Kernel::K3_10 {
        // armv7 with HIGHMEM.
        let low = m.total_mib.min(760.0);
        meminfo_line(&mut out, "HighTotal", kb(m.total_mib - low));
        meminfo_line(
            &mut out,
            "HighFree",
            kb((m.free_mib * 0.3).min(m.total_mib - low)),
        );
        meminfo_line(&mut out, "LowTotal", kb(low));
        meminfo_line(&mut out, "LowFree", kb(m.free_mib * 0.7));
    }
    meminfo_line(&mut out, "SwapTotal", kb(m.swap_total_mib));
    meminfo_line(&mut out, "SwapFree", kb(m.swap_free_mib));
    if k == Kernel::K6 {
        meminfo_line(&mut out, "Zswap", 0);
        meminfo_line(&mut out, "Zswapped", 0);
    }
    meminfo_line(&mut out, "Dirty", kb(m.dirty_mib));
    meminfo_line(&mut out, "Writeback", 0);
    meminfo_line(&mut out, "AnonPages", kb(anon));
    meminfo_line(&mut out, "Mapped", kb(used * 0.1));
    meminfo_line(&mut out, "Shmem", kb(m.shmem_mib));
    if k == Kernel::K6 {
        meminfo_line(&mut out, "KReclaimable", kb(m.slab_mib * 0.6));
    }
    meminfo_line(&mut out, "Slab", kb(m.slab_mib));
    meminfo_line(&mut out, "SReclaimable", kb(m.slab_mib * 0.6));
    meminfo_line(&mut out, "SUnreclaim", kb(m.slab_mib * 0.4));
    meminfo_line(
        &mut out,
        "KernelStack",
        (sim.thread_count() as u64 + 200) * if k == Kernel::K3_10 { 8 } else { 16 },
    );
    meminfo_line(&mut out, "PageTables", kb(used * 0.01));
    if k == Kernel::K6 {
        meminfo_line(&mut out, "SecPageTables", 0);
    }
    meminfo_line(&mut out, "NFS_Unstable", 0);
    meminfo_line(&mut out, "Bounce", 0);
    meminfo_line(&mut out, "WritebackTmp", 0);
    meminfo_line(
        &mut out,
        "CommitLimit",
        kb(m.total_mib / 2.0 + m.swap_total_mib),
    );
    meminfo_line(&mut out, "Committed_AS", kb(used * 1.6));
    if k == Kernel::K3_10 {
        meminfo_line(&mut out, "VmallocTotal", 245760);
        meminfo_line(&mut out, "VmallocUsed", 12340);
        meminfo_line(&mut out, "VmallocChunk", 198000);
    } else {
        meminfo_line(&mut out, "VmallocTotal", 34359738367);
        meminfo_line(
            &mut out,
            "VmallocUsed",
            if k == Kernel::K6 { 24000 } else { 0 },
        );
        meminfo_line(&mut out, "VmallocChunk", 0);
        if k == Kernel::K6 {
            meminfo_line(&mut out, "Percpu", 1600 * sim.host.cores as u64);
        }
        meminfo_line(&mut out, "HardwareCorrupted", 0);
        meminfo_line(&mut out, "AnonHugePages", 0);
        meminfo_count(&mut out, "HugePages_Total", 0);
        meminfo_count(&mut out, "HugePages_Free", 0);
        meminfo_count(&mut out, "HugePages_Rsvd", 0);
        meminfo_count(&mut out, "HugePages_Surp", 0);
        meminfo_line(&mut out, "Hugepagesize", 2048);
        if k == Kernel::K6 {
            meminfo_line(&mut out, "Hugetlb", 0);
        }
        meminfo_line(&mut out, "DirectMap4k", 90000);
        meminfo_line(&mut out, "DirectMap2M", kb(m.total_mib) - 90000 + 4096);
    }
    out
}

pub fn vmstat(sim: &HostSim) -> String {
    let h = &sim.host;
    let s = &h.swap;
    let m = &h.memory;
    let k = sim.kernel();
    let t = sim.t;
    let c = |rate: f64| sim.counter(rate, t, true);
    let pages = |mib: f64| (mib.max(0.0) * 256.0) as u64;
    let read_kb: f64 = h.disks.iter().map(|d| d.read_mbs * MB / 1024.0).sum();
    let write_kb: f64 = h.disks.iter().map(|d| d.write_mbs * MB / 1024.0).sum();
    let kswapd = if s.pgscan_kswapd_s > 0.0 {
        s.pgscan_kswapd_s
    } else {
        s.out_pages_s * 2.0
    };
    let mut v: Vec<(String, u64)> = vec![
        ("nr_free_pages".into(), pages(m.free_mib)),
        (
            "nr_inactive_anon".into(),
            pages((m.total_mib - m.free_mib - m.cached_mib) * 0.3),
        ),
        (
            "nr_active_anon".into(),
            pages((m.total_mib - m.free_mib - m.cached_mib) * 0.5),
        ),
        ("nr_inactive_file".into(), pages(m.cached_mib * 0.5)),
        ("nr_active_file".into(), pages(m.cached_mib * 0.5)),
        ("nr_unevictable".into(), 0),
        ("nr_mlock".into(), 0),
        (
            "nr_anon_pages".into(),
            pages((m.total_mib - m.free_mib - m.cached_mib) * 0.8),
        ),
        ("nr_mapped".into(), pages(m.cached_mib * 0.1)),
        ("nr_file_pages".into(), pages(m.cached_mib + m.buffers_mib)),
        ("nr_dirty".into(), pages(m.dirty_mib)),
        ("nr_writeback".into(), 0),
        ("nr_shmem".into(), pages(m.shmem_mib)),
    ];
    let mut push = |name: &str, val: u64| v.push((name.to_string(), val));
    if k == Kernel::K6 {
        push("workingset_refault_anon", c(s.in_pages_s));
        push("workingset_refault_file", c(s.major_faults_s * 0.5));
        push("nr_dirtied", c(write_kb / 4.0));
        push("nr_written", c(write_kb / 4.0));
    } else {
        push("nr_dirtied", c(write_kb / 4.0));
        push("nr_written", c(write_kb / 4.0));
    }
    push("pgpgin", c(read_kb + s.in_pages_s * 4.0));
    push("pgpgout", c(write_kb + s.out_pages_s * 4.0));
    push("pswpin", c(s.in_pages_s));
    push("pswpout", c(s.out_pages_s));
    push("pgalloc_normal", c(s.minor_faults_s * 2.0 + read_kb / 4.0));
    push("pgfree", c(s.minor_faults_s * 2.0 + read_kb / 4.0 + 10.0));
    push("pgactivate", c(s.minor_faults_s * 0.1));
    push("pgdeactivate", c(s.out_pages_s));
    push("pgfault", c(s.minor_faults_s + s.major_faults_s));
    push("pgmajfault", c(s.major_faults_s));
    match k {
        Kernel::K3_10 | Kernel::K4_4 => {
            let zone = if k == Kernel::K3_10 {
                "normal"
            } else {
                "dma32"
            };
            push(&format!("pgsteal_kswapd_{zone}"), c(kswapd * 0.2));
            push("pgsteal_kswapd_normal", c(kswapd * 0.7));
            push(
                &format!("pgsteal_direct_{zone}"),
                c(s.pgscan_direct_s * 0.1),
            );
            push("pgsteal_direct_normal", c(s.pgscan_direct_s * 0.6));
            push(&format!("pgscan_kswapd_{zone}"), c(kswapd * 0.25));
            push("pgscan_kswapd_normal", c(kswapd * 0.75));
            push(
                &format!("pgscan_direct_{zone}"),
                c(s.pgscan_direct_s * 0.15),
            );
            push("pgscan_direct_normal", c(s.pgscan_direct_s * 0.85));
            push("pgscan_direct_throttle", 0);
            push("slabs_scanned", c(kswapd * 0.5));
            push("kswapd_inodesteal", 0);
            push("pageoutrun", c(s.out_pages_s / 32.0));
            push("allocstall", c(s.allocstall_s));
            push("pgrotated", c(s.out_pages_s * 0.1));
        }
        Kernel::K6 => {
            push("pgsteal_kswapd", c(kswapd * 0.9));
            push("pgsteal_direct", c(s.pgscan_direct_s * 0.7));
            push("pgscan_kswapd", c(kswapd));
            push("pgscan_direct", c(s.pgscan_direct_s));
            push("pgscan_direct_throttle", 0);
            push("slabs_scanned", c(kswapd * 0.5));
            push("kswapd_inodesteal", 0);
            push("pageoutrun", c(s.out_pages_s / 32.0));
            push("pgrotated", c(s.out_pages_s * 0.1));
            push("allocstall_dma", 0);
            push("allocstall_dma32", c(s.allocstall_s * 0.1));
            push("allocstall_normal", c(s.allocstall_s * 0.9));
            push("allocstall_movable", 0);
            push("allocstall_device", 0);
            push("oom_kill", 0);
        }
    }
    let mut out = String::new();
    for (name, val) in v {
        let _ = writeln!(out, "{name} {val}");
    }
    out
}

pub fn loadavg(sim: &HostSim) -> String {
    let load: f64 = sim
        .procs
        .values()
        .flat_map(|p| p.threads.iter())
        .map(|th| th.cpu_pct.min(100.0))
        .sum::<f64>()
        / 100.0
        + sim.host.procs_blocked as f64;
    let running = sim
        .procs
        .values()
        .flat_map(|p| p.threads.iter())
        .filter(|th| th.cpu_pct >= 50.0)
        .count()
        .max(1);
    let total = sim.thread_count() + 80;
    format!(
        "{:.2} {:.2} {:.2} {}/{} {}\n",
        load,
        load * 0.97,
        load * 0.93,
        running,
        total,
        sim.last_pid()
    )
}

pub fn uptime(sim: &HostSim) -> String {
    let idle: f64 = sim.cores.iter().map(|c| c.idle).sum::<f64>() / HZ;
    format!("{:.2} {:.2}\n", sim.uptime(), idle)
}

pub fn boot_id(sim: &HostSim) -> String {
    if let Some(b) = &sim.host.boot_id {
        return format!("{b}\n");
    }
    let a = mix(sim.seed ^ hash_str(&sim.host.name));
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}\n",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

pub fn net_snmp(sim: &HostSim) -> String {
    let k = sim.kernel();
    let t = sim.t;
    let c = |rate: f64| sim.counter(rate, t, true) as i64;
    let tcp = &sim.host.tcp;
    let (mut in_pps, mut out_pps) = (0.0, 0.0);
    for n in &sim.host.nics {
        if !n.slaves.is_empty() {
            continue;
        }
        let pkt = n.packet_bytes.max(64.0);
        let (rx, tx) = (n.rx_mbs * MB / pkt, n.tx_mbs * MB / pkt);
        in_pps += rx.max(tx / 2.0);
        out_pps += tx.max(rx / 2.0);
    }
    let burst = |f: fn(&crate::model::TcpBurst) -> f64| -> f64 {
        tcp.bursts.iter().map(|b| f(b) * b.window.overlap(t)).sum()
    };
    // counters with bursts: rate x t + burst extra
    let with = |rate: f64, extra: f64| {
        let base = sim.counter(rate, t, true) as f64 + extra;
        let v = base.floor() as u64;
        (if sim.is32() { v & 0xffff_ffff } else { v }) as i64
    };
    let mut out = String::new();
    let mut ip = vec![
        ("Forwarding", 2),
        ("DefaultTTL", 64),
        ("InReceives", c(in_pps)),
        ("InHdrErrors", 0),
        ("InAddrErrors", c(0.01)),
        ("ForwDatagrams", 0),
        ("InUnknownProtos", 0),
        ("InDiscards", 0),
        ("InDelivers", c(in_pps)),
        ("OutRequests", c(out_pps)),
        ("OutDiscards", 0),
        ("OutNoRoutes", 0),
        ("ReasmTimeout", 0),
        ("ReasmReqds", 0),
        ("ReasmOKs", 0),
        ("ReasmFails", 0),
        ("FragOKs", 0),
        ("FragFails", 0),
        ("FragCreates", 0),
    ];
    if k == Kernel::K6 {
        ip.push(("OutTransmits", c(out_pps)));
    }
    header_values(&mut out, "Ip", &ip);
    let mut icmp = vec![
        ("InMsgs", c(0.01)),
        ("InErrors", 0),
        ("InCsumErrors", 0),
        ("InDestUnreachs", c(0.01)),
        ("InTimeExcds", 0),
        ("InParmProbs", 0),
        ("InSrcQuenchs", 0),
        ("InRedirects", 0),
        ("InEchos", 0),
        ("InEchoReps", 0),
        ("InTimestamps", 0),
        ("InTimestampReps", 0),
        ("InAddrMasks", 0),
        ("InAddrMaskReps", 0),
        ("OutMsgs", c(0.01)),
        ("OutErrors", 0),
    ];
    if k == Kernel::K6 {
        icmp.push(("OutRateLimitGlobal", 0));
        icmp.push(("OutRateLimitHost", 0));
    }
    icmp.extend([
        ("OutDestUnreachs", c(0.01)),
        ("OutTimeExcds", 0),
        ("OutParmProbs", 0),
        ("OutSrcQuenchs", 0),
        ("OutRedirects", 0),
        ("OutEchos", 0),
        ("OutEchoReps", 0),
        ("OutTimestamps", 0),
        ("OutTimestampReps", 0),
        ("OutAddrMasks", 0),
        ("OutAddrMaskReps", 0),
    ]);
    header_values(&mut out, "Icmp", &icmp);
    let tcp_pairs = [
        ("RtoAlgorithm", 1),
        ("RtoMin", 200),
        ("RtoMax", 120000),
        ("MaxConn", -1),
        ("ActiveOpens", c(tcp.active_opens_s)),
        ("PassiveOpens", c(tcp.passive_opens_s)),
        ("AttemptFails", c(0.001)),
        (
            "EstabResets",
            with(tcp.estab_resets_s, burst(|b| b.estab_resets_s)),
        ),
        ("CurrEstab", tcp.curr_estab as i64),
        ("InSegs", c(in_pps)),
        ("OutSegs", c(out_pps)),
        ("RetransSegs", with(tcp.retrans_s, burst(|b| b.retrans_s))),
        ("InErrs", 0),
        ("OutRsts", with(tcp.resets_s, burst(|b| b.resets_s))),
        ("InCsumErrors", 0),
    ];
    header_values(&mut out, "Tcp", &tcp_pairs);
    let mut udp = vec![
        ("InDatagrams", c(2.0)),
        ("NoPorts", c(0.05)),
        ("InErrors", 0),
        ("OutDatagrams", c(2.0)),
        ("RcvbufErrors", 0),
        ("SndbufErrors", 0),
        ("InCsumErrors", 0),
    ];
    if k != Kernel::K3_10 {
        udp.push(("IgnoredMulti", c(0.3)));
    }
    if k == Kernel::K6 {
        udp.push(("MemErrors", 0));
    }
    header_values(&mut out, "Udp", &udp);
    let lite: Vec<(&str, i64)> = udp.iter().map(|(n, _)| (*n, 0)).collect();
    header_values(&mut out, "UdpLite", &lite);
    out
}

pub fn net_netstat(sim: &HostSim) -> String {
    let t = sim.t;
    let tcp = &sim.host.tcp;
    let c = |rate: f64| sim.counter(rate, t, true) as i64;
    let with = |rate: f64, f: fn(&crate::model::TcpBurst) -> f64| {
        let extra: f64 = tcp.bursts.iter().map(|b| f(b) * b.window.overlap(t)).sum();
        let v = (sim.counter(rate, t, true) as f64 + extra).floor() as u64;
        (if sim.is32() { v & 0xffff_ffff } else { v }) as i64
    };
    let k = sim.kernel();
    let mut ext: Vec<(&str, i64)> = vec![
        ("SyncookiesSent", 0),
        ("SyncookiesRecv", 0),
        ("SyncookiesFailed", 0),
        ("EmbryonicRsts", 0),
        ("PruneCalled", 0),
        ("RcvPruned", 0),
        ("OfoPruned", 0),
        ("OutOfWindowIcmps", 0),
        ("LockDroppedIcmps", 0),
        ("ArpFilter", 0),
        ("TW", c(0.05)),
        ("TWRecycled", 0),
        ("TWKilled", 0),
    ];
    if k == Kernel::K3_10 {
        ext.push(("PAWSPassive", 0));
    }
    ext.extend([
        ("PAWSActive", 0),
        ("PAWSEstab", 0),
        ("DelayedACKs", c(5.0)),
        ("DelayedACKLocked", 0),
        ("DelayedACKLost", c(0.01)),
        ("ListenOverflows", 0),
        ("ListenDrops", 0),
    ]);
    if k != Kernel::K6 {
        ext.push(("TCPPrequeued", 0));
        ext.push(("TCPDirectCopyFromBacklog", 0));
    }
    ext.extend([
        ("TCPHPHits", c(500.0)),
        ("TCPPureAcks", c(100.0)),
        ("TCPHPAcks", c(100.0)),
        ("TCPRenoRecovery", 0),
        (
            "TCPSackRecovery",
            with(tcp.retrans_s * 0.2, |b| b.retrans_s * 0.2),
        ),
        ("TCPSACKReneging", 0),
        ("TCPSACKReorder", 0),
        ("TCPRenoReorder", 0),
        ("TCPTSReorder", 0),
        ("TCPFullUndo", 0),
        ("TCPPartialUndo", 0),
        ("TCPDSACKUndo", 0),
        ("TCPLossUndo", 0),
        (
            "TCPLostRetransmit",
            with(tcp.retrans_s * 0.05, |b| b.retrans_s * 0.05),
        ),
        ("TCPRenoFailures", 0),
        ("TCPSackFailures", 0),
        ("TCPLossFailures", 0),
        (
            "TCPFastRetrans",
            with(tcp.retrans_s * 0.7, |b| b.retrans_s * 0.7),
        ),
        (
            "TCPSlowStartRetrans",
            with(tcp.retrans_s * 0.1, |b| b.retrans_s * 0.1),
        ),
        ("TCPTimeouts", with(tcp.timeouts_s, |b| b.timeouts_s)),
        ("TCPLossProbes", c(0.1)),
        ("TCPLossProbeRecovery", 0),
        ("TCPRenoRecoveryFail", 0),
        ("TCPSackRecoveryFail", 0),
        ("TCPRcvCollapsed", 0),
        ("TCPDSACKOldSent", 0),
        ("TCPDSACKOfoSent", 0),
        ("TCPDSACKRecv", 0),
        ("TCPDSACKOfoRecv", 0),
        (
            "TCPAbortOnData",
            with(tcp.resets_s * 0.5, |b| b.resets_s * 0.5),
        ),
        (
            "TCPAbortOnClose",
            with(tcp.resets_s * 0.3, |b| b.resets_s * 0.3),
        ),
        ("TCPAbortOnMemory", 0),
        (
            "TCPAbortOnTimeout",
            with(tcp.timeouts_s * 0.1, |b| b.timeouts_s * 0.1),
        ),
        ("TCPAbortOnLinger", 0),
        ("TCPAbortFailed", 0),
        ("TCPMemoryPressures", 0),
        ("TCPSACKDiscard", 0),
        ("TCPDSACKIgnoredOld", 0),
        ("TCPDSACKIgnoredNoUndo", 0),
        ("TCPSpuriousRTOs", 0),
        ("TCPMD5NotFound", 0),
        ("TCPMD5Unexpected", 0),
        ("TCPSackShifted", 0),
        ("TCPSackMerged", 0),
        ("TCPSackShiftFallback", 0),
        ("TCPBacklogDrop", 0),
        ("TCPMinTTLDrop", 0),
        ("TCPDeferAcceptDrop", 0),
        ("IPReversePathFilter", 0),
        ("TCPTimeWaitOverflow", 0),
        ("TCPReqQFullDoCookies", 0),
        ("TCPReqQFullDrop", 0),
        ("TCPRetransFail", 0),
        ("TCPRcvCoalesce", c(50.0)),
        ("TCPOFOQueue", 0),
        ("TCPOFODrop", 0),
        ("TCPOFOMerge", 0),
        ("TCPChallengeACK", 0),
        ("TCPSYNChallenge", 0),
        ("TCPFastOpenActive", 0),
        ("TCPSpuriousRtxHostQueues", 0),
        ("BusyPollRxPackets", 0),
        ("TCPAutoCorking", c(3.0)),
        ("TCPFromZeroWindowAdv", 0),
        ("TCPToZeroWindowAdv", 0),
        ("TCPWantZeroWindowAdv", 0),
        (
            "TCPSynRetrans",
            with(tcp.timeouts_s * 0.2, |b| b.timeouts_s * 0.2),
        ),
        ("TCPOrigDataSent", c(1000.0)),
    ]);
    let mut out = String::new();
    header_values(&mut out, "TcpExt", &ext);
    net_netstat_ipext(sim, &mut out);
    out
}

/// The IpExt lines of /proc/net/netstat: the host's bytes in and out over its NICs (bond
/// members counted once, by their bond).
fn net_netstat_ipext(sim: &HostSim, out: &mut String) {
    let t = sim.t;
    let c = |rate: f64| sim.counter(rate, t, true) as i64;
    let (mut rx, mut tx) = (0.0, 0.0);
    for n in &sim.host.nics {
        if n.slaves.is_empty() {
            rx += n.rx_mbs * MB;
            tx += n.tx_mbs * MB;
        }
    }
    let ipext = [
        ("InNoRoutes", 0),
        ("InTruncatedPkts", 0),
        ("InMcastPkts", c(0.2)),
        ("OutMcastPkts", c(0.05)),
        ("InBcastPkts", c(0.3)),
        ("OutBcastPkts", 0),
        ("InOctets", sim.counter(rx, t, false) as i64),
        ("OutOctets", sim.counter(tx, t, false) as i64),
        ("InMcastOctets", c(30.0)),
        ("OutMcastOctets", c(8.0)),
        ("InBcastOctets", c(60.0)),
        ("OutBcastOctets", 0),
        ("InCsumErrors", 0),
        ("InNoECTPkts", c(rx / 1448.0)),
        ("InECT1Pkts", 0),
        ("InECT0Pkts", 0),
        ("InCEPkts", 0),
    ];
    header_values(out, "IpExt", &ipext);
}

pub fn cpuinfo(sim: &HostSim) -> String {
    let h = &sim.host;
    let mut out = String::new();
    if h.kernel == Kernel::K3_10 {
        let model = h
            .cpu_model
            .clone()
            .unwrap_or_else(|| "ARMv7 Processor rev 1 (v7l)".into());
        for i in 0..h.cores {
            let _ = write!(
                out,
                "processor\t: {i}\nmodel name\t: {model}\nBogoMIPS\t: 1594.16\nFeatures\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpd32 \nCPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x4\nCPU part\t: 0xc09\nCPU revision\t: 1\n\n"
            );
        }
        out.push_str("Hardware\t: Marvell Armada 380/385 (Device Tree)\nRevision\t: 0000\nSerial\t\t: 0000000000000000\n");
    } else {
        let model = h
            .cpu_model
            .clone()
            .unwrap_or_else(|| "Intel(R) Atom(TM) CPU  C2538  @ 2.40GHz".into());
        for i in 0..h.cores {
            let _ = write!(
                out,
                "processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 77\nmodel name\t: {model}\nstepping\t: 8\ncpu MHz\t\t: 2400.000\ncache size\t: 1024 KB\nphysical id\t: 0\nsiblings\t: {n}\ncore id\t\t: {i}\ncpu cores\t: {n}\napicid\t\t: {a}\nfpu\t\t: yes\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx rdtscp lm constant_tsc sse3 ssse3 cx16 sse4_1 sse4_2 popcnt aes rdrand\nbogomips\t: 4800.00\nclflush size\t: 64\ncache_alignment\t: 64\naddress sizes\t: 36 bits physical, 48 bits virtual\npower management:\n\n",
                n = h.cores,
                a = i * 2
            );
        }
    }
    out
}

pub fn version(sim: &HostSim) -> String {
    let k = sim.kernel();
    match k {
        Kernel::K3_10 => format!(
            "Linux version {} (build@wdbuild) (gcc version 4.6.4 (Linaro GCC branch-4.6.4) ) #1 SMP Thu Jan 12 10:21:40 CST 2017\n",
            k.release()
        ),
        Kernel::K4_4 => format!(
            "Linux version {} (root@build2) (gcc version 4.9.3 20150311 (prerelease) (crosstool-NG 1.20.0) ) #42962 SMP Tue Oct 18 15:07:03 CST 2022\n",
            k.release()
        ),
        Kernel::K6 => format!(
            "Linux version {} (buildd@lcy02-amd64-048) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #49-Ubuntu SMP PREEMPT_DYNAMIC Wed Oct 30 10:10:34 UTC 2024\n",
            k.release()
        ),
    }
}

pub fn mdstat(sim: &HostSim) -> String {
    let h = &sim.host;
    let mut levels: Vec<&str> = h.md.iter().map(|m| m.level.as_str()).collect();
    levels.sort();
    levels.dedup();
    let mut out = String::from("Personalities :");
    for l in levels {
        let _ = write!(out, " [{l}]");
    }
    out.push_str(" \n");
    let devs = block_devices(sim);
    for m in h.md.iter().rev() {
        let _ = write!(out, "{} : active {}", m.name, m.level);
        for (i, mem) in m.members.iter().enumerate() {
            let _ = write!(out, " {mem}[{i}]");
        }
        out.push('\n');
        let blocks = devs
            .iter()
            .find(|d| d.name == m.name)
            .map(|d| d.sectors / 2)
            .unwrap_or(0);
        let n = m.members.len();
        let _ = writeln!(
            out,
            "      {blocks} blocks super 1.2 [{n}/{n}] [{}]",
            "U".repeat(n)
        );
        out.push_str("      \n");
    }
    out.push_str("unused devices: <none>\n");
    out
}

/// Every file under the proc root except the per-process directories (path, contents).
pub(crate) fn proc_system_files(sim: &HostSim) -> Vec<(String, String)> {
    let h = &sim.host;
    let mut v = vec![
        ("stat".to_string(), proc_stat(sim)),
        ("meminfo".into(), meminfo(sim)),
        ("vmstat".into(), vmstat(sim)),
        ("diskstats".into(), diskstats(sim)),
        ("net/dev".into(), net_dev(sim)),
        ("net/snmp".into(), net_snmp(sim)),
        ("net/netstat".into(), net_netstat(sim)),
        ("loadavg".into(), loadavg(sim)),
        ("uptime".into(), uptime(sim)),
        ("sys/kernel/random/boot_id".into(), boot_id(sim)),
        (
            "sys/kernel/osrelease".into(),
            format!("{}\n", h.kernel.release()),
        ),
        ("sys/kernel/hostname".into(), format!("{}\n", h.name)),
        ("sys/kernel/pid_max".into(), format!("{}\n", h.pid_max)),
        ("version".into(), version(sim)),
        ("cpuinfo".into(), cpuinfo(sim)),
    ];
    if !h.md.is_empty() {
        v.push(("mdstat".into(), mdstat(sim)));
    }
    v
}

/// Every entry of the sys root.
pub(crate) fn sys_entries(sim: &HostSim) -> Vec<SysEntry> {
    let mut v = Vec::new();
    let n = sim.host.cores;
    let range = if n == 1 {
        "0\n".to_string()
    } else {
        format!("0-{}\n", n - 1)
    };
    for f in ["online", "possible", "present"] {
        v.push(SysEntry::File(
            format!("devices/system/cpu/{f}"),
            range.clone(),
        ));
    }
    for b in block_devices(sim) {
        let dir = match &b.parent {
            Some((disk, _)) => format!("block/{disk}/{}", b.name),
            None => format!("block/{}", b.name),
        };
        v.push(SysEntry::File(
            format!("{dir}/size"),
            format!("{}\n", b.sectors),
        ));
        v.push(SysEntry::File(
            format!("{dir}/dev"),
            format!("{}:{}\n", b.major, b.minor),
        ));
        v.push(SysEntry::File(
            format!("{dir}/stat"),
            sys_block_stat(sim, &b.rates),
        ));
        v.push(SysEntry::Symlink(
            format!("class/block/{}", b.name),
            format!("../../{dir}"),
        ));
        match &b.parent {
            Some((_, p)) => {
                v.push(SysEntry::File(format!("{dir}/partition"), format!("{p}\n")));
                v.push(SysEntry::File(
                    format!("{dir}/start"),
                    format!("{}\n", 2048 + (*p as u64 - 1) * 4194304),
                ));
            }
            None => {
                v.push(SysEntry::File(
                    format!("{dir}/queue/rotational"),
                    format!("{}\n", b.rotational as u8),
                ));
                v.push(SysEntry::File(format!("{dir}/removable"), "0\n".into()));
                v.push(SysEntry::File(format!("{dir}/ro"), "0\n".into()));
            }
        }
    }
    for m in &sim.host.md {
        let dir = format!("block/{}", m.name);
        v.push(SysEntry::File(
            format!("{dir}/md/level"),
            format!("{}\n", m.level),
        ));
        v.push(SysEntry::File(
            format!("{dir}/md/raid_disks"),
            format!("{}\n", m.members.len()),
        ));
        v.push(SysEntry::File(
            format!("{dir}/md/array_state"),
            "clean\n".into(),
        ));
        for mem in &m.members {
            let target = match split_partition(&sim.host, mem) {
                Some((i, Some(_))) => format!("../../{}/{mem}", sim.host.disks[i].name),
                _ => format!("../../{mem}"),
            };
            v.push(SysEntry::Symlink(format!("{dir}/slaves/{mem}"), target));
            let holder_dir = match split_partition(&sim.host, mem) {
                Some((i, Some(_))) => format!("block/{}/{mem}", sim.host.disks[i].name),
                _ => format!("block/{mem}"),
            };
            let up = "../".repeat(holder_dir.matches('/').count() + 1);
            v.push(SysEntry::Symlink(
                format!("{holder_dir}/holders/{}", m.name),
                format!("{up}{}", m.name),
            ));
        }
    }
    v.extend(sys_net(sim));
    v
}

// ----- per-process files ------------------------------------------------------------------------

fn thread_state(th: &LiveThread, p: &LiveProc, k: Kernel) -> char {
    if p.blkio_pct >= 50.0 {
        'D'
    } else if th.cpu_pct >= 50.0 {
        'R'
    } else if p.kernel_thread && th.cpu_pct == 0.0 && k == Kernel::K6 {
        'I'
    } else {
        'S'
    }
}

fn state_name(c: char) -> &'static str {
    match c {
        'R' => "R (running)",
        'D' => "D (disk sleep)",
        'I' => "I (idle)",
        _ => "S (sleeping)",
    }
}

/// /proc/PID/stat (`whole`: the process, summing its threads) or task/TID/stat (one thread).
pub fn pid_stat(sim: &HostSim, p: &LiveProc, th: &LiveThread, whole: bool) -> String {
    let k = sim.kernel();
    let age = (sim.t - p.born_t).max(0.0);
    let is32 = k == Kernel::K3_10;
    let (utime, stime) = if whole {
        (p.utime(), p.stime())
    } else {
        (th.utime, th.stime)
    };
    let leader = th.tid == p.pid;
    let minflt = if whole || leader {
        (p.minor_faults_s * age) as u64 + 120
    } else {
        0
    };
    let majflt = if whole || leader {
        (p.major_faults_s * age) as u64 + 2
    } else {
        0
    };
    let starttime = ((sim.host.uptime_s.max(60.0) + p.born_t).max(0.0) * HZ) as u64;
    let kt = p.kernel_thread;
    let page = 4096u64;
    let vsize = if kt {
        0
    } else {
        (p.vsize_mib * 1048576.0) as u64
    };
    let rss = if kt {
        0
    } else {
        (p.rss_mib * 1048576.0) as u64 / page
    };
    let rsslim: u64 = if is32 {
        4294967295
    } else {
        18446744073709551615
    };
    let salt = (p.pid as u64) << 12;
    let (code, stack) = if kt {
        (0u64, 0u64)
    } else if is32 {
        (0x8000 + (salt & 0xffff), 0xbe800000 + (salt & 0xfff00))
    } else {
        (0x55d4_a2e0_0000 + salt, 0x7ffd_1234_0000 + salt)
    };
    let (end_code, start_data, end_data, start_brk, arg_start, arg_end, env_start, env_end) = if kt
    {
        (0, 0, 0, 0, 0, 0, 0, 0)
    } else {
        let args: u64 = p.cmdline.iter().map(|a| a.len() as u64 + 1).sum();
        (
            code + 0x2_1000,
            code + 0x4_2000,
            code + 0x4_3800,
            code + 0x80_0000,
            stack + 0x1000,
            stack + 0x1000 + args,
            stack + 0x1000 + args,
            stack + 0x1fe0,
        )
    };
    let state = if whole {
        let states: Vec<char> = p.threads.iter().map(|t| thread_state(t, p, k)).collect();
        if states.contains(&'R') {
            'R'
        } else if states.contains(&'D') {
            'D'
        } else {
            states[0]
        }
    } else {
        thread_state(th, p, k)
    };
    let blkio = (p.blkio_pct / 100.0 * HZ * age) as u64;
    let flags: u64 = if kt { 69238880 } else { 4194560 };
    let priority = 20 + p.nice;
    let exit_signal: i64 = if leader { 17 } else { -1 };
    let fields: Vec<String> = vec![
        th.tid.to_string(),
        format!("({})", kernel_comm(&th.comm)),
        state.to_string(),
        p.ppid.to_string(),
        p.pid.to_string(),
        p.pid.to_string(),
        "0".into(),
        "-1".into(),
        flags.to_string(),
        minflt.to_string(),
        "0".into(),
        majflt.to_string(),
        "0".into(),
        (utime.floor() as u64).to_string(),
        (stime.floor() as u64).to_string(),
        "0".into(),
        "0".into(),
        priority.to_string(),
        p.nice.to_string(),
        p.threads.len().to_string(),
        "0".into(),
        starttime.to_string(),
        vsize.to_string(),
        rss.to_string(),
        rsslim.to_string(),
        code.to_string(),
        end_code.to_string(),
        stack.to_string(),
        "0".into(),
        "0".into(),
        "0".into(),
        "0".into(),
        if kt { "2147483647" } else { "4096" }.into(),
        if kt { "0" } else { "81923" }.into(),
        "0".into(),
        "0".into(),
        "0".into(),
        exit_signal.to_string(),
        th.core.to_string(),
        "0".into(),
        "0".into(),
        blkio.to_string(),
        "0".into(),
        "0".into(),
        start_data.to_string(),
        end_data.to_string(),
        start_brk.to_string(),
        arg_start.to_string(),
        arg_end.to_string(),
        env_start.to_string(),
        env_end.to_string(),
        "0".into(),
    ];
    debug_assert_eq!(fields.len(), 52);
    let n = sim.host.pid_stat_fields.unwrap_or(52).clamp(3, 52);
    let mut out = fields[..n].join(" ");
    out.push('\n');
    out
}

pub(crate) fn pid_status(sim: &HostSim, p: &LiveProc) -> String {
    let k = sim.kernel();
    let main = &p.threads[0];
    let age = (sim.t - p.born_t).max(0.0);
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", kernel_comm(&p.comm));
    if k == Kernel::K6 {
        let _ = writeln!(out, "Umask:\t0022");
    }
    let _ = writeln!(out, "State:\t{}", state_name(thread_state(main, p, k)));
    let _ = writeln!(out, "Tgid:\t{}", p.pid);
    if k != Kernel::K3_10 {
        let _ = writeln!(out, "Ngid:\t0");
    }
    let _ = writeln!(out, "Pid:\t{}", p.pid);
    let _ = writeln!(out, "PPid:\t{}", p.ppid);
    let _ = writeln!(out, "TracerPid:\t0");
    let u = p.uid;
    let _ = writeln!(out, "Uid:\t{u}\t{u}\t{u}\t{u}");
    let _ = writeln!(out, "Gid:\t{u}\t{u}\t{u}\t{u}");
    let _ = writeln!(out, "FDSize:\t64");
    let _ = writeln!(out, "Groups:\t");
    if k != Kernel::K3_10 {
        let _ = writeln!(out, "NStgid:\t{}", p.pid);
        let _ = writeln!(out, "NSpid:\t{}", p.pid);
        let _ = writeln!(out, "NSpgid:\t{}", p.pid);
        let _ = writeln!(out, "NSsid:\t{}", p.pid);
    }
    if !p.kernel_thread {
        let vm = |out: &mut String, name: &str, kb: u64| {
            let _ = writeln!(out, "{name}:\t{kb:>8} kB");
        };
        let vs = (p.vsize_mib * 1024.0) as u64;
        let rs = (p.rss_mib * 1024.0) as u64;
        vm(&mut out, "VmPeak", vs + 1024);
        vm(&mut out, "VmSize", vs);
        vm(&mut out, "VmLck", 0);
        vm(&mut out, "VmPin", 0);
        vm(&mut out, "VmHWM", rs + 256);
        vm(&mut out, "VmRSS", rs);
        if k == Kernel::K6 {
            vm(&mut out, "RssAnon", rs * 7 / 10);
            vm(&mut out, "RssFile", rs * 3 / 10);
            vm(&mut out, "RssShmem", 0);
        }
        vm(&mut out, "VmData", vs / 3);
        vm(&mut out, "VmStk", 132);
        vm(&mut out, "VmExe", 600);
        vm(&mut out, "VmLib", 4000);
        vm(&mut out, "VmPTE", 60);
        vm(&mut out, "VmSwap", 0);
    }
    let _ = writeln!(out, "Threads:\t{}", p.threads.len());
    let _ = writeln!(out, "SigQ:\t0/7752");
    let _ = writeln!(
        out,
        "Cpus_allowed_list:\t0-{}",
        sim.host.cores.saturating_sub(1)
    );
    // Whole seconds only, so an idle process's files change once a second, not every tick.
    let _ = writeln!(out, "voluntary_ctxt_switches:\t{}", age.floor() as u64 * 20);
    let _ = writeln!(
        out,
        "nonvoluntary_ctxt_switches:\t{}",
        (age * p.cpu_pct() / 10.0) as u64
    );
    out
}

pub fn schedstat(th: &LiveThread) -> String {
    let run_ns = ((th.utime + th.stime) * 1e7) as u64;
    let wait_ns = (th.delay_s * 1e9) as u64;
    let slices = run_ns / 3_000_000 + (th.delay_s * 10.0) as u64 + 1;
    format!("{run_ns} {wait_ns} {slices}\n")
}

pub fn cmdline(p: &LiveProc) -> Vec<u8> {
    let mut v = Vec::new();
    for a in &p.cmdline {
        v.extend_from_slice(a.as_bytes());
        v.push(0);
    }
    v
}

/// Files of one process directory, relative to /proc/PID (e.g. "stat", "task/812/comm").
pub fn pid_files(sim: &HostSim, p: &LiveProc) -> Vec<(String, Vec<u8>)> {
    let sched = sim.host.has_schedstat();
    let main = &p.threads[0];
    let mut v = vec![
        (
            "stat".to_string(),
            pid_stat(sim, p, main, true).into_bytes(),
        ),
        ("status".into(), pid_status(sim, p).into_bytes()),
        ("cmdline".into(), cmdline(p)),
        (
            "comm".into(),
            format!("{}\n", kernel_comm(&p.comm)).into_bytes(),
        ),
    ];
    if sched {
        // /proc/PID/schedstat is the leader thread's, not the sum.
        v.push(("schedstat".into(), schedstat(main).into_bytes()));
    }
    for th in &p.threads {
        let d = format!("task/{}", th.tid);
        v.push((
            format!("{d}/stat"),
            pid_stat(sim, p, th, false).into_bytes(),
        ));
        v.push((
            format!("{d}/comm"),
            format!("{}\n", kernel_comm(&th.comm)).into_bytes(),
        ));
        if sched {
            v.push((format!("{d}/schedstat"), schedstat(th).into_bytes()));
        }
    }
    v
}
