//! The pipeline from a window of stored records to the [`Report`], stage by stage: events in
//! time order, the series (raw and smoothed), the flow and its active period, each host's
//! summary and candidates, the flow's own connections, the verdict, then the window, events,
//! restart patterns, gaps, progress and the transfers' files.

use std::borrow::Cow;

use crate::events::{events_and_groups, restarts::restart_patterns};
use crate::input::HostData;
use crate::report::{
    Bottleneck, GapOut, HostSummary, Progress, Report, Window, undecodable_reason,
};
use crate::series::{self, HostSeries, active_indices};
use crate::stats::{median, pick};
use crate::summary::summarize;
use crate::time::rfc3339;
use crate::verdict;
use crate::vocab::{Candidate, Flow, MB, round2};

pub use crate::input::Detail;

/// What the report is asked for: its window, the size expected, and whether the samples are
/// rollups.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Window asked for, ms since the epoch (None: what the data spans).
    pub from_ms: Option<u64>,
    pub to_ms: Option<u64>,
    /// `--expect SIZE`: total bytes the transfer should land, for an ETA.
    pub expect_bytes: Option<u64>,
    /// The samples are rollups of this step, ms (a long window; None: raw samples).
    pub step_ms: Option<u64>,
}

/// Everything the analysis builds from one window, built once: the JSON and text renderings
/// print its `report`, the HTML one draws its series and candidates as well (none of them
/// rebuilds series, smoothing, flow or verdict).
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Per host (in the order of the input), the series of every sample, each decoded once.
    pub raw: Vec<HostSeries>,
    /// The same merged into buckets of a few seconds (`series::smooth`): what is judged.
    pub smoothed: Vec<HostSeries>,
    /// The transfer's active period, when there is one.
    pub active: Option<(u64, u64)>,
    /// Per host, the candidates the verdict weighed.
    pub candidates: Vec<Vec<Candidate>>,
    pub report: Report,
}

/// The report of `hosts` (see [`analyze`]).
pub fn build(hosts: &[HostData], opts: &Options) -> Report {
    analyze(hosts, opts).report
}

/// Builds the series, the flow, the verdict and the report of `hosts` over the window.
pub fn analyze(hosts: &[HostData], opts: &Options) -> Analysis {
    analyze_with_detail(hosts, opts, None)
}

/// [`analyze`] over rollups (`Options::step_ms`) with a way to read raw samples back: each
/// listed death's context (the minute before it) is taken from the raw samples of that time
/// when `detail` has them, not from the steps.
pub fn analyze_with_detail(
    hosts: &[HostData],
    opts: &Options,
    detail: Option<&Detail<'_>>,
) -> Analysis {
    analyze_led_by(hosts, opts, detail, None)
}

/// [`analyze_with_detail`] whose top-level verdict (`bottleneck`, `flow`, the hosts' figures)
/// is that of copy number `lead` (`report --copy N`; None or a number not in the window: the
/// newest copy's). Without a copy in the window it is the whole window's.
pub fn analyze_led_by(
    hosts: &[HostData],
    opts: &Options,
    detail: Option<&Detail<'_>>,
    lead: Option<usize>,
) -> Analysis {
    let hosts = events_in_time_order(hosts);
    let hosts = &hosts[..];
    // Judged on the smoothed series (rates over a few seconds, see `series::smooth`); the raw
    // one gives the sample counts and each death's context.
    let Judgement {
        raw,
        series,
        mut per_host,
        mut judged,
    } = judge_window(hosts);
    let (from, to) = window(hosts, opts);
    let led = copies(hosts, &raw, opts, lead);
    if let Some(l) = led.lead {
        lead_the_report(&mut per_host, &mut judged, l);
    }
    if !led.copies.is_empty() {
        judged.carriers = led.carriers;
    }
    let long = opts.step_ms.is_some();
    let (events, event_groups) = events_and_groups(hosts, long);
    let flow_ctx = crate::events::routine::FlowCtx {
        active: judged.active,
        carriers: &judged.carriers,
    };
    let (mut patterns, mut routine_exits) = (Vec::new(), Vec::new());
    for (k, s) in raw.iter().enumerate() {
        let (p, r) = restart_patterns(hosts, k, s, long, detail, &flow_ctx);
        patterns.extend(p);
        routine_exits.extend(r);
    }
    let progress = raw
        .iter()
        .flat_map(|s| progress(s, opts.expect_bytes))
        .collect();
    let (transfers, stalls) = crate::transfers::build(hosts, &raw, from, to, &judged.carriers);
    let (refusals, gaps): (Vec<GapOut>, Vec<GapOut>) = gaps(hosts, &raw)
        .into_iter()
        .partition(|g| crate::is_refusal(&g.reason));
    let report = Report {
        window: Window {
            from: rfc3339(from),
            to: rfc3339(to),
            seconds: to.saturating_sub(from) / 1000,
        },
        hosts: per_host.summaries,
        flow: judged.flow,
        bottleneck: judged.bottleneck,
        events,
        patterns,
        routine_exits,
        gaps,
        refusals,
        progress,
        transfers,
        stalls,
        event_groups,
        copies: led.copies,
        lead_copy: led.number,
    };
    Analysis {
        raw,
        smoothed: series,
        active: judged.active,
        candidates: per_host.candidates,
        report,
    }
}

