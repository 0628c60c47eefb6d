//! Block devices: /proc/diskstats, /sys/block/*/stat and the sizes, md arrays and /proc/mdstat.

use super::helpers::*;
use crate::model::{Disk, Kernel};
use crate::sim::{HostSim, partition_name, split_partition};
use std::fmt::Write as _;

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
