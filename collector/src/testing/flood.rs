//! The flooding agent (issue 28): a real handshake announcing an empty ring, then a live stream
//! far faster than its `Hello`'s interval allows, until stopped or the collector goes away, to
//! show that what the collector stores is bounded by its own clock, not the agent's times.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use nasprobe_proto::*;

use super::fake::{agent_handshake, listen, stop_and_join, wall_ms};
use super::samples::*;

/// What a [`FloodAgent`] streams after `Resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodMode {
    /// Process events whose record times alternate between two intervals (a cap counted per
    /// record-time interval resets at every one of them).
    AlternatingTimes,
    /// `DeviceAdded` disk announcements.
    Devices,
    /// Samples 100 times as often as the `Hello`'s interval, their times 100 times as close.
    Samples,
    /// Nothing but `KeepAlive`s.
    KeepAlives,
}

/// The `Hello`'s sampling interval of a flooding agent.
pub const FLOOD_INTERVAL_MS: u32 = 1000;

/// A fake agent on 127.0.0.1 that floods (see [`FloodMode`]); `sent` counts the records (or
/// `KeepAlive`s) written so far over every connection.
pub struct FloodAgent {
    pub addr: String,
    pub stop: Arc<AtomicBool>,
    pub sent: Arc<AtomicU64>,
    pub connections: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FloodAgent {
    pub fn start(token: Vec<u8>, mode: FloodMode) -> FloodAgent {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let sent = Arc::new(AtomicU64::new(0));
        let s2 = sent.clone();
        let (addr, stop, connections, thread) = listen(l, move |c, stop| {
            let _ = serve_flood(c, &token, mode, stop, &s2);
        });
        FloodAgent {
            addr,
            stop,
            sent,
            connections,
            thread: Some(thread),
        }
    }
}

impl Drop for FloodAgent {
    fn drop(&mut self) {
        stop_and_join(&self.stop, &mut self.thread);
    }
}

/// The flood's `n`-th message (records numbered from `seq`).
fn message(mode: FloodMode, n: u64, seq: u64, t0: u64) -> Message {
    let iv = u64::from(FLOOD_INTERVAL_MS);
    let record = |time_ms, body| Message::Record(Record { seq, time_ms, body });
    match mode {
        FloodMode::AlternatingTimes => {
            let Event::ProcessExit(mut x) = exit_event(20_000 + (n % 100_000) as u32) else {
                unreachable!("exit_event makes a ProcessExit")
            };
            x.lifetime_ms = 2000;
            x.cpu_ticks = 10;
            record(t0 + (n % 2) * iv, RecordBody::Event(Event::ProcessExit(x)))
        }
        FloodMode::Devices => {
            let d = s(&format!("sdx{}", n % 1000));
            record(
                t0 + (n % 2) * iv,
                RecordBody::Event(Event::DeviceAdded(DeviceAdded::Disk(d))),
            )
        }
        FloodMode::Samples => record(t0 + n * iv / 100, RecordBody::Sample(nas_sample(n))),
        FloodMode::KeepAlives => Message::KeepAlive(KeepAlive { time_ms: wall_ms() }),
    }
}

fn serve_flood(
    mut c: TcpStream,
    token: &[u8],
    mode: FloodMode,
    stop: &AtomicBool,
    sent: &AtomicU64,
) -> std::io::Result<()> {
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    let now = wall_ms();
    let mut hello = nas_hello(0xf100d + mode as u64, now - 60_000, FLOOD_INTERVAL_MS);
    hello.now_ms = now;
    // An empty ring: everything after the Hello is live.
    hello.oldest_seq = 0;
    hello.newest_seq = 0;
    let Some((_, mut seal)) = agent_handshake(&mut c, token, &hello, [13u8; 32])? else {
        return Ok(());
    };
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, c.try_clone()?);
    let mut buf = vec![0u8; 70_000];
    let (mut n, mut seq) = (0u64, 1u64);
    while !stop.load(Ordering::SeqCst) {
        let m = message(mode, n, seq, now);
        let k = seal.encode(&m, &mut buf)?;
        w.write_all(&buf[..k])?;
        n += 1;
        if matches!(m, Message::Record(_)) {
            seq += 1;
        }
        sent.fetch_add(1, Ordering::Relaxed);
        if mode == FloodMode::Samples && n % 100 == 0 {
            // 100 samples a second of the collector's clock: 100 times the Hello's rate.
            w.flush()?;
            std::thread::sleep(std::time::Duration::from_millis(u64::from(
                FLOOD_INTERVAL_MS,
            )));
        }
    }
    w.flush()
}
