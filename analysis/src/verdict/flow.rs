//! The flow: which host and NIC send the most and which receive the most, when the transfer was
//! active, how fast it went, and its grade on the field's ladder.

use super::walls::FLOW_MIN_BPS;
use crate::series::HostSeries;
use crate::stats::{best_window, mean, median};
use crate::vocab::{Flow, LimitedBy, MB, PEAK_SPAN_MS, round2};

/// Loopback: never the flow's NIC.
pub(crate) fn is_virtual_nic(name: &str) -> bool {
    name == "lo"
}

/// The busiest physical NIC of one direction (sending or receiving) over all hosts.
#[derive(Debug, Clone)]
struct BusiestNic {
    /// Index of its host.
    host: usize,
    nic: String,
    /// Mean bytes/s that way (a NIC without a link speed counted at 95%, see [`busiest`]).
    bps: f64,
}

/// The busiest NICs sending and receiving.
#[derive(Debug, Clone, Default)]
struct Busiest {
    tx: Option<BusiestNic>,
    rx: Option<BusiestNic>,
}

/// What [`find_flow`] finds: the flow, and the time range when it was active (ms).
#[derive(Debug, Clone, Default)]
pub(crate) struct FoundFlow {
    pub flow: Option<Flow>,
    pub active: Option<(u64, u64)>,
}

/// The physical NICs (no loopback, no bond) sending and receiving the most over all hosts.
fn busiest(hosts: &[HostSeries]) -> Busiest {
    let mut best = Busiest::default();
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
            let nic = |bps| BusiestNic {
                host: h,
                nic: name.clone(),
                bps,
            };
            if best.tx.as_ref().is_none_or(|b| tx > b.bps) {
                best.tx = Some(nic(tx));
            }
            if best.rx.as_ref().is_none_or(|b| rx > b.bps) {
                best.rx = Some(nic(rx));
            }
        }
    }
    best
}

/// Finds the flow: the host and NIC sending most, the host and NIC receiving most, and the
/// time range when it was active (≥ 25% of its peak).
pub(crate) fn find_flow(hosts: &[HostSeries]) -> FoundFlow {
    let best = busiest(hosts);
    // The receiving side is the one that matters for "landing"; measure the flow there unless
    // only the sender is observed.
    let rx_ok = best.rx.as_ref().is_some_and(|b| b.bps >= FLOW_MIN_BPS);
    let tx_ok = best.tx.as_ref().is_some_and(|b| b.bps >= FLOW_MIN_BPS);
    if !rx_ok && !tx_ok {
        return FoundFlow::default();
    }
    // With two hosts, the sender and receiver should differ; when the same host wins both
    // (loopback-like), keep it.
    let (measured, rx_side) = if rx_ok {
        (best.rx.as_ref(), true)
    } else {
        (best.tx.as_ref(), false)
    };
    let Some(measured) = measured else {
        return FoundFlow::default();
    };
    let s = &hosts[measured.host];
    let n = &s.nics[&measured.nic];
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
    let name_of = |b: &Option<BusiestNic>, ok: bool| {
        b.as_ref()
            .filter(|_| ok)
            .map(|b| (hosts[b.host].name.clone(), b.nic.clone()))
    };
    let from = name_of(&best.tx, tx_ok);
    let to = name_of(&best.rx, rx_ok);
    FoundFlow {
        flow: Some(Flow {
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
        active: range,
    }
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
