//! SVG primitives of the HTML report: the shared time axis, downsampling to pixel buckets,
//! line / envelope / area / heat-strip paths, ticks and escaping. No I/O, no allocation per
//! point beyond the output string.

use std::fmt::Write;

use crate::time::rfc3339;

/// Width of every chart in SVG user units (the page scales it to the column width).
pub const W: f64 = 640.0;
/// Left edge of the plot area (room for the y labels).
pub(crate) const X0: f64 = 46.0;
/// Right edge of the plot area (room for a right-hand axis).
pub(crate) const X1: f64 = 596.0;

/// Escapes text for HTML / SVG content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A number with at most one decimal, no trailing ".0" (compact path coordinates).
pub fn n1(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The time axis every chart of the report shares: ms since the epoch to x.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeAxis {
    pub t0: f64,
    pub t1: f64,
    /// Horizontal pixels per bucket of a downsampled series (1: full detail).
    pub px: f64,
}

/// Hosts a page draws at one bucket per pixel; a page of more draws a bucket per 2, 3 ...
/// pixels (its size grows with hosts times buckets: ten hosts over a month were 3.5 MB at one
/// per pixel).
pub(crate) const HOSTS_AT_FULL_DETAIL: usize = 4;

impl TimeAxis {
    pub fn new(t0: f64, t1: f64) -> Self {
        let t1 = if t1 > t0 { t1 } else { t0 + 1000.0 };
        TimeAxis { t0, t1, px: 1.0 }
    }

    /// The axis for a page of `hosts` hosts ([`HOSTS_AT_FULL_DETAIL`]).
    pub fn for_hosts(mut self, hosts: usize) -> Self {
        self.px = hosts.div_ceil(HOSTS_AT_FULL_DETAIL).max(1) as f64;
        self
    }

    pub fn x(&self, t: f64) -> f64 {
        X0 + (t - self.t0) / (self.t1 - self.t0) * (X1 - X0)
    }

    /// One bucket per [`TimeAxis::px`] horizontal pixels of the plot area.
    pub(crate) fn buckets(&self) -> usize {
        ((X1 - X0) / self.px).round().max(1.0) as usize
    }

    pub(crate) fn span_ms(&self) -> f64 {
        self.t1 - self.t0
    }
}

/// One displayed point: the time it covers (ms) and the min / max / mean of the samples in it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bin {
    pub t0: f64,
    pub t1: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub n: u32,
}

/// The time span of each sample of a host (start, end in ms) and the usual interval.
#[derive(Debug, Clone)]
pub(crate) struct Spans {
    pub spans: Vec<(f64, f64)>,
    /// Median interval, ms.
    pub step: f64,
}

impl Spans {
    pub fn new(points: &[crate::series::Point]) -> Self {
        let spans: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (p.time_ms as f64 - p.interval_ms, p.time_ms as f64))
            .collect();
        let iv: Vec<f64> = points.iter().map(|p| p.interval_ms).collect();
        let step = crate::stats::median(&iv).unwrap_or(1000.0).max(1.0);
        Spans { spans, step }
    }
}

/// Downsamples a series to at most one bin per pixel (min / max / mean per bucket); a series
/// with fewer points than pixels keeps every point. Unknown (NaN) values are left out, so the
/// line breaks there.
pub(crate) fn downsample(sp: &Spans, v: &[f64], ax: &TimeAxis) -> Vec<Bin> {
    let nb = ax.buckets();
    if sp.spans.len() <= nb {
        return sp
            .spans
            .iter()
            .zip(v)
            .filter(|(_, x)| x.is_finite())
            .map(|(&(a, b), &x)| Bin {
                t0: a,
                t1: b,
                min: x,
                max: x,
                mean: x,
                n: 1,
            })
            .collect();
    }
    let mut acc: Vec<Option<Bin>> = vec![None; nb];
    for (&(a, b), &x) in sp.spans.iter().zip(v) {
        if !x.is_finite() {
            continue;
        }
        let mid = (a + b) / 2.0;
        let k = (((mid - ax.t0) / ax.span_ms()) * nb as f64).floor();
        let k = k.clamp(0.0, (nb - 1) as f64) as usize;
        match &mut acc[k] {
            Some(bin) => {
                bin.t0 = bin.t0.min(a);
                bin.t1 = bin.t1.max(b);
                bin.min = bin.min.min(x);
                bin.max = bin.max.max(x);
                bin.mean += x;
                bin.n += 1;
            }
            slot @ None => {
                *slot = Some(Bin {
                    t0: a,
                    t1: b,
                    min: x,
                    max: x,
                    mean: x,
                    n: 1,
                })
            }
        }
    }
    acc.into_iter()
        .flatten()
        .map(|mut b| {
            b.mean /= b.n as f64;
            b
        })
        .collect()
}

