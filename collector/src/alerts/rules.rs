//! The rules: each turns what the engine observed at one instant ([`Obs`]) into the state of
//! its conditions ([`Cond`]: active or not, with the sentence a person reads). They keep the
//! timers of their thresholds; whether to send is [`super::state`]'s business.

use std::collections::HashMap;

use nasprobe_analysis::exits::Cause;

use super::config::{AlertConfig, Rule};

/// One rule's memory, turning each observation into the state of its conditions: what the
/// engine loops over (each rule in force once per evaluation).
pub(crate) trait Condition: Send {
    fn rule(&self) -> Rule;
    fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond>;
}

/// The trait's side of a rule whose `eval` is its own.
macro_rules! condition {
    ($t:ty, $rule:expr) => {
        impl $crate::alerts::rules::Condition for $t {
            fn rule(&self) -> $crate::alerts::config::Rule {
                $rule
            }
            fn eval(
                &mut self,
                c: &$crate::alerts::config::AlertConfig,
                o: &$crate::alerts::rules::Obs,
            ) -> Vec<$crate::alerts::rules::Cond> {
                <$t>::eval(self, c, o)
            }
        }
    };
}
pub(crate) use condition;

condition!(HostLost, Rule::HostLost);
condition!(Stall, Rule::Stall);
condition!(Death, Rule::Death);

/// One host, as the connection sees it.
/// Refusals of one host on this run, by kind (the counters `net::gate::note_refusal` keeps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Refused {
    /// Connections that ended on frames failing authentication (a wrong MAC).
    pub tampered: u64,
    /// Connections that ended with the host marked bad.
    pub marked_bad: u64,
    /// Records rejected by the plausibility checks.
    pub rejected: u64,
    /// Records dropped over the collector's caps.
    pub dropped: u64,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct HostObs {
    pub name: String,
    /// Records received on this run (only ever grows).
    pub received: u64,
    pub connected: bool,
    /// The newest sample's time (the agent's clock, ms), if any on this run.
    pub last_sample_ms: Option<u64>,
    /// The connection's last error while it is not connected.
    pub error: Option<String>,
    /// What the collector refused from this host on this run (only ever grows).
    pub refused: Refused,
    /// What its agent sent last that the collector found invalid, if anything on this run.
    pub bad: Option<String>,
    /// Its agent's clock minus the collector's (ms), as the handshake measured it, if known.
    pub clock_offset_ms: Option<i64>,
}

/// A process that ended, as the report lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExitObs {
    pub host: String,
    pub pid: u32,
    pub process: String,
    pub cmdline: Option<String>,
    pub at_ms: u64,
    /// "died by SIGKILL", "killed by the OOM killer (SIGKILL)", "exited with status 1".
    pub ended: String,
    /// The report's cause (`killed`, `oom`, `peer`, `network`, ...).
    pub cause: Cause,
    pub evidence: Vec<String>,
}

/// What the engine saw at one instant.
#[derive(Debug, Clone, Default)]
pub(crate) struct Obs {
    pub now_ms: u64,
    pub hosts: Vec<HostObs>,
    /// The report's flow over the last few seconds: its rate (bytes/s; 0 when no flow) and its
    /// ends ("src → dst").
    pub flow_bps: f64,
    pub flow_ends: Option<String>,
    /// The report's verdict line over the same seconds.
    pub verdict: Option<String>,
    /// Exits seen in the recent window (the engine passes each window; duplicates are fine).
    pub exits: Vec<ExitObs>,
    /// (host, process) of the processes that had the transfer's files open lately.
    pub movers: Vec<(String, String)>,
    /// The agents' `--mount`s in their newest sample.
    pub mounts: Vec<MountObs>,
    /// The verdict's wall over the same seconds ("dst disk"), None when there is none.
    pub wall: Option<String>,
}

/// One `--mount` of an agent at its newest sample.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MountObs {
    pub host: String,
    pub path: String,
    /// The sample's time (the agent's clock).
    pub time_ms: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
}

/// One condition of one rule at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cond {
    pub rule: Rule,
    /// What tells this alert from another of its rule (the host, the process).
    pub key: String,
    pub host: Option<String>,
    pub active: bool,
    pub summary: String,
    pub evidence: Vec<String>,
    /// Occurrences (deaths of a restart loop; 1 otherwise).
    pub count: u64,
    /// When it began (ms), when the rule knows better than "now".
    pub since_ms: Option<u64>,
    /// The newest occurrence counted (deaths), kept with the alert.
    pub last_ms: Option<u64>,
}

