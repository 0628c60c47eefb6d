//! How processes ended: the words for one exit ("died by SIGKILL after 1 h 12 min") and the
//! `cause` of a pattern of deaths with the evidence for it (its status, its own connections'
//! trouble, the end of the process at their other end).

use nasprobe_proto::{ExitSeen, ExitStatus, signal_name};

use crate::time::dur;
use crate::time::rfc3339;

/// Why a process ended, as far as its exits tell (`patterns[].cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// The kernel's OOM killer chose it.
    Oom,
    /// A fatal signal of its own doing: SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, or a core.
    Crashed,
    /// A signal from outside: SIGKILL, SIGTERM, SIGHUP, SIGINT without a core.
    Killed,
    /// The process at the other end of its connection, on another observed host, ended first.
    Peer,
    /// Its own connections had retransmission timeouts, retransmissions or unanswered probes
    /// before the end.
    Network,
    /// It exited with a non-zero status.
    ErrorExit,
    /// It exited with status 0.
    Clean,
    /// No status (seen by a /proc scan only) or another signal.
    Unknown,
}

impl Cause {
    /// Every cause, in the order above.
    pub const ALL: [Cause; 8] = [
        Cause::Oom,
        Cause::Crashed,
        Cause::Killed,
        Cause::Peer,
        Cause::Network,
        Cause::ErrorExit,
        Cause::Clean,
        Cause::Unknown,
    ];

    /// The cause [`Cause::name`] names (the report's `cause` strings back into their kind).
    pub fn from_name(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Cause::Oom => "oom",
            Cause::Crashed => "crashed",
            Cause::Killed => "killed",
            Cause::Peer => "peer",
            Cause::Network => "network",
            Cause::ErrorExit => "error_exit",
            Cause::Clean => "clean",
            Cause::Unknown => "unknown",
        }
    }
}

/// The cause of one exit; an exit without status (an old agent's `ProcessExit`) is unknown.
pub fn cause_of(st: Option<&ExitStatus>) -> Cause {
    let Some(st) = st else {
        return Cause::Unknown;
    };
    if st.oom_killed {
        return Cause::Oom;
    }
    match (st.code, st.signal) {
        (_, Some(_)) if st.core_dumped => Cause::Crashed,
        // SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV.
        (_, Some(4 | 6 | 7 | 8 | 11)) => Cause::Crashed,
        // SIGHUP, SIGINT, SIGKILL, SIGTERM.
        (_, Some(1 | 2 | 9 | 15)) => Cause::Killed,
        (_, Some(_)) => Cause::Unknown,
        (Some(0), None) => Cause::Clean,
        (Some(_), None) => Cause::ErrorExit,
        (None, None) => Cause::Unknown,
    }
}

/// When the process ended: the record's time less what the agent says it waited before
/// writing it (the kernel's own exit time with the process connector, ms).
pub fn exit_time(record_ms: u64, st: Option<&ExitStatus>) -> u64 {
    record_ms.saturating_sub(st.map_or(0, |s| s.before_ms as u64))
}

/// The name of the signal that ended it ("SIGKILL", or "signal 40" for one without a name).
pub fn signal_text(n: u8) -> String {
    signal_name(n).map_or_else(|| format!("signal {n}"), str::to_string)
}

/// How it ended, without the lifetime: "died by SIGKILL", "exited with status 1",
/// "killed by the OOM killer (SIGKILL)", "died by SIGSEGV (core dumped)", "ended
/// (status unknown: seen by a /proc scan)".
pub fn how_it_ended(st: Option<&ExitStatus>) -> String {
    let Some(st) = st.filter(|s| s.seen == ExitSeen::Kernel || s.oom_killed) else {
        return "ended (status unknown: seen by a /proc scan)".into();
    };
    let sig = st.signal.map(signal_text);
    if st.oom_killed {
        return match sig {
            Some(s) => format!("killed by the OOM killer ({s})"),
            None => "killed by the OOM killer".into(),
        };
    }
    match (st.code, sig) {
        (_, Some(s)) if st.core_dumped => format!("died by {s} (core dumped)"),
        (_, Some(s)) => format!("died by {s}"),
        (Some(c), None) => format!("exited with status {c}"),
        (None, None) => "ended (status unknown)".into(),
    }
}

/// "died by SIGKILL after 1 h 12 min".
pub fn end_text(st: Option<&ExitStatus>, lifetime_ms: u64) -> String {
    format!(
        "{} after {}",
        how_it_ended(st),
        dur(lifetime_ms as f64 / 1000.0)
    )
}

