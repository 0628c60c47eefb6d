//! The alert task: a thread of its own running two smol tasks over their own connections to
//! the store — the evaluation (woken by the store task's [`super::Feed`] as batches commit, and
//! by a timer, so a silent host is noticed too) and the delivery of the outbox.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nasprobe_analysis::exits;
use smol::future::FutureExt as _;

use super::config::AlertConfig;
use super::deliver;
use super::payload;
use super::rules::{self, ExitObs, HostObs, Obs};
use super::state;
use crate::net::conn::{Live, Status};
use crate::store::StoreReader;

/// The flow is judged over the last this many seconds (the report's flow over them): short
/// enough that a stall shows within seconds (the report's flow is the median of its active
/// part, so a drop shows once most of the window is after it), long enough for a median of
/// several samples at the agent's default 1 s interval.
pub(crate) const OBS_WINDOW: Duration = Duration::from_secs(5);
/// Exits are looked for over this long (an evaluation late under load, or a death's record
/// arriving a little after its sample, is still seen; each is counted once by its time).
pub(crate) const EXIT_WINDOW: Duration = Duration::from_secs(30);
/// Evaluated at least this often without new data (a silent host is noticed by the clock).
pub(crate) const EVAL_EVERY: Duration = Duration::from_secs(2);
/// ... and at most this often however fast batches commit.
pub(crate) const EVAL_MIN: Duration = Duration::from_secs(1);
/// The outbox is looked at this often when nothing new was queued (retries fall due).
pub(crate) const DELIVER_EVERY: Duration = Duration::from_secs(1);
/// At the end of a run, delivery gets this long to send what is due.
pub(crate) const DRAIN: Duration = Duration::from_secs(5);

/// The rules' memory and the open alerts.
pub(crate) struct Engine {
    cfg: AlertConfig,
    db: String,
    host_lost: rules::HostLost,
    stall: rules::Stall,
    death: rules::Death,
    full: rules::Full,
    wall: super::wall::WallChanged,
    integrity: super::integrity::Integrity,
    open: HashMap<(String, String), state::AlertRow>,
    /// The summaries of the conditions active at the last evaluation (what `watch` shows).
    firing_now: Vec<String>,
}

impl Engine {
    /// The open alerts and the death loops come back from the store.
    pub(crate) fn new(cfg: AlertConfig, store: &StoreReader) -> anyhow::Result<Engine> {
        let open = state::load_open(store.conn())?;
        let mut death = rules::Death::default();
        for r in state::last_of_rule(store.conn(), "death")? {
            let (host, process) = r.key.split_once('/').unwrap_or((&r.key, ""));
            death.restore(
                r.key.clone(),
                rules::DeathRun {
                    host: host.into(),
                    process: process.into(),
                    first_ms: r.started_ms,
                    last_ms: r.last_ms,
                    count: r.count,
                    active: r.state == state::FIRING,
                    ..Default::default()
                },
            );
        }
        let mut host_lost = rules::HostLost::default();
        for r in open.values().filter(|r| r.rule == "host_lost") {
            host_lost.restore(&r.key, r.started_ms);
        }
        let mut integrity = super::integrity::Integrity::default();
        for r in open.values().filter(|r| r.rule == "integrity") {
            integrity.restore(&r.key, r.started_ms, r.last_ms, r.count);
        }
        Ok(Engine {
            db: store.path().display().to_string(),
            cfg,
            host_lost,
            stall: Default::default(),
            death,
            full: Default::default(),
            wall: Default::default(),
            integrity,
            open,
            firing_now: Vec::new(),
        })
    }