pub(crate) fn mins(ms: u64) -> String {
    nasprobe_analysis::time::dur(ms as f64 / 1000.0)
}

pub(crate) fn clock(ms: u64) -> String {
    nasprobe_analysis::time::rfc3339(ms)
        .get(11..19)
        .unwrap_or("")
        .to_string()
}

/// host_lost: no record from an agent for `for`; resolved when records flow again and the
/// newest sample is recent (the ring's backfill is through).
#[derive(Debug, Default)]
pub(crate) struct HostLost {
    hosts: HashMap<String, HostTimer>,
}

#[derive(Debug, Default, Clone)]
struct HostTimer {
    received: u64,
    /// When `received` last grew (the collector's clock), or when the engine began.
    heard_ms: u64,
    /// While lost: (`heard_ms`, `received`) when it was declared lost.
    lost_at: Option<(u64, u64)>,
    /// While lost: when records came again (the collector's clock), the end of the silence.
    back_ms: Option<u64>,
}

/// A resumed host is caught up when its newest sample is this close to now.
const CAUGHT_UP_MS: u64 = 10_000;

impl HostLost {
    /// A host an earlier run found lost (its alert still firing in the store): lost since
    /// `since_ms`, every record of this run counts as backfilled.
    pub(crate) fn restore(&mut self, host: &str, since_ms: u64) {
        self.hosts.insert(
            host.to_string(),
            HostTimer {
                received: 0,
                heard_ms: since_ms,
                lost_at: Some((since_ms, 0)),
                back_ms: None,
            },
        );
    }

    pub(crate) fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond> {
        let limit = c.set.host_lost_for.as_millis() as u64;
        let mut out = Vec::new();
        for h in &o.hosts {
            let t = self.hosts.entry(h.name.clone()).or_insert(HostTimer {
                received: h.received,
                heard_ms: o.now_ms,
                lost_at: None,
                back_ms: None,
            });
            let grew = h.received > t.received;
            if grew {
                t.received = h.received;
                t.heard_ms = o.now_ms;
                if t.lost_at.is_some() {
                    t.back_ms.get_or_insert(o.now_ms);
                }
            }
            let silent = o.now_ms.saturating_sub(t.heard_ms);
            // The newest sample against now on the agent's clock (a NAS whose clock is off by
            // more than CAUGHT_UP_MS would otherwise never be caught up, issue 41).
            let agent_now = o.now_ms as i64 + h.clock_offset_ms.unwrap_or(0);
            let caught_up = h.connected
                && h.last_sample_ms
                    .is_some_and(|s| s as i64 + CAUGHT_UP_MS as i64 >= agent_now);
            let mut cond = Cond {
                rule: Rule::HostLost,
                key: h.name.clone(),
                host: Some(h.name.clone()),
                active: false,
                summary: String::new(),
                evidence: Vec::new(),
                count: 1,
                since_ms: None,
                last_ms: None,
            };
            match t.lost_at {
                None if silent >= limit => {
                    t.lost_at = Some((t.heard_ms, h.received));
                }
                Some((from, before)) if grew && caught_up => {
                    // The silence ends when records came again, not when the backfill is
                    // through.
                    let back = t.back_ms.take().unwrap_or(o.now_ms);
                    cond.summary = format!(
                        "{}: agent back after {} silent; its ring backfilled {} records",
                        h.name,
                        mins(back.saturating_sub(from)),
                        h.received - before
                    );
                    cond.evidence = vec![format!(
                        "records resumed at {}; {} records received since the agent went silent at {}",
                        clock(back),
                        h.received - before,
                        clock(from)
                    )];
                    t.lost_at = None;
                }
                _ => {}
            }
            if let Some((from, _)) = t.lost_at {
                cond.active = true;
                cond.since_ms = Some(from);
                let why = match (&h.error, h.connected) {
                    (Some(e), false) => format!("unreachable: {e}"),
                    (_, true) => "connected but sends nothing".into(),
                    (None, false) => "not connected".into(),
                };
                cond.summary = format!(
                    "{}: no record from its agent for {} ({why})",
                    h.name,
                    mins(o.now_ms.saturating_sub(from))
                );
                cond.evidence = vec![format!("last record received at {}", clock(from))];
            }
            out.push(cond);
        }
        out
    }
}

