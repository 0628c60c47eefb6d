//! The shared state of a run, as views read it: per host its status, `Hello`, newest sample
//! and last events; what the store holds back; the messages into the store task.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nasprobe_proto::{Event, Hello, Sample};
use smol::channel::Sender;

use crate::hosts::HostSpec;
use crate::store::{Item, Registration};

/// Events kept per host for views.
pub(crate) const RECENT_EVENTS: usize = 8;

/// Connection state of one host, for views.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Connecting,
    Connected,
    /// Waiting before the next attempt; the last error.
    Reconnecting {
        error: String,
        retry_in: Duration,
    },
}

/// What views know about one host.
#[derive(Debug, Clone)]
pub struct HostLive {
    pub name: String,
    pub addr: String,
    pub status: Status,
    pub hello: Option<Hello>,
    /// Newest sample: (seq, time_ms, sample).
    pub last: Option<(u64, u64, Box<Sample>)>,
    pub events: VecDeque<(u64, Event)>,
    /// Newest open files of the transfer's processes: (time_ms, event).
    pub files: Option<(u64, nasprobe_proto::OpenFiles)>,
    /// Newest traffic-control caps of its NICs (`Event::Shaping`; empty: none shaped).
    pub shaping: Option<nasprobe_proto::Shaping>,
    /// Records received on this run.
    pub received: u64,
    /// The newest gap text (`Gone` or agent restart), if any on this run.
    pub gap: Option<String>,
    /// Set (and kept for the rest of the run) when the agent sent something invalid: a frame
    /// that does not decode, a protocol violation, another protocol version, or a record with
    /// implausible values. Views show it; the text names what happened last.
    pub bad: Option<String>,
    /// Records rejected by the plausibility checks on this run (not stored; gaps instead).
    pub rejected: u64,
    /// Records dropped on this run over the collector's caps (see `net::gate`), by kind.
    pub dropped: crate::store::FloodCounts,
    /// Connections on this run that ended on frames failing authentication.
    pub tampered: u64,
    /// Connections on this run that ended with the host marked bad.
    pub marked_bad: u64,
    /// Time spent connected (streaming) on this run, the current connection not included.
    pub connected_for: Duration,
    /// Since when the current connection streams, if it does.
    pub connected_since: Option<Instant>,
    /// The last connection failed for a reason retrying does not fix (wrong token, refused,
    /// another protocol): the error, until a connection succeeds. `record` then exits non-zero.
    pub config_error: Option<String>,
}

/// Shared state of a run.
#[derive(Debug, Default)]
pub struct Live {
    pub hosts: Mutex<Vec<HostLive>>,
    /// The store's error while writes are paused (full disk, lock), else None.
    pub store_error: Mutex<Option<String>>,
    /// Records committed on this run.
    pub committed: std::sync::atomic::AtomicU64,
    /// Set when the run stops: a write that fails from then on is not retried (the agents'
    /// rings keep everything after the last committed seq; the next run resumes there).
    pub abandon: AtomicBool,
    /// What could not be stored when the run stopped on a failing store: per host and agent
    /// instance, the records given up and their seq range.
    pub unstored: Mutex<Vec<Unstored>>,
    /// The alert task's feed, when alerts are evaluated: told of each committed batch,
    /// never waited for (`crate::alerts::feed::Feed`).
    pub alert_feed: std::sync::OnceLock<Arc<crate::alerts::feed::Feed>>,
    /// Host index and what is nasprobe's own there (`watch --local`): left out of the views'
    /// copy of its records ([`crate::own`]).
    pub own: std::sync::OnceLock<(usize, crate::own::Own)>,
}

impl Live {
    /// One line per host whose records could not be stored at the end of the run, or None.
    pub fn unstored_report(&self) -> Option<String> {
        let u = self.unstored.lock().unwrap_or_else(|p| p.into_inner());
        if u.is_empty() {
            return None;
        }
        let lines: Vec<String> = u
            .iter()
            .map(|x| {
                format!(
                    "{}: {} records of instance {:x} (seq {}..{}) could not be stored; the \
                     agent's ring still holds them and the next run resumes there",
                    x.host, x.records, x.instance_id, x.from_seq, x.to_seq
                )
            })
            .collect();
        Some(lines.join("\n"))
    }
}

/// Records given up at the end of a run whose store could not write (see [`Live::abandon`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unstored {
    pub host: String,
    pub instance_id: u64,
    pub records: u64,
    pub from_seq: u64,
    pub to_seq: u64,
}

impl Live {
    pub fn new(hosts: &[HostSpec]) -> Arc<Live> {
        Arc::new(Live {
            hosts: Mutex::new(
                hosts
                    .iter()
                    .map(|h| HostLive {
                        name: h.name.clone(),
                        addr: h.addr.clone(),
                        status: Status::Connecting,
                        hello: None,
                        last: None,
                        events: VecDeque::new(),
                        files: None,
                        shaping: None,
                        received: 0,
                        gap: None,
                        bad: None,
                        rejected: 0,
                        dropped: Default::default(),
                        tampered: 0,
                        marked_bad: 0,
                        connected_for: Duration::ZERO,
                        connected_since: None,
                        config_error: None,
                    })
                    .collect(),
            ),
            store_error: Mutex::new(None),
            committed: Default::default(),
            abandon: AtomicBool::new(false),
            unstored: Mutex::new(Vec::new()),
            alert_feed: std::sync::OnceLock::new(),
            own: std::sync::OnceLock::new(),
        })
    }

    pub(crate) fn with<R>(&self, i: usize, f: impl FnOnce(&mut HostLive) -> R) -> R {
        let mut g = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g[i])
    }

    /// Host `i` stops streaming (its connected time is added up).
    pub(super) fn disconnected(&self, i: usize) {
        self.with(i, |h| {
            if let Some(t) = h.connected_since.take() {
                h.connected_for += t.elapsed();
            }
        });
    }

    /// A copy of the hosts' state.
    pub fn snapshot(&self) -> Vec<HostLive> {
        self.hosts.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Messages into the store task.
pub enum StoreMsg {
    /// A connection's `Hello`: register it, answer where to resume.
    Hello {
        host: String,
        addr: String,
        hello: Box<Hello>,
        /// The agent's clock offset measured over the handshake.
        clock: Option<nasprobe_analysis::ClockOffset>,
        reply: Sender<Result<Registration, String>>,
    },
    Item(Item),
}
