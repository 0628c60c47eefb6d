//! The pusher: every stored sample and event, in sequence order, in batches, to one target in
//! one of two encodings ([`Encoding`]):
//!
//! - VictoriaMetrics' import: Prometheus text with millisecond timestamps to
//!   `/api/v1/import/prometheus`, exactly once (below);
//! - Prometheus remote write 1.0 (`super::remote_write`: Prometheus, Mimir, Thanos, Cortex,
//!   VictoriaMetrics' `/api/v1/write`): batches of at most `MAX_SAMPLES_PER_SEND` samples, a
//!   smaller one at the latest `BATCH_SEND_DEADLINE` after the previous send; at least once: a
//!   2xx moves the cursor (a receiver answers after its WAL has the samples), a 5xx, a 429 or no
//!   answer is retried with backoff (30 ms doubling to 5 s) for as long as the command runs,
//!   the records waiting in the store; a 4xx is not retried: the batch is dropped, counted per
//!   host in the store (`nasprobe hosts list`) and the receiver's message logged once.
//!
//! Both go through the same series builder (`super::metrics`), with the `collector` label.
//!
//! VictoriaMetrics: nothing dropped, nothing sent twice, even when the engine is killed:
//!
//! - the store keeps per target and agent instance an [`ExportCursor`]: `acked`, the last
//!   sequence number the engine acknowledged (2xx), and `seq`, the last one it surely holds;
//! - VictoriaMetrics answers 2xx before the rows reach its disk (they sit in memory for a few
//!   seconds; a SIGKILL loses them), so an acknowledged batch becomes sure only once the engine
//!   was seen running, without a restart, `DURABLE_AFTER` after the acknowledgement (its
//!   `vm_app_start_timestamp` and uptime, from `/metrics`, checked every `EPOCH_CHECK`);
//! - when the engine restarted, or at start, or after a failed push (which may have been half
//!   ingested), the records after the sure cursor are sent again, but first the engine is asked
//!   (`/api/v1/export` over the batch's time range) which points it already holds, and those are
//!   left out. So a point is in the engine once, whatever was lost.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nasprobe_proto::{Event, Sample};

use super::metrics::{Stamper, WithCollector, emit_event, emit_sample};
use super::remote_write as rw;
use crate::store::{
    ExportCursor, ExportInstance, ExportRecord, ExportUnsent, Store, StoreError, decode_stored,
};

pub use super::pusher::*;

/// Records read from the store per batch at most.
pub const BATCH_RECORDS: usize = 2000;
/// An acknowledged batch is sure once the engine ran this long after it without restarting
/// (VictoriaMetrics keeps new rows in memory for seconds: 1.79 wrote them within ~9 s here).
pub(crate) const DURABLE_AFTER: Duration = Duration::from_secs(30);
/// How often the engine's start time is looked at while pushing.
pub(crate) const EPOCH_CHECK: Duration = Duration::from_secs(2);
/// Rows an engine acknowledged show in its queries only after a while, even after
/// `/internal/force_flush` (about 1 s with VictoriaMetrics 1.79): before asking which points it
/// holds, wait this long after the last import (of this process, or since it started).
pub const VISIBLE_AFTER: Duration = Duration::from_secs(3);
/// What one batch carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    pub samples: u64,
    pub events: u64,
    /// Points sent.
    pub lines: u64,
    /// Points left out because the engine already held them.
    pub skipped: u64,
    /// Points the receiver refused for good (remote write, 4xx): dropped, counted in the store.
    pub rejected: u64,
    /// Bytes on the wire (compressed for remote write).
    pub bytes: u64,
}

impl BatchStats {
    /// Adds another batch's figures.
    pub fn add(&mut self, b: &BatchStats) {
        self.samples += b.samples;
        self.events += b.events;
        self.lines += b.lines;
        self.skipped += b.skipped;
        self.rejected += b.rejected;
        self.bytes += b.bytes;
    }
}

