//! The charts of one host, each an `<svg class="chart">` on the shared time axis (except the
//! bottleneck bars): throughput, CPU, disks, memory, and the bottleneck breakdown.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::draw::{
    HostCtx, hline, max_bins, no_data, open, overlays, path, text, time_grid, y_grid,
};
use super::svg::{
    Bin, W, X0, X1, area_path, downsample, envelope_path, esc, heat_paths, line_path, n1, nice_step,
};
use crate::series::{HostSeries, ThreadKey};
use crate::stats::{max, median, percentile};
use crate::verdict::{self, Candidate, MB, Resource, pct};

/// The NIC that carries the transfer: the busiest one that is not loopback (bonds last).
pub(crate) fn busiest_nic(s: &HostSeries) -> Option<&str> {
    s.nics
        .iter()
        .filter(|(n, _)| n.as_str() != "lo")
        .map(|(n, x)| {
            let m = crate::stats::mean(&x.rx_bps)
                .unwrap_or(0.0)
                .max(crate::stats::mean(&x.tx_bps).unwrap_or(0.0));
            (n, x.is_bond, m)
        })
        .max_by(|a, b| (!a.1).cmp(&!b.1).then(a.2.total_cmp(&b.2)))
        .map(|(n, _, _)| n.as_str())
}

