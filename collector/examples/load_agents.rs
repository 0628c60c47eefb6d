//! Load tool for `scripts/bench`: simulated agents speaking the real protocol (proto's frames,
//! the HMAC challenge/response of `proto::auth`, Hello/Resume/Record), and a store generator.
//!
//! ```text
//! load_agents serve --agents N --token-file F [--interval-ms 1000] [--history H] [--hosts-out FILE]
//! load_agents make-store DB --hosts 10 --hours 24 [--interval-ms 1000] [--schema N] [--events E]
//! load_agents chunk-sizes DB
//! ```
//!
//! `serve`: N agents on 127.0.0.1 (one listener and one thread each, lean: a thread sleeps
//! until its next tick). Each holds H records already (seq 1..=H, times in the past: the
//! backfill case) and appends one sample per interval (the live case), every 100th record a
//! process-exit event. Records are the busy 4-core, 8-disk, 4-NIC, 8-top-process NAS of
//! `nasprobe::testing`, built on demand (no history kept in memory). Prints `NAME=ADDR` per
//! agent (also to `--hosts-out`), then `ready`; runs until killed. Agent starts are staggered
//! across the interval, as independent NAS boxes are.
//!
//! `sizes`: the encoded size of the reference NAS sample, part by part (the wire budget).
//!
//! `make-store`: writes `hosts` × `hours` × 3600 s / interval samples through the store API
//! (batches of 1000, as the collector's store task does), ending now, for `nasprobe report`.
//! `--schema 3` writes the store as nasprobe did before chunks (one row per sample).
//! `--events E`: E process-exit events after every sample (a busy host's history: a real busy
//! host sends ~2.3 a second) instead of one record in 100 being an event.
//!
//! `chunk-sizes`: the stored sample bodies of DB (e.g. recorded from a real agent) compressed
//! the ways the store could: zstd level 3 or 19 over chunks of 900 or 60 bodies, with or
//! without a dictionary trained on the first 1000 bodies; bytes per sample for each.

use std::io::{BufWriter, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nasprobe::store::{Item, Store};
use nasprobe::testing::{agent_handshake, exit_event, nas_hello, nas_sample};
use nasprobe_proto::*;

use nasprobe_proto::time::now_ms;

fn arg<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> T {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => serve(&args),
        Some("make-store") => make_store(&args),
        Some("sizes") => sizes(),
        Some("chunk-sizes") => chunk_sizes(&args),
        _ => {
            eprintln!(
                "usage: load_agents serve --agents N --token-file F [--interval-ms MS] [--history H] [--hosts-out FILE]\n       load_agents make-store DB [--hosts 10] [--hours 24] [--interval-ms 1000]"
            );
            std::process::exit(2);
        }
    }
}

/// The record with sequence number `seq` of an agent (deterministic).
fn record(seq: u64, started_ms: u64, interval_ms: u32) -> Record {
    let time_ms = started_ms + seq * u64::from(interval_ms);
    let body = if seq.is_multiple_of(100) {
        RecordBody::Event(exit_event(seq as u32))
    } else {
        RecordBody::Sample(nas_sample(seq))
    };
    Record { seq, time_ms, body }
}

fn serve(args: &[String]) {
    let n: usize = arg(args, "--agents", 100);
    let interval_ms: u32 = arg(args, "--interval-ms", 1000);
    let history: u64 = arg(args, "--history", 0);
    let token_file: String = arg(args, "--token-file", String::new());
    let token = std::fs::read(&token_file).unwrap_or_else(|e| {
        eprintln!("load_agents: --token-file {token_file}: {e}");
        std::process::exit(2)
    });
    let token = token.trim_ascii().to_vec();
    let hosts_out: Option<String> = args
        .iter()
        .position(|a| a == "--hosts-out")
        .and_then(|i| args.get(i + 1).cloned());
    let mut lines = String::new();
    let mut listeners = Vec::new();
    for i in 0..n {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        lines.push_str(&format!("a{i:03}={}\n", l.local_addr().expect("addr")));
        listeners.push(l);
    }
    if let Some(p) = hosts_out {
        std::fs::write(&p, &lines).expect("hosts-out");
    }
    print!("{lines}");
    println!("ready");
    std::io::stdout().flush().ok();
    let t0 = Instant::now();
    let base_ms = now_ms();
    let mut threads = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        let token = token.clone();
        // Staggered phase; the history ends "now": record H is the newest at t0.
        let phase = Duration::from_millis(u64::from(interval_ms) * i as u64 / n.max(1) as u64);
        let started_ms = base_ms.saturating_sub(history * u64::from(interval_ms));
        threads.push(
            std::thread::Builder::new()
                .stack_size(8 << 20)
                .spawn(move || {
                    let agent = Agent {
                        instance_id: 0x5eed_0000 + i as u64,
                        started_ms,
                        interval_ms,
                        history,
                        t0: t0 + phase,
                    };
                    loop {
                        if let Ok((c, _)) = l.accept() {
                            let _ = agent.session(c, &token);
                        }
                    }
                })
                .expect("spawn"),
        );
    }
    for t in threads {
        t.join().ok();
    }
}

