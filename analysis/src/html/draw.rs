//! What every chart of a host draws with: the host's context ([`HostCtx`]), the `<svg>` opening,
//! the time and value grids, the overlays (gaps, the active period, event markers), labels and
//! lines.

use std::fmt::Write;

use super::markers::Marker;
use super::svg::{Bin, Spans, TimeAxis, W, X0, X1, dur, esc, n1, time_ticks, when};
use crate::input::HostData;
use crate::report::HostSummary;
use crate::series::HostSeries;
use crate::vocab::{Candidate, Resource};

/// Everything the charts of one host need.
pub(crate) struct HostCtx<'a> {
    pub data: &'a HostData,
    pub s: &'a HostSeries,
    pub sum: Option<&'a HostSummary>,
    pub sp: Spans,
    pub ax: TimeAxis,
    pub cands: Vec<Candidate>,
    /// The resource named as the wall when it is on this host.
    pub wall: Option<Resource>,
    pub markers: Vec<Marker>,
}

pub(crate) fn open(o: &mut String, c: &HostCtx, resource: &str, h: f64, timed: bool, label: &str) {
    let _ = write!(
        o,
        r#"<svg class="chart" data-host="{}" data-resource="{resource}" viewBox="0 0 {W} {}" role="img" aria-label="{}""#,
        esc(&c.s.name),
        n1(h),
        esc(label)
    );
    if timed {
        let _ = write!(
            o,
            r#" data-t0="{}" data-t1="{}" data-x0="{X0}" data-x1="{X1}""#,
            c.ax.t0 as u64, c.ax.t1 as u64
        );
    }
    o.push('>');
}

/// Vertical grid at the time ticks and their labels under `bottom`.
pub(crate) fn time_grid(o: &mut String, ax: &TimeAxis, top: f64, bottom: f64) {
    o.push_str(r#"<g class="grid">"#);
    for (t, _) in time_ticks(ax) {
        let x = n1(ax.x(t));
        let _ = write!(
            o,
            r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
            n1(top),
            n1(bottom)
        );
    }
    let _ = write!(
        o,
        r#"<line class="base" x1="{X0}" y1="{b}" x2="{X1}" y2="{b}"/>"#,
        b = n1(bottom)
    );
    o.push_str("</g>");
    o.push_str(r#"<g class="tlabels">"#);
    for (t, label) in time_ticks(ax) {
        let _ = write!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            n1(ax.x(t)),
            n1(bottom + 12.0),
            esc(&label)
        );
    }
    o.push_str("</g>");
}

/// Horizontal grid lines with labels on the left (or right when `right`).
pub(crate) fn y_grid(
    o: &mut String,
    top: f64,
    bottom: f64,
    ymax: f64,
    step: f64,
    right: bool,
    fmt: impl Fn(f64) -> String,
) {
    let _ = write!(
        o,
        r#"<g class="{}">"#,
        if right { "ylabels r" } else { "grid" }
    );
    let mut v = 0.0;
    while v <= ymax * 1.0001 {
        let y = n1(bottom - v / ymax * (bottom - top));
        if right {
            let _ = write!(
                o,
                r#"<text x="{}" y="{y}" dy="3">{}</text>"#,
                X1 + 4.0,
                esc(&fmt(v))
            );
        } else {
            if v > 0.0 {
                let _ = write!(o, r#"<line x1="{X0}" y1="{y}" x2="{X1}" y2="{y}"/>"#);
            }
            let _ = write!(
                o,
                r#"<text x="{}" y="{y}" dy="3" text-anchor="end">{}</text>"#,
                X0 - 4.0,
                esc(&fmt(v))
            );
        }
        v += step;
    }
    o.push_str("</g>");
}

/// Gap bands, event markers and the hover cursor over a plot area.
pub(crate) fn overlays(o: &mut String, c: &HostCtx, top: f64, bottom: f64) {
    let (t, b) = (n1(top), n1(bottom));
    for g in c.data.gaps.iter().filter(|g| !crate::is_refusal(&g.reason)) {
        let a = c.ax.x(g.from_ms as f64).max(X0);
        let e = c.ax.x(g.to_ms as f64).min(X1).max(a + 2.0);
        let _ = write!(
            o,
            r#"<rect class="gap" x="{}" y="{t}" width="{}" height="{}"><title>{}</title></rect>"#,
            n1(a),
            n1(e - a),
            n1(bottom - top),
            esc(&format!(
                "no data {} .. {} ({}{}): {}",
                when(g.from_ms),
                when(g.to_ms),
                dur((g.to_ms.saturating_sub(g.from_ms)) as f64 / 1000.0),
                g.samples
                    .map(|n| format!(", {n} records"))
                    .unwrap_or_default(),
                g.reason
            ))
        );
    }
    // Many markers: short ticks at the top instead of full-height lines over the data.
    let dense = c.markers.len() > 40;
    let tick_b = if dense { n1(top + 9.0) } else { b.clone() };
    for m in &c.markers {
        let x = c.ax.x(m.t);
        let xs = n1(x);
        let glyph = match m.class {
            "ev-exit" => format!("M{} {}l7 0l-3.5 6z", n1(x - 3.5), n1(top)),
            "ev-start" if !dense => format!("M{} {}l7 0l-3.5 -6z", n1(x - 3.5), n1(bottom)),
            "ev-start" => format!("M{} {}l7 0l-3.5 -6z", n1(x - 3.5), n1(top + 6.0)),
            "ev-link" => format!("M{xs} {}l3.5 3.5l-3.5 3.5l-3.5 -3.5z", n1(top)),
            "ev-agent" => format!("M{} {}h6v6h-6z", n1(x - 3.0), n1(top)),
            _ => format!("M{} {}h5v5h-5z", n1(x - 2.5), n1(top)),
        };
        let _ = write!(
            o,
            r#"<g class="ev {}" data-n="{}"><title>{}</title><line class="hit" x1="{xs}" y1="{t}" x2="{xs}" y2="{b}"/><line x1="{xs}" y1="{t}" x2="{xs}" y2="{tick_b}"/><path d="{glyph}"/></g>"#,
            m.class,
            m.n,
            esc(&m.texts.join("\n"))
        );
    }
    let _ = write!(
        o,
        r#"<line class="cursor" x1="{X0}" y1="{t}" x2="{X0}" y2="{b}" visibility="hidden"/>"#
    );
}

pub(crate) fn text(o: &mut String, class: &str, x: f64, y: f64, anchor: &str, s: &str) {
    let _ = write!(
        o,
        r#"<text class="{class}" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
        n1(x),
        n1(y),
        esc(s)
    );
}

pub(crate) fn path(o: &mut String, class: &str, d: &str) {
    if !d.is_empty() {
        let _ = write!(o, r#"<path class="{class}" d="{d}"/>"#);
    }
}

pub(crate) fn hline(o: &mut String, class: &str, y: f64) {
    let _ = write!(
        o,
        r#"<line class="{class}" x1="{X0}" y1="{y}" x2="{X1}" y2="{y}"/>"#,
        y = n1(y)
    );
}

pub(crate) fn no_data(o: &mut String, top: f64, bottom: f64, what: &str) {
    text(
        o,
        "muted",
        (X0 + X1) / 2.0,
        (top + bottom) / 2.0,
        "middle",
        what,
    );
}

pub(crate) fn max_bins(bins: &[Bin]) -> f64 {
    bins.iter().map(|b| b.max).fold(0.0, f64::max)
}
