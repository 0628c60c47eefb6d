//! The bridge from the store to the analysis: a window loaded (raw samples, or rollups over
//! long windows) and analyzed once, as `report`, `events`, `test`, `ladder` and the live
//! verdict read it.
//!
//! Nothing here computes a figure: the store hands over the analysis's own input
//! ([`HostData`]) and the analysis builds everything once ([`Analysis`]). Over rollups, the
//! peaks are then raised to the best 10 s of the raw samples of each host's busiest steps
//! (a step's mean is never above the best 10 s inside it).

use std::time::Duration;

use nasprobe_analysis::{Analysis, HostData, Options, verdict::PEAK_SPAN_MS};
use nasprobe_proto::time::now_ms;

use super::base::{StoreError, StoreReader};
use super::rollup;

/// The window `[from, to]` of `--since DUR` (None: everything stored).
pub(crate) fn window(since: Option<Duration>) -> (Option<u64>, Option<u64>) {
    window_until(since, None)
}

/// The window `[from, to]` of `--since DUR` and `--until DUR` (both ago from now; None: from
/// the first record, up to now or the last record).
pub(crate) fn window_until(
    since: Option<Duration>,
    until: Option<Duration>,
) -> (Option<u64>, Option<u64>) {
    let now = now_ms();
    let ago = |d: Duration| now.saturating_sub(d.as_millis() as u64);
    match (since, until) {
        (Some(s), u) => (Some(ago(s)), Some(u.map_or(now, ago))),
        (None, Some(u)) => (None, Some(ago(u))),
        (None, None) => (None, None),
    }
}

/// Loads the window and analyzes it once (the hosts' data is returned for the HTML view).
pub fn load(
    store: &StoreReader,
    since: Option<Duration>,
    expect_bytes: Option<u64>,
) -> anyhow::Result<(Vec<HostData>, Analysis)> {
    let (from, to) = window(since);
    load_between(store, from, to, expect_bytes)
}

/// [`load`] over `[from, to]` of only the hosts named in `only` (all when empty), its verdict
/// led by copy number `lead` (None: the newest); a name with nothing stored in the window is
/// an error naming the hosts there are.
pub fn load_only(
    store: &StoreReader,
    (from, to): (Option<u64>, Option<u64>),
    expect_bytes: Option<u64>,
    only: &[String],
    lead: Option<usize>,
) -> anyhow::Result<(Vec<HostData>, Analysis)> {
    ensure_hosts_stored(store, from, only)?;
    load_between_of(store, from, to, expect_bytes, only, lead)
}