struct Agent {
    instance_id: u64,
    started_ms: u64,
    interval_ms: u32,
    history: u64,
    /// Time of record `history`; record `history + k` is due at t0 + k intervals.
    t0: Instant,
}

impl Agent {
    fn newest(&self) -> u64 {
        let k = self.t0.elapsed().as_millis() as u64 / u64::from(self.interval_ms);
        self.history + k
    }

    fn session(&self, mut c: TcpStream, token: &[u8]) -> std::io::Result<()> {
        c.set_nodelay(true).ok();
        c.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut buf = vec![0u8; 70_000];
        let mut agent_nonce = [0u8; 32];
        agent_nonce[..8].copy_from_slice(&self.instance_id.to_le_bytes());
        agent_nonce[8..16].copy_from_slice(&now_ms().to_le_bytes());
        let newest = self.newest();
        let mut hello = nas_hello(self.instance_id, self.started_ms, self.interval_ms);
        hello.now_ms = now_ms();
        hello.oldest_seq = if newest > 0 { 1 } else { 0 };
        hello.newest_seq = newest;
        let Some((r, mut seal)) = agent_handshake(&mut c, token, &hello, agent_nonce)? else {
            return Ok(());
        };
        let mut next = if r.instance_id == self.instance_id {
            r.after_seq + 1
        } else {
            1
        };
        let mut w = BufWriter::with_capacity(256 * 1024, c);
        loop {
            let newest = self.newest();
            while next <= newest {
                let rec = record(next, self.started_ms, self.interval_ms);
                let n = seal.encode(&Message::Record(rec), &mut buf)?;
                w.write_all(&buf[..n])?;
                next += 1;
            }
            w.flush()?;
            // Sleep until the next record is due.
            let due = self.t0
                + Duration::from_millis((next - self.history) * u64::from(self.interval_ms));
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    }
}

fn make_store(args: &[String]) {
    let db = PathBuf::from(args.get(1).cloned().unwrap_or_else(|| "store.db".into()));
    let hosts: u64 = arg(args, "--hosts", 10);
    let hours: u64 = arg(args, "--hours", 24);
    let interval_ms: u32 = arg(args, "--interval-ms", 1000);
    let per_host = hours * 3_600_000 / u64::from(interval_ms);
    let schema: i64 = arg(args, "--schema", nasprobe::store::SCHEMA_VERSION);
    let events: u64 = arg(args, "--events", 0);
    let _ = std::fs::remove_file(&db);
    let mut s = Store::open_at_schema(&db, schema).expect("open store");
    let end = now_ms();
    let started = end - per_host * u64::from(interval_ms);
    let t0 = Instant::now();
    let mut total = 0u64;
    for h in 0..hosts {
        let mut hello = nas_hello(0xab00 + h, started, interval_ms);
        hello.host_name.clear();
        let _ = hello.host_name.push_str(&format!("nas{h:02}"));
        let reg = s
            .register(
                &format!("nas{h:02}"),
                &format!("10.0.0.{}:7451", h + 1),
                &hello,
            )
            .expect("register");
        let mut batch = Vec::with_capacity(1000);
        let mut push = |r: Record, batch: &mut Vec<Item>| {
            let body = match &r.body {
                RecordBody::Sample(x) => postcard::to_allocvec(x).expect("encodes"),
                RecordBody::Event(x) => postcard::to_allocvec(x).expect("encodes"),
            };
            batch.push(Item::from_record(reg.instance, &r, body));
            if batch.len() >= 1000 {
                s.write_batch(batch).expect("write");
                batch.clear();
            }
        };
        let mut seq = 0;
        for tick in 1..=per_host {
            seq += 1;
            if events == 0 {
                push(record(tick, started, interval_ms), &mut batch);
                continue;
            }
            let time_ms = started + tick * u64::from(interval_ms);
            let body = RecordBody::Sample(nas_sample(tick));
            push(Record { seq, time_ms, body }, &mut batch);
            for _ in 0..events {
                seq += 1;
                let body = RecordBody::Event(exit_event(seq as u32));
                push(Record { seq, time_ms, body }, &mut batch);
            }
        }
        if !batch.is_empty() {
            s.write_batch(&batch).expect("write");
        }
        total += seq;
    }
    s.conn()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "make-store: {total} records ({hosts} hosts x {per_host} samples) in {dt:.1}s = {:.0}/s; {} bytes",
        total as f64 / dt,
        std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
    );
}

