//! The sampler over 3.10 and 4.4 trees written by testkit (the one writer of kernel formats,
//! as `nasprobe-scenario` writes them for the end-to-end tests): a WD My Cloud style armv7 box
//! and a Synology DSM 6 style one. Deltas are checked against what the model declares over one
//! simulated second (counts, not rates: no timing in the assertions), across a 32-bit counter
//! wrap on 3.10, and with damaged files the sampler must survive.

use std::path::Path;

use nasprobe_agent::config::{Config, ScanPolicy};
use nasprobe_agent::sampler::Sampler;
use nasprobe_proto::{Event, Hello, Sample, flags};
use nasprobe_testkit::{
    CpuBackground, Disk, Host, HostSim, Kernel, MdArray, Memory, Nic, Process, Thread, TreeWriter,
};

/// A two-disk NAS: `sda`/`sdb` with partitions, md1 (raid1 over the second partitions), one
/// GbE port `egiga0` receiving 22.5 MB/s, `rsync` with one thread at 60% of a core.
fn nas(kernel: Kernel) -> Host {
    Host::new("nas", kernel)
        .cores(2)
        .memory(
            Memory::new(1008.0, 60.0, 610.0)
                .buffers(30.0)
                .swap(511.0, 500.0),
        )
        .cpu(CpuBackground::new(2.0, 3.0))
        .wrap_at_s(1.5)
        .disk(
            Disk::new("sda")
                .rotational(true)
                .rw(20.0, 2.0)
                .util(40.0)
                .await_ms(6.0)
                .partitions(2),
        )
        .disk(
            Disk::new("sdb")
                .rotational(true)
                .rw(20.0, 2.0)
                .util(40.0)
                .await_ms(6.0)
                .partitions(2),
        )
        .md(MdArray::new("md1", "raid1", &["sda2", "sdb2"]))
        .nic(Nic::new("egiga0").speed(1000).rx(22.5).tx(0.6))
        .process(Process::new(1, "init").cmdline(&["/sbin/init"]).ppid(0))
        .process(
            Process::new(4401, "rsync")
                .cmdline(&["rsync", "-av", "/shares/Public/", "/mnt/USB/"])
                .thread(Thread::new(60.0)),
        )
}

/// Writes the tree at t=1 s, primes the sampler, writes it at t=2 s, takes the sample;
/// `damage` runs on the tree after each write (the sampler reads link state at its start).
fn sample_over(host: &Host, dir: &Path, damage: impl Fn(&Path)) -> (Hello, Sample, Vec<Event>) {
    let mut sim = HostSim::new(host, 7, 1_764_000_000);
    let mut w = TreeWriter::create(dir).unwrap();
    sim.advance_to(1.0);
    w.write(&sim).unwrap();
    damage(dir);
    let cfg = Config {
        proc_root: dir.join("proc"),
        sys_root: dir.join("sys"),
        scan: ScanPolicy::All,
        ..Config::default()
    };
    let mut s = Sampler::new(&cfg);
    let mut out = Sample::default();
    let mut ev = Vec::new();
    assert!(!s.sample(&mut out, &mut |e| ev.push(e)), "priming");
    sim.advance_to(2.0);
    w.write(&sim).unwrap();
    damage(dir);
    ev.clear();
    assert!(s.sample(&mut out, &mut |e| ev.push(e)));
    let mut h = Hello::default();
    s.fill_hello(&mut h);
    (h, out, ev)
}

fn near(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= want.abs() * rel + 1.0
}

/// egiga0's raw rx byte counter in the tree now.
fn raw_rx(dir: &Path) -> u64 {
    let buf = std::fs::read(dir.join("proc/net/dev")).unwrap();
    nasprobe_agent::parse::net_dev::net_dev(&buf)
        .map(|l| l.unwrap())
        .find(|l| l.name == b"egiga0")
        .unwrap()
        .c[nasprobe_agent::parse::net_dev::RX_BYTES]
}

