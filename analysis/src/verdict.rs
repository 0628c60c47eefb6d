//! The verdict: per host and resource, utilization over the transfer's active period (the USE
//! method), then the one resource that binds the flow, with the numbers behind it, what was
//! ruled out with its headroom, and what would not help.

use serde::Serialize;

use crate::series::{HostSeries, NicSeries};
use crate::stats::{best_window, max, mean, median, percentile};

/// One thread at or above this fraction of a core is a wall.
pub(crate) const THREAD_WALL: f64 = 0.85;
/// All CPUs together at or above this busy fraction: the box is out of CPU.
pub(crate) const CPU_ALL_WALL: f64 = 0.85;
/// A disk at or above this busy fraction is a wall.
pub(crate) const DISK_WALL: f64 = 0.85;
/// A NIC at or above this fraction of its line rate is a wall (TCP payload tops out near 94%
/// of the line rate, so 0.80 of the line is 0.85 of what a flow can get).
pub(crate) const NIC_WALL: f64 = 0.80;
/// A NIC at this share of its line rate or more is full: the flow runs at the link's payload
/// ceiling, so the link is the wall even when cores or disks are busy too.
pub(crate) const NIC_FULL: f64 = 0.9;
/// Practical share of the line rate a TCP flow can carry (Ethernet + IP + TCP headers).
pub(crate) const NIC_PRACTICAL: f64 = 0.94;
/// Swapping (pages in + out per second, sustained) that stalls work.
pub(crate) const SWAP_WALL_PAGES_PS: f64 = 256.0;
/// Swapping this hard (pages in + out per second: 4 MiB/s of 4 KiB pages) or with this many
/// allocation stalls per second is a storm: everything else on the host is its symptom.
pub(crate) const SWAP_STORM_PAGES_PS: f64 = 1024.0;
pub(crate) const STORM_STALLS_PS: f64 = 10.0;
const MEMORY_STORM_SCORE: f64 = 2.0;
/// A link negotiated below gigabit is the wall from this share of its speed on (nothing else
/// explains a flow that fills most of a slow link).
pub(crate) const NIC_SLOW_LINK_WALL: f64 = 0.6;
/// A NIC moving more than this share of its stated link is not held by that link: the speed is
/// a virtual device's (veth, tun: "10000") or a wrong `--link-speed`; it is never the wall.
pub(crate) const NIC_OVER_LINK: f64 = 1.25;
/// Below this a host carries no transfer (bytes/s).
pub(crate) const FLOW_MIN_BPS: f64 = 1_000_000.0;
/// Two walls of the same kind whose scores differ by less than this are a tie.
pub(crate) const TIE_MARGIN: f64 = 0.05;
/// A pegged thread whose process runs on fewer cores than this is the wall even when every
/// core is busy (the rest of the load is other work; more cores would not speed the thread).
pub(crate) const LONE_THREAD_CORES: f64 = 1.5;
/// On a host with one core, a thread holding at least this much of it while the core is full
/// is the wall: its ceiling is what the rest (its own pipe's reader, the kernel's network work)
/// leaves it, not a whole core (a WD MyCloud's dropbear at 83% of its one core, 99% busy).
pub(crate) const ONE_CORE_THREAD_SHARE: f64 = 0.75;
/// Span of the peak window.
pub const PEAK_SPAN_MS: f64 = 10_000.0;

pub const MB: f64 = 1_000_000.0;

/// The transfer seen across hosts.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Flow {
    /// Host sending the most (None when only the receiver is observed).
    pub from: Option<String>,
    pub from_device: Option<String>,
    /// Host receiving the most.
    pub to: Option<String>,
    pub to_device: Option<String>,
    /// Median over the active period, MB/s (10^6 bytes).
    pub sustained_mb_s: f64,
    pub mean_mb_s: f64,
    /// Best 10 s, MB/s.
    pub peak_mb_s: f64,
    /// Seconds the flow was active.
    pub active_seconds: f64,
    /// Link speed of the busier end, Mbit/s (0 unknown).
    pub link_mbit: u32,
    /// On 1 GbE: excellent / good / fair / misconfigured / seriously_wrong; null otherwise.
    pub grade: Option<String>,
    /// Who holds the flow back, from its own TCP connections (`crate::limit`).
    pub limited_by: crate::limit::LimitedBy,
    /// The sentences with the numbers behind `limited_by`.
    pub limit_evidence: Vec<String>,
}

