//! `nasprobe report` (per-host sample counts and gaps; the verdict plugs in at [`verdict`]) and
//! `nasprobe events`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::Common;
use crate::conn::now_ms;
use crate::store::{HostWindow, Store};

/// RFC 3339 UTC time of a Unix-epoch millisecond count, e.g. `2024-05-01T12:00:00.250Z`.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The verdict over the loaded window. The analysis (a colleague's module) replaces this
/// placeholder; its input is exactly what [`Store::load_window`] returns.
pub fn verdict(_hosts: &[HostWindow]) -> Value {
    json!({
        "host": null,
        "resource": "none",
        "device": null,
        "process": null,
        "utilization": 0.0,
        "evidence": ["no verdict yet: this build of the collector only counts samples and gaps"],
    })
}

fn window(since: Option<Duration>) -> (Option<u64>, u64) {
    let now = now_ms();
    (since.map(|d| now.saturating_sub(d.as_millis() as u64)), now)
}

pub fn run(c: &Common, since: Option<Duration>, json_out: bool) -> anyhow::Result<()> {
    let db = crate::db_path(c);
    anyhow::ensure!(
        db.exists(),
        "no database at {} (record something first: nasprobe record HOST)",
        db.display()
    );
    let store = Store::open(&db)?;
    let (from, to) = window(since);
    let summary = store.summary(from, Some(to))?;
    let first = summary.iter().filter_map(|h| h.first_ms).min();
    let from_ms = from.or(first).unwrap_or(to);
    if json_out {
        let windows = store.load_window(from, Some(to))?;
        let hosts: Vec<Value> = summary
            .iter()
            .map(|h| {
                json!({
                    "name": h.host,
                    "address": h.address,
                    "samples": h.samples,
                    "instances": h.instances,
                    "events": h.events,
                    "first": h.first_ms.map(rfc3339),
                    "last": h.last_ms.map(rfc3339),
                })
            })
            .collect();
        let mut events: Vec<(u64, Value)> = Vec::new();
        for w in &windows {
            for e in &w.events {
                let (pid, name) = crate::model::event_subject(&e.event);
                events.push((
                    e.time_ms,
                    json!({
                        "host": w.host,
                        "at": rfc3339(e.time_ms),
                        "kind": crate::model::event_kind(&e.event),
                        "pid": pid,
                        "process": name,
                        "text": crate::model::event_text(&e.event),
                    }),
                ));
            }
        }
        events.sort_by_key(|e| e.0);
        let gaps: Vec<Value> = summary
            .iter()
            .flat_map(|h| h.gaps.iter())
            .map(|g| {
                json!({
                    "host": g.host,
                    "from": rfc3339(g.from_ms),
                    "to": rfc3339(g.to_ms),
                    "samples": g.samples,
                    "reason": g.reason,
                    "instance": format!("{:x}", g.instance_id),
                    "from_seq": g.from_seq,
                    "to_seq": g.to_seq,
                })
            })
            .collect();
        let out = json!({
            "window": {"from": rfc3339(from_ms), "to": rfc3339(to),
                       "seconds": (to.saturating_sub(from_ms)) / 1000},
            "hosts": hosts,
            "bottleneck": verdict(&windows),
            "events": events.into_iter().map(|e| e.1).collect::<Vec<_>>(),
            "gaps": gaps,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "window {} .. {} ({} s), database {}",
        rfc3339(from_ms),
        rfc3339(to),
        to.saturating_sub(from_ms) / 1000,
        db.display()
    );
    if summary.is_empty() {
        println!("nothing stored");
    }
    for h in &summary {
        println!(
            "{:<16} {:>8} samples {:>6} events {} instance(s) {} .. {}",
            h.host,
            h.samples,
            h.events,
            h.instances,
            h.first_ms.map(rfc3339).unwrap_or_default(),
            h.last_ms.map(rfc3339).unwrap_or_default(),
        );
        if h.gaps.is_empty() {
            println!("    no gaps");
        }
        for g in &h.gaps {
            let seqs = match (g.from_seq, g.to_seq) {
                (Some(a), Some(b)) => format!(" seq {a}..{b}"),
                _ => String::new(),
            };
            println!(
                "    gap {} .. {}: {} samples, {}{}",
                rfc3339(g.from_ms),
                rfc3339(g.to_ms),
                g.samples,
                g.reason,
                seqs
            );
        }
    }
    Ok(())
}

pub fn events(c: &Common, since: Option<Duration>) -> anyhow::Result<()> {
    let db = crate::db_path(c);
    anyhow::ensure!(db.exists(), "no database at {}", db.display());
    let store = Store::open(&db)?;
    let (from, to) = window(since);
    let mut all: Vec<(u64, String, String)> = Vec::new();
    for w in store.load_window(from, Some(to))? {
        for e in &w.events {
            all.push((
                e.time_ms,
                w.host.clone(),
                crate::model::event_text(&e.event),
            ));
        }
    }
    all.sort();
    for (t, h, text) in all {
        println!("{} {h:<16} {text}", rfc3339(t));
    }
    Ok(())
}

pub fn check(c: &Common) -> anyhow::Result<()> {
    let db = crate::db_path(c);
    anyhow::ensure!(db.exists(), "no database at {}", db.display());
    let store = Store::open(&db)?;
    let integrity = store.integrity_check()?;
    println!("integrity {integrity}");
    let mut bad = integrity != "ok";
    for i in store.check()? {
        println!(
            "host {} instance {:x} seq {}..{} stored {} gone {} duplicates {} holes {}",
            i.host,
            i.instance_id,
            i.first_seq,
            i.last_seq,
            i.stored,
            i.gone,
            i.duplicates,
            if i.holes.is_empty() {
                "none".to_string()
            } else {
                format!("{:?}", i.holes)
            }
        );
        bad |= i.duplicates > 0 || !i.holes.is_empty();
    }
    anyhow::ensure!(!bad, "database {} failed the check", db.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(1_709_251_200_250),
            "2024-03-01T00:00:00.250Z"
        );
        assert_eq!(super::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