/// stall: the flow under `below` for `for`, after it had been above `above` for
/// `after_for`; resolved when it is back over `below`.
#[derive(Debug, Default)]
pub(crate) struct Stall {
    /// Since when the flow is above `above` without a break.
    above_since: Option<u64>,
    /// A transfer was under way (above `above` for `after_for`): its rate then.
    armed: Option<f64>,
    below_since: Option<u64>,
    firing: bool,
    /// The flow's ends when last seen ("src → dst"): a stalled flow may be too slow to be found.
    ends: Option<String>,
}

impl Stall {
    pub(crate) fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond> {
        let below = c.set.stall_below as f64;
        let above = c.set.stall_above as f64;
        let for_ms = c.set.stall_for.as_millis() as u64;
        let after_ms = c.set.stall_after_for.as_millis() as u64;
        let r = o.flow_bps;
        if r >= above {
            let since = *self.above_since.get_or_insert(o.now_ms);
            if o.now_ms.saturating_sub(since) >= after_ms {
                self.armed = Some(self.armed.map_or(r, |a| a.max(r)));
            }
        } else {
            self.above_since = None;
        }
        if o.flow_ends.is_some() && r >= below {
            self.ends.clone_from(&o.flow_ends);
        }
        let ends = self.ends.clone().unwrap_or_else(|| "the flow".into());
        let mut cond = Cond {
            rule: Rule::Stall,
            key: "flow".into(),
            host: None,
            active: false,
            summary: String::new(),
            evidence: Vec::new(),
            count: 1,
            since_ms: None,
            last_ms: None,
        };
        if r < below {
            if self.armed.is_some() {
                self.below_since.get_or_insert(o.now_ms);
            }
        } else {
            if self.firing {
                cond.summary = format!(
                    "{ends}: the flow is back at {:.1} MB/s after {} stalled",
                    r / 1e6,
                    mins(
                        o.now_ms
                            .saturating_sub(self.below_since.unwrap_or(o.now_ms))
                    )
                );
                self.firing = false;
                self.armed = None;
            }
            self.below_since = None;
        }
        if let (Some(was), Some(since)) = (self.armed, self.below_since)
            && o.now_ms.saturating_sub(since) >= for_ms
        {
            self.firing = true;
            cond.active = true;
            cond.since_ms = Some(since);
            cond.summary = format!(
                "{ends}: the flow is at {:.2} MB/s for {} (under {:.1} MB/s; it was {:.1} MB/s)",
                r / 1e6,
                mins(o.now_ms.saturating_sub(since)),
                below / 1e6,
                was / 1e6
            );
            cond.evidence = o.verdict.iter().cloned().collect();
        }
        vec![cond]
    }
}

/// death: a process that moved the flow's files, or one `--watch-process` names, ended. Deaths
/// of one host and process name closer together than `quiet` are one alert, counted.
#[derive(Debug, Default)]
pub(crate) struct Death {
    keys: HashMap<String, DeathRun>,
    /// Process names that moved the flow's files on this run, per host.
    movers: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct DeathRun {
    pub host: String,
    pub process: String,
    pub first_ms: u64,
    /// The newest death counted: an exit at or before it is not counted again.
    pub last_ms: u64,
    pub count: u64,
    pub ended: String,
    pub cause: &'static str,
    pub evidence: Vec<String>,
    pub active: bool,
    /// The names of a host's folded deaths ([`MANY`]), the first [`NAMES_SHOWN`].
    pub names: Vec<String>,
    /// How many names were folded in all.
    pub names_total: u64,
}

/// The process of a host's alert that counts the deaths of many names.
pub(crate) const MANY: &str = "*";
/// Names of one host alerted each on its own within one `repeat`; the deaths of further names
/// fold into one alert of the host that counts them (issue 39: a new name dying every few ms
/// is one alert, not thousands).
pub(crate) const DEATH_NAMES_MAX: usize = 3;
/// Names a folded alert lists (the rest are counted).
const NAMES_SHOWN: usize = 8;

/// The key of a death alert.
pub(crate) fn death_key(host: &str, process: &str) -> String {
    format!("{host}/{process}")
}

impl Death {
    /// Restores a run from the store (a restarted `record` neither counts a death twice nor
    /// forgets the loop it was in).
    pub(crate) fn restore(&mut self, key: String, run: DeathRun) {
        self.keys.insert(key, run);
    }

