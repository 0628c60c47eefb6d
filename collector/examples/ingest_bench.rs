//! Backfill ingest rate: a fake agent (real protocol over loopback TCP) holds N records of a
//! busy 4-core, 8-disk, 4-NIC NAS; the collector connects and stores them all. Prints samples
//! per second end to end (decode + channel + batched SQLite transactions), the raw store write
//! rate, and bytes per stored sample on disk.
//!
//!     cargo run --release -p nasprobe --example ingest_bench -- [N]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nasprobe::hosts::HostSpec;
use nasprobe::net::conn::{Collector, Target};
use nasprobe::store::{Item, Store};
use nasprobe::testing::{FakeAgent, FakeHistory, nas_hello, nas_sample};

fn main() -> anyhow::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100_000);
    let dir = tempfile::tempdir()?;

    // 1. End to end over TCP.
    let token = b"0123456789abcdef0123456789abcdef".to_vec();
    let mut h = FakeHistory::new(1, 1_700_000_000_000, 1000);
    for _ in 0..n {
        h.push(usize::MAX);
    }
    let agent = FakeAgent::start(token.clone(), h);
    let db = dir.path().join("e2e.db");
    let store = Store::open(&db)?;
    let t0 = Instant::now();
    let col = Collector::start(
        store,
        vec![Target {
            spec: HostSpec {
                name: "fake".into(),
                addr: agent.addr.clone(),
                token_file: None,
            },
            token: Arc::new(token),
        }],
        None,
    );
    while col.live.committed.load(Ordering::SeqCst) < n {
        std::thread::sleep(Duration::from_millis(5));
    }
    let dt = t0.elapsed();
    let store = col.finish()?;
    store
        .conn()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
    let bytes = std::fs::metadata(&db)?.len();
    let samples = n - n / 10; // every 10th record is an event
    println!(
        "end to end (TCP, decode, batched writes): {n} records in {:.2}s = {:.0} records/s",
        dt.as_secs_f64(),
        n as f64 / dt.as_secs_f64()
    );
    println!(
        "on disk: {bytes} bytes = {:.0} bytes per record ({samples} samples + {} events)",
        bytes as f64 / n as f64,
        n - samples
    );

    // 2. The store alone, batches of 500.
    let mut s = Store::open(&dir.path().join("raw.db"))?;
    let reg = s.register("raw", "x:1", &nas_hello(2, 0, 1000))?;
    let body_len = postcard::to_allocvec(&nas_sample(1))?.len();
    let items: Vec<Item> = (1..=n)
        .map(|i| Item::Sample {
            instance: reg.instance,
            seq: i,
            time_ms: i * 1000,
            body: postcard::to_allocvec(&nas_sample(i)).expect("encodes"),
        })
        .collect();
    let t0 = Instant::now();
    for c in items.chunks(500) {
        s.write_batch(c)?;
    }
    let dt = t0.elapsed();
    s.conn().execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
    let bytes = std::fs::metadata(s.path())?.len();
    println!(
        "store only: {n} samples in {:.2}s = {:.0} samples/s; {:.0} bytes per sample on disk (postcard body {body_len} bytes)",
        dt.as_secs_f64(),
        n as f64 / dt.as_secs_f64(),
        bytes as f64 / n as f64
    );
    Ok(())
}
