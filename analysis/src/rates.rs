//! Per-sample rates: one agent's `Hello` (inventory, clock ticks) plus one `Sample` in, figures
//! out — CPU busy per core, a process's and its hottest thread's share of a core, iostat -x
//! figures of a disk, a NIC's rate against its link speed, memory and swap; and the names of
//! events. The time series of [`crate::series`] and the collector's live views (`watch`,
//! exporters) both use these, so each formula exists once. Entries flagged `RESET` have
//! unknown deltas and yield `None`.

use nasprobe_proto::{CpuTicks, DiskSample, Event, Hello, NicSample, ProcSample, Sample, flags};

/// Busy fraction (0..1) of one CPU entry: everything but idle and iowait.
pub fn cpu_busy(t: &CpuTicks) -> Option<f64> {
    if t.flags & flags::RESET != 0 {
        return None;
    }
    let total = u64::from(t.user)
        + u64::from(t.nice)
        + u64::from(t.system)
        + u64::from(t.idle)
        + u64::from(t.iowait)
        + u64::from(t.irq)
        + u64::from(t.softirq)
        + u64::from(t.steal);
    if total == 0 {
        return None;
    }
    let idle = u64::from(t.idle) + u64::from(t.iowait);
    Some((total - idle) as f64 / total as f64)
}

/// iowait fraction (0..1) of one CPU entry.
pub fn cpu_iowait(t: &CpuTicks) -> Option<f64> {
    cpu_busy(t)?;
    let total = t.user as f64
        + t.nice as f64
        + t.system as f64
        + t.idle as f64
        + t.iowait as f64
        + t.irq as f64
        + t.softirq as f64
        + t.steal as f64;
    Some(t.iowait as f64 / total)
}

/// Interval length in seconds (never zero).
pub fn interval_s(s: &Sample) -> f64 {
    (f64::from(s.interval_us) / 1e6).max(1e-3)
}

/// Ticks in the interval of one fully used core.
fn core_ticks(h: &Hello, s: &Sample) -> f64 {
    interval_s(s) * f64::from(h.clock_ticks_per_sec.max(1))
}

/// A process's CPU in the interval as a fraction of one core (may exceed 1 for threaded ones).
pub fn proc_cpu(h: &Hello, s: &Sample, p: &ProcSample) -> f64 {
    f64::from(p.utime.saturating_add(p.stime)) / core_ticks(h, s)
}

/// The busiest thread of the sample: (process name, thread name, tid, fraction of one core).
#[derive(Debug, Clone, PartialEq)]
pub struct HotThread {
    pub process: String,
    pub pid: u32,
    pub thread: String,
    pub tid: u32,
    pub core_fraction: f64,
}

pub fn hottest_thread(h: &Hello, s: &Sample) -> Option<HotThread> {
    s.top
        .iter()
        .filter_map(|p| {
            let t = p.hottest_thread.as_ref()?;
            Some(HotThread {
                process: p.comm.to_string(),
                pid: p.pid,
                thread: t
                    .comm
                    .as_ref()
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| p.comm.to_string()),
                tid: t.tid,
                core_fraction: f64::from(t.ticks) / core_ticks(h, s),
            })
        })
        .max_by(|a, b| a.core_fraction.total_cmp(&b.core_fraction))
}

/// iostat -x figures of one disk in one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskRate {
    pub name: String,
    pub is_md: bool,
    /// Busy time / interval, 0..1.
    pub util: f64,
    /// Average time per completed request, ms (None without requests).
    pub await_ms: Option<f64>,
    /// Average queue size (weighted busy time / interval).
    pub queue: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub iops: f64,
}

pub fn disk_rate(h: &Hello, s: &Sample, d: &DiskSample) -> Option<DiskRate> {
    if d.flags & flags::RESET != 0 {
        return None;
    }
    let info = h.disks.get(usize::from(d.disk));
    let secs = interval_s(s);
    let ms = secs * 1000.0;
    let ios = u64::from(d.reads) + u64::from(d.writes);
    Some(DiskRate {
        name: info
            .map(|i| i.name.to_string())
            .unwrap_or_else(|| format!("disk#{}", d.disk)),
        is_md: info.is_some_and(|i| i.is_md),
        util: (f64::from(d.io_ms) / ms).min(1.0),
        await_ms: (ios > 0).then(|| (f64::from(d.read_ms) + f64::from(d.write_ms)) / ios as f64),
        queue: f64::from(d.weighted_ms) / ms,
        read_mb_s: d.sectors_read as f64 * 512.0 / 1e6 / secs,
        write_mb_s: d.sectors_written as f64 * 512.0 / 1e6 / secs,
        iops: ios as f64 / secs,
    })
}

/// Throughput of one NIC in one interval against its link speed.
#[derive(Debug, Clone, PartialEq)]
pub struct NicRate {
    pub name: String,
    pub up: bool,
    pub speed_mbit: u32,
    pub rx_mb_s: f64,
    pub tx_mb_s: f64,
    /// Full duplex: max(rx, tx) / speed; half: (rx + tx) / speed. None when speed unknown.
    pub util: Option<f64>,
    pub errors: u64,
    pub drops: u64,
}

