//! The alert task: a thread of its own running two smol tasks over their own connections to
//! the store — the evaluation (fed by the store task's [`super::Feed`] with what each commit
//! added, kept in memory by [`Recent`], and woken by one timer, so a silent host is noticed
//! too) and the delivery of the outbox. No evaluation runs when every rule is off.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nasprobe_analysis::exits;
use smol::future::FutureExt as _;

use super::budget::{ALERTS_KEEP, BUDGET_WINDOW_MS, Budget, OUTBOX_KEEP};
use super::config::{AlertConfig, Rule};
use super::deliver;
use super::payload;
use super::recent::{OBS_WINDOW, Recent};
use super::rules::{self, Condition, ExitObs, HostObs, Obs};
use super::state::{self, AlertState};
use crate::net::conn::{Live, Status};
use crate::store::StoreReader;

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
    /// Every rule's memory, in [`Rule::ALL`] order.
    conditions: Vec<Box<dyn Condition>>,
    open: HashMap<(Rule, String), state::AlertRow>,
    /// The summaries of the conditions active at the last evaluation (what `watch` shows).
    firing_now: Vec<String>,
    /// The records of the last seconds (only kept when a rule reads them).
    pub(crate) recent: Recent,
    budget: Budget,
    /// When the outbox and the alerts were last bounded.
    bounded_ms: u64,
}

impl Engine {
    /// The open alerts and the death loops come back from the store.
    pub(crate) fn new(cfg: AlertConfig, store: &StoreReader) -> anyhow::Result<Engine> {
        let open = state::load_open(store.conn())?;
        let mut death = rules::Death::default();
        for r in state::last_of_rule(store.conn(), Rule::Death)? {
            let (host, process) = r.key.split_once('/').unwrap_or((&r.key, ""));
            death.restore(
                r.key.clone(),
                rules::DeathRun {
                    host: host.into(),
                    process: process.into(),
                    first_ms: r.started_ms,
                    last_ms: r.last_ms,
                    count: r.count,
                    active: r.state == AlertState::Firing,
                    ..Default::default()
                },
            );
        }
        let mut host_lost = rules::HostLost::default();
        for r in open.values().filter(|r| r.rule == Rule::HostLost) {
            host_lost.restore(&r.key, r.started_ms);
        }
        let now = nasprobe_proto::time::now_ms();
        let mut budget = Budget::default();
        let queued = state::queued_since(store.conn(), now.saturating_sub(BUDGET_WINDOW_MS))?;
        budget.restore(&queued, now);
        let mut integrity = super::integrity::Integrity::default();
        for r in open.values().filter(|r| r.rule == Rule::Integrity) {
            integrity.restore(&r.key, r.started_ms, r.last_ms, r.count);
        }
        Ok(Engine {
            db: store.path().display().to_string(),
            cfg,
            conditions: vec![
                Box::new(host_lost),
                Box::new(rules::Stall::default()),
                Box::new(death),
                Box::new(super::full::Full::default()),
                Box::new(super::wall::WallChanged::default()),
                Box::new(integrity),
            ],
            open,
            firing_now: Vec::new(),
            recent: Recent::default(),
            budget,
            bounded_ms: 0,
        })
    }

    /// Some rule is on: else nothing is evaluated.
    pub(crate) fn any_on(&self) -> bool {
        Rule::ALL.into_iter().any(|r| self.cfg.is_on(r))
    }

    /// Some rule on reads the records (not only the connections' state): the store task then
    /// feeds them.
    pub(crate) fn reads_records(&self) -> bool {
        [Rule::Stall, Rule::Death, Rule::Full, Rule::WallChanged]
            .into_iter()
            .any(|r| self.cfg.is_on(r))
    }

    /// Some rule on reads the report's analysis of the last seconds.
    fn reads_analysis(&self) -> bool {
        [Rule::Stall, Rule::Death, Rule::WallChanged]
            .into_iter()
            .any(|r| self.cfg.is_on(r))
    }

