//! The store task's channel to the alert task: the records of each committed batch and each
//! agent registered, as the store task holds them ([`Note`]), never waited for ([`Feed`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::Item;

/// Notes waiting for the alert task: a batch commits at most every `BATCH_WAIT` (200 ms), so a
/// full feed means the engine is some 10 s behind; it then drops what waits and reads the last
/// [`super::recent::EXIT_WINDOW`] back from the store once (its only read after the start).
pub(crate) const FEED_CAP: usize = 64;

/// What the store task hands the alert task: the agents it registered and the records it
/// committed, as it already holds them (nothing is read back from the store).
#[derive(Debug)]
pub enum Note {
    /// An agent instance's `Hello`, registered under the store's row `instance`.
    Registered {
        instance: i64,
        host: String,
        hello: Box<nasprobe_proto::Hello>,
        clock: Option<nasprobe_analysis::ClockOffset>,
    },
    /// A batch written in one transaction.
    Committed(Arc<Vec<Item>>),
}

/// The store task's side of the alert task's channel.
#[derive(Debug)]
pub struct Feed {
    pub(super) tx: smol::channel::Sender<Note>,
    /// Notes not given because the feed was full (the alert task was behind).
    pub behind: AtomicU64,
}

impl Feed {
    /// `items` were committed: never blocks.
    pub fn committed(&self, items: &Arc<Vec<Item>>) {
        self.offer(Note::Committed(items.clone()));
    }

    /// An instance was registered: never blocks.
    pub fn registered(
        &self,
        instance: i64,
        host: &str,
        hello: &nasprobe_proto::Hello,
        clock: Option<nasprobe_analysis::ClockOffset>,
    ) {
        self.offer(Note::Registered {
            instance,
            host: host.to_string(),
            hello: Box::new(hello.clone()),
            clock,
        });
    }

    fn offer(&self, n: Note) {
        if self.tx.try_send(n).is_err() {
            self.behind.fetch_add(1, Ordering::Relaxed);
        }
    }
}
