//! The peaks of a report over rollups, from raw samples: each host's busiest steps are read
//! again at full resolution, and the best 10 s found there replace the steps' means as the
//! NIC and flow peaks (a step's mean is never above the best 10 s inside it).

use nasprobe_analysis::{Analysis, Options, verdict::PEAK_SPAN_MS};

use crate::store::Store;

/// Steps per host read again at full resolution: the busiest few hold the best 10 s unless a
/// short burst sits in a quieter step (then the peak is that step's mean, as before).
const BUSIEST_STEPS: usize = 3;

/// Raises the NIC and flow peaks of `analysis` (built over rollups) to the best 10 s of the
/// raw samples of each host's [`BUSIEST_STEPS`] busiest steps, where raw samples are still
/// stored. Returns whether any raw samples were read.
pub(crate) fn refine(
    store: &Store,
    analysis: &mut Analysis,
) -> Result<bool, crate::store::StoreError> {
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
