//! Built-in scenarios. Their names and declared figures are a contract: later tests assert the
//! verdict on them. Change a figure only together with the tests that use it (and the README).

use crate::model::*;

/// Knobs of the built-ins (CLI: --procs, --cores, --churn-per-s, --churn-life-ms,
/// --restart-every, --wrap-at, --seed).
#[derive(Clone, Debug)]
pub struct BuiltinOptions {
    /// `scale`: number of processes.
    pub procs: usize,
    /// `scale`, `churn`: cores.
    pub cores: Option<u32>,
    /// `churn`: births per second.
    pub churn_per_s: f64,
    /// `churn`: lifetime of each short-lived process.
    pub churn_lifetime_s: f64,
    /// `synology-replication` (default 20 s) and `process-restarts` (default 5 s): lifetime of
    /// each instance of the restarting process.
    pub restart_every_s: Option<f64>,
    /// Override `wrap_at_s` on every host (only 32-bit flavours use it).
    pub wrap_at_s: Option<f64>,
    pub seed: u64,
}

impl Default for BuiltinOptions {
    fn default() -> Self {
        BuiltinOptions {
            procs: 1000,
            cores: None,
            churn_per_s: 100.0,
            churn_lifetime_s: 0.5,
            restart_every_s: None,
            wrap_at_s: None,
            seed: 7451,
        }
    }
}

/// Names of the built-in scenarios (stable).
pub const NAMES: &[&str] = &[
    "synology-replication",
    "wd-ssh",
    "md-disk-bound",
    "link-100mbit",
    "swap-storm",
    "all-cores-busy",
    "idle-pair",
    "process-restarts",
    "scale",
    "churn",
];

/// The built-in named `name`, or `None`.
pub fn builtin(name: &str, o: &BuiltinOptions) -> Option<Scenario> {
    let mut s = match name {
        "synology-replication" => synology_replication(o),
        "wd-ssh" => wd_ssh(),
        "md-disk-bound" => md_disk_bound(),
        "link-100mbit" => link_100mbit(),
        "swap-storm" => swap_storm(),
        "all-cores-busy" => all_cores_busy(),
        "idle-pair" => idle_pair(),
        "process-restarts" => process_restarts(o),
        "scale" => scale(o.procs, o.cores.unwrap_or(4)),
        "churn" => churn(o),
        _ => return None,
    };
    s.seed = o.seed;
    if let Some(w) = o.wrap_at_s {
        for h in &mut s.hosts {
            h.wrap_at_s = Some(w);
        }
    }
    Some(s)
}

const ATOM: &str = "Intel(R) Atom(TM) CPU  C2538  @ 2.40GHz";

fn init() -> Process {
    Process::new(1, "init")
        .cmdline(&["/sbin/init"])
        .ppid(0)
        .mem(3.0, 24.0)
}

fn kthreadd() -> Process {
    Process::kthread(2, "kthreadd", 0.0).ppid(0)
}

fn nas_disks(
    names: &[&str],
    utils: &[f64],
    read_mbs: f64,
    write_mbs: f64,
    await_ms: f64,
    parts: u32,
) -> Vec<Disk> {
    names
        .iter()
        .zip(utils)
        .map(|(n, u)| {
            Disk::new(n)
                .size_gib(3726.0)
                .util(*u)
                .rw(read_mbs, write_mbs)
                .await_ms(await_ms)
                .partitions(parts)
        })
        .collect()
}

fn members(disks: &[&str], part: u32) -> Vec<String> {
    disks.iter().map(|d| format!("{d}{part}")).collect()
}

fn md(name: &str, level: &str, members: Vec<String>) -> MdArray {
    MdArray {
        name: name.into(),
        level: level.into(),
        members,
        read_mbs: None,
        write_mbs: None,
    }
}

