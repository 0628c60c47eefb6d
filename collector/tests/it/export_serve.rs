//! `serve --metrics` (the scrape endpoint: format, values, robustness) and `export --format`
//! (CSV, JSON lines, Influx line protocol through the binary), on a store filled with the
//! testing NAS samples. The metric list is checked against docs/metrics.md.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use nasprobe::export::metrics::ALL;
use nasprobe::export::serve::{MAX_CONNECTIONS, Server};
use nasprobe::model;
use nasprobe::store::{Item, Store};
use nasprobe::testing::{exit_event, nas_hello, nas_sample};

/// `n` records per host, 1 s apart, ending now; every 10th an exit event.
fn fill(db: &Path, hosts: &[&str], n: u64) {
    fill_from(db, hosts, n, nasprobe_proto::time::now_ms() - n * 1000, 10);
}

/// [`fill`] with the first record at `start + 1 s` (ms since the epoch) and every
/// `event_every`th an exit event.
pub(crate) fn fill_from(db: &Path, hosts: &[&str], n: u64, start: u64, event_every: u64) {
    let mut store = Store::open(db).unwrap();
    for (h, name) in hosts.iter().enumerate() {
        let hello = nas_hello(0x2000 + h as u64, start, 1000);
        let reg = store.register(name, "10.0.0.1:7451", &hello).unwrap();
        let items: Vec<Item> = (1..=n)
            .map(|seq| {
                let time_ms = start + seq * 1000;
                if seq % event_every == 0 {
                    Item::Event {
                        instance: reg.instance,
                        seq,
                        time_ms,
                        kind: "process_exit",
                        pid: Some(seq as u32),
                        name: "btrfs".into(),
                        body: postcard::to_allocvec(&exit_event(seq as u32)).unwrap(),
                    }
                } else {
                    Item::Sample {
                        instance: reg.instance,
                        seq,
                        time_ms,
                        body: postcard::to_allocvec(&nas_sample(seq)).unwrap(),
                    }
                }
            })
            .collect();
        store.write_batch(&items).unwrap();
    }
}

/// One HTTP/1.1 exchange: (status, body).
fn http(addr: &std::net::SocketAddr, request: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(addr: &std::net::SocketAddr, path: &str) -> (u16, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"),
    )
}

#[test]
fn scrape_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("np.db");
    fill(&db, &["nas1", "nas2"], 25);
    let server = Server::start("127.0.0.1:0", &db, None, "test").unwrap();
    let (status, body) = get(&server.addr, "/metrics");
    assert_eq!(status, 200);

    // Every family once, HELP then TYPE, its series right after.
    let mut families = Vec::new();
    let mut current = "";
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(!families.contains(&name.to_string()), "{name} twice");
            families.push(name.to_string());
            current = name;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert_eq!(name, current);
            assert!(kind == "gauge" || kind == "counter", "{line}");
        } else {
            assert!(
                line.starts_with(current),
                "{line} outside its family {current}"
            );
        }
    }
    assert!(families.len() > 40, "{families:?}");

    // Values: the newest sample of nas1 (seq 25), through the collector's rate code.
    let s = nas_sample(25);
    let h = nas_hello(0x2000, 0, 1000);
    let rx = model::nic_rate(&h, &s, &s.nics[0]).unwrap().figures.rx_bps;
    let line = format!(
        "nasprobe_network_receive_bytes_per_second{{host=\"nas1\",device=\"eth0\",collector=\"test\"}} {rx}"
    );
    assert!(body.lines().any(|l| l == line), "no line {line}");
    let hot = model::hottest_thread(&h, &s).unwrap();
    let line = format!(
        "nasprobe_thread_cpu_ratio{{host=\"nas1\",process=\"synoreplicad\",thread=\"synoreplicad\",collector=\"test\"}} {}",
        hot.core_fraction
    );
    assert!(body.lines().any(|l| l == line), "no line {line}");
    assert!(body.contains("# TYPE nasprobe_events_total counter"));
    assert!(
        body.lines().any(|l| l
            == "nasprobe_events_total{host=\"nas2\",kind=\"process_exit\",collector=\"test\"} 2")
    );
    // The verdict over the 5 minutes before the newest sample.
    assert!(
        body.contains(
            "# TYPE nasprobe_verdict_utilization_ratio gauge\nnasprobe_verdict_utilization_ratio{"
        ),
        "{body}"
    );
    // Idle disks read zero, md0 included (it is in the inventory).
    assert!(body.contains(
        "nasprobe_disk_io_time_ratio{host=\"nas1\",device=\"md0\",collector=\"test\"} 0\n"
    ));

    // HEAD, 404, 405, a bad request line, a head over the limit.
    let (status, body) = http(&server.addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!((status, body.as_str()), (200, ""));
    assert_eq!(get(&server.addr, "/nope").0, 404);
    assert_eq!(http(&server.addr, "POST /metrics HTTP/1.1\r\n\r\n").0, 405);
    assert_eq!(http(&server.addr, "garbage\r\n\r\n").0, 400);
    let big = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(40_000));
    assert_eq!(http(&server.addr, &big).0, 431);

    // Idle connections up to the cap: one more is refused at once, and service comes back.
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    // The server takes them in as it gets to them (slower on a loaded machine): wait for the
    // refusal rather than assume a time.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut refused = get(&server.addr, "/metrics").0;
    while refused != 503 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        refused = get(&server.addr, "/metrics").0;
    }
    assert_eq!(refused, 503);
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(&server.addr, "/metrics").0, 200);

    // Stale hosts: only their newest sample time.
    server.stop();
    let server = Server::start("127.0.0.1:0", &db, Some(Duration::from_millis(1)), "test").unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let (_, body) = get(&server.addr, "/metrics");
    assert!(!body.contains("nasprobe_cpu_busy_ratio"));
    assert!(
        body.contains("nasprobe_last_sample_timestamp_seconds{host=\"nas1\",collector=\"test\"}")
    );
    server.stop();
}