/// The NICs of the host's inventory (every instance's `Hello`, no loopback) that no sample
/// reported: idle the whole window.
fn idle_nics(c: &HostCtx) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in &c.data.instances {
        for n in &i.hello.nics {
            let name = n.name.as_str();
            if name != "lo" && !c.s.nics.contains_key(name) && !out.iter().any(|x| x == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Transfer throughput of the busiest NIC, rx and tx in MB/s, against the link; the inventory's
/// NICs no sample reported are idle (drawn at 0 when there is no other, named in the caption).
pub fn throughput(c: &HostCtx) -> (String, String) {
    let mut o = String::new();
    let mut lbls = String::new();
    let (top, ph) = (14.0, 124.0);
    let bottom = top + ph;
    let h = bottom + 18.0;
    let mut idle = idle_nics(c);
    let zero;
    let (name, n) = match busiest_nic(c.s) {
        Some(name) => (name.to_string(), &c.s.nics[name]),
        None if !idle.is_empty() => {
            let k = c.s.points.len();
            zero = crate::series::NicSeries {
                rx_bps: vec![0.0; k],
                tx_bps: vec![0.0; k],
                speed_bps: vec![0.0; k],
                full_duplex: vec![true; k],
                up: vec![true; k],
                ..Default::default()
            };
            (idle.remove(0), &zero)
        }
        None => {
            open(&mut o, c, "throughput", h, true, "throughput: no NIC");
            time_grid(&mut o, &c.ax, top, bottom);
            no_data(&mut o, top, bottom, "no network interface reported");
            overlays(&mut o, c, top, bottom);
            o.push_str("</svg>");
            return (o, "Throughput".into());
        }
    };
    let name = name.as_str();
    let mb = |v: &[f64]| v.iter().map(|x| x / MB).collect::<Vec<f64>>();
    let (rx, tx) = (mb(&n.rx_bps), mb(&n.tx_bps));
    let brx = downsample(&c.sp, &rx, &c.ax);
    let btx = downsample(&c.sp, &tx, &c.ax);
    let speed = median(&n.speed_bps).unwrap_or(0.0) / MB;
    let nsum = c.sum.and_then(|h| h.nics.iter().find(|x| x.name == name));
    let ymax = speed.max(max_bins(&brx)).max(max_bins(&btx)).max(1.0) * 1.15;
    let step = nice_step(ymax, 4);
    let y = |v: f64| bottom - v / ymax * ph;
    let caption = format!(
        "Throughput · {name}{}",
        if speed > 0.0 {
            format!(
                " · link {:.0} Mb/s{}",
                speed * MB * 8.0 / 1e6,
                if n.full_duplex.last().copied().unwrap_or(true) {
                    " full duplex"
                } else {
                    " half duplex"
                }
            )
        } else {
            " · link speed unknown".into()
        }
    ) + &if idle.is_empty() {
        String::new()
    } else {
        format!(" · idle (no traffic): {}", idle.join(", "))
    };
    open(&mut o, c, "throughput", h, true, &caption);
    time_grid(&mut o, &c.ax, top, bottom);
    y_grid(&mut o, top, bottom, ymax, step, false, |v| {
        format!("{v:.0}")
    });
    text(&mut o, "unit", 4.0, 9.0, "start", "MB/s");
    path(&mut o, "env rx", &envelope_path(&brx, c.sp.step, &c.ax, y));
    path(&mut o, "env tx", &envelope_path(&btx, c.sp.step, &c.ax, y));
    path(&mut o, "line tx", &line_path(&btx, c.sp.step, &c.ax, y));
    path(&mut o, "line rx", &line_path(&brx, c.sp.step, &c.ax, y));
    if speed > 0.0 {
        hline(&mut o, "ceil", y(speed));
        hline(&mut o, "prac", y(speed * verdict::walls::NIC_PRACTICAL));
        text(
            &mut lbls,
            "lbl ceil-t",
            X1 - 3.0,
            y(speed) - 4.0,
            "end",
            &format!(
                "link ceiling {:.0} MB/s (TCP payload ≈{:.0})",
                speed,
                speed * verdict::walls::NIC_PRACTICAL
            ),
        );
    }
    if let Some(ns) = nsum {
        let rx_dom = ns.rx_mb_s >= ns.tx_mb_s;
        let (sus, peak, dir, series) = if rx_dom {
            (ns.rx_mb_s, ns.rx_peak_mb_s, "rx", &rx)
        } else {
            (ns.tx_mb_s, ns.tx_peak_mb_s, "tx", &tx)
        };
        if sus > 0.0 {
            hline(&mut o, "sus", y(sus));
            text(
                &mut lbls,
                "lbl sus-t",
                X0 + 4.0,
                y(sus) + 12.0,
                "start",
                &format!("sustained {sus:.0} MB/s {dir} (median)"),
            );
        }
        if peak > 0.0 {
            let at = series
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, _)| c.sp.spans[i].1);
            if let Some(t) = at {
                let (px, py) = (c.ax.x(t), y(peak));
                let _ = write!(
                    o,
                    r#"<g class="peak"><title>{}</title><circle cx="{}" cy="{}" r="3.5"/></g>"#,
                    esc(&format!(
                        "peak {peak:.1} MB/s {dir}: the best 10 s, not the sustained rate"
                    )),
                    n1(px),
                    n1(py)
                );
                let right = px > (X0 + X1) / 2.0;
                text(
                    &mut lbls,
                    "lbl peak-t",
                    if right { px - 6.0 } else { px + 6.0 },
                    (py - 6.0).max(top + 8.0),
                    if right { "end" } else { "start" },
                    &format!("peak {peak:.0} (best 10 s)"),
                );
            }
        }
    }
    if brx.is_empty() && btx.is_empty() {
        no_data(&mut o, top, bottom, "no samples");
    }
    overlays(&mut o, c, top, bottom);
    o.push_str(&lbls);
    o.push_str("</svg>");
    (o, caption)
}

/// Per-core CPU as a heat strip, then the hottest thread against one core and the whole box.
pub fn cpu(c: &HostCtx) -> (String, String) {
    let mut o = String::new();
    let mut lbls = String::new();
    let cores =
        c.s.cpu_count
            .max(c.s.core_busy.iter().map(Vec::len).max().unwrap_or(0))
            .max(1);
    let rh = (112.0 / cores as f64).clamp(2.0, 12.0);
    let top = 6.0;
    let heat_b = top + cores as f64 * rh;
    let lt = heat_b + 12.0;
    let lh = 84.0;
    let lb = lt + lh;
    let h = lb + 18.0;
    let hot = c.sum.and_then(|h| h.cpu.hottest_thread.as_ref());
    let caption = format!(
        "CPU · {cores} cores{}",
        hot.map(|t| {
            if t.thread == t.process {
                format!(" · hottest thread: {}", t.process)
            } else {
                format!(" · hottest thread: {} of {}", t.thread, t.process)
            }
        })
        .unwrap_or_default()
    );
    open(&mut o, c, "cpu", h, true, &caption);
    time_grid(&mut o, &c.ax, lt, lb);
    // Heat strip.
    let rows: Vec<Vec<Bin>> = (0..cores)
        .map(|k| {
            let v: Vec<f64> =
                c.s.core_busy
                    .iter()
                    .map(|r| r.get(k).copied().unwrap_or(f64::NAN))
                    .collect();
            downsample(&c.sp, &v, &c.ax)
        })
        .collect();
    let _ = write!(
        o,
        r#"<rect class="strip" x="{X0}" y="{}" width="{}" height="{}"/>"#,
        n1(top),
        n1(X1 - X0),
        n1(heat_b - top)
    );
    o.push_str(r#"<g class="heat">"#);
    for (lvl, d) in heat_paths(&rows, c.sp.step, &c.ax, top, rh)
        .iter()
        .enumerate()
    {
        if !d.is_empty() {
            let _ = write!(o, r#"<path class="q{lvl}" d="{d}"/>"#);
        }
    }
    o.push_str("</g>");
    for (k, bins) in rows.iter().enumerate() {
        let ry = top + k as f64 * rh;
        let means: Vec<f64> = bins.iter().map(|b| b.mean).collect();
        let peak = bins.iter().map(|b| b.max).fold(0.0, f64::max);
        let _ = write!(
            o,
            r#"<rect class="rowhit" x="{X0}" y="{}" width="{}" height="{}"><title>cpu{k}: median {} busy, highest {}</title></rect>"#,
            n1(ry),
            n1(X1 - X0),
            n1(rh),
            pct(median(&means).unwrap_or(0.0)),
            pct(peak)
        );
        if rh >= 7.0 || k == 0 || k + 1 == cores {
            text(
                &mut o,
                "rowlbl",
                X0 - 4.0,
                ry + rh / 2.0 + 3.0,
                "end",
                &format!("cpu{k}"),
            );
        }
    }
    // Hottest thread and the whole box.
    let ymax = 1.1;
    let y = |f: f64| lb - f.min(ymax) / ymax * lh;
    y_grid(&mut o, lt, lb, 1.0, 0.5, false, pct);
    let box_bins = downsample(&c.sp, &c.s.cpu_busy, &c.ax);
    path(
        &mut o,
        "line box",
        &line_path(&box_bins, c.sp.step, &c.ax, y),
    );
    if let Some(t) = hot {
        let key = ThreadKey {
            process: t.process.clone(),
            thread: t.thread.clone(),
        };
        if let Some(ts) = c.s.threads.get(&key) {
            let b = downsample(&c.sp, &ts.frac, &c.ax);
            path(&mut o, "env thr", &envelope_path(&b, c.sp.step, &c.ax, y));
            path(&mut o, "line thr", &line_path(&b, c.sp.step, &c.ax, y));
        }
    }
    hline(&mut o, "ceil", y(1.0));
    text(
        &mut lbls,
        "lbl ceil-t",
        X1 - 3.0,
        y(1.0) - 3.0,
        "end",
        "one full core",
    );
    if c.s.points.is_empty() {
        no_data(&mut o, top, lb, "no samples");
    }
    overlays(&mut o, c, top, lb);
    o.push_str(&lbls);
    o.push_str("</svg>");
    (o, caption)
}

enum DiskRow {
    Header(String),
    Disk(String),
}

/// The rows of the disk chart: md arrays as headers with their members under them, arrays of
/// unknown members, then the other active disks; and the names of the idle ones.
fn disk_rows(c: &HostCtx) -> (Vec<DiskRow>, Vec<String>) {
    let active = |name: &str| {
        c.s.disks.get(name).is_some_and(|d| {
            d.util.iter().any(|x| *x > 0.0)
                || d.read_bps.iter().any(|x| *x > 0.0)
                || d.write_bps.iter().any(|x| *x > 0.0)
        })
    };
    let hello = c.data.instances.last().map(|i| &i.hello);
    let mut rows = Vec::new();
    let mut placed: BTreeSet<String> = BTreeSet::new();
    let mut idle = Vec::new();
    let mb_s = |name: &str| {
        c.s.disks.get(name).map_or(0.0, |d| {
            (crate::stats::mean(&d.read_bps).unwrap_or(0.0)
                + crate::stats::mean(&d.write_bps).unwrap_or(0.0))
                / MB
        })
    };
    if let Some(h) = hello {
        for md in &h.md_arrays {
            let name = md.name.as_str().to_string();
            let members: Vec<String> = md.members.iter().map(|m| m.as_str().to_string()).collect();
            rows.push(DiskRow::Header(format!(
                "{name}{} · {:.1} MB/s · members {}",
                if md.level.is_empty() {
                    String::new()
                } else {
                    format!(" {}", md.level.as_str())
                },
                mb_s(&name),
                members.join(" ")
            )));
            placed.insert(name);
            for m in members {
                if c.s.disks.contains_key(&m) && placed.insert(m.clone()) {
                    rows.push(DiskRow::Disk(m));
                }
            }
        }
    }
    for (name, d) in &c.s.disks {
        if d.is_md && !placed.contains(name) {
            rows.push(DiskRow::Header(format!(
                "{name} array · {:.1} MB/s · members unknown",
                mb_s(name)
            )));
            placed.insert(name.clone());
        }
    }
    let grouped = !placed.is_empty();
    let mut others = Vec::new();
    for name in c.s.disks.keys() {
        if placed.contains(name) {
            continue;
        }
        if active(name) {
            others.push(DiskRow::Disk(name.clone()));
        } else {
            idle.push(name.clone());
        }
    }
    if grouped && !others.is_empty() {
        rows.push(DiskRow::Header("other disks".into()));
    }
    rows.extend(others);
    (rows, idle)
}

/// One disk's row at `yy`: util area, await line (0..`amax` ms), its figures and hover text.
fn disk_row(o: &mut String, c: &HostCtx, name: &str, yy: f64, rh: f64, amax: f64) {
    let d = &c.s.disks[name];
    let (rt, rb) = (yy + 2.0, yy + rh - 2.0);
    let uy = |v: f64| rb - v.clamp(0.0, 1.0) * (rb - rt);
    let ay = |v: f64| rb - (v / amax).clamp(0.0, 1.0) * (rb - rt);
    let _ = write!(
        o,
        r#"<rect class="strip" x="{X0}" y="{}" width="{}" height="{}"/>"#,
        n1(rt),
        n1(X1 - X0),
        n1(rb - rt)
    );
    let ub = downsample(&c.sp, &d.util, &c.ax);
    path(o, "area util", &area_path(&ub, c.sp.step, &c.ax, uy, rb));
    let ab = downsample(&c.sp, &d.await_ms, &c.ax);
    path(o, "line await", &line_path(&ab, c.sp.step, &c.ax, ay));
    let ds = c.sum.and_then(|h| h.disks.iter().find(|x| x.name == name));
    let (u, aw) = ds.map_or_else(
        || {
            (
                median(&d.util).unwrap_or(0.0),
                median(&d.await_ms).unwrap_or(0.0),
            )
        },
        |x| (x.util, x.await_ms),
    );
    let tip = match ds {
        Some(x) => format!(
            "{name}: util {} median, {} best 10 s; await {:.1} ms; queue {:.1}; {:.1} MB/s read, {:.1} MB/s written{}",
            pct(x.util),
            pct(x.util_peak),
            x.await_ms,
            x.queue,
            x.read_mb_s,
            x.write_mb_s,
            match x.rotational {
                Some(true) => "; rotational",
                Some(false) => "; solid state",
                None => "",
            }
        ),
        None => format!("{name}: util {} median", pct(u)),
    };
    let _ = write!(
        o,
        r#"<rect class="rowhit" x="{X0}" y="{}" width="{}" height="{}"><title>{}</title></rect>"#,
        n1(rt),
        n1(X1 - X0),
        n1(rb - rt),
        esc(&tip)
    );
    text(o, "rowlbl", X0 - 4.0, yy + rh / 2.0 + 3.0, "end", name);
    text(o, "rowval", X1 + 3.0, yy + rh / 2.0 - 1.0, "start", &pct(u));
    text(
        o,
        "rowval aw",
        X1 + 3.0,
        yy + rh / 2.0 + 8.0,
        "start",
        &format!("{aw:.0} ms"),
    );
}

/// Util % (area) and await (line) per disk, members of md arrays grouped under their array.
pub fn disk(c: &HostCtx) -> (String, String) {
    let mut o = String::new();
    let (rows, idle) = disk_rows(c);

    let shown: Vec<&String> = rows
        .iter()
        .filter_map(|r| match r {
            DiskRow::Disk(n) => Some(n),
            DiskRow::Header(_) => None,
        })
        .collect();
    let amax_raw = shown
        .iter()
        .filter_map(|n| percentile(&c.s.disks[n.as_str()].await_ms, 0.98))
        .fold(0.0, f64::max)
        .max(5.0);
    let amax = nice_step(amax_raw * 1.5, 1);
    let (hh, rh) = (15.0, 26.0);
    let top = 4.0;
    // Room for the event glyphs above the first row.
    let pad = 7.0;
    let mut bottom = top + pad;
    for r in &rows {
        bottom += match r {
            DiskRow::Header(_) => hh,
            DiskRow::Disk(_) => rh,
        };
    }
    if rows.is_empty() {
        bottom += 40.0;
    }
    let h = bottom + 18.0;
    let caption = format!(
        "Disks · util % (area, 0–100 per row) and await (line, 0–{amax:.0} ms){}",
        if idle.is_empty() {
            String::new()
        } else {
            format!(" · idle: {}", idle.join(" "))
        }
    );
    open(&mut o, c, "disk", h, true, &caption);
    time_grid(&mut o, &c.ax, top, bottom);
    let mut yy = top + pad;
    for r in &rows {
        match r {
            DiskRow::Header(t) => {
                text(&mut o, "grp", X0 + 2.0, yy + 11.0, "start", t);
                yy += hh;
            }
            DiskRow::Disk(name) => {
                disk_row(&mut o, c, name, yy, rh, amax);
                yy += rh;
            }
        }
    }
    if rows.is_empty() {
        no_data(&mut o, top, bottom, "no disk activity");
    }
    overlays(&mut o, c, top, bottom);
    o.push_str("</svg>");
    (o, caption)
}

/// Memory in use (area, of the total) and swap activity (line, pages/s on the right axis).
pub fn memory(c: &HostCtx) -> (String, String) {
    let mut o = String::new();
    let (top, ph) = (14.0, 80.0);
    let bottom = top + ph;
    let h = bottom + 18.0;
    let m = &c.s.mem;
    let used: Vec<f64> = m
        .total_kib
        .iter()
        .zip(&m.available_kib)
        .map(|(t, a)| {
            if *t > 0.0 {
                (1.0 - a / t).clamp(0.0, 1.0)
            } else {
                f64::NAN
            }
        })
        .collect();
    let swap: Vec<f64> = m
        .swap_in_ps
        .iter()
        .zip(&m.swap_out_ps)
        .map(|(a, b)| a + b)
        .collect();
    let total_mib = median(&m.total_kib).unwrap_or(0.0) / 1024.0;
    let swapped = max(&swap).unwrap_or(0.0);
    let caption = format!(
        "Memory · in use of {} · swap in+out pages/s (right){}",
        if total_mib >= 1024.0 {
            format!("{:.2} GiB", total_mib / 1024.0)
        } else {
            format!("{total_mib:.0} MiB")
        },
        if swapped <= 0.0 {
            " · no swapping"
        } else {
            ""
        }
    );
    open(&mut o, c, "memory", h, true, &caption);
    time_grid(&mut o, &c.ax, top, bottom);
    y_grid(&mut o, top, bottom, 1.0, 0.5, false, pct);
    let ub = downsample(&c.sp, &used, &c.ax);
    let y = |v: f64| bottom - v.clamp(0.0, 1.0) * ph;
    path(
        &mut o,
        "area mem",
        &area_path(&ub, c.sp.step, &c.ax, y, bottom),
    );
    let sb = downsample(&c.sp, &swap, &c.ax);
    let smax_raw = max_bins(&sb).max(verdict::walls::SWAP_WALL_PAGES_PS / 4.0);
    let sstep = nice_step(smax_raw, 2);
    let smax = (smax_raw / sstep).ceil() * sstep;
    let sy = |v: f64| bottom - (v / smax).clamp(0.0, 1.0) * ph;
    y_grid(&mut o, top, bottom, smax, sstep, true, |v| {
        format!("{v:.0}")
    });
    text(&mut o, "unit", W - 2.0, 7.0, "end", "pages/s");
    if smax >= verdict::walls::SWAP_WALL_PAGES_PS {
        hline(&mut o, "prac", sy(verdict::walls::SWAP_WALL_PAGES_PS));
    }
    path(
        &mut o,
        "env swap",
        &envelope_path(&sb, c.sp.step, &c.ax, sy),
    );
    path(&mut o, "line swap", &line_path(&sb, c.sp.step, &c.ax, sy));
    if ub.is_empty() {
        no_data(&mut o, top, bottom, "no memory figures");
    }
    overlays(&mut o, c, top, bottom);
    o.push_str("</svg>");
    (o, caption)
}

fn threshold(resource: Resource) -> Option<f64> {
    match resource {
        Resource::CpuThread => Some(verdict::walls::THREAD_WALL),
        Resource::CpuAll => Some(verdict::walls::CPU_ALL_WALL),
        Resource::Disk => Some(verdict::walls::DISK_WALL),
        Resource::Nic => Some(verdict::walls::NIC_WALL),
        _ => None,
    }
}

/// Each resource's utilization as a share of its ceiling, as horizontal bars; the wall in red.
pub fn bottleneck(c: &HostCtx) -> (String, String) {
    let mut o = String::new();
    let (bx0, bx1) = (178.0, 540.0);
    let top = 18.0;
    let rh = 24.0;
    let rows: Vec<&Candidate> = Resource::WALLS
        .iter()
        .filter_map(|r| c.cands.iter().find(|x| x.resource == *r))
        .collect();
    let bottom = top + rows.len().max(1) as f64 * rh;
    let h = bottom + 6.0;
    let caption =
        "Share of each ceiling (median over the transfer) · ticks: where it becomes a wall"
            .to_string();
    open(&mut o, c, "bottleneck", h, false, &caption);
    o.push_str(r#"<g class="grid">"#);
    for k in 0..=4 {
        let x = n1(bx0 + (bx1 - bx0) * k as f64 / 4.0);
        let _ = write!(
            o,
            r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}"/><text x="{x}" y="{}" text-anchor="middle">{}%</text>"#,
            n1(top - 4.0),
            n1(bottom),
            n1(top - 7.0),
            k * 25
        );
    }
    o.push_str("</g>");
    for (i, cand) in rows.iter().enumerate() {
        let y = top + i as f64 * rh;
        let label = match cand.resource {
            Resource::CpuThread => {
                format!("one thread · {}", cand.process.as_deref().unwrap_or("?"))
            }
            Resource::CpuAll => format!("all {} cores", c.s.cpu_count.max(1)),
            Resource::Disk => format!("busiest disk · {}", cand.device.as_deref().unwrap_or("?")),
            Resource::Nic => format!("link · {}", cand.device.as_deref().unwrap_or("?")),
            Resource::Memory => {
                if cand.wall {
                    "memory · swapping".into()
                } else {
                    "memory in use".into()
                }
            }
            r => r.to_string(),
        };
        let is_wall = c.wall == Some(cand.resource);
        let class = if is_wall {
            "bar wall"
        } else if cand.wall {
            "bar hot"
        } else {
            "bar"
        };
        let u = cand.utilization.clamp(0.0, 1.0);
        let w = ((bx1 - bx0) * u).max(1.0);
        let _ = write!(
            o,
            r#"<g class="{class}" data-kind="{}"><title>{}</title><rect class="track" x="{bx0}" y="{}" width="{}" height="14"/><rect class="fill" x="{bx0}" y="{}" width="{}" height="14"/>"#,
            cand.resource,
            esc(&cand.sentence),
            n1(y + 5.0),
            n1(bx1 - bx0),
            n1(y + 5.0),
            n1(w)
        );
        text(&mut o, "barlbl", bx0 - 8.0, y + 16.0, "end", &label);
        if let Some(th) = threshold(cand.resource) {
            let x = n1(bx0 + (bx1 - bx0) * th);
            let _ = write!(
                o,
                r#"<line class="thresh" x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
                n1(y + 2.0),
                n1(y + 22.0)
            );
        }
        let val = if is_wall {
            format!("{} ◀ the wall", pct(cand.utilization))
        } else {
            pct(cand.utilization)
        };
        text(
            &mut o,
            "barval",
            bx0 + w.max(0.0) + 6.0,
            y + 16.0,
            "start",
            &val,
        );
        o.push_str("</g>");
    }
    if rows.is_empty() {
        no_data(&mut o, top, bottom, "no samples");
    }
    o.push_str("</svg>");
    (o, caption)
}
