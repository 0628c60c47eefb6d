//! Human rendering of a [`Report`]: the verdict paragraph first, then one table row per host.

use std::fmt::Write;

use crate::report::Report;
use crate::verdict::{Resource, pct};

/// The verdict in one sentence, as the report's first line says it ("Verdict: the wall is on dst:
/// one thread of `synoreplicad` at 96% of a core.").
pub fn verdict_line(r: &Report) -> String {
    verdict_line_of(&r.bottleneck, r.flow.as_ref())
}

/// [`verdict_line`] of one verdict (a copy's).
pub fn verdict_line_of(b: &crate::report::Bottleneck, flow: Option<&crate::vocab::Flow>) -> String {
    if let Some(w) = crate::verdict::limit::verdict_words(b, flow) {
        return format!("Verdict: {w}.");
    }
    match wall_what(b) {
        None => "Verdict: no wall found on the observed hosts.".to_string(),
        Some(what) => format!(
            "Verdict: the wall is on {}: {what}.",
            b.host.as_deref().unwrap_or("?")
        ),
    }
}

/// What the wall on its host is, with its figure ("one thread of `dropbear` at 97% of a
/// core", "disk sdb at 99% util"); None for no wall.
fn wall_what(b: &crate::report::Bottleneck) -> Option<String> {
    Some(match b.resource {
        Resource::None => return None,
        Resource::CpuThread => format!(
            "{} `{}` at {} of a core",
            match &b.thread {
                Some(t) => format!("thread `{t}` of"),
                None => "one thread of".into(),
            },
            b.process.as_deref().unwrap_or("?"),
            pct(b.utilization)
        ),
        Resource::CpuAll => format!("all cores at {} busy", pct(b.utilization)),
        Resource::Disk => format!(
            "disk {} at {} util",
            b.device.as_deref().unwrap_or("?"),
            pct(b.utilization)
        ),
        Resource::Nic => format!(
            "NIC {} at {} of {}",
            b.device.as_deref().unwrap_or("?"),
            pct(b.utilization),
            nic_ceiling(b)
        ),
        Resource::Memory => "memory: the host is swapping".to_string(),
        // Said by limit::verdict_words.
        Resource::App | Resource::Network => "the flow is held back there".to_string(),
    })
}

/// The wall in a few words, without its figure, as the summary by wall groups copies
/// ("one thread of `dropbear` on nas1", "disk sdb of nas2", "the receiver `rsync` on dst").
pub fn wall_name(b: &crate::report::Bottleneck, flow: Option<&crate::vocab::Flow>) -> String {
    let host = b.host.as_deref().unwrap_or("?");
    let dev = b.device.as_deref().unwrap_or("?");
    let proc = b.process.as_deref().unwrap_or("?");
    match b.resource {
        Resource::None => "no wall found".into(),
        Resource::CpuThread => match &b.thread {
            Some(t) => format!("thread `{t}` of `{proc}` on {host}"),
            None => format!("one thread of `{proc}` on {host}"),
        },
        Resource::CpuAll => format!("all cores of {host}"),
        Resource::Disk => format!("disk {dev} of {host}"),
        Resource::Nic => format!("NIC {dev} of {host}"),
        Resource::Memory => format!("memory of {host} (swapping)"),
        Resource::App => match flow.map(|f| f.limited_by) {
            Some(crate::vocab::LimitedBy::Receiver) => format!("the receiver `{proc}` on {host}"),
            _ => format!("the sender `{proc}` on {host}"),
        },
        Resource::Network => format!("the network from {host}"),
    }
}

/// The wall in a few words with its figure, as the Copies table says it.
pub fn wall_words(b: &crate::report::Bottleneck, flow: Option<&crate::vocab::Flow>) -> String {
    let name = wall_name(b, flow);
    match b.resource {
        Resource::CpuThread => format!("{name} at {} of a core", pct(b.utilization)),
        Resource::CpuAll => format!("{name} at {} busy", pct(b.utilization)),
        Resource::Disk => format!("{name} at {} util", pct(b.utilization)),
        Resource::Nic => format!("{name} at {} of {}", pct(b.utilization), nic_ceiling(b)),
        _ => name,
    }
}

