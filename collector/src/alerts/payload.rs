//! What is sent: a typed [`Notification`] (the webhook's JSON, schema [`SCHEMA`],
//! docs/alerts.md), and from it ntfy's publish request and Alertmanager's API v2 alert list.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::config::Rule;
use super::state::{AlertRow, AlertState};

/// The webhook JSON's schema version (`schema` field); raised when a field changes meaning.
pub(crate) const SCHEMA: u32 = 1;

/// One notification as every receiver gets it (the webhook's body; the outbox keeps its JSON,
/// made at queue time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Notification {
    pub schema: u32,
    pub id: i64,
    pub rule: Rule,
    pub state: AlertState,
    pub host: Option<String>,
    pub key: String,
    pub summary: String,
    pub evidence: Vec<String>,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub count: u64,
    pub report: String,
    pub sent_at: String,
}

impl Notification {
    /// `row` sent as `state` at `now_ms`; `db` names the store for the report command.
    pub(crate) fn of(row: &AlertRow, state: AlertState, db: &str, now_ms: u64) -> Notification {
        let at = nasprobe_analysis::time::rfc3339;
        // The report of the alert's time: from a minute before it began.
        let since_s = now_ms.saturating_sub(row.started_ms) / 1000 + 60;
        Notification {
            schema: SCHEMA,
            id: row.id,
            rule: row.rule,
            state,
            host: row.host.clone(),
            // The key holds a process name: the same look-alikes (the same each time, so a
            // receiver still tells one alert's notifications by it).
            key: neutral(&row.key),
            summary: neutral(&row.summary),
            evidence: row.evidence.iter().map(|e| neutral(e)).collect(),
            started_at: at(row.started_ms),
            ended_at: (state == AlertState::Resolved).then(|| at(row.ended_ms.unwrap_or(now_ms))),
            count: row.count,
            report: format!(
                "nasprobe --db {} report --since {since_s}s",
                shell_quote(db)
            ),
            sent_at: at(now_ms),
        }
    }

    /// The webhook's body.
    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A body the outbox holds; None when it is not a notification of this schema (a row
    /// written by hand or by a newer collector).
    pub(crate) fn parse(payload: &str) -> Option<Notification> {
        serde_json::from_str(payload).ok()
    }

    fn resolved(&self) -> bool {
        self.state == AlertState::Resolved
    }
}

/// The webhook JSON of `row` sent as `state`; `db` names the store for the report command.
pub(crate) fn webhook_json(row: &AlertRow, state: AlertState, db: &str, now_ms: u64) -> String {
    Notification::of(row, state, db, now_ms).json()
}

/// The budget's summary: a notification of no alert (id 0, key `held_back`), its rule the one
/// held back most.
pub(crate) fn held_back(h: &super::budget::HeldBack, db: &str, now_ms: u64) -> String {
    let at = nasprobe_analysis::time::rfc3339;
    Notification {
        schema: SCHEMA,
        id: 0,
        rule: h.rule(),
        state: AlertState::Firing,
        host: None,
        key: "held_back".into(),
        summary: h.summary(),
        evidence: h.keys.iter().map(|k| neutral(k)).collect(),
        started_at: at(h.from_ms),
        ended_at: None,
        count: h.total,
        report: format!("nasprobe --db {} alerts", shell_quote(db)),
        sent_at: at(now_ms),
    }
    .json()
}

/// Text from the NAS (process names, command lines) with the mention and markup syntax of the
/// receivers that render it made inert, by visible look-alikes (no invisible character: the
/// sanitizer refuses those): `@` (`@everyone`, `@here`, `@user`) becomes `＠` (U+FF20), a `<`
/// opening `<!channel>`, `<@U123>` or `<#C1>` becomes `‹` (U+2039), and a Markdown link's
/// `](` becomes `] (`.
pub(crate) fn neutral(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('@', _) => out.push('\u{FF20}'),
            ('<', Some('!' | '@' | '#')) => out.push('\u{2039}'),
            (']', Some('(')) => out.push_str("] "),
            _ => out.push(c),
        }
    }
    out
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

