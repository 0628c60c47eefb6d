//! Small statistics over series: median, mean, percentiles and the best sustained window.

/// Median of the finite values; None when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 0.5)
}

/// Nearest-rank-interpolated percentile `p` (0..=1) of the finite values.
pub(crate) fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = p.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(v[lo] + (v[hi] - v[lo]) * (pos - lo as f64))
}

pub fn mean(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }
}

pub fn max(values: &[f64]) -> Option<f64> {
    values
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .max_by(|a, b| a.total_cmp(b))
}

/// The best time-weighted mean over any window of `span_ms` (the "peak (best 10 s)").
/// `points` are (end time ms, interval ms, value), in time order. A series shorter than the
/// span gives its overall mean.
pub(crate) fn best_window(points: &[(u64, f64, f64)], span_ms: f64) -> Option<f64> {
    let pts: Vec<&(u64, f64, f64)> = points.iter().filter(|p| p.2.is_finite()).collect();
    if pts.is_empty() {
        return None;
    }
    let mut best: Option<f64> = None;
    let mut start = 0usize;
    let mut weighted = 0.0;
    let mut dur = 0.0;
    for end in 0..pts.len() {
        weighted += pts[end].2 * pts[end].1;
        dur += pts[end].1;
        while start < end && dur - pts[start].1 >= span_ms {
            weighted -= pts[start].2 * pts[start].1;
            dur -= pts[start].1;
            start += 1;
        }
        if dur >= span_ms * 0.999 && dur > 0.0 {
            let m = weighted / dur;
            best = Some(best.map_or(m, |b: f64| b.max(m)));
        }
    }
    best.or_else(|| {
        let total: f64 = pts.iter().map(|p| p.1).sum();
        (total > 0.0).then(|| pts.iter().map(|p| p.2 * p.1).sum::<f64>() / total)
    })
}

/// The values of `v` at the points `idx` (those past its end left out).
pub(crate) fn pick(v: &[f64], idx: &[usize]) -> Vec<f64> {
    idx.iter().filter_map(|&i| v.get(i).copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(percentile(&[0.0, 10.0], 0.9), Some(9.0));
    }

    #[test]
    fn best_window_finds_the_early_peak() {
        // 10 s at 62 then 50 s at 40: the best 10 s is the early 62, the median 40.
        let mut pts = Vec::new();
        for i in 0..60u64 {
            pts.push((i * 1000, 1000.0, if i < 10 { 62.0 } else { 40.0 }));
        }
        assert!((best_window(&pts, 10_000.0).unwrap() - 62.0).abs() < 1e-9);
        let vals: Vec<f64> = pts.iter().map(|p| p.2).collect();
        assert_eq!(median(&vals), Some(40.0));
        // Shorter than the span: the mean.
        assert_eq!(best_window(&pts[..2], 10_000.0), Some(62.0));
    }
}
