//! The live verdict of `watch`: the report's own analysis over the last minute of the store,
//! recomputed every few seconds in a thread of its own, so the banner says exactly what `report`
//! would say of that minute.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use nasprobe_analysis::Report;
use nasprobe_analysis::verdict::Resource;

use crate::store::{Store, StoreReader};

/// The window the live verdict judges: the last minute, as the field cases are read.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// How often it is recomputed: the figures are medians over the window, so they move slowly.
pub(crate) const REFRESH: Duration = Duration::from_secs(3);

/// What the banner shows.
#[derive(Debug, Clone, Default)]
pub struct Banner {
    /// The report's first line ("Verdict: the wall is on dst: ...").
    pub verdict: String,
    /// `bottleneck.resource` (`Resource::None` when nothing is near a ceiling).
    pub resource: Resource,
    /// The host of the wall, if any.
    pub wall_host: Option<String>,
    /// "src → dst 97 MB/s sustained, excellent on 1 GbE", when a flow was found.
    pub flow: Option<String>,
    /// Evidence sentences (the `v` view), ruled-out ones apart.
    pub evidence: Vec<String>,
    pub ruled_out: Vec<String>,
    pub would_not_help: Vec<String>,
    /// Seconds of data in the window, while it is still filling (None once it is full).
    pub gathering_s: Option<u64>,
    /// The summaries of the alerts firing now (`crate::alerts`), when the run evaluates them.
    pub alerts: Vec<String>,
}

impl Banner {
    /// The banner of a report over `seconds_of_data` of the window.
    pub fn from_report(r: &Report, seconds_of_data: u64) -> Banner {
        let b = &r.bottleneck;
        Banner {
            verdict: nasprobe_analysis::text::verdict_line(r),
            resource: b.resource,
            wall_host: b.host.clone(),
            flow: r.flow.as_ref().map(|f| {
                let ends = match (&f.from, &f.to) {
                    (Some(a), Some(b)) => format!("{a} → {b}"),
                    (Some(a), None) => format!("{a} →"),
                    (None, Some(b)) => format!("→ {b}"),
                    (None, None) => "flow".into(),
                };
                let grade = f
                    .grade
                    .as_deref()
                    .map(|g| format!(", {} on 1 GbE", g.replace('_', " ")))
                    .unwrap_or_default();
                format!(
                    "{ends} {:.0} MB/s sustained (peak {:.0}){grade}",
                    f.sustained_mb_s, f.peak_mb_s
                )
            }),
            evidence: b
                .evidence
                .iter()
                .filter(|e| !b.ruled_out.contains(e))
                .cloned()
                .collect(),
            ruled_out: b.ruled_out.clone(),
            would_not_help: b.would_not_help.clone(),
            gathering_s: (seconds_of_data < WINDOW.as_secs()).then_some(seconds_of_data),
            alerts: Vec::new(),
        }
    }
}

/// The verdict over the last `WINDOW` of the store at `db`, or None while nothing is stored.
pub fn compute(store: &StoreReader) -> anyhow::Result<Option<Banner>> {
    let (hosts, analysis) = crate::store::window::load(store, Some(WINDOW), None)?;
    let now = nasprobe_proto::time::now_ms();
    let first = hosts
        .iter()
        .filter_map(|h| h.samples.first().map(|s| s.time_ms))
        .min();
    let Some(first) = first else {
        return Ok(None);
    };
    let seconds = now.saturating_sub(first) / 1000;
    Ok(Some(Banner::from_report(&analysis.report, seconds)))
}

/// The thread that keeps the latest banner; stops when dropped.
pub(crate) struct LiveVerdict {
    latest: Arc<Mutex<Option<Result<Banner, String>>>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// The alert task's state, whose firing alerts the banner lists.
    alerts: Option<Arc<crate::alerts::Shared>>,
}

impl LiveVerdict {
    /// Starts recomputing over the store at `db` (its own connection: the store task writes
    /// through another one; WAL lets both work).
    pub(crate) fn start(db: PathBuf) -> LiveVerdict {
        let latest = Arc::new(Mutex::new(None));
        let (stop, wait) = mpsc::channel::<()>();
        let out = latest.clone();
        let thread = std::thread::Builder::new()
            .name("live-verdict".into())
            .spawn(move || {
                let store = match Store::open(&db).map(Store::into_reader) {
                    Ok(s) => s,
                    Err(e) => {
                        *out.lock().expect("not poisoned") = Some(Err(e.to_string()));
                        return;
                    }
                };
                loop {
                    let next = match compute(&store) {
                        Ok(Some(b)) => Some(Ok(b)),
                        Ok(None) => None,
                        Err(e) => Some(Err(format!("{e:#}"))),
                    };
                    *out.lock().expect("not poisoned") = next;
                    match wait.recv_timeout(REFRESH) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            })
            .ok();
        LiveVerdict {
            latest,
            stop: Some(stop),
            thread,
            alerts: None,
        }
    }

    /// The banner lists the alerts `shared` says are firing.
    pub(crate) fn with_alerts(mut self, shared: Arc<crate::alerts::Shared>) -> LiveVerdict {
        self.alerts = Some(shared);
        self
    }

    /// The latest banner: None while nothing is stored, Err when the analysis failed.
    pub(crate) fn latest(&self) -> Option<Result<Banner, String>> {
        let mut b = self.latest.lock().ok().and_then(|b| b.clone());
        if let (Some(Ok(b)), Some(a)) = (&mut b, &self.alerts) {
            b.alerts = a.firing.lock().map(|f| f.clone()).unwrap_or_default();
        }
        b
    }
}

impl Drop for LiveVerdict {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
    }
}
