//! System-wide counters: /proc/stat, /proc/meminfo and /proc/vmstat.

use super::helpers::*;
use crate::model::Kernel;
use crate::sim::HostSim;
use std::fmt::Write as _;

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
    let running = running_threads(sim);
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

/// Threads counted as running now (at least half a core busy; the kernel never reports fewer
/// than the reader itself): /proc/stat's `procs_running` and /proc/loadavg's running field.
pub(super) fn running_threads(sim: &HostSim) -> usize {
    sim.procs
        .values()
        .flat_map(|p| p.threads.iter())
        .filter(|th| th.cpu_pct >= 50.0)
        .count()
        .max(1)
}
