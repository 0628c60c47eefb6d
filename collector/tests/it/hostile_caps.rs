//! The collector against an agent that holds the token and floods (issue 28, items 1, 3 and 8):
//! a fake agent (`nasprobe::testing::FloodAgent`, the real handshake, an empty ring announced)
//! streams far faster than its `Hello`'s interval; the real collector (`Collector`, the code
//! `record` runs) or the real `nasprobe` binary stores it. Asserted:
//!
//! - events under record times alternating between two intervals stay under the cap counted on
//!   the collector's clock, and one `flood` gap with the counts is stored;
//! - `DeviceAdded` is capped the same way;
//! - samples at 100 times the `Hello`'s rate are capped at the rate (+ slack);
//! - `record --duration 5s` under a KeepAlive flood and under an event flood ends within a few
//!   seconds of 5 s, SIGTERM ends it at once, `watch --plain` stops on SIGINT;
//! - a KeepAlive flood disconnects the host, `record` exits 1 naming it, and the refusal is
//!   stored: `report`, `report --json` and `report --html` show it after the fact;
//! - a relay that breaks every frame from second 3: `record` exits 1, names the host and says
//!   how long it was unreachable; `report` lists the frames that failed authentication.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nasprobe::hosts::HostSpec;
use nasprobe::net::conn::{Collector, HostLive, Target};
use nasprobe::net::validate::EVENTS_PER_INTERVAL;
use nasprobe::store::Store;
use nasprobe::testing::{FLOOD_INTERVAL_MS, FakeAgent, FakeHistory, FloodAgent, FloodMode};
use nasprobe_testkit::big_stack;

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

/// Runs a collector against one flooding agent for `run`; the database, the host's live state,
/// what the agent sent and how long the collection ran (from start to finish).
fn flood(dir: &Path, mode: FloodMode, run: Duration) -> (PathBuf, HostLive, u64, Duration) {
    let db = dir.join(format!("{mode:?}.db"));
    let db2 = db.clone();
    let (live, sent, took) = big_stack(move || {
        let agent = FloodAgent::start(TOKEN.to_vec(), mode);
        let target = Target {
            spec: HostSpec {
                name: "flood".into(),
                addr: agent.addr.clone(),
                token_file: None,
            },
            token: Arc::new(TOKEN.to_vec()),
        };
        let started = Instant::now();
        let col = Collector::start(Store::open(&db2).unwrap(), vec![target], None);
        std::thread::sleep(run);
        let live = col.live.snapshot()[0].clone();
        col.finish().unwrap();
        let took = started.elapsed();
        (live, agent.sent.load(Ordering::Relaxed), took)
    });
    (db, live, sent, took)
}

fn count(db: &Path, sql: &str) -> u64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

fn gaps(db: &Path) -> Vec<(i64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.prepare("SELECT samples, reason FROM gaps ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn np(db: &Path, args: &[&str]) -> Output {
    Command::new(NP)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

/// Intervals of the flood agent's `Hello` in `d` (rounded up).
fn intervals(d: Duration) -> u64 {
    d.as_millis() as u64 / u64::from(FLOOD_INTERVAL_MS) + 1
}

#[test]
fn events_under_alternating_times_stay_under_the_cap_and_one_flood_gap_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live, sent, took) = flood(
        dir.path(),
        FloodMode::AlternatingTimes,
        Duration::from_secs(4),
    );
    let stored = count(&db, "SELECT COUNT(*) FROM events");
    eprintln!("alternating times: {sent} events sent in {took:?}, {stored} stored");
    // The gate's allowance: (intervals + 4 of slack) x the cap, on the collector's clock.
    let most = (intervals(took) + 4) * EVENTS_PER_INTERVAL as u64;
    assert!(
        stored <= most,
        "{stored} events stored in {took:?}, at most {most}"
    );
    assert!(
        stored >= EVENTS_PER_INTERVAL as u64,
        "the cap's share is stored: {stored}; {live:?} {:?}",
        gaps(&db)
    );
    assert!(
        sent > 4 * most,
        "the agent flooded: {sent} sent, {stored} stored"
    );
    assert!(live.dropped.events > 0, "{live:?}");
    let g = gaps(&db);
    assert_eq!(g.len(), 1, "one flood gap: {g:?}");
    assert!(g[0].1.starts_with("flood: "), "{g:?}");
    assert!(g[0].1.contains(" events"), "{g:?}");
    // Every record received is stored or counted in the gap, up to the last one.
    let last = count(&db, "SELECT MAX(last_seq) FROM instances");
    assert_eq!(stored + g[0].0 as u64, last, "{g:?}");
    let o = np(&db, &["check"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // (The live state was read a moment before the collection stopped.)
    assert!(
        g[0].0 as u64 >= live.dropped.events,
        "{g:?} {:?}",
        live.dropped
    );
    assert!(
        g[0].1.ends_with(&format!(
            ": 0 samples, {} events, 0 device announcements",
            g[0].0
        )),
        "{g:?}"
    );
    let text = String::from_utf8_lossy(&np(&db, &["report"]).stdout).to_string();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("flood: records"))
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn device_announcements_are_capped_on_the_collectors_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live, sent, took) = flood(dir.path(), FloodMode::Devices, Duration::from_secs(3));
    let stored = count(
        &db,
        "SELECT COUNT(*) FROM events WHERE kind = 'device_added'",
    );
    eprintln!("DeviceAdded: {sent} sent in {took:?}, {stored} stored");
    // Two full inventories at once, then two an interval.
    let most = 2 * (48 + 32) + 2 * intervals(took);
    assert!(
        stored <= most,
        "{stored} DeviceAdded stored in {took:?}, at most {most}"
    );
    assert!(
        sent > 4 * most,
        "the agent flooded: {sent} sent, {stored} stored"
    );
    assert!(live.dropped.devices > 0, "{live:?}");
    let g = gaps(&db);
    assert_eq!(g.len(), 1, "{g:?}");
    assert!(g[0].1.contains("device announcements"), "{g:?}");
    assert!(!g[0].1.contains(" 0 device announcements"), "{g:?}");
}

