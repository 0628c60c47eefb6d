//! Push to VictoriaMetrics: every stored sample and event, in sequence order, as Prometheus
//! text with millisecond timestamps to `/api/v1/import/prometheus`, in batches.
//!
//! Exactly once: the store keeps, per target and agent instance, the last sequence number the
//! target acknowledged (`export_cursors`). A batch is the next records after the cursors; the
//! cursors move only after the import answered 2xx and (by default) VictoriaMetrics flushed what
//! it received to disk (`/internal/force_flush`), so a VictoriaMetrics killed right after its
//! answer loses nothing that the cursor says it has. When the engine is down or slow, records
//! wait in the store and go when it answers again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nasprobe_proto::{Event, Sample};

use super::format::PromLines;
use super::metrics::{emit_event, emit_sample};
use crate::store::{ExportInstance, Store, StoreError};

/// Records read from the store per batch at most.
pub const BATCH_RECORDS: usize = 2000;
/// A batch's body is cut after this many bytes (the rest goes in the next one).
pub const BATCH_BYTES: usize = 8 << 20;

/// Where to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmTarget {
    /// `http://host:port` (with any path prefix, e.g. a vmauth route), no trailing slash.
    pub base: String,
    /// The key of this target's cursors in the store.
    pub cursor_key: String,
}

impl VmTarget {
    /// Accepts `http://host:port`, `host:port`, or a URL ending in `/api/v1/import/prometheus`.
    pub fn parse(url: &str) -> anyhow::Result<VmTarget> {
        let mut u = url.trim().to_string();
        if u.starts_with("https://") {
            anyhow::bail!(
                "{url}: https is not supported by this build (plain http only); put the engine \
                 behind a local proxy or use http on a trusted network"
            );
        }
        if !u.starts_with("http://") {
            u = format!("http://{u}");
        }
        if let Some(s) = u.strip_suffix("/api/v1/import/prometheus") {
            u = s.to_string();
        }
        while u.len() > "http://".len() && u.ends_with('/') {
            u.pop();
        }
        let host = &u["http://".len()..];
        anyhow::ensure!(
            !host.is_empty() && !host.contains(['?', '#', ' ']),
            "{url}: not a VictoriaMetrics URL (example: http://127.0.0.1:8428)"
        );
        Ok(VmTarget {
            cursor_key: format!("vm {u}"),
            base: u,
        })
    }

    pub fn import_url(&self) -> String {
        format!("{}/api/v1/import/prometheus", self.base)
    }

    pub fn flush_url(&self) -> String {
        format!("{}/internal/force_flush", self.base)
    }
}

/// Why a push did not go through.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("{url}: {source}")]
    Http { url: String, source: ureq::Error },
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An HTTP client for one target.
#[derive(Clone)]
pub struct Pusher {
    pub target: VmTarget,
    agent: ureq::Agent,
    /// Ask VictoriaMetrics to flush to disk before the cursor moves.
    pub flush: bool,
}

impl Pusher {
    pub fn new(target: VmTarget, timeout: Duration) -> Pusher {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Pusher {
            target,
            agent,
            flush: true,
        }
    }

    fn check(
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(), PushError> {
        let mut resp = r.map_err(|source| PushError::Http {
            url: url.to_string(),
            source,
        })?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            // Drain the (empty) body so the connection is reused.
            let _ = resp.body_mut().read_to_string();
            return Ok(());
        }
        let body = resp
            .body_mut()
            .with_config()
            .limit(4096)
            .read_to_string()
            .unwrap_or_default();
        Err(PushError::Status {
            url: url.to_string(),
            status,
            body: body.trim().chars().take(300).collect(),
        })
    }

    /// POSTs Prometheus text lines; then, with `flush`, asks for a flush to disk.
    pub fn push(&self, body: &[u8]) -> Result<(), PushError> {
        let url = self.target.import_url();
        Self::check(
            &url,
            self.agent
                .post(&url)
                .header("Content-Type", "text/plain")
                .send(body),
        )?;
        if self.flush {
            let url = self.target.flush_url();
            Self::check(&url, self.agent.get(&url).call())?;
        }
        Ok(())
    }
}

