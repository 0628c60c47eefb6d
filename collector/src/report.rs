//! `nasprobe report`, `nasprobe events` and `nasprobe check`: load a window from the store,
//! hand it to the analysis crate (`nasprobe_analysis`: rates, verdict, events, patterns, gaps)
//! and print what it built — one JSON object, the text rendering, or an HTML file.
//!
//! Nothing here computes a figure: the store hands over the analysis's own input
//! ([`HostData`]) and the analysis builds everything once ([`Analysis`]).

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use nasprobe_analysis::{Analysis, HostData, Options};
use serde_json::json;

use crate::conn::now_ms;
use crate::context::Context;
use crate::output;
use crate::rollup;
use crate::store::Store;

/// What `nasprobe report` was asked for.
#[derive(Debug, Clone, Default)]
pub struct ReportArgs {
    pub since: Option<Duration>,
    pub json: bool,
    pub expect_bytes: Option<u64>,
    pub html: Option<std::path::PathBuf>,
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

fn open(c: &Context) -> anyhow::Result<Store> {
    c.open_store_read()
}

/// Loads the window and analyzes it once (the hosts' data is returned for the HTML view).
pub fn load(
    store: &Store,
    since: Option<Duration>,
    expect_bytes: Option<u64>,
) -> anyhow::Result<(Vec<HostData>, Analysis)> {
    let (from, to) = window(since);
    load_between(store, from, to, expect_bytes)
}

/// [`load`] over `[from, to]` (ms since the epoch; None: open ended).
pub fn load_between(
    store: &Store,
    mut from: Option<u64>,
    mut to: Option<u64>,
    expect_bytes: Option<u64>,
) -> anyhow::Result<(Vec<HostData>, Analysis)> {
    let step = resolution(store, from, to)?;
    let hosts: Vec<HostData> = store.load_window_at(from, to, step)?;
    if hosts.is_empty() && from.is_none() {
        // Nothing stored: an empty window ending now rather than at the epoch.
        let now = now_ms();
        (from, to) = (Some(now), Some(now));
    }
    // Over rollups, raw samples are read back where the detail matters (each listed death's
    // minute before; the peaks, below).
    let detail = |k: usize, a: u64, b: u64| -> Option<HostData> {
        let name = &hosts.get(k)?.name;
        let raw = store.load_window_at(Some(a), Some(b), None).ok()?;
        raw.into_iter().find(|h| &h.name == name)
    };
    let analysis = nasprobe_analysis::analyze_with_detail(
        &hosts,
        &Options {
            from_ms: from,
            to_ms: to,
            expect_bytes,
            step_ms: step,
        },
        step.map(|_| &detail as &nasprobe_analysis::Detail<'_>),
    );
    let mut analysis = analysis;
    if step.is_some() {
        // Over rollups the peaks are the best 10 s of the busiest steps' raw samples.
        crate::peaks::refine(store, &mut analysis)?;
        // Over rollups the analysis counted steps: `samples` stays the samples stored.
        let stored = store.summary(from, to)?;
        for h in &mut analysis.report.hosts {
            // (None stored where retention deleted them: then the steps read.)
            if let Some(s) = stored.iter().find(|s| s.host == h.name && s.samples > 0) {
                h.samples = s.samples as usize;
            }
        }
    }
    Ok((hosts, analysis))
}

/// The step of the samples a report over `[from, to]` reads: None (raw samples), or rollups
/// ([`rollup::step_for_span`]) by how long the stored data of the window spans.
pub(crate) fn resolution(
    store: &Store,
    from: Option<u64>,
    to: Option<u64>,
) -> anyhow::Result<Option<u64>> {
    let sum = store.summary(from, to)?;
    let first = sum.iter().filter_map(|h| h.first_ms).min();
    let last = sum.iter().filter_map(|h| h.last_ms).max();
    let span = match (first, last) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    let raw_samples: u64 = sum.iter().map(|h| h.samples).sum();
    Ok(match rollup::step_for_span(span) {
        // Retention deleted every raw sample of a short window: its minutes are what is left.
        None if raw_samples == 0 && first.is_some() => Some(rollup::MINUTE_MS),
        step => step,
    })
}

/// What the report says about its resolution when it read rollups.
fn resolution_note(step_ms: u64) -> String {
    let over = if step_ms >= rollup::HOUR_MS {
        rollup::VERY_LONG_WINDOW_MS
    } else {
        rollup::LONG_WINDOW_MS
    };
    format!(
        "figures from {} rollups (the window spans more than {}): means as over raw samples, peaks per step; the NIC and flow peaks (the best 10 s of each host's busiest steps) and each listed death's minute before come from raw samples where those are still stored",
        rollup::tier_name(step_ms),
        if over % (24 * rollup::HOUR_MS) == 0 {
            format!("{} days", over / (24 * rollup::HOUR_MS))
        } else {
            format!("{} h", over / rollup::HOUR_MS)
        }
    )
}

fn write_html(path: &Path, hosts: &[HostData], analysis: &Analysis) -> anyhow::Result<()> {
    let html = nasprobe_analysis::html::render(hosts, analysis);
    std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))
}

