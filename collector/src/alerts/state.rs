//! Alert state: each alert fires once, is sent again at most every `repeat` while it lasts and
//! is resolved once ([`step`], pure). Its rows and the notifications still to deliver live in
//! the store (`alerts`, `alert_outbox`, schema 6), written in one transaction per step, so a
//! `record` killed and restarted neither repeats an alert nor loses one.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::config::Rule;
use super::rules::Cond;

/// Where an alert is: firing (sent, maybe repeated) or resolved (sent once more, closed). The
/// store's `state` text and the webhook's `state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AlertState {
    Firing,
    Resolved,
}

impl AlertState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
        }
    }
}

impl std::fmt::Display for AlertState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl rusqlite::ToSql for AlertState {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::ToSql for Rule {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.name().into())
    }
}

/// One alert as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlertRow {
    /// 0 until stored.
    pub id: i64,
    pub rule: Rule,
    pub key: String,
    pub host: Option<String>,
    pub state: AlertState,
    pub started_ms: u64,
    pub ended_ms: Option<u64>,
    /// When it was last sent (fired or repeated).
    pub sent_ms: u64,
    /// The newest occurrence counted (a death loop's last death), else when it began.
    pub last_ms: u64,
    pub count: u64,
    pub summary: String,
    pub evidence: Vec<String>,
}

/// What a step does to one alert: its row afterwards and what to send, if anything.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transition {
    pub row: AlertRow,
    /// `Some(Firing)` first and on a repeat, `Some(Resolved)` once at the end.
    pub send: Option<AlertState>,
}

/// The transitions from the open (firing) alerts and the rules' conditions at `now_ms`.
pub(crate) fn step(
    open: &HashMap<(Rule, String), AlertRow>,
    conds: &[Cond],
    now_ms: u64,
    repeat_ms: u64,
) -> Vec<Transition> {
    let mut out = Vec::new();
    for c in conds {
        let k = (c.rule, c.key.clone());
        match (open.get(&k), c.active) {
            (None, true) => out.push(Transition {
                row: AlertRow {
                    id: 0,
                    rule: c.rule,
                    key: c.key.clone(),
                    host: c.host.clone(),
                    state: AlertState::Firing,
                    started_ms: c.since_ms.unwrap_or(now_ms).min(now_ms),
                    ended_ms: None,
                    sent_ms: now_ms,
                    last_ms: c.last_ms.unwrap_or(now_ms),
                    count: c.count,
                    summary: c.summary.clone(),
                    evidence: c.evidence.clone(),
                },
                send: Some(AlertState::Firing),
            }),
            (Some(row), true) => {
                let mut r = row.clone();
                r.count = c.count;
                r.last_ms = c.last_ms.unwrap_or(r.last_ms);
                r.summary = c.summary.clone();
                r.evidence = c.evidence.clone();
                let send = (now_ms.saturating_sub(row.sent_ms) >= repeat_ms).then(|| {
                    r.sent_ms = now_ms;
                    AlertState::Firing
                });
                // A changed count is kept (cheap); the text changes every second ("for 3 min").
                if send.is_some() || r.count != row.count {
                    out.push(Transition { row: r, send });
                }
            }
            (Some(row), false) => {
                let mut r = row.clone();
                r.state = AlertState::Resolved;
                r.ended_ms = Some(now_ms);
                r.count = c.count.max(row.count);
                r.last_ms = c.last_ms.unwrap_or(r.last_ms);
                if !c.summary.is_empty() {
                    r.summary = c.summary.clone();
                }
                for e in &c.evidence {
                    if !r.evidence.contains(e) {
                        r.evidence.push(e.clone());
                    }
                }
                out.push(Transition {
                    row: r,
                    send: Some(AlertState::Resolved),
                });
            }
            (None, false) => {}
        }
    }
    out
}

fn state_of(s: &str) -> AlertState {
    if s == AlertState::Firing.as_str() {
        AlertState::Firing
    } else {
        AlertState::Resolved
    }
}

/// A stored alert; None for a rule this build does not know (a newer collector's), skipped.
fn row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<AlertRow>> {
    let evidence: String = r.get(10)?;
    let last: Option<i64> = r.get(11)?;
    let Some(rule) = Rule::parse(&r.get::<_, String>(1)?) else {
        return Ok(None);
    };
    Ok(Some(AlertRow {
        id: r.get(0)?,
        rule,
        key: r.get(2)?,
        host: r.get(3)?,
        state: state_of(&r.get::<_, String>(4)?),
        started_ms: r.get::<_, i64>(5)? as u64,
        ended_ms: r.get::<_, Option<i64>>(6)?.map(|v| v as u64),
        sent_ms: r.get::<_, i64>(7)? as u64,
        count: r.get::<_, i64>(8)? as u64,
        summary: r.get(9)?,
        evidence: serde_json::from_str(&evidence).unwrap_or_default(),
        last_ms: last.map_or(0, |v| v as u64),
    }))
}

