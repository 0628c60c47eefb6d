//! The supervisor: one smol task per agent, a bounded channel into the one task that owns the
//! store.
//!
//! Each agent task connects, authenticates, asks the store task where to resume (after the
//! last sequence number committed for that agent instance), then forwards every record. When
//! the store cannot write (disk full, database locked) the store task keeps its batch and
//! retries; the channel fills, the agent tasks block on it and stop reading, and the agents'
//! rings keep the data until writes work again. Nothing is dropped on the collector side.
//!
//! Views read the shared [`Live`] state (`live.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use smol::channel::{Receiver, Sender};
use smol::future::FutureExt as _;

use nasprobe_proto::time::now_ms;

use crate::hosts::HostSpec;
use crate::net::client::{ClientError, Session};
use crate::net::gate::{Gate, Refusal, note_refusal};
pub use crate::net::live::{HostLive, Live, Status, StoreMsg, Unstored};
use crate::store::{Item, Retention, Store, StoreError};

/// Records per transaction at most.
pub(crate) const BATCH_MAX: usize = 500;
/// A batch is written at the latest this long after its first record.
pub(crate) const BATCH_WAIT: Duration = Duration::from_millis(200);
/// Channel capacity between agent tasks and the store task.
pub(crate) const CHANNEL_CAP: usize = 4096;
/// Reconnect backoff: first wait and cap.
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(500);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A recorder running for weeks applies `--retention` again after a batch once this long has
/// passed since it last did (the tiers' finest cutoff moves by the minute; an hour's worth of
/// old rows is little to delete at once).
pub(crate) const RETENTION_EVERY: Duration = Duration::from_secs(3600);

/// Capped exponential backoff with ±25% jitter.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: BACKOFF_MIN }
    }
}

impl Backoff {
    pub fn reset(&mut self) {
        self.next = BACKOFF_MIN;
    }

    /// The wait before the next attempt; doubles the one after, up to the cap.
    pub(crate) fn next_wait(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        let mut r = [0u8; 2];
        getrandom::fill(&mut r).ok();
        let jitter = f64::from(u16::from_le_bytes(r)) / f64::from(u16::MAX); // 0..1
        base.mul_f64(0.75 + 0.5 * jitter)
    }
}

/// Runs one agent's connection forever: connect, resume, forward; reconnect with backoff.
pub async fn agent_task(
    idx: usize,
    spec: HostSpec,
    token: Arc<Vec<u8>>,
    tx: Sender<StoreMsg>,
    live: Arc<Live>,
) {
    let mut backoff = Backoff::default();
    loop {
        live.with(idx, |h| h.status = Status::Connecting);
        let started = Instant::now();
        let err = match Box::pin(run_connection(idx, &spec, &token, &tx, &live)).await {
            Ok(()) => return, // the store task is gone: shutting down
            Err(e) => e,
        };
        if started.elapsed() > Duration::from_secs(30) {
            backoff.reset();
        }
        let mut wait = backoff.next_wait();
        let client = match &err {
            ConnError::Client(c) | ConnError::Streamed(c) => Some(c),
            ConnError::Store { .. } => None,
        };
        if let Some(c) = client
            && (c.is_configuration() || c.is_bad_agent())
        {
            wait = wait.max(Duration::from_secs(10));
        }

        if let Some(ClientError::Tampered { .. }) = client {
            // Someone between altered the stream: nothing of it was stored; the gap lasts
            // until a connection streams again (the resume then fills it from the ring).
            live.with(idx, |h| h.gap = Some(err.to_string()));
        }
        let config = client.is_some_and(|c| c.is_configuration());
        live.with(idx, |h| h.config_error = config.then(|| err.to_string()));
        // A refusal before the registration (the handshake's sealed frames, a bad Hello, proof
        // or version): filed under the host's newest instance, if it has one.
        let error = err.to_string();
        let refusal = match &err {
            ConnError::Client(ClientError::Tampered { .. }) => Some(Refusal::Tampered),
            ConnError::Client(c) if c.is_bad_agent() => Some(Refusal::BadHost { error: &error }),
            _ => None,
        };
        if let Some(item) = refusal.and_then(|r| note_refusal(&live, idx, &spec.name, None, r))
            && tx.send(StoreMsg::Item(item)).await.is_err()
        {
            return; // the store task is gone: shutting down
        }
        log::warn!("{err}; retrying in {:.1}s", wait.as_secs_f64());
        live.with(idx, |h| {
            h.status = Status::Reconnecting {
                error: err.to_string(),
                retry_in: wait,
            }
        });
        smol::Timer::after(wait).await;
    }
}

