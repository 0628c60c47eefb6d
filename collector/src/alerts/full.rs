//! full: a `--mount` will be full before the transfer ends (the rule, its memory of each
//! mount's landing rate).

use std::collections::HashMap;

use super::config::{AlertConfig, Rule};
use super::rules::{Cond, Obs, clock, mins};

super::rules::condition!(Full, Rule::Full);

/// full: a `--mount` will be full before the transfer ends. The landing rate is the growth of
/// its used bytes over the last `full.over`; the transfer's end is when `--expect SIZE` has
/// landed (counted from when this run first saw the mount), or, without it, `full.within`
/// from now. Resolved when the projection no longer says so.
#[derive(Debug, Default)]
pub(crate) struct Full {
    mounts: HashMap<String, MountTrack>,
}

#[derive(Debug, Default)]
struct MountTrack {
    /// (time, used) of the first sample seen, and of the recent ones (the oldest within `over`).
    first: Option<(u64, u64)>,
    recent: std::collections::VecDeque<(u64, u64)>,
}

/// The landing rate needs this much history before it projects anything.
const FULL_MIN_SPAN_MS: u64 = 5_000;

impl Full {
    pub(crate) fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond> {
        let over = c.set.full_over.as_millis() as u64;
        let within = c.set.full_within.as_secs_f64();
        let mut out = Vec::new();
        for m in &o.mounts {
            let key = format!("{}:{}", m.host, m.path);
            let t = self.mounts.entry(key.clone()).or_default();
            t.first.get_or_insert((m.time_ms, m.used_bytes));
            if t.recent.back().is_none_or(|b| b.0 < m.time_ms) {
                t.recent.push_back((m.time_ms, m.used_bytes));
            }
            while t.recent.len() > 2 && t.recent[1].0 + over <= m.time_ms {
                t.recent.pop_front();
            }
            let mut cond = Cond {
                rule: Rule::Full,
                key: key.clone(),
                host: Some(m.host.clone()),
                active: false,
                summary: String::new(),
                evidence: Vec::new(),
                count: 1,
                since_ms: None,
                last_ms: None,
            };
            let (t0, u0) = t.recent[0];
            let span = m.time_ms.saturating_sub(t0);
            let rate = if span >= FULL_MIN_SPAN_MS {
                m.used_bytes.saturating_sub(u0) as f64 / (span as f64 / 1000.0)
            } else {
                0.0
            };
            let rate_text = format!("{:.1} MB/s", rate / 1e6);
            if rate <= 0.0 {
                cond.summary = format!(
                    "{} {}: nothing lands any more ({} free)",
                    m.host,
                    m.path,
                    gb(m.free_bytes)
                );
                out.push(cond);
                continue;
            }
            let full_s = m.free_bytes as f64 / rate;
            let landed = m
                .used_bytes
                .saturating_sub(t.first.map_or(m.used_bytes, |f| f.1));
            let (end_s, end_text) = match c.expect {
                Some(e) => {
                    let left = e.saturating_sub(landed) as f64 / rate;
                    (
                        left,
                        format!(
                            "the transfer ends in {} ({} of {} landed)",
                            eta(left),
                            gb(landed),
                            gb(e)
                        ),
                    )
                }
                None => (within, format!("full.within is {}", eta(within))),
            };
            cond.evidence = vec![
                format!(
                    "{} free, {} landed since {}, landing at {rate_text} over the last {}",
                    gb(m.free_bytes),
                    gb(landed),
                    clock(t.first.map_or(m.time_ms, |f| f.0)),
                    mins(span)
                ),
                format!("full in {}; {end_text}", eta(full_s)),
            ];
            if full_s < end_s {
                cond.active = true;
                cond.summary = format!(
                    "{} {}: full in {} at {rate_text}, before the transfer ends ({end_text})",
                    m.host,
                    m.path,
                    eta(full_s)
                );
            } else {
                cond.summary = format!(
                    "{} {}: no longer full before the end: full in {} at {rate_text}; {end_text}",
                    m.host,
                    m.path,
                    eta(full_s)
                );
            }
            out.push(cond);
        }
        out
    }
}

fn gb(b: u64) -> String {
    if b >= 1_000_000_000 {
        format!("{:.1} GB", b as f64 / 1e9)
    } else {
        format!("{:.0} MB", b as f64 / 1e6)
    }
}

fn eta(s: f64) -> String {
    nasprobe_analysis::time::dur(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::rules::MountObs;
    use crate::alerts::rules::tests::cfg;

    fn mount(ms: u64, used: u64, free: u64) -> Obs {
        Obs {
            now_ms: ms,
            mounts: vec![MountObs {
                host: "dst".into(),
                path: "/srv".into(),
                time_ms: ms,
                used_bytes: used,
                free_bytes: free,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn full_when_the_free_space_ends_before_the_transfer() {
        let mut c = cfg(&["full.over=20s"]);
        c.expect = Some(1_000_000_000);
        let mut f = Full::default();
        // 10 MB/s landing, 300 MB free: full in 30 s, the 1 GB transfer needs 100 s.
        let mut fired = None;
        for s in 0..10u64 {
            let v = f.eval(
                &c,
                &mount(s * 1000, s * 10_000_000, 300_000_000 - s * 10_000_000),
            );
            if v[0].active && fired.is_none() {
                fired = Some(s);
                assert!(
                    v[0].summary.contains("before the transfer ends"),
                    "{}",
                    v[0].summary
                );
                assert!(
                    v[0].evidence[1].contains("the transfer ends in"),
                    "{:?}",
                    v[0].evidence
                );
            }
        }
        assert_eq!(fired, Some(5), "once 5 s of history give a rate");
        // With room for all of it: nothing.
        let mut f = Full::default();
        for s in 0..10u64 {
            assert!(!f.eval(&c, &mount(s * 1000, s * 10_000_000, 50_000_000_000))[0].active);
        }
    }
}