const COLUMNS: &str =
    "id, rule, key, host, state, started_ms, ended_ms, sent_ms, count, summary, evidence, last_ms";

/// The firing alerts, by (rule, key).
pub(crate) fn load_open(c: &Connection) -> rusqlite::Result<HashMap<(Rule, String), AlertRow>> {
    let mut st = c.prepare(&format!(
        "SELECT {COLUMNS} FROM alerts WHERE state = 'firing'"
    ))?;
    let rows = st.query_map([], row_of)?;
    let mut m = HashMap::new();
    for r in rows {
        if let Some(r) = r? {
            m.insert((r.rule, r.key.clone()), r);
        }
    }
    Ok(m)
}

/// The alerts that were open at some time in `[from_ms, to_ms]`, oldest first.
pub(crate) fn load_window(
    c: &Connection,
    from_ms: u64,
    to_ms: u64,
) -> rusqlite::Result<Vec<AlertRow>> {
    let mut st = c.prepare(&format!(
        "SELECT {COLUMNS} FROM alerts WHERE started_ms <= ?2 AND (ended_ms IS NULL OR ended_ms >= ?1)
         ORDER BY started_ms, id"
    ))?;
    st.query_map(params![from_ms as i64, to_ms as i64], row_of)?
        .filter_map(Result::transpose)
        .collect()
}

/// The newest death counted per death alert key (resolved ones too): see `rules::Death`.
pub(crate) fn last_of_rule(c: &Connection, rule: Rule) -> rusqlite::Result<Vec<AlertRow>> {
    let mut st = c.prepare(&format!(
        "SELECT {COLUMNS} FROM alerts a WHERE rule = ?1 AND id = (SELECT MAX(id) FROM alerts b
         WHERE b.rule = a.rule AND b.key = a.key)"
    ))?;
    st.query_map([rule], row_of)?
        .filter_map(Result::transpose)
        .collect()
}

/// A notification still to deliver, or one given up.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub id: i64,
    pub receiver: String,
    pub payload: String,
    pub attempts: u32,
    pub next_ms: u64,
    pub error: Option<String>,
    pub given_up: bool,
    pub created_ms: u64,
}

/// Writes the transitions and, for each one that sends, one outbox row per receiver `to`
/// gives it (the budget's say), in one transaction. `payload` renders a row as sent.
pub(crate) fn commit(
    c: &Connection,
    ts: &mut [Transition],
    mut to: impl FnMut(&AlertRow) -> Vec<String>,
    now_ms: u64,
    payload: impl Fn(&AlertRow, AlertState) -> String,
) -> rusqlite::Result<()> {
    let tx = c.unchecked_transaction()?;
    for t in ts.iter_mut() {
        let r = &mut t.row;
        let ev = serde_json::to_string(&r.evidence).unwrap_or_else(|_| "[]".into());
        if r.id == 0 {
            tx.execute(
                "INSERT INTO alerts(rule, key, host, state, started_ms, ended_ms, sent_ms, count,
                 summary, evidence, last_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    r.rule,
                    r.key,
                    r.host,
                    r.state,
                    r.started_ms as i64,
                    r.ended_ms.map(|v| v as i64),
                    r.sent_ms as i64,
                    r.count as i64,
                    r.summary,
                    ev,
                    r.last_ms as i64
                ],
            )?;
            r.id = tx.last_insert_rowid();
        } else {
            tx.execute(
                "UPDATE alerts SET state = ?2, ended_ms = ?3, sent_ms = ?4, count = ?5,
                 summary = ?6, evidence = ?7, last_ms = ?8 WHERE id = ?1",
                params![
                    r.id,
                    r.state,
                    r.ended_ms.map(|v| v as i64),
                    r.sent_ms as i64,
                    r.count as i64,
                    r.summary,
                    ev,
                    r.last_ms as i64
                ],
            )?;
        }
        if let Some(state) = t.send {
            let receivers = to(r);
            if receivers.is_empty() {
                continue;
            }
            let body = payload(r, state);
            for rc in &receivers {
                tx.execute(
                    "INSERT INTO alert_outbox(alert, receiver, state, payload, created_ms, next_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    params![r.id, rc, state, body, now_ms as i64],
                )?;
            }
        }
    }
    tx.commit()
}