/// Every host of `hosts` has data in the store from `from_ms` on; else the error names the hosts
/// that have.
pub(crate) fn ensure_hosts_stored(
    store: &StoreReader,
    from_ms: Option<u64>,
    hosts: &[String],
) -> anyhow::Result<()> {
    if hosts.is_empty() {
        return Ok(());
    }
    let stored = store.summary(from_ms, None)?;
    for h in hosts {
        anyhow::ensure!(
            stored.iter().any(|w| &w.host == h),
            "no data for host {h:?} in the store {} (hosts: {})",
            store.path().display(),
            stored
                .iter()
                .map(|w| w.host.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// [`load`] over `[from, to]` (ms since the epoch; None: open ended).
pub fn load_between(
    store: &StoreReader,
    from: Option<u64>,
    to: Option<u64>,
    expect_bytes: Option<u64>,
) -> anyhow::Result<(Vec<HostData>, Analysis)> {
    load_between_of(store, from, to, expect_bytes, &[], None)
}

/// [`load_between`] of the hosts named in `only` (all when empty).
fn load_between_of(
    store: &StoreReader,
    mut from: Option<u64>,
    mut to: Option<u64>,
    expect_bytes: Option<u64>,
    only: &[String],
    lead: Option<usize>,
) -> anyhow::Result<(Vec<HostData>, Analysis)> {
    let step = resolution(store, from, to)?;
    let mut hosts: Vec<HostData> = store.load_window_at(from, to, step)?;
    if !only.is_empty() {
        hosts.retain(|h| only.contains(&h.name));
    }
    if hosts.is_empty() && from.is_none() {
        // Nothing stored: an empty window ending now rather than at the epoch.
        let now = now_ms();
        (from, to) = (Some(now), Some(now));
    }
    // Over rollups, raw samples are read back where the detail matters (each listed death's
    // minute before; the peaks, below).
    let detail = |k: usize, a: u64, b: u64| -> Option<HostData> {
        let name = &hosts.get(k)?.name;
        let raw = store.load_window_at(Some(a), Some(b), None).ok()?;
        raw.into_iter().find(|h| &h.name == name)
    };
    let analysis = nasprobe_analysis::analyze_led_by(
        &hosts,
        &Options {
            from_ms: from,
            to_ms: to,
            expect_bytes,
            step_ms: step,
        },
        step.map(|_| &detail as &nasprobe_analysis::Detail<'_>),
        lead,
    );
    let mut analysis = analysis;
    if step.is_some() {
        // Over rollups the peaks are the best 10 s of the busiest steps' raw samples.
        refine_peaks(store, &mut analysis)?;
        // Over rollups the analysis counted steps: `samples` stays the samples stored.
        let stored = store.summary(from, to)?;
        for h in &mut analysis.report.hosts {
            // (None stored where retention deleted them: then the steps read.)
            if let Some(s) = stored.iter().find(|s| s.host == h.name && s.samples > 0) {
                h.samples = s.samples as usize;
            }
        }
    }
    Ok((hosts, analysis))
}

/// One agent instance the store knows, with its row (what write items carry).
#[derive(Debug, Clone)]
pub(crate) struct KnownInstance {
    pub row: i64,
    pub host: String,
    pub instance: nasprobe_analysis::Instance,
}

/// Every instance stored whose `Hello` decodes (the alert engine's start: later instances
/// reach it from the store task).
pub(crate) fn known_instances(store: &StoreReader) -> anyhow::Result<Vec<KnownInstance>> {
    let clocks = store.clock_offsets()?;
    let mut out = Vec::new();
    for (host, _address, _host_row, raw) in store.instances()? {
        if let Some(hello) = super::base::decode_stored::<nasprobe_proto::Hello>(&raw.hello) {
            out.push(KnownInstance {
                row: raw.row,
                host,
                instance: nasprobe_analysis::Instance {
                    id: raw.instance_id,
                    hello,
                    clock: clocks.get(&raw.row).copied(),
                },
            });
        }
    }
    Ok(out)
}

/// The step of the samples a report over `[from, to]` reads: None (raw samples), or rollups
/// ([`rollup::step_for_span`]) by how long the stored data of the window spans.
pub(crate) fn resolution(
    store: &StoreReader,
    from: Option<u64>,
    to: Option<u64>,
) -> anyhow::Result<Option<u64>> {
    let sum = store.summary(from, to)?;
    let first = sum.iter().filter_map(|h| h.first_ms).min();
    let last = sum.iter().filter_map(|h| h.last_ms).max();
    let span = match (first, last) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    let raw_samples: u64 = sum.iter().map(|h| h.samples).sum();
    Ok(match rollup::step_for_span(span) {
        // Retention deleted every raw sample of a short window: its minutes are what is left.
        None if raw_samples == 0 && first.is_some() => Some(rollup::MINUTE_MS),
        step => step,
    })
}

/// Steps per host read again at full resolution: the busiest few hold the best 10 s unless a
/// short burst sits in a quieter step (then the peak is that step's mean, as before).
const BUSIEST_STEPS: usize = 3;

/// Raises the NIC and flow peaks of `analysis` (built over rollups) to the best 10 s of the
/// raw samples of each host's [`BUSIEST_STEPS`] busiest steps, where raw samples are still
/// stored. Returns whether any raw samples were read.
fn refine_peaks(store: &StoreReader, analysis: &mut Analysis) -> Result<bool, StoreError> {
    let pad = PEAK_SPAN_MS as u64;
    let mut windows: Vec<(u64, u64)> = Vec::new();
    for s in &analysis.raw {
        let mut busy: Vec<(f64, usize)> = (0..s.points.len())
            .map(|i| {
                let rate = s
                    .nics
                    .values()
                    .flat_map(|n| [n.rx_bps.get(i), n.tx_bps.get(i)])
                    .flatten()
                    .copied()
                    .filter(|v| v.is_finite())
                    .fold(0.0, f64::max);
                (rate, i)
            })
            .filter(|(rate, _)| *rate > 0.0)
            .collect();
        busy.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, i) in busy.iter().take(BUSIEST_STEPS) {
            let p = s.points[i];
            let start = p.time_ms.saturating_sub(p.interval_ms as u64);
            windows.push((start.saturating_sub(pad), p.time_ms.saturating_add(pad)));
        }
    }
    windows.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in windows {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut read = false;
    for (a, b) in merged {
        let detail = store.load_window_at(Some(a), Some(b), None)?;
        if detail.iter().all(|h| h.samples.is_empty()) {
            continue; // raw samples of that time are gone (retention)
        }
        read = true;
        let d = nasprobe_analysis::build(
            &detail,
            &Options {
                from_ms: Some(a),
                to_ms: Some(b),
                ..Options::default()
            },
        );
        let report = &mut analysis.report;
        for h in &mut report.hosts {
            let Some(dh) = d.hosts.iter().find(|x| x.name == h.name) else {
                continue;
            };
            for n in &mut h.nics {
                if let Some(dn) = dh.nics.iter().find(|x| x.name == n.name) {
                    n.rx_peak_mb_s = n.rx_peak_mb_s.max(dn.rx_peak_mb_s);
                    n.tx_peak_mb_s = n.tx_peak_mb_s.max(dn.tx_peak_mb_s);
                }
            }
        }
        if let (Some(f), Some(df)) = (report.flow.as_mut(), d.flow.as_ref())
            && (&f.from, &f.to) == (&df.from, &df.to)
        {
            f.peak_mb_s = f.peak_mb_s.max(df.peak_mb_s);
        }
    }
    Ok(read)
}
