//! Copies, the unit of the analysis: a recording of an hour or a week holds many transfers with
//! idle time between them, and a verdict over the whole window mixes them (and their idle time)
//! into medians that describe none of them. A copy is found in the raw series of every host
//! (the busiest physical NIC's traffic, either way), from the moment it rises above a floor
//! until it stays below it for `COPY_END_QUIET_MS` (10 s); each copy is then judged on its own
//! samples only (`slice`), so its verdict is the same for every window that holds it whole.

use std::ops::Range;

use crate::input::HostData;
use crate::report::{Bottleneck, CopyOut, CopyProcess, CopyRate};
use crate::series::HostSeries;
use crate::stats::best_window;
use crate::verdict::flow::is_virtual_nic;
use crate::vocab::{Flow, PEAK_SPAN_MS};

/// The absolute floor of a copy, bytes/s: ~1 MB/s, the flow's own floor. Below it a link carries keepalives,
/// metadata walks, a monitoring agent's own frames (ours is a few hundred bytes a second):
/// nothing whose wall is worth naming, and the sample-to-sample noise of an idle NIC.
pub(crate) const COPY_FLOOR_MIN_BPS: f64 = crate::verdict::walls::FLOW_MIN_BPS;

/// The floor relative to the copy's own peak (best 10 s): a few %. A copy at 110 MB/s whose
/// rate drops to 2 MB/s for a while is between files or stalled, still the same copy;
/// falling below 3 % of its own peak for [`COPY_END_QUIET_MS`] is its end. Relative to the
/// copy's own peak (never the window's), so a slow copy next to a fast one is still found.
pub(crate) const COPY_FLOOR_OF_PEAK: f64 = 0.03;

/// A copy ends once its traffic stays below the floor this long (ms). Shorter dips (a file
/// boundary, an rsync's directory walk, a retransmission timeout of a second or two, a
/// restart of the sending process that resumes at once) do not split it.
pub(crate) const COPY_END_QUIET_MS: u64 = 10_000;

/// A burst above the floor shorter than this (ms) is no copy: an ssh login, a directory
/// listing, a few small files. A verdict needs several smoothed buckets (2 s or 5 intervals
/// each, `series::smooth`) of the copy's own samples.
pub(crate) const COPY_MIN_MS: u64 = 5_000;

/// A copy's time range, ms: the start of its first interval above the floor, the end of its
/// last; and whether its first sample is a host's first of the window (it may have begun
/// before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub from_ms: u64,
    pub to_ms: u64,
    pub at_window_start: bool,
}

/// Per point of a host: (end time ms, interval ms, bytes/s of its busiest physical NIC either
/// way). A NIC without a reading counts as zero.
fn traffic(s: &HostSeries) -> Vec<(u64, f64, f64)> {
    let nics: Vec<_> = s
        .nics
        .iter()
        .filter(|(name, n)| !is_virtual_nic(name) && !n.is_bond)
        .map(|(_, n)| n)
        .collect();
    s.points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let bps = nics
                .iter()
                .flat_map(|n| [n.rx_bps.get(i), n.tx_bps.get(i)])
                .flatten()
                .copied()
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max);
            (p.time_ms, p.interval_ms, bps)
        })
        .collect()
}

