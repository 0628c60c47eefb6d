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
    nasprobe_agent::parse::net::net_dev(&buf)
        .map(|l| l.unwrap())
        .find(|l| l.name == b"egiga0")
        .unwrap()
        .c[nasprobe_agent::parse::net::RX_BYTES]
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