/// The kind of resource a candidate (and the verdict) is about. Serialized as the report's
/// strings: "cpu_thread", "cpu_all", "disk", "nic", "memory", "app" (an application that
/// holds the flow back), "network" (the path between the hosts), and "none" for no wall.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    CpuThread,
    CpuAll,
    Disk,
    Nic,
    Memory,
    App,
    Network,
    #[default]
    None,
}

impl Resource {
    /// Every resource a wall can be on, in the order the views list them.
    pub(crate) const WALLS: [Resource; 5] = [
        Resource::CpuThread,
        Resource::CpuAll,
        Resource::Disk,
        Resource::Nic,
        Resource::Memory,
    ];

    /// The report's name of it (the serialized form).
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::CpuThread => "cpu_thread",
            Resource::CpuAll => "cpu_all",
            Resource::Disk => "disk",
            Resource::Nic => "nic",
            Resource::Memory => "memory",
            Resource::App => "app",
            Resource::Network => "network",
            Resource::None => "none",
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Resource {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A resource near (or not near) its ceiling on one host.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Candidate {
    pub host: String,
    pub resource: Resource,
    pub device: Option<String>,
    pub process: Option<String>,
    /// cpu_thread: the thread's name (comm) when it differs from the process's.
    pub thread: Option<String>,
    pub utilization: f64,
    /// Utilization against what is practically reachable (NIC: payload ceiling), for ranking.
    #[serde(skip)]
    pub score: f64,
    #[serde(skip)]
    pub wall: bool,
    /// cpu_thread: the thread's process runs on about one core (its work is that thread), so
    /// busy cores elsewhere neither slow the thread nor would more cores help it. app: the
    /// application rarely waits for a CPU (`limit::APP_RUN_DELAY_MAX`), so busy cores are other
    /// work's and do not hold the flow.
    #[serde(skip)]
    pub lone: bool,
    #[serde(skip)]
    pub sentence: String,
}

/// The bottleneck object of the report (contract in DESIGN.md).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bottleneck {
    pub host: Option<String>,
    pub resource: Resource,
    pub device: Option<String>,
    pub process: Option<String>,
    /// cpu_thread: the thread's name (comm) when it differs from the process's, else null.
    pub thread: Option<String>,
    pub utilization: f64,
    pub evidence: Vec<String>,
    pub ruled_out: Vec<String>,
    pub would_not_help: Vec<String>,
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

pub(crate) fn pick(v: &[f64], idx: &[usize]) -> Vec<f64> {
    idx.iter().filter_map(|&i| v.get(i).copied()).collect()
}

fn is_virtual_nic(name: &str) -> bool {
    name == "lo"
}

/// Finds the flow: the host and NIC sending most, the host and NIC receiving most, and the
/// time range when it was active (≥ 25% of its peak).
pub(crate) fn find_flow(hosts: &[HostSeries]) -> (Option<Flow>, Option<(u64, u64)>) {
    let mut best_tx: Option<(usize, String, f64)> = None;
    let mut best_rx: Option<(usize, String, f64)> = None;
    for (h, s) in hosts.iter().enumerate() {
        for (name, n) in &s.nics {
            if is_virtual_nic(name) || n.is_bond {
                continue;
            }
            // A bridge or virtual switch over the physical NIC (br0, ovs_eth0, qvs0) carries
            // the same bytes with no link speed: the physical NIC wins a near tie.
            let known = if median(&n.speed_bps).unwrap_or(0.0) > 0.0 {
                1.0
            } else {
                0.95
            };
            let tx = mean(&n.tx_bps).unwrap_or(0.0) * known;
            let rx = mean(&n.rx_bps).unwrap_or(0.0) * known;
            if best_tx.as_ref().is_none_or(|b| tx > b.2) {
                best_tx = Some((h, name.clone(), tx));
            }
            if best_rx.as_ref().is_none_or(|b| rx > b.2) {
                best_rx = Some((h, name.clone(), rx));
            }
        }
    }
    // The receiving side is the one that matters for "landing"; measure the flow there unless
    // only the sender is observed.
    let rx_ok = best_rx.as_ref().is_some_and(|b| b.2 >= FLOW_MIN_BPS);
    let tx_ok = best_tx.as_ref().is_some_and(|b| b.2 >= FLOW_MIN_BPS);
    if !rx_ok && !tx_ok {
        return (None, None);
    }
    // With two hosts, the sender and receiver should differ; when the same host wins both
    // (loopback-like), keep it.
    let (measure_host, measure_nic, rx_side) = if rx_ok {
        let b = best_rx.clone().unwrap();
        (b.0, b.1, true)
    } else {
        let b = best_tx.clone().unwrap();
        (b.0, b.1, false)
    };
    let s = &hosts[measure_host];
    let n = &s.nics[&measure_nic];
    let series = if rx_side { &n.rx_bps } else { &n.tx_bps };
    let pts: Vec<(u64, f64, f64)> = s
        .points
        .iter()
        .zip(series)
        .map(|(p, v)| (p.time_ms, p.interval_ms, *v))
        .collect();
    let peak = best_window(&pts, PEAK_SPAN_MS).unwrap_or(0.0);
    let active: Vec<&(u64, f64, f64)> = pts.iter().filter(|p| p.2 >= peak * 0.25).collect();
    let range = match (active.first(), active.last()) {
        (Some(a), Some(b)) => Some((a.0.saturating_sub(a.1 as u64), b.0)),
        _ => None,
    };
    let in_range: Vec<f64> = pts
        .iter()
        .filter(|p| range.is_some_and(|(a, b)| p.0 >= a && p.0 <= b))
        .map(|p| p.2)
        .collect();
    let active_seconds: f64 = pts
        .iter()
        .filter(|p| range.is_some_and(|(a, b)| p.0 >= a && p.0 <= b))
        .map(|p| p.1 / 1000.0)
        .sum();
    let sustained = median(&in_range).unwrap_or(0.0);
    let speed_mbit = median(&n.speed_bps).unwrap_or(0.0) * 8.0 / 1e6;
    let sustained_mb = sustained / MB;
    let grade = ((speed_mbit - 1000.0).abs() < 1.0).then(|| grade_1gbe(sustained_mb).to_string());
    let name_of = |b: &Option<(usize, String, f64)>, ok: bool| {
        b.as_ref()
            .filter(|_| ok)
            .map(|b| (hosts[b.0].name.clone(), b.1.clone()))
    };
    let from = name_of(&best_tx, tx_ok);
    let to = name_of(&best_rx, rx_ok);
    (
        Some(Flow {
            from: from.as_ref().map(|f| f.0.clone()),
            from_device: from.map(|f| f.1),
            to: to.as_ref().map(|t| t.0.clone()),
            to_device: to.map(|t| t.1),
            sustained_mb_s: round2(sustained_mb),
            mean_mb_s: round2(mean(&in_range).unwrap_or(0.0) / MB),
            peak_mb_s: round2(peak / MB),
            active_seconds: round2(active_seconds),
            link_mbit: speed_mbit.round() as u32,
            grade,
            limited_by: crate::limit::LimitedBy::Unknown,
            limit_evidence: Vec::new(),
        }),
        range,
    )
}

/// The field's ladder for a single flow on 1 GbE.
pub(crate) fn grade_1gbe(mb_s: f64) -> &'static str {
    if mb_s >= 90.0 {
        "excellent"
    } else if mb_s >= 70.0 {
        "good"
    } else if mb_s >= 50.0 {
        "fair"
    } else if mb_s >= 30.0 {
        "misconfigured"
    } else {
        "seriously_wrong"
    }
}

/// The same ladder for a link of `link_mbit` (None or 0: 1 GbE, the field's reference): the rate
/// is judged as the same fraction of that link.
pub fn grade_for_link(mb_s: f64, link_mbit: Option<u32>) -> &'static str {
    match link_mbit.filter(|&l| l > 0) {
        Some(l) => grade_1gbe(mb_s * 1000.0 / f64::from(l)),
        None => grade_1gbe(mb_s),
    }
}