/// The runs of `pts[range]` above `floor(run)`: index ranges from the first point above it to
/// the last, joined across dips shorter than [`COPY_END_QUIET_MS`].
fn runs(pts: &[(u64, f64, f64)], range: Range<usize>, floor: f64) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for i in range.filter(|&i| pts[i].2 >= floor) {
        let begins = pts[i].0.saturating_sub(pts[i].1 as u64);
        match out.last_mut() {
            Some(r) if begins.saturating_sub(pts[r.end - 1].0) < COPY_END_QUIET_MS => {
                r.end = i + 1;
            }
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// The copies of one host: runs above the absolute floor, each cut again at a few % of its
/// own peak, of at least [`COPY_MIN_MS`].
fn host_spans(s: &HostSeries) -> Vec<Span> {
    let pts = traffic(s);
    let mut out = Vec::new();
    for coarse in runs(&pts, 0..pts.len(), COPY_FLOOR_MIN_BPS) {
        let peak = best_window(&pts[coarse.clone()], PEAK_SPAN_MS).unwrap_or(0.0);
        let floor = COPY_FLOOR_MIN_BPS.max(peak * COPY_FLOOR_OF_PEAK);
        for r in runs(&pts, coarse, floor) {
            let from_ms = pts[r.start].0.saturating_sub(pts[r.start].1 as u64);
            let to_ms = pts[r.end - 1].0;
            if to_ms.saturating_sub(from_ms) >= COPY_MIN_MS {
                out.push(Span {
                    from_ms,
                    to_ms,
                    at_window_start: r.start == 0,
                });
            }
        }
    }
    out
}

/// The copies of the window over every host, in time order: one host's spans joined with the
/// others' where they overlap or are closer than [`COPY_END_QUIET_MS`] (a copy between two
/// recorded hosts shows on both, its ends a sample apart).
pub(crate) fn spans(series: &[HostSeries]) -> Vec<Span> {
    let mut all: Vec<Span> = series.iter().flat_map(host_spans).collect();
    all.sort_by_key(|s| (s.from_ms, s.to_ms));
    let mut out: Vec<Span> = Vec::new();
    for s in all {
        match out.last_mut() {
            Some(o) if s.from_ms.saturating_sub(o.to_ms) < COPY_END_QUIET_MS => {
                o.to_ms = o.to_ms.max(s.to_ms);
                o.at_window_start |= s.at_window_start && s.from_ms <= o.from_ms;
            }
            _ => out.push(s),
        }
    }
    out
}

/// The hosts' records of one copy only: samples ending inside it, events and gaps within it.
pub(crate) fn slice(hosts: &[HostData], span: Span) -> Vec<HostData> {
    let (a, b) = (span.from_ms, span.to_ms);
    hosts
        .iter()
        .map(|h| {
            let lo = h.samples.partition_point(|s| s.time_ms <= a);
            let hi = h.samples.partition_point(|s| s.time_ms <= b);
            let samples = h.samples.get(lo..hi.max(lo)).unwrap_or_default().to_vec();
            let events = h.events_between(a, b).to_vec();
            // The instances up to the newest the copy's records name (the series reads the
            // last one's Hello: a later agent on other hardware is not this copy's).
            let newest = samples
                .iter()
                .map(|s| s.instance)
                .chain(events.iter().map(|e| e.instance))
                .max()
                .map_or(h.instances.len(), |i| i + 1);
            HostData {
                name: h.name.clone(),
                instances: h.instances[..newest.min(h.instances.len())].to_vec(),
                samples,
                events,
                gaps: h
                    .gaps
                    .iter()
                    .filter(|g| g.to_ms >= a && g.from_ms <= b)
                    .cloned()
                    .collect(),
            }
        })
        .collect()
}

/// Bytes carried over a copy: the flow's measured NIC (the receiver's, else the sender's) in
/// the copy's raw series.
pub(crate) fn bytes(raw: &[HostSeries], flow: Option<&Flow>) -> f64 {
    let Some(f) = flow else {
        return 0.0;
    };
    let (host, nic, rx) = match (&f.to, &f.to_device, &f.from, &f.from_device) {
        (Some(h), Some(n), _, _) => (h, n, true),
        (_, _, Some(h), Some(n)) => (h, n, false),
        _ => return 0.0,
    };
    let Some(s) = raw.iter().find(|s| &s.name == host) else {
        return 0.0;
    };
    let Some(n) = s.nics.get(nic) else {
        return 0.0;
    };
    let v = if rx { &n.rx_bps } else { &n.tx_bps };
    s.points
        .iter()
        .zip(v)
        .filter(|(_, b)| b.is_finite())
        .map(|(p, b)| b * p.interval_ms / 1000.0)
        .sum::<f64>()
        .round()
}

/// Copy number `number` of the window over `span`, from its own judgement (`raw`, `judged`:
/// the copy's slice alone); its `wall` words are the caller's.
pub(crate) fn out(
    number: usize,
    span: Span,
    window_from: Option<u64>,
    raw: &[HostSeries],
    flow: Option<&Flow>,
    bottleneck: &Bottleneck,
    carriers: &[(String, u32)],
) -> CopyOut {
    let rate = flow.map_or(
        CopyRate {
            sustained: 0.0,
            mean: 0.0,
            peak: 0.0,
        },
        |f| CopyRate {
            sustained: f.sustained_mb_s,
            mean: f.mean_mb_s,
            peak: f.peak_mb_s,
        },
    );
    let mut processes: Vec<CopyProcess> = carriers
        .iter()
        .map(|(host, pid)| CopyProcess {
            host: host.clone(),
            pid: *pid,
            name: raw
                .iter()
                .find(|s| &s.name == host)
                .and_then(|s| s.procs.iter().find(|(_, p)| p.last_pid == *pid))
                .map(|(name, _)| name.clone())
                .unwrap_or_default(),
        })
        .collect();
    processes.sort();
    processes.dedup();
    CopyOut {
        number,
        start: crate::time::rfc3339(span.from_ms),
        end: crate::time::rfc3339(span.to_ms),
        seconds: crate::vocab::round2(span.to_ms.saturating_sub(span.from_ms) as f64 / 1000.0),
        bytes: bytes(raw, flow),
        mb_s: rate,
        from: flow.and_then(|f| f.from.clone()),
        to: flow.and_then(|f| f.to.clone()),
        processes,
        bottleneck: bottleneck.clone(),
        flow: flow.cloned(),
        // Its first interval begins before the window does (a host's first sample of the
        // window, above the floor): the records before the window are not loaded.
        started_before_window: span.at_window_start
            && window_from.is_some_and(|f| span.from_ms < f),
        wall: String::new(),
    }
}