/// One window's verdict from its samples alone: the series, each host's figures and
/// candidates, the flow and the wall.
struct Judgement {
    raw: Vec<HostSeries>,
    series: Vec<HostSeries>,
    per_host: PerHost,
    judged: Judged,
}

fn judge_window(hosts: &[HostData]) -> Judgement {
    let raw: Vec<HostSeries> = hosts.iter().map(series::build).collect();
    let series: Vec<HostSeries> = raw.iter().map(series::smooth).collect();
    let found = verdict::flow::find_flow(&series);
    let mut per_host = per_host(hosts, &raw, &series, found.active);
    let judged = judge(hosts, &series, &mut per_host, found);
    Judgement {
        raw,
        series,
        per_host,
        judged,
    }
}

/// The copies of the window, each judged on its own samples, and the one that leads.
struct Copies {
    copies: Vec<crate::report::CopyOut>,
    /// The leading copy's judgement (number `lead`, else the newest).
    lead: Option<Judgement>,
    number: Option<usize>,
    /// The processes (host, pid) that carried any of them.
    carriers: Vec<(String, u32)>,
}

fn copies(hosts: &[HostData], raw: &[HostSeries], opts: &Options, lead: Option<usize>) -> Copies {
    let spans = crate::copies::spans(raw);
    let n = spans.len();
    let lead = lead.filter(|l| (1..=n).contains(l)).unwrap_or(n);
    let mut out = Copies {
        copies: Vec::with_capacity(n),
        lead: None,
        number: (n > 0).then_some(lead),
        carriers: Vec::new(),
    };
    for (k, span) in spans.into_iter().enumerate() {
        let j = judge_window(&crate::copies::slice(hosts, span));
        let jd = &j.judged;
        let mut c = crate::copies::out(
            k + 1,
            span,
            opts.from_ms,
            &j.raw,
            jd.flow.as_ref(),
            &jd.bottleneck,
            &jd.carriers,
        );
        c.wall = crate::text::wall_words(&c.bottleneck, c.flow.as_ref());
        out.carriers.extend(j.judged.carriers.iter().cloned());
        out.copies.push(c);
        if k + 1 == lead {
            out.lead = Some(j);
        }
    }
    out.carriers.sort();
    out.carriers.dedup();
    out
}

/// The report's verdict and hosts' figures become the leading copy's; each host keeps the
/// window's sample count and clock.
fn lead_the_report(per_host: &mut PerHost, judged: &mut Judged, lead: Judgement) {
    let Judgement {
        raw,
        per_host: l,
        judged: lj,
        ..
    } = lead;
    for ((sum, lsum), r) in per_host.summaries.iter_mut().zip(l.summaries).zip(&raw) {
        if r.points.is_empty() {
            continue;
        }
        *sum = crate::report::HostSummary {
            samples: sum.samples,
            clock_offset_ms: sum.clock_offset_ms,
            clock_offset_precision_ms: sum.clock_offset_precision_ms,
            ..lsum
        };
    }
    per_host.candidates = l.candidates;
    judged.flow = lj.flow;
    judged.active = lj.active;
    judged.bottleneck = lj.bottleneck;
}