    fn watched(&self, c: &AlertConfig, e: &ExitObs) -> bool {
        self.movers
            .iter()
            .any(|(h, p)| *h == e.host && *p == e.process)
            || c.watch_process.iter().any(|p| {
                e.process.contains(p.as_str())
                    || e.cmdline.as_deref().is_some_and(|c| c.contains(p.as_str()))
            })
    }

    pub(crate) fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond> {
        let quiet = c.set.death_quiet.as_millis() as u64;
        let repeat = c.repeat().as_millis() as u64;
        // A run no exit can add to any more (its exits are out of the engine's window) is
        // forgotten: the keys stay as few as the names of the last seconds.
        let window = super::recent::EXIT_WINDOW.as_millis() as u64;
        self.keys
            .retain(|_, r| r.active || o.now_ms.saturating_sub(r.last_ms) <= quiet.max(window));
        for m in &o.movers {
            if !self.movers.contains(m) {
                self.movers.push(m.clone());
            }
        }
        // A clean exit (status 0) is a program that finished, not a death.
        let mut exits: Vec<&ExitObs> = o
            .exits
            .iter()
            .filter(|e| e.cause != Cause::Clean && self.watched(c, e))
            .collect();
        exits.sort_by_key(|e| e.at_ms);
        for e in exits {
            let mut key = death_key(&e.host, &e.process);
            let open = self
                .keys
                .get(&key)
                .is_some_and(|r| r.active && e.at_ms.saturating_sub(r.last_ms) <= quiet);
            let seen = self.keys.get(&key).is_some_and(|r| e.at_ms <= r.last_ms);
            if !open && !seen {
                let named = self
                    .keys
                    .values()
                    .filter(|r| {
                        r.active
                            && r.host == e.host
                            && r.process != MANY
                            && e.at_ms.saturating_sub(r.first_ms) < repeat
                    })
                    .count();
                if named >= DEATH_NAMES_MAX {
                    key = death_key(&e.host, MANY);
                }
            }
            let many = key == death_key(&e.host, MANY);
            let run = self.keys.entry(key).or_default();
            if e.at_ms <= run.last_ms {
                continue;
            }
            if !run.active || e.at_ms.saturating_sub(run.last_ms) > quiet {
                *run = DeathRun {
                    host: e.host.clone(),
                    process: if many { MANY.into() } else { e.process.clone() },
                    first_ms: e.at_ms,
                    count: 0,
                    active: true,
                    ..Default::default()
                };
            }
            if run.process == MANY {
                run.names_total += u64::from(!run.names.contains(&e.process));
                if run.names.len() < NAMES_SHOWN && !run.names.contains(&e.process) {
                    run.names.push(e.process.clone());
                }
            }
            run.count += 1;
            run.last_ms = e.at_ms;
            run.ended = e.ended.clone();
            run.cause = e.cause.name();
            run.evidence = e.evidence.clone();
            if let Some(cmd) = &e.cmdline {
                run.evidence.push(format!("pid {} `{cmd}`", e.pid));
            }
        }
        let mut out = Vec::new();
        for (key, run) in &mut self.keys {
            if !run.active && run.count == 0 {
                continue;
            }
            let times = if run.count > 1 {
                format!(" ({} times since {})", run.count, clock(run.first_ms))
            } else {
                String::new()
            };
            let what = if run.process == MANY {
                let more = run.names_total.saturating_sub(run.names.len() as u64);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                format!(
                    "{} processes of {} names died since {} ({}{more}), the last",
                    run.count,
                    run.names_total,
                    clock(run.first_ms),
                    run.names.join(", ")
                )
            } else {
                run.process.clone()
            };
            let mut cond = Cond {
                rule: Rule::Death,
                key: key.clone(),
                host: Some(run.host.clone()),
                active: run.active,
                summary: if run.process == MANY {
                    format!("{}: {what} {} (cause: {})", run.host, run.ended, run.cause)
                } else {
                    format!(
                        "{}: {} {} (cause: {}){times}",
                        run.host, run.process, run.ended, run.cause
                    )
                },
                evidence: run.evidence.clone(),
                count: run.count,
                since_ms: Some(run.first_ms),
                last_ms: Some(run.last_ms),
            };
            if run.active && o.now_ms.saturating_sub(run.last_ms) > quiet {
                run.active = false;
                cond.active = false;
                cond.summary = format!(
                    "{}: {} died {} time(s), the last at {} ({}, cause: {}); none since for {}",
                    run.host,
                    if run.process == MANY {
                        format!("processes of {} names", run.names_total)
                    } else {
                        run.process.clone()
                    },
                    run.count,
                    clock(run.last_ms),
                    run.ended,
                    run.cause,
                    mins(quiet)
                );
            }
            out.push(cond);
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::alerts::config::AlertArgs;

    /// The rules in force with `a` set (and `--watch-process worker`).
    pub(crate) fn cfg(a: &[&str]) -> AlertConfig {
        AlertConfig::resolve(
            &AlertArgs {
                alert: a.iter().map(|s| s.to_string()).collect(),
                watch_process: vec!["worker".into()],
                ..Default::default()
            },
            None,
        )
        .unwrap()
    }

    fn host(received: u64, connected: bool, last: u64) -> Obs {
        Obs {
            hosts: vec![HostObs {
                name: "nas".into(),
                received,
                connected,
                last_sample_ms: Some(last),
                error: (!connected).then(|| "connection refused".into()),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn host_lost_after_its_time_and_back_when_caught_up() {
        let c = cfg(&["host_lost.for=10s"]);
        let mut r = HostLost::default();
        let at = |ms, mut o: Obs| {
            o.now_ms = ms;
            o
        };
        assert!(!r.eval(&c, &at(0, host(5, true, 0)))[0].active);
        assert!(!r.eval(&c, &at(9_000, host(5, false, 0)))[0].active);
        let lost = r.eval(&c, &at(10_000, host(5, false, 0)));
        assert!(lost[0].active, "{lost:?}");
        assert!(lost[0].summary.contains("connection refused"));
        // Records again, but the backfill is not through: still lost.
        assert!(r.eval(&c, &at(12_000, host(50, true, 1_000)))[0].active);
        let back = r.eval(&c, &at(14_000, host(80, true, 13_000)));
        assert!(!back[0].active);
        assert!(
            back[0].summary.contains("backfilled 75 records"),
            "{}",
            back[0].summary
        );
    }

    #[test]
    fn host_lost_resolves_within_its_for_of_the_return_and_says_the_real_silence() {
        // The agent's clock 60 s behind the collector's (a NAS without NTP): its newest
        // sample always looks a minute old.
        let c = cfg(&["host_lost.for=10s"]);
        let for_ms = 10_000;
        let mut r = HostLost::default();
        let behind = |received, connected, now: u64| {
            let mut o = host(received, connected, now - 60_000);
            o.now_ms = now;
            o.hosts[0].clock_offset_ms = Some(-60_000);
            o
        };
        let mut t = 100_000;
        assert!(!r.eval(&c, &behind(5, true, t))[0].active);
        // Silent from t = 100 s, lost once `for` has passed.
        while t < 100_000 + 30_000 {
            t += 1_000;
            r.eval(&c, &behind(5, false, t));
        }
        assert!(r.eval(&c, &behind(5, false, t))[0].active);
        // Back at t = 130 s, one record a second.
        let back_at = t + 1_000;
        let mut resolved = None;
        let mut received = 5;
        for k in 0..60u64 {
            let now = back_at + k * 1_000;
            received += 1;
            let v = r.eval(&c, &behind(received, true, now));
            if !v[0].active {
                resolved = Some((now, v[0].summary.clone()));
                break;
            }
        }
        let (at, summary) = resolved.expect("resolved");
        assert!(
            at <= back_at + for_ms + 2_000,
            "resolved {} s after the return",
            (at - back_at) / 1000
        );
        assert!(summary.contains("back after 31 s silent"), "{summary}");
    }

    fn flow(ms: u64, mb: f64) -> Obs {
        Obs {
            now_ms: ms,
            flow_bps: mb * 1e6,
            flow_ends: Some("src → dst".into()),
            ..Default::default()
        }
    }

    #[test]
    fn stall_only_after_a_transfer_and_for_its_time() {
        let c = cfg(&["stall.for=10s", "stall.after_for=5s"]);
        let mut s = Stall::default();
        // Slow from the start: no transfer was under way, no stall.
        for t in 0..30 {
            assert!(!s.eval(&c, &flow(t * 1000, 0.1))[0].active);
        }
        let mut t = 30_000;
        for _ in 0..6 {
            assert!(!s.eval(&c, &flow(t, 50.0))[0].active);
            t += 1000;
        }
        let stalled_at = t;
        let mut fired_at = None;
        while t < stalled_at + 20_000 {
            if s.eval(&c, &flow(t, 0.01))[0].active && fired_at.is_none() {
                fired_at = Some(t);
            }
            t += 1000;
        }
        assert_eq!(fired_at, Some(stalled_at + 10_000));
        let back = s.eval(&c, &flow(t, 40.0));
        assert!(!back[0].active);
        assert!(
            back[0].summary.contains("back at 40.0 MB/s"),
            "{}",
            back[0].summary
        );
        // Slow again right away: needs a transfer under way again first.
        for k in 1..30 {
            assert!(!s.eval(&c, &flow(t + k * 1000, 0.01))[0].active);
        }
    }

    fn exit(at: u64, signal: &str) -> ExitObs {
        ExitObs {
            host: "nas".into(),
            pid: at as u32,
            process: "worker".into(),
            cmdline: None,
            at_ms: at,
            ended: format!("died by {signal}"),
            cause: Cause::Killed,
            evidence: vec![],
        }
    }

    #[test]
    fn a_restart_loop_is_one_death_alert_counted() {
        let c = cfg(&["death.quiet=30s"]);
        let mut d = Death::default();
        let mut o = Obs {
            now_ms: 1_000,
            exits: vec![exit(1_000, "SIGKILL")],
            ..Default::default()
        };
        let v = d.eval(&c, &o);
        assert_eq!((v.len(), v[0].active, v[0].count), (1, true, 1));
        // The same exit seen again (windows overlap) is not counted twice.
        o.now_ms = 5_000;
        o.exits.push(exit(5_000, "SIGKILL"));
        assert_eq!(d.eval(&c, &o)[0].count, 2);
        o.now_ms = 9_000;
        o.exits = vec![exit(5_000, "SIGKILL"), exit(9_000, "SIGKILL")];
        let v = d.eval(&c, &o);
        assert_eq!(v[0].count, 3);
        assert!(v[0].summary.contains("died by SIGKILL"), "{}", v[0].summary);
        // An exit of a process nobody watches is nothing.
        o.exits = vec![ExitObs {
            process: "bash".into(),
            ..exit(10_000, "SIGKILL")
        }];
        assert_eq!(d.eval(&c, &o).len(), 1);
        o.exits.clear();
        o.now_ms = 40_000;
        let v = d.eval(&c, &o);
        assert!(!v[0].active);
        assert!(v[0].summary.contains("died 3 time(s)"), "{}", v[0].summary);
    }

    #[test]
    fn deaths_of_many_names_fold_into_one_alert_of_the_host() {
        let c = cfg(&["death.quiet=30s"]);
        let mut d = Death::default();
        // 2,000 names dying 5 ms apart, each watched ("worker-N").
        let exits: Vec<ExitObs> = (0..2_000u64)
            .map(|i| ExitObs {
                process: format!("worker-{i}"),
                ..exit(1_000 + i * 5, "SIGKILL")
            })
            .collect();
        let o = Obs {
            now_ms: 11_000,
            exits,
            ..Default::default()
        };
        let v = d.eval(&c, &o);
        let active: Vec<&Cond> = v.iter().filter(|c| c.active).collect();
        assert_eq!(active.len(), DEATH_NAMES_MAX + 1, "{active:?}");
        let many = active
            .iter()
            .find(|c| c.key == "nas/*")
            .expect("the folded alert");
        assert_eq!(many.count, 2_000 - DEATH_NAMES_MAX as u64);
        assert!(
            many.summary
                .starts_with("nas: 1997 processes of 1997 names died since"),
            "{}",
            many.summary
        );
        // Seen again (the windows overlap): counted once.
        assert_eq!(d.eval(&c, &o).iter().filter(|c| c.active).count(), 4);
        let again = d.eval(&c, &o);
        assert_eq!(
            again.iter().find(|c| c.key == "nas/*").map(|c| c.count),
            Some(1_997)
        );
    }
}