pub fn round2(x: f64) -> f64 {
    if x.is_finite() {
        // `+ 0.0` turns -0.0 into 0.0 (it would print as "-0").
        (x * 100.0).round() / 100.0 + 0.0
    } else {
        0.0
    }
}

pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn headroom(util: f64) -> String {
    if util <= 0.01 {
        "idle".into()
    } else {
        format!("{:.1}x headroom", 1.0 / util)
    }
}

/// Util fraction of a NIC over the active points (NaN when the speed is unknown).
pub(crate) fn nic_util(n: &NicSeries, idx: &[usize]) -> f64 {
    median(&pick(&n.util(), idx)).unwrap_or(f64::NAN)
}

/// "; busiest: pigz 3.9 cores (9 threads), smbd 0.1" — the processes using the most CPU.
fn busiest_processes(s: &HostSeries, idx: &[usize]) -> String {
    let mut v: Vec<(&String, f64, u16)> = s
        .procs
        .iter()
        .map(|(n, p)| (n, mean(&pick(&p.cores, idx)).unwrap_or(0.0), p.threads))
        .filter(|p| p.1 >= 0.05)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    if v.is_empty() {
        return String::new();
    }
    let list: Vec<String> = v
        .iter()
        .take(3)
        .map(|(n, c, t)| {
            if *t > 1 {
                format!("{n} {c:.1} cores ({t} threads)")
            } else {
                format!("{n} {c:.1} cores")
            }
        })
        .collect();
    format!("; busiest: {}", list.join(", "))
}