#[derive(Debug, thiserror::Error)]
enum ConnError {
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The stream ended on `ClientError` after its refusal (if any) was noted and stored.
    #[error(transparent)]
    Streamed(ClientError),
    #[error("{host}: the store refused the agent's Hello: {msg}")]
    Store { host: String, msg: String },
}

async fn run_connection(
    idx: usize,
    spec: &HostSpec,
    token: &[u8],
    tx: &Sender<StoreMsg>,
    live: &Live,
) -> Result<(), ConnError> {
    let mut s = Session::connect(&spec.name, &spec.addr, token).await?;
    let hello = s.hello.clone();
    let (rtx, rrx) = smol::channel::bounded(1);
    if tx
        .send(StoreMsg::Hello {
            host: spec.name.clone(),
            addr: spec.addr.clone(),
            hello: Box::new(hello.clone()),
            clock: s.clock,
            reply: rtx,
        })
        .await
        .is_err()
    {
        return Ok(());
    }
    let reg = match rrx.recv().await {
        Ok(Ok(r)) => r,
        Ok(Err(msg)) => {
            return Err(ConnError::Store {
                host: spec.name.clone(),
                msg,
            });
        }
        Err(_) => return Ok(()),
    };
    let (instance_id, after) = if reg.new_instance {
        (hello.instance_id, 0)
    } else {
        (hello.instance_id, reg.after_seq)
    };
    log::info!(
        "{}: connected to {} ({} {}, instance {:x}), resuming after seq {after}",
        spec.name,
        hello.host_name,
        hello.arch,
        hello.kernel_release,
        hello.instance_id
    );
    s.resume(instance_id, after).await?;
    live.with(idx, |h| {
        if reg.new_instance && h.hello.is_some() {
            h.gap = Some(format!(
                "agent restarted (new instance {:x})",
                hello.instance_id
            ));
        }
        h.hello = Some(hello.clone());
        h.status = Status::Connected;
        h.config_error = None;
    });
    live.with(idx, |h| h.connected_since = Some(Instant::now()));
    let r = stream(
        idx,
        spec,
        tx,
        live,
        &mut s,
        Gate::new(&hello, after).flushing_into(tx.clone(), reg.instance),
        reg.instance,
    )
    .await;
    live.disconnected(idx);
    r
}

/// Frames handled between two yields to the executor: a peer whose frames are always ready
/// (a flood from the buffer) must not keep the stop request (and the other hosts) waiting.
pub(crate) const FRAMES_PER_YIELD: u32 = 64;

/// Forwards one connection's stream through its gate until it ends, the run stops or the store
/// task is gone (`Ok`). A refusal that ends it (frames failing authentication, a host marked
/// bad) is stored as one before the error is returned; so is the pending flood.
async fn stream(
    idx: usize,
    spec: &HostSpec,
    tx: &Sender<StoreMsg>,
    live: &Live,
    s: &mut Session,
    mut gate: Gate,
    instance: i64,
) -> Result<(), ConnError> {
    let mut frames = 0u32;
    loop {
        frames += 1;
        if frames.is_multiple_of(FRAMES_PER_YIELD) {
            if live.abandon.load(Ordering::SeqCst) {
                return Ok(());
            }
            smol::future::yield_now().await;
        }
        let next = match s.next().await {
            Ok(n) => n,
            Err(e) => {
                let mut items = Vec::new();
                gate.flush(instance, &mut items);
                let error = e.to_string();
                let refusal = match &e {
                    ClientError::Tampered { .. } => Some(Refusal::Tampered),
                    c if c.is_bad_agent() => Some(Refusal::BadHost { error: &error }),
                    _ => None,
                };
                items.extend(
                    refusal.and_then(|r| note_refusal(live, idx, &spec.name, Some(instance), r)),
                );
                for item in items {
                    if tx.send(StoreMsg::Item(item)).await.is_err() {
                        return Ok(());
                    }
                }
                return Err(ConnError::Streamed(e));
            }
        };
        let window = s.window;
        for item in gate.admit(next, &window, (idx, &spec.name), instance, live) {
            // Blocks (and so stops reading the socket) while the store is paused.
            if tx.send(StoreMsg::Item(item)).await.is_err() {
                return Ok(());
            }
        }
    }
}