/// Field case 1. See the README for the figures.
pub(crate) fn synology_replication(o: &BuiltinOptions) -> Scenario {
    let every = o.restart_every_s.unwrap_or(20.0);
    let gap = (every / 10.0).max(0.5);
    let drives = ["sda", "sdb", "sdc", "sdd"];
    let mut src = Host::new("src", Kernel::K4_4)
        .cores(4)
        .cpu_model(ATOM)
        .memory(Memory::new(4096.0, 820.0, 2600.0).swap(2047.0, 2047.0))
        .cpu(CpuBackground::new(5.0, 2.0).softirq(5.0))
        .nic(Nic::new("eth0").speed(1000).tx(97.0).rx(1.6))
        .nic(Nic::new("eth1").speed(1000).tx(0.05).rx(0.3))
        .nic(Nic::new("bond0").bond(&["eth0", "eth1"]))
        .tcp(Tcp::new(0.5, 0.0).burst(TcpBurst {
            window: Window::new(every / 2.0 - 5.0, every / 2.0).every(every + gap),
            retrans_s: 30.0,
            resets_s: 0.0,
            estab_resets_s: 0.0,
            timeouts_s: 1.0,
        }))
        .process(init())
        .process(kthreadd())
        .process(
            Process::new(9876, "synoreplicad")
                .cmdline(&["/var/packages/SnapshotReplication/target/sbin/synoreplicad"])
                .mem(40.0, 420.0)
                .thread(Thread::new(1.0))
                .thread(Thread::new(29.0).sys(0.6)),
        )
        .process(
            Process::new(24311, "btrfs")
                .cmdline(&[
                    "btrfs",
                    "send",
                    "-v",
                    "-p",
                    "/volume1/@sharesnap/data/GMT+01-2026.11.29-02.00.03",
                    "/volume1/@sharesnap/data/GMT+01-2026.11.30-02.00.03",
                    "-k",
                    "{token}",
                ])
                .ppid(9876)
                .mem(12.0, 30.0)
                .thread(Thread::new(45.0).sys(0.8))
                .born(-every / 2.0)
                .restart(every, gap)
                .token(28_399_387),
        );
    for d in nas_disks(&drives, &[13.0, 18.0, 24.0, 28.0], 25.0, 0.5, 4.5, 3) {
        src = src.disk(d);
    }
    src = src
        .md(md("md0", "raid1", members(&drives, 1)))
        .md(md("md1", "raid1", members(&drives, 2)))
        .md(md("md2", "raid5", members(&drives, 3)));

    let mut dst = Host::new("dst", Kernel::K4_4)
        .cores(4)
        .cpu_model(ATOM)
        .memory(
            Memory::new(1986.56, 95.0, 1210.0)
                .buffers(40.0)
                .swap(2047.0, 1990.0),
        )
        .cpu(CpuBackground::new(2.0, 2.0).softirq(6.0))
        .nic(Nic::new("eth0").speed(1000).rx(97.0).tx(1.7))
        .nic(Nic::new("eth1").speed(1000).operstate("down"))
        .tcp(Tcp::new(0.2, 0.0))
        .process(init())
        .process(kthreadd())
        .process(
            Process::new(8123, "synoreplicad")
                .cmdline(&["/var/packages/SnapshotReplication/target/sbin/synoreplicad"])
                .mem(180.0, 620.0)
                .thread(Thread::new(1.5))
                .thread(Thread::new(96.0).sys(0.3).tid(8131))
                .thread(Thread::new(1.0)),
        )
        .process(
            Process::new(8170, "btrfs")
                .cmdline(&["btrfs", "receive", "-v", "/volume1/@sharesnap/data"])
                .ppid(8123)
                .mem(10.0, 28.0)
                .thread(Thread::new(18.0).sys(0.85)),
        )
        .process(Process::kthread(410, "md2_raid5", 3.0))
        .process(Process::kthread(1203, "btrfs-transacti", 1.0))
        .process(Process::kthread(6120, "kworker/u8:2", 1.0));
    for d in nas_disks(
        &drives,
        &[13.0, 16.0, 19.0, 22.0],
        0.2,
        97.0 * 4.0 / 3.0 / 4.0,
        6.0,
        3,
    ) {
        dst = dst.disk(d);
    }
    dst = dst
        .md(md("md0", "raid1", members(&drives, 1)))
        .md(md("md1", "raid1", members(&drives, 2)))
        .md(md("md2", "raid5", members(&drives, 3)));
    Scenario::new("synology-replication")
        .description(
            "Synology Snapshot Replication: the destination's synoreplicad thread pegs one core",
        )
        .host(src)
        .host(dst)
}