/// Events in time order (`HostData::events_between` bisects): a copy of the hosts whose
/// events are not (a store read instance by instance, a hand-built input).
fn events_in_time_order(hosts: &[HostData]) -> Cow<'_, [HostData]> {
    if hosts
        .iter()
        .all(|h| h.events.is_sorted_by_key(|e| e.time_ms))
    {
        return Cow::Borrowed(hosts);
    }
    Cow::Owned(
        hosts
            .iter()
            .map(|h| {
                let mut h = h.clone();
                h.events.sort_by_key(|e| e.time_ms);
                h
            })
            .collect(),
    )
}

/// Each host over the active period: its summary and its candidate walls.
struct PerHost {
    summaries: Vec<HostSummary>,
    candidates: Vec<Vec<Candidate>>,
}

fn per_host(
    hosts: &[HostData],
    raw: &[HostSeries],
    series: &[HostSeries],
    active: Option<(u64, u64)>,
) -> PerHost {
    let mut out = PerHost {
        summaries: Vec::new(),
        candidates: Vec::new(),
    };
    for ((s, r), h) in series.iter().zip(raw).zip(hosts) {
        let idx = active_indices(s, active);
        out.candidates
            .push(verdict::candidates::candidates(s, &idx));
        let mut sum = summarize(s, &idx, r.points.len());
        let c = h.clock();
        sum.clock_offset_ms = c.map(|c| c.offset_ms);
        sum.clock_offset_precision_ms = c.map(|c| c.precision_ms);
        out.summaries.push(sum);
    }
    out
}

/// The flow with who holds it back, and the bottleneck.
struct Judged {
    flow: Option<Flow>,
    active: Option<(u64, u64)>,
    bottleneck: Bottleneck,
    /// The processes (host, pid) of the flow's sending and receiving connections.
    carriers: Vec<(String, u32)>,
}

/// The verdict over every host's candidates and, while the flow was active, its own
/// connections (`verdict::limit`: the application or the network as candidates).
fn judge(
    hosts: &[HostData],
    series: &[HostSeries],
    per_host: &mut PerHost,
    found: verdict::flow::FoundFlow,
) -> Judged {
    let verdict::flow::FoundFlow { mut flow, active } = found;
    let stats = match (&flow, active) {
        (Some(_), Some(range)) => crate::verdict::connections::conn_stats(hosts, range),
        _ => Vec::new(),
    };
    if let (Some(f), Some(range)) = (&flow, active) {
        nic_of_flow(&stats, series, f, range, &mut per_host.candidates);
    }
    let mut candidates: Vec<Candidate> = per_host.candidates.iter().flatten().cloned().collect();
    let mut carriers = Vec::new();
    if let (Some(f), Some(range)) = (flow.as_mut(), active) {
        let (c, who) = limit_candidate(&stats, series, f, range, &candidates);
        candidates.extend(c);
        carriers = who;
    }
    let mut bottleneck = verdict::decide(&candidates, flow.as_ref());
    bottleneck
        .would_not_help
        .extend(crate::advice::concrete(series, active, flow.as_ref()));
    Judged {
        flow,
        active,
        bottleneck,
        carriers,
    }
}

/// The NIC candidate of the flow's sending host (`from`) judged again with the ports of the
/// flow's connection there (or, when only the other end was seen, as on an agent's own
/// `test net` stream, those of the connection on the receiving host the other way round): a
/// shaper class whose filter matches them is the flow's.
fn nic_of_flow(
    stats: &[crate::verdict::connections::ConnStat],
    series: &[HostSeries],
    f: &Flow,
    range: (u64, u64),
    candidates: &mut [Vec<Candidate>],
) {
    let Some(sender) = f.from.as_deref() else {
        return;
    };
    let (snd, rcv) = crate::verdict::connections::flow_conns(stats, Some(sender), f.to.as_deref());
    let conns = [snd, rcv].into_iter().flatten();
    let Some(c) = conns
        .clone()
        .find(|c| c.host == sender)
        .or(conns.clone().next())
    else {
        return;
    };
    let (local, remote) = (c.local.port, c.remote.port);
    let ports = if c.host == sender {
        verdict::candidates::FlowPorts { local, remote }
    } else {
        verdict::candidates::FlowPorts {
            local: remote,
            remote: local,
        }
    };
    let Some((s, host)) = series
        .iter()
        .zip(candidates.iter_mut())
        .find(|(s, _)| s.name == sender)
    else {
        return;
    };
    let idx = active_indices(s, Some(range));
    if let Some(old) = host
        .iter_mut()
        .find(|o| o.resource == crate::vocab::Resource::Nic)
        && let Some(new) = verdict::candidates::nic_candidate(s, &idx, Some(ports))
    {
        *old = new;
    }
}

