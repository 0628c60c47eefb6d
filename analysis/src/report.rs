//! The report: per-host summaries, the bottleneck, events with restart patterns and the context
//! of each death, gaps and progress — the JSON contract of `nasprobe report --json`.

use std::collections::BTreeMap;

use nasprobe_proto::{Event, ExitSeen};
use serde::Serialize;

use crate::input::{HostData, TimedEvent};
use crate::series::{self, HostSeries};
use crate::stats::{best_window, max, mean, median};
use crate::time::rfc3339;
use crate::verdict::{self, Bottleneck, Flow, MB, active_indices, pick, round2};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Window asked for, ms since the epoch (None: what the data spans).
    pub from_ms: Option<u64>,
    pub to_ms: Option<u64>,
    /// `--expect SIZE`: total bytes the transfer should land, for an ETA.
    pub expect_bytes: Option<u64>,
    /// The samples are rollups of this step, ms (a long window; None: raw samples).
    pub step_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub window: Window,
    pub hosts: Vec<HostSummary>,
    pub flow: Option<Flow>,
    pub bottleneck: Bottleneck,
    pub events: Vec<EventOut>,
    pub patterns: Vec<Pattern>,
    pub gaps: Vec<GapOut>,
    pub progress: Vec<Progress>,
    /// The files the transfer's processes had open in the last minute of the window.
    pub transfers: Vec<crate::transfers::Transfer>,
    /// Periods where a transfer's own progress fell under 5 MB/s, with the file it was on.
    pub stalls: Vec<crate::transfers::Stall>,
    /// Over a long window (`Options::step_ms` set): the events summarised, one entry per host,
    /// kind, process or device and, for exits, how they ended; `events` then lists only the
    /// first and last [`GROUP_KEEP_ENDS`] of each group. Empty over a short window, where
    /// `events` lists every event.
    pub event_groups: Vec<EventGroup>,
}

impl Report {
    /// Every event of the window: over a long window `events` lists only some of them.
    pub fn events_total(&self) -> usize {
        if self.event_groups.is_empty() {
            self.events.len()
        } else {
            self.event_groups.iter().map(|g| g.count).sum()
        }
    }
}

/// Over a long window, each event group keeps this many of its first and of its last events
/// in `events[]`: a group of up to twice as many (a rare OOM kill, a link change, an agent
/// restart) is listed in full, and a crash loop of thousands of exits shows how it began and
/// how it ended next to its one summary line, which keeps a week's report small.
pub const GROUP_KEEP_ENDS: usize = 3;

