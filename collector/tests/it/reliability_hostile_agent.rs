//! The collector against hostile or broken agents (issue 10): malformed frames, absurd values
//! (10^18 bytes/s, a counter gone backwards with and without RESET, interval 0 and > 1 h, more
//! CPUs than the Hello said), a sample with 4,096 CPUs (over MAX_CPUS: does not decode), a
//! future protocol version (in the frame header and in the Hello). One well-behaved fake agent
//! streams alongside.
//!
//! Expected: a clear error naming the host; that host marked bad (`HostLive::bad`, shown by
//! watch); other hosts unaffected (every record of the good agent stored); nothing stored that
//! is not valid (every stored sample passes `validate::check_sample`); rejected records are gaps
//! with reason `rejected: ...`, so `check` finds no hole.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nasprobe::hosts::HostSpec;
use nasprobe::net::conn::{Collector, Target};
use nasprobe::store::Store;
use nasprobe::testing::{
    FakeAgent, FakeHistory, agent_handshake, exit_event, nas_hello, nas_sample,
};
use nasprobe_proto::frame::{LEN_PREFIX, decode_body};
use nasprobe_proto::*;
use nasprobe_testkit::big_stack;

const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Valid frames, some samples with absurd values, then a live stream of good ones.
    Absurd,
    /// Three good records, then a frame whose body is no message.
    Malformed,
    /// Two good records, then a sample claiming 4,096 CPUs.
    Cpus4096,
    /// The Challenge comes in a frame of the next protocol version.
    FutureFrame,
    /// Valid v1 frames, but the Hello says protocol 2.
    FutureHello,
}

const INSTANCE: u64 = 0xbad;