fn check(kernel: Kernel, release: &str) {
    let dir = tempfile_dir(release);
    let raws = std::cell::RefCell::new(Vec::new());
    let (h, s, _) = sample_over(&nas(kernel), &dir, |d| raws.borrow_mut().push(raw_rx(d)));
    let raws = raws.into_inner();
    // On 3.10 (32-bit counters) the counter wrapped between the two reads.
    assert_eq!(
        raws[1] < raws[0],
        kernel == Kernel::K3_10,
        "{kernel:?}: {raws:?}"
    );
    assert_eq!(
        (h.host_name.as_str(), h.kernel_release.as_str()),
        ("nas", release)
    );
    assert_eq!(h.cpu_count, 2);
    let disks: Vec<&str> = h.disks.iter().map(|d| d.name.as_str()).collect();
    for d in ["sda", "sdb", "md1"] {
        assert!(disks.contains(&d), "{d} in {disks:?}");
    }
    let md1 = h.md_arrays.iter().find(|m| m.name == "md1").unwrap();
    let members: Vec<&str> = md1.members.iter().map(|m| m.as_str()).collect();
    assert_eq!((md1.level.as_str(), members), ("raid1", vec!["sda", "sdb"]));
    assert_eq!(
        h.nics.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["egiga0"]
    );

    // One simulated second of the declared rates, as deltas.
    let n = s.nics.iter().find(|n| n.nic == 0).unwrap();
    assert_eq!(
        n.flags & flags::RESET,
        0,
        "{kernel:?}: no reset across the wrap"
    );
    assert!(
        near(n.rx_bytes as f64, 22.5e6, 0.02),
        "{kernel:?} rx {}",
        n.rx_bytes
    );
    assert_eq!(n.speed_mbit, 1000);
    let sda = h.disks.iter().position(|d| d.name == "sda").unwrap() as u16;
    let d = s.disks.iter().find(|d| d.disk == sda).unwrap();
    assert_eq!(d.flags & flags::RESET, 0);
    assert!(
        near(d.sectors_read as f64 * 512.0, 20e6, 0.02),
        "{kernel:?} read {}",
        d.sectors_read
    );
    assert!(
        near(f64::from(d.io_ms), 400.0, 0.05),
        "{kernel:?} io_ms {}",
        d.io_ms
    );
    let rsync = s
        .top
        .iter()
        .find(|p| p.comm == "rsync")
        .expect("rsync among the top");
    assert!(
        near(f64::from(rsync.utime + rsync.stime), 60.0, 0.05),
        "{rsync:?}"
    );

    let m = s.memory.unwrap();
    assert_eq!(m.total_kib, 1008 * 1024);
    // 3.10 has no MemAvailable: the agent estimates it; 4.4 prints it.
    assert_eq!(m.available_estimated, kernel == Kernel::K3_10);
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nasprobe-gen-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn linux_3_10_armv7_tree() {
    check(Kernel::K3_10, Kernel::K3_10.release());
}

#[test]
fn linux_4_4_tree() {
    check(Kernel::K4_4, Kernel::K4_4.release());
}

/// A truncated /proc/PID/stat, a garbage one and a garbage duplex: the sampler keeps going,
/// leaves those processes out and calls the duplex unknown.
#[test]
fn damaged_files_are_survived() {
    let dir = tempfile_dir("damaged");
    let (_, s, _) = sample_over(&nas(Kernel::K3_10), &dir, |d| {
        let stat = d.join("proc/4401/stat");
        // Cut right after the state letter: "4401 (rsync) R".
        let text = std::fs::read_to_string(&stat).unwrap();
        let cut = text.find(')').unwrap() + 3;
        std::fs::write(&stat, &text[..cut]).unwrap();
        std::fs::write(d.join("proc/1/stat"), b"\x00\xffgarbage (((\n").unwrap();
        std::fs::write(d.join("sys/class/net/egiga0/duplex"), b"sideways\n").unwrap();
    });
    assert!(s.top.iter().all(|p| p.comm != "rsync"), "{:?}", s.top);
    let n = &s.nics[0];
    assert_ne!(n.flags & flags::DUPLEX_UNKNOWN, 0, "{n:?}");
    assert!(near(n.rx_bytes as f64, 22.5e6, 0.02));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `host`'s tree at t=1 s and returns where.
fn tree(host: &Host, tag: &str) -> std::path::PathBuf {
    let dir = tempfile_dir(tag);
    let mut sim = HostSim::new(host, 7, 1_764_000_000);
    sim.advance_to(1.0);
    TreeWriter::create(&dir).unwrap().write(&sim).unwrap();
    dir
}

fn read(dir: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The value of `name` in a rendered /proc/vmstat.
fn vmstat_value(buf: &[u8], name: &str) -> Option<u64> {
    String::from_utf8_lossy(buf).lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().unwrap())
    })
}

