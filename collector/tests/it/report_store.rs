//! `nasprobe report` and `nasprobe events` on a store written in-process: the JSON contract
//! (exactly one object, every field of docs/report-json.md), sample counts per host, the
//! agent_start event, gaps as the store knows them, `--since`, `--expect`, `--html`.

use std::path::Path;
use std::process::Command;

use nasprobe::store::{Item, REASON_RESTART, REASON_RING, Store};
use nasprobe::testing::{exit_event, nas_hello, nas_sample};
use nasprobe_proto::{AgentStart, Event, ProcessInfo, Record, RecordBody};
use serde_json::Value;

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");

use nasprobe_proto::time::now_ms;

fn event_item(instance: i64, seq: u64, time_ms: u64, e: Event) -> Item {
    let body = postcard::to_allocvec(&e).unwrap();
    let r = Record {
        seq,
        time_ms,
        body: RecordBody::Event(e),
    };
    Item::from_record(instance, &r, body)
}

fn agent_start(instance_id: u64) -> Event {
    Event::AgentStart(AgentStart {
        agent_version: "0.1.0".try_into().unwrap(),
        instance_id,
        interval_ms: 1000,
    })
}

fn start_event(pid: u32, token: u32) -> Event {
    Event::ProcessStart(ProcessInfo {
        pid,
        ppid: 1,
        comm: "btrfs".try_into().unwrap(),
        cmdline: format!("btrfs send -p /vol/snap1 /vol/snap2 -k {token}")
            .as_str()
            .try_into()
            .unwrap(),
        start_ticks: 1,
    })
}

/// One agent instance of `host` started at `t0`: agent_start, then `n` samples at 1 s.
fn write_instance(s: &mut Store, host: &str, id: u64, t0: u64, n: u64) -> i64 {
    let reg = s
        .register(host, "127.0.0.1:7451", &nas_hello(id, t0, 1000))
        .unwrap();
    let mut items = vec![event_item(reg.instance, 1, t0, agent_start(id))];
    for i in 0..n {
        items.push(Item::Sample {
            instance: reg.instance,
            seq: i + 2,
            time_ms: t0 + (i + 1) * 1000,
            body: postcard::to_allocvec(&nas_sample(i)).unwrap(),
        });
    }
    s.write_batch(&items).unwrap();
    reg.instance
}

/// A store with `src` (60 samples, one instance) and `dst` (40 + 30 samples over two
/// instances: a restart gap; plus 5 records the ring overwrote), a btrfs that dies and comes back.
fn fixture(db: &Path) -> u64 {
    let mut s = Store::open(db).unwrap();
    let t0 = now_ms() - 120_000;
    write_instance(&mut s, "src", 0x51, t0, 60);
    let a = write_instance(&mut s, "dst", 0xd1, t0, 40);
    s.write_batch(&[Item::Gone {
        instance: a,
        from_seq: 42,
        to_seq: 46,
    }])
    .unwrap();
    let b = write_instance(&mut s, "dst", 0xd2, t0 + 50_000, 30);
    let mut seq = 1000;
    let mut ev = Vec::new();
    for k in 0..3u64 {
        let t = t0 + 52_000 + k * 8_000;
        ev.push(event_item(b, seq, t, exit_event(700 + k as u32)));
        ev.push(event_item(
            b,
            seq + 1,
            t + 500,
            start_event(800 + k as u32, 42 + k as u32),
        ));
        seq += 2;
    }
    s.write_batch(&ev).unwrap();
    t0
}

