//! A whole sample cycle over a generated tree: write the tree, prime, rewrite the files with
//! known increments (by rename, as a changing tree does), sample, assert the exact deltas,
//! events and flags — including a 32-bit wrap, resets, pid reuse and a short-lived process.

use std::path::{Path, PathBuf};

use nasprobe_agent::config::{Config, ScanPolicy};
use nasprobe_agent::sampler::Sampler;
use nasprobe_proto::{Event, Sample, flags};

struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("nasprobe-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::create_dir_all(root.join("sys")).unwrap();
        Tree { root }
    }
    /// Replaces a file atomically (write + rename), as generated trees do.
    fn put(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let tmp = p.with_extension("tmp~");
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    }
    fn rm(&self, rel: &str) {
        let _ = std::fs::remove_dir_all(self.root.join(rel));
    }
    fn proc(&self) -> PathBuf {
        self.root.join("proc")
    }
    fn sys(&self) -> PathBuf {
        self.root.join("sys")
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn pidstat(
    pid: u32,
    comm: &str,
    state: char,
    threads: u32,
    utime: u64,
    stime: u64,
    start: u64,
) -> String {
    format!(
        "{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194304 100 0 0 0 {utime} {stime} 0 0 20 0 {threads} 0 {start} \
         1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
    )
}

const HZ: u64 = 100;

/// Writes the whole tree for step `k` (0 = prime, 1, 2).
#[allow(clippy::too_many_lines)] // a test scenario, told start to end
fn write_step(t: &Tree, k: u64) {
    // --- /proc/stat: cpu0 +50 user +20 sys +25 idle +5 iowait per step; at step 2 cpu0's
    // iowait steps back (a documented kernel quirk: delta 0, no reset) and cpu1's idle resets.
    let (c0_iowait, c1_idle) = if k == 2 {
        (1000 + 5 - 3, 10)
    } else {
        (1000 + 5 * k, 900_000 + 25 * k)
    };
    t.put(
        "proc/stat",
        &format!(
            "cpu  {} 0 {} {} {} 0 0 0 0 0\ncpu0 {} 0 {} {} {} 0 0 0 0 0\ncpu1 {} 0 {} {} 7 0 0 0 0 0\n\
             intr 1 2 3\nctxt {}\nbtime 1\nprocesses {}\nprocs_running 3\nprocs_blocked 1\n",
            20_000 + 100 * k,
            8_000 + 40 * k,
            1_800_000 + 50 * k,
            1000 + 5 * k,
            10_000 + 50 * k,
            4_000 + 20 * k,
            900_000 + 25 * k,
            c0_iowait,
            10_000 + 50 * k,
            4_000 + 20 * k,
            c1_idle,
            123_456 + 1000 * k,
            4_000 + 17 * k,
        ),
    );
    // --- diskstats (14 fields, 3.10 style). sda: sectors written wrap at 2^32 between step 0
    // and 1 (+1000); sdb: counters reset at step 1; sdc idle; sda1 busy but folded.
    let sda_wsect = [4_294_967_000u64, 704, 1704][k as usize];
    let sdb = match k {
        0 => "5000000000 0 5000000000 5 900 0 90000 5 0 100 200",
        1 => "10 0 10 1 10 0 10 1 0 1 2",
        _ => "20 0 30 2 20 0 40 2 0 3 6",
    };
    t.put(
        "proc/diskstats",
        &format!(
            "   1       0 ram0 0 0 0 0 0 0 0 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n\
             8       0 sda {} 3 {} {} {} 4 {} {} 2 {} {}\n\
             8       1 sda1 {} 0 {} 0 0 0 0 0 0 0 0\n\
             8      16 sdb {sdb}\n\
             8      32 sdc 7 0 56 1 0 0 0 0 0 1 1\n",
            100 + 10 * k,
            8_000 + 160 * k,
            50 + 7 * k,
            200 + 20 * k,
            sda_wsect,
            300 + 30 * k,
            400 + 900 * k,
            500 + 950 * k,
            100 + 10 * k,
            8_000 + 160 * k,
        ),
    );
    // --- net/dev: eth0 rx bytes wrap (+1,000,000 per step), eth1 resets at step 2.
    let eth0_rx = (4_294_000_000u64 + 1_000_000 * k) % (1 << 32);
    let eth1_rx = if k == 2 { 5 } else { 9_000_000_000 + 1_000 * k };
    t.put(
        "proc/net/dev",
        &format!(
            "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n\
             \x20   lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n\
             \x20 eth0:{eth0_rx} {} 0 {} 0 0 0 0 {} {} 0 0 0 0 0 0\n\
             \x20 eth1: {eth1_rx} 10 0 0 0 0 0 0 10 10 0 0 0 0 0 0\n",
            1_000 + 700 * k,
            k,
            2_000_000 + 50_000 * k,
            3_000 + 400 * k,
        ),
    );
    for (nic, speed, oper) in [
        ("eth0", "1000", if k == 2 { "down" } else { "up" }),
        ("eth1", "100", "up"),
    ] {
        t.put(&format!("sys/class/net/{nic}/speed"), speed);
        t.put(&format!("sys/class/net/{nic}/duplex"), "full\n");
        t.put(&format!("sys/class/net/{nic}/mtu"), "1500\n");
        t.put(
            &format!("sys/class/net/{nic}/operstate"),
            &format!("{oper}\n"),
        );
        t.put(
            &format!("sys/class/net/{nic}/carrier"),
            if oper == "up" { "1\n" } else { "0\n" },
        );
        t.put(
            &format!("sys/class/net/{nic}/address"),
            "00:11:22:33:44:55\n",
        );
    }
    for d in ["sda", "sdb", "sdc"] {
        t.put(&format!("sys/block/{d}/size"), "1000\n");
        t.put(&format!("sys/block/{d}/queue/rotational"), "1\n");
    }
    t.put(
        "proc/meminfo",
        &format!("MemTotal: 2000000 kB\nMemFree: {} kB\nMemAvailable: 1500000 kB\nBuffers: 1 kB\nCached: 2 kB\nDirty: 3 kB\nWriteback: 4 kB\nSwapTotal: 10 kB\nSwapFree: 9 kB\n", 100_000 + k),
    );
    t.put(
        "proc/vmstat",
        &format!(
            "pswpin {}\npswpout {}\npgmajfault {}\nallocstall_normal {}\nallocstall_movable {}\npgscan_direct {}\npgscan_direct_throttle {}\n",
            10 + 5 * k,
            20 + 6 * k,
            30 + 3 * k,
            1 + k,
            1 + k,
            1_000 + 100 * k,
            99 * k
        ),
    );
    t.put(
        "proc/net/snmp",
        &format!(
            "Ip: Forwarding\nIp: 1\nTcp: RtoAlgorithm MaxConn RetransSegs OutRsts InErrs EstabResets AttemptFails\nTcp: 1 -1 {} {} 0 {} 0\n",
            100 + 4 * k,
            50 + 2 * k,
            7 + k
        ),
    );
    t.put(
        "proc/net/netstat",
        &format!(
            "TcpExt: ListenDrops TCPTimeouts TCPAbortOnTimeout\nTcpExt: 9 {} {}\n",
            20 + k,
            3 + k
        ),
    );
    // uptime: 1000 s at step 0, one second per step.
    t.put("proc/uptime", &format!("{}.00 0.00\n", 1000 + k));

    // --- processes
    // 100: two threads, +10 utime +5 stime per step; thread 101 "worker" does +12 of the 15.
    t.put(
        "proc/100/stat",
        &pidstat(100, "a) b (c", 'R', 2, 1_000 + 10 * k, 500 + 5 * k, 50),
    );
    t.put(
        "proc/100/task/100/stat",
        &pidstat(100, "a) b (c", 'S', 2, 400 + 2 * k, 100 + k, 50),
    );
    t.put(
        "proc/100/task/101/stat",
        &pidstat(101, "worker", 'R', 2, 600 + 8 * k, 400 + 4 * k, 51),
    );
    t.put("proc/100/schedstat", &format!("123 {} 5\n", 1_000_000 * k));
    t.put("proc/100/cmdline", "rsync\0--password\0hunter2\0x\0");
    // 200: "(sd-pam)", single-threaded, +2 per step.
    t.put(
        "proc/200/stat",
        &pidstat(200, "(sd-pam)", 'S', 1, 5 + 2 * k, 0, 60),
    );
    t.put("proc/200/cmdline", "(sd-pam)\0");
    // 300: long-lived, idle, exits before step 2.
    if k < 2 {
        t.put("proc/300/stat", &pidstat(300, "victim", 'S', 1, 1, 1, 70));
        t.put("proc/300/cmdline", "victim\0--flag\0");
    } else {
        t.rm("proc/300");
    }
    // 400: starts at 1000.5 s (between step 0 and 1) and burns 30 ticks, then idles.
    if k >= 1 {
        t.put(
            "proc/400/stat",
            &pidstat(400, "burst", 'R', 1, 30, 0, 100_050),
        );
        t.put("proc/400/cmdline", "burst\0token=abc\0");
    }
    // 500: pid reused at step 2 by another process (another start time).
    if k < 2 {
        t.put("proc/500/stat", &pidstat(500, "oldname", 'S', 1, 3, 0, 80));
        t.put("proc/500/cmdline", "oldname\0");
    } else {
        t.put(
            "proc/500/stat",
            &pidstat(500, "newname", 'R', 1, 7, 0, 100_150),
        );
        t.put("proc/500/cmdline", "newname\0");
    }
    // 600: lives from 1000.8 s to before step 2, no CPU: counted short-lived, no event.
    if k == 1 {
        t.put(
            "proc/600/stat",
            &pidstat(600, "blip", 'S', 1, 0, 0, 100_080),
        );
    } else {
        t.rm("proc/600");
    }
    // damaged pid directories are skipped without stopping anything.
    t.put("proc/700/stat", "700 (trunc) S 1 70");
    t.put("proc/701/stat", "\u{1}garbage\n");
}

fn cfg(t: &Tree) -> Config {
    Config {
        proc_root: t.proc(),
        sys_root: t.sys(),
        scan: ScanPolicy::All,
        top: 8,
        event_min_lifetime_ms: 5000,
        ..Config::default()
    }
}

fn take(s: &mut Sampler, out: &mut Sample) -> (bool, Vec<Event>) {
    let mut ev = Vec::new();
    let ok = s.sample(out, &mut |e| ev.push(e));
    (ok, ev)
}

fn hz_is_100() -> bool {
    // SAFETY: sysconf has no preconditions. Compared in c_long, 32 bits wide on armv7.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) == HZ as libc::c_long
}

#[test]
#[allow(clippy::too_many_lines)] // a test scenario, told start to end
fn full_cycle_exact_deltas() {
    assert!(hz_is_100(), "the tree's start times assume USER_HZ 100");
    let t = Tree::new("cycle");
    write_step(&t, 0);
    let mut s = Sampler::new(&cfg(&t));
    let mut out = nasprobe_proto::Sample::default();
    let (ok, ev) = take(&mut s, &mut out);
    assert!(!ok, "the first call only primes");
    assert!(ev.is_empty(), "priming emits nothing: {ev:?}");

    let mut hello = nasprobe_proto::Hello::default();
    s.fill_hello(&mut hello);
    assert_eq!(hello.cpu_count, 2);
    let disk_names: Vec<&str> = hello.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        disk_names,
        ["sda", "sdb", "sdc"],
        "ram/unused loop skipped, sda1 folded"
    );
    let nic_names: Vec<&str> = hello.nics.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(nic_names, ["eth0", "eth1"]);

    // ---------------- step 1
    write_step(&t, 1);
    let (ok, ev) = take(&mut s, &mut out);
    assert!(ok);
    assert!(out.interval_us > 0);
    // CPU
    let c0 = out.cpus[0];
    assert_eq!(
        (c0.flags, c0.user, c0.system, c0.idle, c0.iowait),
        (0, 50, 20, 25, 5)
    );
    assert_eq!(
        (out.cpu_total.user, out.cpu_total.system, out.cpu_total.idle),
        (100, 40, 50)
    );
    assert_eq!(out.context_switches, 1000);
    assert_eq!(out.forks, 17);
    assert_eq!((out.procs_running, out.procs_blocked), (3, 1));
    // disks: sda wrapped (+1000 sectors), sdb reset, sdc idle (left out)
    assert_eq!(out.disks.len(), 2, "{:?}", out.disks);
    let sda = out.disks.iter().find(|d| d.disk == 0).unwrap();
    assert_eq!(sda.flags, 0);
    assert_eq!((sda.reads, sda.sectors_read, sda.read_ms), (10, 160, 7));
    assert_eq!(
        (sda.writes, sda.sectors_written, sda.write_ms),
        (20, 1000, 30)
    );
    assert_eq!((sda.in_flight, sda.io_ms, sda.weighted_ms), (2, 900, 950));
    let sdb = out.disks.iter().find(|d| d.disk == 1).unwrap();
    assert_eq!(sdb.flags, flags::RESET);
    assert_eq!(
        (sdb.reads, sdb.sectors_read, sdb.io_ms),
        (0, 0, 0),
        "a reset is never a spike"
    );
    // NICs: eth0 rx wrapped at 2^32
    let eth0 = out.nics.iter().find(|n| n.nic == 0).unwrap();
    assert_eq!(
        (
            eth0.rx_bytes,
            eth0.rx_packets,
            eth0.rx_errors,
            eth0.rx_dropped
        ),
        (1_000_000, 700, 0, 1)
    );
    assert_eq!((eth0.tx_bytes, eth0.tx_packets), (50_000, 400));
    assert_eq!(eth0.flags, flags::LINK_UP | flags::FULL_DUPLEX);
    assert_eq!(eth0.speed_mbit, 1000);
    let eth1 = out.nics.iter().find(|n| n.nic == 1).unwrap();
    assert_eq!(eth1.rx_bytes, 1000);
    // memory, vm, tcp
    let m = out.memory.unwrap();
    assert_eq!(
        (m.free_kib, m.available_kib, m.available_estimated),
        (100_001, 1_500_000, false)
    );
    let vm = out.vm.unwrap();
    assert_eq!(
        (vm.swap_in_pages, vm.swap_out_pages, vm.major_faults),
        (5, 6, 3)
    );
    assert_eq!(
        (vm.alloc_stalls, vm.direct_scanned),
        (Some(2), Some(100)),
        "throttle is not a scan"
    );
    let tcp = out.tcp.unwrap();
    assert_eq!(
        (tcp.retrans_segs, tcp.out_rsts, tcp.estab_resets),
        (4, 2, 1)
    );
    assert_eq!(
        (tcp.timeouts, tcp.timeout_aborts, tcp.listen_drops),
        (Some(1), Some(1), Some(0))
    );
    // processes: 400 (30 ticks, new since the last scan), 100 (15), 200 (2)
    let top: Vec<(u32, &str, u32, u32)> = out
        .top
        .iter()
        .map(|p| (p.pid, p.comm.as_str(), p.utime, p.stime))
        .collect();
    assert_eq!(
        top,
        [
            (400, "burst", 30, 0),
            (100, "a) b (c", 10, 5),
            (200, "(sd-pam)", 2, 0)
        ]
    );
    let p100 = &out.top[1];
    assert_eq!(p100.threads, 2);
    assert_eq!(p100.state, b'R');
    assert_eq!(p100.cmdline.as_deref(), Some("rsync --password *** x"));
    assert_eq!(p100.hottest_thread, None, "no previous thread reads yet");
    assert_eq!(p100.run_delay_us, None, "first schedstat read");
    assert_eq!(out.top[0].cmdline.as_deref(), Some("burst token=***"));
    let p200 = &out.top[2];
    assert_eq!(
        p200.hottest_thread.as_ref().map(|t| (t.tid, t.ticks)),
        Some((200, 2))
    );
    // events: only the start of 400 (in the top); 600 is young and idle
    assert_eq!(ev.len(), 1, "{ev:?}");
    match &ev[0] {
        Event::ProcessStart(p) => {
            assert_eq!(
                (p.pid, p.comm.as_str(), p.start_ticks),
                (400, "burst", 100_050)
            );
            assert_eq!(p.cmdline.as_str(), "burst token=***");
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(out.short_lived, 0);

    // ---------------- step 2
    write_step(&t, 2);
    let (ok, ev) = take(&mut s, &mut out);
    assert!(ok);
    assert_eq!(out.cpus[0].flags, 0);
    assert_eq!(
        (out.cpus[0].user, out.cpus[0].iowait),
        (50, 0),
        "iowait stepping back is not a reset"
    );
    assert_eq!(out.cpus[1].flags, flags::RESET);
    assert_eq!((out.cpus[1].user, out.cpus[1].idle), (0, 0));
    let sda = out.disks.iter().find(|d| d.disk == 0).unwrap();
    assert_eq!(sda.sectors_written, 1000);
    let sdb = out.disks.iter().find(|d| d.disk == 1).unwrap();
    assert_eq!(sdb.flags, 0, "counting again after the reset");
    assert_eq!(
        (
            sdb.reads,
            sdb.sectors_read,
            sdb.writes,
            sdb.sectors_written,
            sdb.io_ms
        ),
        (10, 20, 10, 30, 2)
    );
    let eth0 = out.nics.iter().find(|n| n.nic == 0).unwrap();
    assert_eq!(eth0.rx_bytes, 1_000_000);
    assert_eq!(eth0.flags & flags::LINK_UP, 0);
    assert_eq!(eth0.speed_mbit, 0, "no speed while down");
    let eth1 = out.nics.iter().find(|n| n.nic == 1).unwrap();
    assert_eq!(
        (eth1.flags & flags::RESET, eth1.rx_bytes),
        (flags::RESET, 0)
    );
    let top: Vec<(u32, u32)> = out.top.iter().map(|p| (p.pid, p.utime + p.stime)).collect();
    assert_eq!(top, [(100, 15), (500, 7), (200, 2)]);
    let p100 = &out.top[0];
    assert_eq!(p100.cmdline, None, "command line only the first time");
    let hot = p100.hottest_thread.as_ref().unwrap();
    assert_eq!(
        (hot.tid, hot.comm.as_deref(), hot.ticks),
        (101, Some("worker"), 12)
    );
    assert_eq!(p100.run_delay_us, Some(1000));
    assert_eq!(out.top[1].comm.as_str(), "newname");
    assert_eq!(out.short_lived, 1, "600 lived 1.2 s, idle");
    let kinds: Vec<String> = ev
        .iter()
        .map(|e| match e {
            Event::LinkChange(l) => format!("link {} up={}", l.nic, l.up),
            Event::ProcessEnd(e) => format!(
                "exit {} {} {} {}",
                e.exit.process.pid,
                e.exit.process.comm,
                e.exit.process.cmdline,
                e.status.seen.name()
            ),
            Event::ProcessStart(p) => format!("start {} {}", p.pid, p.comm),
            e => format!("{e:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "link eth0 up=false",
            "exit 300 victim victim --flag scan",
            "exit 500 oldname oldname scan",
            "start 500 newname"
        ]
    );
    let Event::ProcessEnd(e) = &ev[1] else {
        panic!("{:?}", ev[1]);
    };
    // started at tick 70 = 0.7 s, gone at uptime 1002 s
    assert_eq!(e.exit.lifetime_ms, 1_001_300);
    assert_eq!(e.exit.cpu_ticks, 2);
    // A generated tree: no connector, so a scan found it without status.
    assert_eq!((e.status.code, e.status.signal), (None, None));
}

#[test]
fn partitions_flag_reports_them() {
    let t = Tree::new("parts");
    write_step(&t, 0);
    let c = Config {
        partitions: true,
        ..cfg(&t)
    };
    let s = Sampler::new(&c);
    let mut hello = nasprobe_proto::Hello::default();
    s.fill_hello(&mut hello);
    let names: Vec<&str> = hello.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["sda", "sda1", "sdb", "sdc"]);
}

#[test]
fn link_speed_override_and_missing_roots() {
    let t = Tree::new("override");
    write_step(&t, 0);
    let c = Config {
        link_speeds: vec![("eth1".into(), 2500)],
        ..cfg(&t)
    };
    let mut s = Sampler::new(&c);
    let mut out = nasprobe_proto::Sample::default();
    take(&mut s, &mut out);
    write_step(&t, 1);
    take(&mut s, &mut out);
    let eth1 = out.nics.iter().find(|n| n.nic == 1).unwrap();
    assert_eq!(eth1.speed_mbit, 2500);
    let mut hello = nasprobe_proto::Hello::default();
    s.fill_hello(&mut hello);
    assert_eq!(hello.nics[1].speed_override_mbit, Some(2500));

    // Roots that do not exist: nothing panics, everything is empty/None.
    let nowhere = Path::new("/nonexistent/nasprobe");
    let c = Config {
        proc_root: nowhere.join("proc"),
        sys_root: nowhere.join("sys"),
        ..Config::default()
    };
    let mut s = Sampler::new(&c);
    let mut out = nasprobe_proto::Sample::default();
    assert!(!take(&mut s, &mut out).0);
    assert!(take(&mut s, &mut out).0);
    assert!(out.memory.is_none() && out.cpus.is_empty() && out.top.is_empty());
}

#[test]
fn scan_every_n_reads_only_busy_processes_in_between() {
    let t = Tree::new("every");
    write_step(&t, 0);
    let c = Config {
        scan: ScanPolicy::Every(3),
        ..cfg(&t)
    };
    let mut s = Sampler::new(&c);
    let mut out = nasprobe_proto::Sample::default();
    take(&mut s, &mut out); // prime (full)
    write_step(&t, 1);
    take(&mut s, &mut out); // full (right after priming)
    assert_eq!(out.top.len(), 3);
    // A process that was idle wakes up: not seen until the next full scan.
    t.put("proc/300/stat", &pidstat(300, "victim", 'R', 1, 51, 1, 70));
    take(&mut s, &mut out); // partial: only 400, 100, 200 (busy last time) are read
    assert!(
        !out.top.iter().any(|p| p.pid == 300),
        "idle processes are not re-read between full scans"
    );
    take(&mut s, &mut out); // partial again
    assert!(!out.top.iter().any(|p| p.pid == 300));
    take(&mut s, &mut out); // full scan, 3 samples after the last one: 50 ticks over 3 intervals
    let p300 = out
        .top
        .iter()
        .find(|p| p.pid == 300)
        .expect("seen at the full scan");
    assert_eq!(p300.utime + p300.stime, 17);
}

/// With the process connector (simulated here: its messages handed to the sampler), a new pid
/// is read at the next sample instead of the next full scan, its exit carries the status, a
/// zombie the kernel reported is not taken back into the table, and thread exits are ignored.
#[test]
fn connector_messages_give_new_pids_and_exit_status_between_full_scans() {
    use nasprobe_agent::parse::cn_proc::ProcEvent;
    use nasprobe_proto::ExitSeen;
    let t = Tree::new("connector");
    write_step(&t, 0);
    let c = Config {
        scan: ScanPolicy::Every(50),
        event_min_lifetime_ms: 0,
        ..cfg(&t)
    };
    let mut s = Sampler::new(&c);
    s.set_kernel_exits(true);
    let mut out = nasprobe_proto::Sample::default();
    take(&mut s, &mut out); // prime (full)
    write_step(&t, 1);
    take(&mut s, &mut out); // full (right after priming)
    take(&mut s, &mut out); // partial from here on
    // A new process: announced by exec, read at the next (partial) sample.
    t.put(
        "proc/800/stat",
        &pidstat(800, "np15new", 'S', 1, 0, 0, 100_000),
    );
    t.put("proc/800/cmdline", "np15new\0--x\0");
    s.proc_event(ProcEvent::Exec {
        pid: 800,
        tgid: 800,
    });
    let (_, ev) = take(&mut s, &mut out);
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::ProcessStart(p) if p.pid == 800)),
        "{ev:?}"
    );
    // A thread of it ends: nothing. Then it is killed: a zombie until reaped, reported at once.
    s.proc_event(ProcEvent::Exit {
        pid: 801,
        tgid: 800,
        exit_code: 0,
        timestamp_ns: 1,
    });
    let (_, ev) = take(&mut s, &mut out);
    assert!(!ev.iter().any(|e| e.as_exit().is_some()), "{ev:?}");
    t.put(
        "proc/800/stat",
        &pidstat(800, "np15new", 'Z', 1, 0, 0, 100_000),
    );
    s.proc_event(ProcEvent::Exit {
        pid: 800,
        tgid: 800,
        exit_code: 9,
        timestamp_ns: 1,
    });
    let (_, ev) = take(&mut s, &mut out);
    let ends: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            Event::ProcessEnd(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 1, "{ev:?}");
    assert_eq!(ends[0].exit.process.pid, 800);
    assert_eq!(ends[0].exit.process.cmdline.as_str(), "np15new --x");
    let st = ends[0].status;
    assert_eq!(
        (st.seen, st.code, st.signal),
        (ExitSeen::Kernel, None, Some(9))
    );
    // The zombie is still listed (its parent has not reaped it): the full scans to come must
    // not take it back, or it would end a second time once reaped.
    for k in 0..60 {
        if k == 55 {
            t.rm("proc/800");
        }
        let (_, ev) = take(&mut s, &mut out);
        assert!(
            !ev.iter()
                .any(|e| e.as_exit().is_some_and(|(x, _)| x.process.pid == 800)),
            "sample {k}: {ev:?}"
        );
    }
}