/// Queues one notification that is no alert's (the budget's summary: alert 0).
pub(crate) fn enqueue(
    c: &Connection,
    receiver: &str,
    state: AlertState,
    payload: &str,
    now_ms: u64,
) -> rusqlite::Result<()> {
    c.execute(
        "INSERT INTO alert_outbox(alert, receiver, state, payload, created_ms, next_ms)
         VALUES (0, ?1, ?2, ?3, ?4, ?4)",
        params![receiver, state, payload, now_ms as i64],
    )
    .map(|_| ())
}

/// (receiver, created) of the notifications queued from `from_ms` on (the budget's start).
pub(crate) fn queued_since(c: &Connection, from_ms: u64) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut st =
        c.prepare("SELECT receiver, created_ms FROM alert_outbox WHERE created_ms >= ?1")?;
    st.query_map([from_ms as i64], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
    })?
    .collect()
}

/// Keeps the outbox to `outbox_keep` rows (the oldest delivered go first, then the oldest given
/// up, then the oldest waiting) and the alerts to `alerts_keep` (the oldest resolved go).
/// Returns the rows deleted.
pub(crate) fn bound(c: &Connection, outbox_keep: u64, alerts_keep: u64) -> rusqlite::Result<usize> {
    let mut n = 0;
    for which in [
        "delivered_ms IS NOT NULL",
        "delivered_ms IS NULL AND given_up = 1",
        "delivered_ms IS NULL",
    ] {
        let rows: i64 = c.query_row("SELECT COUNT(*) FROM alert_outbox", [], |r| r.get(0))?;
        let over = rows - outbox_keep as i64;
        if over <= 0 {
            break;
        }
        n += c.execute(
            &format!(
                "DELETE FROM alert_outbox WHERE id IN (SELECT id FROM alert_outbox WHERE {which}
                 ORDER BY id LIMIT ?1)"
            ),
            [over],
        )?;
    }
    let rows: i64 = c.query_row("SELECT COUNT(*) FROM alerts", [], |r| r.get(0))?;
    let over = rows - alerts_keep as i64;
    if over > 0 {
        n += c.execute(
            "DELETE FROM alerts WHERE id IN (SELECT id FROM alerts WHERE state = 'resolved'
             ORDER BY id LIMIT ?1)",
            [over],
        )?;
    }
    Ok(n)
}

/// The oldest notification not delivered nor given up for `receiver`.
pub(crate) fn next_outgoing(c: &Connection, receiver: &str) -> rusqlite::Result<Option<Outgoing>> {
    c.query_row(
        "SELECT id, receiver, payload, attempts, next_ms, error, given_up, created_ms
         FROM alert_outbox WHERE receiver = ?1 AND delivered_ms IS NULL AND given_up = 0
         ORDER BY id LIMIT 1",
        [receiver],
        outgoing_of,
    )
    .optional()
}

fn outgoing_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Outgoing> {
    Ok(Outgoing {
        id: r.get(0)?,
        receiver: r.get(1)?,
        payload: r.get(2)?,
        attempts: r.get::<_, i64>(3)? as u32,
        next_ms: r.get::<_, i64>(4)? as u64,
        error: r.get(5)?,
        given_up: r.get::<_, i64>(6)? != 0,
        created_ms: r.get::<_, i64>(7)? as u64,
    })
}

/// Every notification not delivered (waiting or given up), oldest first.
pub(crate) fn undelivered(c: &Connection) -> rusqlite::Result<Vec<Outgoing>> {
    let mut st = c.prepare(
        "SELECT id, receiver, payload, attempts, next_ms, error, given_up, created_ms
         FROM alert_outbox WHERE delivered_ms IS NULL ORDER BY id",
    )?;
    st.query_map([], outgoing_of)?.collect()
}

/// Delivered counts per receiver.
pub(crate) fn delivered_counts(c: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut st = c.prepare(
        "SELECT receiver, COUNT(*) FROM alert_outbox WHERE delivered_ms IS NOT NULL
         GROUP BY receiver ORDER BY receiver",
    )?;
    st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
        .collect()
}

pub(crate) fn mark_delivered(c: &Connection, id: i64, now_ms: u64) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE alert_outbox SET delivered_ms = ?2, attempts = attempts + 1, error = NULL
         WHERE id = ?1",
        params![id, now_ms as i64],
    )
    .map(|_| ())
}

pub(crate) fn mark_failed(
    c: &Connection,
    id: i64,
    error: &str,
    next_ms: u64,
    give_up: bool,
) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE alert_outbox SET attempts = attempts + 1, error = ?2, next_ms = ?3,
         given_up = ?4 WHERE id = ?1",
        params![id, error, next_ms as i64, give_up as i64],
    )
    .map(|_| ())
}