fn np(db: &Path, args: &[&str]) -> (String, String, bool) {
    let out = Command::new(NP)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

fn one_json_object(stdout: &str) -> Value {
    // Exactly one JSON value on stdout, and it is an object.
    let mut it = serde_json::Deserializer::from_str(stdout).into_iter::<Value>();
    let v = it.next().expect("a JSON value").expect("valid JSON");
    assert!(it.next().is_none(), "more than one JSON value:\n{stdout}");
    assert!(v.is_object(), "{v}");
    v
}

fn is_rfc3339(v: &Value) -> bool {
    v.as_str()
        .and_then(nasprobe_analysis::time::parse_rfc3339)
        .is_some()
}

#[test]
fn report_json_contract() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    fixture(&db);
    let (out, err, ok) = np(&db, &["report", "--json"]);
    assert!(ok, "{err}");
    let r = one_json_object(&out);

    let w = &r["window"];
    assert!(is_rfc3339(&w["from"]) && is_rfc3339(&w["to"]), "{w}");
    assert!(w["seconds"].as_u64().unwrap() >= 59, "{w}");

    let hosts = r["hosts"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dst", "src"]);
    assert_eq!(hosts[0]["samples"], 70, "both instances of dst count");
    assert_eq!(hosts[1]["samples"], 60);
    for h in hosts {
        for k in ["cpu", "memory"] {
            assert!(h[k].is_object(), "{k}: {h}");
        }
        for k in ["top_processes", "disks", "nics"] {
            assert!(!h[k].as_array().unwrap().is_empty(), "{k}: {h}");
        }
        assert!(h["cpu"]["cores"].as_u64().unwrap() == 4);
    }

    let b = &r["bottleneck"];
    let res = b["resource"].as_str().unwrap();
    assert!(
        ["cpu_thread", "cpu_all", "disk", "nic", "memory", "none"].contains(&res),
        "{b}"
    );
    for k in ["host", "device", "process", "utilization", "evidence"] {
        assert!(b.get(k).is_some(), "bottleneck.{k} missing: {b}");
    }
    assert!(!b["evidence"].as_array().unwrap().is_empty());
    if res == "none" {
        assert!(b["host"].is_null());
    }

    let events = r["events"].as_array().unwrap();
    for e in events {
        assert!(is_rfc3339(&e["at"]), "{e}");
        for k in ["host", "kind", "pid", "process"] {
            assert!(e.get(k).is_some(), "event.{k} missing: {e}");
        }
    }
    let mut starts: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "agent_start")
        .map(|e| e["host"].as_str().unwrap())
        .collect();
    starts.sort();
    assert_eq!(starts, ["dst", "dst", "src"]);
    let exits = events
        .iter()
        .filter(|e| e["kind"] == "process_exit")
        .count();
    assert_eq!(exits, 3);
    let sorted: Vec<&str> = events.iter().map(|e| e["at"].as_str().unwrap()).collect();
    assert!(sorted.is_sorted(), "events in time order");

    let gaps = r["gaps"].as_array().unwrap();
    let reasons: Vec<&str> = gaps.iter().map(|g| g["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&REASON_RESTART), "{gaps:?}");
    assert!(reasons.contains(&REASON_RING), "{gaps:?}");
    for g in gaps {
        assert_eq!(g["host"], "dst");
        assert!(is_rfc3339(&g["from"]) && is_rfc3339(&g["to"]), "{g}");
        assert!(g["samples"].as_u64().is_some(), "{g}");
    }
    let ring = gaps.iter().find(|g| g["reason"] == REASON_RING).unwrap();
    assert_eq!(ring["samples"], 5);

    let p = r["patterns"].as_array().unwrap();
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["restarts"], 3);
}

#[test]
fn report_text_since_expect_html_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    fixture(&db);

    let (out, err, ok) = np(&db, &["report"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("Window "), "{out}");
    assert!(out.contains("Verdict:"), "{out}");
    assert!(out.contains("agent restarted"), "{out}");

    // --since: only the last 30 s (dst's second instance, src's tail).
    let (out, err, ok) = np(&db, &["report", "--json", "--since", "30s"]);
    assert!(ok, "{err}");
    let r = one_json_object(&out);
    assert!(
        r["window"]["seconds"].as_u64().unwrap() <= 31,
        "{}",
        r["window"]
    );
    for h in r["hosts"].as_array().unwrap() {
        let n = h["samples"].as_u64().unwrap();
        assert!(n < 40, "{}: {n}", h["name"]);
    }

    let (_, err, ok) = np(&db, &["report", "--json", "--expect", "11T"]);
    assert!(ok, "{err}");
    let (_, err, ok) = np(&db, &["report", "--expect", "11X"]);
    assert!(!ok);
    assert!(err.contains("size"), "{err}");

    let html = dir.path().join("r.html");
    let (out, err, ok) = np(&db, &["report", "--json", "--html", html.to_str().unwrap()]);
    assert!(ok, "{err}");
    one_json_object(&out);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"));
    assert!(page.contains("dst") && page.contains("src"));

    let (out, err, ok) = np(&db, &["events"]);
    assert!(ok, "{err}");
    assert!(out.contains("agent_start"), "{out}");
    assert!(out.contains("process_exit"), "{out}");
    assert!(out.contains("Pattern:"), "{out}");
    let (out, err, ok) = np(&db, &["events", "--json"]);
    assert!(ok, "{err}");
    let e = one_json_object(&out);
    for k in ["window", "events", "patterns", "gaps"] {
        assert!(e.get(k).is_some(), "{k}: {e}");
    }
    assert_eq!(e["patterns"][0]["deaths"].as_array().unwrap().len(), 3);
}

#[test]
fn report_on_a_missing_or_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let (_, err, ok) = np(&db, &["report", "--json"]);
    assert!(!ok);
    assert!(err.contains("no database"), "{err}");
    drop(Store::open(&db).unwrap());
    let (out, err, ok) = np(&db, &["report", "--json"]);
    assert!(ok, "{err}");
    let r = one_json_object(&out);
    assert_eq!(r["bottleneck"]["resource"], "none");
    assert!(r["bottleneck"]["host"].is_null());
    assert_eq!(r["window"]["seconds"], 0);
    assert!(
        r["window"]["to"].as_str().unwrap() > "2020",
        "{}",
        r["window"]
    );
    assert!(r["hosts"].as_array().unwrap().is_empty());
    assert!(r["gaps"].as_array().unwrap().is_empty());
}