/// One death of a pattern: when, how long it lived, how it ended, what its connections say.
pub struct Death<'a> {
    pub time_ms: u64,
    pub lifetime_ms: u64,
    pub status: Option<&'a ExitStatus>,
    /// Trouble of its own connections before the end ([`crate::conns::trouble_before`]).
    pub network: Option<String>,
    /// The process at the other end, on another host, and its end.
    pub peer: Option<crate::vocab::PeerEnd>,
}

/// The cause of one death: a signal from outside, a crash or the OOM killer stand; otherwise
/// a peer that ended first, then trouble on its own connections, then its status.
pub fn death_cause(d: &Death) -> Cause {
    let base = cause_of(d.status);
    if matches!(base, Cause::Oom | Cause::Crashed | Cause::Killed) {
        return base;
    }
    if d.peer.as_ref().is_some_and(|p| p.ended_ms <= d.time_ms) {
        return Cause::Peer;
    }
    if d.network.is_some() {
        return Cause::Network;
    }
    base
}

fn peer_text(d: &Death, p: &crate::vocab::PeerEnd) -> String {
    let dt = d.time_ms as i64 - p.ended_ms as i64;
    let span = |ms: i64| {
        if ms < 1000 {
            format!("{ms} ms")
        } else {
            format!("{:.1} s", ms as f64 / 1000.0)
        }
    };
    let when = if dt >= 0 {
        format!("{} earlier", span(dt))
    } else {
        format!("{} later", span(-dt))
    };
    let clocks = match p.clock_precision_ms {
        Some(ms) => format!("clocks matched to within ±{ms} ms by the collector"),
        None => "agent clocks as they are; their offset was not measured".to_string(),
    };
    format!(
        "the peer `{}` (pid {}) on {} ended {when}: {} ({clocks})",
        p.comm,
        p.pid,
        p.host,
        end_text(p.status.as_ref(), p.lifetime_ms)
    )
}