#[test]
fn samples_at_100_times_the_hellos_rate_are_capped_at_the_rate() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live, sent, took) = flood(dir.path(), FloodMode::Samples, Duration::from_secs(5));
    let stored = count(&db, "SELECT COUNT(*) FROM samples")
        + count(&db, "SELECT COALESCE(SUM(n), 0) FROM sample_chunks");
    eprintln!("samples at 100x: {sent} sent in {took:?}, {stored} stored");
    // One an interval (+5 %) + 20 of slack.
    let most = intervals(took) * 105 / 100 + 21;
    assert!(
        stored <= most,
        "{stored} samples stored in {took:?}, at most {most}"
    );
    assert!(sent >= 3 * most / 2, "the agent sent {sent}");
    assert!(live.dropped.samples > 0, "{live:?}");
    let g = gaps(&db);
    assert_eq!(g.len(), 1, "{g:?}");
    assert!(g[0].1.contains(" samples"), "{g:?}");
    assert!(!g[0].1.contains(": 0 samples"), "{g:?}");
}

/// `nasprobe record` against `addr`, with `args` before the host.
fn record(dir: &Path, addr: &str, args: &[&str]) -> std::process::Child {
    let tok = dir.join("token");
    std::fs::write(&tok, [TOKEN, b"\n"].concat()).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    Command::new(NP)
        .arg("--db")
        .arg(dir.join("r.db"))
        .arg("--token-file")
        .arg(&tok)
        .args(args)
        .arg(format!("nas={addr}"))
        .stdout(Stdio::null())
        // A file, not a pipe: nobody reads a pipe until the end, and a full one would block.
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap()
}

/// What `record` (or `watch`) of `dir` wrote to stderr.
fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
}

/// Waits for `child` at most `limit`; its exit status and how long it took, or None (killed).
fn wait_for(
    mut child: std::process::Child,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, Duration) {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            return (Some(st), t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().ok();
    child.wait().ok();
    (None, t.elapsed())
}

fn signal(child: &std::process::Child, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig}");
}

#[test]
fn record_under_a_keepalive_flood_ends_on_time_exits_1_and_the_refusal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FloodAgent::start(TOKEN.to_vec(), FloodMode::KeepAlives);
    let child = record(dir.path(), &agent.addr, &["record", "--duration", "5s"]);
    let started = Instant::now();
    let (out, _) = wait_for(child, Duration::from_secs(30));
    let took = started.elapsed();
    let out = out.expect("record ended");
    let err = stderr_of(dir.path());
    eprintln!("KeepAlive flood: record --duration 5s took {took:?}");
    assert!(took < Duration::from_secs(9), "record took {took:?}: {err}");
    assert_eq!(out.code(), Some(1), "{err}");
    assert!(err.contains("nas: delivered nothing"), "{err}");
    assert!(err.contains("KeepAlive flood"), "{err}");
    let db = dir.path().join("r.db");
    let text = String::from_utf8_lossy(&np(&db, &["report"]).stdout).to_string();
    assert!(text.contains("Refused by the collector"), "{text}");
    assert!(
        text.contains("host marked bad") && text.contains("KeepAlive flood"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&np(&db, &["report", "--json"]).stdout).unwrap();
    let refusals = json["refusals"].as_array().expect("refusals in the JSON");
    assert!(!refusals.is_empty(), "{json}");
    assert!(
        refusals[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("refused: host marked bad")
    );
    assert_eq!(
        json["gaps"].as_array().map(Vec::len),
        Some(0),
        "a refusal is no gap"
    );
    let html = dir.path().join("r.html");
    let o = np(&db, &["report", "--html", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Refused by the collector"),
        "the HTML lists refusals"
    );
}

#[test]
fn record_under_an_event_flood_ends_on_time_and_on_sigterm_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FloodAgent::start(TOKEN.to_vec(), FloodMode::AlternatingTimes);
    let child = record(dir.path(), &agent.addr, &["record", "--duration", "5s"]);
    let (out, took) = wait_for(child, Duration::from_secs(40));
    let out = out.expect("record ended");
    let err = stderr_of(dir.path());
    eprintln!("event flood: record --duration 5s took {took:?}");
    assert!(
        took < Duration::from_secs(9),
        "record --duration 5s took {took:?}: {err}"
    );
    // The flood's host delivered (within the caps) all along: success.
    assert!(out.success(), "{err}");
    let dir2 = tempfile::tempdir().unwrap();
    let child = record(dir2.path(), &agent.addr, &["record"]);
    std::thread::sleep(Duration::from_secs(3));
    signal(&child, "TERM");
    let (out, took) = wait_for(child, Duration::from_secs(30));
    assert!(out.is_some(), "record ignored SIGTERM for 30 s");
    eprintln!("event flood: SIGTERM ended record in {took:?}");
    assert!(
        took < Duration::from_secs(3),
        "SIGTERM took {took:?} to end record"
    );
}

#[test]
fn watch_plain_stops_on_sigint_under_a_flood() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FloodAgent::start(TOKEN.to_vec(), FloodMode::AlternatingTimes);
    let child = record(dir.path(), &agent.addr, &["watch", "--plain"]);
    std::thread::sleep(Duration::from_secs(3));
    signal(&child, "INT");
    let (out, took) = wait_for(child, Duration::from_secs(30));
    assert!(out.is_some(), "watch ignored SIGINT for 30 s");
    eprintln!("event flood: SIGINT ended watch --plain in {took:?}");
    assert!(
        took < Duration::from_secs(3),
        "SIGINT took {took:?} to end watch"
    );
}

