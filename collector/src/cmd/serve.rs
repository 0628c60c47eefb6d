//! `nasprobe serve --metrics ADDR:PORT [HOST]...`: the Prometheus scrape endpoint
//! ([`crate::export::serve`]) until stopped, optionally while recording hosts.

use std::time::{Duration, Instant};

use crate::context::Context;
use crate::export::serve::Server;
use crate::net::conn::Collector;

/// `nasprobe serve --metrics ADDR:PORT [HOST]...`: serves until stopped or DUR has passed;
/// with hosts, records them into the store at the same time.
pub fn run(
    c: &Context,
    metrics: &str,
    max_age: Option<Duration>,
    duration: Option<Duration>,
    push: &crate::cli::PushFlags,
    alert_args: &crate::alerts::AlertArgs,
    hosts: &[String],
) -> anyhow::Result<()> {
    let db = c.db.clone();
    let alert_cfg = c.alert_config(alert_args)?;
    let collector = if hosts.is_empty() {
        anyhow::ensure!(
            db.exists(),
            "no database at {} (record first, name one with --db, or give hosts to record)",
            db.display()
        );
        None
    } else {
        let targets = c.targets(hosts, false)?;
        let store = c.open_store()?;
        Some(Collector::start(store, targets, Some(c.retention)))
    };
    // Alerts are evaluated when this run records.
    let alerts = match &collector {
        Some(col) => Some(crate::alerts::Alerts::start(
            db.clone(),
            col.live.clone(),
            alert_cfg,
        )?),
        None => None,
    };
    let pushing = match (&collector, &push.export_vm, &push.remote_write) {
        (None, Some(_), _) | (None, _, Some(_)) => {
            anyhow::bail!("--export-vm and --remote-write push what this run records: give hosts")
        }
        _ => crate::export::Pushing::start(&db, &push.to(), &c.collector, &c.trust)?,
    };
    let server = Server::start(metrics, &db, max_age, &c.collector)?;
    crate::signals::install();
    crate::output::note(format_args!(
        "serving the newest rates of {} on http://{}/metrics{}",
        db.display(),
        server.addr,
        if hosts.is_empty() {
            String::new()
        } else {
            format!(" while recording {}", hosts.join(", "))
        }
    ));
    let start = Instant::now();
    // Sleeps until a signal, the end of the duration or the collector's end (no polling).
    while !crate::signals::stop_requested() && collector.as_ref().is_none_or(|c| !c.is_finished()) {
        let left = duration.map(|d| d.saturating_sub(start.elapsed()));
        if left == Some(Duration::ZERO) {
            break;
        }
        crate::signals::sleep(left);
    }
    server.stop();
    if let Some(c) = collector {
        let stored = c.finish();
        if let Some(a) = alerts {
            a.finish();
        }
        pushing.finish();
        stored?;
    }
    Ok(())
}
