//! The alerts of the store as `nasprobe alerts` and `report` show them: lines and JSON.

use nasprobe_analysis::time::rfc3339;
use serde_json::json;

use super::state::{self, AlertRow};

/// Text from the store (host names and command lines come from the NAS) made safe to print.
pub(crate) fn esc(s: &str) -> String {
    nasprobe_proto::sanitize::text(s)
}

/// The alerts open at some time in `[from, to]` (None: open ended); none when the store has
/// no alert tables (an old file read as it is).
pub(crate) fn of_window(
    store: &crate::store::StoreReader,
    from: Option<u64>,
    to: Option<u64>,
) -> anyhow::Result<Vec<AlertRow>> {
    if !state::has_tables(store.conn()) {
        return Ok(Vec::new());
    }
    let to = to.unwrap_or_else(nasprobe_proto::time::now_ms);
    Ok(state::load_window(store.conn(), from.unwrap_or(0), to)?)
}

/// The report's lines of the alerts ("" when none).
pub(crate) fn text_lines(alerts: &[AlertRow]) -> String {
    if alerts.is_empty() {
        return String::new();
    }
    let mut t = format!("\nAlerts ({}):\n", alerts.len());
    for a in alerts {
        t.push_str(&format!("  {}\n", esc(&alert_line(a))));
    }
    t
}

/// "firing   stall       since 2026-...  count 1  src → dst: ..."
pub(crate) fn alert_line(a: &AlertRow) -> String {
    let when = match a.ended_ms {
        Some(e) => format!("{} .. {}", rfc3339(a.started_ms), rfc3339(e)),
        None => format!("since {}", rfc3339(a.started_ms)),
    };
    format!(
        "{:<8} {:<10} {when}  count {}  {}",
        a.state, a.rule, a.count, a.summary
    )
}

/// An alert as `alerts --json` and `report --json` give it.
pub(crate) fn alert_json(a: &AlertRow) -> serde_json::Value {
    json!({
        "rule": a.rule,
        "state": a.state,
        "host": a.host,
        "key": a.key,
        "summary": a.summary,
        "evidence": a.evidence,
        "started_at": rfc3339(a.started_ms),
        "ended_at": a.ended_ms.map(rfc3339),
        "count": a.count,
    })
}