/// What one batch carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    pub samples: u64,
    pub events: u64,
    pub lines: u64,
    pub bytes: u64,
}

/// Instances by row, reloaded when a record names one not known yet.
#[derive(Default)]
pub struct Instances(HashMap<i64, ExportInstance>);

impl Instances {
    fn get(&mut self, store: &Store, row: i64) -> Result<Option<&ExportInstance>, StoreError> {
        if !self.0.contains_key(&row) {
            self.0 = store
                .export_instances()?
                .into_iter()
                .map(|i| (i.row, i))
                .collect();
        }
        Ok(self.0.get(&row))
    }

    /// Forgets everything (the inventory of an instance may have grown).
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// Pushes the next batch after the cursors and moves them. `Ok(None)`: nothing is waiting.
pub fn push_batch(
    store: &mut Store,
    pusher: &Pusher,
    instances: &mut Instances,
    max_records: usize,
) -> Result<Option<BatchStats>, PushError> {
    let key = pusher.target.cursor_key.clone();
    let recs = store.samples_after_cursor(&key, max_records)?;
    if recs.is_empty() {
        return Ok(None);
    }
    instances.clear();
    let mut lines = PromLines {
        buf: Vec::with_capacity(BATCH_BYTES + (1 << 16)),
        lines: 0,
    };
    let mut stats = BatchStats::default();
    let mut cursors: Vec<(i64, u64)> = Vec::new();
    for r in &recs {
        if lines.buf.len() >= BATCH_BYTES {
            break; // records are per-instance prefixes: any prefix of the list is one too
        }
        if let Some(inst) = instances.get(store, r.instance)? {
            if r.is_event {
                if let Ok(e) = postcard::from_bytes::<Event>(&r.body) {
                    emit_event(&mut lines, &inst.host, &e, r.time_ms);
                    stats.events += 1;
                }
            } else if let Ok(s) = postcard::from_bytes::<Sample>(&r.body) {
                emit_sample(&mut lines, &inst.host, &inst.hello, &s, r.time_ms);
                stats.samples += 1;
            } else {
                log::warn!(
                    "export: sample seq {} of instance row {} does not decode; skipped",
                    r.seq,
                    r.instance
                );
            }
        }
        match cursors.last_mut() {
            Some((i, s)) if *i == r.instance => *s = r.seq,
            _ => cursors.push((r.instance, r.seq)),
        }
    }
    if !lines.buf.is_empty() {
        pusher.push(&lines.buf)?;
    }
    store.set_export_cursor(&key, &cursors)?;
    stats.lines = lines.lines as u64;
    stats.bytes = lines.buf.len() as u64;
    Ok(Some(stats))
}

/// Totals of an exporter, shared with whoever started it.
#[derive(Debug, Default)]
pub struct ExportLive {
    pub samples: AtomicU64,
    pub events: AtomicU64,
    pub lines: AtomicU64,
    pub batches: AtomicU64,
    pub failures: AtomicU64,
    /// True while everything stored has been pushed (as of the last look).
    pub caught_up: AtomicBool,
}

/// A background exporter: its own store connection and thread, pushes through `smol::unblock`.
pub struct Exporter {
    pub live: Arc<ExportLive>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the exporter runs.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Wait between looks at the store when everything was pushed.
    pub poll: Duration,
    /// After stop, keep pushing what is left for at most this long.
    pub drain: Duration,
    pub batch_records: usize,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            poll: Duration::from_millis(500),
            drain: Duration::from_secs(15),
            batch_records: BATCH_RECORDS,
        }
    }
}