    /// What the recent records and the connections say now.
    fn observe(&self, live: &Live) -> Obs {
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
                clock_offset_ms: self.recent.clock_offset_ms(&h.name),
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
        let from = now_ms.saturating_sub(OBS_WINDOW.as_millis() as u64);
        let analysis = self.reads_analysis().then(|| {
            let data = self.recent.view(from, now_ms);
            nasprobe_analysis::analyze_with_detail(
                &data,
                &nasprobe_analysis::Options {
                    from_ms: Some(from),
                    to_ms: Some(now_ms),
                    expect_bytes: None,
                    step_ms: None,
                },
                None,
            )
        });
        if let Some(analysis) = &analysis {
            Self::observe_report(&analysis.report, &mut o);
        }
        if self.cfg.is_on(Rule::Full) {
            for (host, hello, ts) in self.recent.newest(from, now_ms) {
                let Some(smp) = ts.decode() else {
                    continue;
                };
                for m in &smp.mounts {
                    if let Some(path) = hello.mounts.get(usize::from(m.mount)) {
                        o.mounts.push(rules::MountObs {
                            host: host.to_string(),
                            path: path.as_str().to_string(),
                            time_ms: ts.time_ms,
                            used_bytes: m.used_bytes,
                            free_bytes: m.free_bytes,
                        });
                    }
                }
            }
        }
        if self.cfg.is_on(Rule::Death) {
            let patterns = analysis
                .as_ref()
                .map_or(&[][..], |a| &a.report.patterns[..]);
            for x in self.recent.exits() {
                let st = x.status.as_ref();
                // The report's own cause of this death (peer, network) when a pattern has
                // it; else the cause its status gives.
                let pat = patterns.iter().find_map(|p| {
                    (p.host == x.host)
                        .then(|| p.deaths.iter().find(|d| d.pid == x.pid).map(|d| (p, d)))
                        .flatten()
                });
                let cause = pat
                    .and_then(|(_, d)| exits::Cause::from_name(d.cause))
                    .unwrap_or_else(|| exits::cause_of(st));
                let mut evidence = vec![format!(
                    "{} (pid {}) {}",
                    x.comm,
                    x.pid,
                    exits::end_text(st, x.lifetime_ms)
                )];
                if let Some((p, _)) = pat {
                    evidence.extend(p.cause_evidence.iter().cloned());
                }
                o.exits.push(ExitObs {
                    host: x.host.clone(),
                    pid: x.pid,
                    process: x.comm.clone(),
                    cmdline: Some(x.cmdline.clone()).filter(|c| !c.is_empty()),
                    at_ms: exits::exit_time(x.time_ms, st),
                    ended: exits::how_it_ended(st),
                    cause,
                    evidence,
                });
            }
        }
        o
    }

    /// The flow, verdict, wall and movers of the report over the last seconds.
    fn observe_report(r: &nasprobe_analysis::report::Report, o: &mut Obs) {
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
            let res = b.resource.as_str();
            o.wall = Some(match &b.host {
                Some(h) => format!("{h} {res}"),
                None => res.to_string(),
            });
        }
        o.movers = r
            .transfers
            .iter()
            .map(|t| (t.host.clone(), t.process.clone()))
            .collect();
    }

    /// One evaluation: observe, run the rules, store the transitions with their outbox rows.
    /// Returns how many notifications were queued.
    pub(crate) fn tick(&mut self, store: &StoreReader, live: &Live) -> anyhow::Result<usize> {
        self.recent.prune(nasprobe_proto::time::now_ms());
        let o = self.observe(live);
        Ok(self.apply(store, &o)?)
    }

    /// The rules over one observation (tests call it with synthetic ones).
    pub(crate) fn apply(&mut self, store: &StoreReader, o: &Obs) -> rusqlite::Result<usize> {
        let c = &self.cfg;
        let mut conds = Vec::new();
        for r in self.conditions.iter_mut().filter(|r| c.is_on(r.rule())) {
            conds.extend(r.eval(c, o));
        }
        self.firing_now = conds
            .iter()
            .filter(|c| c.active)
            .map(|c| c.summary.clone())
            .collect();
        let repeat = c.repeat().as_millis() as u64;
        let now = o.now_ms;
        let mut queued = self.held_back(store, now)?;
        if now.saturating_sub(self.bounded_ms) >= BUDGET_WINDOW_MS {
            self.bounded_ms = now;
            let n = state::bound(store.conn(), OUTBOX_KEEP, ALERTS_KEEP)?;
            if n > 0 {
                log::info!("alerts: {n} old rows deleted (outbox and alerts bounded)");
            }
        }
        let c = &self.cfg;
        let mut ts = state::step(&self.open, &conds, now, repeat);
        if ts.is_empty() {
            return Ok(queued);
        }
        let receivers: Vec<String> = c.receivers.iter().map(|r| r.spec()).collect();
        let db = self.db.clone();
        let budget = &mut self.budget;
        state::commit(
            store.conn(),
            &mut ts,
            |row| {
                let to: Vec<String> = receivers
                    .iter()
                    .filter(|rc| budget.take(rc, now, row.rule, &row.key))
                    .cloned()
                    .collect();
                queued += to.len();
                to
            },
            now,
            |row, st| payload::webhook_json(row, st, &db, now),
        )?;
        for t in ts {
            let k = (t.row.rule, t.row.key.clone());
            if let Some(s) = t.send {
                log::warn!("alert {s}: {} {}", t.row.rule, t.row.summary);
                if self.cfg.on_stderr {
                    crate::errln!("nasprobe: alert {s}: {}", t.row.summary);
                }
            }
            if t.row.state == AlertState::Firing {
                self.open.insert(k, t.row);
            } else {
                self.open.remove(&k);
            }
        }
        Ok(queued)
    }
}