/// All candidates of one host over the active points: its hottest thread, all cores, its
/// busiest disk and NIC, and memory.
pub(crate) fn candidates(s: &HostSeries, idx: &[usize]) -> Vec<Candidate> {
    let busy = median(&pick(&s.cpu_busy, idx)).unwrap_or(0.0);
    let mut out = Vec::new();
    out.extend(thread_candidate(s, idx, busy));
    out.push(cpu_all_candidate(s, idx, busy));
    out.extend(disk_candidate(s, idx));
    out.extend(nic_candidate(s, idx));
    out.push(memory_candidate(s, idx));
    out
}

/// The hottest thread against one core (`busy`: all cores together, for the sentence).
fn thread_candidate(s: &HostSeries, idx: &[usize], busy: f64) -> Option<Candidate> {
    let h = &s.name;
    let cores = s.cpu_count.max(1);
    let hottest = s
        .threads
        .iter()
        .map(|(k, t)| (k, t, median(&pick(&t.frac, idx)).unwrap_or(0.0)))
        .max_by(|a, b| a.2.total_cmp(&b.2));
    let (k, t, frac) = hottest?;
    let frac = frac.min(1.0);
    let peak = max(&pick(&t.frac, idx)).unwrap_or(frac).min(1.0);
    let proc_cores = s
        .procs
        .get(&k.process)
        .and_then(|p| median(&pick(&p.cores, idx)))
        .unwrap_or(frac);
    let thread_desc = if k.thread == k.process {
        format!("one thread of `{}`", k.process)
    } else {
        format!("thread `{}` of `{}`", k.thread, k.process)
    };
    // One core, full, mostly this thread's: the thread has all the rest leaves it.
    let one_core_full = cores == 1 && busy >= CPU_ALL_WALL && frac >= ONE_CORE_THREAD_SHARE;
    let score = if one_core_full {
        (frac / (frac + (1.0 - busy).max(0.0))).min(1.0)
    } else {
        frac
    };
    Some(Candidate {
        host: h.clone(),
        resource: Resource::CpuThread,
        device: None,
        process: Some(k.process.clone()),
        thread: (k.thread != k.process).then(|| k.thread.clone()),
        utilization: round2(frac),
        score,
        wall: score >= THREAD_WALL,
        lone: proc_cores < LONE_THREAD_CORES,
        sentence: format!(
            "{h}: {thread_desc} ({}) at {} of a core (median; peak {}) while {}",
            if t.last_tid != 0 && t.last_tid != t.last_pid {
                format!("pid {}, tid {}", t.last_pid, t.last_tid)
            } else {
                format!("pid {}", t.last_pid)
            },
            pct(frac),
            pct(peak),
            if one_core_full {
                format!(
                    "the host's one core was {} busy: the thread had all of it that the rest left",
                    pct(busy)
                )
            } else {
                format!("all {cores} cores together were {} busy", pct(busy))
            }
        ),
    })
}

/// All cores together.
fn cpu_all_candidate(s: &HostSeries, idx: &[usize], busy: f64) -> Candidate {
    let h = &s.name;
    let cores = s.cpu_count.max(1);
    let per_core: Vec<f64> = (0..cores)
        .map(|c| {
            let v: Vec<f64> = idx
                .iter()
                .filter_map(|&i| s.core_busy.get(i).and_then(|r| r.get(c)).copied())
                .collect();
            median(&v).unwrap_or(0.0)
        })
        .collect();
    let core_max = max(&per_core).unwrap_or(0.0);
    let core_min = per_core.iter().copied().fold(f64::INFINITY, f64::min);
    Candidate {
        host: h.clone(),
        resource: Resource::CpuAll,
        device: None,
        process: None,
        thread: None,
        utilization: round2(busy),
        score: busy,
        wall: busy >= CPU_ALL_WALL,
        lone: false,
        sentence: format!(
            "{h}: {cores} cores {} busy together (per core {}-{}), run queue {:.1}{}",
            pct(busy),
            pct(if core_min.is_finite() { core_min } else { 0.0 }),
            pct(core_max),
            median(&pick(&s.run_queue, idx)).unwrap_or(0.0),
            busiest_processes(s, idx)
        ),
    }
}

