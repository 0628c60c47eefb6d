//! What is sent: the webhook's JSON (schema [`SCHEMA`], docs/alerts.md), and from it ntfy's
//! publish request and Alertmanager's API v2 alert list.

use serde_json::{Value, json};

use super::state::{AlertRow, RESOLVED};

/// The webhook JSON's schema version (`schema` field); raised when a field changes meaning.
pub(crate) const SCHEMA: u32 = 1;

/// The webhook JSON of `row` sent as `state`; `db` names the store for the report command.
pub(crate) fn webhook_json(row: &AlertRow, state: &str, db: &str, now_ms: u64) -> String {
    let at = nasprobe_analysis::time::rfc3339;
    // The report of the alert's time: from a minute before it began.
    let since_s = now_ms.saturating_sub(row.started_ms) / 1000 + 60;
    let report = format!(
        "nasprobe --db {} report --since {since_s}s",
        shell_quote(db)
    );
    json!({
        "schema": SCHEMA,
        "id": row.id,
        "rule": row.rule,
        "state": state,
        "host": row.host,
        "key": row.key,
        "summary": row.summary,
        "evidence": row.evidence,
        "started_at": at(row.started_ms),
        "ended_at": (state == RESOLVED).then(|| at(row.ended_ms.unwrap_or(now_ms))),
        "count": row.count,
        "report": report,
        "sent_at": at(now_ms),
    })
    .to_string()
}

/// A path as one shell word.
fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// ntfy: the body and its headers (Title, Priority, Tags).
pub(crate) fn ntfy(payload: &str) -> (String, Vec<(&'static str, String)>) {
    let v: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let resolved = field(&v, "state") == RESOLVED;
    let rule = field(&v, "rule");
    let host = v.get("host").and_then(Value::as_str);
    let title = match (resolved, host) {
        (false, Some(h)) => format!("nasprobe: {rule} on {h}"),
        (false, None) => format!("nasprobe: {rule}"),
        (true, Some(h)) => format!("nasprobe: {rule} on {h} resolved"),
        (true, None) => format!("nasprobe: {rule} resolved"),
    };
    let mut body = field(&v, "summary").to_string();
    body.push('\n');
    body.push_str(field(&v, "report"));
    let headers = vec![
        // HTTP header values: no line breaks, ASCII only (the host name is the user's label).
        ("Title", ascii(&title)),
        ("Priority", if resolved { "default" } else { "high" }.into()),
        (
            "Tags",
            if resolved {
                format!("white_check_mark,{rule}")
            } else {
                format!("warning,{rule}")
            },
        ),
    ];
    (body, headers)
}

fn ascii(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// Alertmanager API v2: a list of one alert. A firing alert's `endsAt` lies `hold_s` ahead
/// (it is sent again before then while it lasts); a resolved one's is its end.
pub(crate) fn alertmanager(payload: &str, hold_s: u64) -> String {
    let v: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let resolved = field(&v, "state") == RESOLVED;
    let ends = if resolved {
        field(&v, "ended_at").to_string()
    } else {
        let now = nasprobe_proto::time::now_ms();
        nasprobe_analysis::time::rfc3339(now + hold_s * 1000)
    };
    let mut labels = json!({
        "alertname": format!("nasprobe_{}", field(&v, "rule")),
        "rule": field(&v, "rule"),
        "key": field(&v, "key"),
        "source": "nasprobe",
    });
    if let Some(h) = v.get("host").and_then(Value::as_str) {
        labels["host"] = Value::String(h.to_string());
    }
    let evidence: Vec<&str> = v
        .get("evidence")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    json!([{
        "labels": labels,
        "annotations": {
            "summary": field(&v, "summary"),
            "evidence": evidence.join("\n"),
            "report": field(&v, "report"),
            "count": v.get("count").map(Value::to_string).unwrap_or_default(),
        },
        "startsAt": field(&v, "started_at"),
        "endsAt": ends,
    }])
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::state::FIRING;

    fn row() -> AlertRow {
        AlertRow {
            id: 7,
            rule: "stall".into(),
            key: "flow".into(),
            host: Some("dst".into()),
            state: FIRING,
            started_ms: 1_700_000_000_000,
            ended_ms: Some(1_700_000_300_000),
            sent_ms: 0,
            last_ms: 0,
            count: 1,
            summary: "src → dst: the flow is at 0.01 MB/s".into(),
            evidence: vec!["Verdict: x".into()],
        }
    }

    #[test]
    fn webhook_fields() {
        let p = webhook_json(&row(), RESOLVED, "/tmp/my db", 1_700_000_300_000);
        let v: Value = serde_json::from_str(&p).unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["rule"], "stall");
        assert_eq!(v["state"], "resolved");
        assert_eq!(v["host"], "dst");
        assert_eq!(v["count"], 1);
        assert!(
            v["ended_at"]
                .as_str()
                .unwrap()
                .starts_with("2023-11-14T22:18:20")
        );
        assert_eq!(
            v["report"],
            "nasprobe --db '/tmp/my db' report --since 360s"
        );
        let f = webhook_json(&row(), FIRING, "/tmp/db", 1_700_000_100_000);
        assert!(serde_json::from_str::<Value>(&f).unwrap()["ended_at"].is_null());
    }

    #[test]
    fn ntfy_and_alertmanager_forms() {
        let p = webhook_json(&row(), FIRING, "/tmp/db", 1_700_000_100_000);
        let (body, h) = ntfy(&p);
        assert!(body.starts_with("src → dst"));
        assert_eq!(h[0], ("Title", "nasprobe: stall on dst".to_string()));
        assert_eq!(h[1].1, "high");
        let am: Value = serde_json::from_str(&alertmanager(&p, 7200)).unwrap();
        assert_eq!(am[0]["labels"]["alertname"], "nasprobe_stall");
        assert_eq!(am[0]["labels"]["host"], "dst");
        assert_eq!(am[0]["startsAt"], "2023-11-14T22:13:20Z");
        let r = webhook_json(&row(), RESOLVED, "/tmp/db", 1_700_000_300_000);
        let am: Value = serde_json::from_str(&alertmanager(&r, 7200)).unwrap();
        assert_eq!(am[0]["endsAt"], "2023-11-14T22:18:20Z");
    }
}