    /// What the store and the connections say now.
    fn observe(store: &StoreReader, live: &Live) -> anyhow::Result<Obs> {
        let now_ms = nasprobe_proto::time::now_ms();
        let hosts = live
            .snapshot()
            .into_iter()
            .map(|h| HostObs {
                connected: h.status == Status::Connected,
                error: match &h.status {
                    Status::Reconnecting { error, .. } => Some(error.clone()),
                    _ => None,
                },
                refused: super::rules::Refused {
                    tampered: h.tampered,
                    marked_bad: h.marked_bad,
                    rejected: h.rejected,
                    dropped: h.dropped.samples + h.dropped.events + h.dropped.devices,
                },
                bad: h.bad,
                name: h.name,
                received: h.received,
                last_sample_ms: h.last.map(|l| l.1),
            })
            .collect();
        let mut o = Obs {
            now_ms,
            hosts,
            ..Default::default()
        };
        let (data, analysis) = crate::store::window::load(store, Some(OBS_WINDOW), None)?;
        let r = &analysis.report;
        if let Some(f) = &r.flow {
            o.flow_bps = f.sustained_mb_s * 1e6;
            o.flow_ends = Some(match (&f.from, &f.to) {
                (Some(a), Some(b)) => format!("{a} → {b}"),
                (Some(a), None) => format!("{a} →"),
                (None, Some(b)) => format!("→ {b}"),
                (None, None) => "the flow".into(),
            });
        }
        o.verdict = Some(nasprobe_analysis::text::verdict_line(r));
        let b = &r.bottleneck;
        if b.resource != nasprobe_analysis::verdict::Resource::None {
            let res = serde_json::to_value(b.resource)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            o.wall = Some(match &b.host {
                Some(h) => format!("{h} {res}"),
                None => res,
            });
        }
        o.movers = r
            .transfers
            .iter()
            .map(|t| (t.host.clone(), t.process.clone()))
            .collect();
        for h in &data {
            if let Some((hello, ts, Some(smp))) = h.decoded().last() {
                for m in &smp.mounts {
                    if let Some(path) = hello.mounts.get(usize::from(m.mount)) {
                        o.mounts.push(rules::MountObs {
                            host: h.name.clone(),
                            path: path.as_str().to_string(),
                            time_ms: ts.time_ms,
                            used_bytes: m.used_bytes,
                            free_bytes: m.free_bytes,
                        });
                    }
                }
            }
        }
        let exits_from = now_ms.saturating_sub(EXIT_WINDOW.as_millis() as u64);
        let longer = store.load_window_at(Some(exits_from), None, None)?;
        for h in &longer {
            for te in &h.events {
                let ev = te.event();
                let Some((x, st)) = ev.as_exit() else {
                    continue;
                };
                // The report's own cause of this death (peer, network) when a pattern has
                // it; else the cause its status gives.
                let pat = r.patterns.iter().find_map(|p| {
                    (p.host == h.name)
                        .then(|| {
                            p.deaths
                                .iter()
                                .find(|d| d.pid == x.process.pid)
                                .map(|d| (p, d))
                        })
                        .flatten()
                });
                let cause = pat.map_or_else(|| exits::cause_of(st).name(), |(_, d)| d.cause);
                let mut evidence = vec![format!(
                    "{} (pid {}) {}",
                    x.process.comm.as_str(),
                    x.process.pid,
                    exits::end_text(st, x.lifetime_ms)
                )];
                if let Some((p, _)) = pat {
                    evidence.extend(p.cause_evidence.iter().cloned());
                }
                o.exits.push(ExitObs {
                    host: h.name.clone(),
                    pid: x.process.pid,
                    process: x.process.comm.as_str().to_string(),
                    cmdline: Some(x.process.cmdline.as_str().to_string()).filter(|c| !c.is_empty()),
                    at_ms: exits::exit_time(te.time_ms, st),
                    ended: exits::how_it_ended(st),
                    cause: cause.to_string(),
                    evidence,
                });
            }
        }
        Ok(o)
    }

    /// One evaluation: observe, run the rules, store the transitions with their outbox rows.
    /// Returns how many notifications were queued.
    pub(crate) fn tick(&mut self, store: &StoreReader, live: &Live) -> anyhow::Result<usize> {
        let o = Self::observe(store, live)?;
        Ok(self.apply(store, &o)?)
    }

