//! Restart patterns: a command that died and came back more than once, how often, how it
//! ended and what its deaths had before them.

use std::collections::BTreeMap;

use nasprobe_proto::{Event, ExitStatus};

use super::deaths::{DETAIL_MARGIN_MS, Exit, before_deaths, death_context, death_span_ms};
use super::groups::keep_ends;
use super::routine::{FlowCtx, Life, is_routine, resume_token, routine_lines};
use crate::input::{Detail, HostData};
use crate::report::{DeathContext, Pattern, RoutineExits};
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

/// What [`restart_key`] gives: a process name and the head of its command's shape.
type RestartKey = (String, String);

/// One death of a command, at the time it ended.
struct Died {
    time_ms: u64,
    exit: Exit,
    status: Option<ExitStatus>,
}

/// A host's deaths and starts, per command ([`restart_key`]), each in time order.
#[derive(Default)]
struct Lives {
    deaths: BTreeMap<RestartKey, Vec<Died>>,
    starts: BTreeMap<RestartKey, Vec<u64>>,
}

fn lives(h: &HostData) -> Lives {
    let mut out = Lives::default();
    for e in h.events.iter().filter(|e| !e.is_measurement()) {
        let ev = e.event();
        if let Some((x, st)) = ev.as_exit() {
            let exit = Exit {
                pid: x.process.pid,
                lifetime_ms: x.lifetime_ms,
                comm: x.process.comm.to_string(),
                cmdline: x.process.cmdline.to_string(),
            };
            out.deaths
                .entry(restart_key(&exit.comm, &exit.cmdline))
                .or_default()
                .push(Died {
                    time_ms: crate::exits::exit_time(e.time_ms, st),
                    exit,
                    status: st.copied(),
                });
            continue;
        }
        if let Event::ProcessStart(p) = &ev {
            out.starts
                .entry(restart_key(p.comm.as_str(), p.cmdline.as_str()))
                .or_default()
                .push(e.time_ms);
        }
    }
    out
}

/// The restart patterns of host `hosts[at]` (series `s`); over a long window each lists only
/// its first and last deaths, their context from `detail`'s raw samples where it has them.
/// The routine ones ([`is_routine`]) come apart, one line per process.
pub(crate) fn restart_patterns(
    hosts: &[HostData],
    at: usize,
    s: &HostSeries,
    long: bool,
    detail: Option<&Detail<'_>>,
    flow: &FlowCtx<'_>,
) -> (Vec<Pattern>, Vec<RoutineExits>) {
    let Lives { deaths, starts } = lives(&hosts[at]);
    let host = Host {
        hosts,
        at,
        s,
        points_sorted: s.points.is_sorted_by_key(|p| p.time_ms),
    };
    let mut out = Vec::new();
    let mut routine = Vec::new();
    for (key, deaths) in deaths {
        let st = starts.get(&key).map(Vec::as_slice).unwrap_or_default();
        let restarts = restarts(&deaths, st);
        // A pattern is a command that died and came back more than once; a single death
        // is in the events already.
        if deaths.len() < 2 || restarts == 0 {
            continue;
        }
        let ends = host.ends(&deaths);
        let mut p = host.pattern(key.0, &deaths, &ends, restarts);
        let lives: Vec<Life> = deaths
            .iter()
            .map(|d| Life {
                pid: d.exit.pid,
                time_ms: d.time_ms,
                lifetime_ms: d.exit.lifetime_ms,
            })
            .collect();
        if is_routine(&hosts[at], s, &lives, &ends, flow) {
            let codes = deaths
                .iter()
                .map(|d| d.status.and_then(|s| s.code))
                .collect();
            routine.push((p, codes));
            continue;
        }
        if long {
            p.deaths = host.listed(&deaths, &ends, &p.deaths, detail);
        }
        out.push(p);
    }
    (out, routine_lines(routine))
}

/// How many of the deaths were restarts: followed by a start of the same command before the
/// next death. The starts are in time order (the events are): the first one late enough,
/// bisected.
fn restarts(deaths: &[Died], starts: &[u64]) -> usize {
    deaths
        .iter()
        .enumerate()
        .filter(|(k, d)| {
            let t = d.time_ms;
            let until = deaths.get(k + 1).map_or(u64::MAX, |d| d.time_ms);
            let i = starts.partition_point(|&x| x + RESTART_EARLY_MS < t);
            starts.get(i).is_some_and(|&x| x < until.max(t + 1))
        })
        .count()
}

/// The host whose patterns are built, with its series.
struct Host<'a> {
    hosts: &'a [HostData],
    at: usize,
    s: &'a HostSeries,
    /// The series' points are in time order (as samples are stored).
    points_sorted: bool,
}