/// Runs `nasprobe --db DB ARGS... | READER` in bash and returns (nasprobe's exit status, its
/// stderr). The reader closes its stdin at once and lingers, so every write of nasprobe meets a
/// pipe without a reader (EPIPE), however small the output.
fn into_closed_pipe(db: &Path, args: &[&str]) -> (i32, String) {
    let err = db.with_extension("stderr");
    let o = Command::new("bash")
        .arg("-c")
        .arg(r#""$@" 2>"$ERR" | { exec 0<&-; sleep 1; }; exit "${PIPESTATUS[0]}""#)
        .arg("bash")
        .arg(NP)
        .arg("--db")
        .arg(db)
        .args(args)
        .env("ERR", &err)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        std::fs::read_to_string(&err).unwrap_or_default(),
    )
}

#[test]
fn a_closed_pipe_is_a_quiet_exit_0_and_a_full_disk_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    fixture(&db);
    for args in [
        &["report"][..],
        &["report", "--json"],
        &["events"],
        &["events", "--json"],
        &["export", "--format", "csv"],
        &["check"],
        &["hosts", "list"],
    ] {
        let (code, err) = into_closed_pipe(&db, args);
        assert_eq!(
            code, 0,
            "{args:?} into a closed pipe: exit {code}, stderr {err:?}"
        );
        assert_eq!(err, "", "{args:?} into a closed pipe wrote to stderr");
    }
    if Path::new("/dev/full").exists() {
        for args in [
            &["report"][..],
            &["report", "--json"],
            &["check"],
            &["events"],
        ] {
            let full = std::fs::File::create("/dev/full").unwrap();
            let o = Command::new(NP)
                .arg("--db")
                .arg(&db)
                .args(args)
                .stdout(full)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{args:?} > /dev/full: {err}");
            assert!(err.contains("No space left"), "{args:?} > /dev/full: {err}");
            assert!(!err.contains("panicked"), "{args:?} > /dev/full: {err}");
        }
    }
}