/// The exporter's state between batches (lives with its store connection).
pub struct ExportState {
    instances: HashMap<i64, ExportInstance>,
    /// Sure and acknowledged cursors per instance (as in the store).
    cursors: HashMap<i64, ExportCursor>,
    /// Where the next batch starts (the acknowledged cursor, or the sure one after a restart).
    next: HashMap<i64, u64>,
    /// Records up to these seqs may already be in the engine: check before sending.
    check_upto: HashMap<i64, u64>,
    /// Check the whole next batch (it may have been half ingested by a failed push).
    check_next: bool,
    /// Acknowledged batches not yet sure: (when, cursors after it).
    pending: VecDeque<(Instant, Vec<(i64, u64)>)>,
    epoch: Option<Epoch>,
    durable_after: Duration,
    /// The last import (attempt), or when this state was made.
    last_import: Instant,
    /// The receiver's last refusal, said once.
    last_refusal: Option<String>,
}

impl ExportState {
    /// Reads the cursors of `pusher`'s target: everything after the sure cursor is sent, what
    /// was acknowledged before is checked against the engine first.
    pub fn load(store: &Store, key: &str) -> Result<ExportState, StoreError> {
        let cursors = store.export_cursor(key)?;
        Ok(ExportState {
            instances: HashMap::new(),
            next: cursors.iter().map(|(i, c)| (*i, c.seq)).collect(),
            check_upto: cursors
                .iter()
                .filter(|(_, c)| c.acked > c.seq)
                .map(|(i, c)| (*i, c.acked))
                .collect(),
            cursors,
            check_next: true,
            pending: VecDeque::new(),
            epoch: None,
            durable_after: DURABLE_AFTER,
            last_import: Instant::now(),
            last_refusal: None,
        })
    }

    /// Changes how long an acknowledged batch waits to be sure (tests).
    pub fn set_durable_after(&mut self, d: Duration) {
        self.durable_after = d;
    }

    fn instance(&mut self, store: &Store, row: i64) -> Result<Option<&ExportInstance>, StoreError> {
        if !self.instances.contains_key(&row) {
            self.instances = store
                .export_instances()?
                .into_iter()
                .map(|i| (i.row, i))
                .collect();
        }
        Ok(self.instances.get(&row))
    }

    /// Looks at the engine's epoch: a restart sends everything after the sure cursors again
    /// (checked); otherwise batches acknowledged long enough ago become sure.
    pub(crate) fn check_epoch(
        &mut self,
        store: &mut Store,
        pusher: &Pusher,
    ) -> Result<(), PushError> {
        let now = pusher.epoch()?;
        match self.epoch {
            Some(prev) if prev.restarted(&now) => {
                let unsure: u64 = self
                    .cursors
                    .values()
                    .map(|c| c.acked.saturating_sub(c.seq))
                    .sum();
                log::warn!(
                    "export to {}: the engine restarted; re-checking up to {unsure} records it \
                     acknowledged in the last {}s",
                    pusher.target.shown,
                    self.durable_after.as_secs()
                );
                for (i, c) in &self.cursors {
                    self.next.insert(*i, c.seq);
                    if c.acked > c.seq {
                        self.check_upto.insert(*i, c.acked);
                    }
                }
                self.pending.clear();
            }
            Some(_) => {
                let mut sure: Vec<(i64, ExportCursor)> = Vec::new();
                while let Some((t, _)) = self.pending.front() {
                    if now.at.saturating_duration_since(*t) < self.durable_after {
                        break;
                    }
                    let (_, after) = self.pending.pop_front().expect("front exists");
                    for (i, seq) in after {
                        let c = self.cursors.entry(i).or_default();
                        c.seq = c.seq.max(seq);
                        c.acked = c.acked.max(seq);
                        sure.retain(|x| x.0 != i);
                        sure.push((i, *c));
                    }
                }
                if !sure.is_empty() {
                    store.set_export_cursor(&pusher.target.cursor_key, &sure)?;
                }
            }
            None => {}
        }
        self.epoch = Some(now);
        Ok(())
    }

    /// True when nothing acknowledged waits to be sure.
    pub(crate) fn all_sure(&self) -> bool {
        self.pending.is_empty() && self.cursors.values().all(|c| c.acked <= c.seq)
    }
}