/// The busiest disk. md arrays are judged by their members, so only real disks compete.
fn disk_candidate(s: &HostSeries, idx: &[usize]) -> Option<Candidate> {
    let h = &s.name;
    let mut disk_best: Option<(String, f64, f64, f64)> = None;
    let mut utils = Vec::new();
    for (name, d) in &s.disks {
        if d.is_md {
            continue;
        }
        let util = median(&pick(&d.util, idx)).unwrap_or(0.0);
        let aw = median(&pick(&d.await_ms, idx)).unwrap_or(0.0);
        let q = median(&pick(&d.queue, idx)).unwrap_or(0.0);
        let io = mean(&pick(&d.read_bps, idx)).unwrap_or(0.0)
            + mean(&pick(&d.write_bps, idx)).unwrap_or(0.0);
        if io > 0.0 || util > 0.0 {
            utils.push(util);
        }
        if disk_best.as_ref().is_none_or(|b| util > b.1) {
            disk_best = Some((name.clone(), util, aw, q));
        }
    }
    let (name, util, aw, q) = disk_best?;
    let lo = utils.iter().copied().fold(f64::INFINITY, f64::min);
    let md_of = s
        .disks
        .iter()
        .filter(|(_, d)| d.is_md)
        .map(|(n, _)| n.clone())
        .collect::<Vec<_>>();
    let md_note = if md_of.is_empty() {
        String::new()
    } else {
        format!(" (md arrays {} judged by their members)", md_of.join(", "))
    };
    let range = if utils.len() > 1 && lo.is_finite() {
        format!("{}-{}", pct(lo), pct(util))
    } else {
        pct(util)
    };
    Some(Candidate {
        host: h.clone(),
        resource: Resource::Disk,
        device: Some(name.clone()),
        process: None,
        thread: None,
        utilization: round2(util),
        score: util,
        wall: util >= DISK_WALL,
        lone: false,
        sentence: format!(
            "{h}: disks at {range} util{md_note}; busiest {name} at {}, await {:.1} ms, queue {:.1}",
            pct(util),
            aw,
            q
        ),
    })
}

/// The busiest physical NIC against its link.
fn nic_candidate(s: &HostSeries, idx: &[usize]) -> Option<Candidate> {
    let h = &s.name;
    let mut nic_best: Option<(String, f64, f64, f64)> = None;
    for (name, n) in &s.nics {
        if is_virtual_nic(name) || n.is_bond {
            continue;
        }
        let util = nic_util(n, idx);
        let rate = median(&pick(&n.rx_bps, idx))
            .unwrap_or(0.0)
            .max(median(&pick(&n.tx_bps, idx)).unwrap_or(0.0));
        let speed = median(&pick(&n.speed_bps, idx)).unwrap_or(0.0);
        let key = if util.is_finite() {
            util
        } else {
            -1.0 + rate / 1e12
        };
        if nic_best.as_ref().is_none_or(|b| key > b.1) {
            nic_best = Some((name.clone(), key, rate, speed));
        }
    }
    let (name, util, rate, speed) = nic_best?;
    let configured = s.nics.get(&name).is_some_and(|n| n.speed_configured);
    let util = util.max(0.0);
    let over_link = util > NIC_OVER_LINK;
    let slow_link = speed > 0.0 && speed * 8.0 / 1e6 < 1000.0;
    let speed_txt = if speed > 0.0 {
        // One decimal on slow links: 11.5 of 12.5 MB/s, not "11 of 12".
        let d = usize::from(speed < 100.0 * MB);
        format!(
            "{:.d$} MB/s of {:.d$} ({:.d$} practical; link {} Mb/s)",
            rate / MB,
            speed / MB,
            speed * NIC_PRACTICAL / MB,
            (speed * 8.0 / 1e6).round()
        )
    } else {
        format!("{:.0} MB/s (link speed unknown)", rate / MB)
    };
    Some(Candidate {
        host: h.clone(),
        resource: Resource::Nic,
        device: Some(name.clone()),
        process: None,
        thread: None,
        utilization: round2(util),
        score: if over_link { 0.0 } else { util / NIC_PRACTICAL },
        wall: !over_link && (util >= NIC_WALL || (slow_link && util >= NIC_SLOW_LINK_WALL)),
        lone: false,
        sentence: format!(
            "{h}: {name} at {speed_txt}, {} of the link{}",
            pct(util),
            if over_link {
                format!(
                    " — more than the link can carry: its stated speed ({} Mb/s{}) is not \
                     its ceiling (a virtual link), so it is not the wall",
                    (speed * 8.0 / 1e6).round(),
                    if configured {
                        ", set by --link-speed"
                    } else {
                        ""
                    }
                )
            } else if slow_link && configured {
                format!(
                    " — a {} Mb/s link (speed set by --link-speed)",
                    (speed * 8.0 / 1e6).round()
                )
            } else if slow_link {
                format!(
                    " — negotiated at {} Mb/s, below gigabit: check the cable, the switch port and autonegotiation",
                    (speed * 8.0 / 1e6).round()
                )
            } else {
                String::new()
            }
        ),
    })
}

