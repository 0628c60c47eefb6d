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
    let pushing = crate::export::Pushing::start(&db, push, &c.collector)?;
    crate::signals::install();
    let names: Vec<_> = targets.iter().map(|t| t.spec.name.clone()).collect();
    log::info!("recording {} into {}", names.join(", "), db.display());
    eprintln!(
        "nasprobe: recording {} into {}{}",
        names.join(", "),
        db.display(),
        duration.map_or(String::new(), |d| format!(" for {}s", d.as_secs_f64()))
    );
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
        eprintln!("nasprobe: the alert task fell behind {behind} times (storing never waited)");
    }
    // Push what the last batches stored (the exporters give up after their drain time).
    pushing.finish();
    let store = store?;
    let unstored = live.unstored_report();
    if let Some(u) = &unstored {
        for line in u.lines() {
            eprintln!("nasprobe: {line}");
        }
    }
    for h in live.snapshot() {
        if let Some(b) = &h.bad {
            eprintln!(
                "nasprobe: {} marked bad ({} records rejected): {b}",
                h.name, h.rejected
            );
        }
    }
    let committed = live.committed.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "nasprobe: stored {committed} records in {} ({})",
        store.path().display(),
        live.snapshot()
            .iter()
            .map(|h| format!("{}: {}", h.name, h.received))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if unstored.is_some() {
        let err = live
            .store_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| "writes failed".into());
        anyhow::bail!("stopped with records not stored: {err}");
    }
    let mut failed: Vec<String> = Vec::new();
    for h in live.snapshot() {
        // A connection still streaming at the stop was cancelled with the run: count it to now.
        let connected = h.connected_for + h.connected_since.map_or(Duration::ZERO, |t| t.elapsed());
        let down = ran.saturating_sub(connected);
        let interval =
            Duration::from_millis(h.hello.as_ref().map_or(1000, |x| x.interval_ms.into()));
        let judged = ran >= UNREACHABLE_JUDGED_AFTER.max(2 * interval);
        if !down.is_zero() && down.as_secs_f64() >= 0.5 {
            eprintln!(
                "nasprobe: {} unreachable for {:.1} s of {:.1} s{}",
                h.name,
                down.as_secs_f64(),
                ran.as_secs_f64(),
                refusal_note(&h)
            );
        }
        let mut why: Vec<String> = h.config_error.clone().into_iter().collect();
        if h.received == 0 && judged {
            why.push(format!(
                "{}: delivered nothing in {:.1} s",
                h.name,
                ran.as_secs_f64()
            ));
        } else if judged
            && (down > ran * 3 / 4 || (down > ran / 2 && h.tampered + h.marked_bad > 0))
        {
            why.push(format!(
                "{}: unreachable for most of the run ({:.1} s of {:.1} s)",
                h.name,
                down.as_secs_f64(),
                ran.as_secs_f64()
            ));
        }
        failed.extend(why);
    }
    anyhow::ensure!(failed.is_empty(), "{}", failed.join("; "));
    Ok(())
}

/// A run shorter than this is not judged by how long a host was unreachable (connecting alone
/// takes a moment). A judged host fails when it delivered nothing, was unreachable for more than
/// three quarters of the run, or for more than half of it with refusals (frames failing
/// authentication, marked bad): an agent restarted on purpose, reconnecting after its backoff,
/// is away for half of a short run and still a success.
const UNREACHABLE_JUDGED_AFTER: Duration = Duration::from_secs(2);

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