/// The parsers over a 3.10 tree as testkit renders it, including the comm names that break
/// naive parsing, reclaim counted per zone, and damaged files.
#[test]
fn linux_3_10_parsers() {
    use nasprobe_agent::parse::{
        ParseError, diskstats, meminfo, net_dev, pid_stat, proc_stat, snmp, sysfs, vmstat,
    };
    let host = nas(Kernel::K3_10)
        .swap(
            nasprobe_testkit::Swap::new(40.0, 90.0)
                .allocstall(3.0)
                .pgscan(500.0, 900.0),
        )
        .process(Process::new(901, "(sd-pam)").ppid(1))
        .process(Process::new(1500, "sh").ppid(1))
        .process(Process::new(1501, "a) b (c").ppid(1500));
    let dir = tree(&host, "parsers-310");

    let mut st = proc_stat::ProcStat::default();
    proc_stat::parse_stat(&read(&dir, "proc/stat"), &mut st).unwrap();
    assert_eq!(st.cpus.len(), 2);
    assert!(st.total.is_some() && st.processes.is_some());

    let m = meminfo::parse_meminfo(&read(&dir, "proc/meminfo")).unwrap();
    assert_eq!(m.available, None, "3.10 has no MemAvailable");
    let est = meminfo::estimate_available(&m, Some(4096)).unwrap();
    let (free, total) = (m.free.unwrap(), m.total.unwrap());
    assert!(
        est < total && est + 6144 >= free.min(est + 6144),
        "{est} of {total}"
    );

    let vm = read(&dir, "proc/vmstat");
    let v = vmstat::parse_vmstat(&vm).unwrap();
    let zones: u64 = String::from_utf8_lossy(&vm)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, _)| k.starts_with("pgscan_direct_") && *k != "pgscan_direct_throttle")
        .map(|(_, v)| v.trim().parse::<u64>().unwrap())
        .sum();
    assert!(zones > 0 && vmstat_value(&vm, "pgscan_direct").is_none());
    assert_eq!(
        v.pgscan_direct,
        Some(zones),
        "the zones summed, throttle left out"
    );
    assert_eq!(v.allocstall, vmstat_value(&vm, "allocstall"));

    let ds = read(&dir, "proc/diskstats");
    let lines: Vec<_> = diskstats::diskstats(&ds).map(|l| l.unwrap()).collect();
    assert!(lines.iter().any(|l| l.name == b"sda2") && lines.iter().any(|l| l.name == b"md1"));
    let fields = String::from_utf8_lossy(&ds)
        .lines()
        .map(|l| l.split_whitespace().count())
        .max();
    assert_eq!(fields, Some(14), "3.10 prints 14 diskstats fields");

    let nd = read(&dir, "proc/net/dev");
    let dev: Vec<_> = net_dev::net_dev(&nd).map(|l| l.unwrap()).collect();
    assert!(dev.iter().any(|l| l.name == b"egiga0"));
    let mut t = snmp::TcpCounters::default();
    snmp::parse_snmp(&read(&dir, "proc/net/snmp"), &mut t).unwrap();
    snmp::parse_netstat(&read(&dir, "proc/net/netstat"), &mut t).unwrap();
    assert!(t.retrans_segs.is_some() && t.timeouts.is_some() && t.listen_drops.is_some());

    let p = pid_stat::parse_pid_stat(&read(&dir, "proc/901/stat")).unwrap();
    assert_eq!(p.comm(), b"(sd-pam)");
    let text = read(&dir, "proc/1501/stat");
    let p = pid_stat::parse_pid_stat(&text).unwrap();
    assert_eq!((p.comm(), p.ppid), (&b"a) b (c"[..], 1500));
    // The kernel's (and testkit's) 52 fields since 3.5.
    let after = String::from_utf8_lossy(&text)
        .rsplit_once(')')
        .unwrap()
        .1
        .to_string();
    assert_eq!(after.split_whitespace().count() + 2, 52);
    let cut = text.iter().position(|&b| b == b')').unwrap() + 3;
    assert!(matches!(
        pid_stat::parse_pid_stat(&text[..cut]),
        Err(ParseError::Truncated(_))
    ));
    assert!(pid_stat::parse_pid_stat(b"\x00\xffgarbage (((\n").is_err());
    assert!(sysfs::parse_duplex(b"sideways\n").is_err());
    // lo's speed reads empty on 3.10.
    assert_eq!(
        sysfs::parse_speed(b""),
        Err(ParseError::Truncated("empty speed"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Synology DSM style 4.4 box: four disks in three md arrays, a bond, a `btrfs send` with
/// its resume token on the command line; a damaged diskstats line and a netstat cut after its
/// header.
#[test]
fn linux_4_4_synology_inventory_and_damage() {
    use nasprobe_agent::parse::{cmdline, diskstats, snmp};
    let drives = ["sda", "sdb", "sdc", "sdd"];
    let mut host = Host::new("ds918", Kernel::K4_4)
        .cores(4)
        .memory(Memory::new(4096.0, 820.0, 2600.0).swap(2047.0, 2047.0))
        .nic(Nic::new("eth0").speed(1000).tx(97.0))
        .nic(Nic::new("eth1").speed(1000))
        .nic(Nic::new("bond0").bond(&["eth0", "eth1"]))
        .process(Process::new(1, "init").cmdline(&["/sbin/init"]).ppid(0))
        .process(
            Process::new(15234, "btrfs")
                .cmdline(&[
                    "btrfs",
                    "send",
                    "-p",
                    "/volume1/@sharesnap/data/GMT+01-2026.11.29-02.00.03",
                    "/volume1/@sharesnap/data/GMT+01-2026.11.30-02.00.03",
                    "-k",
                    "{token}",
                ])
                .token(28_399_387)
                .thread(Thread::new(45.0)),
        );
    for d in drives {
        host = host.disk(
            Disk::new(d)
                .rotational(true)
                .rw(25.0, 0.5)
                .util(20.0)
                .partitions(3),
        );
    }
    let part = |n: u32| -> Vec<String> { drives.iter().map(|d| format!("{d}{n}")).collect() };
    let (p1, p2, p3) = (part(1), part(2), part(3));
    let mk = |name: &str, level: &str, m: &[String]| {
        let names: Vec<&str> = m.iter().map(String::as_str).collect();
        MdArray::new(name, level, &names)
    };
    // Every array with some traffic: the inventory lists block devices that were ever used.
    host = host
        .md(mk("md0", "raid1", &p1).rw(0.1, 0.1))
        .md(mk("md1", "raid1", &p2).rw(0.1, 0.2))
        .md(mk("md2", "raid5", &p3));

    let dir = tree(&host, "synology-44");
    // Damage: one garbage diskstats line, a netstat cut after its header.
    let mut ds = read(&dir, "proc/diskstats");
    ds.extend_from_slice(b"  65  0 sdq 12 x 9\n");
    let all: Vec<_> = diskstats::diskstats(&ds).collect();
    assert_eq!(all.iter().filter(|l| l.is_err()).count(), 1, "the sdq line");
    let ns = read(&dir, "proc/net/netstat");
    let header = ns.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut t = snmp::TcpCounters::default();
    assert!(
        snmp::parse_netstat(&ns[..header], &mut t).is_err(),
        "cut after the header"
    );

    let mut c = heapless::String::<256>::new();
    cmdline::format_cmdline(
        &read(&dir, "proc/15234/cmdline"),
        cmdline::DEFAULT_REDACT.iter().copied(),
        256,
        &mut c,
    );
    assert!(
        c.starts_with("btrfs send -p /volume1/@sharesnap/data/"),
        "{c}"
    );
    assert!(c.ends_with(" -k 28399387"), "the resume token is kept: {c}");

    let (h, s, _) = sample_over(&host, &dir, |d| {
        std::fs::write(d.join("proc/net/netstat"), &ns[..header]).unwrap();
    });
    assert_eq!(
        (h.kernel_release.as_str(), h.cpu_count),
        (Kernel::K4_4.release(), 4)
    );
    let disks: Vec<&str> = h.disks.iter().map(|d| d.name.as_str()).collect();
    for d in ["sda", "sdb", "sdc", "sdd", "md0", "md1", "md2"] {
        assert!(disks.contains(&d), "{d} in {disks:?}");
    }
    let md2 = h.md_arrays.iter().find(|m| m.name == "md2").unwrap();
    let members: Vec<&str> = md2.members.iter().map(|m| m.as_str()).collect();
    assert_eq!((md2.level.as_str(), members), ("raid5", drives.to_vec()));
    let nics: Vec<&str> = h.nics.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(nics, ["eth0", "eth1", "bond0"]);
    let bond = &h.nics[2];
    let slaves: Vec<&str> = bond.slaves.iter().map(|m| m.as_str()).collect();
    assert!(bond.is_bond && slaves == ["eth0", "eth1"], "{bond:?}");
    let tcp = s.tcp.unwrap();
    assert_eq!(
        (tcp.timeouts, tcp.timeout_aborts),
        (None, None),
        "netstat truncated: unknown, not zero"
    );
    assert!(!s.memory.unwrap().available_estimated);
    assert_eq!(s.cpus.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}
