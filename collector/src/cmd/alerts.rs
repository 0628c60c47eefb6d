//! `nasprobe alerts`: the alerts of the store (firing first) and the notifications that could
//! not be delivered yet or at all; `--list`: the rules in force.

use std::time::Duration;

use nasprobe_analysis::time::rfc3339;
use serde_json::json;

use crate::alerts::listing::{alert_json, alert_line, esc};
use crate::alerts::state;
use crate::context::Context;

pub fn run(
    c: &Context,
    list: bool,
    since: Option<Duration>,
    json_out: bool,
    args: &crate::alerts::AlertArgs,
) -> anyhow::Result<()> {
    let mut out = crate::output::stdout();
    if list {
        let cfg = c.alert_config(args)?;
        out.text(&cfg.list_text())?;
        return Ok(out.finish()?);
    }
    let store = c.open_store_read()?;
    let conn = store.conn();
    anyhow::ensure!(
        state::has_tables(conn),
        "database {} has no alerts yet",
        store.path().display()
    );
    let now = nasprobe_proto::time::now_ms();
    let from = since.map_or(0, |d| now.saturating_sub(d.as_millis() as u64));
    let mut alerts = state::load_window(conn, from, now)?;
    // Firing ones first, each group oldest first.
    alerts.sort_by_key(|a| (a.state != state::AlertState::Firing, a.started_ms, a.id));
    let undelivered = state::undelivered(conn)?;
    let delivered = state::delivered_counts(conn)?;
    if json_out {
        let v = json!({
            "alerts": alerts.iter().map(alert_json).collect::<Vec<_>>(),
            "undelivered": undelivered.iter().map(|u| {
                let p: serde_json::Value = serde_json::from_str(&u.payload).unwrap_or_default();
                json!({
                    "receiver": u.receiver,
                    "rule": p.get("rule"),
                    "state": p.get("state"),
                    "summary": p.get("summary"),
                    "queued_at": rfc3339(u.created_ms),
                    "attempts": u.attempts,
                    "next_attempt_at": (!u.given_up).then(|| rfc3339(u.next_ms)),
                    "given_up": u.given_up,
                    "error": u.error,
                })
            }).collect::<Vec<_>>(),
            "delivered": delivered.iter().map(|(r, n)| json!({"receiver": r, "count": n})).collect::<Vec<_>>(),
        });
        out.line(&serde_json::to_string_pretty(&v)?)?;
        return Ok(out.finish()?);
    }
    let mut t = String::new();
    if alerts.is_empty() {
        t.push_str("no alerts\n");
    }
    for a in &alerts {
        t.push_str(&format!("{}\n", esc(&alert_line(a))));
    }
    for (r, n) in &delivered {
        t.push_str(&format!("delivered to {}: {n}\n", esc(r)));
    }
    if !undelivered.is_empty() {
        t.push_str(&format!("not delivered ({}):\n", undelivered.len()));
    }
    for u in &undelivered {
        let p: serde_json::Value = serde_json::from_str(&u.payload).unwrap_or_default();
        let what = format!(
            "{} {}: {}",
            p.get("rule").and_then(|v| v.as_str()).unwrap_or("?"),
            p.get("state").and_then(|v| v.as_str()).unwrap_or("?"),
            p.get("summary").and_then(|v| v.as_str()).unwrap_or("")
        );
        let status = if u.given_up {
            format!("given up after {} attempts", u.attempts)
        } else if u.attempts == 0 {
            "waiting".to_string()
        } else {
            format!(
                "{} attempts, next at {}",
                u.attempts,
                &rfc3339(u.next_ms)[11..19]
            )
        };
        t.push_str(&format!(
            "  to {}: {what} ({status}{})\n",
            esc(&u.receiver),
            u.error
                .as_deref()
                .map(|e| format!("; last error: {}", esc(e)))
                .unwrap_or_default()
        ));
    }
    out.text(&t)?;
    Ok(out.finish()?)
}
