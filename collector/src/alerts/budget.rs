//! The notification budget (issue 39): at most [`NOTIFY_PER_MINUTE`] notifications queued per
//! receiver in any minute, whatever an agent sends; what is held back is counted and said in
//! one summary notification as soon as the receiver has room again (the summary takes a slot
//! of its own, so a receiver never sees more than the budget). The outbox and the alert table
//! are bounded too ([`OUTBOX_KEEP`], [`ALERTS_KEEP`]).

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::config::Rule;

/// Notifications queued per receiver in any 60 s: a person reads a handful a minute; an agent
/// that makes a new process name die every few ms must not turn into thousands of POSTs.
pub(crate) const NOTIFY_PER_MINUTE: usize = 20;
/// The budget's window.
pub(crate) const BUDGET_WINDOW_MS: u64 = 60_000;
/// Outbox rows kept: beyond it the oldest delivered go first, then the oldest given up, then
/// the oldest still waiting (a receiver down for days at the full budget).
pub(crate) const OUTBOX_KEEP: u64 = 10_000;
/// Alert rows kept: beyond it the oldest resolved go first.
pub(crate) const ALERTS_KEEP: u64 = 10_000;
/// Alert keys a summary names (the rest are counted).
const KEYS_SHOWN: usize = 8;

/// Each receiver's room in the last minute.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    per: HashMap<String, Room>,
}

#[derive(Debug, Default)]
struct Room {
    /// When each notification of the last minute was queued.
    sent: VecDeque<u64>,
    /// Held back since the last summary, by rule.
    held: BTreeMap<Rule, u64>,
    /// The first held keys ("rule key").
    keys: Vec<String>,
    held_from_ms: u64,
}

impl Room {
    fn expire(&mut self, now_ms: u64) {
        while self
            .sent
            .front()
            .is_some_and(|&t| t + BUDGET_WINDOW_MS <= now_ms)
        {
            self.sent.pop_front();
        }
    }

    fn has_room(&self) -> bool {
        self.sent.len() < NOTIFY_PER_MINUTE
    }
}

/// What a summary says: how many were held back since when, by rule, and the first keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeldBack {
    pub from_ms: u64,
    pub total: u64,
    pub by_rule: Vec<(Rule, u64)>,
    pub keys: Vec<String>,
}

impl HeldBack {
    /// The rule held back most (the summary's `rule`).
    pub(crate) fn rule(&self) -> Rule {
        self.by_rule
            .iter()
            .max_by_key(|(_, n)| *n)
            .map_or(Rule::Death, |(r, _)| *r)
    }

    pub(crate) fn summary(&self) -> String {
        let rules: Vec<String> = self
            .by_rule
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        format!(
            "{} notification(s) held back since {} (at most {NOTIFY_PER_MINUTE} a minute per \
             receiver): {}; `nasprobe alerts` lists every alert",
            self.total,
            super::rules::clock(self.from_ms),
            rules.join(", ")
        )
    }
}

impl Budget {
    /// Notifications queued for each receiver in the last minute before `now_ms` (the start:
    /// a restarted `record` keeps to the same minute).
    pub(crate) fn restore(&mut self, queued: &[(String, u64)], now_ms: u64) {
        for (rc, at) in queued {
            if at + BUDGET_WINDOW_MS > now_ms {
                self.per.entry(rc.clone()).or_default().sent.push_back(*at);
            }
        }
        for r in self.per.values_mut() {
            r.sent.make_contiguous().sort_unstable();
        }
    }

    /// Whether `receiver` may be sent a notification of `rule`/`key` now (then it counts);
    /// else it is counted as held back.
    pub(crate) fn take(&mut self, receiver: &str, now_ms: u64, rule: Rule, key: &str) -> bool {
        let r = self.per.entry(receiver.to_string()).or_default();
        r.expire(now_ms);
        if r.has_room() && r.held.is_empty() {
            r.sent.push_back(now_ms);
            return true;
        }
        if r.held.is_empty() {
            r.held_from_ms = now_ms;
        }
        *r.held.entry(rule).or_default() += 1;
        if r.keys.len() < KEYS_SHOWN {
            r.keys.push(format!("{rule} {key}"));
        }
        false
    }

    /// The summaries due now: each receiver holding some back that has room again (the
    /// summary takes its slot).
    pub(crate) fn summaries(&mut self, now_ms: u64) -> Vec<(String, HeldBack)> {
        let mut out = Vec::new();
        for (rc, r) in &mut self.per {
            r.expire(now_ms);
            if r.held.is_empty() || !r.has_room() {
                continue;
            }
            r.sent.push_back(now_ms);
            let by_rule: Vec<(Rule, u64)> = std::mem::take(&mut r.held).into_iter().collect();
            out.push((
                rc.clone(),
                HeldBack {
                    from_ms: r.held_from_ms,
                    total: by_rule.iter().map(|(_, n)| n).sum(),
                    by_rule,
                    keys: std::mem::take(&mut r.keys),
                },
            ));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_gets_the_budget_then_one_summary_per_receiver() {
        let mut b = Budget::default();
        let mut sent = 0;
        // 5,000 notifications in 50 s to one receiver.
        for i in 0..5_000u64 {
            if b.take("webhook=x", i * 10, Rule::Death, &format!("nas/p{i}")) {
                sent += 1;
            }
        }
        assert_eq!(sent, NOTIFY_PER_MINUTE);
        assert!(
            b.summaries(50_000).is_empty(),
            "no room before the minute is over"
        );
        let s = b.summaries(60_000);
        assert_eq!(s.len(), 1);
        let h = &s[0].1;
        assert_eq!(h.total, 5_000 - NOTIFY_PER_MINUTE as u64);
        assert_eq!(h.rule(), Rule::Death);
        assert_eq!(h.keys.len(), KEYS_SHOWN);
        assert!(
            h.summary().starts_with("4980 notification(s) held back"),
            "{}",
            h.summary()
        );
        // The summary took the slot the first minute freed: what comes next waits for the
        // next summary, never past the budget.
        let mut next = 0;
        for i in 0..100u64 {
            next += usize::from(b.take("webhook=x", 60_000 + i, Rule::Stall, "flow"));
        }
        assert_eq!(next, 0);
        let s = b.summaries(120_000);
        assert_eq!(
            (s.len(), s[0].1.total, s[0].1.rule()),
            (1, 100, Rule::Stall)
        );
        assert!(b.take("webhook=x", 120_001, Rule::Stall, "flow"));
    }

    #[test]
    fn a_restart_keeps_to_the_same_minute() {
        let mut b = Budget::default();
        let q: Vec<(String, u64)> = (0..NOTIFY_PER_MINUTE as u64)
            .map(|i| ("ntfy=x".to_string(), 1_000 + i))
            .collect();
        b.restore(&q, 30_000);
        assert!(!b.take("ntfy=x", 30_000, Rule::HostLost, "nas"));
        assert!(b.take("webhook=y", 30_000, Rule::HostLost, "nas"));
    }
}