/// Splits bins into runs without holes (a hole: more than half an interval uncovered).
pub fn segments(bins: &[Bin], step: f64) -> Vec<&[Bin]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..bins.len() {
        if bins[i].t0 - bins[i - 1].t1 > step * 0.5 {
            out.push(&bins[start..i]);
            start = i;
        }
    }
    if start < bins.len() {
        out.push(&bins[start..]);
    }
    out
}

fn mid(b: &Bin) -> f64 {
    (b.t0 + b.t1) / 2.0
}

/// Line through the means; a lone point becomes a short flat stroke over its span.
pub(crate) fn line_path(bins: &[Bin], step: f64, ax: &TimeAxis, y: impl Fn(f64) -> f64) -> String {
    let mut d = String::new();
    for seg in segments(bins, step) {
        if seg.len() == 1 {
            let b = &seg[0];
            let yy = n1(y(b.mean));
            let _ = write!(
                d,
                "M{} {yy}L{} {yy}",
                n1(ax.x(b.t0)),
                n1(ax.x(b.t1).max(ax.x(b.t0) + 1.0))
            );
            continue;
        }
        for (i, b) in seg.iter().enumerate() {
            let _ = write!(
                d,
                "{}{} {}",
                if i == 0 { 'M' } else { 'L' },
                n1(ax.x(mid(b))),
                n1(y(b.mean))
            );
        }
    }
    d
}

/// The min..max envelope of downsampled bins (empty when nothing was merged).
pub(crate) fn envelope_path(
    bins: &[Bin],
    step: f64,
    ax: &TimeAxis,
    y: impl Fn(f64) -> f64,
) -> String {
    let mut d = String::new();
    if !bins.iter().any(|b| b.n > 1) {
        return d;
    }
    for seg in segments(bins, step) {
        if seg.len() < 2 {
            continue;
        }
        for (i, b) in seg.iter().enumerate() {
            let _ = write!(
                d,
                "{}{} {}",
                if i == 0 { 'M' } else { 'L' },
                n1(ax.x(mid(b))),
                n1(y(b.max))
            );
        }
        for b in seg.iter().rev() {
            let _ = write!(d, "L{} {}", n1(ax.x(mid(b))), n1(y(b.min)));
        }
        d.push('Z');
    }
    d
}

/// Area between the means and a baseline, over the full span of each run.
pub(crate) fn area_path(
    bins: &[Bin],
    step: f64,
    ax: &TimeAxis,
    y: impl Fn(f64) -> f64,
    base: f64,
) -> String {
    let mut d = String::new();
    let base = n1(base);
    for seg in segments(bins, step) {
        let (first, last) = (&seg[0], &seg[seg.len() - 1]);
        let _ = write!(d, "M{} {base}", n1(ax.x(first.t0)));
        if seg.len() == 1 {
            let yy = n1(y(first.mean));
            let _ = write!(
                d,
                "L{} {yy}L{} {yy}",
                n1(ax.x(first.t0)),
                n1(ax.x(first.t1))
            );
        } else {
            let _ = write!(d, "L{} {}", n1(ax.x(first.t0)), n1(y(first.mean)));
            for b in seg.iter() {
                let _ = write!(d, "L{} {}", n1(ax.x(mid(b))), n1(y(b.mean)));
            }
            let _ = write!(d, "L{} {}", n1(ax.x(last.t1)), n1(y(last.mean)));
        }
        let _ = write!(d, "L{} {base}Z", n1(ax.x(last.t1)));
    }
    d
}