/// One step of the adaptive-scan tree: /proc/stat's busy ticks (user) are the sum of the
/// processes' plus `unseen` (CPU of nobody listed; all three cumulative), uptime advances one
/// second per step.
fn adaptive_step(t: &Tree, k: u64, procs: &[(u32, &str, u64)], unseen: u64) {
    let busy: u64 = procs.iter().map(|p| p.2).sum::<u64>() + unseen;
    t.put(
        "proc/stat",
        &format!(
            "cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 {busy} 0 0 {idle} 0 0 0 0 0 0\n\
             ctxt 1\nbtime 1\nprocesses 10\nprocs_running 1\nprocs_blocked 0\n",
            idle = 100 * k,
        ),
    );
    t.put("proc/uptime", &format!("{}.00 1.00\n", 1000 + k));
    for &(pid, comm, ticks) in procs {
        t.put(
            &format!("proc/{pid}/stat"),
            // The newcomer started half a second before the step it appears in.
            &pidstat(
                pid,
                comm,
                'S',
                1,
                ticks,
                0,
                if pid == 400 { 100_750 } else { 100 },
            ),
        );
    }
}

/// `--scan adaptive` lists /proc only when the host's busy CPU is not accounted for by the
/// processes it reads: a process that wakes up above 5% of a core, or one that started without
/// the connector announcing it, is found in the same sample and shows its exact CPU at the
/// next one (at most two intervals late); one below the bound waits for the timed scan.
#[test]
fn adaptive_scan_finds_unaccounted_cpu_within_two_samples() {
    assert!(hz_is_100(), "the tree's ticks assume USER_HZ 100");
    let t = Tree::new("adaptive");
    let c = Config {
        scan: ScanPolicy::Adaptive(120),
        ..cfg(&t)
    };
    // Cumulative ticks: "busy" uses 20 ticks a second all along; "sleeper" and "dozer" idle.
    let mut busy = 1000;
    let (mut sleeper, mut dozer, mut newcomer) = (500, 400, 0);
    let mut s = Sampler::new(&c);
    s.set_kernel_exits(true); // the connector, as far as the sampler knows
    let mut out = nasprobe_proto::Sample::default();
    let mut k = 0;
    let mut step = |s: &mut Sampler, procs: &[(u32, &str, u64)], unseen: u64| {
        adaptive_step(&t, k, procs, unseen);
        k += 1;
        let mut out2 = nasprobe_proto::Sample::default();
        take(s, &mut out2);
        out2
    };
    let base = |busy, sleeper, dozer| {
        vec![
            (100, "busy", busy),
            (200, "sleeper", sleeper),
            (300, "dozer", dozer),
        ]
    };
    step(&mut s, &base(busy, sleeper, dozer), 0); // prime
    busy += 20;
    step(&mut s, &base(busy, sleeper, dozer), 0); // full, right after priming
    let after_start = s.scan_counts();
    for _ in 0..3 {
        busy += 20;
        out = step(&mut s, &base(busy, sleeper, dozer), 0);
    }
    assert_eq!(
        s.scan_counts(),
        after_start,
        "all CPU accounted for: no listing"
    );
    assert!(out.top.iter().any(|p| p.pid == 100 && p.utime == 20));

    // The dozer wakes up at 3% of a core: under the bound, nobody lists /proc for it.
    busy += 20;
    dozer += 3;
    step(&mut s, &base(busy, sleeper, dozer), 0);
    assert_eq!(
        s.scan_counts(),
        after_start,
        "3% of a core is under the bound"
    );

    // The sleeper wakes up at 30% of a core: listed in the same sample...
    busy += 20;
    sleeper += 30;
    out = step(&mut s, &base(busy, sleeper, dozer), 0);
    assert_eq!(s.scan_counts(), (after_start.0 + 1, after_start.1 + 1));
    let _ = out;
    // ...and its exact CPU shows at the next sample, without another listing.
    busy += 20;
    sleeper += 30;
    out = step(&mut s, &base(busy, sleeper, dozer), 0);
    assert_eq!(s.scan_counts(), (after_start.0 + 1, after_start.1 + 1));
    let p = out
        .top
        .iter()
        .find(|p| p.pid == 200)
        .expect("the sleeper is in the top");
    assert_eq!(p.utime, 30);

    // A process the connector did not announce starts at 10% of a core: the unaccounted CPU
    // (its ticks are in /proc/stat) lists /proc, and it is in the top at the next sample.
    let with_new = |busy, sleeper, dozer, newcomer| {
        let mut v = base(busy, sleeper, dozer);
        v.push((400, "newcomer", newcomer));
        v
    };
    busy += 20;
    sleeper += 30;
    newcomer += 10;
    step(&mut s, &with_new(busy, sleeper, dozer, newcomer), 0);
    assert_eq!(s.scan_counts().1, after_start.1 + 2);
    busy += 20;
    sleeper += 30;
    newcomer += 10;
    out = step(&mut s, &with_new(busy, sleeper, dozer, newcomer), 0);
    let p = out
        .top
        .iter()
        .find(|p| p.pid == 400)
        .expect("the newcomer is in the top");
    assert_eq!(p.utime, 10);
    assert_eq!(
        s.scan_counts().1,
        after_start.1 + 2,
        "no listing once accounted for"
    );

    // CPU of nobody listed (processes that came and went between two samples): a listing
    // finds nobody, so the trigger is held off for 1, 2, 4 ... samples: 3 listings in 7.
    let mut unseen = 0;
    for _ in 0..7 {
        busy += 20;
        sleeper += 30;
        newcomer += 10;
        unseen += 50;
        step(&mut s, &with_new(busy, sleeper, dozer, newcomer), unseen);
    }
    assert_eq!(s.scan_counts().1, after_start.1 + 5);
}

/// Without the process connector, `--scan adaptive` also lists /proc every 5 samples: only a
/// listing finds new idle processes and exits then.
#[test]
fn adaptive_scan_without_connector_lists_every_five_samples() {
    let t = Tree::new("adaptive-noconn");
    let c = Config {
        scan: ScanPolicy::Adaptive(120),
        ..cfg(&t)
    };
    let mut s = Sampler::new(&c);
    let mut out = nasprobe_proto::Sample::default();
    for k in 0..12 {
        adaptive_step(&t, k, &[(100, "busy", 1000 + 20 * k)], 0);
        take(&mut s, &mut out);
    }
    // Priming, the sample after it, then every 5 samples: samples 1, 2, 7, 12.
    assert_eq!(s.scan_counts(), (4, 0));
}