/// What a NIC wall is at a share of, in the verdict line: "its link", or "its traffic-control
/// cap" when its evidence says a shaper is the ceiling (the link is then far above the flow).
pub(crate) fn nic_ceiling(b: &crate::report::Bottleneck) -> &'static str {
    let shaped = match (&b.host, &b.device) {
        (Some(h), Some(d)) => {
            let words = crate::vocab::shaped_nic_words(h, d);
            b.evidence.iter().any(|e| e.starts_with(&words))
        }
        _ => false,
    };
    if shaped {
        "its traffic-control cap"
    } else {
        "its link"
    }
}

/// The verdict line, its evidence, what would not help and what was ruled out.
fn verdict_block(o: &mut String, b: &crate::report::Bottleneck, flow: Option<&crate::vocab::Flow>) {
    let _ = writeln!(o, "{}", verdict_line_of(b, flow));
    // The evidence carries the ruled-out sentences too (for JSON readers): print them apart.
    for e in b.evidence.iter().filter(|e| !b.ruled_out.contains(e)) {
        let _ = writeln!(o, "  - {e}");
    }
    if !b.would_not_help.is_empty() {
        let _ = writeln!(o, "\nWould not help:");
        for w in &b.would_not_help {
            let _ = writeln!(o, "  - {w}");
        }
    }
    if !b.ruled_out.is_empty() {
        let _ = writeln!(o, "\nRuled out, with headroom:");
        for e in &b.ruled_out {
            let _ = writeln!(o, "  - {e}");
        }
    }
}

/// One copy in a line: "copy 3 of 3: 2025-11-30T00:02:00Z, 1 min 35 s, nas1 -> nas2, 11.2 MB/s".
fn copy_head(c: &crate::report::CopyOut, of: usize) -> String {
    format!(
        "copy {} of {of}: {}, {}, {} -> {}, {:.1} MB/s{}",
        c.number,
        c.start,
        crate::time::dur(c.seconds),
        c.from.as_deref().unwrap_or("?"),
        c.to.as_deref().unwrap_or("?"),
        c.mb_s.sustained,
        if c.started_before_window {
            " (started before the window: its first seconds are not in it; widen --since to judge it whole)"
        } else {
            ""
        }
    )
}