macro_rules! sz {
    ($e:expr) => {
        postcard::to_allocvec(&$e).map(|v| v.len()).unwrap_or(0)
    };
}

fn sizes() {
    let x = nas_sample(5);
    println!("sample body {} bytes", sz!(x));
    println!("  cpu_total {}", sz!(x.cpu_total));
    println!("  cpus ({}) {}", x.cpus.len(), sz!(x.cpus));
    println!("  top ({}) {}", x.top.len(), sz!(x.top));
    let comm: usize = x.top.iter().map(|p| p.comm.len() + 1).sum();
    println!("    of which comm strings {comm}");
    println!("  disks ({}) {}", x.disks.len(), sz!(x.disks));
    println!("  nics ({}) {}", x.nics.len(), sz!(x.nics));
    println!("  memory {}", sz!(x.memory));
    println!("  vm {}", sz!(x.vm));
    println!("  tcp {}", sz!(x.tcp));
    println!("  agent {}", sz!(x.agent));
    let rec = Record {
        seq: 86_400,
        time_ms: now_ms(),
        body: RecordBody::Sample(x),
    };
    let mut buf = vec![0u8; 70_000];
    println!(
        "frame (length prefix, version, message tag, seq, time, body) {} bytes",
        encode_frame(&Message::Record(rec), &mut buf).expect("encodes")
    );
}

fn chunk_sizes(args: &[String]) {
    let db = PathBuf::from(args.get(1).cloned().unwrap_or_else(|| "store.db".into()));
    let (s, _) = nasprobe::store::StoreReader::open_read_only(&db).expect("open store");
    let mut after = std::collections::HashMap::new();
    let mut bodies: Vec<Vec<u8>> = Vec::new();
    loop {
        let recs = s.records_after(&after, 10_000).expect("read");
        if recs.is_empty() {
            break;
        }
        for r in recs {
            after.insert(r.instance, r.seq);
            if !r.is_event {
                bodies.push(r.body);
            }
        }
    }
    let n = bodies.len();
    assert!(n > 0, "no samples in {}", db.display());
    let raw: usize = bodies.iter().map(Vec::len).sum();
    println!(
        "chunk-sizes: {n} samples, body {:.1} bytes/sample",
        raw as f64 / n as f64
    );
    let train = &bodies[..n.min(1000)];
    let dict = zstd::dict::from_samples(train, 16 << 10).expect("train a dictionary");
    for (chunk, level, with_dict) in [
        (900, 3, false),
        (900, 19, false),
        (900, 3, true),
        (60, 3, false),
        (60, 3, true),
    ] {
        let t0 = Instant::now();
        let mut out = 0usize;
        for c in bodies.chunks(chunk) {
            let cat: Vec<u8> = c.concat();
            let z = if with_dict {
                zstd::bulk::Compressor::with_dictionary(level, &dict)
                    .and_then(|mut z| z.compress(&cat))
            } else {
                zstd::bulk::compress(&cat, level)
            };
            out += z.expect("compress").len();
        }
        println!(
            "chunk-sizes: zstd-{level} chunks of {chunk}{}: {:.1} bytes/sample (x{:.1}), {:.0} ns/sample",
            if with_dict {
                " + 16 KiB dictionary"
            } else {
                ""
            },
            out as f64 / n as f64,
            raw as f64 / out as f64,
            t0.elapsed().as_nanos() as f64 / n as f64
        );
    }
}
