//! Per-sample rates with names: the figures of [`nasprobe_formulas`] (the one place each
//! formula is written, shared with the agent) joined with the names of the `Hello`'s
//! inventory, plus memory and the texts of events, for the collector's live views (`watch`,
//! exporters). Entries flagged `RESET` have unknown deltas and yield `None`.

use nasprobe_formulas as f;
use nasprobe_proto::{DiskSample, Event, Hello, NicSample, ProcSample, Sample};

pub use nasprobe_formulas::{cpu_busy, cpu_iowait, interval_s};

/// A process's CPU in the interval as a fraction of one core (may exceed 1 for threaded ones).
pub fn proc_cpu(h: &Hello, s: &Sample, p: &ProcSample) -> f64 {
    f::proc_cores(h.clock_ticks_per_sec, s, p)
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
    f::hottest_thread(h.clock_ticks_per_sec, s).map(|t| HotThread {
        process: t.process.to_string(),
        pid: t.pid,
        thread: t.thread.to_string(),
        tid: t.tid,
        core_fraction: t.cores,
    })
}

/// iostat -x figures of one disk in one interval, with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskRate {
    pub name: String,
    pub is_md: bool,
    pub figures: f::DiskFigures,
}

pub fn disk_rate(h: &Hello, s: &Sample, d: &DiskSample) -> Option<DiskRate> {
    let info = h.disks.get(usize::from(d.disk));
    Some(DiskRate {
        figures: f::disk(s, d)?,
        name: info
            .map(|i| i.name.to_string())
            .unwrap_or_else(|| format!("disk#{}", d.disk)),
        is_md: info.is_some_and(|i| i.is_md),
    })
}

/// Throughput of one NIC in one interval against its link speed, with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct NicRate {
    pub name: String,
    pub speed_mbit: u32,
    pub figures: f::NicFigures,
}

pub fn nic_rate(h: &Hello, s: &Sample, n: &NicSample) -> Option<NicRate> {
    Some(NicRate {
        figures: f::nic(s, n)?,
        name: h
            .nics
            .get(usize::from(n.nic))
            .map(|i| i.name.to_string())
            .unwrap_or_else(|| format!("nic#{}", n.nic)),
        speed_mbit: n.speed_mbit,
    })
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
        swap_pages_s: if s.vm.is_some() {
            f::per_s(s, f::swap_pages(s) as f64)
        } else {
            0.0
        },
    })
}

/// (pid, name) of an event: the process, the NIC or the device.
pub fn event_subject(e: &Event) -> (Option<u32>, String) {
    match e {
        Event::ProcessStart(p) => (Some(p.pid), p.comm.to_string()),
        Event::ProcessExit(x) => (Some(x.process.pid), x.process.comm.to_string()),
        Event::ProcessEnd(x) => (Some(x.exit.process.pid), x.exit.process.comm.to_string()),
        Event::ExitWatch(_) | Event::Shaping(_) => (None, "agent".into()),
        Event::KernelMessage(m) => (m.pid, m.nic.as_deref().unwrap_or("kernel").to_string()),
        Event::Connections(c) => (
            c.procs.first().map(|p| p.pid),
            c.procs
                .first()
                .map_or(String::new(), |p| p.comm.to_string()),
        ),
        Event::OpenFiles(o) => (
            o.procs.first().map(|p| p.pid),
            o.procs
                .first()
                .map_or(String::new(), |p| p.comm.to_string()),
        ),
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
        Event::DeviceAdded(d) => match d {
            nasprobe_proto::DeviceAdded::Disk(n) => format!("device added: disk {n}"),
            nasprobe_proto::DeviceAdded::Nic(n) => format!("device added: NIC {n}"),
        },
        Event::ProcessEnd(x) => format!(
            "exit {} [{}] {}, {} ticks",
            x.exit.process.comm,
            x.exit.process.pid,
            crate::exits::end_text(Some(&x.status), x.exit.lifetime_ms),
            x.exit.cpu_ticks
        ),
        Event::ExitWatch(w) => format!(
            "exits seen by {} ({} connector overruns)",
            w.source.name(),
            w.dropped
        ),
        Event::KernelMessage(m) => format!("kernel: {}", m.text),
        Event::Connections(c) => format!(
            "TCP connections: {}",
            c.procs
                .iter()
                .map(|p| format!("{} [{}] {}", p.comm, p.pid, p.conns.len()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Event::OpenFiles(o) => format!(
            "open files: {}",
            o.procs
                .iter()
                .flat_map(|p| p.files.iter().map(move |f| (p, f)))
                .map(|(p, f)| format!("{} [{}] {} @{}", p.comm, p.pid, f.path, f.pos))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Event::Shaping(s) => format!("traffic control caps {} NICs", s.nics.len()),
    }
}