impl Host<'_> {
    /// How each death ended, with its connections' trouble and its peer's end.
    fn ends<'d>(&self, deaths: &'d [Died]) -> Vec<crate::exits::Death<'d>> {
        let h = &self.hosts[self.at];
        deaths
            .iter()
            .map(|d| crate::exits::Death {
                time_ms: d.time_ms,
                lifetime_ms: d.exit.lifetime_ms,
                status: d.status.as_ref(),
                network: crate::conns::trouble_before(h, d.exit.pid, d.time_ms),
                peer: crate::conns::peer_end(self.hosts, self.at, d.exit.pid, d.time_ms),
            })
            .collect()
    }

    /// The pattern of command `comm` that died as `deaths` (ended as `ends`) and came back
    /// `restarts` times, with every death's context.
    fn pattern(
        &self,
        comm: String,
        deaths: &[Died],
        ends: &[crate::exits::Death<'_>],
        restarts: usize,
    ) -> Pattern {
        let (h, s) = (&self.hosts[self.at], self.s);
        // The command as last seen, its changing numbers as `N`.
        let shape = command_shape(deaths.last().map_or("", |d| d.exit.cmdline.as_str()));
        let times: Vec<f64> = deaths.iter().map(|d| d.time_ms as f64).collect();
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) / 1000.0).collect();
        let every_s = median(&gaps).map(round2);
        let distinct_args = deaths
            .iter()
            .map(|d| d.exit.cmdline.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let new_args = distinct_args > 1;
        let cmdlines: Vec<&str> = deaths.iter().map(|d| d.exit.cmdline.as_str()).collect();
        let token = new_args && resume_token(&cmdlines);
        let ctx: Vec<DeathContext> = deaths
            .iter()
            .zip(ends)
            .map(|(x, d)| death_context(h, s, x.time_ms, &x.exit, d, self.points_sorted))
            .collect();
        // Per death: the rest of its life before its context window, for the usual rates.
        let earlier: Vec<(u64, u64)> = deaths
            .iter()
            .map(|d| {
                let t = d.time_ms;
                let ctx_from = t.saturating_sub(death_span_ms(d.exit.lifetime_ms));
                (t.saturating_sub(d.exit.lifetime_ms), ctx_from)
            })
            .collect();
        let (cause, cause_evidence) = crate::exits::pattern_cause(ends);
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
            every_text(every_s),
            match (new_args, token) {
                (_, true) => ", resuming with new arguments each time (a resume token?)",
                (true, false) => ", with new arguments each time",
                (false, _) => "",
            },
            before_deaths.join("; ")
        );
        Pattern {
            host: h.name.clone(),
            process: comm,
            command: shape,
            restarts,
            every_s,
            new_arguments_each_time: new_args,
            resume_token: token,
            summary,
            before_deaths,
            cause: cause.name(),
            cause_evidence,
            deaths_total: ctx.len(),
            deaths: ctx,
        }
    }

    /// Over a long window, the deaths listed (the first and last few of `ctx`): their context
    /// from raw samples where `detail` still has them, else as the steps gave it.
    fn listed(
        &self,
        deaths: &[Died],
        ends: &[crate::exits::Death<'_>],
        ctx: &[DeathContext],
        detail: Option<&Detail<'_>>,
    ) -> Vec<DeathContext> {
        let mut keep: Vec<usize> = (0..ctx.len()).collect();
        keep_ends(&mut keep);
        keep.into_iter()
            .map(|i| {
                let Died {
                    time_ms: t,
                    exit: x,
                    ..
                } = &deaths[i];
                detail
                    .and_then(|f| {
                        let span = death_span_ms(x.lifetime_ms);
                        let raw = f(self.at, t.saturating_sub(span + DETAIL_MARGIN_MS), *t)?;
                        let rs = series::build(&raw);
                        let sorted = rs.points.is_sorted_by_key(|p| p.time_ms);
                        (!rs.points.is_empty())
                            .then(|| death_context(&raw, &rs, *t, x, &ends[i], sorted))
                    })
                    .unwrap_or_else(|| ctx[i].clone())
            })
            .collect()
    }
}

/// ", every ~6 s" or ", every ~20 min" of a pattern (nothing with a single gap unknown).
fn every_text(every_s: Option<f64>) -> String {
    every_s
        .map(|e| {
            if e >= 120.0 {
                format!(", every ~{:.0} min", e / 60.0)
            } else {
                format!(", every ~{e:.0} s")
            }
        })
        .unwrap_or_default()
}
