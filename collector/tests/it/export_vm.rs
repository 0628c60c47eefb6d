//! Export to a real VictoriaMetrics (Debian package `victoria-metrics`), started by the tests on
//! a loopback port with a temporary data dir:
//!
//! - pushed values come back through `/api/v1/export` exactly as computed from the store;
//! - a second push sends nothing (the cursor);
//! - SIGKILL of the engine in the middle of a backfill, restart on the same data dir, push on:
//!   every sample timestamp is in the engine exactly once (no gap, no duplicate); the same after
//!   a SIGKILL right after the engine acknowledged (it had not written the rows yet).
//!
//! Without the `victoria-metrics` binary the tests say so and pass, unless `CI=true` or
//! `NASPROBE_REQUIRE_ENGINES=1` (tests/e2e/export_vm.sh sets it after installing the package).
//! `NASPROBE_EXPORT_BENCH=N` makes `backfill_throughput` push N samples and print the rate.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nasprobe::export::vm::{self, ExportState, Pusher, VmTarget};
use nasprobe::model;
use nasprobe::store::{Item, Store};
use nasprobe::testing::{exit_event, nas_hello, nas_sample};
use nasprobe_proto::Sample;

fn vm_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("NASPROBE_VM_BIN") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("victoria-metrics"))
            .find(|p| p.is_file())
    })
}

