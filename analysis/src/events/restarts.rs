//! Restart patterns: a command that died and came back more than once, how often, how it
//! ended and what its deaths had before them.

use std::collections::BTreeMap;

use nasprobe_proto::Event;

use super::deaths::{DETAIL_MARGIN_MS, Exit, before_deaths, death_context, death_span_ms};
use super::groups::keep_ends;
use crate::input::{Detail, HostData};
use crate::report::{DeathContext, Pattern};
use crate::series::{self, HostSeries};
use crate::stats::median;
use crate::vocab::round2;

/// A command's shape: numbers replaced by `N`, so restarts with new tokens group together.
pub(crate) fn command_shape(cmd: &str) -> String {
    let mut out = String::with_capacity(cmd.len());
    let mut in_num = false;
    for ch in cmd.chars() {
        if ch.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(ch);
        }
    }
    out
}

/// The identity of a restarting command: its process name and the first two words of its
/// command shape (`btrfs send`), so that a resume with extra arguments (`-k TOKEN`) is the same
/// command as the first run without them.
pub(crate) fn restart_key(comm: &str, cmdline: &str) -> (String, String) {
    let shape = command_shape(cmdline);
    let head: Vec<&str> = shape.split_whitespace().take(2).collect();
    (comm.to_string(), head.join(" "))
}

/// A start within this long before a death still counts as its restart (the new instance can
/// be up before the old one is reaped; both land in the same scan).
pub(crate) const RESTART_EARLY_MS: u64 = 2_000;

pub(crate) fn restart_patterns(
    hosts: &[HostData],
    at: usize,
    s: &HostSeries,
    long: bool,
    detail: Option<&Detail<'_>>,
) -> Vec<Pattern> {
    let h = &hosts[at];
    type Deaths = Vec<(u64, Exit, Option<nasprobe_proto::ExitStatus>)>;
    let mut groups: BTreeMap<(String, String), Deaths> = BTreeMap::new();
    let mut starts: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for e in h.events.iter().filter(|e| !e.is_measurement()) {
        let ev = e.event();
        if let Some((x, st)) = ev.as_exit() {
            let exit = Exit {
                pid: x.process.pid,
                lifetime_ms: x.lifetime_ms,
                comm: x.process.comm.to_string(),
                cmdline: x.process.cmdline.to_string(),
            };
            groups
                .entry(restart_key(&exit.comm, &exit.cmdline))
                .or_default()
                .push((crate::exits::exit_time(e.time_ms, st), exit, st.copied()));
            continue;
        }
        if let Event::ProcessStart(p) = &ev {
            starts
                .entry(restart_key(p.comm.as_str(), p.cmdline.as_str()))
                .or_default()
                .push(e.time_ms);
        }
    }
    let points_sorted = s.points.is_sorted_by_key(|p| p.time_ms);
    let mut out = Vec::new();
    for (key, deaths) in groups {
        let comm = key.0.clone();
        // The command as last seen, its changing numbers as `N`.
        let shape = command_shape(deaths.last().map_or("", |d| d.1.cmdline.as_str()));
        // A restart: a death followed by a start of the same command before the next death.
        // The starts are in time order (the events are): the first one late enough, bisected.
        let st = starts.get(&key).map(Vec::as_slice).unwrap_or_default();
        let restarts = deaths
            .iter()
            .enumerate()
            .filter(|(k, (t, _, _))| {
                let until = deaths.get(k + 1).map_or(u64::MAX, |d| d.0);
                let i = st.partition_point(|&x| x + RESTART_EARLY_MS < *t);
                st.get(i).is_some_and(|&x| x < until.max(*t + 1))
            })
            .count();
        // A pattern is a command that died and came back more than once; a single death
        // is in the events already.
        if deaths.len() < 2 || restarts == 0 {
            continue;
        }
        let times: Vec<f64> = deaths.iter().map(|d| d.0 as f64).collect();
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) / 1000.0).collect();
        let every_s = median(&gaps).map(round2);
        let distinct_args = deaths
            .iter()
            .map(|d| d.1.cmdline.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let new_args = distinct_args > 1;
        let ends: Vec<crate::exits::Death> = deaths
            .iter()
            .map(|(t, x, st)| crate::exits::Death {
                time_ms: *t,
                lifetime_ms: x.lifetime_ms,
                status: st.as_ref(),
                network: crate::conns::trouble_before(h, x.pid, *t),
                peer: crate::conns::peer_end(hosts, at, x.pid, *t),
            })
            .collect();
        let mut ctx: Vec<DeathContext> = deaths
            .iter()
            .zip(&ends)
            .map(|((t, x, _), d)| death_context(h, s, *t, x, d, points_sorted))
            .collect();
        let every_txt = every_s
            .map(|e| {
                if e >= 120.0 {
                    format!(", every ~{:.0} min", e / 60.0)
                } else {
                    format!(", every ~{e:.0} s")
                }
            })
            .unwrap_or_default();
        // Per death: the rest of its life before its context window, for the usual rates.
        let earlier: Vec<(u64, u64)> = deaths
            .iter()
            .map(|(t, x, _)| {
                let ctx_from = t.saturating_sub(death_span_ms(x.lifetime_ms));
                (t.saturating_sub(x.lifetime_ms), ctx_from)
            })
            .collect();
        let (cause, cause_evidence) = crate::exits::pattern_cause(&ends);
        let known = cause != crate::exits::Cause::Unknown;
        let before_deaths = before_deaths(s, &earlier, &ctx, known);
        let how = match cause_evidence.first() {
            Some(e) if known => format!("; {e}"),
            _ => String::new(),
        };
        let summary = format!(
            "{}: `{}` died {} times and came back {} times{}{}; {}{how}",
            h.name,
            shape,
            deaths.len(),
            restarts,
            every_txt,
            if new_args {
                ", resuming with new arguments each time (a resume token?)"
            } else {
                ""
            },
            before_deaths.join("; ")
        );
        let deaths_total = ctx.len();
        if long {
            // The deaths listed get their context from raw samples where those are kept.
            let mut keep: Vec<usize> = (0..ctx.len()).collect();
            keep_ends(&mut keep);
            ctx = keep
                .into_iter()
                .map(|i| {
                    let (t, x, _) = &deaths[i];
                    detail
                        .and_then(|f| {
                            let span = death_span_ms(x.lifetime_ms);
                            let raw = f(at, t.saturating_sub(span + DETAIL_MARGIN_MS), *t)?;
                            let rs = series::build(&raw);
                            let sorted = rs.points.is_sorted_by_key(|p| p.time_ms);
                            (!rs.points.is_empty())
                                .then(|| death_context(&raw, &rs, *t, x, &ends[i], sorted))
                        })
                        .unwrap_or_else(|| ctx[i].clone())
                })
                .collect();
        }
        out.push(Pattern {
            host: h.name.clone(),
            process: comm,
            command: shape,
            restarts,
            every_s,
            new_arguments_each_time: new_args,
            summary,
            before_deaths,
            cause: cause.name(),
            cause_evidence,
            deaths: ctx,
            deaths_total,
        });
    }
    out
}