/// Field case 2: two WD MyCloud EX2 (armv7, 3.10), scp/rsync over ssh.
pub(crate) fn wd_ssh() -> Scenario {
    let drives = ["sda", "sdb"];
    let wd = |name: &str| {
        Host::new(name, Kernel::K3_10)
            .cores(2)
            .memory(
                Memory::new(1008.0, 60.0, 610.0)
                    .buffers(30.0)
                    .swap(511.0, 500.0),
            )
            .cpu(CpuBackground::new(2.0, 3.0))
            .wrap_at_s(20.0)
            .process(init())
            .process(kthreadd())
            .process(
                Process::new(1888, "wdmcserverd")
                    .cmdline(&[
                        "/usr/local/wdmcserver/bin/wdmcserverd",
                        "-c",
                        "/etc/wdmcserver.conf",
                    ])
                    .mem(60.0, 210.0),
            )
            .process(
                Process::new(1912, "wdphotodbmergerd")
                    .cmdline(&["/usr/sbin/wdphotodbmergerd"])
                    .mem(30.0, 95.0),
            )
    };
    let mut src = wd("src")
        .cpu(CpuBackground::new(2.0, 3.0).softirq(4.0))
        .nic(Nic::new("egiga0").speed(1000).tx(22.5).rx(0.6))
        .process(
            Process::new(4401, "rsync")
                .cmdline(&[
                    "rsync",
                    "-av",
                    "/shares/Public/",
                    "root@dst:/shares/Public/",
                ])
                .thread(Thread::new(12.0).sys(0.5)),
        )
        .process(
            Process::new(4402, "ssh")
                .cmdline(&[
                    "ssh",
                    "-l",
                    "root",
                    "dst",
                    "rsync",
                    "--server",
                    "-vlogDtpre.iLsfxC",
                    ".",
                    "/shares/Public/",
                ])
                .ppid(4401)
                .thread(Thread::new(97.0).sys(0.1)),
        );
    let mut dst = wd("dst")
        .cpu(CpuBackground::new(2.0, 3.0).softirq(5.0))
        .nic(Nic::new("egiga0").speed(1000).rx(22.5).tx(0.6))
        .process(
            Process::new(4410, "sshd")
                .cmdline(&["sshd: root@notty"])
                .thread(Thread::new(98.0).sys(0.15)),
        )
        .process(
            Process::new(4411, "rsync")
                .cmdline(&[
                    "rsync",
                    "--server",
                    "-vlogDtpre.iLsfxC",
                    ".",
                    "/shares/Public/",
                ])
                .ppid(4410)
                .thread(Thread::new(14.0).sys(0.5)),
        );
    // Indexing daemons steal CPU: wdmcserverd 9% + 6% (src) / 8% + 4% (dst), wdphotodbmergerd 10% / 8%.
    for (h, (a, b, c)) in [(&mut src, (9.0, 6.0, 10.0)), (&mut dst, (8.0, 4.0, 8.0))] {
        for p in &mut h.processes {
            match p.comm.as_str() {
                "wdmcserverd" => p.threads = vec![Thread::new(a), Thread::new(b)],
                "wdphotodbmergerd" => p.threads = vec![Thread::new(c)],
                _ => {}
            }
        }
    }
    for d in nas_disks(&drives, &[12.0, 12.0], 11.25, 0.1, 3.0, 2) {
        src = src.disk(d);
    }
    for d in nas_disks(&drives, &[12.0, 12.0], 0.1, 22.5, 4.0, 2) {
        dst = dst.disk(d);
    }
    for h in [&mut src, &mut dst] {
        h.md.push(md("md0", "raid1", members(&drives, 1)));
        h.md.push(md("md1", "raid1", members(&drives, 2)));
    }
    Scenario::new("wd-ssh")
        .description("WD MyCloud EX2 to EX2 over ssh: one ssh/sshd thread pins one of two cores")
        .host(src)
        .host(dst)
}

fn quiet_k6(name: &str) -> Host {
    Host::new(name, Kernel::K6)
        .cores(4)
        .cpu_model("Intel(R) Celeron(R) J4125 CPU @ 2.00GHz")
        .memory(Memory::new(7820.0, 3100.0, 3900.0).swap(4095.0, 4095.0))
        .cpu(CpuBackground::new(1.5, 1.0).softirq(1.0))
        .process(init())
        .process(kthreadd())
        .process(
            Process::new(911, "smbd")
                .cmdline(&["/usr/sbin/smbd", "--foreground", "--no-process-group"])
                .cpu(0.5),
        )
}