    /// The rules over one observation (tests call it with synthetic ones).
    pub(crate) fn apply(&mut self, store: &StoreReader, o: &Obs) -> rusqlite::Result<usize> {
        let c = &self.cfg;
        let mut conds = Vec::new();
        if c.is_on("host_lost") {
            conds.extend(self.host_lost.eval(c, o));
        }
        if c.is_on("stall") {
            conds.extend(self.stall.eval(c, o));
        }
        if c.is_on("death") {
            conds.extend(self.death.eval(c, o));
        }
        if c.is_on("full") {
            conds.extend(self.full.eval(c, o));
        }
        if c.is_on("wall_changed") {
            conds.extend(self.wall.eval(c, o));
        }
        if c.is_on("integrity") {
            conds.extend(self.integrity.eval(c, o));
        }
        self.firing_now = conds
            .iter()
            .filter(|c| c.active)
            .map(|c| c.summary.clone())
            .collect();
        let repeat = c.repeat().as_millis() as u64;
        let mut ts = state::step(&self.open, &conds, o.now_ms, repeat);
        if ts.is_empty() {
            return Ok(0);
        }
        let receivers: Vec<String> = c.receivers.iter().map(|r| r.spec()).collect();
        let db = self.db.clone();
        let now = o.now_ms;
        state::commit(store.conn(), &mut ts, &receivers, now, |row, st| {
            payload::webhook_json(row, st, &db, now)
        })?;
        let mut queued = 0;
        for t in ts {
            let k = (t.row.rule.clone(), t.row.key.clone());
            if let Some(s) = t.send {
                queued += receivers.len();
                log::warn!("alert {s}: {} {}", t.row.rule, t.row.summary);
                if self.cfg.on_stderr {
                    eprintln!("nasprobe: alert {s}: {}", t.row.summary);
                }
            }
            if t.row.state == state::FIRING {
                self.open.insert(k, t.row);
            } else {
                self.open.remove(&k);
            }
        }
        Ok(queued)
    }
}

/// Runs the evaluation and the delivery until `stop` closes.
pub(crate) async fn run(
    mut engine: Engine,
    eval_store: StoreReader,
    deliver_store: StoreReader,
    live: Arc<Live>,
    feed: smol::channel::Receiver<u64>,
    stop: smol::channel::Receiver<()>,
    shared: Arc<super::base::Shared>,
) {
    let receivers = engine.cfg.receivers.clone();
    let client = deliver::Client::new(&engine.cfg.trust);
    // Alertmanager forgets a firing alert not heard of for this long: twice the repeat.
    let hold_s = engine.cfg.repeat().as_secs() * 2 + 60;
    let (kick, kicked) = smol::channel::bounded::<()>(1);
    let ex = smol::LocalExecutor::new();
    let stop2 = stop.clone();
    let delivery = ex.spawn(async move {
        loop {
            deliver::deliver_due(&deliver_store, &receivers, hold_s, &client).await;
            let woke = async { kicked.recv().await.is_ok() }
                .or(async {
                    let _ = stop2.recv().await;
                    false
                })
                .or(async {
                    smol::Timer::after(DELIVER_EVERY).await;
                    true
                })
                .await;
            if !woke {
                let _ = deliver::deliver_due(&deliver_store, &receivers, hold_s, &client)
                    .or(async {
                        smol::Timer::after(DRAIN).await;
                    })
                    .await;
                return;
            }
        }
    });
    ex.run(async {
        let mut last = Instant::now() - EVAL_EVERY;
        loop {
            let go = async { feed.recv().await.is_ok() }
                .or(async {
                    let _ = stop.recv().await;
                    false
                })
                .or(async {
                    smol::Timer::after(EVAL_EVERY).await;
                    true
                })
                .await;
            if !go {
                break;
            }
            while feed.try_recv().is_ok() {}
            let since = last.elapsed();
            if since < EVAL_MIN {
                smol::Timer::after(EVAL_MIN - since).await;
            }
            last = Instant::now();
            match engine.tick(&eval_store, &live) {
                Ok(n) if n > 0 => {
                    kick.try_send(()).ok();
                }
                Ok(_) => {}
                Err(e) => log::warn!("alerts: evaluation: {e:#}"),
            }
            *shared.firing.lock().unwrap_or_else(|p| p.into_inner()) = engine.firing_now.clone();
            shared.evaluations.fetch_add(1, Ordering::Relaxed);
        }
        delivery.await;
    })
    .await;
}
