//! The context of each death of a restarting command: what the host and its connections did
//! in the time before it, against the host's usual rates.

use nasprobe_proto::Event;

use crate::input::HostData;
use crate::report::DeathContext;
use crate::series::{self, HostSeries};
use crate::stats::{mean, pick};
use crate::time::rfc3339;
use crate::verdict::walls::SWAP_WALL_PAGES_PS;
use crate::vocab::round2;

/// One death of a restarting command, as much of its exit as the pattern needs.
pub(crate) struct Exit {
    pub pid: u32,
    pub lifetime_ms: u64,
    pub comm: String,
    pub cmdline: String,
}

/// What most deaths share in the time before them, compared with the host's usual rates.
///
/// `status_known`: the exits say how they ended, so when nothing else shows the suspects are not
/// guessed at.
pub(crate) fn before_deaths(
    s: &HostSeries,
    earlier: &[(u64, u64)],
    ctx: &[DeathContext],
    status_known: bool,
) -> Vec<String> {
    if ctx.is_empty() {
        return Vec::new();
    }
    // The usual rate of TCP retransmits: over the earlier part of each dead process's life
    // (before its context window); without any, the quieter half of the host's window.
    let (mut n, mut secs) = (0.0, 0.0);
    let inside = covered(&s.points, earlier);
    for ((x, p), inside) in s.tcp.retrans.iter().zip(&s.points).zip(inside) {
        if x.is_finite() && inside {
            n += x;
            secs += p.interval_ms / 1000.0;
        }
    }
    let retrans_usual = if secs >= 1.0 {
        n / secs
    } else {
        let sm = series::smooth(s);
        let rates: Vec<f64> = sm
            .tcp
            .retrans
            .iter()
            .zip(&sm.points)
            .map(|(x, p)| x / (p.interval_ms / 1000.0).max(1e-3))
            .collect();
        crate::stats::percentile(&rates, 0.25).unwrap_or(0.0)
    };
    let most = |n: usize| n * 3 >= ctx.len() * 2;
    let per_s = |x: f64, d: &DeathContext| x / d.window_s.max(1.0);
    let mut out = Vec::new();
    let burst = |d: &DeathContext| per_s(d.tcp_retransmits, d) >= (3.0 * retrans_usual).max(1.0);
    let n_burst = ctx.iter().filter(|d| burst(d)).count();
    let n_timeouts = ctx.iter().filter(|d| d.tcp_timeouts > 0.0).count();
    let n_resets = ctx.iter().filter(|d| d.tcp_resets > 0.0).count();
    if most(n_burst) || most(n_timeouts) || most(n_resets) {
        let rate = mean(
            &ctx.iter()
                .map(|d| per_s(d.tcp_retransmits, d))
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        let mut what = vec![format!(
            "TCP retransmits at {rate:.1}/s (usually {retrans_usual:.1}/s)"
        )];
        if most(n_timeouts) {
            what.push("retransmission timeouts".into());
        }
        if most(n_resets) {
            what.push("connection resets".into());
        }
        out.push(format!(
            "before {} of {} deaths: {} — a network problem (a blip, a keepalive or a peer giving up)",
            n_burst.max(n_timeouts).max(n_resets),
            ctx.len(),
            what.join(", ")
        ));
    }
    let n_down = ctx.iter().filter(|d| d.link_down).count();
    if most(n_down) {
        out.push(format!(
            "before {n_down} of {} deaths the link went down",
            ctx.len()
        ));
    }
    let n_err = ctx
        .iter()
        .filter(|d| d.nic_errors > 0.0 || d.nic_drops > 0.0)
        .count();
    if most(n_err) {
        out.push(format!(
            "before {n_err} of {} deaths: NIC errors or drops",
            ctx.len()
        ));
    }
    let n_swap = ctx
        .iter()
        .filter(|d| per_s(d.swap_pages, d) >= SWAP_WALL_PAGES_PS)
        .count();
    if most(n_swap) {
        out.push(format!(
            "before {n_swap} of {} deaths the host was swapping (memory pressure)",
            ctx.len()
        ));
    }
    if out.is_empty() && status_known {
        out.push("no network, link, NIC or memory trouble before the deaths".into());
    } else if out.is_empty() {
        out.push(
            "no network, link, NIC or memory trouble before the deaths: suspect a watchdog, a \
             timeout of the application or the program itself"
                .into(),
        );
    }
    out
}

/// Per point of `s`: whether its time is inside one of the spans `(a, b]`. Points in time order
/// (as samples are stored) are marked span by span, bisected; else each is checked against all.
pub(crate) fn covered(p: &[series::Point], spans: &[(u64, u64)]) -> Vec<bool> {
    if !p.is_sorted_by_key(|p| p.time_ms) {
        return p
            .iter()
            .map(|p| spans.iter().any(|&(a, b)| p.time_ms > a && p.time_ms <= b))
            .collect();
    }
    // +1 where a span's points begin, -1 after they end.
    let mut depth = vec![0i64; p.len() + 1];
    for &(a, b) in spans {
        let from = p.partition_point(|p| p.time_ms <= a);
        let to = p.partition_point(|p| p.time_ms <= b);
        if from < to {
            depth[from] += 1;
            depth[to] -= 1;
        }
    }
    let mut d = 0;
    depth[..p.len()]
        .iter()
        .map(|x| {
            d += x;
            d > 0
        })
        .collect()
}

/// The span of a death's context, ms: the minute before it, or the second half of the
/// process's life when that is shorter (the first half then gives the usual rates), at least 2 s.
pub(crate) fn death_span_ms(lifetime_ms: u64) -> u64 {
    (lifetime_ms / 2).clamp(DEATH_CONTEXT_MIN_MS, DEATH_CONTEXT_MAX_MS)
}

/// Read before a death's context window from raw samples: the first sample's interval starts
/// before its end time.
pub(crate) const DETAIL_MARGIN_MS: u64 = 10_000;

/// Bounds of a death's context.
const DEATH_CONTEXT_MAX_MS: u64 = 60_000;

const DEATH_CONTEXT_MIN_MS: u64 = 2_000;

pub(crate) fn death_context(
    h: &HostData,
    s: &HostSeries,
    t: u64,
    x: &Exit,
    d: &crate::exits::Death,
    points_sorted: bool,
) -> DeathContext {
    let span = death_span_ms(x.lifetime_ms);
    let from = t.saturating_sub(span);
    let inside = |i: &usize| s.points[*i].time_ms >= from && s.points[*i].time_ms <= t;
    // Points in time order (as samples are stored): bisect, else look at each.
    let idx: Vec<usize> = if points_sorted {
        let a = s.points.partition_point(|p| p.time_ms < from);
        let b = s.points.partition_point(|p| p.time_ms <= t);
        (a..b.max(a)).collect()
    } else {
        (0..s.points.len()).filter(inside).collect()
    };
    let sum = |v: &[f64]| -> f64 { pick(v, &idx).iter().filter(|x| x.is_finite()).sum() };
    let secs: Vec<f64> = idx
        .iter()
        .map(|&i| s.points[i].interval_ms / 1000.0)
        .collect();
    let rate_sum = |v: &[f64]| -> f64 {
        idx.iter()
            .zip(&secs)
            .filter_map(|(&i, dt)| v.get(i).filter(|x| x.is_finite()).map(|x| x * dt))
            .sum()
    };
    let nic_errors: f64 = s.nics.values().map(|n| rate_sum(&n.errors_ps)).sum();
    let nic_drops: f64 = s.nics.values().map(|n| rate_sum(&n.drops_ps)).sum();
    let link_down = h
        .events_between(from, t)
        .iter()
        .filter(|e| !e.is_measurement())
        .any(|e| matches!(e.event(), Event::LinkChange(l) if !l.up));
    let comm = x.comm.as_str();
    let process_cpu_cores = s
        .procs
        .get(comm)
        .and_then(|p| mean(&pick(&p.cores, &idx)))
        .map(round2);
    DeathContext {
        at: rfc3339(t),
        pid: x.pid,
        lifetime_s: round2(x.lifetime_ms as f64 / 1000.0),
        cmdline: x.cmdline.clone(),
        ended: crate::exits::end_text(d.status, x.lifetime_ms),
        cause: crate::exits::death_cause(d).name(),
        window_s: round2(span as f64 / 1000.0),
        tcp_retransmits: sum(&s.tcp.retrans),
        tcp_resets: sum(&s.tcp.resets),
        tcp_timeouts: sum(&s.tcp.timeouts),
        nic_errors: round2(nic_errors),
        nic_drops: round2(nic_drops),
        link_down,
        swap_pages: round2(rate_sum(&s.mem.swap_in_ps) + rate_sum(&s.mem.swap_out_ps)),
        process_cpu_cores,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marking spans point by point over time-ordered points agrees with checking each point
    /// against every span (and unordered points are checked that way).
    #[test]
    fn covered_points_agree_with_checking_each() {
        let mut x = 12345u64;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for _ in 0..200 {
            let mut points: Vec<series::Point> = (0..next(40))
                .map(|_| series::Point {
                    time_ms: next(100),
                    interval_ms: 1.0,
                })
                .collect();
            let spans: Vec<(u64, u64)> = (0..next(6)).map(|_| (next(100), next(100))).collect();
            let each = |p: &[series::Point]| -> Vec<bool> {
                p.iter()
                    .map(|p| spans.iter().any(|&(a, b)| p.time_ms > a && p.time_ms <= b))
                    .collect()
            };
            assert_eq!(covered(&points, &spans), each(&points));
            points.sort_by_key(|p| p.time_ms);
            assert_eq!(covered(&points, &spans), each(&points), "{spans:?}");
        }
    }
}