/// The binary, or None (and a note) when the test should be skipped.
fn need_vm(test: &str) -> Option<PathBuf> {
    match vm_binary() {
        Some(b) => Some(b),
        None if std::env::var("NASPROBE_REQUIRE_ENGINES").is_ok_and(|v| v == "1") => {
            panic!("{test}: victoria-metrics not found (apt-get install victoria-metrics)")
        }
        None => {
            nasprobe_testkit::skip::missing(test, "victoria-metrics not installed");
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One series of `/api/v1/export`: labels, timestamps, values.
type Series = (HashMap<String, String>, Vec<u64>, Vec<f64>);

struct Vm {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Vm {
    fn start(bin: &Path, dir: &Path) -> Vm {
        let mut vm = Vm {
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
            port: free_port(),
            child: None,
        };
        vm.spawn();
        vm
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("vm.log"))
            .unwrap();
        let child = Command::new(&self.bin)
            .arg(format!(
                "-storageDataPath={}",
                self.dir.join("data").display()
            ))
            .arg(format!("-httpListenAddr=127.0.0.1:{}", self.port))
            .arg("-retentionPeriod=100y")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start victoria-metrics");
        self.child = Some(child);
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if ureq::get(&format!("{}/health", self.url()))
                .call()
                .is_ok_and(|r| r.status() == 200)
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "victoria-metrics did not come up (see {}/vm.log)",
            self.dir.display()
        );
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL, as a crash.
    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().ok(); // SIGKILL on Unix
            c.wait().ok();
        }
    }

    /// Raw points of a selector: series key (labels) → timestamps (all, duplicates included).
    fn export(&self, selector: &str) -> Vec<Series> {
        ureq::get(&format!("{}/internal/force_flush", self.url()))
            .call()
            .unwrap();
        // Rows show in queries about 1 s after they were received, even after a flush.
        std::thread::sleep(vm::VISIBLE_AFTER);
        let text = ureq::get(&format!("{}/api/v1/export", self.url()))
            .query("match[]", selector)
            .query("start", "0")
            .call()
            .unwrap()
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .unwrap();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let labels = v["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                let ts = v["timestamps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_u64().unwrap())
                    .collect();
                let vals = v["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_f64().unwrap())
                    .collect();
                (labels, ts, vals)
            })
            .collect()
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Fills a store with `n` records per host (every 10th an exit event), 1 s apart, ending now.
/// Returns the sample times per host.
fn fill(db: &Path, hosts: &[&str], n: u64) -> HashMap<String, Vec<u64>> {
    let mut store = Store::open(db).unwrap();
    let start = nasprobe_proto::time::now_ms() - n * 1000 - 60_000;
    let mut times = HashMap::new();
    for (h, name) in hosts.iter().enumerate() {
        let hello = nas_hello(0x1000 + h as u64, start, 1000);
        let reg = store
            .register(name, &format!("10.0.0.{h}:7451"), &hello)
            .unwrap();
        let mut items = Vec::new();
        let mut ts = Vec::new();
        for seq in 1..=n {
            let time_ms = start + seq * 1000;
            if seq % 10 == 0 {
                let e = exit_event(seq as u32);
                items.push(Item::Event {
                    instance: reg.instance,
                    seq,
                    time_ms,
                    kind: "process_exit",
                    pid: Some(seq as u32),
                    name: "btrfs".into(),
                    body: postcard::to_allocvec(&e).unwrap(),
                });
            } else {
                items.push(Item::Sample {
                    instance: reg.instance,
                    seq,
                    time_ms,
                    body: postcard::to_allocvec(&nas_sample(seq)).unwrap(),
                });
                ts.push(time_ms);
            }
            if items.len() >= 1000 {
                store.write_batch(&items).unwrap();
                items.clear();
            }
        }
        store.write_batch(&items).unwrap();
        times.insert(name.to_string(), ts);
    }
    times
}

/// Asserts that the one series of `sel` has every time of `want` exactly once.
fn assert_exactly_once(vm: &Vm, sel: &str, want: &[u64]) {
    let series = vm.export(sel);
    assert_eq!(series.len(), 1, "{sel}: {} series", series.len());
    let mut got = series[0].1.clone();
    got.sort_unstable();
    let dupes = got.windows(2).filter(|w| w[0] == w[1]).count();
    got.dedup();
    let mut want = want.to_vec();
    want.sort_unstable();
    let missing = want
        .iter()
        .filter(|t| got.binary_search(t).is_err())
        .count();
    let extra = got
        .iter()
        .filter(|t| want.binary_search(t).is_err())
        .count();
    assert!(
        dupes == 0 && missing == 0 && extra == 0,
        "{sel}: {dupes} duplicates, {missing} missing, {extra} unexpected of {}",
        want.len()
    );
}

#[test]
fn push_and_query_back() {
    let Some(bin) = need_vm("push_and_query_back") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let vm = Vm::start(&bin, tmp.path());
    let db = tmp.path().join("np.db");
    let times = fill(&db, &["nas1", "nas2"], 300);
    let mut store = Store::open(&db).unwrap();
    let pusher = Pusher::new(VmTarget::parse(&vm.url()).unwrap(), Duration::from_secs(30));
    let (t, _) = vm::backfill(&mut store, &pusher, 100, |_| {}).unwrap();
    assert_eq!(t.samples, 2 * 270);
    assert_eq!(t.events, 2 * 30);
    assert_eq!(t.skipped, 0);
    // Nothing is sent twice: the acknowledged records are not sure yet (the engine may not
    // have written them), so they are checked against the engine, which holds them all.
    let mut st = ExportState::load(&store, &pusher.target.cursor_key).unwrap();
    let (again, _) = vm::backfill_with(&mut store, &pusher, &mut st, 100, &mut |_| {}).unwrap();
    assert_eq!(again.lines, 0);
    assert_eq!(again.skipped, t.lines);
    // Once sure (the engine ran on without restarting), they are not even looked at.
    st.set_durable_after(Duration::from_millis(500));
    assert!(vm::wait_sure(&mut store, &pusher, &mut st, Duration::from_secs(10)).unwrap());
    let (third, _) = vm::backfill(&mut store, &pusher, 100, |_| {}).unwrap();
    assert_eq!(third.samples + third.events + third.skipped, 0);

    // Values: what the store's samples give through the collector's rate code.
    let windows = store.load_window(None, None).unwrap();
    let w = windows.iter().find(|w| w.name == "nas1").unwrap();
    let mut want_rx: HashMap<u64, f64> = HashMap::new();
    let mut want_thread: HashMap<u64, f64> = HashMap::new();
    for (hello, s, sample) in w.decoded() {
        let sample: Sample = sample.expect("stored samples decode");
        let n = model::nic_rate(hello, &sample, &sample.nics[0]).unwrap();
        want_rx.insert(s.time_ms, n.figures.rx_bps);
        let hot = model::hottest_thread(hello, &sample).unwrap();
        assert_eq!(hot.process, "synoreplicad");
        want_thread.insert(s.time_ms, hot.core_fraction);
    }
    let rx = vm.export("nasprobe_network_receive_bytes_per_second{host=\"nas1\",device=\"eth0\"}");
    assert_eq!(rx.len(), 1);
    let (_, ts, vals) = &rx[0];
    assert_eq!(ts.len(), want_rx.len());
    for (t, v) in ts.iter().zip(vals) {
        let want = want_rx[t];
        assert!((v - want).abs() <= want * 1e-12, "rx at {t}: {v} vs {want}");
    }
    let th = vm.export(
        "nasprobe_thread_cpu_ratio{host=\"nas1\",process=\"synoreplicad\",thread=\"synoreplicad\"}",
    );
    assert_eq!(th.len(), 1);
    for (t, v) in th[0].1.iter().zip(&th[0].2) {
        let want = want_thread[t];
        assert!((v - want).abs() <= 1e-12, "thread at {t}: {v} vs {want}");
    }
    assert_exactly_once(
        &vm,
        "nasprobe_sample_interval_seconds{host=\"nas2\"}",
        &times["nas2"],
    );
    let ev = vm.export("nasprobe_event{host=\"nas2\",kind=\"process_exit\",process=\"btrfs\"}");
    assert_eq!(ev[0].1.len(), 30);
}

#[test]
fn kill_mid_export_no_gap_no_duplicate() {
    let Some(bin) = need_vm("kill_mid_export_no_gap_no_duplicate") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut vm = Vm::start(&bin, tmp.path());
    let db = tmp.path().join("np.db");
    let hosts = ["nas1", "nas2"];
    let n = 4000;
    let times = fill(&db, &hosts, n);
    let target = VmTarget::parse(&vm.url()).unwrap();
    let pusher = Pusher::new(target.clone(), Duration::from_secs(30));

    // 1. Backfill in small batches; after a quarter, pause long enough for the engine to write
    //    what it holds to disk; SIGKILL it in the middle of the second quarter.
    let (tx, rx) = std::sync::mpsc::channel();
    let db2 = db.clone();
    let p2 = pusher.clone();
    let push = std::thread::spawn(move || {
        let mut store = Store::open(&db2).unwrap();
        let mut paused = false;
        vm::backfill(&mut store, &p2, 50, |b| {
            let sent = b.samples + b.events;
            if !paused && sent >= 2 * n / 4 {
                paused = true;
                std::thread::sleep(Duration::from_secs(15));
            }
            tx.send(sent).ok();
        })
    });
    let mut sent = 0;
    while sent < 2 * n * 3 / 8 {
        sent = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the backfill makes progress");
    }
    vm.kill9();
    let first = push.join().unwrap();
    assert!(
        first.is_err(),
        "the backfill must fail once the engine is gone"
    );
    let mut store = Store::open(&db).unwrap();
    let cursors = store.export_cursor(&target.cursor_key).unwrap();
    let acked: u64 = cursors.values().map(|c| c.acked).sum();
    assert!(
        acked > 0 && acked < 2 * n,
        "killed mid-export: {acked} of {} acknowledged",
        2 * n
    );

    // 2. Restart on the same data dir and port; push the rest (what the engine kept is left
    //    out), then SIGKILL right away: the engine acknowledged rows it had not written yet.
    vm.spawn();
    let mut st = ExportState::load(&store, &target.cursor_key).unwrap();
    let (second, _) = vm::backfill_with(&mut store, &pusher, &mut st, 500, &mut |_| {}).unwrap();
    assert!(second.lines > 0);
    assert!(
        second.skipped > 0,
        "the engine kept what it wrote before the kill"
    );
    vm.kill9();

    // 3. Restart again and push: what was lost goes again, what survived is left out.
    vm.spawn();
    let mut st = ExportState::load(&store, &target.cursor_key).unwrap();
    let (third, _) = vm::backfill_with(&mut store, &pusher, &mut st, 500, &mut |_| {}).unwrap();
    eprintln!(
        "kills: the first run had {acked} records acknowledged; the second sent {} points and \
         left out {} the engine held; the third sent {} and left out {}",
        second.lines, second.skipped, third.lines, third.skipped
    );
    for h in hosts {
        let sel = format!("nasprobe_sample_interval_seconds{{host=\"{h}\"}}");
        assert_exactly_once(&vm, &sel, &times[h]);
        let sel = format!("nasprobe_disk_io_time_ratio{{host=\"{h}\",device=\"sdc\"}}");
        assert_exactly_once(&vm, &sel, &times[h]);
    }
    let ev = vm.export("nasprobe_event{host=\"nas1\"}");
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].1.len() as u64, n / 10, "events exactly once");
    let c = store.export_cursor(&target.cursor_key).unwrap();
    assert!(c.values().all(|c| c.acked == n), "{c:?}");
}

