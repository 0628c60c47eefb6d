//! Rates from deltas: turns a host's samples into time series per resource (CPU per core and
//! per thread, disks, NICs, memory, TCP, mounts). A sample's value missing for a device (idle
//! disk) is zero; a delta flagged RESET is NaN (unknown), never a spike.

use std::collections::BTreeMap;

use nasprobe_formulas as f;
use nasprobe_proto::{Hello, Sample, flags};

use crate::input::HostData;

/// One point: sample end time (ms), interval length (ms).
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub time_ms: u64,
    pub interval_ms: f64,
}

/// A thread identified across process restarts by its process's and its own name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadKey {
    pub process: String,
    pub thread: String,
}

#[derive(Debug, Clone, Default)]
pub struct ThreadSeries {
    /// Fraction of one core per point (0 where the thread was not reported).
    pub frac: Vec<f64>,
    /// Points where it was reported.
    pub present: usize,
    pub last_pid: u32,
    pub last_tid: u32,
}

#[derive(Debug, Clone, Default)]
pub struct ProcSeries {
    /// CPU in cores (1.0 = one full core) per point, 0 where not listed.
    pub cores: Vec<f64>,
    pub present: usize,
    pub last_pid: u32,
    pub threads: u16,
    pub run_delay_frac: Vec<f64>,
    pub cmdline: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct DiskSeries {
    pub is_md: bool,
    pub rotational: Option<bool>,
    pub util: Vec<f64>,
    /// Average ms per completed I/O (NaN when none completed).
    pub await_ms: Vec<f64>,
    pub queue: Vec<f64>,
    pub read_bps: Vec<f64>,
    pub write_bps: Vec<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct NicSeries {
    pub rx_bps: Vec<f64>,
    pub tx_bps: Vec<f64>,
    /// Link speed in bytes/s (0 unknown).
    pub speed_bps: Vec<f64>,
    pub full_duplex: Vec<bool>,
    pub up: Vec<bool>,
    pub errors_ps: Vec<f64>,
    pub drops_ps: Vec<f64>,
    pub mtu: u32,
    pub is_bond: bool,
    pub slaves: Vec<String>,
    /// The speed was given by the agent's `--link-speed`, not negotiated by the NIC.
    pub speed_configured: bool,
    /// Its traffic-control caps, from the agent's last `Event::Shaping` of the window.
    pub shaper: Option<Shaper>,
}

/// The egress caps a root qdisc puts on a NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaper {
    /// "tbf", "htb", "cake", "hfsc".
    pub kind: &'static str,
    /// The classes (tc's u32 `major:minor`, 0 for the whole NIC) with their caps and the
    /// ports their filters send to them, lowest cap first.
    pub caps: Vec<nasprobe_proto::ShapedClass>,
    /// htb: the class of unclassified traffic (0: unshaped).
    pub default_class: Option<u32>,
}

/// Puts the caps of the host's last `Event::Shaping` on its NICs (by the inventory of the
/// instance that sent it; the store's loader adds the last one before the window).
fn add_shapers(s: &mut HostSeries, host: &HostData) {
    let Some((inst, sh)) = host
        .events
        .iter()
        .rev()
        .filter(|e| e.is_shaping())
        .find_map(|e| match e.event() {
            nasprobe_proto::Event::Shaping(sh) => Some((e.instance, sh)),
            _ => None,
        })
    else {
        return;
    };
    let Some(inst) = host.instances.get(inst) else {
        return;
    };
    for n in &sh.nics {
        let Some(info) = inst.hello.nics.get(usize::from(n.nic)) else {
            continue;
        };
        if let Some(ns) = s.nics.get_mut(info.name.as_str()) {
            ns.shaper = Some(Shaper {
                kind: n.kind.name(),
                caps: n.classes.to_vec(),
                default_class: n.default_class,
            });
        }
    }
}

impl NicSeries {
    /// Utilization per point against the link speed ([`f::link_util`]); NaN when the speed is
    /// unknown.
    pub fn util(&self) -> Vec<f64> {
        (0..self.rx_bps.len())
            .map(|i| {
                f::link_util(
                    self.rx_bps[i],
                    self.tx_bps[i],
                    self.speed_bps[i],
                    self.full_duplex[i],
                )
                .unwrap_or(f64::NAN)
            })
            .collect()
    }
}

#[derive(Debug, Clone, Default)]
pub struct MemSeries {
    pub total_kib: Vec<f64>,
    pub available_kib: Vec<f64>,
    pub available_estimated: bool,
    pub swap_used_kib: Vec<f64>,
    pub swap_in_ps: Vec<f64>,
    pub swap_out_ps: Vec<f64>,
    pub major_faults_ps: Vec<f64>,
    pub alloc_stalls_ps: Vec<f64>,
    pub direct_scan_ps: Vec<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct TcpSeries {
    pub retrans: Vec<f64>,
    pub resets: Vec<f64>,
    pub timeouts: Vec<f64>,
}

/// All series of one host over the window, aligned on `points`.
#[derive(Debug, Clone, Default)]
pub struct HostSeries {
    pub name: String,
    pub points: Vec<Point>,
    pub cpu_count: usize,
    pub page_size: u32,
    pub clk_tck: u32,
    /// Busy fraction of all CPUs together per point.
    pub cpu_busy: Vec<f64>,
    /// iowait fraction of all CPUs together.
    pub cpu_iowait: Vec<f64>,
    /// Per point, busy fraction of each core.
    pub core_busy: Vec<Vec<f64>>,
    pub run_queue: Vec<f64>,
    pub threads: BTreeMap<ThreadKey, ThreadSeries>,
    pub procs: BTreeMap<String, ProcSeries>,
    pub disks: BTreeMap<String, DiskSeries>,
    pub nics: BTreeMap<String, NicSeries>,
    pub mem: MemSeries,
    pub tcp: TcpSeries,
    /// Per mount path: used bytes per point (NaN when not reported).
    pub mounts: BTreeMap<String, Vec<f64>>,
    /// Agent's own CPU, fraction of a core.
    pub agent_cpu: Vec<f64>,
    /// Times and seqs of the samples that could not be used (a body that does not decode, or
    /// an instance that is not in the input): the report lists them as gaps.
    pub undecodable: Vec<(u64, u64)>,
}

/// Busy and iowait fractions of one CPU entry (NaN when unknown).
fn cpu_busy(t: &nasprobe_proto::CpuTicks) -> (f64, f64) {
    (
        f::cpu_busy(t).unwrap_or(f64::NAN),
        f::cpu_iowait(t).unwrap_or(f64::NAN),
    )
}

/// Puts `x` at index `i`, padding the points where the device was absent with zero.
fn push_at(v: &mut Vec<f64>, i: usize, x: f64) {
    push_padded(v, i, x, 0.0);
}

fn push_padded(v: &mut Vec<f64>, i: usize, x: f64, pad: f64) {
    if v.len() < i {
        v.resize(i, pad);
    }
    v.push(x);
}

/// Builds the series of one host.
pub fn build(host: &HostData) -> HostSeries {
    let mut s = HostSeries {
        name: host.name.clone(),
        ..Default::default()
    };
    if let Some(inst) = host.instances.last() {
        s.cpu_count = inst.hello.cpu_count as usize;
        s.page_size = inst.hello.page_size.max(1);
        s.clk_tck = inst.hello.clock_ticks_per_sec.max(1);
    }
    for ts in &host.samples {
        let Some(inst) = host.instances.get(ts.instance) else {
            s.undecodable.push((ts.time_ms, ts.seq));
            continue;
        };
        let Some(sample) = ts.decode() else {
            s.undecodable.push((ts.time_ms, ts.seq));
            continue;
        };
        let i = s.points.len();
        add_sample(&mut s, i, &inst.hello, &sample, ts.time_ms);
    }
    // Pad every per-device series to the full length (absent at the end = zero / unknown).
    let n = s.points.len();
    for t in s.threads.values_mut() {
        t.frac.resize(n, 0.0);
    }
    for p in s.procs.values_mut() {
        p.cores.resize(n, 0.0);
        p.run_delay_frac.resize(n, f64::NAN);
    }
    for d in s.disks.values_mut() {
        d.util.resize(n, 0.0);
        d.await_ms.resize(n, f64::NAN);
        d.queue.resize(n, 0.0);
        d.read_bps.resize(n, 0.0);
        d.write_bps.resize(n, 0.0);
    }
    for m in s.mounts.values_mut() {
        m.resize(n, f64::NAN);
    }
    add_shapers(&mut s, host);
    s
}

fn add_sample(s: &mut HostSeries, i: usize, hello: &Hello, sample: &Sample, time_ms: u64) {
    s.points.push(Point {
        time_ms,
        interval_ms: (f64::from(sample.interval_us) / 1000.0).max(1.0),
    });
    let (busy, iowait) = cpu_busy(&sample.cpu_total);
    s.cpu_busy.push(busy);
    s.cpu_iowait.push(iowait);
    s.core_busy
        .push(sample.cpus.iter().map(|c| cpu_busy(c).0).collect());
    s.run_queue.push(sample.procs_running as f64);
    s.agent_cpu
        .push(f::us_fraction(sample, sample.agent.cpu_us));
    add_procs(s, i, hello, sample);
    add_disks(s, i, hello, sample);
    add_nics(s, i, hello, sample);
    add_mem(s, sample);
    add_tcp(s, sample);
    for ms in &sample.mounts {
        if let Some(path) = hello.mounts.get(ms.mount as usize) {
            let v = s.mounts.entry(path.as_str().to_string()).or_default();
            if v.len() < i {
                v.resize(i, f64::NAN);
            }
            v.push(ms.used_bytes as f64);
        }
    }
}

/// Processes by name and their hottest threads at point `i` (grouped by [`f::proc_groups`]
/// and [`f::thread_figures`], as the exporters do).
fn add_procs(s: &mut HostSeries, i: usize, hello: &Hello, sample: &Sample) {
    let hz = hello.clock_ticks_per_sec;
    for g in f::proc_groups(hz, sample) {
        let ps = s.procs.entry(g.name.to_string()).or_default();
        push_at(&mut ps.cores, i, g.cores);
        ps.present += 1;
        ps.last_pid = g.pid;
        ps.threads = g.threads;
        if let Some(c) = g.cmdline {
            ps.cmdline = Some(c.to_string());
        }
        if let Some(rd) = g.run_delay {
            push_padded(&mut ps.run_delay_frac, i, rd, f64::NAN);
        }
    }
    for t in f::thread_figures(hz, sample) {
        let key = ThreadKey {
            process: t.process.to_string(),
            thread: t.thread.to_string(),
        };
        let ts = s.threads.entry(key).or_default();
        push_at(&mut ts.frac, i, t.cores);
        ts.present += 1;
        ts.last_pid = t.pid;
        ts.last_tid = t.tid;
    }
}

/// Disks at point `i`: every disk of the inventory gets a point (idle ones are absent from the
/// sample).
fn add_disks(s: &mut HostSeries, i: usize, hello: &Hello, sample: &Sample) {
    for d in &hello.disks {
        let ds = s.disks.entry(d.name.as_str().to_string()).or_default();
        ds.is_md = d.is_md;
        ds.rotational = d.rotational;
    }
    for d in &sample.disks {
        let Some(info) = hello.disks.get(d.disk as usize) else {
            continue;
        };
        let ds = s.disks.entry(info.name.as_str().to_string()).or_default();
        match f::disk(sample, d) {
            None => {
                push_at(&mut ds.util, i, f64::NAN);
                push_padded(&mut ds.await_ms, i, f64::NAN, f64::NAN);
                push_at(&mut ds.queue, i, f64::NAN);
                push_at(&mut ds.read_bps, i, f64::NAN);
                push_at(&mut ds.write_bps, i, f64::NAN);
            }
            Some(r) => {
                push_at(&mut ds.util, i, r.util);
                push_padded(
                    &mut ds.await_ms,
                    i,
                    r.await_ms.unwrap_or(f64::NAN),
                    f64::NAN,
                );
                push_at(&mut ds.queue, i, r.queue);
                push_at(&mut ds.read_bps, i, r.read_bps);
                push_at(&mut ds.write_bps, i, r.write_bps);
            }
        }
    }
}

/// NICs at point `i`; every known NIC gets a point (absent from the sample: no traffic).
fn add_nics(s: &mut HostSeries, i: usize, hello: &Hello, sample: &Sample) {
    let secs = f::interval_s(sample);
    for n in &sample.nics {
        let Some(info) = hello.nics.get(n.nic as usize) else {
            continue;
        };
        let ns = s.nics.entry(info.name.as_str().to_string()).or_default();
        ns.mtu = info.mtu;
        ns.speed_configured = info.speed_override_mbit.is_some();
        ns.is_bond = info.is_bond;
        ns.slaves = info.slaves.iter().map(|x| x.as_str().to_string()).collect();
        let fill = |v: &mut Vec<f64>, x: f64| push_at(v, i, x);
        while ns.full_duplex.len() < i {
            ns.full_duplex.push(true);
            ns.up.push(false);
            ns.speed_bps.push(0.0);
        }
        let r = f::nic(sample, n);
        let per_s = |x: u64| x as f64 / secs;
        fill(&mut ns.rx_bps, r.as_ref().map_or(f64::NAN, |r| r.rx_bps));
        fill(&mut ns.tx_bps, r.as_ref().map_or(f64::NAN, |r| r.tx_bps));
        fill(
            &mut ns.errors_ps,
            r.as_ref().map_or(f64::NAN, |r| per_s(r.errors)),
        );
        fill(
            &mut ns.drops_ps,
            r.as_ref().map_or(f64::NAN, |r| per_s(r.drops)),
        );
        ns.speed_bps.push(f::link_bytes_s(n.speed_mbit));
        ns.full_duplex.push(f::nic_full_duplex(n));
        ns.up.push(n.flags & flags::LINK_UP != 0);
    }
    let n_points = i + 1;
    for ns in s.nics.values_mut() {
        for v in [
            &mut ns.rx_bps,
            &mut ns.tx_bps,
            &mut ns.errors_ps,
            &mut ns.drops_ps,
        ] {
            v.resize(n_points, 0.0);
        }
        ns.speed_bps.resize(n_points, 0.0);
        ns.full_duplex.resize(n_points, true);
        ns.up.resize(n_points, false);
    }
}

/// Memory, swap and reclaim at the next point.
fn add_mem(s: &mut HostSeries, sample: &Sample) {
    let secs = f::interval_s(sample);
    let m = &mut s.mem;
    match &sample.memory {
        Some(mem) => {
            m.total_kib.push(mem.total_kib as f64);
            m.available_kib.push(mem.available_kib as f64);
            m.available_estimated |= mem.available_estimated;
            m.swap_used_kib
                .push(mem.swap_total_kib.saturating_sub(mem.swap_free_kib) as f64);
        }
        None => {
            m.total_kib.push(f64::NAN);
            m.available_kib.push(f64::NAN);
            m.swap_used_kib.push(f64::NAN);
        }
    }
    match &sample.vm {
        Some(vm) => {
            m.swap_in_ps.push(vm.swap_in_pages as f64 / secs);
            m.swap_out_ps.push(vm.swap_out_pages as f64 / secs);
            m.major_faults_ps.push(vm.major_faults as f64 / secs);
            m.alloc_stalls_ps
                .push(vm.alloc_stalls.map_or(f64::NAN, |x| x as f64 / secs));
            m.direct_scan_ps
                .push(vm.direct_scanned.map_or(f64::NAN, |x| x as f64 / secs));
        }
        None => {
            for v in [
                &mut m.swap_in_ps,
                &mut m.swap_out_ps,
                &mut m.major_faults_ps,
                &mut m.alloc_stalls_ps,
                &mut m.direct_scan_ps,
            ] {
                v.push(f64::NAN);
            }
        }
    }
}

/// TCP trouble counts at the next point.
fn add_tcp(s: &mut HostSeries, sample: &Sample) {
    match &sample.tcp {
        Some(t) => {
            s.tcp.retrans.push(t.retrans_segs as f64);
            s.tcp.resets.push(f::tcp_resets(t) as f64);
            s.tcp.timeouts.push(f::tcp_timeouts(t) as f64);
        }
        None => {
            s.tcp.retrans.push(f64::NAN);
            s.tcp.resets.push(f64::NAN);
            s.tcp.timeouts.push(f64::NAN);
        }
    }
}

/// Smoothing of a host's series before it is judged: consecutive points are merged into
/// buckets spanning at least this long (and at least [`SMOOTH_MIN_POINTS`] intervals).
pub(crate) const SMOOTH_MIN_SPAN_MS: f64 = 2_000.0;
pub(crate) const SMOOTH_MIN_POINTS: f64 = 5.0;

/// The series merged into buckets of consecutive points (time-weighted means of rates and
/// fractions, sums of counts, last of levels), so that the medians the verdict takes are of
/// rates over a few seconds rather than of single short intervals. Short intervals alias with
/// whatever feeds the counters: a tree generator that steps every 100 ms seen every 200 ms
/// reads 0.5x, 1x or 1.5x the rate; a process the agent re-reads only at its next full scan
/// (`--scan every:N`) shows its CPU of several intervals in one. Sums over a few seconds see
/// the true rate. A bucket never spans a hole in the data (more than 3 intervals without a
/// sample: a gap or an agent restart).
pub(crate) fn smooth(s: &HostSeries) -> HostSeries {
    let b = Buckets::of(s);
    HostSeries {
        name: s.name.clone(),
        points: b
            .groups
            .iter()
            .map(|g| Point {
                time_ms: s.points[g.end - 1].time_ms,
                interval_ms: g.clone().map(|i| b.w(i)).sum(),
            })
            .collect(),
        cpu_count: s.cpu_count,
        page_size: s.page_size,
        clk_tck: s.clk_tck,
        cpu_busy: b.map(&s.cpu_busy, Buckets::wmean),
        cpu_iowait: b.map(&s.cpu_iowait, Buckets::wmean),
        core_busy: b.cores(&s.core_busy),
        run_queue: b.map(&s.run_queue, Buckets::wmean),
        threads: s
            .threads
            .iter()
            .map(|(k, t)| {
                let t = ThreadSeries {
                    frac: b.map(&t.frac, Buckets::wmean),
                    ..t.clone()
                };
                (k.clone(), t)
            })
            .collect(),
        procs: s
            .procs
            .iter()
            .map(|(k, p)| {
                let p = ProcSeries {
                    cores: b.map(&p.cores, Buckets::wmean),
                    run_delay_frac: b.map(&p.run_delay_frac, Buckets::wmean),
                    ..p.clone()
                };
                (k.clone(), p)
            })
            .collect(),
        disks: s
            .disks
            .iter()
            .map(|(k, d)| (k.clone(), b.disk(d)))
            .collect(),
        nics: s.nics.iter().map(|(k, x)| (k.clone(), b.nic(x))).collect(),
        mem: b.mem(&s.mem),
        tcp: TcpSeries {
            retrans: b.map(&s.tcp.retrans, Buckets::total),
            resets: b.map(&s.tcp.resets, Buckets::total),
            timeouts: b.map(&s.tcp.timeouts, Buckets::total),
        },
        mounts: s
            .mounts
            .iter()
            .map(|(k, v)| (k.clone(), b.map(v, Buckets::last)))
            .collect(),
        agent_cpu: b.map(&s.agent_cpu, Buckets::wmean),
        undecodable: s.undecodable.clone(),
    }
}

type Range = std::ops::Range<usize>;

/// The buckets of [`smooth`] as ranges of point indices, and how a series is merged over them.
struct Buckets<'a> {
    s: &'a HostSeries,
    groups: Vec<Range>,
}

impl<'a> Buckets<'a> {
    fn of(s: &'a HostSeries) -> Buckets<'a> {
        let n = s.points.len();
        let ivs: Vec<f64> = s.points.iter().map(|p| p.interval_ms).collect();
        let typical = crate::stats::median(&ivs).unwrap_or(1000.0);
        let span = SMOOTH_MIN_SPAN_MS.max(SMOOTH_MIN_POINTS * typical);
        let mut groups: Vec<Range> = Vec::new();
        let mut start = 0;
        let mut acc = 0.0;
        for i in 0..n {
            if i > start {
                let dt = s.points[i].time_ms.saturating_sub(s.points[i - 1].time_ms) as f64;
                if dt > 3.0 * typical.max(s.points[i].interval_ms) {
                    groups.push(start..i);
                    start = i;
                    acc = 0.0;
                }
            }
            acc += s.points[i].interval_ms;
            if acc >= span {
                groups.push(start..i + 1);
                start = i + 1;
                acc = 0.0;
            }
        }
        if start < n {
            // A short tail joins the bucket before it when there is one without a hole between.
            match groups.last_mut() {
                Some(g) if g.end == start && acc < span / 2.0 => g.end = n,
                _ => groups.push(start..n),
            }
        }
        Buckets { s, groups }
    }

    /// Weight of point `i`: its interval.
    fn w(&self, i: usize) -> f64 {
        self.s.points[i].interval_ms
    }

    fn map(&self, v: &[f64], f: fn(&Self, &[f64], &Range) -> f64) -> Vec<f64> {
        self.groups.iter().map(|g| f(self, v, g)).collect()
    }

    /// Time-weighted mean of the known values of `at(i)` over the bucket.
    fn wmean_of(&self, g: &Range, at: impl Fn(usize) -> Option<f64>) -> f64 {
        let (mut sum, mut dur) = (0.0, 0.0);
        for i in g.clone() {
            if let Some(x) = at(i).filter(|x| x.is_finite()) {
                sum += x * self.w(i);
                dur += self.w(i);
            }
        }
        if dur > 0.0 { sum / dur } else { f64::NAN }
    }

    /// Time-weighted mean of the known values (rates and fractions).
    fn wmean(&self, v: &[f64], g: &Range) -> f64 {
        self.wmean_of(g, |i| v.get(i).copied())
    }

    /// Sum of the known values (counts).
    fn total(&self, v: &[f64], g: &Range) -> f64 {
        let f: Vec<f64> = g
            .clone()
            .filter_map(|i| v.get(i).copied().filter(|x| x.is_finite()))
            .collect();
        if f.is_empty() {
            f64::NAN
        } else {
            f.iter().sum()
        }
    }

    /// The last known value (levels).
    fn last(&self, v: &[f64], g: &Range) -> f64 {
        g.clone()
            .rev()
            .filter_map(|i| v.get(i).copied())
            .find(|x| x.is_finite())
            .unwrap_or(f64::NAN)
    }

    /// The lowest known value.
    fn lowest(&self, v: &[f64], g: &Range) -> f64 {
        g.clone()
            .filter_map(|i| v.get(i).copied())
            .filter(|x| x.is_finite())
            .fold(f64::NAN, f64::min)
    }

    /// Per bucket, the time-weighted mean of each core.
    fn cores(&self, core_busy: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let cores = core_busy.iter().map(Vec::len).max().unwrap_or(0);
        self.groups
            .iter()
            .map(|g| {
                (0..cores)
                    .map(|c| self.wmean_of(g, |i| core_busy.get(i).and_then(|r| r.get(c)).copied()))
                    .collect()
            })
            .collect()
    }

    fn disk(&self, d: &DiskSeries) -> DiskSeries {
        DiskSeries {
            is_md: d.is_md,
            rotational: d.rotational,
            util: self.map(&d.util, Self::wmean),
            await_ms: self.map(&d.await_ms, Self::wmean),
            queue: self.map(&d.queue, Self::wmean),
            read_bps: self.map(&d.read_bps, Self::wmean),
            write_bps: self.map(&d.write_bps, Self::wmean),
        }
    }

    fn nic(&self, x: &NicSeries) -> NicSeries {
        NicSeries {
            rx_bps: self.map(&x.rx_bps, Self::wmean),
            tx_bps: self.map(&x.tx_bps, Self::wmean),
            speed_bps: self.map(&x.speed_bps, Self::last),
            full_duplex: self
                .groups
                .iter()
                .map(|g| {
                    g.clone()
                        .rev()
                        .find_map(|i| x.full_duplex.get(i).copied())
                        .unwrap_or(true)
                })
                .collect(),
            up: self
                .groups
                .iter()
                .map(|g| g.clone().all(|i| x.up.get(i).copied().unwrap_or(false)))
                .collect(),
            errors_ps: self.map(&x.errors_ps, Self::wmean),
            drops_ps: self.map(&x.drops_ps, Self::wmean),
            mtu: x.mtu,
            is_bond: x.is_bond,
            slaves: x.slaves.clone(),
            speed_configured: x.speed_configured,
            shaper: x.shaper.clone(),
        }
    }

    fn mem(&self, m: &MemSeries) -> MemSeries {
        MemSeries {
            total_kib: self.map(&m.total_kib, Self::last),
            available_kib: self.map(&m.available_kib, Self::lowest),
            available_estimated: m.available_estimated,
            swap_used_kib: self.map(&m.swap_used_kib, Self::last),
            swap_in_ps: self.map(&m.swap_in_ps, Self::wmean),
            swap_out_ps: self.map(&m.swap_out_ps, Self::wmean),
            major_faults_ps: self.map(&m.major_faults_ps, Self::wmean),
            alloc_stalls_ps: self.map(&m.alloc_stalls_ps, Self::wmean),
            direct_scan_ps: self.map(&m.direct_scan_ps, Self::wmean),
        }
    }
}

/// Points of a host inside the active period.
pub(crate) fn active_indices(s: &HostSeries, range: Option<(u64, u64)>) -> Vec<usize> {
    (0..s.points.len())
        .filter(|&i| match range {
            Some((a, b)) => {
                let t = s.points[i].time_ms;
                t >= a && t <= b
            }
            None => true,
        })
        .collect()
}