pub fn nic_rate(h: &Hello, s: &Sample, n: &NicSample) -> Option<NicRate> {
    if n.flags & flags::RESET != 0 {
        return None;
    }
    let secs = interval_s(s);
    let rx = n.rx_bytes as f64 / 1e6 / secs;
    let tx = n.tx_bytes as f64 / 1e6 / secs;
    let speed_mb_s = f64::from(n.speed_mbit) / 8.0;
    let full = nic_full_duplex(n);
    Some(NicRate {
        name: h
            .nics
            .get(usize::from(n.nic))
            .map(|i| i.name.to_string())
            .unwrap_or_else(|| format!("nic#{}", n.nic)),
        up: n.flags & flags::LINK_UP != 0,
        speed_mbit: n.speed_mbit,
        rx_mb_s: rx,
        tx_mb_s: tx,
        util: (n.speed_mbit > 0).then(|| {
            if full {
                rx.max(tx) / speed_mb_s
            } else {
                (rx + tx) / speed_mb_s
            }
        }),
        errors: u64::from(n.rx_errors) + u64::from(n.tx_errors),
        drops: u64::from(n.rx_dropped) + u64::from(n.tx_dropped),
    })
}

/// Full duplex, or duplex unknown (judged as full: max(rx, tx) against the speed).
pub fn nic_full_duplex(n: &NicSample) -> bool {
    n.flags & flags::FULL_DUPLEX != 0 || n.flags & flags::DUPLEX_UNKNOWN != 0
}

/// Memory and swap in one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct MemRate {
    pub total_mib: f64,
    pub used_mib: f64,
    pub available_mib: f64,
    pub swap_total_mib: f64,
    pub swap_used_mib: f64,
    /// Pages swapped in + out per second.
    pub swap_pages_s: f64,
}

pub fn mem_rate(s: &Sample) -> Option<MemRate> {
    let m = s.memory?;
    let mib = |k: u64| k as f64 / 1024.0;
    Some(MemRate {
        total_mib: mib(m.total_kib),
        used_mib: mib(m.total_kib.saturating_sub(m.available_kib)),
        available_mib: mib(m.available_kib),
        swap_total_mib: mib(m.swap_total_kib),
        swap_used_mib: mib(m.swap_total_kib.saturating_sub(m.swap_free_kib)),
        swap_pages_s: s
            .vm
            .map(|v| f64::from(v.swap_in_pages + v.swap_out_pages) / interval_s(s))
            .unwrap_or(0.0),
    })
}

/// The `kind` of an event as stored and reported.
pub fn event_kind(e: &Event) -> &'static str {
    match e {
        Event::ProcessStart(_) => "process_start",
        Event::ProcessExit(_) => "process_exit",
        Event::LinkChange(_) => "link_change",
        Event::AgentStart(_) => "agent_start",
        Event::DeviceAdded(_) => "device_added",
    }
}

/// (pid, name) of an event: the process, the NIC or the device.
pub fn event_subject(e: &Event) -> (Option<u32>, String) {
    match e {
        Event::ProcessStart(p) => (Some(p.pid), p.comm.to_string()),
        Event::ProcessExit(x) => (Some(x.process.pid), x.process.comm.to_string()),
        Event::LinkChange(l) => (None, l.nic.to_string()),
        Event::AgentStart(a) => (None, format!("agent {}", a.agent_version)),
        Event::DeviceAdded(nasprobe_proto::DeviceAdded::Disk(d))
        | Event::DeviceAdded(nasprobe_proto::DeviceAdded::Nic(d)) => (None, d.to_string()),
    }
}

/// One line describing an event, for views.
pub fn event_text(e: &Event) -> String {
    match e {
        Event::ProcessStart(p) => format!("start {} [{}] {}", p.comm, p.pid, p.cmdline),
        Event::ProcessExit(x) => format!(
            "exit {} [{}] after {:.0}s, {} ticks",
            x.process.comm,
            x.process.pid,
            x.lifetime_ms as f64 / 1000.0,
            x.cpu_ticks
        ),
        Event::LinkChange(l) => format!(
            "link {} {} {} Mbit/s mtu {}",
            l.nic,
            if l.up { "up" } else { "down" },
            l.speed_mbit,
            l.mtu
        ),
        Event::AgentStart(a) => format!(
            "agent {} started (instance {:x}, {} ms)",
            a.agent_version, a.instance_id, a.interval_ms
        ),
        Event::DeviceAdded(d) => format!("device added {d:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_disk_rates() {
        let t = CpuTicks {
            user: 30,
            system: 20,
            idle: 40,
            iowait: 10,
            ..Default::default()
        };
        assert!((cpu_busy(&t).unwrap() - 0.5).abs() < 1e-9);
        assert!((cpu_iowait(&t).unwrap() - 0.1).abs() < 1e-9);
        let r = CpuTicks {
            flags: flags::RESET,
            ..t
        };
        assert_eq!(cpu_busy(&r), None);
    }
}