/// ntfy: the body and its headers (Title, Priority, Tags). A payload that is no notification
/// goes as it is, titled so.
pub(crate) fn ntfy(payload: &str) -> (String, Vec<(&'static str, String)>) {
    let Some(n) = Notification::parse(payload) else {
        return (
            payload.to_string(),
            vec![("Title", "nasprobe: a notification of another form".into())],
        );
    };
    let (rule, resolved) = (n.rule.name(), n.resolved());
    let title = match (resolved, &n.host) {
        (false, Some(h)) => format!("nasprobe: {rule} on {h}"),
        (false, None) => format!("nasprobe: {rule}"),
        (true, Some(h)) => format!("nasprobe: {rule} on {h} resolved"),
        (true, None) => format!("nasprobe: {rule} resolved"),
    };
    let body = format!("{}\n{}", n.summary, n.report);
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
/// (it is sent again before then while it lasts); a resolved one's is its end. A payload that
/// is no notification is an empty list.
pub(crate) fn alertmanager(payload: &str, hold_s: u64) -> String {
    let Some(n) = Notification::parse(payload) else {
        return "[]".into();
    };
    let ends = match (&n.ended_at, n.resolved()) {
        (Some(e), true) => e.clone(),
        _ => {
            let now = nasprobe_proto::time::now_ms();
            nasprobe_analysis::time::rfc3339(now + hold_s * 1000)
        }
    };
    let mut labels = json!({
        "alertname": format!("nasprobe_{}", n.rule),
        "rule": n.rule.name(),
        "key": n.key,
        "source": "nasprobe",
    });
    if let Some(h) = &n.host {
        labels["host"] = serde_json::Value::String(h.clone());
    }
    json!([{
        "labels": labels,
        "annotations": {
            "summary": n.summary,
            "evidence": n.evidence.join("\n"),
            "report": n.report,
            "count": n.count.to_string(),
        },
        "startsAt": n.started_at,
        "endsAt": ends,
    }])
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::config::Rule;
    use serde_json::Value;

    fn row() -> AlertRow {
        AlertRow {
            id: 7,
            rule: Rule::Stall,
            key: "flow".into(),
            host: Some("dst".into()),
            state: AlertState::Firing,
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
        let p = webhook_json(
            &row(),
            AlertState::Resolved,
            "/tmp/my db",
            1_700_000_300_000,
        );
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
        let f = webhook_json(&row(), AlertState::Firing, "/tmp/db", 1_700_000_100_000);
        assert!(serde_json::from_str::<Value>(&f).unwrap()["ended_at"].is_null());
    }

    #[test]
    fn ntfy_and_alertmanager_forms() {
        let p = webhook_json(&row(), AlertState::Firing, "/tmp/db", 1_700_000_100_000);
        let (body, h) = ntfy(&p);
        assert!(body.starts_with("src → dst"));
        assert_eq!(h[0], ("Title", "nasprobe: stall on dst".to_string()));
        assert_eq!(h[1].1, "high");
        let am: Value = serde_json::from_str(&alertmanager(&p, 7200)).unwrap();
        assert_eq!(am[0]["labels"]["alertname"], "nasprobe_stall");
        assert_eq!(am[0]["labels"]["host"], "dst");
        assert_eq!(am[0]["startsAt"], "2023-11-14T22:13:20Z");
        let r = webhook_json(&row(), AlertState::Resolved, "/tmp/db", 1_700_000_300_000);
        let am: Value = serde_json::from_str(&alertmanager(&r, 7200)).unwrap();
        assert_eq!(am[0]["endsAt"], "2023-11-14T22:18:20Z");
    }

    #[test]
    fn mentions_and_links_from_the_nas_are_inert() {
        let mut r = row();
        r.summary = "nas: <!channel> @everyone [x](http://evil) died".into();
        let n = Notification::of(&r, AlertState::Firing, "/tmp/db", 1_700_000_100_000);
        for bad in ["<!channel>", "@everyone", "](http"] {
            assert!(!n.summary.contains(bad), "{bad} in {}", n.summary);
        }
        assert_eq!(
            n.summary,
            "nas: \u{2039}!channel> \u{FF20}everyone [x] (http://evil) died"
        );
    }
}