/// Heat-strip cells: one path per level (1..=10, tenths of the value clamped to 0..1), each
/// row `rows[r]` at `top + r * rh`. Neighbouring cells of one level merge into one rectangle.
pub(crate) fn heat_paths(
    rows: &[Vec<Bin>],
    step: f64,
    ax: &TimeAxis,
    top: f64,
    rh: f64,
) -> Vec<String> {
    let mut paths = vec![String::new(); 11];
    let h = (rh - if rh >= 5.0 { 1.0 } else { 0.0 }).max(1.0);
    for (r, bins) in rows.iter().enumerate() {
        let y = n1(top + r as f64 * rh);
        let mut run: Option<(usize, f64, f64)> = None; // level, x start, x end
        let flush = |paths: &mut Vec<String>, run: Option<(usize, f64, f64)>| {
            if let Some((lvl, a, b)) = run
                && lvl > 0
            {
                let w = (b - a).max(0.6);
                let _ = write!(paths[lvl], "M{} {y}h{}v{}h-{}z", n1(a), n1(w), n1(h), n1(w));
            }
        };
        let mut prev_t1 = f64::NEG_INFINITY;
        for b in bins {
            let lvl = (b.mean.clamp(0.0, 1.0) * 10.0).round() as usize;
            let (a, e) = (ax.x(b.t0), ax.x(b.t1));
            let contiguous = b.t0 - prev_t1 <= step * 0.5;
            prev_t1 = b.t1;
            match run {
                Some((l, s, _)) if l == lvl && contiguous => run = Some((l, s, e)),
                _ => {
                    flush(&mut paths, run);
                    run = Some((lvl, a, e));
                }
            }
        }
        flush(&mut paths, run);
    }
    paths
}

/// A round step giving at most about `n` ticks up to `max`.
pub(crate) fn nice_step(max: f64, n: usize) -> f64 {
    let raw = (max / n.max(1) as f64).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Time ticks (ms) with their labels, aligned to round UTC times.
pub(crate) fn time_ticks(ax: &TimeAxis) -> Vec<(f64, String)> {
    const STEPS_S: [u64; 19] = [
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200,
        86_400, 172_800,
    ];
    let span_s = ax.span_ms() / 1000.0;
    let step_s = STEPS_S
        .iter()
        .copied()
        .find(|&s| span_s / s as f64 <= 6.0)
        // Weeks, or whatever keeps it to ~6 ticks: the span can come from a record time
        // nobody checked (an old store), and must never size the output.
        .unwrap_or_else(|| 604_800u64.max((span_s / 6.0).ceil().min(u64::MAX as f64) as u64));
    let step = step_s as f64 * 1000.0;
    let multi_day = span_s > 86_400.0;
    let mut out = Vec::new();
    let mut t = (ax.t0 / step).ceil() * step;
    while t <= ax.t1 {
        let s = rfc3339(t as u64);
        let label = if step_s >= 86_400 {
            s[5..10].to_string()
        } else if multi_day {
            if s[11..16] == *"00:00" {
                s[5..10].to_string()
            } else {
                format!("{} {}", &s[8..10], &s[11..16])
            }
        } else if step_s < 60 {
            s[11..19].to_string()
        } else {
            s[11..16].to_string()
        };
        out.push((t, label));
        t += step;
    }
    out
}

/// "2025-11-30 00:03:20" (UTC).
pub fn when(ms: u64) -> String {
    let s = rfc3339(ms);
    format!("{} {}", &s[..10], &s[11..19])
}

pub use crate::time::dur;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ticks_stay_few_over_an_absurd_span() {
        // One record at u64::MAX ms among normal ones (issue 19): ~6 ticks, not 10^12.
        let ax = TimeAxis::new(1.7e12, u64::MAX as f64);
        let t = time_ticks(&ax);
        assert!(!t.is_empty() && t.len() <= 8, "{}", t.len());
    }

    #[test]
    fn downsampling_keeps_min_max_and_bounds_the_bins() {
        let ax = TimeAxis::new(0.0, 7.0 * 86_400_000.0);
        let n = 7 * 1440;
        let spans = Spans {
            spans: (0..n)
                .map(|i| (i as f64 * 60_000.0, (i + 1) as f64 * 60_000.0))
                .collect(),
            step: 60_000.0,
        };
        let v: Vec<f64> = (0..n).map(|i| if i == 5000 { 99.0 } else { 1.0 }).collect();
        let bins = downsample(&spans, &v, &ax);
        assert!(bins.len() <= ax.buckets());
        assert!(bins.iter().any(|b| b.max == 99.0));
        assert_eq!(segments(&bins, spans.step).len(), 1);
    }

    #[test]
    fn ticks_and_formats() {
        let ax = TimeAxis::new(1_764_460_800_000.0, 1_764_460_800_000.0 + 600_000.0);
        let t = time_ticks(&ax);
        assert!(t.len() >= 4 && t.len() <= 7, "{t:?}");
        assert_eq!(t[0].1, "00:00");
        assert_eq!(dur(150.0), "2 min 30 s");
        assert_eq!(n1(2.0), "2");
        assert_eq!(n1(2.25), "2.3");
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
        assert_eq!(nice_step(125.0, 4), 50.0);
    }
}