/// Pushes the next batch. `Ok(None)`: nothing is waiting.
pub(crate) fn push_batch(
    store: &mut Store,
    pusher: &Pusher,
    st: &mut ExportState,
    max_records: usize,
) -> Result<Option<BatchStats>, PushError> {
    let vm = pusher.target.encoding == Encoding::VmImport;
    if vm
        && st
            .epoch
            .is_none_or(|e| e.at.elapsed() >= EPOCH_CHECK || st.check_next)
    {
        st.check_epoch(store, pusher)?;
    }
    let recs = store.records_after(&st.next, max_records)?;
    if recs.is_empty() {
        return Ok(None);
    }
    st.instances.clear(); // the inventory of an instance may have grown
    let check = vm
        && (st.check_next
            || recs
                .iter()
                .any(|r| st.check_upto.get(&r.instance).is_some_and(|&u| r.seq <= u)));
    let have = if check {
        pusher.force_flush()?;
        let since = st.last_import.elapsed();
        if since < VISIBLE_AFTER {
            std::thread::sleep(VISIBLE_AFTER - since);
        }
        let mut have = HashSet::new();
        let mut hosts: Vec<(String, u64, u64)> = Vec::new();
        for r in &recs {
            let Some(inst) = st.instance(store, r.instance)? else {
                continue;
            };
            match hosts.iter_mut().find(|h| h.0 == inst.host) {
                Some(h) => {
                    h.1 = h.1.min(r.time_ms);
                    h.2 = h.2.max(r.time_ms);
                }
                None => hosts.push((inst.host.clone(), r.time_ms, r.time_ms)),
            }
        }
        for (host, from, to) in hosts {
            have.extend(pusher.existing(&host, from, to)?);
        }
        Some(have)
    } else {
        None
    };
    let mut out = Filtered {
        lines: Body::new(pusher.target.encoding),
        have: have.as_ref(),
        skipped: 0,
    };
    let mut stats = BatchStats::default();
    let mut stamps = Stamper::default();
    let mut after: Vec<(i64, u64)> = Vec::new();
    // What the batch holds per host, should the receiver refuse it.
    let mut per_host: Vec<ExportUnsent> = Vec::new();
    for r in &recs {
        if out.lines.full() {
            break; // records are per-instance prefixes: any prefix of the list is one too
        }
        let before = out.lines.points();
        render(
            store,
            st,
            &mut stamps,
            r,
            &pusher.collector,
            &mut out,
            &mut stats,
        )?;
        if let Some(inst) = st.instance(store, r.instance)? {
            let host = inst.host.clone();
            let u = match per_host.iter_mut().position(|u| u.host == host) {
                Some(i) => &mut per_host[i],
                None => {
                    per_host.push(ExportUnsent {
                        host,
                        ..Default::default()
                    });
                    per_host.last_mut().expect("just pushed")
                }
            };
            match r.is_event {
                true => u.events += 1,
                false => u.samples += 1,
            }
            u.points += (out.lines.points() - before) as u64;
        }
        match after.last_mut() {
            Some((i, s)) if *i == r.instance => *s = r.seq,
            _ => after.push((r.instance, r.seq)),
        }
    }
    let points = out.lines.points() as u64;
    if points > 0 {
        let r = pusher.send(&out.lines);
        st.last_import = Instant::now();
        match r {
            Ok(b) => stats.bytes = b,
            Err(e) if !vm && refused_for_good(&e) => {
                let msg = e.to_string();
                if st.last_refusal.as_deref() != Some(msg.as_str()) {
                    log::info!("remote write: {msg}; the batch is dropped, not retried");
                    crate::errln!(
                        "nasprobe: remote write: {msg}; {points} points dropped (not retried; \
                         counted in 'nasprobe hosts list')"
                    );
                    st.last_refusal = Some(msg.clone());
                }
                for mut u in per_host {
                    u.last_error = nasprobe_proto::sanitize::text(&msg);
                    store.add_export_unsent(&pusher.target.cursor_key, &u)?;
                }
                stats.rejected = points;
                // Counted in the store as refused, not as pushed.
                (stats.samples, stats.events) = (0, 0);
            }
            Err(e) => {
                st.check_next = true; // it may have been half ingested
                return Err(e);
            }
        }
    }
    // Acknowledged (or refused for good): record it, then move on. A remote write receiver
    // answers once its WAL has the samples: sure at once.
    let acked: Vec<(i64, ExportCursor)> = after
        .iter()
        .map(|(i, s)| {
            let c = st.cursors.entry(*i).or_default();
            c.acked = c.acked.max(*s);
            if !vm {
                c.seq = c.acked;
            }
            (*i, *c)
        })
        .collect();
    store.set_export_cursor(&pusher.target.cursor_key, &acked)?;
    for (i, s) in &after {
        st.next.insert(*i, *s);
        if st.check_upto.get(i).is_some_and(|u| u <= s) {
            st.check_upto.remove(i);
        }
    }
    if vm {
        st.pending.push_back((Instant::now(), after));
    }
    st.check_next = false;
    stats.lines = points - stats.rejected;
    stats.skipped = out.skipped;
    Ok(Some(stats))
}