/// `nasprobe report`: the verdict paragraph and per-host table, or one JSON object (`--json`);
/// `--html FILE` writes the self-contained HTML report instead and prints one line naming it
/// (with `--json` as well: the JSON too).
pub fn run(c: &Context, a: &ReportArgs) -> anyhow::Result<()> {
    let store = open(c)?;
    let (hosts, analysis) = load(&store, a.since, a.expect_bytes)?;
    let (from, to) = window(a.since);
    let step = resolution(&store, from, to)?;
    let report = &analysis.report;
    let mut out = output::stdout();
    if let Some(path) = &a.html {
        write_html(path, &hosts, &analysis)?;
        let wrote = format!(
            "wrote {} ({})",
            path.display(),
            nasprobe_analysis::text::verdict_line(report)
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
        let mut v = serde_json::to_value(report)?;
        if let (Some(step), Some(o)) = (step, v.as_object_mut()) {
            o.insert(
                "resolution".into(),
                json!({ "step_s": step / 1000, "note": resolution_note(step) }),
            );
        }
        out.line(&serde_json::to_string_pretty(&v)?)?;
    } else if a.html.is_none() {
        if hosts.is_empty() {
            out.line(&format!("nothing stored in {}", store.path().display()))?;
        } else {
            out.text(&nasprobe_analysis::text::render(report))?;
            if let Some(step) = step {
                out.line(&format!("Resolution: {}", resolution_note(step)))?;
            }
        }
    }
    out.finish()?;
    Ok(())
}

/// `nasprobe events`: the events of the window, then the restart patterns with the context of
/// each death (text), or `{window, events, patterns, gaps}` as one JSON object.
pub fn events(c: &Context, since: Option<Duration>, json_out: bool) -> anyhow::Result<()> {
    let store = open(c)?;
    let r = load(&store, since, None)?.1.report;
    if json_out {
        let out = json!({
            "window": r.window,
            "events": r.events,
            "patterns": r.patterns,
            "gaps": r.gaps,
            "event_groups": r.event_groups,
        });
        let mut o = output::stdout();
        o.line(&serde_json::to_string_pretty(&out)?)?;
        return Ok(o.finish()?);
    }
    let mut o = output::stdout();
    o.text(&nasprobe_analysis::text::render_events(&r))?;
    Ok(o.finish()?)
}

pub fn check(c: &Context) -> anyhow::Result<()> {
    let db = &c.db;
    let store = c.open_store_read()?;
    let integrity = store.integrity_check()?;
    let mut out = output::stdout();
    out.line(&format!("integrity {integrity}"))?;
    let mut bad = integrity != "ok";
    for i in store.check()? {
        let range = if i.last_seq < i.first_seq {
            "none".to_string()
        } else {
            format!("{}..{}", i.first_seq, i.last_seq)
        };
        out.line(&format!(
            "host {} instance {:x} seq {range} stored {} gone {} duplicates {} holes {}",
            i.host,
            i.instance_id,
            i.stored,
            i.gone,
            i.duplicates,
            if i.holes.is_empty() {
                "none".to_string()
            } else {
                format!("{:?}", i.holes)
            }
        ))?;
        for (seq, why) in &i.bad_rows {
            let at = seq.map_or_else(|| "Hello".to_string(), |s| format!("seq {s}"));
            out.line(&format!(
                "host {} instance {:x} {at}: {}",
                i.host,
                i.instance_id,
                nasprobe_proto::sanitize::text(why)
            ))?;
        }
        bad |= i.duplicates > 0 || !i.holes.is_empty() || !i.bad_rows.is_empty();
    }
    out.finish()?;
    anyhow::ensure!(!bad, "database {} failed the check", db.display());
    Ok(())
}