/// The task that owns the store: registers `Hello`s, writes items in batched transactions via
/// `smol::unblock`, retries failed writes with the same batch until they succeed. Returns the
/// store when every sender is gone and everything received is committed.
/// Applies `retention` to the store off the executor and logs what it deleted.
async fn apply_retention(store: Store, retention: Retention) -> Store {
    let cutoff = retention.cutoffs(now_ms());
    let (store, res) = smol::unblock(move || {
        let mut store = store;
        let res = store.apply_retention(cutoff);
        (store, res)
    })
    .await;
    match res {
        Ok(n) if n > 0 => log::info!("retention: deleted {n} old rows"),
        Ok(_) => {}
        Err(e) => log::warn!("retention: {e}"),
    }
    store
}

pub async fn store_task(
    mut store: Store,
    rx: Receiver<StoreMsg>,
    live: Arc<Live>,
    retention: Option<Retention>,
) -> Store {
    let mut retained_at = Instant::now();
    let mut batch: Vec<Item> = Vec::with_capacity(BATCH_MAX);
    let mut pending_hello: Option<StoreMsg> = None;
    // Instance row → (host, agent instance id), to say what could not be stored.
    let mut names: std::collections::HashMap<i64, (String, u64)> = Default::default();
    let mut gave_up = false;
    let mut closed = false;
    loop {
        // Gather a batch: wait for the first message, then up to BATCH_MAX or BATCH_WAIT.
        if batch.is_empty() && pending_hello.is_none() {
            match rx.recv().await {
                Ok(StoreMsg::Item(it)) => batch.push(it),
                Ok(h @ StoreMsg::Hello { .. }) => pending_hello = Some(h),
                Err(_) => closed = true,
            }
        }
        let deadline = Instant::now() + BATCH_WAIT;
        while pending_hello.is_none() && !closed && batch.len() < BATCH_MAX {
            let msg = match rx.try_recv() {
                Ok(m) => Some(m),
                Err(smol::channel::TryRecvError::Closed) => {
                    closed = true;
                    None
                }
                Err(smol::channel::TryRecvError::Empty) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let r = async { rx.recv().await.ok() }
                        .or(async {
                            smol::Timer::after(left).await;
                            None
                        })
                        .await;
                    if r.is_none() && rx.is_closed() && rx.is_empty() {
                        closed = true;
                    }
                    if r.is_none() {
                        break;
                    }
                    r
                }
            };
            match msg {
                Some(StoreMsg::Item(it)) => batch.push(it),
                Some(h @ StoreMsg::Hello { .. }) => pending_hello = Some(h),
                None => {}
            }
        }
        if !batch.is_empty() {
            let items = std::mem::take(&mut batch);
            let n = items.len() as u64;
            if gave_up {
                // Never write past what was given up: the resume point must stay before it.
                give_up(&live, &names, &items);
            } else {
                let (s, written) = write_until_ok(store, items, &live).await;
                store = s;
                match written {
                    Ok(items) => {
                        live.committed.fetch_add(n, Ordering::Relaxed);
                        if let Some(f) = live.alert_feed.get() {
                            f.committed(&items);
                        }
                        if let Some(r) = retention
                            && retained_at.elapsed() >= RETENTION_EVERY
                        {
                            store = apply_retention(store, r).await;
                            retained_at = Instant::now();
                        }
                    }
                    Err(items) => {
                        gave_up = true;
                        give_up(&live, &names, &items);
                    }
                }
            }
        }
        if let Some(StoreMsg::Hello {
            host,
            addr,
            hello,
            clock,
            reply,
        }) = pending_hello.take()
        {
            let label = (host.clone(), hello.instance_id);
            let feed = live
                .alert_feed
                .get()
                .map(|f| (f.clone(), host.clone(), hello.clone()));
            let (s, r) = retry_store(store, &live, move |st: &mut Store| {
                let reg = st.register(&host, &addr, &hello)?;
                if let Some(c) = clock {
                    st.note_clock(reg.instance, c)?;
                }
                Ok(reg)
            })
            .await;
            store = s;
            if let Ok(reg) = &r {
                names.insert(reg.instance, label);
                if let Some((f, host, hello)) = feed {
                    f.registered(reg.instance, &host, &hello, clock);
                }
            }
            reply.send(r.map_err(|e| e.to_string())).await.ok();
        }
        if closed && rx.is_empty() {
            return store;
        }
    }
}

