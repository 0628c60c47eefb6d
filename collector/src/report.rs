//! `nasprobe report`, `nasprobe events` and `nasprobe check`: load a window from the store,
//! hand it to the analysis crate (`nasprobe_analysis`: rates, verdict, events, patterns, gaps)
//! and print what it built — one JSON object, the text rendering, or an HTML file.
//!
//! Nothing here computes a figure: the collector only converts the store's rows into the
//! analysis's input ([`host_data`]).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use nasprobe_analysis::{GapInfo, HostData, Instance, Options, Report, TimedEvent, TimedSample};
use serde_json::json;

use crate::cli::Common;
use crate::conn::now_ms;
use crate::output;
use crate::store::{HostWindow, Store, StoredSample};

/// What `nasprobe report` was asked for.
#[derive(Debug, Clone, Default)]
pub struct ReportArgs {
    pub since: Option<Duration>,
    pub json: bool,
    pub expect_bytes: Option<u64>,
    pub html: Option<std::path::PathBuf>,
}

/// The interval length of a stored sample without decoding the whole body (proto knows the
/// layout). Falls back to a full decode when that reading fails.
fn interval_us(s: &StoredSample) -> u32 {
    nasprobe_proto::frame::sample_interval_us(&s.body).unwrap_or_else(|_| s.decode().interval_us)
}

/// Converts one host's window as stored into the analysis's input: instance rows become indices
/// (the store already indexes `HostWindow::instances`), samples stay encoded, gaps carry their
/// sample counts.
pub fn host_data(w: HostWindow) -> HostData {
    HostData {
        name: w.host,
        instances: w
            .instances
            .into_iter()
            .map(|i| Instance {
                id: i.instance_id,
                hello: i.hello,
            })
            .collect(),
        samples: w
            .samples
            .into_iter()
            .map(|s| TimedSample {
                time_ms: s.time_ms,
                instance: s.instance,
                seq: s.seq,
                interval_us: interval_us(&s),
                body: s.body,
            })
            .collect(),
        events: w
            .events
            .into_iter()
            .map(|e| TimedEvent {
                time_ms: e.time_ms,
                instance: e.instance,
                seq: e.seq,
                event: e.event,
            })
            .collect(),
        gaps: w
            .gaps
            .into_iter()
            .map(|g| GapInfo {
                from_ms: g.from_ms,
                to_ms: g.to_ms,
                samples: Some(g.samples),
                reason: g.reason,
            })
            .collect(),
    }
}

/// The window `[from, to]` of `--since DUR` (None: everything stored).
fn window(since: Option<Duration>) -> (Option<u64>, Option<u64>) {
    match since {
        Some(d) => {
            let now = now_ms();
            (Some(now.saturating_sub(d.as_millis() as u64)), Some(now))
        }
        None => (None, None),
    }
}

fn open(c: &Common) -> anyhow::Result<Store> {
    let db = crate::db_path(c);
    anyhow::ensure!(
        db.exists(),
        "no database at {} (record something first: nasprobe record HOST)",
        db.display()
    );
    Ok(Store::open(&db)?)
}

/// Loads the window and builds the report (the hosts' data is returned for the HTML view).
pub fn load(
    store: &Store,
    since: Option<Duration>,
    expect_bytes: Option<u64>,
) -> anyhow::Result<(Vec<HostData>, Report)> {
    let (mut from, mut to) = window(since);
    let hosts: Vec<HostData> = store
        .load_window(from, to)?
        .into_iter()
        .map(host_data)
        .collect();
    if hosts.is_empty() && from.is_none() {
        // Nothing stored: an empty window ending now rather than at the epoch.
        let now = now_ms();
        (from, to) = (Some(now), Some(now));
    }
    let report = nasprobe_analysis::build(
        &hosts,
        &Options {
            from_ms: from,
            to_ms: to,
            expect_bytes,
        },
    );
    Ok((hosts, report))
}

fn write_html(path: &Path, hosts: &[HostData], report: &Report) -> anyhow::Result<()> {
    let html = nasprobe_analysis::html::render(hosts, report);
    std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))
}

/// `nasprobe report`: the verdict paragraph and per-host table, or one JSON object (`--json`);
/// `--html FILE` writes the self-contained HTML report instead and prints one line naming it
/// (with `--json` as well: the JSON too).
pub fn run(c: &Common, a: &ReportArgs) -> anyhow::Result<()> {
    let store = open(c)?;
    let (hosts, report) = load(&store, a.since, a.expect_bytes)?;
    let mut out = output::stdout();
    if let Some(path) = &a.html {
        write_html(path, &hosts, &report)?;
        let wrote = format!(
            "wrote {} ({})",
            path.display(),
            nasprobe_analysis::text::verdict_line(&report)
        );
        if a.json {
            // stdout stays one JSON object.
            eprintln!("nasprobe: {wrote}");
        } else {
            // The page holds the report; one line names it.
            out.line(&wrote)?;
        }
    }
    if a.json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else if a.html.is_none() {
        if hosts.is_empty() {
            out.line(&format!("nothing stored in {}", store.path().display()))?;
        } else {
            out.text(&nasprobe_analysis::text::render(&report))?;
        }
    }
    out.finish()?;
    Ok(())
}

/// `nasprobe events`: the events of the window, then the restart patterns with the context of
/// each death (text), or `{window, events, patterns, gaps}` as one JSON object.
pub fn events(c: &Common, since: Option<Duration>, json_out: bool) -> anyhow::Result<()> {
    let store = open(c)?;
    let (_, r) = load(&store, since, None)?;
    if json_out {
        let out = json!({
            "window": r.window,
            "events": r.events,
            "patterns": r.patterns,
            "gaps": r.gaps,
        });
        let mut o = output::stdout();
        o.line(&serde_json::to_string_pretty(&out)?)?;
        return Ok(o.finish()?);
    }
    let mut o = output::stdout();
    o.text(&nasprobe_analysis::text::render_events(&r))?;
    Ok(o.finish()?)
}

pub fn check(c: &Common) -> anyhow::Result<()> {
    let db = crate::db_path(c);
    anyhow::ensure!(db.exists(), "no database at {}", db.display());
    let store = Store::open(&db)?;
    let integrity = store.integrity_check()?;
    let mut out = output::stdout();
    out.line(&format!("integrity {integrity}"))?;
    let mut bad = integrity != "ok";
    for i in store.check()? {
        out.line(&format!(
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
        ))?;
        bad |= i.duplicates > 0 || !i.holes.is_empty();
    }
    out.finish()?;
    anyhow::ensure!(!bad, "database {} failed the check", db.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_from_the_body_prefix() {
        for iv in [0u32, 1, 127, 128, 200_000, 1_000_000, u32::MAX] {
            let mut s = crate::testing::nas_sample(3);
            s.interval_us = iv;
            let body = postcard::to_allocvec(&s).unwrap();
            let st = StoredSample {
                instance: 0,
                seq: 1,
                time_ms: 5,
                body,
            };
            assert_eq!(interval_us(&st), iv);
        }
    }
}