/// Which copy the verdict below is of, when the window holds more than one or cuts it.
fn lead_copy(o: &mut String, r: &Report) {
    let Some(c) = r.lead_copy.and_then(|n| r.copies.get(n - 1)) else {
        return;
    };
    if r.copies.len() < 2 && !c.started_before_window {
        return;
    }
    let newest = if c.number == r.copies.len() {
        " (the newest)"
    } else {
        ""
    };
    let _ = writeln!(o, "{}{newest}", upper_first(&copy_head(c, r.copies.len())));
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The Copies table, one line per copy, newest last, then a summary by wall (when the window
/// holds more than one copy).
fn copies_table(o: &mut String, r: &Report) {
    if r.copies.len() < 2 {
        return;
    }
    let _ = writeln!(o, "\nCopies ({}, newest last):", r.copies.len());
    let _ = writeln!(
        o,
        "  {:>3}  {:<20} {:>12}  {:<24} {:>8}  wall",
        "#", "start", "duration", "from -> to", "MB/s"
    );
    for c in &r.copies {
        let _ = writeln!(
            o,
            "  {:>3}  {:<20} {:>12}  {:<24} {:>8.1}  {}{}",
            c.number,
            c.start,
            crate::time::dur(c.seconds),
            format!(
                "{} -> {}",
                c.from.as_deref().unwrap_or("?"),
                c.to.as_deref().unwrap_or("?")
            ),
            c.mb_s.sustained,
            c.wall,
            if c.started_before_window {
                " (started before the window)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(o, "  {}", by_wall(&r.copies));
}

/// "14 copies: 12 walled by one thread of `dropbear` on nas1 at 11-13 MB/s,
/// 2025-11-30T00:01:00Z..2025-11-30T03:00:00Z; 2 by disk sdb of nas2 at 80 MB/s, ..".
pub fn by_wall(copies: &[crate::report::CopyOut]) -> String {
    let mut groups: Vec<(String, Vec<&crate::report::CopyOut>)> = Vec::new();
    for c in copies {
        let name = wall_name(&c.bottleneck, c.flow.as_ref());
        match groups.iter_mut().find(|g| g.0 == name) {
            Some(g) => g.1.push(c),
            None => groups.push((name, vec![c])),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
    let parts: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(k, (name, cs))| {
            let lo = cs.iter().map(|c| c.mb_s.sustained).fold(f64::MAX, f64::min);
            let hi = cs.iter().map(|c| c.mb_s.sustained).fold(0.0, f64::max);
            let rate = if format!("{lo:.0}") == format!("{hi:.0}") {
                format!("{hi:.0} MB/s")
            } else {
                format!("{lo:.0}-{hi:.0} MB/s")
            };
            let when = match (cs.first(), cs.last()) {
                (Some(a), Some(b)) if cs.len() > 1 => format!("{}..{}", a.start, b.end),
                (Some(a), _) => a.start.clone(),
                _ => String::new(),
            };
            let walled = if k == 0 { "walled by " } else { "by " };
            format!("{} {walled}{name} at {rate}, {when}", cs.len())
        })
        .collect();
    format!("{} copies: {}", copies.len(), parts.join("; "))
}

/// Every copy's full verdict, in order (`report --copy all`).
pub fn render_copies(r: &Report) -> String {
    let mut o = String::new();
    for c in &r.copies {
        let _ = writeln!(o, "\n{}", upper_first(&copy_head(c, r.copies.len())));
        verdict_block(&mut o, &c.bottleneck, c.flow.as_ref());
    }
    o
}

/// The report as text for a terminal.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let b = &r.bottleneck;
    let _ = writeln!(
        o,
        "Window {} .. {} ({} s)\n",
        r.window.from, r.window.to, r.window.seconds
    );
    lead_copy(&mut o, r);
    verdict_block(&mut o, b, r.flow.as_ref());
    copies_table(&mut o, r);
    patterns(&mut o, r);
    event_groups(&mut o, r);
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
    for t in &r.transfers {
        let _ = writeln!(o, "Transfer on {}: {}", t.host, t.line());
    }
    for s in &r.stalls {
        let _ = writeln!(o, "Crawl on {}: {}", s.host, s.line());
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
            .map(|t| {
                let name = if t.thread == t.process {
                    t.process.clone()
                } else {
                    format!("{}/{}", t.process, t.thread)
                };
                format!("{name} {}", pct(t.core_fraction))
            })
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
    gaps(&mut o, r);
    refusals(&mut o, r);
    routine_exits(&mut o, r);
    o
}

/// What the routine exits' lines are (restart patterns that only ended on their own).
pub(crate) const ROUTINE_TITLE: &str =
    "Routine exits (commands that ended on their own and touched no flow)";

/// The routine exits, one line per process, at the end.
fn routine_exits(o: &mut String, r: &Report) {
    if r.routine_exits.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n{ROUTINE_TITLE}:");
    for x in &r.routine_exits {
        let _ = writeln!(o, "  - {}", x.line);
    }
}

/// The restart patterns, each death with its context.
fn patterns(o: &mut String, r: &Report) {
    for p in &r.patterns {
        let _ = writeln!(o, "\nPattern: {}", p.summary);
        // The summary already ends with the first sentence when the cause is known.
        let rest: Vec<&str> = p
            .cause_evidence
            .iter()
            .map(String::as_str)
            .filter(|e| !p.summary.ends_with(e))
            .collect();
        if rest.is_empty() {
            let _ = writeln!(o, "  cause: {}", p.cause);
        } else {
            let _ = writeln!(o, "  cause: {} ({})", p.cause, rest.join("; "));
        }
        if p.deaths_total > p.deaths.len() {
            let _ = writeln!(
                o,
                "  {} deaths; the first and last {} with their context:",
                p.deaths_total,
                p.deaths.len() / 2
            );
        }
        for d in &p.deaths {
            let _ = writeln!(
                o,
                "  - {} (pid {}) {}; in the {} before: {:.0} TCP retransmits, {:.0} resets, {:.0} timeouts, {:.0} NIC errors, {:.0} drops{}, {:.0} swap pages{}",
                d.at,
                d.pid,
                d.ended,
                context_span(d.window_s),
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
}

/// The text of `nasprobe events`: one line per event in time order, then the restart patterns
/// with the context of each death, then the gaps.
pub fn render_events(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Window {} .. {} ({} s): {}",
        r.window.from,
        r.window.to,
        r.window.seconds,
        event_count(r)
    );
    event_groups(&mut o, r);
    for e in &r.events {
        let mut line = format!("{} {:<10} {:<13}", e.at, e.host, e.kind);
        if let Some(p) = &e.process {
            let _ = write!(line, " {p}");
        }
        if let Some(pid) = e.pid {
            let _ = write!(line, " [{pid}]");
        }
        if let Some(d) = &e.device {
            let _ = write!(line, " {d}");
        }
        // An exit's detail says how it ended and after how long.
        if let Some(l) = e.lifetime_s.filter(|_| e.detail.is_none()) {
            let _ = write!(line, " after {l:.0} s");
        }
        if let Some(cpu) = e.cpu_s {
            let _ = write!(line, ", {cpu:.1} s CPU");
        }
        if let Some(d) = &e.detail {
            let _ = write!(line, " {d}");
        }
        if let Some(cmd) = e.cmdline.as_deref().filter(|c| !c.is_empty()) {
            let _ = write!(line, ": {cmd}");
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
    patterns(&mut o, r);
    gaps(&mut o, r);
    refusals(&mut o, r);
    routine_exits(&mut o, r);
    o
}

/// "N events": over a long window `events` lists only some of them, and says so.
fn event_count(r: &Report) -> String {
    if r.event_groups.is_empty() {
        return format!("{} events", r.events.len());
    }
    format!(
        "{} events, {} of them listed (the first and last {} of each group below)",
        r.events_total(),
        r.events.len(),
        crate::report::GROUP_KEEP_ENDS
    )
}

/// Over a long window: the events summarised, one line per group.
fn event_groups(o: &mut String, r: &Report) {
    if r.event_groups.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nEvents: {} in {} groups (first and last {} of each listed)",
        r.events_total(),
        r.event_groups.len(),
        crate::report::GROUP_KEEP_ENDS
    );
    for g in &r.event_groups {
        let _ = writeln!(o, "  - {}", g.summary);
    }
}

/// The gaps: data known to be missing.
fn gaps(o: &mut String, r: &Report) {
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
}

/// One refusal of the collector: host, when, how many times, what.
pub(crate) fn refusal_line(g: &crate::report::GapOut) -> String {
    let what = g
        .reason
        .strip_prefix(crate::REFUSED_PREFIX)
        .unwrap_or(&g.reason)
        .trim_start();
    let times = match g.samples {
        Some(1) | None => String::new(),
        Some(n) => format!(" ({n} times)"),
    };
    if g.from == g.to {
        format!("{} {}{times}: {what}", g.host, g.from)
    } else {
        format!("{} {} .. {}{times}: {what}", g.host, g.from, g.to)
    }
}

/// What the collector refused on its connections (stored, so shown after the fact).
fn refusals(o: &mut String, r: &Report) {
    if !r.refusals.is_empty() {
        let _ = writeln!(o, "\nRefused by the collector (not stored):");
        for g in &r.refusals {
            let _ = writeln!(o, "  - {}", refusal_line(g));
        }
    }
}

/// "minute" for the full minute, else "12 s".
pub(crate) fn context_span(window_s: f64) -> String {
    if window_s >= 59.5 {
        "minute".into()
    } else {
        format!("{window_s:.0} s")
    }
}