/// Writes a batch, retrying until it succeeds (the items come back, shared, for the alert
/// task); once the run stops ([`Live::abandon`]) a failed write is given up and its items
/// returned as the error.
async fn write_until_ok(
    store: Store,
    items: Vec<Item>,
    live: &Live,
) -> (Store, Result<Arc<Vec<Item>>, Vec<Item>>) {
    let items = Arc::new(items);
    let it2 = items.clone();
    let (store, r) = retry_store(store, live, move |st: &mut Store| st.write_batch(&it2)).await;
    match r {
        Ok(()) => (store, Ok(items)),
        Err(_) => (
            store,
            Err(Arc::try_unwrap(items).unwrap_or_else(|a| (*a).clone())),
        ),
    }
}

/// Adds a batch that could not be stored to [`Live::unstored`] (per host and instance).
fn give_up(live: &Live, names: &std::collections::HashMap<i64, (String, u64)>, items: &[Item]) {
    let mut u = live.unstored.lock().unwrap_or_else(|p| p.into_inner());
    for it in items {
        let (instance, from, to, records) = match it {
            Item::Sample { instance, seq, .. }
            | Item::Event { instance, seq, .. }
            | Item::Rejected { instance, seq, .. } => (*instance, *seq, *seq, 1),
            // A refusal holds no record: nothing of it is lost.
            Item::Refused { .. } => continue,
            Item::Gone {
                instance,
                from_seq,
                to_seq,
            }
            | Item::Flood {
                instance,
                from_seq,
                to_seq,
                ..
            } => (*instance, *from_seq, *to_seq, 0),
        };
        let (host, instance_id) = names
            .get(&instance)
            .cloned()
            .unwrap_or_else(|| (format!("instance row {instance}"), 0));
        match u
            .iter_mut()
            .find(|x| x.host == host && x.instance_id == instance_id)
        {
            Some(x) => {
                x.records += records;
                x.from_seq = x.from_seq.min(from);
                x.to_seq = x.to_seq.max(to);
            }
            None => u.push(Unstored {
                host,
                instance_id,
                records,
                from_seq: from,
                to_seq: to,
            }),
        }
    }
}

