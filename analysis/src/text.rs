//! Human rendering of a [`Report`]: the verdict paragraph first, then one table row per host.

use std::fmt::Write;

use crate::report::Report;
use crate::verdict::pct;

/// The report as text for a terminal.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let b = &r.bottleneck;
    let _ = writeln!(
        o,
        "Window {} .. {} ({} s)\n",
        r.window.from, r.window.to, r.window.seconds
    );
    let headline = match b.resource {
        "none" => "Verdict: no wall found on the observed hosts.".to_string(),
        res => {
            let what = match res {
                "cpu_thread" => format!(
                    "one thread of `{}` at {} of a core",
                    b.process.as_deref().unwrap_or("?"),
                    pct(b.utilization)
                ),
                "cpu_all" => format!("all cores at {} busy", pct(b.utilization)),
                "disk" => format!(
                    "disk {} at {} util",
                    b.device.as_deref().unwrap_or("?"),
                    pct(b.utilization)
                ),
                "nic" => format!(
                    "NIC {} at {} of its link",
                    b.device.as_deref().unwrap_or("?"),
                    pct(b.utilization)
                ),
                "memory" => "memory: the host is swapping".to_string(),
                other => other.to_string(),
            };
            format!(
                "Verdict: the wall is on {}: {what}.",
                b.host.as_deref().unwrap_or("?")
            )
        }
    };
    let _ = writeln!(o, "{headline}");
    for e in &b.evidence {
        let _ = writeln!(o, "  - {e}");
    }
    if !b.would_not_help.is_empty() {
        let _ = writeln!(o, "Would not help:");
        for w in &b.would_not_help {
            let _ = writeln!(o, "  - {w}");
        }
    }
    for p in &r.patterns {
        let _ = writeln!(o, "Pattern: {}", p.summary);
        for d in &p.deaths {
            let _ = writeln!(
                o,
                "  - died {} after {:.0} s (pid {}): minute before: {:.0} TCP retransmits, {:.0} resets, {:.0} timeouts, {:.0} NIC errors, {:.0} drops{}, {:.0} swap pages{}",
                d.at,
                d.lifetime_s,
                d.pid,
                d.tcp_retransmits,
                d.tcp_resets,
                d.tcp_timeouts,
                d.nic_errors,
                d.nic_drops,
                if d.link_down { ", link went down" } else { "" },
                d.swap_pages,
                d.process_cpu_cores
                    .map(|c| format!(", process at {} of a core", pct(c)))
                    .unwrap_or_default()
            );
        }
    }
    for p in &r.progress {
        let _ = writeln!(
            o,
            "Progress on {} {}: {:.2} GB landed at {:.1} MB/s{}",
            p.host,
            p.mount,
            p.landed_bytes / 1e9,
            p.rate_mb_s,
            p.eta_seconds
                .map(|s| format!(", ETA {:.1} h", s / 3600.0))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        o,
        "\n{:<12} {:>7} {:>6} {:<28} {:<22} {:<28} {:>9}",
        "host", "samples", "cpu", "hottest thread", "busiest disk", "busiest nic", "mem avail"
    );
    for h in &r.hosts {
        let thread = h
            .cpu
            .hottest_thread
            .as_ref()
            .map(|t| format!("{}/{} {}", t.process, t.thread, pct(t.core_fraction)))
            .unwrap_or_else(|| "-".into());
        let disk = h
            .disks
            .iter()
            .filter(|d| !d.is_md)
            .max_by(|a, b| a.util.total_cmp(&b.util))
            .map(|d| format!("{} {} {:.0}ms", d.name, pct(d.util), d.await_ms))
            .unwrap_or_else(|| "-".into());
        let nic = h
            .nics
            .iter()
            .filter(|n| n.name != "lo" && !n.is_bond)
            .max_by(|a, b| (a.rx_mb_s.max(a.tx_mb_s)).total_cmp(&b.rx_mb_s.max(b.tx_mb_s)))
            .map(|n| {
                format!(
                    "{} rx {:.1} tx {:.1} MB/s /{}M",
                    n.name, n.rx_mb_s, n.tx_mb_s, n.speed_mbit
                )
            })
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:<12} {:>7} {:>6} {:<28} {:<22} {:<28} {:>6.0} MiB",
            h.name,
            h.samples,
            pct(h.cpu.busy),
            thread,
            disk,
            nic,
            h.memory.available_mib_min
        );
    }
    if !r.gaps.is_empty() {
        let _ = writeln!(o, "\nGaps (data known to be missing):");
        for g in &r.gaps {
            let _ = writeln!(
                o,
                "  - {} {} .. {}{}: {}",
                g.host,
                g.from,
                g.to,
                g.samples
                    .map(|n| format!(" ({n} records)"))
                    .unwrap_or_default(),
                g.reason
            );
        }
    }
    o
}
