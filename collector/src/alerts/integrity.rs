//! integrity: the collector refused something of a host — a connection ended on frames that
//! failed authentication (a wrong MAC), the host was marked bad, records were rejected by the
//! plausibility checks or dropped over the caps (the counters `net::gate::note_refusal` keeps;
//! each refusal is also a stored row that `report` lists under `refusals[]`). One alert per
//! host and outage, counted; resolved once no refusal came for `integrity.quiet`.

use std::collections::HashMap;

use super::config::{AlertConfig, Rule};
use super::rules::{Cond, Obs, Refused, clock, mins};

impl Refused {
    fn total(self) -> u64 {
        self.tampered + self.marked_bad + self.rejected + self.dropped
    }

    /// What grew from `before` to `self`.
    fn since(self, before: Refused) -> Refused {
        Refused {
            tampered: self.tampered.saturating_sub(before.tampered),
            marked_bad: self.marked_bad.saturating_sub(before.marked_bad),
            rejected: self.rejected.saturating_sub(before.rejected),
            dropped: self.dropped.saturating_sub(before.dropped),
        }
    }

    fn add(self, o: Refused) -> Refused {
        Refused {
            tampered: self.tampered + o.tampered,
            marked_bad: self.marked_bad + o.marked_bad,
            rejected: self.rejected + o.rejected,
            dropped: self.dropped + o.dropped,
        }
    }

    /// The kinds that occurred, in a few words each.
    fn short(self) -> Vec<String> {
        let mut v = Vec::new();
        if self.tampered > 0 {
            v.push(format!("{} connection(s) with a wrong MAC", self.tampered));
        }
        if self.marked_bad > 0 {
            v.push(format!("marked bad {} time(s)", self.marked_bad));
        }
        if self.rejected > 0 {
            v.push(format!("{} record(s) rejected", self.rejected));
        }
        if self.dropped > 0 {
            v.push(format!("{} record(s) over the caps dropped", self.dropped));
        }
        v
    }

    /// One line per kind that occurred.
    fn lines(self) -> Vec<String> {
        let mut v = Vec::new();
        if self.tampered > 0 {
            v.push(format!(
                "{} connection(s) ended on frames that failed authentication (a wrong MAC: \
                 altered, dropped, replayed or injected between the agent and the collector)",
                self.tampered
            ));
        }
        if self.marked_bad > 0 {
            v.push(format!(
                "{} connection(s) ended with the host marked bad (invalid frames or protocol)",
                self.marked_bad
            ));
        }
        if self.rejected > 0 {
            v.push(format!(
                "{} record(s) rejected by the collector's checks (implausible values)",
                self.rejected
            ));
        }
        if self.dropped > 0 {
            v.push(format!(
                "{} record(s) dropped over the collector's caps (a flood)",
                self.dropped
            ));
        }
        v
    }
}

/// The rule's memory.
#[derive(Debug, Default)]
pub(crate) struct Integrity {
    hosts: HashMap<String, HostRun>,
}

#[derive(Debug, Default)]
struct HostRun {
    /// The host's counters at the last evaluation.
    seen: Refused,
    outage: Option<Outage>,
}

#[derive(Debug)]
struct Outage {
    first_ms: u64,
    /// The newest refusal counted.
    last_ms: u64,
    /// Refused in this outage on this run, by kind.
    counts: Refused,
    /// Counted by an earlier run (an alert still firing in the store).
    earlier: u64,
    /// The last invalid thing the agent sent, as the connection says it.
    bad: Option<String>,
}

impl Outage {
    fn count(&self) -> u64 {
        self.earlier + self.counts.total()
    }
}

impl Integrity {
    /// A host whose integrity alert an earlier run left firing: its outage goes on from there.
    pub(crate) fn restore(&mut self, host: &str, first_ms: u64, last_ms: u64, count: u64) {
        self.hosts.entry(host.to_string()).or_default().outage = Some(Outage {
            first_ms,
            last_ms,
            counts: Refused::default(),
            earlier: count,
            bad: None,
        });
    }

