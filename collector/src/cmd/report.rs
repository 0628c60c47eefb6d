//! `nasprobe report`, `nasprobe events` and `nasprobe check`: load a window from the store,
//! hand it to the analysis crate (`nasprobe_analysis`: rates, verdict, events, patterns, gaps)
//! and print what it built — one JSON object, the text rendering, or an HTML file.
//!
//! Nothing here computes a figure: the window is loaded and analyzed once by
//! [`crate::store::window`].

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use nasprobe_analysis::{Analysis, HostData};
use serde_json::json;

use crate::cli::CopyPick;
use crate::context::Context;
use crate::output;
use crate::store::rollup;
use crate::store::window::{load, load_only, resolution, window_until};

/// What `nasprobe report` was asked for.
#[derive(Debug, Clone, Default)]
pub struct ReportArgs {
    pub since: Option<Duration>,
    /// `--until`: the window ends this long ago (None: now).
    pub until: Option<Duration>,
    /// `--copy`: whose verdict leads.
    pub copy: crate::cli::CopyPick,
    pub json: bool,
    pub expect_bytes: Option<u64>,
    pub html: Option<std::path::PathBuf>,
    /// Only these hosts (`--host`, repeatable; all when empty).
    pub hosts: Vec<String>,
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
    let store = c.open_store_read()?;
    let (from, to) = window_until(a.since, a.until);
    if let (Some(f), Some(t)) = (from, to) {
        anyhow::ensure!(
            f <= t,
            "--until is before --since: the window would be empty"
        );
    }
    let lead = match a.copy {
        CopyPick::Number(n) => Some(n),
        CopyPick::Latest | CopyPick::All => None,
    };
    let (hosts, analysis) = load_only(&store, (from, to), a.expect_bytes, &a.hosts, lead)?;
    let step = resolution(&store, from, to)?;
    let report = &analysis.report;
    if let Some(n) = lead {
        let k = report.copies.len();
        anyhow::ensure!(
            report.lead_copy == Some(n),
            "no copy {n} in the window: {}",
            if k == 0 {
                "it holds no copy".to_string()
            } else {
                format!("it holds copies 1..{k} (see the Copies table of `nasprobe report`)")
            }
        );
    }
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
            crate::output::note(&wrote);
        } else {
            // The page holds the report; one line names it.
            out.line(&wrote)?;
        }
    }
    let alerts = crate::alerts::listing::of_window(&store, from, to)?;
    if a.json {
        let mut v = serde_json::to_value(report)?;
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "alerts".into(),
                alerts
                    .iter()
                    .map(crate::alerts::listing::alert_json)
                    .collect(),
            );
        }
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
            if a.copy == CopyPick::All {
                out.text(&nasprobe_analysis::text::render_copies(report))?;
            }
            out.text(&crate::alerts::listing::text_lines(&alerts))?;
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
    let store = c.open_store_read()?;
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