fn render(
    store: &Store,
    st: &mut ExportState,
    stamps: &mut Stamper,
    r: &ExportRecord,
    collector: &str,
    out: &mut Filtered<'_>,
    stats: &mut BatchStats,
) -> Result<(), StoreError> {
    let out = &mut WithCollector {
        inner: out,
        name: collector,
    };
    let key = (r.instance, r.is_event);
    if !stamps.knows(key) {
        let before = store.record_times_before(r.instance, r.seq, r.is_event, 16)?;
        stamps.seed(key, &before);
    }
    let ts = stamps.stamp(key, r.time_ms);
    let Some(inst) = st.instance(store, r.instance)? else {
        return Ok(());
    };
    if r.is_event {
        if let Some(e) = decode_stored::<Event>(&r.body) {
            emit_event(out, &inst.host, &e, ts);
            stats.events += 1;
        }
    } else if let Some(s) = decode_stored::<Sample>(&r.body) {
        emit_sample(out, &inst.host, &inst.hello, &s, ts);
        stats.samples += 1;
    } else {
        log::warn!(
            "export: sample seq {} of instance row {} does not decode; skipped",
            r.seq,
            r.instance
        );
    }
    Ok(())
}

/// Totals of an exporter, shared with whoever started it.
#[derive(Debug, Default)]
pub(crate) struct ExportLive {
    pub samples: AtomicU64,
    pub events: AtomicU64,
    pub lines: AtomicU64,
    pub skipped: AtomicU64,
    pub rejected: AtomicU64,
    pub batches: AtomicU64,
    pub failures: AtomicU64,
    /// True while everything stored has been pushed (as of the last look).
    pub caught_up: AtomicBool,
}

/// A background exporter: its own store connection and thread, pushes through `smol::unblock`.
pub(crate) struct Exporter {
    pub live: Arc<ExportLive>,
    /// The target's URL.
    pub url: String,
    /// Closed to ask the exporter to stop (its sleeps race it: no polling).
    stop: smol::channel::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the exporter runs.
#[derive(Debug, Clone)]
pub(crate) struct ExportOptions {
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

impl ExportOptions {
    /// The defaults of a target's encoding: remote write looks at the store once per
    /// `BATCH_SEND_DEADLINE` unless a batch was full.
    pub(crate) fn for_encoding(e: Encoding) -> ExportOptions {
        match e {
            Encoding::VmImport => ExportOptions::default(),
            Encoding::RemoteWrite => ExportOptions {
                poll: rw::BATCH_SEND_DEADLINE,
                ..ExportOptions::default()
            },
        }
    }
}

impl Exporter {
    /// Starts pushing the store at `db` to `pusher`'s target.
    pub fn start(db: PathBuf, pusher: Pusher, opts: ExportOptions) -> anyhow::Result<Exporter> {
        let store = Store::open(&db)?;
        let state = ExportState::load(&store, &pusher.target.cursor_key)?;
        let live = Arc::new(ExportLive::default());
        let (stop, stop_rx) = smol::channel::bounded::<()>(1);
        let l2 = live.clone();
        let url = pusher.target.shown.clone();
        let thread = std::thread::Builder::new()
            .name("export".into())
            .stack_size(16 << 20)
            .spawn(move || smol::block_on(run(store, state, pusher, opts, l2, stop_rx)))?;
        Ok(Exporter {
            live,
            url,
            stop,
            thread: Some(thread),
        })
    }