/// Judges the flow's connections (`stats`, over `range`): sets `flow.limited_by` and its
/// evidence, and gives the `app` or `network` candidate when it is one, with the processes
/// (host, pid) of the flow's connections.
fn limit_candidate(
    stats: &[crate::verdict::connections::ConnStat],
    series: &[HostSeries],
    f: &mut Flow,
    range: (u64, u64),
    candidates: &[Candidate],
) -> (Option<Candidate>, Vec<(String, u32)>) {
    let (snd, rcv) =
        crate::verdict::connections::flow_conns(stats, f.from.as_deref(), f.to.as_deref());
    let carriers = [snd, rcv]
        .into_iter()
        .flatten()
        .map(|c| (c.host.clone(), c.pid))
        .collect();
    let limit = crate::verdict::limit::judge(stats, f.from.as_deref(), f.to.as_deref());
    f.limited_by = limit.by;
    f.limit_evidence = limit.evidence.clone();
    // The application's wait for a CPU, on its host over the active period.
    let run_delay = limit
        .host
        .as_deref()
        .zip(limit.process.as_deref())
        .and_then(|(h, p)| {
            let s = series.iter().find(|s| s.name == h)?;
            let idx = active_indices(s, Some(range));
            median(&pick(&s.procs.get(p)?.run_delay_frac, &idx))
        });
    (
        crate::verdict::limit::candidate(&limit, candidates, run_delay),
        carriers,
    )
}

/// The window of the report, ms: as asked, else what the records span.
fn window(hosts: &[HostData], opts: &Options) -> (u64, u64) {
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for h in hosts {
        for s in &h.samples {
            lo = lo.min(s.time_ms.saturating_sub(s.interval_us as u64 / 1000));
            hi = hi.max(s.time_ms);
        }
        // An agent's first record is its agent_start event: the window holds it too.
        for e in &h.events {
            lo = lo.min(e.time_ms);
            hi = hi.max(e.time_ms);
        }
    }
    let from = opts.from_ms.unwrap_or(if lo == u64::MAX { 0 } else { lo });
    let to = opts.to_ms.unwrap_or(hi.max(from));
    (from, to)
}

/// The gaps: those stored, then each stored sample that does not decode.
fn gaps(hosts: &[HostData], raw: &[HostSeries]) -> Vec<GapOut> {
    hosts
        .iter()
        .zip(raw)
        .flat_map(|(h, r)| {
            let stored = h.gaps.iter().map(|g| GapOut {
                host: h.name.clone(),
                from: rfc3339(g.from_ms),
                to: rfc3339(g.to_ms),
                samples: g.samples,
                reason: g.reason.clone(),
            });
            let undecodable = r.undecodable.iter().map(|&(t, seq)| GapOut {
                host: h.name.clone(),
                from: rfc3339(t),
                to: rfc3339(t),
                samples: Some(1),
                reason: undecodable_reason("sample", seq),
            });
            stored.chain(undecodable)
        })
        .collect()
}

