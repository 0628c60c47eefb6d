//! `nasprobe record`: connect, store, reconnect and resume, until stopped or DUR has passed.

use std::time::{Duration, Instant};

use crate::context::Context;
use crate::net::conn::Collector;

pub fn run(
    c: &Context,
    duration: Option<Duration>,
    push: &crate::cli::PushFlags,
    alert_args: &crate::alerts::AlertArgs,
    hosts: &[String],
) -> anyhow::Result<()> {
    let targets = c.targets(hosts, false)?;
    let alert_cfg = c.alert_config(alert_args)?;
    let db = c.db.clone();
    let store = c.open_store()?;
    // The exporter reads the store through its own connection and pushes what is committed.
    let pushing = crate::export::Pushing::start(&db, &push.to(), &c.collector, &c.trust)?;
    crate::signals::install();
    let names: Vec<_> = targets.iter().map(|t| t.spec.name.clone()).collect();
    log::info!("recording {} into {}", names.join(", "), db.display());
    crate::output::note(format_args!(
        "recording {} into {}{}",
        names.join(", "),
        db.display(),
        duration.map_or(String::new(), |d| format!(" for {}s", d.as_secs_f64()))
    ));
    let col = Collector::start(store, targets, Some(c.retention));
    let alerts = crate::alerts::Alerts::start(db.clone(), col.live.clone(), alert_cfg)?;
    let start = Instant::now();
    // Sleeps until a signal, the end of the duration or the collector's end (no polling).
    while !crate::signals::stop_requested() && !col.is_finished() {
        let left = duration.map(|d| d.saturating_sub(start.elapsed()));
        if left == Some(Duration::ZERO) {
            break;
        }
        crate::signals::sleep(left);
    }
    let live = col.live.clone();
    let ran = start.elapsed();
    let store = col.finish();
    let behind = alerts.behind();
    alerts.finish();
    if behind > 0 {
        crate::errln!("nasprobe: the alert task fell behind {behind} times (storing never waited)");
    }
    // Push what the last batches stored (the exporters give up after their drain time).
    pushing.finish();
    let store = store?;
    let unstored = live.unstored_report();
    if let Some(u) = &unstored {
        for line in u.lines() {
            crate::errln!("nasprobe: {line}");
        }
    }
    for h in live.snapshot() {
        if let Some(b) = &h.bad {
            crate::errln!(
                "nasprobe: {} marked bad ({} records rejected): {b}",
                h.name,
                h.rejected
            );
        }
    }
    let committed = live.committed.load(std::sync::atomic::Ordering::Relaxed);
    crate::output::note(format_args!(
        "stored {committed} records in {} ({})",
        store.path().display(),
        live.snapshot()
            .iter()
            .map(|h| format!("{}: {}", h.name, h.received))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if unstored.is_some() {
        let err = live
            .store_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| "writes failed".into());
        anyhow::bail!("stopped with records not stored: {err}");
    }
    for h in live.snapshot() {
        let down = crate::net::outcome::down_for(&h, ran);
        if !down.is_zero() && down.as_secs_f64() >= 0.5 {
            crate::errln!(
                "nasprobe: {} unreachable for {:.1} s of {:.1} s{}",
                h.name,
                down.as_secs_f64(),
                ran.as_secs_f64(),
                refusal_note(&h)
            );
        }
    }
    crate::net::outcome::ensure_delivered(&live, ran)
}

/// What the collector refused of host `h` on this run, for its unreachable line.
fn refusal_note(h: &crate::net::conn::HostLive) -> String {
    let mut parts = Vec::new();
    if h.tampered > 0 {
        parts.push(format!(
            "connections ended by frames failing authentication: {}",
            h.tampered
        ));
    }
    if h.marked_bad > 0 {
        parts.push(format!(
            "connections ended with the host marked bad: {}",
            h.marked_bad
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}