    pub(crate) fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond> {
        let quiet = c.set.integrity_quiet.as_millis() as u64;
        for h in &o.hosts {
            let run = self.hosts.entry(h.name.clone()).or_default();
            let new = h.refused.since(run.seen);
            run.seen = h.refused;
            if new.total() > 0 {
                let out = run.outage.get_or_insert(Outage {
                    first_ms: o.now_ms,
                    last_ms: o.now_ms,
                    counts: Refused::default(),
                    earlier: 0,
                    bad: None,
                });
                out.counts = out.counts.add(new);
                out.last_ms = o.now_ms;
                if h.bad.is_some() {
                    out.bad.clone_from(&h.bad);
                }
            }
        }
        let mut out = Vec::new();
        for (host, run) in &mut self.hosts {
            let Some(g) = &run.outage else {
                continue;
            };
            let mut evidence = g.counts.lines();
            if g.earlier > 0 {
                evidence.push(format!("{} refusal(s) counted before a restart", g.earlier));
            }
            if let Some(b) = &g.bad {
                evidence.push(format!("last: {b}"));
            }
            evidence.push(
                "nothing refused was stored as data; `nasprobe report` lists each refusal under \
                 \"Refused by the collector\" (refusals[] in --json)"
                    .into(),
            );
            let mut what = g.counts.short();
            if g.earlier > 0 {
                what.push(format!("{} before a restart", g.earlier));
            }
            let what = what.join(", ");
            let active = o.now_ms.saturating_sub(g.last_ms) < quiet;
            let summary = if active {
                format!(
                    "{host}: the collector refused what it received since {}: {what}",
                    clock(g.first_ms)
                )
            } else {
                format!(
                    "{host}: no refusal for {}; from {} to {}: {what}",
                    mins(quiet),
                    clock(g.first_ms),
                    clock(g.last_ms)
                )
            };
            out.push(Cond {
                rule: Rule::Integrity,
                key: host.clone(),
                host: Some(host.clone()),
                active,
                summary,
                evidence,
                count: g.count(),
                since_ms: Some(g.first_ms),
                last_ms: Some(g.last_ms),
            });
            if !active {
                run.outage = None;
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

super::rules::condition!(Integrity, Rule::Integrity);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::rules::HostObs;

    fn at(ms: u64, refused: Refused) -> Obs {
        Obs {
            now_ms: ms,
            hosts: vec![HostObs {
                name: "nas".into(),
                connected: true,
                refused,
                bad: (refused.rejected > 0).then(|| "record 7 rejected: cpu over 100 %".into()),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn one_alert_per_outage_counted_and_resolved_after_the_quiet() {
        let c = crate::alerts::rules::tests::cfg(&["integrity.quiet=10s"]);
        let mut r = Integrity::default();
        assert!(r.eval(&c, &at(0, Refused::default())).is_empty());
        let mac = Refused {
            tampered: 1,
            ..Default::default()
        };
        let v = r.eval(&c, &at(1_000, mac));
        assert_eq!((v.len(), v[0].active, v[0].count), (1, true, 1), "{v:?}");
        assert!(
            v[0].summary.contains("1 connection(s) with a wrong MAC"),
            "{}",
            v[0].summary
        );
        assert!(
            v[0].evidence[0].contains("failed authentication"),
            "{:?}",
            v[0].evidence
        );
        // More of it within the quiet: the same outage, counted.
        let both = Refused { rejected: 2, ..mac };
        let v = r.eval(&c, &at(6_000, both));
        assert_eq!(
            (v[0].active, v[0].count, v[0].since_ms),
            (true, 3, Some(1_000))
        );
        assert!(
            v[0].evidence.iter().any(|e| e.contains("cpu over 100 %")),
            "{:?}",
            v[0].evidence
        );
        assert!(r.eval(&c, &at(15_000, both))[0].active);
        let v = r.eval(&c, &at(16_000, both));
        assert!(!v[0].active);
        assert!(
            v[0].summary.contains("no refusal for 10 s"),
            "{}",
            v[0].summary
        );
        assert!(r.eval(&c, &at(17_000, both)).is_empty());
        // A new refusal: a new outage.
        let v = r.eval(&c, &at(30_000, Refused { dropped: 5, ..both }));
        assert_eq!(
            (v[0].active, v[0].count, v[0].since_ms),
            (true, 5, Some(30_000))
        );
        // Restored from the store after a restart: resolved after the quiet of its last one.
        let mut r = Integrity::default();
        r.restore("nas", 1_000, 2_000, 4);
        let v = r.eval(&c, &at(5_000, Refused::default()));
        assert_eq!((v[0].active, v[0].count), (true, 4));
        assert!(!r.eval(&c, &at(12_000, Refused::default()))[0].active);
    }
}