#[test]
fn export_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("np.db");
    fill(&db, &["nas1", "nas2"], 20);
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nasprobe"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let csv = run(&["export", "--format", "csv", "--host", "nas2"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "timestamp_ms,time,metric,host,cpu,device,process,thread,mountpoint,kind,value"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 11 && r[3] == "nas2"));
    let samples = rows
        .iter()
        .filter(|r| r[2] == "nasprobe_sample_interval_seconds")
        .count();
    assert_eq!(samples, 18);
    let events = rows.iter().filter(|r| r[2] == "nasprobe_event").count();
    assert_eq!(events, 2);

    let json = run(&["export", "--format", "json", "--since", "1h"]);
    let mut hosts = std::collections::BTreeSet::new();
    for l in json.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["metric"].as_str().unwrap().starts_with("nasprobe_"));
        assert!(v["value"].is_number() && v["timestamp_ms"].is_u64());
        hosts.insert(v["host"].as_str().unwrap().to_string());
    }
    assert_eq!(hosts.len(), 2);
    assert_eq!(json.lines().count(), csv.lines().count() * 2 - 2);

    let influx = run(&["export", "--format", "influx", "--host", "nas1"]);
    let first = influx.lines().next().unwrap();
    assert!(first.starts_with("nasprobe,host=nas1"), "{first}");
    let (_, ts) = first.rsplit_once(' ').unwrap();
    assert_eq!(ts.len(), 19, "nanoseconds: {first}");

    // An unknown host is an error that names the known ones.
    let out = Command::new(env!("CARGO_BIN_EXE_nasprobe"))
        .arg("--db")
        .arg(&db)
        .args(["export", "--host", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nas1, nas2"));
}

/// Every exported metric is documented in docs/metrics.md, and nothing else is.
#[test]
fn docs_list_every_metric() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .unwrap();
    for m in ALL {
        assert!(
            doc.contains(&format!("`{}`", m.name)),
            "{} is not in docs/metrics.md",
            m.name
        );
    }
    for word in doc.split('`') {
        if word.starts_with("nasprobe_") && !word.ends_with('_') && !word.contains(['{', ' ', '('])
        {
            assert!(
                ALL.iter().any(|m| m.name == word),
                "docs/metrics.md names {word}, which is not exported"
            );
        }
    }
}
