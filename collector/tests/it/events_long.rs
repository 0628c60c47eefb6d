//! Events over a long window, end to end: a store of seven hours (the report reads rollups)
//! with a crash loop of 5,000 exits and one OOM kill. `events --json` and `report --json` give
//! the loop as one of `event_groups` and list only its first and last few, the OOM kill listed;
//! the text names the counts; the HTML page stays small and says how many events there are.

use std::path::Path;
use std::process::Command;

use nasprobe::store::{Item, Store};
use nasprobe::testing::{nas_hello, nas_sample};
use nasprobe_proto::{
    Event, ExitSeen, ExitStatus, ProcessEnd, ProcessExit, ProcessInfo, Record, RecordBody,
};
use serde_json::Value;

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
const HOURS: u64 = 7;
const LOOP: u64 = 5_000;

fn end(pid: u32, comm: &str, code: Option<u8>, signal: Option<u8>, oom: bool) -> Event {
    Event::ProcessEnd(ProcessEnd {
        exit: ProcessExit {
            process: ProcessInfo {
                pid,
                ppid: 1,
                comm: comm.try_into().unwrap(),
                cmdline: format!("{comm} --daemon").as_str().try_into().unwrap(),
                start_ticks: 1,
            },
            lifetime_ms: 4_000,
            cpu_ticks: 20,
        },
        status: ExitStatus {
            seen: ExitSeen::Kernel,
            code,
            signal,
            core_dumped: false,
            oom_killed: oom,
            before_ms: 0,
        },
    })
}

/// The store; returns the time of the OOM kill.
fn fixture(db: &Path) -> u64 {
    let mut s = Store::open(db).unwrap();
    let t0 = nasprobe_proto::time::now_ms() - HOURS * 3_600_000;
    let reg = s
        .register("nas", "127.0.0.1:7451", &nas_hello(0x71, t0, 1000))
        .unwrap();
    let n = HOURS * 3_600;
    let every = n * 1000 / LOOP;
    // Half way, with a sample.
    let oom_at = t0 + n / 2 * 1000;
    let (mut seq, mut exits, mut items) = (1u64, 0u64, Vec::new());
    let event = |seq: u64, time_ms: u64, e: Event| {
        let body = postcard::to_allocvec(&e).unwrap();
        let r = Record {
            seq,
            time_ms,
            body: RecordBody::Event(e),
        };
        Item::from_record(reg.instance, &r, body)
    };
    for i in 0..n {
        let t = t0 + (i + 1) * 1000;
        while exits < LOOP && t0 + 500 + exits * every <= t {
            items.push(event(
                seq,
                t,
                end(1000 + exits as u32, "rsyncd", Some(1), None, false),
            ));
            seq += 1;
            exits += 1;
        }
        if t == oom_at {
            items.push(event(seq, t, end(77, "smbd", None, Some(9), true)));
            seq += 1;
        }
        items.push(Item::Sample {
            instance: reg.instance,
            seq,
            time_ms: t,
            body: postcard::to_allocvec(&nas_sample(i)).unwrap(),
        });
        seq += 1;
        if items.len() >= 2_000 {
            s.write_batch(&items).unwrap();
            items.clear();
        }
    }
    s.write_batch(&items).unwrap();
    assert_eq!(exits, LOOP);
    oom_at
}

fn np(db: &Path, args: &[&str]) -> String {
    let out = Command::new(NP)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn group<'a>(v: &'a Value, process: &str) -> &'a Value {
    v["event_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["process"] == process)
        .unwrap_or_else(|| panic!("no group of {process}: {}", v["event_groups"]))
}

#[test]
fn a_long_window_groups_its_events_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    let oom_ms = fixture(&db);

    for args in [&["events", "--json"][..], &["report", "--json"]] {
        let v: Value = serde_json::from_str(&np(&db, args)).unwrap();
        let lp = group(&v, "rsyncd");
        assert_eq!(lp["count"], LOOP, "{lp}");
        assert_eq!(lp["listed"], 6, "{lp}");
        assert_eq!(lp["kind"], "process_exit");
        assert_eq!(lp["cause"], "error_exit");
        assert_eq!(lp["exit_code"], 1);
        assert!(
            lp["first"].as_str().unwrap() < lp["last"].as_str().unwrap(),
            "{lp}"
        );
        let oom = group(&v, "smbd");
        assert_eq!(
            (oom["count"].as_u64(), oom["oom_killed"].as_bool()),
            (Some(1), Some(true))
        );
        let events = v["events"].as_array().unwrap();
        let listed: u64 = v["event_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["listed"].as_u64().unwrap())
            .sum();
        assert_eq!(events.len() as u64, listed);
        let ooms: Vec<&Value> = events.iter().filter(|e| e["oom_killed"] == true).collect();
        assert_eq!(ooms.len(), 1, "{events:?}");
        assert_eq!(ooms[0]["at"], nasprobe_analysis::time::rfc3339(oom_ms));
        assert_eq!(
            events.iter().filter(|e| e["process"] == "rsyncd").count(),
            6
        );
    }
    // The long view: over rollups.
    let r: Value = serde_json::from_str(&np(&db, &["report", "--json"])).unwrap();
    assert_eq!(r["resolution"]["step_s"], 60, "{}", r["resolution"]);
    let text = np(&db, &["events"]);
    assert!(text.contains(&format!("{} events, ", LOOP + 1)), "{text}");
    assert!(
        text.contains(&format!(
            "nas: {LOOP} × process_exit rsyncd exited with status 1"
        )),
        "{text}"
    );
    let page_path = dir.path().join("r.html");
    np(&db, &["report", "--html", page_path.to_str().unwrap()]);
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    assert!(page.contains(&format!(
        "<tr class=\"group\" data-n=\"{LOOP}\"><td>{LOOP}</td>"
    )));
    assert!(page.contains(" alike events up to "));
}