/// A relay that passes bytes both ways and, from `break_after` on, flips a bit in every chunk
/// the agent sends.
fn breaking_relay(to: String, break_after: Duration) -> (String, Arc<AtomicBool>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let start = Instant::now();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !s2.load(Ordering::SeqCst) {
            let Ok((c, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            c.set_nonblocking(false).ok();
            let Ok(a) = TcpStream::connect(&to) else {
                continue;
            };
            let (mut c2, mut a2) = (c.try_clone().unwrap(), a.try_clone().unwrap());
            let (mut c, mut a) = (c, a);
            std::thread::spawn(move || {
                let mut b = [0u8; 4096];
                while let Ok(n @ 1..) = c.read(&mut b) {
                    if a.write_all(&b[..n]).is_err() {
                        break;
                    }
                }
            });
            std::thread::spawn(move || {
                let mut b = [0u8; 4096];
                while let Ok(n @ 1..) = a2.read(&mut b) {
                    if start.elapsed() >= break_after {
                        b[n - 1] ^= 0x40;
                    }
                    if c2.write_all(&b[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    (addr, stop)
}

#[test]
fn record_through_a_relay_breaking_every_frame_from_second_3_exits_1_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let now = nasprobe_proto::time::now_ms();
    let mut h = FakeHistory::new(0x5e1a, now - 10_000, 200);
    for _ in 0..20 {
        h.push(1000);
    }
    let agent = FakeAgent::start(TOKEN.to_vec(), h);
    // The agent samples on: a record every 200 ms.
    let history = agent.history.clone();
    let pushing = Arc::new(AtomicBool::new(true));
    let p2 = pushing.clone();
    std::thread::spawn(move || {
        while p2.load(Ordering::SeqCst) {
            history.lock().unwrap().push(1000);
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let (relay, stop) = breaking_relay(agent.addr.clone(), Duration::from_secs(3));
    let child = record(dir.path(), &relay, &["record", "--duration", "10s"]);
    let (out, _) = wait_for(child, Duration::from_secs(40));
    stop.store(true, Ordering::SeqCst);
    pushing.store(false, Ordering::SeqCst);
    let out = out.expect("record ended");
    let err = stderr_of(dir.path());
    assert_eq!(out.code(), Some(1), "{err}");
    // The error names the host (unreachable most of the run, or the agent's refusal of a
    // handshake the relay broke), and the summary says how long it was unreachable.
    assert!(
        err.lines().last().is_some_and(|l| l.contains("nas")),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("nasprobe: nas unreachable for "))
        .unwrap_or_else(|| panic!("no unreachable line: {err}"));
    let secs: f64 = line["nasprobe: nas unreachable for ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    eprintln!(
        "relay breaking from 3 s: {line} / {}",
        err.lines().last().unwrap_or("")
    );
    assert!(
        (5.0..=10.5).contains(&secs),
        "unreachable {secs} s of 10: {err}"
    );
    let text =
        String::from_utf8_lossy(&np(&dir.path().join("r.db"), &["report"]).stdout).to_string();
    assert!(text.contains("Refused by the collector"), "{text}");
    let refused: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Refused by"))
        .collect();
    eprintln!("relay breaking from 3 s: report: {refused:?}");
    assert!(text.contains("frames that failed authentication"), "{text}");
}