/// Events of one host alike (same kind, process or device and, for exits, the same end),
/// summarised over a long window.
#[derive(Debug, Clone, Serialize)]
pub struct EventGroup {
    pub host: String,
    pub kind: &'static str,
    pub process: Option<String>,
    pub device: Option<String>,
    /// `process_exit`: how they ended ("died by SIGKILL", "killed by the OOM killer",
    /// "exited with status 1", "ended (status unknown: seen by a /proc scan)").
    pub ended: Option<String>,
    /// `process_exit`: the cause of the end (`oom`, `killed`, `crashed`, `error_exit`,
    /// `clean` or `unknown`, as in `patterns[].cause`).
    pub cause: Option<&'static str>,
    pub exit_code: Option<u8>,
    pub signal: Option<String>,
    pub oom_killed: Option<bool>,
    pub count: usize,
    /// Times of the first and the last event (RFC 3339, like `events[].at`).
    pub first: String,
    pub last: String,
    /// How many of them `events[]` lists one by one (the first and last few).
    pub listed: usize,
    /// Process events: the median lifetime and the CPU seconds of all of them together.
    pub median_lifetime_s: Option<f64>,
    pub cpu_s: Option<f64>,
    /// One line: "nas1: 10000 × btrfs exited with status 1 (median lifetime 6 s) from .. to ..".
    pub summary: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub from: String,
    pub to: String,
    pub seconds: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostSummary {
    pub name: String,
    pub samples: usize,
    pub cpu: CpuSummary,
    pub top_processes: Vec<ProcSummary>,
    pub disks: Vec<DiskSummary>,
    pub nics: Vec<NicSummary>,
    pub memory: MemSummary,
    pub tcp: TcpSummary,
    /// The agent's own CPU, µs per second of wall time (median).
    pub agent_cpu_us_per_s: f64,
    /// The agent's clock minus the collector's (ms), measured over the connection handshake;
    /// null when not measured (a store written by an older collector).
    pub clock_offset_ms: Option<i64>,
    /// How exact that is: half the handshake's round trip (ms).
    pub clock_offset_precision_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CpuSummary {
    pub cores: usize,
    /// All cores together, 0..1.
    pub busy: f64,
    pub busy_peak: f64,
    pub iowait: f64,
    pub per_core_busy: Vec<f64>,
    pub run_queue: f64,
    pub hottest_thread: Option<ThreadSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadSummary {
    pub process: String,
    pub thread: String,
    pub pid: u32,
    pub tid: u32,
    /// Fraction of one core, median over the active period.
    pub core_fraction: f64,
    pub peak: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcSummary {
    pub name: String,
    pub pid: u32,
    /// CPU in cores (1.0 = one full core), median and mean over the active period.
    pub cpu_cores: f64,
    pub cpu_cores_mean: f64,
    pub threads: u16,
    /// Share of the time spent waiting for a CPU (schedstat run_delay), when known.
    pub run_delay: Option<f64>,
    pub cmdline: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiskSummary {
    pub name: String,
    pub is_md: bool,
    pub rotational: Option<bool>,
    pub util: f64,
    pub util_peak: f64,
    pub await_ms: f64,
    pub queue: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NicSummary {
    pub name: String,
    pub speed_mbit: u32,
    pub full_duplex: bool,
    pub mtu: u32,
    pub rx_mb_s: f64,
    pub tx_mb_s: f64,
    pub rx_peak_mb_s: f64,
    pub tx_peak_mb_s: f64,
    /// Against the link speed; null when the speed is unknown.
    pub util: Option<f64>,
    pub errors_per_s: f64,
    pub drops_per_s: f64,
    pub is_bond: bool,
    pub slaves: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemSummary {
    pub total_mib: f64,
    pub available_mib_min: f64,
    pub available_estimated: bool,
    pub swap_used_mib: f64,
    pub swap_in_pages_s: f64,
    pub swap_out_pages_s: f64,
    pub major_faults_s: f64,
    pub alloc_stalls_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TcpSummary {
    pub retransmits: f64,
    pub resets: f64,
    pub timeouts: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventOut {
    pub host: String,
    pub at: String,
    pub kind: &'static str,
    pub pid: Option<u32>,
    pub process: Option<String>,
    pub cmdline: Option<String>,
    pub lifetime_s: Option<f64>,
    pub cpu_s: Option<f64>,
    pub device: Option<String>,
    pub detail: Option<String>,
    /// `process_exit`: the status it exited with; null when a signal ended it or unknown.
    pub exit_code: Option<u8>,
    /// `process_exit`: the signal that ended it ("SIGKILL"), null when none or unknown.
    pub signal: Option<String>,
    pub core_dumped: Option<bool>,
    pub oom_killed: Option<bool>,
    /// `process_exit`: `kernel` (process connector: the status is known) or `scan`.
    pub exit_seen: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeathContext {
    pub at: String,
    pub pid: u32,
    pub lifetime_s: f64,
    pub cmdline: String,
    /// "died by SIGKILL after 8 s", "exited with status 1 after 2 min".
    pub ended: String,
    /// The cause of this death alone (see [`Pattern::cause`]).
    pub cause: &'static str,
    /// Seconds before the death the figures below cover: the minute before, or the second half
    /// of the process's life when that is shorter (at least 2 s), so one death's context never
    /// holds the previous one's and the first half of the life gives the usual rates.
    pub window_s: f64,
    pub tcp_retransmits: f64,
    pub tcp_resets: f64,
    pub tcp_timeouts: f64,
    pub nic_errors: f64,
    pub nic_drops: f64,
    pub link_down: bool,
    pub swap_pages: f64,
    pub process_cpu_cores: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pattern {
    pub host: String,
    pub process: String,
    /// The command with its changing numbers replaced by `N`.
    pub command: String,
    pub restarts: usize,
    pub every_s: Option<f64>,
    pub new_arguments_each_time: bool,
    pub summary: String,
    /// What most deaths had in the time before them, against the host's usual (a burst of TCP
    /// retransmits or timeouts, the link going down, NIC errors, swapping); or that none of it
    /// was seen (then a watchdog or the program itself is the suspect).
    pub before_deaths: Vec<String>,
    /// How the deaths ended: `oom`, `killed`, `crashed`, `error_exit`, `clean` or `unknown`
    /// (the cause of most of them).
    pub cause: &'static str,
    /// Sentences with the counts and times behind `cause`.
    pub cause_evidence: Vec<String>,
    /// Each death with its context; over a long window only the first and last
    /// [`GROUP_KEEP_ENDS`] (`deaths_total` counts them all, the other fields are of all).
    pub deaths: Vec<DeathContext>,
    pub deaths_total: usize,
}

/// Keeps the first and the last [`GROUP_KEEP_ENDS`] of `v`.
fn keep_ends<T>(v: &mut Vec<T>) {
    if v.len() > 2 * GROUP_KEEP_ENDS {
        v.drain(GROUP_KEEP_ENDS..v.len() - GROUP_KEEP_ENDS);
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GapOut {
    pub host: String,
    pub from: String,
    pub to: String,
    pub samples: Option<u64>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    pub host: String,
    pub mount: String,
    pub landed_bytes: f64,
    pub rate_mb_s: f64,
    pub used_bytes: f64,
    pub expected_bytes: Option<u64>,
    pub eta_seconds: Option<f64>,
}

/// Prefix of the gap reason of a stored row that could not be decoded (a corrupt row): it is
/// left out of every figure and listed as a gap instead of being dropped silently.
pub const UNDECODABLE_PREFIX: &str = "undecodable";

/// The gap reason of stored `what` ("sample", "event") `seq` that does not decode.
pub fn undecodable_reason(what: &str, seq: u64) -> String {
    format!("{UNDECODABLE_PREFIX}: the stored {what} seq {seq} does not decode")
}

/// Everything the analysis builds from one window, built once: the JSON and text renderings
/// print its `report`, the HTML one draws its series and candidates as well (none of them
/// rebuilds series, smoothing, flow or verdict).
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Per host (in the order of the input), the series of every sample, each decoded once.
    pub raw: Vec<HostSeries>,
    /// The same merged into buckets of a few seconds ([`series::smooth`]): what is judged.
    pub smoothed: Vec<HostSeries>,
    /// The transfer's active period, when there is one.
    pub active: Option<(u64, u64)>,
    /// Per host, the candidates the verdict weighed.
    pub candidates: Vec<Vec<verdict::Candidate>>,
    pub report: Report,
}

/// The report of `hosts` (see [`analyze`]).
pub fn build(hosts: &[HostData], opts: &Options) -> Report {
    analyze(hosts, opts).report
}

/// Builds the series, the flow, the verdict and the report of `hosts` over the window.
pub fn analyze(hosts: &[HostData], opts: &Options) -> Analysis {
    analyze_with_detail(hosts, opts, None)
}

/// Raw samples of host `hosts[k]` over `[from_ms, to_ms]`, for a report over rollups that needs
/// the detail somewhere (None: not stored any more, or not to be read).
pub type Detail<'a> = dyn Fn(usize, u64, u64) -> Option<HostData> + 'a;

/// [`analyze`] over rollups (`Options::step_ms`) with a way to read raw samples back: each
/// listed death's context (the minute before it) is taken from the raw samples of that time
/// when `detail` has them, not from the steps.
pub fn analyze_with_detail(
    hosts: &[HostData],
    opts: &Options,
    detail: Option<&Detail<'_>>,
) -> Analysis {
    // Events in time order (`HostData::events_between` bisects): a copy of the hosts whose
    // events are not (a store read instance by instance, a hand-built input).
    let sorted: Vec<HostData>;
    let hosts = if hosts
        .iter()
        .all(|h| h.events.is_sorted_by_key(|e| e.time_ms))
    {
        hosts
    } else {
        sorted = hosts
            .iter()
            .map(|h| {
                let mut h = h.clone();
                h.events.sort_by_key(|e| e.time_ms);
                h
            })
            .collect();
        &sorted
    };
    // Judged on the smoothed series (rates over a few seconds, see `series::smooth`); the raw
    // one gives the sample counts and each death's context.
    let raw: Vec<HostSeries> = hosts.iter().map(series::build).collect();
    let series: Vec<HostSeries> = raw.iter().map(series::smooth).collect();
    let (flow, active_range) = verdict::find_flow(&series);
    let mut summaries = Vec::new();
    let mut per_host = Vec::new();
    for (s, r) in series.iter().zip(&raw) {
        let idx = active_indices(s, active_range);
        per_host.push(verdict::candidates(s, &idx));
        summaries.push(summarize(s, &idx, r.points.len()));
    }
    for (sum, h) in summaries.iter_mut().zip(hosts) {
        let c = h.clock();
        sum.clock_offset_ms = c.map(|c| c.offset_ms);
        sum.clock_offset_precision_ms = c.map(|c| c.precision_ms);
    }
    let mut candidates: Vec<verdict::Candidate> = per_host.iter().flatten().cloned().collect();
    let mut flow = flow;
    if let (Some(f), Some(range)) = (flow.as_mut(), active_range) {
        let stats = crate::limit::conn_stats(hosts, range);
        let limit = crate::limit::judge(&stats, f.from.as_deref(), f.to.as_deref());
        f.limited_by = limit.by;
        f.limit_evidence = limit.evidence.clone();
        // The application's wait for a CPU, on its host over the active period.
        let run_delay = limit
            .host
            .as_deref()
            .zip(limit.process.as_deref())
            .and_then(|(h, p)| {
                let s = series.iter().find(|s| s.name == h)?;
                let idx = active_indices(s, Some(range));
                median(&pick(&s.procs.get(p)?.run_delay_frac, &idx))
            });
        candidates.extend(crate::limit::candidate(&limit, &candidates, run_delay));
    }
    let mut bottleneck = verdict::decide(&candidates, flow.as_ref());
    bottleneck.would_not_help.extend(crate::advice::concrete(
        &series,
        active_range,
        flow.as_ref(),
    ));

    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for h in hosts {
        for s in &h.samples {
            lo = lo.min(s.time_ms.saturating_sub(s.interval_us as u64 / 1000));
            hi = hi.max(s.time_ms);
        }
        // An agent's first record is its agent_start event: the window holds it too.
        for e in &h.events {
            lo = lo.min(e.time_ms);
            hi = hi.max(e.time_ms);
        }
    }
    let from = opts.from_ms.unwrap_or(if lo == u64::MAX { 0 } else { lo });
    let to = opts.to_ms.unwrap_or(hi.max(from));

    let long = opts.step_ms.is_some();
    let (events, event_groups) = events_and_groups(hosts, long);
    let patterns = hosts
        .iter()
        .zip(&raw)
        .enumerate()
        .flat_map(|(k, (_, s))| restart_patterns(hosts, k, s, long, detail))
        .collect();
    let gaps = hosts
        .iter()
        .zip(&raw)
        .flat_map(|(h, r)| {
            let stored = h.gaps.iter().map(|g| GapOut {
                host: h.name.clone(),
                from: rfc3339(g.from_ms),
                to: rfc3339(g.to_ms),
                samples: g.samples,
                reason: g.reason.clone(),
            });
            let undecodable = r.undecodable.iter().map(|&(t, seq)| GapOut {
                host: h.name.clone(),
                from: rfc3339(t),
                to: rfc3339(t),
                samples: Some(1),
                reason: undecodable_reason("sample", seq),
            });
            stored.chain(undecodable)
        })
        .collect();
    let progress = raw
        .iter()
        .flat_map(|s| progress(s, opts.expect_bytes))
        .collect();
    let (transfers, stalls) = crate::transfers::build(hosts, from, to);
    let report = Report {
        window: Window {
            from: rfc3339(from),
            to: rfc3339(to),
            seconds: to.saturating_sub(from) / 1000,
        },
        hosts: summaries,
        flow,
        bottleneck,
        events,
        patterns,
        gaps,
        progress,
        transfers,
        stalls,
        event_groups,
    };
    Analysis {
        raw,
        smoothed: series,
        active: active_range,
        candidates: per_host,
        report,
    }
}

/// `events[]` in time order to the millisecond (`at` shows whole seconds), hosts in their order
/// on ties; over a long window only the first and last [`GROUP_KEEP_ENDS`] of each group, with
/// the groups. Per-sample measurements (TCP connections, open files) are not events.
fn events_and_groups(hosts: &[HostData], long: bool) -> (Vec<EventOut>, Vec<EventGroup>) {
    let mut timed: Vec<((u64, usize, usize), EventOut)> = Vec::new();
    let mut groups = Vec::new();
    for (k, h) in hosts.iter().enumerate() {
        let kept: Vec<(usize, &TimedEvent)> = if long {
            host_groups(h)
                .into_iter()
                .flat_map(|(g, kept)| {
                    groups.push(g);
                    kept
                })
                .collect()
        } else {
            h.events
                .iter()
                .filter(|e| !e.is_measurement())
                .enumerate()
                .collect()
        };
        timed.extend(kept.into_iter().map(|(i, e)| {
            let out = event_out(&h.name, e.time_ms, &e.event(), |ticks| {
                h.ticks_s(e.instance, ticks)
            });
            ((e.time_ms, k, i), out)
        }));
    }
    timed.sort_by_key(|e| e.0);
    (timed.into_iter().map(|e| e.1).collect(), groups)
}

/// A host's events (not the measurements) grouped, in the order of each group's first event:
/// each group with the events it keeps, its first and last [`GROUP_KEEP_ENDS`], and their
/// positions among the host's events.
pub(crate) fn host_groups(h: &HostData) -> Vec<(EventGroup, Vec<(usize, &TimedEvent)>)> {
    let mut acc: BTreeMap<GroupKey, GroupAcc> = BTreeMap::new();
    for (i, e) in h.events.iter().filter(|e| !e.is_measurement()).enumerate() {
        let ev = e.event();
        let g = acc.entry(group_key(&ev)).or_insert_with(|| GroupAcc {
            order: i,
            first_ms: e.time_ms,
            cause: ev
                .as_exit()
                .map(|(_, st)| crate::exits::cause_of(st).name()),
            ..GroupAcc::default()
        });
        g.count += 1;
        g.last_ms = e.time_ms;
        if g.head.len() < GROUP_KEEP_ENDS {
            g.head.push((i, e));
        } else {
            g.tail.push_back((i, e));
            if g.tail.len() > GROUP_KEEP_ENDS {
                g.tail.pop_front();
            }
        }
        if let Some((x, _)) = ev.as_exit() {
            g.lifetimes_s.push(x.lifetime_ms as f64 / 1000.0);
            g.cpu_s += h.ticks_s(e.instance, x.cpu_ticks);
        }
    }
    let mut acc: Vec<(GroupKey, GroupAcc)> = acc.into_iter().collect();
    acc.sort_by_key(|(_, g)| g.order);
    acc.into_iter()
        .map(|(key, g)| {
            let out = group_out(h, key, &g);
            let mut kept = g.head;
            kept.extend(g.tail);
            (out, kept)
        })
        .collect()
}

/// What makes events one group: kind, process, device and, for exits, how they ended.
pub(crate) type GroupKey = (&'static str, Option<String>, Option<String>, Option<String>);

pub(crate) fn group_key(e: &Event) -> GroupKey {
    let (process, device, ended) = match e {
        Event::ProcessStart(p) => (Some(p.comm.to_string()), None, None),
        Event::ProcessExit(_) | Event::ProcessEnd(_) => {
            let (x, st) = e.as_exit().unzip();
            (
                x.map(|x| x.process.comm.to_string()),
                None,
                st.map(crate::exits::how_it_ended),
            )
        }
        Event::LinkChange(l) => (None, Some(l.nic.to_string()), None),
        Event::KernelMessage(m) => (None, m.nic.as_deref().map(str::to_string), None),
        Event::DeviceAdded(
            nasprobe_proto::DeviceAdded::Disk(n) | nasprobe_proto::DeviceAdded::Nic(n),
        ) => (None, Some(n.to_string()), None),
        Event::AgentStart(_)
        | Event::ExitWatch(_)
        | Event::Connections(_)
        | Event::OpenFiles(_) => (None, None, None),
    };
    (e.kind(), process, device, ended)
}

/// A group as it is gathered: the first and last few of its events, its figures.
#[derive(Default)]
struct GroupAcc<'a> {
    /// Position of its first event among the host's: groups are listed in that order.
    order: usize,
    /// Exits: their cause (`Cause::name`).
    cause: Option<&'static str>,
    first_ms: u64,
    last_ms: u64,
    count: usize,
    head: Vec<(usize, &'a TimedEvent)>,
    tail: std::collections::VecDeque<(usize, &'a TimedEvent)>,
    lifetimes_s: Vec<f64>,
    cpu_s: f64,
}

fn group_out(h: &HostData, key: GroupKey, g: &GroupAcc) -> EventGroup {
    let host = &h.name;
    let (kind, process, device, ended) = key;
    // The end's figures as its first event reports them (one `ended` text, one end).
    let first = g.head.first().map(|(_, e)| {
        event_out(host, e.time_ms, &e.event(), |ticks| {
            h.ticks_s(e.instance, ticks)
        })
    });
    let first = first.as_ref();
    let is_exit = g.cause.is_some();
    let median_lifetime_s = median(&g.lifetimes_s).map(round2);
    let cpu_s = is_exit.then(|| round2(g.cpu_s));
    let mut out = EventGroup {
        host: host.to_string(),
        kind,
        cause: g.cause,
        exit_code: first.and_then(|e| e.exit_code),
        signal: first.and_then(|e| e.signal.clone()),
        oom_killed: first.and_then(|e| e.oom_killed),
        process,
        device,
        ended,
        count: g.count,
        first: rfc3339(g.first_ms),
        last: rfc3339(g.last_ms),
        listed: g.head.len() + g.tail.len(),
        median_lifetime_s,
        cpu_s,
        summary: String::new(),
    };
    out.summary = format!(
        "{host}: {} × {}, {} .. {}{}",
        out.count,
        out.what(),
        out.first,
        out.last,
        out.figures()
    );
    out
}

impl EventGroup {
    /// "process_exit rsync exited with status 12": its kind, process or device and end.
    pub fn what(&self) -> String {
        [
            Some(self.kind),
            self.process.as_deref(),
            self.device.as_deref(),
            self.ended.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// " (median lifetime 8 s, 22 h 13 min of CPU in all)" for exits, else "".
    pub fn figures(&self) -> String {
        self.median_lifetime_s
            .map(|l| {
                format!(
                    " (median lifetime {}, {} of CPU in all)",
                    crate::time::dur(l),
                    crate::time::dur(self.cpu_s.unwrap_or(0.0))
                )
            })
            .unwrap_or_default()
    }
}

fn med(v: &[f64], idx: &[usize]) -> f64 {
    round2(median(&pick(v, idx)).unwrap_or(0.0))
}

fn peak_of(s: &HostSeries, v: &[f64], idx: &[usize]) -> f64 {
    let pts: Vec<(u64, f64, f64)> = idx
        .iter()
        .filter_map(|&i| Some((s.points[i].time_ms, s.points[i].interval_ms, *v.get(i)?)))
        .collect();
    round2(best_window(&pts, verdict::PEAK_SPAN_MS).unwrap_or(0.0))
}

fn summarize(s: &HostSeries, idx: &[usize], samples: usize) -> HostSummary {
    let cores = s
        .cpu_count
        .max(s.core_busy.iter().map(Vec::len).max().unwrap_or(0));
    let per_core_busy = (0..cores)
        .map(|c| {
            let v: Vec<f64> = idx
                .iter()
                .filter_map(|&i| s.core_busy.get(i).and_then(|r| r.get(c)).copied())
                .collect();
            round2(median(&v).unwrap_or(0.0))
        })
        .collect();
    let hottest_thread = s
        .threads
        .iter()
        .map(|(k, t)| (k, t, median(&pick(&t.frac, idx)).unwrap_or(0.0)))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(k, t, f)| ThreadSummary {
            process: k.process.clone(),
            thread: k.thread.clone(),
            pid: t.last_pid,
            tid: t.last_tid,
            core_fraction: round2(f.min(1.0)),
            peak: round2(max(&pick(&t.frac, idx)).unwrap_or(0.0).min(1.0)),
        });
    let mut top_processes: Vec<ProcSummary> = s
        .procs
        .iter()
        .map(|(name, p)| ProcSummary {
            name: name.clone(),
            pid: p.last_pid,
            cpu_cores: med(&p.cores, idx),
            cpu_cores_mean: round2(mean(&pick(&p.cores, idx)).unwrap_or(0.0)),
            threads: p.threads,
            run_delay: median(&pick(&p.run_delay_frac, idx)).map(round2),
            cmdline: p.cmdline.clone(),
        })
        .filter(|p| p.cpu_cores_mean > 0.0)
        .collect();
    top_processes.sort_by(|a, b| b.cpu_cores_mean.total_cmp(&a.cpu_cores_mean));
    top_processes.truncate(8);
    let disks = s
        .disks
        .iter()
        .map(|(name, d)| DiskSummary {
            name: name.clone(),
            is_md: d.is_md,
            rotational: d.rotational,
            util: med(&d.util, idx),
            util_peak: peak_of(s, &d.util, idx),
            await_ms: med(&d.await_ms, idx),
            queue: med(&d.queue, idx),
            read_mb_s: round2(mean(&pick(&d.read_bps, idx)).unwrap_or(0.0) / MB),
            write_mb_s: round2(mean(&pick(&d.write_bps, idx)).unwrap_or(0.0) / MB),
        })
        .collect();
    let nics = s
        .nics
        .iter()
        .map(|(name, n)| {
            let speed = median(&pick(&n.speed_bps, idx)).unwrap_or(0.0);
            let util = verdict::nic_util(n, idx);
            NicSummary {
                name: name.clone(),
                speed_mbit: (speed * 8.0 / 1e6).round() as u32,
                full_duplex: n.full_duplex.last().copied().unwrap_or(true),
                mtu: n.mtu,
                rx_mb_s: round2(med(&n.rx_bps, idx) / MB),
                tx_mb_s: round2(med(&n.tx_bps, idx) / MB),
                rx_peak_mb_s: round2(peak_of(s, &n.rx_bps, idx) / MB),
                tx_peak_mb_s: round2(peak_of(s, &n.tx_bps, idx) / MB),
                util: util.is_finite().then(|| round2(util)),
                errors_per_s: med(&n.errors_ps, idx),
                drops_per_s: med(&n.drops_ps, idx),
                is_bond: n.is_bond,
                slaves: n.slaves.clone(),
            }
        })
        .collect();
    let m = &s.mem;
    let stalls = pick(&m.alloc_stalls_ps, idx);
    HostSummary {
        name: s.name.clone(),
        samples,
        cpu: CpuSummary {
            cores,
            busy: med(&s.cpu_busy, idx),
            busy_peak: peak_of(s, &s.cpu_busy, idx),
            iowait: med(&s.cpu_iowait, idx),
            per_core_busy,
            run_queue: med(&s.run_queue, idx),
            hottest_thread,
        },
        top_processes,
        disks,
        nics,
        memory: MemSummary {
            total_mib: round2(med(&m.total_kib, idx) / 1024.0),
            available_mib_min: round2(
                pick(&m.available_kib, idx)
                    .into_iter()
                    .filter(|x| x.is_finite())
                    .fold(f64::INFINITY, f64::min)
                    .min(1e18)
                    / 1024.0,
            ),
            available_estimated: m.available_estimated,
            swap_used_mib: round2(med(&m.swap_used_kib, idx) / 1024.0),
            swap_in_pages_s: med(&m.swap_in_ps, idx),
            swap_out_pages_s: med(&m.swap_out_ps, idx),
            major_faults_s: med(&m.major_faults_ps, idx),
            alloc_stalls_s: median(&stalls).map(round2),
        },
        tcp: TcpSummary {
            retransmits: pick(&s.tcp.retrans, idx)
                .iter()
                .filter(|x| x.is_finite())
                .sum(),
            resets: pick(&s.tcp.resets, idx)
                .iter()
                .filter(|x| x.is_finite())
                .sum(),
            timeouts: pick(&s.tcp.timeouts, idx)
                .iter()
                .filter(|x| x.is_finite())
                .sum(),
        },
        agent_cpu_us_per_s: round2(median(&s.agent_cpu).unwrap_or(0.0) * 1e6),
        // Set by `analyze` from the instances.
        clock_offset_ms: None,
        clock_offset_precision_ms: None,
    }
}

fn event_out(host: &str, time_ms: u64, e: &Event, cpu_s: impl Fn(u64) -> f64) -> EventOut {
    let mut o = EventOut {
        host: host.to_string(),
        at: rfc3339(time_ms),
        kind: e.kind(),
        pid: None,
        process: None,
        cmdline: None,
        lifetime_s: None,
        cpu_s: None,
        device: None,
        detail: None,
        exit_code: None,
        signal: None,
        core_dumped: None,
        oom_killed: None,
        exit_seen: None,
    };
    if let Some((x, st)) = e.as_exit() {
        o.pid = Some(x.process.pid);
        o.process = Some(x.process.comm.as_str().into());
        o.cmdline = Some(x.process.cmdline.as_str().into());
        o.lifetime_s = Some(round2(x.lifetime_ms as f64 / 1000.0));
        o.cpu_s = Some(round2(cpu_s(x.cpu_ticks)));
        o.detail = Some(crate::exits::end_text(st, x.lifetime_ms));
        o.exit_code = st.and_then(|s| s.code);
        o.signal = st.and_then(|s| s.signal).map(crate::exits::signal_text);
        o.core_dumped = Some(st.is_some_and(|s| s.core_dumped));
        o.oom_killed = Some(st.is_some_and(|s| s.oom_killed));
        o.exit_seen = Some(st.map_or(ExitSeen::Scan, |s| s.seen).name());
        return o;
    }
    match e {
        Event::ProcessStart(p) => {
            o.pid = Some(p.pid);
            o.process = Some(p.comm.as_str().into());
            o.cmdline = Some(p.cmdline.as_str().into());
        }
        Event::ProcessExit(_)
        | Event::ProcessEnd(_)
        | Event::Connections(_)
        | Event::OpenFiles(_) => {}
        Event::KernelMessage(m) => {
            o.pid = m.pid;
            o.device = m.nic.as_deref().map(str::to_string);
            o.detail = Some(if m.suppressed > 0 {
                format!(
                    "{} ({} similar kernel lines left out before)",
                    m.text, m.suppressed
                )
            } else {
                m.text.to_string()
            });
        }
        Event::ExitWatch(w) => {
            o.detail = Some(format!(
                "exits seen by {}{}",
                match w.source {
                    ExitSeen::Kernel => "the kernel's process connector (with status)",
                    ExitSeen::Scan => "scanning /proc (without status)",
                },
                if w.dropped > 0 {
                    format!(
                        "; {} connector overruns (exits in them seen by the scan)",
                        w.dropped
                    )
                } else {
                    String::new()
                }
            ));
        }
        Event::LinkChange(l) => {
            o.device = Some(l.nic.as_str().into());
            o.detail = Some(format!(
                "{} {} Mb/s {} mtu {}",
                if l.up { "up" } else { "down" },
                l.speed_mbit,
                match l.full_duplex {
                    Some(true) => "full duplex",
                    Some(false) => "half duplex",
                    None => "duplex unknown",
                },
                l.mtu
            ));
        }
        Event::AgentStart(a) => {
            o.detail = Some(format!(
                "agent {} instance {:016x}, interval {} ms",
                a.agent_version, a.instance_id, a.interval_ms
            ));
        }
        Event::DeviceAdded(d) => {
            o.device = Some(match d {
                nasprobe_proto::DeviceAdded::Disk(n) | nasprobe_proto::DeviceAdded::Nic(n) => {
                    n.as_str().into()
                }
            });
        }
    }
    o
}

/// A command's shape: numbers replaced by `N`, so restarts with new tokens group together.
pub(crate) fn command_shape(cmd: &str) -> String {
    let mut out = String::with_capacity(cmd.len());
    let mut in_num = false;
    for ch in cmd.chars() {
        if ch.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(ch);
        }
    }
    out
}

/// The identity of a restarting command: its process name and the first two words of its
/// command shape (`btrfs send`), so that a resume with extra arguments (`-k TOKEN`) is the same
/// command as the first run without them.
fn restart_key(comm: &str, cmdline: &str) -> (String, String) {
    let shape = command_shape(cmdline);
    let head: Vec<&str> = shape.split_whitespace().take(2).collect();
    (comm.to_string(), head.join(" "))
}

/// A start within this long before a death still counts as its restart (the new instance can
/// be up before the old one is reaped; both land in the same scan).
const RESTART_EARLY_MS: u64 = 2_000;

/// One death of a restarting command, as much of its exit as the pattern needs.
struct Exit {
    pid: u32,
    lifetime_ms: u64,
    comm: String,
    cmdline: String,
}

fn restart_patterns(
    hosts: &[HostData],
    at: usize,
    s: &HostSeries,
    long: bool,
    detail: Option<&Detail<'_>>,
) -> Vec<Pattern> {
    let h = &hosts[at];
    type Deaths = Vec<(u64, Exit, Option<nasprobe_proto::ExitStatus>)>;
    let mut groups: BTreeMap<(String, String), Deaths> = BTreeMap::new();
    let mut starts: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for e in h.events.iter().filter(|e| !e.is_measurement()) {
        let ev = e.event();
        if let Some((x, st)) = ev.as_exit() {
            let exit = Exit {
                pid: x.process.pid,
                lifetime_ms: x.lifetime_ms,
                comm: x.process.comm.to_string(),
                cmdline: x.process.cmdline.to_string(),
            };
            groups
                .entry(restart_key(&exit.comm, &exit.cmdline))
                .or_default()
                .push((crate::exits::exit_time(e.time_ms, st), exit, st.copied()));
            continue;
        }
        if let Event::ProcessStart(p) = &ev {
            starts
                .entry(restart_key(p.comm.as_str(), p.cmdline.as_str()))
                .or_default()
                .push(e.time_ms);
        }
    }
    let points_sorted = s.points.is_sorted_by_key(|p| p.time_ms);
    let mut out = Vec::new();
    for (key, deaths) in groups {
        let comm = key.0.clone();
        // The command as last seen, its changing numbers as `N`.
        let shape = command_shape(deaths.last().map_or("", |d| d.1.cmdline.as_str()));
        // A restart: a death followed by a start of the same command before the next death.
        // The starts are in time order (the events are): the first one late enough, bisected.
        let st = starts.get(&key).map(Vec::as_slice).unwrap_or_default();
        let restarts = deaths
            .iter()
            .enumerate()
            .filter(|(k, (t, _, _))| {
                let until = deaths.get(k + 1).map_or(u64::MAX, |d| d.0);
                let i = st.partition_point(|&x| x + RESTART_EARLY_MS < *t);
                st.get(i).is_some_and(|&x| x < until.max(*t + 1))
            })
            .count();
        // A pattern is a command that died and came back more than once; a single death
        // is in the events already.
        if deaths.len() < 2 || restarts == 0 {
            continue;
        }
        let times: Vec<f64> = deaths.iter().map(|d| d.0 as f64).collect();
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) / 1000.0).collect();
        let every_s = median(&gaps).map(round2);
        let distinct_args = deaths
            .iter()
            .map(|d| d.1.cmdline.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let new_args = distinct_args > 1;
        let ends: Vec<crate::exits::Death> = deaths
            .iter()
            .map(|(t, x, st)| crate::exits::Death {
                time_ms: *t,
                lifetime_ms: x.lifetime_ms,
                status: st.as_ref(),
                network: crate::conns::trouble_before(h, x.pid, *t),
                peer: crate::conns::peer_end(hosts, at, x.pid, *t),
            })
            .collect();
        let mut ctx: Vec<DeathContext> = deaths
            .iter()
            .zip(&ends)
            .map(|((t, x, _), d)| death_context(h, s, *t, x, d, points_sorted))
            .collect();
        let every_txt = every_s
            .map(|e| {
                if e >= 120.0 {
                    format!(", every ~{:.0} min", e / 60.0)
                } else {
                    format!(", every ~{e:.0} s")
                }
            })
            .unwrap_or_default();
        // Per death: the rest of its life before its context window, for the usual rates.
        let earlier: Vec<(u64, u64)> = deaths
            .iter()
            .map(|(t, x, _)| {
                let ctx_from = t.saturating_sub(death_span_ms(x.lifetime_ms));
                (t.saturating_sub(x.lifetime_ms), ctx_from)
            })
            .collect();
        let (cause, cause_evidence) = crate::exits::pattern_cause(&ends);
        let known = cause != crate::exits::Cause::Unknown;
        let before_deaths = before_deaths(s, &earlier, &ctx, known);
        let how = match cause_evidence.first() {
            Some(e) if known => format!("; {e}"),
            _ => String::new(),
        };
        let summary = format!(
            "{}: `{}` died {} times and came back {} times{}{}; {}{how}",
            h.name,
            shape,
            deaths.len(),
            restarts,
            every_txt,
            if new_args {
                ", resuming with new arguments each time (a resume token?)"
            } else {
                ""
            },
            before_deaths.join("; ")
        );
        let deaths_total = ctx.len();
        if long {
            // The deaths listed get their context from raw samples where those are kept.
            let mut keep: Vec<usize> = (0..ctx.len()).collect();
            keep_ends(&mut keep);
            ctx = keep
                .into_iter()
                .map(|i| {
                    let (t, x, _) = &deaths[i];
                    detail
                        .and_then(|f| {
                            let span = death_span_ms(x.lifetime_ms);
                            let raw = f(at, t.saturating_sub(span + DETAIL_MARGIN_MS), *t)?;
                            let rs = series::build(&raw);
                            let sorted = rs.points.is_sorted_by_key(|p| p.time_ms);
                            (!rs.points.is_empty())
                                .then(|| death_context(&raw, &rs, *t, x, &ends[i], sorted))
                        })
                        .unwrap_or_else(|| ctx[i].clone())
                })
                .collect();
        }
        out.push(Pattern {
            host: h.name.clone(),
            process: comm,
            command: shape,
            restarts,
            every_s,
            new_arguments_each_time: new_args,
            summary,
            before_deaths,
            cause: cause.name(),
            cause_evidence,
            deaths: ctx,
            deaths_total,
        });
    }
    out
}

/// What most deaths share in the time before them, compared with the host's usual rates.
///
/// `status_known`: the exits say how they ended, so when nothing else shows the suspects are not
/// guessed at.
fn before_deaths(
    s: &HostSeries,
    earlier: &[(u64, u64)],
    ctx: &[DeathContext],
    status_known: bool,
) -> Vec<String> {
    if ctx.is_empty() {
        return Vec::new();
    }
    // The usual rate of TCP retransmits: over the earlier part of each dead process's life
    // (before its context window); without any, the quieter half of the host's window.
    let (mut n, mut secs) = (0.0, 0.0);
    let inside = covered(&s.points, earlier);
    for ((x, p), inside) in s.tcp.retrans.iter().zip(&s.points).zip(inside) {
        if x.is_finite() && inside {
            n += x;
            secs += p.interval_ms / 1000.0;
        }
    }
    let retrans_usual = if secs >= 1.0 {
        n / secs
    } else {
        let sm = series::smooth(s);
        let rates: Vec<f64> = sm
            .tcp
            .retrans
            .iter()
            .zip(&sm.points)
            .map(|(x, p)| x / (p.interval_ms / 1000.0).max(1e-3))
            .collect();
        crate::stats::percentile(&rates, 0.25).unwrap_or(0.0)
    };
    let most = |n: usize| n * 3 >= ctx.len() * 2;
    let per_s = |x: f64, d: &DeathContext| x / d.window_s.max(1.0);
    let mut out = Vec::new();
    let burst = |d: &DeathContext| per_s(d.tcp_retransmits, d) >= (3.0 * retrans_usual).max(1.0);
    let n_burst = ctx.iter().filter(|d| burst(d)).count();
    let n_timeouts = ctx.iter().filter(|d| d.tcp_timeouts > 0.0).count();
    let n_resets = ctx.iter().filter(|d| d.tcp_resets > 0.0).count();
    if most(n_burst) || most(n_timeouts) || most(n_resets) {
        let rate = mean(
            &ctx.iter()
                .map(|d| per_s(d.tcp_retransmits, d))
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        let mut what = vec![format!(
            "TCP retransmits at {rate:.1}/s (usually {retrans_usual:.1}/s)"
        )];
        if most(n_timeouts) {
            what.push("retransmission timeouts".into());
        }
        if most(n_resets) {
            what.push("connection resets".into());
        }
        out.push(format!(
            "before {} of {} deaths: {} — a network problem (a blip, a keepalive or a peer giving up)",
            n_burst.max(n_timeouts).max(n_resets),
            ctx.len(),
            what.join(", ")
        ));
    }
    let n_down = ctx.iter().filter(|d| d.link_down).count();
    if most(n_down) {
        out.push(format!(
            "before {n_down} of {} deaths the link went down",
            ctx.len()
        ));
    }
    let n_err = ctx
        .iter()
        .filter(|d| d.nic_errors > 0.0 || d.nic_drops > 0.0)
        .count();
    if most(n_err) {
        out.push(format!(
            "before {n_err} of {} deaths: NIC errors or drops",
            ctx.len()
        ));
    }
    let n_swap = ctx
        .iter()
        .filter(|d| per_s(d.swap_pages, d) >= verdict::SWAP_WALL_PAGES_PS)
        .count();
    if most(n_swap) {
        out.push(format!(
            "before {n_swap} of {} deaths the host was swapping (memory pressure)",
            ctx.len()
        ));
    }
    if out.is_empty() && status_known {
        out.push("no network, link, NIC or memory trouble before the deaths".into());
    } else if out.is_empty() {
        out.push(
            "no network, link, NIC or memory trouble before the deaths: suspect a watchdog, a \
             timeout of the application or the program itself"
                .into(),
        );
    }
    out
}

/// Per point of `s`: whether its time is inside one of the spans `(a, b]`. Points in time order
/// (as samples are stored) are marked span by span, bisected; else each is checked against all.
fn covered(p: &[series::Point], spans: &[(u64, u64)]) -> Vec<bool> {
    if !p.is_sorted_by_key(|p| p.time_ms) {
        return p
            .iter()
            .map(|p| spans.iter().any(|&(a, b)| p.time_ms > a && p.time_ms <= b))
            .collect();
    }
    // +1 where a span's points begin, -1 after they end.
    let mut depth = vec![0i64; p.len() + 1];
    for &(a, b) in spans {
        let from = p.partition_point(|p| p.time_ms <= a);
        let to = p.partition_point(|p| p.time_ms <= b);
        if from < to {
            depth[from] += 1;
            depth[to] -= 1;
        }
    }
    let mut d = 0;
    depth[..p.len()]
        .iter()
        .map(|x| {
            d += x;
            d > 0
        })
        .collect()
}

/// The span of a death's context, ms: the minute before it, or the second half of the
/// process's life when that is shorter (the first half then gives the usual rates), at least 2 s.
fn death_span_ms(lifetime_ms: u64) -> u64 {
    (lifetime_ms / 2).clamp(DEATH_CONTEXT_MIN_MS, DEATH_CONTEXT_MAX_MS)
}

/// Read before a death's context window from raw samples: the first sample's interval starts
/// before its end time.
const DETAIL_MARGIN_MS: u64 = 10_000;

/// Bounds of a death's context.
const DEATH_CONTEXT_MAX_MS: u64 = 60_000;
const DEATH_CONTEXT_MIN_MS: u64 = 2_000;

fn death_context(
    h: &HostData,
    s: &HostSeries,
    t: u64,
    x: &Exit,
    d: &crate::exits::Death,
    points_sorted: bool,
) -> DeathContext {
    let span = death_span_ms(x.lifetime_ms);
    let from = t.saturating_sub(span);
    let inside = |i: &usize| s.points[*i].time_ms >= from && s.points[*i].time_ms <= t;
    // Points in time order (as samples are stored): bisect, else look at each.
    let idx: Vec<usize> = if points_sorted {
        let a = s.points.partition_point(|p| p.time_ms < from);
        let b = s.points.partition_point(|p| p.time_ms <= t);
        (a..b.max(a)).collect()
    } else {
        (0..s.points.len()).filter(inside).collect()
    };
    let sum = |v: &[f64]| -> f64 { pick(v, &idx).iter().filter(|x| x.is_finite()).sum() };
    let secs: Vec<f64> = idx
        .iter()
        .map(|&i| s.points[i].interval_ms / 1000.0)
        .collect();
    let rate_sum = |v: &[f64]| -> f64 {
        idx.iter()
            .zip(&secs)
            .filter_map(|(&i, dt)| v.get(i).filter(|x| x.is_finite()).map(|x| x * dt))
            .sum()
    };
    let nic_errors: f64 = s.nics.values().map(|n| rate_sum(&n.errors_ps)).sum();
    let nic_drops: f64 = s.nics.values().map(|n| rate_sum(&n.drops_ps)).sum();
    let link_down = h
        .events_between(from, t)
        .iter()
        .filter(|e| !e.is_measurement())
        .any(|e| matches!(e.event(), Event::LinkChange(l) if !l.up));
    let comm = x.comm.as_str();
    let process_cpu_cores = s
        .procs
        .get(comm)
        .and_then(|p| mean(&pick(&p.cores, &idx)))
        .map(round2);
    DeathContext {
        at: rfc3339(t),
        pid: x.pid,
        lifetime_s: round2(x.lifetime_ms as f64 / 1000.0),
        cmdline: x.cmdline.clone(),
        ended: crate::exits::end_text(d.status, x.lifetime_ms),
        cause: crate::exits::death_cause(d).name(),
        window_s: round2(span as f64 / 1000.0),
        tcp_retransmits: sum(&s.tcp.retrans),
        tcp_resets: sum(&s.tcp.resets),
        tcp_timeouts: sum(&s.tcp.timeouts),
        nic_errors: round2(nic_errors),
        nic_drops: round2(nic_drops),
        link_down,
        swap_pages: round2(rate_sum(&s.mem.swap_in_ps) + rate_sum(&s.mem.swap_out_ps)),
        process_cpu_cores,
    }
}

fn progress(s: &HostSeries, expect: Option<u64>) -> Vec<Progress> {
    s.mounts
        .iter()
        .filter_map(|(path, used)| {
            let pts: Vec<(u64, f64)> = s
                .points
                .iter()
                .zip(used)
                .filter(|(_, u)| u.is_finite())
                .map(|(p, u)| (p.time_ms, *u))
                .collect();
            let (first, last) = (pts.first()?, pts.last()?);
            let landed = last.1 - first.1;
            let secs = (last.0.saturating_sub(first.0)) as f64 / 1000.0;
            let rate = if secs > 0.0 { landed / secs } else { 0.0 };
            let eta = expect.and_then(|e| {
                let left = e as f64 - landed;
                (rate > 0.0).then(|| round2(left.max(0.0) / rate))
            });
            Some(Progress {
                host: s.name.clone(),
                mount: path.clone(),
                landed_bytes: landed,
                rate_mb_s: round2(rate / MB),
                used_bytes: last.1,
                expected_bytes: expect,
                eta_seconds: eta,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Instance, TimedEvent};
    use nasprobe_proto::{Hello, ProcessExit, ProcessInfo};

    /// A process's CPU time is counted at its instance's clock rate (Hello), not at 100.
    #[test]
    fn exit_cpu_seconds_use_the_instances_clock_rate() {
        let exit = |pid| {
            Event::ProcessExit(ProcessExit {
                process: ProcessInfo {
                    pid,
                    ppid: 1,
                    comm: "rsync".try_into().unwrap(),
                    cmdline: "rsync".try_into().unwrap(),
                    start_ticks: 0,
                },
                lifetime_ms: 10_000,
                cpu_ticks: 500,
            })
        };
        let inst = |id, hz| Instance {
            id,
            hello: Hello {
                clock_ticks_per_sec: hz,
                ..Hello::default()
            },
            clock: None,
        };
        let host = HostData {
            name: "nas".into(),
            instances: vec![inst(1, 250), inst(2, 100)],
            events: vec![
                TimedEvent::new(1_000, 0, 1, &exit(10)),
                TimedEvent::new(2_000, 1, 1, &exit(11)),
            ],
            ..HostData::default()
        };
        let r = build(&[host], &Options::default());
        let cpu: Vec<_> = r.events.iter().map(|e| (e.pid, e.cpu_s)).collect();
        assert_eq!(cpu, [(Some(10), Some(2.0)), (Some(11), Some(5.0))]);
    }

    /// A stored sample that does not decode is left out of the figures and listed as a gap,
    /// never dropped silently.
    #[test]
    fn an_undecodable_sample_is_a_gap() {
        let good = nasprobe_proto::Sample {
            interval_us: 1_000_000,
            ..Default::default()
        };
        let host = HostData {
            name: "nas".into(),
            instances: vec![Instance {
                id: 1,
                hello: Hello::default(),
                clock: None,
            }],
            samples: vec![
                crate::input::TimedSample::new(1_000, 0, 1, &good),
                crate::input::TimedSample {
                    time_ms: 2_000,
                    instance: 0,
                    seq: 2,
                    interval_us: 1_000_000,
                    body: vec![0x80],
                },
                crate::input::TimedSample::new(3_000, 0, 3, &good),
            ],
            ..HostData::default()
        };
        let a = analyze(&[host], &Options::default());
        assert_eq!(a.raw[0].points.len(), 2);
        assert_eq!(a.report.hosts[0].samples, 2);
        let gaps: Vec<_> = a
            .report
            .gaps
            .iter()
            .map(|g| (&g.reason[..], g.samples))
            .collect();
        assert_eq!(
            gaps,
            [(
                "undecodable: the stored sample seq 2 does not decode",
                Some(1)
            )]
        );
        assert_eq!(a.report.gaps[0].from, "1970-01-01T00:00:02Z");
    }

    /// A crash loop of many exits with starts, plus one OOM kill.
    fn crash_loop(n: u64) -> HostData {
        let info = |pid, comm: &str| ProcessInfo {
            pid,
            ppid: 1,
            comm: comm.try_into().unwrap(),
            cmdline: format!("{comm} --resume {pid}")
                .as_str()
                .try_into()
                .unwrap(),
            start_ticks: 0,
        };
        let end = |pid, comm, code, signal, oom| {
            Event::ProcessEnd(nasprobe_proto::ProcessEnd {
                exit: ProcessExit {
                    process: info(pid, comm),
                    lifetime_ms: 8_000,
                    cpu_ticks: 50,
                },
                status: nasprobe_proto::ExitStatus {
                    seen: ExitSeen::Kernel,
                    code,
                    signal,
                    core_dumped: false,
                    oom_killed: oom,
                    before_ms: 0,
                },
            })
        };
        let mut events = Vec::new();
        for k in 0..n {
            let t = 10_000 * (k + 1);
            let pid = 100 + k as u32;
            events.push(TimedEvent::new(
                t,
                0,
                0,
                &end(pid, "rsync", Some(12), None, false),
            ));
            events.push(TimedEvent::new(
                t + 1_000,
                0,
                0,
                &Event::ProcessStart(info(pid + 1, "rsync")),
            ));
        }
        events.push(TimedEvent::new(
            5_000 * n,
            0,
            0,
            &end(7, "smbd", None, Some(9), true),
        ));
        events.sort_by_key(|e| e.time_ms);
        HostData {
            name: "nas".into(),
            instances: vec![Instance {
                id: 1,
                hello: Hello::default(),
                clock: None,
            }],
            events,
            ..HostData::default()
        }
    }

    /// Over a long window the loop is one group with its count and first and last times, of
    /// which `events` keeps the first and last few; the lone OOM kill is listed; the restart
    /// pattern still counts every death. A short window lists every event, without groups.
    #[test]
    fn a_long_window_groups_a_crash_loop_and_keeps_the_oom_kill() {
        let h = crash_loop(10_000);
        let long = build(
            std::slice::from_ref(&h),
            &Options {
                step_ms: Some(60_000),
                ..Options::default()
            },
        );
        let g: Vec<_> = long
            .event_groups
            .iter()
            .map(|g| (g.kind, g.process.as_deref(), g.cause, g.count, g.listed))
            .collect();
        assert_eq!(
            g,
            [
                ("process_exit", Some("rsync"), Some("error_exit"), 10_000, 6),
                ("process_start", Some("rsync"), None, 10_000, 6),
                ("process_exit", Some("smbd"), Some("oom"), 1, 1),
            ]
        );
        let lp = &long.event_groups[0];
        assert_eq!(
            (lp.first.as_str(), lp.last.as_str()),
            ("1970-01-01T00:00:10Z", "1970-01-02T03:46:40Z")
        );
        assert_eq!(lp.ended.as_deref(), Some("exited with status 12"));
        assert_eq!(
            (lp.exit_code, lp.median_lifetime_s, lp.cpu_s),
            (Some(12), Some(8.0), Some(5_000.0))
        );
        assert!(
            lp.summary
                .contains("10000 × process_exit rsync exited with status 12"),
            "{}",
            lp.summary
        );
        assert_eq!(long.events.len(), 13);
        let oom: Vec<_> = long
            .events
            .iter()
            .filter(|e| e.oom_killed == Some(true))
            .collect();
        assert_eq!(oom.len(), 1);
        assert_eq!(
            (oom[0].process.as_deref(), oom[0].at.as_str()),
            (Some("smbd"), "1970-01-01T13:53:20Z")
        );
        assert!(long.events.windows(2).all(|w| w[0].at <= w[1].at));
        let p = &long.patterns[0];
        assert_eq!(
            (p.deaths_total, p.deaths.len(), p.restarts),
            (10_000, 6, 10_000)
        );
        assert_eq!(p.cause, "error_exit");
        assert!(p.summary.contains("died 10000 times"), "{}", p.summary);
        let text = crate::text::render_events(&long);
        assert!(text.contains(": 20001 events, 13 of them listed"), "{text}");
        assert!(text.contains("Events: 20001 in 3 groups"), "{text}");
        assert!(
            text.contains("  - nas: 1 × process_exit smbd killed by the OOM killer (SIGKILL)"),
            "{text}"
        );
        assert!(
            text.contains("  10000 deaths; the first and last 3 with their context:"),
            "{text}"
        );

        let short = build(&[h], &Options::default());
        assert!(short.event_groups.is_empty());
        assert_eq!(short.events.len(), 20_001);
        assert_eq!(short.patterns[0].deaths.len(), 10_000);
        assert_eq!(short.patterns[0].deaths_total, 10_000);
    }

    /// Marking spans point by point over time-ordered points agrees with checking each point
    /// against every span (and unordered points are checked that way).
    #[test]
    fn covered_points_agree_with_checking_each() {
        let mut x = 12345u64;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for _ in 0..200 {
            let mut points: Vec<series::Point> = (0..next(40))
                .map(|_| series::Point {
                    time_ms: next(100),
                    interval_ms: 1.0,
                })
                .collect();
            let spans: Vec<(u64, u64)> = (0..next(6)).map(|_| (next(100), next(100))).collect();
            let each = |p: &[series::Point]| -> Vec<bool> {
                p.iter()
                    .map(|p| spans.iter().any(|&(a, b)| p.time_ms > a && p.time_ms <= b))
                    .collect()
            };
            assert_eq!(covered(&points, &spans), each(&points));
            points.sort_by_key(|p| p.time_ms);
            assert_eq!(covered(&points, &spans), each(&points), "{spans:?}");
        }
    }
}
