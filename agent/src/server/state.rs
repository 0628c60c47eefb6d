//! The server's state: the listener, the ring, the sampler and the connected collectors (the
//! loop in `mod.rs` and the sessions in `sessions.rs` are its methods).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use nasprobe_proto::{Hello, Message, PROTOCOL_VERSION};

use super::base::short_str;
use super::client::Client;
use super::limiter::AuthLimiter;
use crate::config::Config;
use crate::events::connector::Connector;
use crate::events::kmsg::KernelLog;
use crate::ring::Ring;
use crate::sampler::{Sampler, wall_ms};

/// Timeouts and limits of the server (from the flags).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max_clients: usize,
    pub handshake_timeout: Duration,
    pub stall_timeout: Duration,
    /// SO_SNDBUF of client sockets; 0 leaves the kernel's default.
    pub client_sndbuf: usize,
}

impl Limits {
    pub(crate) fn from_config(cfg: &Config) -> Limits {
        Limits {
            max_clients: cfg.max_clients,
            handshake_timeout: Duration::from_millis(cfg.handshake_timeout_ms as u64),
            stall_timeout: Duration::from_millis(cfg.stall_timeout_ms as u64),
            client_sndbuf: cfg.client_sndbuf,
        }
    }
}

pub struct Server {
    pub(super) cfg: Config,
    pub(super) limits: Limits,
    pub(super) token: Vec<u8>,
    pub(super) listener: TcpListener,
    pub(super) ring: Ring,
    pub(super) sampler: Sampler,
    pub(super) clients: Vec<Option<Client>>,
    pub(super) scratch: Box<[u8]>,
    /// The sample being built: a `Record` message allocated once.
    pub(super) sample_msg: Box<Message>,
    pub(super) limiter: AuthLimiter,
    pub(super) instance_id: u64,
    pub(super) started_ms: u64,
    pub(super) interval: Duration,
    pub(super) next_tick: Instant,
    pub(super) last_sample_at: Option<Instant>,
    pub(super) samples: u64,
    pub(super) skipped_ticks: u64,
    pub(super) ring_full: bool,
    pub(super) accept_paused_until: Option<Instant>,
    /// The test running for a collector (`--allow-tests`), and when the last one ended.
    pub(super) test: Option<crate::selftest::Running>,
    pub(super) last_test_end: Option<Instant>,
    /// The kernel's process connector, when it could be subscribed to.
    pub(super) connector: Option<Connector>,
    /// Connector overruns already announced in an `ExitWatch` event.
    pub(super) overruns_sent: u32,
    /// The connector's descriptor is polled: once it woke the loop, it waits for the next tick
    /// (at most two reads an interval: a busy machine forks thousands of times a second, and a
    /// wake-up per message cost ~0.5-1 ms of CPU per 100 ms sample on this one).
    pub(super) connector_armed: bool,
    /// The kernel log, for OOM kills and kernel messages about tracked processes and NICs.
    pub(super) kmsg: Option<KernelLog>,
}

impl Server {
    /// The Hello of this instance: the host facts and inventory as the sampler read them (it
    /// also applies and sanitizes `--name`), then what only the server knows.
    pub(super) fn hello(&self) -> Hello {
        let (oldest_seq, newest_seq) = self.ring.seq_range();
        let mut h = Hello {
            agent_version: hello_version(),
            now_ms: wall_ms(),
            ..Hello::default()
        };
        self.sampler.fill_hello(&mut h);
        h.protocol_version = PROTOCOL_VERSION;
        h.instance_id = self.instance_id;
        h.started_ms = self.started_ms;
        h.interval_ms = self.cfg.interval_ms;
        h.oldest_seq = oldest_seq;
        h.newest_seq = newest_seq;
        h
    }
}

/// This build's version as the Hello says it: with the build-metadata word that tells a
/// collector this agent takes `ResumeWith` (`0.1.0+resume-with`).
fn hello_version() -> nasprobe_proto::Short {
    let mut v: nasprobe_proto::Short = short_str(env!("CARGO_PKG_VERSION"));
    let ok = v.push('+').is_ok() && v.push_str(nasprobe_proto::RESUME_WITH_MARK).is_ok();
    debug_assert!(
        ok,
        "a version of a few characters and the mark fit SHORT_LEN"
    );
    v
}