/// Destination disks behind md RAID5 at ~98% util, high await; NIC at 40 MB/s, CPU mostly idle.
pub(crate) fn md_disk_bound() -> Scenario {
    let drives = ["sda", "sdb", "sdc", "sdd"];
    let mut src = quiet_k6("src")
        .nic(Nic::new("eth0").speed(1000).tx(40.0).rx(0.9))
        .process(
            Process::new(3100, "rsync")
                .cmdline(&["rsync", "-a", "/srv/data/", "dst::data/"])
                .thread(Thread::new(8.0).sys(0.5)),
        );
    for d in nas_disks(&drives, &[15.0, 15.0, 14.0, 16.0], 10.0, 0.2, 4.0, 1) {
        src = src.disk(d);
    }
    src = src.md(md("md0", "raid5", members(&drives, 1)));
    let mut dst = quiet_k6("dst")
        .cpu(CpuBackground::new(1.0, 2.0).iowait(22.0).softirq(2.0))
        .procs_blocked(4)
        .nic(Nic::new("eth0").speed(1000).rx(40.0).tx(0.9))
        .process(
            Process::new(3200, "rsync")
                .cmdline(&["rsync", "--daemon", "--no-detach"])
                .thread(Thread::new(10.0).sys(0.6))
                .blkio(60.0),
        )
        .process(Process::kthread(388, "md0_raid5", 6.0))
        .process(Process::kthread(5120, "kworker/u8:3", 2.0));
    for (name, u) in drives.iter().zip([97.0, 98.0, 99.0, 98.0]) {
        dst = dst.disk(
            Disk::new(name)
                .size_gib(3726.0)
                .util(u)
                .rw(6.0, 40.0 / 3.0)
                .await_ms(85.0)
                .req_kib(64.0)
                .partitions(1),
        );
    }
    dst = dst.md(md("md0", "raid5", members(&drives, 1)));
    Scenario::new("md-disk-bound")
        .description(
            "Destination member disks at ~98% util behind md RAID5 (md itself reports 0 busy)",
        )
        .host(src)
        .host(dst)
}

/// Destination NIC negotiated 100 Mb/s (gigabit hardware), running at 11.5 MB/s.
pub(crate) fn link_100mbit() -> Scenario {
    let src = quiet_k6("src")
        .nic(Nic::new("eth0").speed(1000).tx(11.5).rx(0.3))
        .disk(Disk::new("sda").util(4.0).rw(11.5, 0.1).await_ms(3.0))
        .process(
            Process::new(3100, "rsync")
                .cmdline(&["rsync", "-a", "/srv/data/", "dst::data/"])
                .thread(Thread::new(4.0).sys(0.5)),
        );
    let dst = quiet_k6("dst")
        .nic(Nic::new("eth0").speed(100).rx(11.5).tx(0.3))
        .disk(Disk::new("sda").util(5.0).rw(0.1, 11.5).await_ms(3.0))
        .process(
            Process::new(3200, "rsync")
                .cmdline(&["rsync", "--daemon", "--no-detach"])
                .thread(Thread::new(6.0).sys(0.5)),
        );
    Scenario::new("link-100mbit")
        .description(
            "Destination link negotiated at 100 Mb/s on gigabit hardware: 11.5 MB/s of 12.5",
        )
        .host(src)
        .host(dst)
}