/// The cause of a pattern: the cause of most of its deaths (ties go to the first in
/// [`Cause`] order: the more specific one), with sentences that give the numbers and times.
pub fn pattern_cause(deaths: &[Death]) -> (Cause, Vec<String>) {
    let mut counts: Vec<(Cause, Vec<&Death>)> = Vec::new();
    for d in deaths {
        let c = death_cause(d);
        match counts.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => v.push(d),
            None => counts.push((c, vec![d])),
        }
    }
    counts.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    let mut evidence = Vec::new();
    for (c, ds) in &counts {
        let how = how_it_ended(ds[0].status);
        let same = ds.iter().all(|d| how_it_ended(d.status) == how);
        let times: Vec<String> = ds
            .iter()
            .take(4)
            .map(|d| {
                format!(
                    "{} after {}",
                    &rfc3339(d.time_ms)[11..19],
                    dur(d.lifetime_ms as f64 / 1000.0)
                )
            })
            .collect();
        let more = if ds.len() > 4 { ", …" } else { "" };
        // Peer and network causes: the sentence of the last such death says it with numbers.
        let last = ds[ds.len() - 1];
        let extra = match c {
            Cause::Peer => last.peer.as_ref().map(|p| peer_text(last, p)),
            Cause::Network => last.network.clone(),
            _ => None,
        }
        .map(|t| format!(" (last: {t})"))
        .unwrap_or_default();
        let what = if same {
            how
        } else {
            format!("{} ({})", c.name(), how)
        };
        evidence.push(format!(
            "{} of {} deaths {what}: at {}{more}{extra}",
            ds.len(),
            deaths.len(),
            times.join(", ")
        ));
    }
    let cause = counts.first().map_or(Cause::Unknown, |c| c.0);
    if cause == Cause::Unknown
        && deaths
            .iter()
            .all(|d| d.status.is_none_or(|s| s.seen == ExitSeen::Scan))
    {
        evidence.push(
            "the agent found these exits by scanning /proc, without their status (process \
             connector refused, unavailable or turned off with --no-connector)"
                .into(),
        );
    }
    (cause, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(code: Option<u8>, signal: Option<u8>, core: bool, oom: bool) -> ExitStatus {
        ExitStatus {
            seen: ExitSeen::Kernel,
            code,
            signal,
            core_dumped: core,
            oom_killed: oom,
            before_ms: 0,
        }
    }

    #[test]
    fn causes_and_words() {
        let kill = st(None, Some(9), false, false);
        assert_eq!(cause_of(Some(&kill)), Cause::Killed);
        assert_eq!(
            end_text(Some(&kill), 4_320_000),
            "died by SIGKILL after 1 h 12 min"
        );
        let e1 = st(Some(1), None, false, false);
        assert_eq!(cause_of(Some(&e1)), Cause::ErrorExit);
        assert_eq!(how_it_ended(Some(&e1)), "exited with status 1");
        assert_eq!(
            cause_of(Some(&st(Some(0), None, false, false))),
            Cause::Clean
        );
        let segv = st(None, Some(11), true, false);
        assert_eq!(cause_of(Some(&segv)), Cause::Crashed);
        assert_eq!(how_it_ended(Some(&segv)), "died by SIGSEGV (core dumped)");
        // SIGQUIT with a core is a crash too; without one it is not named.
        assert_eq!(
            cause_of(Some(&st(None, Some(3), true, false))),
            Cause::Crashed
        );
        assert_eq!(
            cause_of(Some(&st(None, Some(3), false, false))),
            Cause::Unknown
        );
        let oom = st(None, Some(9), false, true);
        assert_eq!(cause_of(Some(&oom)), Cause::Oom);
        assert_eq!(
            how_it_ended(Some(&oom)),
            "killed by the OOM killer (SIGKILL)"
        );
        let scan = ExitStatus {
            seen: ExitSeen::Scan,
            ..st(None, None, false, false)
        };
        assert_eq!(cause_of(Some(&scan)), Cause::Unknown);
        assert_eq!(cause_of(None), Cause::Unknown);
        assert!(how_it_ended(Some(&scan)).contains("status unknown"));
        assert_eq!(signal_text(40), "signal 40");
    }

    #[test]
    fn peer_and_network_before_status_but_not_before_a_kill() {
        let e12 = st(Some(12), None, false, false);
        let kill = st(None, Some(9), false, false);
        let peer = crate::vocab::PeerEnd {
            host: "dst".into(),
            comm: "rsyncd".into(),
            pid: 90,
            ended_ms: 1_700_000_000_000 - 400,
            clock_precision_ms: Some(3),
            status: Some(st(Some(1), None, false, false)),
            lifetime_ms: 60_000,
        };
        let d = |s, network: Option<&str>, peer: Option<crate::vocab::PeerEnd>| Death {
            time_ms: 1_700_000_000_000,
            lifetime_ms: 8_000,
            status: Some(s),
            network: network.map(str::to_string),
            peer,
        };
        assert_eq!(death_cause(&d(&e12, Some("x"), None)), Cause::Network);
        assert_eq!(
            death_cause(&d(&e12, Some("x"), Some(peer.clone()))),
            Cause::Peer
        );
        assert_eq!(
            death_cause(&d(&kill, Some("x"), Some(peer.clone()))),
            Cause::Killed
        );
        // A peer that ended after it is not the cause.
        let later = crate::vocab::PeerEnd {
            ended_ms: 1_700_000_000_000 + 400,
            ..peer.clone()
        };
        assert_eq!(death_cause(&d(&e12, None, Some(later))), Cause::ErrorExit);
        let (c, ev) =
            pattern_cause(&[d(&e12, None, Some(peer.clone())), d(&e12, None, Some(peer))]);
        assert_eq!(c, Cause::Peer);
        assert!(
            ev[0].contains("the peer `rsyncd` (pid 90) on dst ended 400 ms earlier: exited with status 1 after 1 min (clocks matched to within ±3 ms by the collector)"),
            "{ev:?}"
        );
    }

    #[test]
    fn pattern_takes_the_cause_of_most_deaths() {
        let kill = st(None, Some(9), false, false);
        let e3 = st(Some(3), None, false, false);
        let d = |t: u64, s| Death {
            time_ms: 1_700_000_000_000 + t,
            lifetime_ms: 8_000,
            status: Some(s),
            network: None,
            peer: None,
        };
        let (c, ev) = pattern_cause(&[d(0, &kill), d(9_000, &e3), d(18_000, &kill)]);
        assert_eq!(c, Cause::Killed);
        assert_eq!(
            ev[0],
            "2 of 3 deaths died by SIGKILL: at 22:13:20 after 8 s, 22:13:38 after 8 s"
        );
        assert_eq!(
            ev[1],
            "1 of 3 deaths exited with status 3: at 22:13:29 after 8 s"
        );
        // A tie goes to the more specific cause.
        let (c, _) = pattern_cause(&[d(0, &e3), d(9_000, &kill)]);
        assert_eq!(c, Cause::Killed);
        // Only scans: unknown, and says why.
        let none = [
            Death {
                time_ms: 0,
                lifetime_ms: 1,
                status: None,
                network: None,
                peer: None,
            },
            Death {
                time_ms: 5,
                lifetime_ms: 1,
                status: None,
                network: None,
                peer: None,
            },
        ];
        let (c, ev) = pattern_cause(&none);
        assert_eq!(c, Cause::Unknown);
        assert!(ev.last().unwrap().contains("--no-connector"), "{ev:?}");
    }
}
