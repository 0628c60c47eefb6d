//! The messages of `nasprobe test disk` and `nasprobe test net` (an agent started with
//! `--allow-tests` runs them): the requests, the receiver's `TestReady` and the results.

use heapless::{String, Vec};
use serde::{Deserialize, Serialize};

use crate::{DevName, PATH_LEN, REASON_LEN, Short};

/// A test the collector asks an agent to run (`nasprobe test ...`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestRequest {
    /// Write then read back a file in a folder of the NAS (`nasprobe test disk`).
    Disk(DiskTest),
    /// `nasprobe test net`, receiving side: accept the sender's streams on the agent's test
    /// port (`TestReady` names it) and count what arrives.
    NetReceive(NetReceive),
    /// `nasprobe test net`, sending side: connect to the receiver and send, run by run.
    NetSend(NetSend),
    /// `nasprobe test net`, receiving side, bound to the run (see [`crate::test_stream`]):
    /// admits at most the announced streams, each opened with a MAC of the run key. Agents
    /// that know these refuse [`TestRequest::NetReceive`] and [`TestRequest::NetSend`] (their
    /// cleartext nonce let a collector aim a sender at any port) and take only these two.
    NetReceiveRun(NetReceiveRun),
    /// `nasprobe test net`, sending side, bound to the run: sends nothing on a stream until the
    /// peer proved the run key.
    NetSendRun(NetSendRun),
}

/// Most runs one `test net` makes (stream counts, e.g. 1 then 4).
pub const MAX_NET_RUNS: usize = 4;
/// Most streams of one run.
pub const MAX_NET_STREAMS: u8 = 16;
/// An address the sender connects to ("192.0.2.10:7452", `"[2001:db8::1]:7452"`).
pub const ADDR_LEN: usize = 64;

/// `nasprobe test net`, receiving side (old form, refused by current agents): count the
/// streams that open with `nonce`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetReceive {
    /// How long the receiver waits for the whole test (all runs), s.
    pub seconds: u16,
    /// Streams must open with this, so nobody else's connection is counted.
    pub nonce: [u8; 16],
    /// Bytes after which the receiver closes.
    pub max_bytes: u64,
}

/// `nasprobe test net`, sending side (old form, refused by current agents): send to `to`,
/// run by run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetSend {
    /// The receiver's test port as the collector reaches it.
    pub to: String<ADDR_LEN>,
    /// Each run's length, s.
    pub seconds: u16,
    /// The streams of each run, in order (e.g. [1, 4]).
    pub streams: Vec<u8, MAX_NET_RUNS>,
    /// Sent first on each stream: the receiver counts only streams that open with it.
    pub nonce: [u8; 16],
    /// Bytes after which a run stops sending.
    pub max_bytes: u64,
}

/// `nasprobe test net`, receiving side, bound to the run: admit the announced streams only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetReceiveRun {
    /// How long the receiver waits for the whole test (all runs), s.
    pub seconds: u16,
    /// The streams of each run, in order (e.g. [1, 4]): the receiver admits no other.
    pub streams: Vec<u8, MAX_NET_RUNS>,
    /// Bytes after which the receiver closes.
    pub max_bytes: u64,
}

/// `nasprobe test net`, sending side, bound to the run by its sealed key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetSendRun {
    /// The receiver's test port as the collector reaches it.
    pub to: String<ADDR_LEN>,
    /// Each run's length, s.
    pub seconds: u16,
    /// The streams of each run, in order (e.g. [1, 4]).
    pub streams: Vec<u8, MAX_NET_RUNS>,
    /// Bytes after which a run stops sending.
    pub max_bytes: u64,
    /// The receiver's run key sealed for this sender's session
    /// ([`crate::test_stream::seal_run_key`]).
    pub sealed_key: [u8; 32],
}

/// The receiver listens: where the sender connects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestReady {
    /// The agent's test port the receiver listens on.
    pub port: u16,
}

/// One run of a network test as one side saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetRun {
    /// Parallel TCP streams of the run.
    pub streams: u8,
    /// Bytes sent (sender) or received (receiver).
    pub bytes: u64,
    /// From the first to the last byte of the run, µs.
    pub micros: u64,
    /// The sender's sockets' total retransmissions (TCP_INFO); 0 on the receiver.
    pub retransmits: u32,
    /// Agent wall clock at the run's start and end, ms since the epoch.
    pub started_ms: u64,
    /// Agent wall clock at the run's end, ms since the epoch.
    pub ended_ms: u64,
}

/// `nasprobe test disk`: where to write and how much.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskTest {
    /// The folder the test file goes in.
    pub path: String<PATH_LEN>,
    /// Bytes to write and read back.
    pub bytes: u64,
    /// Also on tmpfs/ramfs (which measure memory, not a disk).
    pub allow_tmpfs: bool,
}

/// The outcome of a [`TestRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestResult {
    /// A disk test's figures.
    Disk(DiskResult),
    /// The test started and could not finish (a full disk, a read error): why.
    Failed(String<REASON_LEN>),
    /// A network test's runs, as this side saw them.
    Net(Vec<NetRun, MAX_NET_RUNS>),
}

/// `nasprobe test disk`: 1 MiB blocks written and synced, dropped from the cache, read back;
/// then one pass with a single big block (the `dd bs=1G` trap).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskResult {
    /// The block device holding the folder (e.g. "sda1", "md2", "loop0"); empty if unknown.
    pub device: DevName,
    /// The folder's filesystem type (e.g. "ext4", "btrfs").
    pub fs_type: Short,
    /// Size of each written and read block, bytes (1 MiB).
    pub block_bytes: u32,
    /// Bytes written (fewer than asked when the time budget ended the write).
    pub bytes: u64,
    /// Writing all blocks and the final fdatasync, µs.
    pub write_us: u64,
    /// Bytes read back (fewer than `bytes` when the time budget ended the read) and the time,
    /// µs, after the pages were dropped from the cache.
    pub read_bytes: u64,
    /// Time to read `read_bytes` back, µs.
    pub read_us: u64,
    /// False when the cache could not be dropped (the read figure may be the cache's).
    pub cache_dropped: bool,
    /// The big-block pass: its block (= its size) and time, µs; 0 when it was not run.
    pub big_block_bytes: u64,
    /// Time of the big-block pass, µs; 0 when it was not run.
    pub big_write_us: u64,
    /// Agent wall clock at the start and end of the test, ms since the epoch.
    pub started_ms: u64,
    /// Agent wall clock at the end of the test, ms since the epoch.
    pub ended_ms: u64,
}
