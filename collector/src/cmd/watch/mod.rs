//! `nasprobe watch`: record + a live side-by-side view, one panel per host, under a banner with
//! the live verdict (the report's analysis over the last minute, see [`crate::live_verdict`]).
//!
//! On a terminal: ratatui; keys `q` quit, `?` help, `v` verdict details, `e` events, `p` pause,
//! `1`..`9` one host full width. Otherwise (or with `--plain`): one plain line per host per
//! second and the verdict line every 10 s.
//!
//! `plain`: the plain lines (and what the TUI shares with them: the texts, when a view stops);
//! `tui`: the ratatui view; `figures`: what a panel's lists and sparklines follow, from one
//! sample.

mod figures;
mod plain;
mod tui;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::hosts::HostSpec;
use crate::live_verdict::LiveVerdict;
use crate::net::conn::{Collector, Target};
use plain::plain_loop;
use tui::tui_loop;

/// `show_self`: with `local`, the collector's process and nasprobe's files stay in the views
/// (else left out, [`crate::own`]).
#[allow(clippy::too_many_arguments)]
pub fn run(
    c: &Context,
    local: bool,
    show_self: bool,
    duration: Option<Duration>,
    plain: bool,
    push: &crate::cli::PushFlags,
    alert_args: &crate::alerts::AlertArgs,
    hosts: &[String],
) -> anyhow::Result<()> {
    let mut targets = c.targets(hosts, local)?;
    // The banner shows the firing alerts.
    let alert_cfg = c.alert_config(alert_args)?.quiet();
    let _agent = if local {
        let a = crate::local::start()?;
        let token = crate::token::read_token(&a.token_file)?;
        targets.insert(
            0,
            Target {
                spec: HostSpec {
                    name: "local".into(),
                    addr: a.addr.clone(),
                    token_file: Some(a.token_file.clone()),
                },
                token: Arc::new(token),
            },
        );
        Some(a)
    } else {
        None
    };
    let store = c.open_store()?;
    let own = _agent
        .as_ref()
        .filter(|_| !show_self)
        .map(|a| (0, crate::own::Own::local(&c.db, &a.log)));
    let pushing = crate::export::Pushing::start(&c.db, &push.to(), &c.collector, &c.trust)?;
    crate::signals::install();
    let col = Collector::start_with_own(store, targets, Some(c.retention), own);
    let started = Instant::now();
    let alerts = crate::alerts::Alerts::start(c.db.clone(), col.live.clone(), alert_cfg)?;
    let verdict = LiveVerdict::start(c.db.clone()).with_alerts(alerts.shared.clone());
    let res = if plain || !std::io::stdout().is_terminal() {
        plain_loop(&col.live, &verdict, duration)
    } else {
        tui_loop(&col.live, &verdict, duration)
    };
    drop(verdict);
    let live = col.live.clone();
    let stored = col.finish();
    alerts.finish();
    pushing.finish();
    stored?;
    res?;
    // As `record`: 1 with a line per host that never delivered (the local agent included).
    crate::net::outcome::ensure_delivered(&live, started.elapsed())
}
