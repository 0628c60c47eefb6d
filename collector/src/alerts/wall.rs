//! wall_changed (off by default: `--alert wall_changed=on`): the verdict's wall (host and
//! resource of the report's bottleneck over the engine's recent seconds) moved to another host
//! or resource and stayed there for `wall_changed.for`. Each alert names the new wall; it is
//! resolved when the wall moves on again (and the next one fires).

use super::config::{AlertConfig, Rule};
use super::rules::{Cond, Obs};

/// The rule's memory.
#[derive(Debug, Default)]
pub(crate) struct WallChanged {
    /// The wall held for `for` last ("dst disk"), if any yet.
    held: Option<String>,
    /// The wall seen now and since when.
    candidate: Option<(Option<String>, u64)>,
    /// The key of the alert raised for the wall held now.
    raised: Option<String>,
    /// A key whose wall is gone: reported inactive once (resolves its alert).
    gone: Vec<String>,
}

impl WallChanged {
    pub(crate) fn eval(&mut self, c: &AlertConfig, o: &Obs) -> Vec<Cond> {
        let for_ms = c.set.wall_changed_for.as_millis() as u64;
        let now = o.wall.clone();
        match &self.candidate {
            Some((w, _)) if *w == now => {}
            _ => self.candidate = Some((now.clone(), o.now_ms)),
        }
        let since = self.candidate.as_ref().map_or(o.now_ms, |c| c.1);
        let mut out: Vec<Cond> = self
            .gone
            .drain(..)
            .map(|key| cond(key, false, String::new(), None))
            .collect();
        if o.now_ms.saturating_sub(since) >= for_ms && now.is_some() && now != self.held {
            let was = self.held.replace(now.clone().unwrap_or_default());
            if let Some(old) = self.raised.take() {
                out.push(cond(
                    old,
                    false,
                    format!("the wall moved on to {}", now.clone().unwrap_or_default()),
                    None,
                ));
            }
            // The first wall of a run is no change.
            if was.is_some() {
                self.raised = now.clone();
            }
        }
        if let Some(key) = &self.raised {
            out.push(cond(
                key.clone(),
                true,
                format!(
                    "the wall moved to {key} and stayed there {}",
                    nasprobe_analysis::time::dur(o.now_ms.saturating_sub(since) as f64 / 1000.0)
                ),
                Some(since),
            ));
            if o.verdict.is_some() {
                out.last_mut()
                    .expect("pushed")
                    .evidence
                    .extend(o.verdict.iter().cloned());
            }
        }
        out
    }
}

fn cond(key: String, active: bool, summary: String, since_ms: Option<u64>) -> Cond {
    Cond {
        rule: Rule::WallChanged,
        host: key.split_whitespace().next().map(str::to_string),
        key,
        active,
        summary,
        evidence: Vec::new(),
        count: 1,
        since_ms,
        last_ms: None,
    }
}

super::rules::condition!(WallChanged, Rule::WallChanged);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::config::AlertArgs;

    fn at(ms: u64, wall: &str) -> Obs {
        Obs {
            now_ms: ms,
            wall: (!wall.is_empty()).then(|| wall.to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn a_moved_wall_fires_once_it_held_and_resolves_when_it_moves_on() {
        let c = AlertConfig::resolve(
            &AlertArgs {
                alert: vec!["wall_changed=on".into(), "wall_changed.for=10s".into()],
                ..Default::default()
            },
            None,
        )
        .unwrap();
        assert!(c.is_on(Rule::WallChanged));
        let mut w = WallChanged::default();
        let active = |v: &[Cond]| {
            v.iter()
                .filter(|c| c.active)
                .map(|c| c.key.clone())
                .collect::<Vec<_>>()
        };
        // The first wall of the run is no change; a short blip is none either.
        for s in 0..30 {
            let wall = if (20..25).contains(&s) {
                "src cpu_thread"
            } else {
                "dst disk"
            };
            assert!(
                active(&w.eval(&c, &at(s * 1000, wall))).is_empty(),
                "at {s}"
            );
        }
        let mut fired = None;
        for s in 30..50 {
            if !active(&w.eval(&c, &at(s * 1000, "dst nic"))).is_empty() && fired.is_none() {
                fired = Some(s);
            }
        }
        assert_eq!(fired, Some(40));
        let v = w.eval(&c, &at(60_000, "src disk"));
        assert!(v.iter().any(|c| c.key == "dst nic" && c.active));
        let mut resolved = false;
        for s in 61..75 {
            let v = w.eval(&c, &at(s * 1000, "src disk"));
            resolved |= v.iter().any(|c| c.key == "dst nic" && !c.active);
        }
        assert!(resolved);
        assert!(
            !AlertConfig::resolve(&AlertArgs::default(), None)
                .unwrap()
                .is_on(Rule::WallChanged)
        );
    }
}
