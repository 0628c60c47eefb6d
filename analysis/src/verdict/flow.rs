//! The flow: which host and NIC send the most and which receive the most, when the transfer was
//! active, how fast it went, and its grade on the field's ladder.

use super::walls::FLOW_MIN_BPS;
use crate::series::HostSeries;
use crate::stats::{best_window, mean, median};
use crate::vocab::{Flow, LimitedBy, MB, PEAK_SPAN_MS, round2};

pub(crate) fn is_virtual_nic(name: &str) -> bool {
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
            limited_by: LimitedBy::Unknown,
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