/// Whether the store has the alert tables (schema 6 or later).
pub(crate) fn has_tables(c: &Connection) -> bool {
    c.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alerts'",
        [],
        |_| Ok(()),
    )
    .optional()
    .ok()
    .flatten()
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(active: bool, count: u64) -> Cond {
        Cond {
            rule: Rule::Stall,
            key: "flow".into(),
            host: None,
            active,
            summary: format!("s{count}"),
            evidence: vec![],
            count,
            since_ms: None,
            last_ms: None,
        }
    }

    /// Runs `step` as the engine does, keeping the open rows; returns what was sent per tick.
    fn run(ticks: &[(u64, bool)], repeat_ms: u64) -> Vec<(u64, AlertState)> {
        let mut open: HashMap<(Rule, String), AlertRow> = HashMap::new();
        let mut sent = Vec::new();
        let mut next_id = 1;
        for (now, active) in ticks {
            for mut t in step(&open, &[cond(*active, 1)], *now, repeat_ms) {
                if t.row.id == 0 {
                    t.row.id = next_id;
                    next_id += 1;
                }
                let k = (t.row.rule, t.row.key.clone());
                if t.row.state == AlertState::Firing {
                    open.insert(k, t.row.clone());
                } else {
                    open.remove(&k);
                }
                if let Some(s) = t.send {
                    sent.push((*now, s));
                }
            }
        }
        sent
    }

    #[test]
    fn fires_once_repeats_at_its_interval_resolves_once() {
        let mut ticks: Vec<(u64, bool)> = (0..=250)
            .map(|s| (s * 1000, (10..200).contains(&s)))
            .collect();
        ticks.extend((251..300).map(|s| (s * 1000, false)));
        let sent = run(&ticks, 60_000);
        assert_eq!(
            sent,
            vec![
                (10_000, AlertState::Firing),
                (70_000, AlertState::Firing),
                (130_000, AlertState::Firing),
                (190_000, AlertState::Firing),
                (200_000, AlertState::Resolved)
            ]
        );
    }

    #[test]
    fn an_old_store_migrates_to_the_alert_tables() {
        let dir = std::env::temp_dir().join(format!("np-alerts-mig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("old.db");
        let old = crate::store::Store::open_at_schema(&db, 5).unwrap();
        assert!(!has_tables(old.conn()));
        drop(old);
        let s = crate::store::Store::open(&db).unwrap();
        assert!(has_tables(s.conn()));
        assert!(load_open(s.conn()).unwrap().is_empty());
        drop(s);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn stored_state_survives_a_restart() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(super::super::base::SCHEMA).unwrap();
        let mut ts = step(&HashMap::new(), &[cond(true, 1)], 1000, 60_000);
        let to = |_: &AlertRow| vec!["webhook=http://x".to_string()];
        commit(&c, &mut ts, to, 1000, |_, s| s.as_str().into()).unwrap();
        // "Restarted": the open row comes back from the store, nothing is sent again.
        let open = load_open(&c).unwrap();
        assert_eq!(open.len(), 1);
        assert!(step(&open, &[cond(true, 1)], 2000, 60_000).is_empty());
        let mut ts = step(&open, &[cond(false, 1)], 3000, 60_000);
        assert_eq!(ts[0].send, Some(AlertState::Resolved));
        commit(&c, &mut ts, to, 3000, |_, s| s.as_str().into()).unwrap();
        assert!(load_open(&c).unwrap().is_empty());
        let first = next_outgoing(&c, "webhook=http://x").unwrap().unwrap();
        assert_eq!(first.payload, "firing");
        mark_delivered(&c, first.id, 4000).unwrap();
        let second = next_outgoing(&c, "webhook=http://x").unwrap().unwrap();
        assert_eq!(second.payload, "resolved");
        mark_failed(&c, second.id, "HTTP 500", 9000, true).unwrap();
        assert!(next_outgoing(&c, "webhook=http://x").unwrap().is_none());
        assert_eq!(undelivered(&c).unwrap().len(), 1);
        assert_eq!(load_window(&c, 0, 10_000).unwrap().len(), 1);
    }

    #[test]
    fn the_outbox_and_the_alerts_are_bounded_oldest_delivered_first() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(super::super::base::SCHEMA).unwrap();
        for i in 0..30 {
            enqueue(&c, "webhook=x", AlertState::Firing, "{}", i).unwrap();
        }
        for id in 1..=10 {
            mark_delivered(&c, id, 100).unwrap();
        }
        assert_eq!(bound(&c, 25, 100).unwrap(), 5);
        // The delivered went first: ids 6..=10 delivered are left, every waiting one too.
        assert_eq!(undelivered(&c).unwrap().len(), 20);
        assert_eq!(bound(&c, 12, 100).unwrap(), 13);
        let left = undelivered(&c).unwrap();
        assert_eq!((left.len(), left[0].id), (12, 19));
        assert_eq!(queued_since(&c, 25).unwrap().len(), 5);
    }
}