fn frame(m: &Message) -> Vec<u8> {
    let mut buf = vec![0u8; 70_000];
    let n = encode_frame(m, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn raw_frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn record(seq: u64, body: RecordBody) -> Message {
    Message::Record(Record {
        seq,
        time_ms: 1_700_000_000_000 + seq * 1000,
        body,
    })
}

/// The samples of the `Absurd` agent by seq; `true` = must be rejected.
fn absurd_record(seq: u64) -> (RecordBody, bool) {
    let mut s = nas_sample(seq);
    let bad = match seq {
        3 => {
            s.nics[0].rx_bytes = 1_000_000_000_000_000_000; // 10^18 bytes in 1 s
            true
        }
        4 => {
            // A counter that went backwards, flagged by the agent: unknown, kept, ignored.
            s.nics[1].rx_bytes = u64::MAX - 100;
            s.nics[1].flags |= flags::RESET;
            false
        }
        5 => {
            s.disks[2].sectors_written = u64::MAX - 5; // gone backwards, not flagged
            true
        }
        6 => {
            s.interval_us = 0;
            true
        }
        7 => {
            s.interval_us = 4_000_000_000; // 66 minutes
            true
        }
        8 => {
            for _ in 0..4 {
                s.cpus.push(s.cpus[0]).unwrap(); // 8 CPUs, the Hello says 4
            }
            true
        }
        9 => return (RecordBody::Event(exit_event(4242)), false),
        _ => false,
    };
    (RecordBody::Sample(s), bad)
}
const ABSURD_REJECTED: [u64; 5] = [3, 5, 6, 7, 8];

/// A Record frame whose sample claims 4,096 CPUs (MAX_CPUS is 256): built by hand, since the
/// fixed-capacity `Sample` cannot hold it.
fn cpus_4096_frame(seq: u64) -> Vec<u8> {
    let mut s = nas_sample(seq);
    s.cpus.clear();
    let real = frame(&record(seq, RecordBody::Sample(s.clone())));
    let body = &real[LEN_PREFIX..];
    // Message::Record's tag, seq, time_ms, RecordBody::Sample's tag, interval_us, cpu_total.
    let Message::Record(r) = record(seq, RecordBody::Sample(s.clone())) else {
        unreachable!()
    };
    let prefix =
        postcard::to_allocvec(&(6u32, r.seq, r.time_ms, 0u32, s.interval_us, s.cpu_total)).unwrap();
    assert_eq!(
        &body[1..1 + prefix.len()],
        &prefix[..],
        "layout of a Record"
    );
    assert_eq!(body[1 + prefix.len()], 0, "the empty cpus list");
    let mut crafted = vec![PROTOCOL_VERSION];
    crafted.extend_from_slice(&prefix);
    let cpus: Vec<CpuTicks> = (0..4096).map(|_| s.cpu_total).collect();
    crafted.extend_from_slice(&postcard::to_allocvec(&cpus).unwrap());
    crafted.extend_from_slice(&body[2 + prefix.len()..]);
    assert_eq!(decode_body(&crafted).unwrap_err(), FrameError::Malformed);
    raw_frame(&crafted)
}

fn serve(mut c: TcpStream, mode: Mode, stop: &AtomicBool) -> std::io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    if mode == Mode::FutureFrame {
        let challenge = Message::Challenge(Challenge {
            agent_nonce: [9u8; 32],
        });
        let mut f = frame(&challenge);
        f[LEN_PREFIX] = PROTOCOL_VERSION + 1;
        c.write_all(&f)?;
        std::thread::sleep(Duration::from_secs(1));
        return Ok(());
    }
    // 100 ms: it streams 10 records a second (the collector takes no more live samples than
    // the Hello's interval allows).
    let mut hello = nas_hello(INSTANCE, 1_700_000_000_000, 100);
    if mode == Mode::FutureHello {
        hello.protocol_version = PROTOCOL_VERSION + 1;
    }
    hello.oldest_seq = 1;
    hello.newest_seq = 10;
    let Some((r, mut seal)) = agent_handshake(&mut c, TOKEN, &hello, [9u8; 32])? else {
        return Ok(());
    };
    let mut seq = if r.instance_id == INSTANCE {
        r.after_seq + 1
    } else {
        1
    };
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        // Sealed with the session's MAC: this agent holds the token, its lies are in the bodies.
        let f = match mode {
            Mode::Absurd => seal.frame(&record(seq, absurd_record(seq).0)),
            Mode::Malformed if seq == 4 => {
                seal.seal_raw(&raw_frame(&[PROTOCOL_VERSION, 6, 0xff, 0xff, 0xff]))
            }
            Mode::Cpus4096 if seq == 3 => seal.seal_raw(&cpus_4096_frame(seq)),
            _ => seal.frame(&record(seq, RecordBody::Sample(nas_sample(seq)))),
        };
        c.write_all(&f)?;
        seq += 1;
        if seq > 12 {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

struct Hostile {
    addr: String,
    stop: Arc<AtomicBool>,
    conns: Arc<AtomicU64>,
}

impl Hostile {
    fn start(mode: Mode) -> Hostile {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(AtomicU64::new(0));
        let (s2, c2) = (stop.clone(), conns.clone());
        std::thread::spawn(move || {
            while !s2.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((c, _)) => {
                        c2.fetch_add(1, Ordering::SeqCst);
                        c.set_nonblocking(false).unwrap();
                        let s3 = s2.clone();
                        std::thread::Builder::new()
                            .stack_size(16 << 20)
                            .spawn(move || {
                                let _ = serve(c, mode, &s3);
                            })
                            .unwrap();
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Hostile { addr, stop, conns }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn target(name: &str, addr: &str) -> Target {
    Target {
        spec: HostSpec {
            name: name.into(),
            addr: addr.into(),
            token_file: None,
        },
        token: Arc::new(TOKEN.to_vec()),
    }
}

#[test]
fn hostile_agents_are_marked_bad_and_nothing_invalid_is_stored() {
    big_stack(hostile_body);
}

fn hostile_body() {
    let t0 = Instant::now();
    // The good agent: 300 records of history, then 10 more a second (its Hello says 100 ms:
    // the collector takes no more live samples than the interval allows).
    let mut h = FakeHistory::new(0x600d, 1_700_000_000_000, 100);
    for _ in 0..300 {
        h.push(usize::MAX);
    }
    let good = FakeAgent::start(TOKEN.to_vec(), h);
    let gh = good.history.clone();
    let pusher_stop = Arc::new(AtomicBool::new(false));
    let ps = pusher_stop.clone();
    let pusher = std::thread::spawn(move || {
        while !ps.load(Ordering::SeqCst) {
            gh.lock().unwrap().push(usize::MAX);
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let modes = [
        ("absurd", Mode::Absurd),
        ("malformed", Mode::Malformed),
        ("cpus4096", Mode::Cpus4096),
        ("future-frame", Mode::FutureFrame),
        ("future-hello", Mode::FutureHello),
    ];
    let hostile: Vec<Hostile> = modes.iter().map(|(_, m)| Hostile::start(*m)).collect();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hostile.db");
    let mut targets = vec![target("good", &good.addr)];
    for ((name, _), h) in modes.iter().zip(&hostile) {
        targets.push(target(name, &h.addr));
    }
    let col = Collector::start(Store::open(&db).unwrap(), targets, None);
    let live = col.live.clone();
    // Let it run: every hostile host gets its first connection and the good one streams.
    std::thread::sleep(Duration::from_secs(5));
    pusher_stop.store(true, Ordering::SeqCst);
    pusher.join().unwrap();
    let good_total = good.history.lock().unwrap().next_seq - 1;
    // Wait until the good host has everything, then stop.
    let end = Instant::now() + Duration::from_secs(20);
    while live.snapshot()[0].received < good_total {
        assert!(Instant::now() < end, "the good host fell behind");
        std::thread::sleep(Duration::from_millis(50));
    }
    let snap = live.snapshot();
    let store = col.finish().unwrap();

    // Every hostile host is marked bad, with a message that says what happened; the good one
    // is not.
    let by = |n: &str| snap.iter().find(|h| h.name == n).unwrap().clone();
    assert!(by("good").bad.is_none(), "{:?}", by("good").bad);
    assert_eq!(by("good").received, good_total);
    for (name, _) in &modes {
        let b = by(name)
            .bad
            .unwrap_or_else(|| panic!("{name} not marked bad"));
        eprintln!("{name}: bad = {b}");
        let future = format!(
            "the agent speaks protocol {}, this collector {}: upgrade the collector",
            PROTOCOL_VERSION + 1,
            PROTOCOL_VERSION
        );
        let want = match *name {
            "absurd" => "rejected",
            "malformed" | "cpus4096" => {
                "bad frame from the agent: frame body is not a valid message"
            }
            _ => future.as_str(),
        };
        if *name != "absurd" {
            assert!(b.starts_with(&format!("{name}: ")), "names the host: {b}");
        }
        assert!(b.to_lowercase().contains(want), "{name}: {b}");
    }
    assert_eq!(by("absurd").rejected, ABSURD_REJECTED.len() as u64);
    // Hosts in error back off (10 s or more): one connection each in this run.
    for (h, (name, _)) in hostile.iter().zip(&modes) {
        assert_eq!(
            h.conns.load(Ordering::SeqCst),
            1,
            "{name} reconnected too soon"
        );
    }

    // The store: no hole anywhere; the good host has everything.
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let checks = store.check().unwrap();
    for c in &checks {
        assert!(c.holes.is_empty() && c.duplicates == 0, "{c:?}");
    }
    let ck = |n: &str| checks.iter().find(|c| c.host == n).cloned();
    let g = ck("good").unwrap();
    assert_eq!(
        (g.first_seq, g.last_seq, g.stored, g.gone),
        (1, good_total, good_total, 0)
    );
    // Future versions: nothing registered at all.
    assert!(ck("future-frame").is_none() && ck("future-hello").is_none());
    // Broken frames: only what came before them.
    assert_eq!(ck("malformed").unwrap().stored, 3);
    assert_eq!(ck("cpus4096").unwrap().stored, 2);
    // Absurd values: exactly the implausible records are gaps "rejected: ...".
    let a = ck("absurd").unwrap();
    assert_eq!(a.gone, ABSURD_REJECTED.len() as u64, "{a:?}");
    assert_eq!(a.stored + a.gone, a.last_seq, "{a:?}");
    let conn = store.conn();
    let mut q = conn
        .prepare(
            "SELECT g.from_seq, g.to_seq, g.reason FROM gaps g JOIN hosts h ON h.id = g.host
             WHERE h.name = 'absurd' ORDER BY g.from_seq",
        )
        .unwrap();
    let gaps: Vec<(i64, i64, String)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        gaps.iter().map(|g| g.0 as u64).collect::<Vec<_>>(),
        ABSURD_REJECTED.to_vec()
    );
    for (from, to, reason) in &gaps {
        assert_eq!(from, to);
        assert!(reason.starts_with("rejected: "), "{reason}");
        eprintln!("absurd gap {from}: {reason}");
    }
    assert!(
        gaps[0].2.contains("eth0") && gaps[0].2.contains("1 Tbit/s"),
        "{gaps:?}"
    );
    // Nothing stored is invalid: decode and check every stored sample of every host.
    let hello = nas_hello(0, 0, 1000);
    let mut q = conn
        .prepare("SELECT h.name, s.seq, s.body FROM samples s JOIN instances i ON i.id = s.instance JOIN hosts h ON h.id = i.host")
        .unwrap();
    let rows: Vec<(String, i64, Vec<u8>)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut checked = 0;
    let mut reset_kept = false;
    for (host, seq, body) in &rows {
        let s: Sample = postcard::from_bytes(body).unwrap();
        assert_eq!(
            nasprobe::net::validate::check_sample(&hello, &s),
            Ok(()),
            "{host} seq {seq} stored"
        );
        reset_kept |= host == "absurd" && *seq == 4;
        checked += 1;
    }
    assert!(reset_kept, "the RESET-flagged sample is valid and kept");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "FIGURES hostile_agents: hosts=6 (1 good, 5 hostile) good_records={good_total} lost=0 \
         stored_samples_checked={checked} rejected={} seconds={secs:.1}",
        ABSURD_REJECTED.len()
    );
}
