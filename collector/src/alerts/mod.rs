//! Alerts while recording (issue 27): rules evaluated as samples are stored, each alert sent
//! once, repeated at most every `repeat` and resolved once, to webhook, ntfy, Alertmanager or a
//! command. [`config`]: the rules in force; `rules`: the conditions; `state`: firing,
//! repeating, resolving, kept in the store; `payload` and `deliver`: what is sent and how;
//! `engine`: the task; `wall`: the wall_changed rule; `integrity`: the integrity rule; `base`:
//! the tables and what the task shows ([`Shared`]); `feed`: the store task's [`Feed`];
//! `recent`: the records the rules read; `budget`: the notification budget and the bounds.
//!
//! The store task never waits for alerts: after each committed batch it offers the batch (the
//! records as it decoded and wrote them) to the alert task's bounded [`Feed`]; when that is
//! full the alert task is behind, and the note is counted, not waited for (the next evaluation
//! reads the last seconds back from the store once). The engine reads nothing else from the
//! store after its start, so its cost does not grow with the store's age (issue 38).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) mod base;
pub(crate) mod budget;
pub mod config;
pub(crate) mod deliver;
pub(crate) mod engine;
pub(crate) mod feed;
pub(crate) mod full;
pub(crate) mod integrity;
pub(crate) mod listing;
pub(crate) mod payload;
pub(crate) mod recent;
pub(crate) mod rules;
pub(crate) mod state;
pub(crate) mod wall;

pub use base::Shared;
pub use config::{AlertArgs, AlertConfig};
use feed::FEED_CAP;
pub use feed::{Feed, Note};

use crate::net::conn::Live;
use crate::store::Store;

/// The running alert task.
pub struct Alerts {
    pub shared: Arc<Shared>,
    feed: Arc<Feed>,
    stop: smol::channel::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Alerts {
    /// Starts evaluating for the run whose state is `live`, over the store at `db` (its own
    /// connections), and hooks its feed into `live` (the store task then notes each batch).
    pub fn start(db: PathBuf, live: Arc<Live>, cfg: AlertConfig) -> anyhow::Result<Alerts> {
        let eval_store = Store::open(&db)?.into_reader();
        let deliver_store = Store::open(&db)?.into_reader();
        let mut engine = engine::Engine::new(cfg, &eval_store)?;
        let (tx, rx) = smol::channel::bounded(FEED_CAP);
        let feed = Arc::new(Feed {
            tx,
            behind: AtomicU64::new(0),
        });
        if engine.reads_records() {
            // Hooked first, read back second: a record in both is taken once (by its seq).
            live.alert_feed.set(feed.clone()).ok();
            engine
                .recent
                .resync(&eval_store, nasprobe_proto::time::now_ms())?;
        }
        let (stop, stop_rx) = smol::channel::bounded::<()>(1);
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let fd = (feed.clone(), rx);
        let thread = std::thread::Builder::new()
            .name("alerts".into())
            // The analysis of a window keeps decoded samples (~20 KB each) on the stack in
            // debug builds, as the collector thread does.
            .stack_size(64 << 20)
            .spawn(move || {
                smol::block_on(engine::run(
                    engine,
                    eval_store,
                    deliver_store,
                    live,
                    fd,
                    stop_rx,
                    sh,
                ))
            })?;
        Ok(Alerts {
            shared,
            feed,
            stop,
            thread: Some(thread),
        })
    }

    /// Notes the feed dropped because the alert task was behind.
    pub fn behind(&self) -> u64 {
        self.feed.behind.load(Ordering::Relaxed)
    }

    /// Stops: what is due is delivered for a few seconds more; the rest waits in the store
    /// for the next run.
    pub fn finish(mut self) {
        self.stop.close();
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_feed_is_counted_never_waited_for() {
        let (tx, rx) = smol::channel::bounded(FEED_CAP);
        let f = Feed {
            tx,
            behind: AtomicU64::new(0),
        };
        let batch = Arc::new(Vec::new());
        for _ in 0..FEED_CAP + 5 {
            f.committed(&batch);
        }
        assert_eq!(f.behind.load(Ordering::Relaxed), 5);
        assert_eq!(rx.len(), FEED_CAP);
    }
}