impl Engine {
    /// Queues the budget's summaries that are due; returns how many.
    fn held_back(&mut self, store: &StoreReader, now: u64) -> rusqlite::Result<usize> {
        let due = self.budget.summaries(now);
        for (rc, h) in &due {
            let n = payload::held_back(h, &self.db, now);
            log::warn!("alerts: {rc}: {}", h.summary());
            state::enqueue(store.conn(), rc, AlertState::Firing, &n, now)?;
        }
        Ok(due.len())
    }
}

/// What woke the evaluation.
enum Wake {
    Note(super::feed::Note),
    Due,
    Stop,
}

/// Runs the evaluation and the delivery until `stop` closes.
pub(crate) async fn run(
    mut engine: Engine,
    eval_store: StoreReader,
    deliver_store: StoreReader,
    live: Arc<Live>,
    feed: (
        Arc<super::feed::Feed>,
        smol::channel::Receiver<super::feed::Note>,
    ),
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
        if receivers.is_empty() {
            return;
        }
        let mut timer = smol::Timer::after(DELIVER_EVERY);
        loop {
            deliver::deliver_due(&deliver_store, &receivers, hold_s, &client).await;
            timer.set_after(DELIVER_EVERY);
            let woke = async { kicked.recv().await.is_ok() }
                .or(async {
                    let _ = stop2.recv().await;
                    false
                })
                .or(async {
                    (&mut timer).await;
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
    let (feed, notes) = feed;
    ex.run(async {
        let evaluating = engine.any_on();
        // One deadline: the next evaluation, at most EVAL_EVERY ahead, no sooner than EVAL_MIN
        // after the last one.
        let mut timer = if evaluating {
            smol::Timer::after(Duration::ZERO)
        } else {
            smol::Timer::never()
        };
        let mut due = Instant::now();
        let mut last = Instant::now() - EVAL_EVERY;
        let mut behind = feed.behind.load(Ordering::Relaxed);
        loop {
            let wake = async { notes.recv().await.map_or(Wake::Stop, Wake::Note) }
                .or(async {
                    let _ = stop.recv().await;
                    Wake::Stop
                })
                .or(async {
                    (&mut timer).await;
                    Wake::Due
                })
                .await;
            match wake {
                Wake::Stop => break,
                Wake::Note(n) => {
                    engine.recent.note(n);
                    while let Ok(n) = notes.try_recv() {
                        engine.recent.note(n);
                    }
                    let want = (last + EVAL_MIN).max(Instant::now());
                    if evaluating && want < due {
                        due = want;
                        timer.set_at(due);
                    }
                    continue;
                }
                Wake::Due => {}
            }
            let now_behind = feed.behind.load(Ordering::Relaxed);
            if now_behind != behind || engine.recent.stale {
                // Notes were lost: what waits is dropped and the last seconds read back once.
                behind = now_behind;
                while notes.try_recv().is_ok() {}
                if let Err(e) = engine
                    .recent
                    .resync(&eval_store, nasprobe_proto::time::now_ms())
                {
                    log::warn!("alerts: reading the last seconds back: {e:#}");
                }
            }
            last = Instant::now();
            due = last + EVAL_EVERY;
            timer.set_at(due);
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