/// Runs `op` on the store in the blocking pool until it succeeds or fails for good (a
/// non-transient error on a `Hello` is returned; batches are retried forever: losing data is
/// not an option, and the error stays on screen and in the log).
async fn retry_store<T: Send + 'static>(
    mut store: Store,
    live: &Live,
    op: impl Fn(&mut Store) -> Result<T, StoreError> + Send + Sync + 'static,
) -> (Store, Result<T, StoreError>) {
    let op = Arc::new(op);
    let mut wait = Duration::from_millis(100);
    loop {
        let op2 = op.clone();
        let (s, r) = smol::unblock(move || {
            let r = op2(&mut store);
            (store, r)
        })
        .await;
        store = s;
        match r {
            Ok(v) => {
                let mut e = live.store_error.lock().unwrap_or_else(|p| p.into_inner());
                if e.take().is_some() {
                    log::warn!("database {}: writes work again", store.path().display());
                }
                return (store, Ok(v));
            }
            Err(err) if live.abandon.load(Ordering::SeqCst) => {
                log::error!("{err}; the run is stopping: not retried");
                return (store, Err(err));
            }
            Err(err) => {
                let msg = err.to_string();
                {
                    let mut e = live.store_error.lock().unwrap_or_else(|p| p.into_inner());
                    if e.as_deref() != Some(msg.as_str()) {
                        log::error!("{msg}");
                        crate::errln!("nasprobe: {msg}");
                    }
                    *e = Some(msg);
                }
                // Wait, but notice a stop within 50 ms.
                let until = Instant::now() + wait;
                while Instant::now() < until && !live.abandon.load(Ordering::SeqCst) {
                    smol::Timer::after(Duration::from_millis(50)).await;
                }
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// A running collection: agent tasks and the store task on one executor thread.
pub struct Collector {
    pub live: Arc<Live>,
    /// Closed to ask the collection to stop (its task awaits it: no polling).
    stop: smol::channel::Sender<()>,
    /// Set when the collection has ended (before the waiting thread is woken).
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<Store, StoreError>>>,
}

/// Token and spec of one host to collect from.
pub struct Target {
    pub spec: HostSpec,
    pub token: Arc<Vec<u8>>,
}

impl Collector {
    /// Opens nothing itself: takes an open store and starts collecting on a new thread.
    pub fn start(store: Store, targets: Vec<Target>, retention: Option<Retention>) -> Collector {
        Self::start_with_own(store, targets, retention, None)
    }

    /// [`Collector::start`] with what is nasprobe's own on one host (index, [`crate::own::Own`])
    /// left out of the views.
    pub fn start_with_own(
        store: Store,
        targets: Vec<Target>,
        retention: Option<Retention>,
        own: Option<(usize, crate::own::Own)>,
    ) -> Collector {
        let live = Live::new(&targets.iter().map(|t| t.spec.clone()).collect::<Vec<_>>());
        if let Some(o) = own {
            live.own.set(o).ok();
        }
        let (stop, stop_rx) = smol::channel::bounded::<()>(1);
        let done = Arc::new(AtomicBool::new(false));
        let (l2, d2) = (live.clone(), done.clone());
        let thread = std::thread::Builder::new()
            .name("collector".into())
            // Decoded messages have fixed-capacity lists (a `Sample` is ~20 KB): debug builds
            // keep several copies on the stack.
            .stack_size(64 << 20)
            .spawn(move || {
                let r = smol::block_on(run(store, targets, l2, stop_rx, retention));
                d2.store(true, Ordering::SeqCst);
                crate::signals::wake();
                r
            })
            .expect("spawn the collector thread");
        Collector {
            live,
            stop,
            done,
            thread: Some(thread),
        }
    }

    /// Asks the collection to stop (agents are disconnected, what was received is committed).
    pub(crate) fn request_stop(&self) {
        self.stop.close();
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.done.load(Ordering::SeqCst) || self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops and waits until everything received is committed.
    pub fn finish(mut self) -> Result<Store, StoreError> {
        self.request_stop();
        self.thread
            .take()
            .expect("finish once")
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

async fn run(
    mut store: Store,
    targets: Vec<Target>,
    live: Arc<Live>,
    stop: smol::channel::Receiver<()>,
    retention: Option<Retention>,
) -> Result<Store, StoreError> {
    let (tx, rx) = smol::channel::bounded::<StoreMsg>(CHANNEL_CAP);
    let ex = smol::LocalExecutor::new();
    ex.run(async {
        if let Some(r) = retention {
            store = apply_retention(store, r).await;
        }
        let store_task = ex.spawn(store_task(store, rx, live.clone(), retention));
        let agents: Vec<_> = targets
            .into_iter()
            .enumerate()
            .map(|(i, t)| ex.spawn(agent_task(i, t.spec, t.token, tx.clone(), live.clone())))
            .collect();
        drop(tx);
        // Closed by `request_stop` (recv then fails): nothing is sent on it.
        let _ = stop.recv().await;
        // From now on a failing write is given up, not retried: a run asked to stop stops.
        live.abandon.store(true, Ordering::SeqCst);
        // Cancel the agent tasks (dropping their senders), then let the store drain.
        for a in agents {
            a.cancel().await;
        }
        let store = store_task.await;
        Ok(store)
    })
    .await
}