/// CPU time of the calling thread so far (user + system, seconds), from
/// `/proc/thread-self/stat` (fields 14 and 15, in clock ticks of 1/100 s, Linux's USER_HZ).
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // rest starts at field 3 (state): utime is field 14, stime field 15.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// Pushes everything stored to `target` (a fresh engine) and prints the collector's cost per
/// agent-sample: CPU of this thread (store read, decode, encoding, compression, HTTP) and bytes
/// on the wire; returns (stats, wall seconds, CPU seconds).
fn push_cost(store: &mut Store, target: VmTarget, what: &str) -> (vm::BatchStats, f64, f64) {
    let pusher = Pusher::new(target, Duration::from_secs(60));
    let cpu0 = thread_cpu_s();
    let (s, secs) = vm::backfill(store, &pusher, vm::BATCH_RECORDS, |_| {}).unwrap();
    let cpu = thread_cpu_s() - cpu0;
    println!(
        "{what}: {} samples + {} events = {} points, {:.1} MB on the wire in {secs:.2}s \
         ({:.0} samples/s); collector CPU {cpu:.2}s = {:.1} us per agent-sample, {:.0} bytes \
         per agent-sample",
        s.samples,
        s.events,
        s.lines,
        s.bytes as f64 / 1e6,
        s.samples as f64 / secs,
        cpu * 1e6 / s.samples as f64,
        s.bytes as f64 / s.samples as f64,
    );
    (s, secs, cpu)
}