/// Destination swapping hard; the transfer crawls at 2.5 MB/s.
pub(crate) fn swap_storm() -> Scenario {
    let src = quiet_k6("src")
        .nic(Nic::new("eth0").speed(1000).tx(2.5).rx(0.1))
        .disk(Disk::new("sda").util(2.0).rw(2.5, 0.1).await_ms(3.0))
        .process(
            Process::new(3100, "rsync")
                .cmdline(&["rsync", "-a", "/srv/data/", "dst::data/"])
                .thread(Thread::new(1.0).sys(0.5)),
        );
    let dst = Host::new("dst", Kernel::K4_4)
        .cores(2)
        .cpu_model("Intel(R) Celeron(R) CPU N3060 @ 1.60GHz")
        .memory(
            Memory::new(1000.0, 14.0, 38.0)
                .buffers(3.0)
                .available(30.0)
                .swap(2047.0, 310.0)
                .dirty(2.0),
        )
        .cpu(CpuBackground::new(1.0, 3.0).iowait(30.0).softirq(1.0))
        .swap(
            Swap::new(2400.0, 3100.0)
                .major_faults(1900.0)
                .allocstall(140.0)
                .pgscan(22000.0, 30000.0),
        )
        .procs_blocked(3)
        .nic(Nic::new("eth0").speed(1000).rx(2.5).tx(0.1))
        .disk(
            Disk::new("sda")
                .util(55.0)
                .rw(9.8, 12.7 + 2.5)
                .await_ms(45.0)
                .req_kib(16.0),
        )
        .process(init())
        .process(kthreadd())
        .process(Process::kthread(52, "kswapd0", 55.0))
        .process(
            Process::new(2400, "java")
                .cmdline(&[
                    "/usr/bin/java",
                    "-Xmx1g",
                    "-jar",
                    "/opt/mediaserver/server.jar",
                ])
                .mem(720.0, 2400.0)
                .faults(400.0, 1200.0)
                .thread(Thread::new(12.0))
                .thread(Thread::new(6.0))
                .thread(Thread::new(2.0)),
        )
        .process(
            Process::new(3200, "rsync")
                .cmdline(&["rsync", "--daemon", "--no-detach"])
                .faults(100.0, 600.0)
                .blkio(70.0)
                .thread(Thread::new(3.0).sys(0.6)),
        );
    Scenario::new("swap-storm")
        .description(
            "Destination with 1 GB RAM swapping 2400 pages/s in, 3100 out: the transfer crawls",
        )
        .host(src)
        .host(dst)
}

/// Destination with 8 pigz threads on 4 cores at ~100% each.
pub(crate) fn all_cores_busy() -> Scenario {
    let src = quiet_k6("src")
        .nic(Nic::new("eth0").speed(1000).tx(40.0).rx(0.9))
        .disk(Disk::new("sda").util(10.0).rw(40.0, 0.1).await_ms(3.0))
        .process(
            Process::new(3100, "rsync")
                .cmdline(&["rsync", "-a", "/srv/data/", "dst::data/"])
                .thread(Thread::new(6.0).sys(0.5)),
        );
    let mut pigz = Process::new(3300, "pigz")
        .cmdline(&["pigz", "-p", "8", "-c"])
        .mem(60.0, 600.0)
        .thread(Thread::new(1.0));
    for _ in 0..8 {
        pigz = pigz.thread(Thread::new(48.5).sys(0.02));
    }
    let dst = quiet_k6("dst")
        .cpu(CpuBackground::new(1.0, 1.0))
        .nic(Nic::new("eth0").speed(1000).rx(40.0).tx(0.9))
        .disk(Disk::new("sda").util(12.0).rw(0.1, 14.0).await_ms(3.0))
        .process(pigz);
    Scenario::new("all-cores-busy")
        .description("Destination: pigz with 8 threads fills all 4 cores (~99%)")
        .host(src)
        .host(dst)
}

/// Nothing near a ceiling.
pub(crate) fn idle_pair() -> Scenario {
    let src = quiet_k6("src")
        .nic(Nic::new("eth0").speed(1000).tx(2.0).rx(0.1))
        .disk(Disk::new("sda").util(2.0).rw(2.0, 0.1).await_ms(2.0))
        .process(
            Process::new(3100, "rsync")
                .cmdline(&["rsync", "-a", "/srv/data/", "dst::data/"])
                .thread(Thread::new(2.0).sys(0.5)),
        );
    let dst = quiet_k6("dst")
        .nic(Nic::new("eth0").speed(1000).rx(2.0).tx(0.1))
        .disk(Disk::new("sda").util(2.0).rw(0.1, 2.0).await_ms(2.0))
        .process(
            Process::new(3200, "rsync")
                .cmdline(&["rsync", "--daemon", "--no-detach"])
                .thread(Thread::new(2.0).sys(0.5)),
        );
    Scenario::new("idle-pair")
        .description("Two quiet hosts: nothing near a ceiling")
        .host(src)
        .host(dst)
}