/// Per sampled mount: the bytes landed over the window, the rate and, with the size expected,
/// the time left.
pub(crate) fn progress(s: &HostSeries, expect: Option<u64>) -> Vec<Progress> {
    s.mounts
        .iter()
        .filter_map(|(path, used)| {
            let pts: Vec<(u64, f64)> = s
                .points
                .iter()
                .zip(used)
                .filter(|(_, u)| u.is_finite())
                .map(|(p, u)| (p.time_ms, *u))
                .collect();
            let (first, last) = (pts.first()?, pts.last()?);
            let landed = last.1 - first.1;
            let secs = (last.0.saturating_sub(first.0)) as f64 / 1000.0;
            let rate = if secs > 0.0 { landed / secs } else { 0.0 };
            let eta = expect.and_then(|e| {
                let left = e as f64 - landed;
                (rate > 0.0).then(|| round2(left.max(0.0) / rate))
            });
            Some(Progress {
                host: s.name.clone(),
                mount: path.clone(),
                landed_bytes: landed,
                rate_mb_s: round2(rate / MB),
                used_bytes: last.1,
                expected_bytes: expect,
                eta_seconds: eta,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Instance, TimedEvent};
    use nasprobe_proto::{Event, ExitSeen};
    use nasprobe_proto::{Hello, ProcessExit, ProcessInfo};

    /// A process's CPU time is counted at its instance's clock rate (Hello), not at 100.
    #[test]
    fn exit_cpu_seconds_use_the_instances_clock_rate() {
        let exit = |pid| {
            Event::ProcessExit(ProcessExit {
                process: ProcessInfo {
                    pid,
                    ppid: 1,
                    comm: "rsync".try_into().unwrap(),
                    cmdline: "rsync".try_into().unwrap(),
                    start_ticks: 0,
                },
                lifetime_ms: 10_000,
                cpu_ticks: 500,
            })
        };
        let inst = |id, hz| Instance {
            id,
            hello: Hello {
                clock_ticks_per_sec: hz,
                ..Hello::default()
            },
            clock: None,
        };
        let host = HostData {
            name: "nas".into(),
            instances: vec![inst(1, 250), inst(2, 100)],
            events: vec![
                TimedEvent::new(1_000, 0, 1, &exit(10)),
                TimedEvent::new(2_000, 1, 1, &exit(11)),
            ],
            ..HostData::default()
        };
        let r = build(&[host], &Options::default());
        let cpu: Vec<_> = r.events.iter().map(|e| (e.pid, e.cpu_s)).collect();
        assert_eq!(cpu, [(Some(10), Some(2.0)), (Some(11), Some(5.0))]);
    }

    /// A stored sample that does not decode is left out of the figures and listed as a gap,
    /// never dropped silently.
    #[test]
    fn an_undecodable_sample_is_a_gap() {
        let good = nasprobe_proto::Sample {
            interval_us: 1_000_000,
            ..Default::default()
        };
        let host = HostData {
            name: "nas".into(),
            instances: vec![Instance {
                id: 1,
                hello: Hello::default(),
                clock: None,
            }],
            samples: vec![
                crate::input::TimedSample::new(1_000, 0, 1, &good),
                crate::input::TimedSample {
                    time_ms: 2_000,
                    instance: 0,
                    seq: 2,
                    interval_us: 1_000_000,
                    body: vec![0x80],
                },
                crate::input::TimedSample::new(3_000, 0, 3, &good),
            ],
            ..HostData::default()
        };
        let a = analyze(&[host], &Options::default());
        assert_eq!(a.raw[0].points.len(), 2);
        assert_eq!(a.report.hosts[0].samples, 2);
        let gaps: Vec<_> = a
            .report
            .gaps
            .iter()
            .map(|g| (&g.reason[..], g.samples))
            .collect();
        assert_eq!(
            gaps,
            [(
                "undecodable: the stored sample seq 2 does not decode",
                Some(1)
            )]
        );
        assert_eq!(a.report.gaps[0].from, "1970-01-01T00:00:02Z");
    }

    /// A crash loop of many exits with starts, plus one OOM kill.
    fn crash_loop(n: u64) -> HostData {
        let info = |pid, comm: &str| ProcessInfo {
            pid,
            ppid: 1,
            comm: comm.try_into().unwrap(),
            cmdline: format!("{comm} --resume {pid}")
                .as_str()
                .try_into()
                .unwrap(),
            start_ticks: 0,
        };
        let end = |pid, comm, code, signal, oom| {
            Event::ProcessEnd(nasprobe_proto::ProcessEnd {
                exit: ProcessExit {
                    process: info(pid, comm),
                    lifetime_ms: 8_000,
                    cpu_ticks: 50,
                },
                status: nasprobe_proto::ExitStatus {
                    seen: ExitSeen::Kernel,
                    code,
                    signal,
                    core_dumped: false,
                    oom_killed: oom,
                    before_ms: 0,
                },
            })
        };
        let mut events = Vec::new();
        for k in 0..n {
            let t = 10_000 * (k + 1);
            let pid = 100 + k as u32;
            events.push(TimedEvent::new(
                t,
                0,
                0,
                &end(pid, "rsync", Some(12), None, false),
            ));
            events.push(TimedEvent::new(
                t + 1_000,
                0,
                0,
                &Event::ProcessStart(info(pid + 1, "rsync")),
            ));
        }
        events.push(TimedEvent::new(
            5_000 * n,
            0,
            0,
            &end(7, "smbd", None, Some(9), true),
        ));
        events.sort_by_key(|e| e.time_ms);
        HostData {
            name: "nas".into(),
            instances: vec![Instance {
                id: 1,
                hello: Hello::default(),
                clock: None,
            }],
            events,
            ..HostData::default()
        }
    }

    /// Over a long window the loop is one group with its count and first and last times, of
    /// which `events` keeps the first and last few; the lone OOM kill is listed; the restart
    /// pattern still counts every death. A short window lists every event, without groups.
    #[test]
    fn a_long_window_groups_a_crash_loop_and_keeps_the_oom_kill() {
        let h = crash_loop(10_000);
        let long = build(
            std::slice::from_ref(&h),
            &Options {
                step_ms: Some(60_000),
                ..Options::default()
            },
        );
        let g: Vec<_> = long
            .event_groups
            .iter()
            .map(|g| (g.kind, g.process.as_deref(), g.cause, g.count, g.listed))
            .collect();
        assert_eq!(
            g,
            [
                ("process_exit", Some("rsync"), Some("error_exit"), 10_000, 6),
                ("process_start", Some("rsync"), None, 10_000, 6),
                ("process_exit", Some("smbd"), Some("oom"), 1, 1),
            ]
        );
        let lp = &long.event_groups[0];
        assert_eq!(
            (lp.first.as_str(), lp.last.as_str()),
            ("1970-01-01T00:00:10Z", "1970-01-02T03:46:40Z")
        );
        assert_eq!(lp.ended.as_deref(), Some("exited with status 12"));
        assert_eq!(
            (lp.exit_code, lp.median_lifetime_s, lp.cpu_s),
            (Some(12), Some(8.0), Some(5_000.0))
        );
        assert!(
            lp.summary
                .contains("10000 × process_exit rsync exited with status 12"),
            "{}",
            lp.summary
        );
        assert_eq!(long.events.len(), 13);
        let oom: Vec<_> = long
            .events
            .iter()
            .filter(|e| e.oom_killed == Some(true))
            .collect();
        assert_eq!(oom.len(), 1);
        assert_eq!(
            (oom[0].process.as_deref(), oom[0].at.as_str()),
            (Some("smbd"), "1970-01-01T13:53:20Z")
        );
        assert!(long.events.windows(2).all(|w| w[0].at <= w[1].at));
        let p = &long.patterns[0];
        assert_eq!(
            (p.deaths_total, p.deaths.len(), p.restarts),
            (10_000, 6, 10_000)
        );
        assert_eq!(p.cause, "error_exit");
        assert!(p.summary.contains("died 10000 times"), "{}", p.summary);
        let text = crate::text::render_events(&long);
        assert!(text.contains(": 20001 events, 13 of them listed"), "{text}");
        assert!(text.contains("Events: 20001 in 3 groups"), "{text}");
        assert!(
            text.contains("  - nas: 1 × process_exit smbd killed by the OOM killer (SIGKILL)"),
            "{text}"
        );
        assert!(
            text.contains("  10000 deaths; the first and last 3 with their context:"),
            "{text}"
        );

        let short = build(&[h], &Options::default());
        assert!(short.event_groups.is_empty());
        assert_eq!(short.events.len(), 20_001);
        assert_eq!(short.patterns[0].deaths.len(), 10_000);
        assert_eq!(short.patterns[0].deaths_total, 10_000);
    }
}
