//! Text of every generated file, in the kernel flavour's exact format. Pure: state in, text out.
//!
//! Formats follow the kernel sources of each flavour (fs/proc/stat.c, fs/proc/array.c,
//! block/genhd.c, net/core/net-procfs.c, net/ipv4/proc.c, net/core/net-sysfs.c) and
//! Documentation/filesystems/proc.txt, Documentation/iostats.txt.

use crate::model::Kernel;
use crate::sim::{HZ, HostSim, hash_str, mix, split_partition};
use std::fmt::Write as _;

mod block;
mod helpers;
mod net;
mod pid;
mod system;

pub use block::*;
pub use helpers::{SysEntry, kernel_comm};
pub use net::*;
pub use pid::*;
pub use system::*;

// ----- block devices ----------------------------------------------------------------------------

pub fn loadavg(sim: &HostSim) -> String {
    let load: f64 = sim
        .procs
        .values()
        .flat_map(|p| p.threads.iter())
        .map(|th| th.cpu_pct.min(100.0))
        .sum::<f64>()
        / 100.0
        + sim.host.procs_blocked as f64;
    let running = system::running_threads(sim);
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