/// One host whose `btrfs send -k TOKEN` dies every few seconds and resumes with a new token.
pub(crate) fn process_restarts(o: &BuiltinOptions) -> Scenario {
    let every = o.restart_every_s.unwrap_or(5.0);
    let gap = (every / 10.0).max(0.2);
    let nas = quiet_k6("nas")
        .nic(Nic::new("eth0").speed(1000).tx(60.0).rx(1.0))
        .disk(Disk::new("sda").util(20.0).rw(60.0, 0.2).await_ms(4.0))
        .tcp(Tcp::new(0.2, 0.0).burst(TcpBurst {
            window: Window::new(every - 1.0, every).every(every + gap),
            retrans_s: 40.0,
            resets_s: 2.0,
            estab_resets_s: 1.0,
            timeouts_s: 2.0,
        }))
        .process(
            Process::new(24311, "btrfs")
                .cmdline(&[
                    "btrfs",
                    "send",
                    "-p",
                    "/mnt/snap/prev",
                    "/mnt/snap/cur",
                    "-k",
                    "{token}",
                ])
                .thread(Thread::new(30.0).sys(0.8))
                .born(0.0)
                .restart(every, gap)
                .token(100_200_300),
        );
    Scenario::new("process-restarts")
        .description("btrfs send dies every few seconds and resumes with a new pid and token")
        .host(nas)
}

/// `procs` idle-ish processes on `cores` cores (benchmarks). Every 5th has 3 threads; every 20th
/// is busy enough that all of them together use 30% of the machine.
pub fn scale(procs: usize, cores: u32) -> Scenario {
    let comms = [
        "nginx",
        "php-fpm7.4",
        "Web Content",
        "(sd-pam)",
        "kworker/3:1H",
        "postgres",
        "a) b",
        "synoindexd",
        "smbd",
        "containerd-shim",
    ];
    let busy_n = (procs / 20).max(1) as f64;
    let busy_pct = (0.3 * cores as f64 * 100.0 / busy_n).min(90.0);
    let mut h = Host::new("scale", Kernel::K6)
        .cores(cores)
        .memory(Memory::new(65536.0, 20000.0, 30000.0))
        .cpu(CpuBackground::new(0.5, 0.5))
        .nic(Nic::new("eth0").speed(10000).rx(5.0).tx(5.0))
        .disk(
            Disk::new("nvme0n1")
                .rotational(false)
                .util(3.0)
                .rw(20.0, 10.0)
                .await_ms(0.2),
        )
        .process(init())
        .process(kthreadd());
    h.pid_max = 4_194_304;
    for i in 0..procs {
        let pid = 300 + 4 * i as u32;
        let comm = comms[i % comms.len()];
        let pct = if i % 20 == 0 { busy_pct } else { 0.0 };
        let mut p = Process::new(pid, comm)
            .cmdline(&[comm, "--worker", &i.to_string()])
            .mem(8.0, 120.0)
            .thread(Thread::new(pct));
        if i % 5 == 0 {
            p = p
                .thread(Thread::new(0.0))
                .thread(Thread::new(0.0).comm("worker"));
        }
        h = h.process(p);
    }
    Scenario::new("scale")
        .description("Many idle-ish processes for scaling benchmarks")
        .host(h)
}

/// Processes born and dying every tick (soak).
pub fn churn(o: &BuiltinOptions) -> Scenario {
    let mut h = Host::new("churn", Kernel::K6)
        .cores(o.cores.unwrap_or(2))
        .memory(Memory::new(7820.0, 3100.0, 3900.0))
        .cpu(CpuBackground::new(2.0, 2.0))
        .nic(Nic::new("eth0").speed(1000).rx(1.0).tx(1.0))
        .disk(Disk::new("sda").util(3.0).rw(1.0, 1.0))
        .churn(Churn::new(o.churn_per_s, o.churn_lifetime_s).threads(2))
        .process(init())
        .process(kthreadd());
    for i in 0..40u32 {
        h = h.process(
            Process::new(500 + 3 * i, &format!("daemon{i}")).cpu(if i % 10 == 0 {
                3.0
            } else {
                0.0
            }),
        );
    }
    h.pid_max = 32768;
    Scenario::new("churn")
        .description("Short-lived processes born and dying every tick")
        .host(h)
}

/// One-line description of a built-in.
pub fn describe(name: &str) -> Option<String> {
    builtin(name, &BuiltinOptions::default()).map(|s| s.description)
}