impl Exporter {
    /// Starts pushing the store at `db` to `pusher`'s target.
    pub fn start(db: PathBuf, pusher: Pusher, opts: ExportOptions) -> anyhow::Result<Exporter> {
        let store = Store::open(&db)?;
        let live = Arc::new(ExportLive::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (l2, s2) = (live.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("export-vm".into())
            .stack_size(16 << 20)
            .spawn(move || smol::block_on(run(store, pusher, opts, l2, s2)))?;
        Ok(Exporter {
            live,
            stop,
            thread: Some(thread),
        })
    }

    /// Asks it to stop after pushing what is left (for at most the drain time), and waits.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn run(
    store: Store,
    pusher: Pusher,
    opts: ExportOptions,
    live: Arc<ExportLive>,
    stop: Arc<AtomicBool>,
) {
    let url = pusher.target.base.clone();
    let mut state = Some((store, Instances::default()));
    let mut wait = Duration::from_millis(250);
    let mut last_error: Option<String> = None;
    let mut stop_at: Option<Instant> = None;
    loop {
        if stop.load(Ordering::SeqCst) && stop_at.is_none() {
            stop_at = Some(Instant::now() + opts.drain);
        }
        let (mut store, mut inst) = state.take().expect("state is put back");
        let p = pusher.clone();
        let n = opts.batch_records;
        let (s, i, r) = smol::unblock(move || {
            let r = push_batch(&mut store, &p, &mut inst, n);
            (store, inst, r)
        })
        .await;
        state = Some((s, i));
        let pause = match r {
            Ok(Some(b)) => {
                live.samples.fetch_add(b.samples, Ordering::Relaxed);
                live.events.fetch_add(b.events, Ordering::Relaxed);
                live.lines.fetch_add(b.lines, Ordering::Relaxed);
                live.batches.fetch_add(1, Ordering::Relaxed);
                live.caught_up.store(false, Ordering::Relaxed);
                if last_error.take().is_some() {
                    log::warn!("export to {url}: works again");
                    eprintln!("nasprobe: export to {url} works again");
                }
                wait = Duration::from_millis(250);
                Duration::ZERO
            }
            Ok(None) => {
                live.caught_up.store(true, Ordering::Relaxed);
                if stop_at.is_some() {
                    return;
                }
                opts.poll
            }
            Err(e) => {
                live.failures.fetch_add(1, Ordering::Relaxed);
                let msg = e.to_string();
                if last_error.as_deref() != Some(msg.as_str()) {
                    log::warn!("export: {msg}; records wait in the store");
                    eprintln!(
                        "nasprobe: export: {msg}; records wait in the store and go when it answers"
                    );
                    last_error = Some(msg);
                }
                let w = wait;
                wait = (wait * 2).min(Duration::from_secs(10));
                w
            }
        };
        if let Some(t) = stop_at
            && Instant::now() >= t
        {
            if !live.caught_up.load(Ordering::Relaxed) {
                eprintln!(
                    "nasprobe: export to {url}: stopping with records not yet pushed; they wait \
                     in the store ('nasprobe export --push-vm {url}' sends them)"
                );
            }
            return;
        }
        // Sleep in small steps so a stop request is seen quickly.
        let until = Instant::now() + pause;
        while Instant::now() < until {
            if stop.load(Ordering::SeqCst) && stop_at.is_none() {
                break;
            }
            smol::Timer::after((until - Instant::now()).min(Duration::from_millis(50))).await;
        }
    }
}

/// Pushes everything waiting for `pusher`'s target and returns (totals, seconds taken).
/// Fails on the first error (the cursor keeps what went through).
pub fn backfill(
    store: &mut Store,
    pusher: &Pusher,
    batch_records: usize,
    mut progress: impl FnMut(&BatchStats),
) -> Result<(BatchStats, f64), PushError> {
    let start = Instant::now();
    let mut total = BatchStats::default();
    let mut inst = Instances::default();
    while let Some(b) = push_batch(store, pusher, &mut inst, batch_records)? {
        total.samples += b.samples;
        total.events += b.events;
        total.lines += b.lines;
        total.bytes += b.bytes;
        progress(&total);
    }
    Ok((total, start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_urls() {
        let t = VmTarget::parse("127.0.0.1:8428").unwrap();
        assert_eq!(t.base, "http://127.0.0.1:8428");
        assert_eq!(
            t.import_url(),
            "http://127.0.0.1:8428/api/v1/import/prometheus"
        );
        assert_eq!(
            VmTarget::parse("http://vm:8428/api/v1/import/prometheus").unwrap(),
            VmTarget::parse("http://vm:8428/").unwrap()
        );
        assert!(VmTarget::parse("https://vm").is_err());
        assert!(VmTarget::parse("http://").is_err());
    }
}