/// Memory: swapping or reclaim stalls that stall the work.
fn memory_candidate(s: &HostSeries, idx: &[usize]) -> Candidate {
    let h = &s.name;
    let swap_ps = median(&pick(&s.mem.swap_in_ps, idx)).unwrap_or(0.0)
        + median(&pick(&s.mem.swap_out_ps, idx)).unwrap_or(0.0);
    let stalls = median(&pick(&s.mem.alloc_stalls_ps, idx)).unwrap_or(0.0);
    let majflt = median(&pick(&s.mem.major_faults_ps, idx)).unwrap_or(0.0);
    let total = median(&pick(&s.mem.total_kib, idx)).unwrap_or(0.0);
    let avail = percentile(&pick(&s.mem.available_kib, idx), 0.1).unwrap_or(total);
    let used_frac = if total > 0.0 {
        (1.0 - avail / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let swapping = swap_ps >= SWAP_WALL_PAGES_PS || (stalls > 0.0 && swap_ps > 0.0);
    let storm = swap_ps >= SWAP_STORM_PAGES_PS || (stalls >= STORM_STALLS_PS && swap_ps > 0.0);
    Candidate {
        host: h.clone(),
        resource: Resource::Memory,
        device: None,
        process: None,
        thread: None,
        utilization: round2(if swapping {
            used_frac.max(0.9)
        } else {
            used_frac
        }),
        // A storm beats every other wall; light swapping ranks just above the thresholds of
        // the others, so a thread or disk clearly at its ceiling is still named first.
        score: if storm {
            MEMORY_STORM_SCORE
        } else if swapping {
            0.86 + 0.08 * (swap_ps / SWAP_STORM_PAGES_PS).min(1.0)
        } else {
            0.0
        },
        wall: swapping,
        lone: false,
        sentence: format!(
            "{h}: memory {} used ({:.0} MiB available{}), swapping {:.0} pages/s ({:.1} MB/s), {:.0} major faults/s, {:.0} allocation stalls/s",
            pct(used_frac),
            avail / 1024.0,
            if s.mem.available_estimated {
                ", estimated: kernel lacks MemAvailable"
            } else {
                ""
            },
            swap_ps,
            swap_ps * s.page_size.max(1) as f64 / MB,
            majflt,
            stalls
        ),
    }
}

/// Names the wall among all hosts' candidates.
pub fn decide(all: &[Candidate], flow: Option<&Flow>) -> Bottleneck {
    // A swap storm stalls everything; its disk and CPU load are symptoms. Lighter swapping
    // competes with the other walls on its score.
    let memory_wall = all
        .iter()
        .filter(|c| c.resource == Resource::Memory && c.wall && c.score >= MEMORY_STORM_SCORE)
        .max_by(|a, b| a.score.total_cmp(&b.score));
    // The `app` and `network` candidates (`crate::limit`) name the limit only when no host
    // resource is at its ceiling.
    let is_limit = |c: &Candidate| matches!(c.resource, Resource::App | Resource::Network);
    // An application holding the flow back that rarely waits for a CPU (`lone` of an `app`
    // candidate) is not held by busy cores: they are other work's, more would not move the flow.
    let unstarved_app = all
        .iter()
        .find(|c| c.resource == Resource::App && c.wall && c.lone);
    let other_work = |c: &Candidate| c.resource == Resource::CpuAll && unstarved_app.is_some();
    let walls: Vec<&Candidate> = all
        .iter()
        .filter(|c| c.wall && !is_limit(c) && !other_work(c))
        .filter(|c| {
            // With every core busy, one busy thread of parallel work is not the single wall.
            !(c.resource == Resource::CpuThread
                && !c.lone
                && all
                    .iter()
                    .any(|o| o.host == c.host && o.resource == Resource::CpuAll && o.wall))
        })
        .collect();
    // A pegged thread that is its process's whole work binds the flow at that thread's speed:
    // cores busy with other work (on its host or the other) rank after it.
    let lone_thread = walls
        .iter()
        .any(|c| c.resource == Resource::CpuThread && c.lone);
    // A link carrying the flow at its full payload rate binds it whatever else is busy: the
    // flow cannot go faster than the link (cores or disks busy meanwhile are not what stops it).
    let rank = |c: &Candidate| {
        if c.resource == Resource::CpuAll && lone_thread {
            c.score - 1.0
        } else if c.resource == Resource::Nic && c.utilization >= NIC_FULL {
            c.score + 1.0
        } else {
            c.score
        }
    };
    let chosen = memory_wall.cloned().or_else(|| {
        let top = walls.iter().max_by(|a, b| rank(a).total_cmp(&rank(b)))?;
        // Both ends of a flow at the same ceiling (ssh encrypting on one side, sshd decrypting
        // on the other): name the receiving end, where the data lands, unless the sender's
        // figure is clearly higher. The other end is reported as also at its ceiling.
        let receiver = flow.and_then(|f| f.to.as_deref());
        let on_receiver = walls
            .iter()
            .filter(|c| Some(c.host.as_str()) == receiver && c.resource == top.resource)
            .filter(|c| c.score >= top.score - TIE_MARGIN)
            .max_by(|a, b| a.score.total_cmp(&b.score));
        Some((*on_receiver.unwrap_or(top)).clone())
    });
    let chosen = chosen.or_else(|| {
        all.iter()
            .filter(|c| c.wall && is_limit(c))
            .max_by(|a, b| a.score.total_cmp(&b.score))
            .cloned()
    });
    let mut evidence = Vec::new();
    if let Some(f) = flow {
        evidence.push(flow_sentence(f));
    }
    let mut ruled_out = Vec::new();
    let mut also = Vec::new();
    for c in all.iter().filter(|c| !is_limit(c) || c.wall) {
        let same = chosen
            .as_ref()
            .is_some_and(|w| w.host == c.host && w.resource == c.resource);
        if same {
            evidence.insert(usize::from(flow.is_some()), c.sentence.clone());
        } else if let Some(w) = chosen
            .as_ref()
            .filter(|_| c.wall && walls.iter().any(|w| std::ptr::eq(*w, c)))
        {
            if is_limit(c) {
                continue;
            }
            if w.resource == Resource::Memory && w.host == c.host {
                also.push(format!("{} — likely a symptom of the swapping", c.sentence));
            } else {
                also.push(format!(
                    "also at its ceiling: {} — relieving the wall alone would move it here",
                    c.sentence
                ));
            }
        } else if let Some(app) = unstarved_app.filter(|_| c.wall && other_work(c)) {
            ruled_out.push(format!(
                "{} — other work: `{}` on {}, which holds the flow back, rarely waits for a CPU; more cores would not move the flow",
                c.sentence,
                app.process.as_deref().unwrap_or("?"),
                app.host
            ));
        } else if c.resource != Resource::CpuThread || c.utilization > 0.05 {
            let hr = headroom(c.utilization);
            ruled_out.push(format!("{} — {hr}", c.sentence));
        }
    }
    let mut at = usize::from(flow.is_some()) + usize::from(chosen.is_some());
    // The connections' own sentences follow an `app` or `network` verdict.
    if let Some(f) = flow.filter(|_| chosen.as_ref().is_some_and(is_limit)) {
        for (k, e) in f.limit_evidence.iter().enumerate() {
            evidence.insert(at + k, e.clone());
        }
        at += f.limit_evidence.len();
    }
    for (k, a) in also.into_iter().enumerate() {
        evidence.insert(at + k, a);
    }
    // Keep the ruled-out sentences in the evidence too: they carry the headroom numbers.
    evidence.extend(ruled_out.iter().cloned());
    let would_not_help = match &chosen {
        Some(w) => would_not_help(w, all, flow),
        None => Vec::new(),
    };
    match chosen {
        Some(w) => Bottleneck {
            host: Some(w.host.clone()),
            resource: w.resource,
            device: w.device.clone(),
            process: w.process.clone(),
            thread: w.thread.clone(),
            utilization: w.utilization,
            evidence,
            ruled_out,
            would_not_help,
        },
        None => {
            let outside = match flow {
                Some(_) => {
                    "nothing on the observed hosts is near a ceiling: the limit is outside them (the other end, the protocol or the application's own pacing)"
                }
                None => "no transfer and nothing near a ceiling: the hosts are idle",
            };
            evidence.insert(0, outside.to_string());
            // What the flow's connections say of it (a `limited_by` that could not be named
            // `app` or `network`: the application busy on a core, a disk or a link in use).
            if let Some(f) = flow.filter(|f| f.limited_by != crate::limit::LimitedBy::Unknown) {
                for (k, e) in f.limit_evidence.iter().enumerate() {
                    evidence.insert(1 + k, e.clone());
                }
            }
            Bottleneck {
                host: None,
                resource: Resource::None,
                device: None,
                process: None,
                thread: None,
                utilization: round2(all.iter().map(|c| c.score.min(1.0)).fold(0.0, f64::max)),
                evidence,
                ruled_out,
                would_not_help: Vec::new(),
            }
        }
    }
}

fn flow_sentence(f: &Flow) -> String {
    let ends = match (&f.from, &f.to) {
        (Some(a), Some(b)) if a != b => format!("{a} → {b}"),
        (_, Some(b)) => format!("into {b}"),
        (Some(a), None) => format!("out of {a}"),
        _ => "transfer".into(),
    };
    let grade = f
        .grade
        .as_ref()
        .map(|g| format!("; on 1 GbE that is {}", g.replace('_', " ")))
        .unwrap_or_default();
    format!(
        "flow {ends}: {:.0} MB/s sustained (median over {:.0} s), {:.0} MB/s mean, {:.0} MB/s peak (best 10 s){grade}",
        f.sustained_mb_s, f.active_seconds, f.mean_mb_s, f.peak_mb_s
    )
}

fn would_not_help(w: &Candidate, all: &[Candidate], flow: Option<&Flow>) -> Vec<String> {
    let on = |r: Resource| all.iter().find(|c| c.host == w.host && c.resource == r);
    let mut v = Vec::new();
    match w.resource {
        Resource::CpuThread => {
            v.push("link aggregation or a faster network: one TCP flow rides one link and the thread cannot go faster".to_string());
            if let Some(d) = on(Resource::Disk) {
                v.push(format!(
                    "faster disks: they are at {} util",
                    pct(d.utilization)
                ));
            }
            v.push("more cores: the work sits on one thread".to_string());
            let p = w.process.as_deref().unwrap_or("");
            if ["ssh", "sshd", "scp", "sftp-server", "dropbear"]
                .iter()
                .any(|x| p.starts_with(x))
            {
                v.push("what would: the transfer is CPU-bound on ssh encryption: rsync daemon mode (rsync://, no ssh) or a cheaper cipher (aes128-gcm@openssh.com where the CPU has AES instructions, else chacha20-poly1305@openssh.com) moves it; encryption pins one core on these CPUs (a WD MyCloud went from 20-25 MB/s over ssh to 55 MB/s with rsync daemon mode)".to_string());
            } else if p.starts_with("rsync") {
                v.push("what would: rsync --whole-file (-W) on a LAN copy (no delta checksums), and daemon mode (rsync://) so no ssh encrypts it".to_string());
            } else {
                v.push("what would: splitting the transfer into parallel streams, or a lighter mode of the tool".to_string());
            }
        }
        Resource::CpuAll => {
            v.push("a faster network or disks: every core is busy".to_string());
            v.push("what would: fewer or lighter jobs at once (compression level, parallel tasks), or a faster CPU".to_string());
        }
        Resource::Disk => {
            v.push(
                "a faster network, link aggregation or more CPU: the disks are the wall"
                    .to_string(),
            );
        }
        Resource::Nic => {
            v.push("faster disks or CPU: the link is full".to_string());
            v.push("link aggregation for a single flow: one TCP flow rides one link".to_string());
        }
        Resource::Memory => {
            v.push("a faster network: the host is swapping; free memory (stop memory hogs, add RAM) first".to_string());
        }
        Resource::App => {
            v.push(
                "a faster network, disks or more CPU: the application itself paces the flow"
                    .to_string(),
            );
            let receiver = flow.is_some_and(|f| f.limited_by == crate::limit::LimitedBy::Receiver);
            v.push(if receiver {
                "what would: the receiving application reading sooner and in larger blocks: it pauses between reads (a slow write to its own disk, a synchronous protocol answering each block, small reads)".to_string()
            } else {
                "what would: the sending application writing sooner and in larger blocks: its own rate limit (e.g. rsync --bwlimit), a synchronous protocol waiting for each reply, or small reads of its source".to_string()
            });
        }
        Resource::Network => {
            v.push("faster disks or CPU: the flow is held between the hosts".to_string());
            v.push("what would: finding the loss (cable, switch port, duplex, a shaper on the way), or on a long round trip larger TCP buffers (tcp_rmem/tcp_wmem) or parallel streams".to_string());
        }
        Resource::None => {}
    }
    v
}