/// `NASPROBE_EXPORT_BENCH=50000 cargo test --release -p nasprobe --test it
/// export_vm::backfill_throughput -- --nocapture`: samples per second pushed to VictoriaMetrics
/// by its import API and, side by side in the same run, by Prometheus remote write (to a second,
/// fresh VictoriaMetrics' `/api/v1/write`), with the collector's CPU and bytes per agent-sample.
#[test]
fn backfill_throughput() {
    let Ok(n) = std::env::var("NASPROBE_EXPORT_BENCH").map(|v| v.parse::<u64>().unwrap()) else {
        return;
    };
    let Some(bin) = need_vm("backfill_throughput") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let vm = Vm::start(&bin, tmp.path());
    let db = tmp.path().join("np.db");
    let hosts: Vec<String> = (1..=4).map(|i| format!("nas{i}")).collect();
    let names: Vec<&str> = hosts.iter().map(|s| s.as_str()).collect();
    // n samples in all (plus one event per 9 samples).
    let per_host = n * 10 / 9 / names.len() as u64;
    let t = Instant::now();
    let times = fill(&db, &names, per_host);
    eprintln!(
        "filled {} hosts x {per_host} records in {:.1}s",
        names.len(),
        t.elapsed().as_secs_f64()
    );
    let mut store = Store::open(&db).unwrap();
    // The collector's side alone: read, decode and write the text, no HTTP.
    let t = Instant::now();
    let (mut lines, mut samples) = (nasprobe::export::format::PromLines::default(), 0u64);
    let mut after = HashMap::new();
    loop {
        let recs = store.records_after(&after, vm::BATCH_RECORDS).unwrap();
        if recs.is_empty() {
            break;
        }
        let inst = store.export_instances().unwrap();
        for r in &recs {
            after.insert(r.instance, r.seq);
            if r.is_event {
                continue;
            }
            let i = inst.iter().find(|i| i.row == r.instance).unwrap();
            let smp: Sample = postcard::from_bytes(&r.body).unwrap();
            nasprobe::export::metrics::emit_sample(&mut lines, &i.host, &i.hello, &smp, r.time_ms);
            samples += 1;
        }
        lines.buf.clear();
    }
    let render = t.elapsed().as_secs_f64();
    println!(
        "render only (store read, decode, text): {samples} samples, {} points in {render:.2}s: \
         {:.0} samples/s",
        lines.lines,
        samples as f64 / render
    );
    let (s, secs, _) = push_cost(
        &mut store,
        VmTarget::parse(&vm.url()).unwrap(),
        "VictoriaMetrics import",
    );
    println!(
        "export throughput: {} samples + {} events = {} points ({:.0} MB) in {secs:.2}s: \
         {:.0} samples/s, {:.0} points/s",
        s.samples,
        s.events,
        s.lines,
        s.bytes as f64 / 1e6,
        s.samples as f64 / secs,
        s.lines as f64 / secs
    );
    let rw_dir = tmp.path().join("rw");
    std::fs::create_dir_all(&rw_dir).unwrap();
    let rw_vm = Vm::start(&bin, &rw_dir);
    let (rs, _, _) = push_cost(
        &mut store,
        VmTarget::remote_write(&format!("{}/api/v1/write", rw_vm.url())).unwrap(),
        "remote write",
    );
    assert_eq!(
        (rs.samples, rs.rejected),
        (s.samples, 0),
        "remote write sent every sample, none refused"
    );
    assert_exactly_once(
        &vm,
        "nasprobe_sample_interval_seconds{host=\"nas1\"}",
        &times["nas1"],
    );
}