    /// Asks it to stop after pushing what is left (for at most the drain time), and waits.
    pub fn finish(mut self) {
        self.stop.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn run(
    store: Store,
    state: ExportState,
    pusher: Pusher,
    opts: ExportOptions,
    live: Arc<ExportLive>,
    stop: smol::channel::Receiver<()>,
) {
    let url = pusher.target.shown.clone();
    let remote_write = pusher.target.encoding == Encoding::RemoteWrite;
    let (min_backoff, max_backoff) = match remote_write {
        true => (rw::MIN_BACKOFF, rw::MAX_BACKOFF),
        false => (Duration::from_millis(250), Duration::from_secs(5)),
    };
    let mut held = Some((store, state));
    let mut wait = min_backoff;
    let mut last_error: Option<String> = None;
    let mut stop_at: Option<Instant> = None;
    // The verdict goes once a minute (best effort: not stored, so not sent later if lost).
    let minute = |ms: u64| ms / 60_000;
    let mut verdict_sent = minute(nasprobe_proto::time::now_ms());
    loop {
        if stop.is_closed() && stop_at.is_none() {
            stop_at = Some(Instant::now() + opts.drain);
        }
        let (mut store, mut st) = held.take().expect("state is put back");
        let p = pusher.clone();
        let n = opts.batch_records;
        let now_min = minute(nasprobe_proto::time::now_ms());
        let verdict_at = (now_min > verdict_sent).then_some(now_min * 60_000);
        let (s, t, r) = smol::unblock(move || {
            let r = push_batch(&mut store, &p, &mut st, n);
            if let (Ok(None), Some(at)) = (&r, verdict_at) {
                let mut body = Body::new(p.target.encoding);
                let mut sink = WithCollector {
                    inner: &mut body,
                    name: &p.collector,
                };
                let sent = super::verdict::emit_verdict(&mut sink, &store, at)
                    .map_err(|e| e.to_string())
                    .and_then(|_| match body.points() {
                        0 => Ok(()),
                        _ => p.send(&body).map(|_| ()).map_err(|e| e.to_string()),
                    });
                if let Err(e) = sent {
                    log::info!("export: verdict at {at}: {e}");
                }
            }
            (store, st, r)
        })
        .await;
        if matches!(r, Ok(None)) && verdict_at.is_some() {
            verdict_sent = now_min;
        }
        held = Some((s, t));
        let pause = match r {
            Ok(Some(b)) => {
                live.samples.fetch_add(b.samples, Ordering::Relaxed);
                live.events.fetch_add(b.events, Ordering::Relaxed);
                live.lines.fetch_add(b.lines, Ordering::Relaxed);
                live.skipped.fetch_add(b.skipped, Ordering::Relaxed);
                live.rejected.fetch_add(b.rejected, Ordering::Relaxed);
                live.batches.fetch_add(1, Ordering::Relaxed);
                live.caught_up.store(false, Ordering::Relaxed);
                if last_error.take().is_some() {
                    log::warn!("export to {url}: works again");
                    crate::output::note(format_args!("export to {url} works again"));
                }
                wait = min_backoff;
                // Remote write: a batch that was not full was all there was; the next one
                // goes after the deadline, or sooner when stopping.
                match remote_write
                    && b.lines + b.rejected < rw::MAX_SAMPLES_PER_SEND as u64
                    && stop_at.is_none()
                {
                    true => opts.poll,
                    false => Duration::ZERO,
                }
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
                    crate::errln!(
                        "nasprobe: export: {msg}; records wait in the store and go when it answers"
                    );
                    last_error = Some(msg);
                }
                let w = wait;
                wait = (wait * 2).min(max_backoff);
                w
            }
        };
        if let Some(t) = stop_at
            && Instant::now() >= t
        {
            if !live.caught_up.load(Ordering::Relaxed) {
                let cmd = match remote_write {
                    true => "--remote-write",
                    false => "--push-vm",
                };
                crate::errln!(
                    "nasprobe: export to {url}: stopping with records not yet pushed; they wait \
                     in the store ('nasprobe export {cmd} {url}' sends them)"
                );
            }
            return;
        }
        // The pause, cut short by a stop request (once draining, the pause is kept: a failing
        // target is not hammered).
        let sleep = async {
            smol::Timer::after(pause).await;
        };
        if stop_at.is_none() {
            smol::future::or(sleep, async {
                let _ = stop.recv().await;
            })
            .await;
        } else {
            sleep.await;
        }
    }
}

/// Pushes everything waiting for `pusher`'s target and returns (totals, seconds taken).
/// Fails on the first error (the cursors keep what went through).
pub fn backfill(
    store: &mut Store,
    pusher: &Pusher,
    batch_records: usize,
    mut progress: impl FnMut(&BatchStats),
) -> Result<(BatchStats, f64), PushError> {
    let mut st = ExportState::load(store, &pusher.target.cursor_key)?;
    backfill_with(store, pusher, &mut st, batch_records, &mut progress)
}

/// [`backfill`] with a given state.
pub fn backfill_with(
    store: &mut Store,
    pusher: &Pusher,
    st: &mut ExportState,
    batch_records: usize,
    progress: &mut dyn FnMut(&BatchStats),
) -> Result<(BatchStats, f64), PushError> {
    let start = Instant::now();
    let mut total = BatchStats::default();
    while let Some(b) = push_batch(store, pusher, st, batch_records)? {
        total.add(&b);
        progress(&total);
    }
    Ok((total, start.elapsed().as_secs_f64()))
}

/// [`backfill_with`] that retries a failed send (no answer, 5xx, 429) with the remote write
/// backoff until `retry_for` has passed without progress; a refusal (4xx) is counted and the
/// push goes on.
pub fn backfill_retrying(
    store: &mut Store,
    pusher: &Pusher,
    st: &mut ExportState,
    retry_for: Duration,
) -> Result<(BatchStats, f64), PushError> {
    let start = Instant::now();
    let mut total = BatchStats::default();
    let mut progress = Instant::now();
    let mut wait = rw::MIN_BACKOFF;
    loop {
        match push_batch(store, pusher, st, BATCH_RECORDS) {
            Ok(Some(b)) => {
                total.add(&b);
                progress = Instant::now();
                wait = rw::MIN_BACKOFF;
            }
            Ok(None) => return Ok((total, start.elapsed().as_secs_f64())),
            // A refused certificate does not get better by waiting.
            Err(e) if progress.elapsed() < retry_for && !matches!(e, PushError::Certificate(_)) => {
                log::info!("export: {e}; retrying in {wait:?}");
                std::thread::sleep(wait);
                wait = (wait * 2).min(rw::MAX_BACKOFF);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits (looking at the engine every `EPOCH_CHECK`) until every acknowledged batch is sure,
/// for at most `max`. Returns true when all are sure.
pub fn wait_sure(
    store: &mut Store,
    pusher: &Pusher,
    st: &mut ExportState,
    max: Duration,
) -> Result<bool, PushError> {
    let until = Instant::now() + max;
    loop {
        st.check_epoch(store, pusher)?;
        if st.all_sure() {
            return Ok(true);
        }
        if Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(EPOCH_CHECK.min(until - Instant::now()));
    }
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
        assert_eq!(VmTarget::parse("https://vm").unwrap().base, "https://vm");
        assert!(VmTarget::parse("http://").is_err());
        assert!(VmTarget::parse("ftp://vm").is_err());
    }

    #[test]
    fn series_keys_ignore_label_order_and_empty_values() {
        assert_eq!(
            series_key("m", &[("host", "a"), ("cpu", "0"), ("device", "")]),
            series_key("m", &[("cpu", "0"), ("host", "a")])
        );
        assert_ne!(
            series_key("m", &[("host", "a")]),
            series_key("m", &[("host", "b")])
        );
    }

    #[test]
    fn restarts() {
        let t0 = Instant::now();
        let e = |start: f64, uptime: f64, after: u64| Epoch {
            start,
            uptime,
            at: t0 + Duration::from_secs(after),
        };
        let a = e(100.0, 50.0, 0);
        assert!(!a.restarted(&e(100.0, 60.0, 10)));
        assert!(a.restarted(&e(160.0, 0.0, 10)));
        // Same second, but the uptime went back.
        assert!(a.restarted(&e(100.0, 1.0, 10)));
    }
}
