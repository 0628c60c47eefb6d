//! Verdicts on synthetic sample streams built from declared rates (the field's cases).
//! The same cases run end to end through real agents over generated /proc trees in
//! tests/e2e; here the analysis alone is pinned down.

use heapless::{String as HString, Vec as HVec};
use nasprobe_analysis::{HostData, Instance, Options, TimedEvent, TimedSample, build};
use nasprobe_proto::*;

fn hs<const N: usize>(s: &str) -> HString<N> {
    HString::try_from(s).unwrap()
}

#[derive(Clone)]
struct Host {
    name: &'static str,
    cores: u16,
    disks: Vec<(&'static str, bool)>, // (name, is_md)
    nics: Vec<(&'static str, u32)>,   // (name, speed)
    mem_total_kib: u64,
}

#[derive(Clone, Default)]
struct Load {
    /// (process, thread, pid, fraction of a core)
    threads: Vec<(&'static str, &'static str, u32, f64)>,
    /// Busy fraction of every core on top of the threads (background).
    background: f64,
    /// (disk index, util 0..1, MB/s written, await ms)
    disks: Vec<(u16, f64, f64, f64)>,
    /// (nic index, rx MB/s, tx MB/s)
    nics: Vec<(u16, f64, f64)>,
    swap_pages_ps: u32,
    alloc_stalls_ps: u32,
    avail_kib: u64,
    /// NICs negotiated at half duplex.
    half_duplex: bool,
}

fn hello(h: &Host) -> Hello {
    let mut disks = HVec::new();
    for (n, md) in &h.disks {
        disks
            .push(DiskInfo {
                name: hs(n),
                rotational: Some(!md),
                size_sectors: 1 << 30,
                is_md: *md,
            })
            .unwrap();
    }
    let mut nics = HVec::new();
    for (n, _) in &h.nics {
        nics.push(NicInfo {
            name: hs(n),
            mtu: 1500,
            is_bond: false,
            slaves: HVec::new(),
            speed_override_mbit: None,
            mac: hs(""),
        })
        .unwrap();
    }
    Hello {
        protocol_version: 1,
        agent_version: hs("test"),
        instance_id: 1,
        started_ms: 0,
        now_ms: 0,
        host_name: hs(h.name),
        kernel_release: hs("6.1"),
        arch: hs("x86_64"),
        cpu_count: h.cores,
        clock_ticks_per_sec: 100,
        page_size: 4096,
        boot_id: hs(""),
        interval_ms: 1000,
        oldest_seq: 1,
        newest_seq: 1,
        disks,
        md_arrays: HVec::new(),
        nics,
        mounts: HVec::new(),
    }
}

fn sample(h: &Host, l: &Load, t: usize) -> Sample {
    let mut cpus: HVec<CpuTicks, MAX_CPUS> = HVec::new();
    for c in 0..h.cores as usize {
        // Threads migrate: thread k sits on core (k + t) % cores.
        let mut busy = l.background;
        for (k, th) in l.threads.iter().enumerate() {
            if (k + t) % h.cores as usize == c {
                busy += th.3;
            }
        }
        let busy_ticks = (busy.min(1.0) * 100.0).round() as u32;
        cpus.push(CpuTicks {
            user: busy_ticks,
            idle: 100 - busy_ticks,
            ..Default::default()
        })
        .unwrap();
    }
    let mut total = CpuTicks::default();
    for c in &cpus {
        total.user += c.user;
        total.idle += c.idle;
    }
    let mut top: HVec<ProcSample, MAX_TOP_PROCS> = HVec::new();
    for (p, th, pid, frac) in &l.threads {
        let ticks = (frac * 100.0).round() as u32;
        let _ = top.push(ProcSample {
            pid: *pid,
            comm: hs(p),
            state: b'R',
            threads: 2,
            utime: ticks,
            stime: 0,
            run_delay_us: Some(1000),
            hottest_thread: Some(ThreadSample {
                tid: pid + 1,
                comm: if th == p { None } else { Some(hs(th)) },
                ticks,
            }),
            cmdline: None,
        });
    }
    let mut disks = HVec::new();
    for (d, util, mbs, aw) in &l.disks {
        let writes = (mbs * 1e6 / 131072.0).max(1.0) as u32;
        disks
            .push(DiskSample {
                disk: *d,
                writes,
                sectors_written: (mbs * 1e6 / 512.0) as u64,
                write_ms: (writes as f64 * aw) as u32,
                io_ms: (util * 1000.0) as u32,
                weighted_ms: (writes as f64 * aw) as u32,
                ..Default::default()
            })
            .unwrap();
    }
    let mut nics = HVec::new();
    for (i, (_, speed)) in h.nics.iter().enumerate() {
        let (rx, tx) = l
            .nics
            .iter()
            .find(|n| n.0 as usize == i)
            .map(|n| (n.1, n.2))
            .unwrap_or((0.0, 0.0));
        nics.push(NicSample {
            nic: i as u16,
            flags: if l.half_duplex {
                flags::LINK_UP
            } else {
                flags::LINK_UP | flags::FULL_DUPLEX
            },
            speed_mbit: *speed,
            rx_bytes: (rx * 1e6) as u64,
            tx_bytes: (tx * 1e6) as u64,
            ..Default::default()
        })
        .unwrap();
    }
    Sample {
        interval_us: 1_000_000,
        cpu_total: total,
        cpus,
        procs_running: 1,
        procs_blocked: 0,
        forks: 0,
        context_switches: 100,
        short_lived: 0,
        top,
        disks,
        nics,
        memory: Some(Memory {
            total_kib: h.mem_total_kib,
            free_kib: l.avail_kib / 2,
            available_kib: l.avail_kib,
            swap_total_kib: 1 << 20,
            swap_free_kib: 1 << 19,
            ..Default::default()
        }),
        vm: Some(VmActivity {
            swap_in_pages: l.swap_pages_ps / 2,
            swap_out_pages: l.swap_pages_ps / 2,
            major_faults: l.swap_pages_ps / 4,
            alloc_stalls: Some(l.alloc_stalls_ps),
            direct_scanned: Some(0),
        }),
        tcp: Some(TcpActivity::default()),
        mounts: HVec::new(),
        agent: AgentSelf {
            cpu_us: 150,
            rss_kib: 1000,
            clients: 1,
        },
    }
}

fn host_data(h: &Host, seconds: usize, load: impl Fn(usize) -> Load) -> HostData {
    let t0 = 1_764_460_800_000u64;
    HostData {
        name: h.name.to_string(),
        instances: vec![Instance {
            id: 1,
            hello: hello(h),
            clock: None,
        }],
        samples: (0..seconds)
            .map(|t| {
                TimedSample::new(
                    t0 + (t as u64 + 1) * 1000,
                    0,
                    t as u64 + 2,
                    &sample(h, &load(t), t),
                )
            })
            .collect(),
        events: Vec::new(),
        gaps: Vec::new(),
    }
}

fn atom(name: &'static str) -> Host {
    Host {
        name,
        cores: 4,
        disks: vec![
            ("sda", false),
            ("sdb", false),
            ("sdc", false),
            ("sdd", false),
            ("md2", true),
        ],
        nics: vec![("eth0", 1000), ("eth1", 1000)],
        mem_total_kib: 2_034_000,
    }
}

fn wd(name: &'static str) -> Host {
    Host {
        name,
        cores: 2,
        disks: vec![("sda", false), ("sdb", false), ("md1", true)],
        nics: vec![("egiga0", 1000)],
        mem_total_kib: 1_000_000,
    }
}

fn json(hosts: &[HostData]) -> serde_json::Value {
    serde_json::to_value(build(hosts, &Options::default())).unwrap()
}

#[test]
fn synology_replication_destination_thread_is_the_wall() {
    let src = host_data(&atom("src"), 300, |t| Load {
        threads: vec![("btrfs", "btrfs", 900, 0.25)],
        background: 0.05,
        disks: (0..4)
            .map(|d| (d, 0.13 + 0.05 * (d as f64), 24.0, 4.0))
            .collect(),
        nics: vec![(0, 1.0, 96.0 + (t % 5) as f64)],
        avail_kib: 1_200_000,
        ..Default::default()
    });
    let dst = host_data(&atom("dst"), 300, |t| Load {
        threads: vec![
            (
                "synoreplicad",
                "synoreplicad",
                4242,
                0.94 + 0.01 * (t % 4) as f64,
            ),
            ("btrfs", "btrfs", 4300, 0.18),
        ],
        background: 0.03,
        disks: (0..4)
            .map(|d| (d, 0.13 + 0.03 * (d as f64), 24.0, 5.0))
            .collect(),
        nics: vec![(0, 96.0 + (t % 5) as f64, 1.0)],
        avail_kib: 600_000,
        ..Default::default()
    });
    let r = json(&[src, dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert_eq!(b["host"], "dst");
    assert_eq!(b["process"], "synoreplicad");
    let u = b["utilization"].as_f64().unwrap();
    assert!((0.93..=0.98).contains(&u), "{u}");
    let ev = b["evidence"].to_string();
    assert!(ev.contains("headroom"), "{ev}");
    assert!(b["would_not_help"].to_string().contains("link aggregation"));
    assert_eq!(r["flow"]["from"], "src");
    assert_eq!(r["flow"]["to"], "dst");
    let sustained = r["flow"]["sustained_mb_s"].as_f64().unwrap();
    assert!((96.0..=100.0).contains(&sustained), "{sustained}");
    assert_eq!(r["flow"]["grade"], "excellent");
    assert_eq!(r["hosts"][1]["samples"], 300);
    assert!(r["gaps"].as_array().unwrap().is_empty());
}

#[test]
fn wd_ssh_one_core_pinned_by_ssh() {
    let src = host_data(&wd("src"), 120, |_| Load {
        threads: vec![
            ("sshd", "sshd", 700, 0.97),
            ("wdmcserverd", "wdmcserverd", 300, 0.2),
        ],
        disks: vec![(0, 0.12, 22.0, 4.5), (1, 0.11, 22.0, 4.5)],
        nics: vec![(0, 0.5, 23.0)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let dst = host_data(&wd("dst"), 120, |_| Load {
        threads: vec![("ssh", "ssh", 800, 0.6)],
        disks: vec![(0, 0.10, 22.0, 4.5)],
        nics: vec![(0, 23.0, 0.5)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let r = json(&[src, dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert_eq!(b["host"], "src");
    assert_eq!(b["process"], "sshd");
    assert_eq!(r["flow"]["grade"], "seriously_wrong");
    let help = b["would_not_help"].to_string();
    assert!(help.contains("rsync daemon mode"), "{help}");
    assert!(help.contains("CPU-bound on ssh encryption"), "{help}");
    // The indexer at 20% of a core during the transfer is named with its share.
    assert!(
        help.contains("pausing the indexers during the copy: on src `wdmcserverd` 20% of a core"),
        "{help}"
    );
    assert!(
        !help.contains("MTU") && !help.contains("half duplex"),
        "{help}"
    );
}

/// A one-core NAS (the emulated ARMv7 of tests/e2e/nas_vm.sh): dropbear decrypting at 83% of
/// the core, the pipe's reader and the kernel's network work taking the rest. The thread has
/// all the core leaves it: it is the wall, not "all cores". A thread starved to 60% by other
/// work on that core is not: there the core is (fewer jobs at once would help).
#[test]
fn one_core_full_mostly_one_thread_names_the_thread() {
    let one_core = |name| Host {
        name,
        cores: 1,
        disks: vec![("vda", false)],
        nics: vec![("eth0", 1000)],
        mem_total_kib: 250_000,
    };
    let nas = host_data(&one_core("nas"), 60, |_| Load {
        threads: vec![
            ("dropbear", "dropbear", 219, 0.83),
            ("cat", "cat", 220, 0.10),
        ],
        background: 0.06,
        nics: vec![(0, 5.4, 0.1)],
        avail_kib: 190_000,
        ..Default::default()
    });
    let r = json(&[nas]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert_eq!(b["host"], "nas");
    assert_eq!(b["process"], "dropbear");
    assert!(
        (0.8..=0.86).contains(&b["utilization"].as_f64().unwrap()),
        "{b:#}"
    );
    let help = b["would_not_help"].to_string();
    assert!(help.contains("CPU-bound on ssh encryption"), "{help}");
    assert!(b["evidence"].to_string().contains("one core"), "{b:#}");

    // A slower core (more of it to the kernel's network work): 69%, and still the wall.
    let slower = host_data(&one_core("nas"), 60, |_| Load {
        threads: vec![
            ("dropbear", "dropbear", 219, 0.69),
            ("cat", "cat", 220, 0.10),
        ],
        background: 0.21,
        nics: vec![(0, 5.0, 0.1)],
        avail_kib: 190_000,
        ..Default::default()
    });
    let r = json(&[slower]);
    assert_eq!(
        r["bottleneck"]["resource"], "cpu_thread",
        "{:#}",
        r["bottleneck"]
    );

    let starved = host_data(&one_core("nas"), 60, |_| Load {
        threads: vec![
            ("dropbear", "dropbear", 219, 0.60),
            ("par2", "par2", 300, 0.38),
        ],
        nics: vec![(0, 3.0, 0.1)],
        avail_kib: 190_000,
        ..Default::default()
    });
    let r = json(&[starved]);
    assert_eq!(
        r["bottleneck"]["resource"], "cpu_all",
        "{:#}",
        r["bottleneck"]
    );
}

#[test]
fn mtus_that_differ_and_half_duplex_are_said() {
    let load = |half: bool| {
        move |_| Load {
            threads: vec![("rsync", "rsync", 700, 0.3)],
            nics: vec![(0, 0.5, 40.0)],
            avail_kib: 300_000,
            half_duplex: half,
            ..Default::default()
        }
    };
    let src = host_data(&wd("src"), 60, load(false));
    let mut dst = host_data(&wd("dst"), 60, |_| Load {
        nics: vec![(0, 40.0, 0.5)],
        avail_kib: 300_000,
        ..Default::default()
    });
    dst.instances[0].hello.nics[0].mtu = 9000;
    let r = json(&[src, dst]);
    let help = r["bottleneck"]["would_not_help"].to_string();
    assert!(
        help.contains("the same MTU at both ends: src egiga0 has 1500, dst egiga0 has 9000"),
        "{help}"
    );
    assert!(!help.contains("half duplex"), "{help}");
    let src = host_data(&wd("src"), 60, load(true));
    let dst = host_data(&wd("dst"), 60, |_| Load {
        nics: vec![(0, 40.0, 0.5)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let r = json(&[src, dst]);
    let help = r["bottleneck"]["would_not_help"].to_string();
    assert!(help.contains("full duplex on src egiga0"), "{help}");
    assert!(!help.contains("MTU"), "{help}");
}

#[test]
fn both_ends_pinned_names_the_receiver_and_the_sender_as_also_at_its_ceiling() {
    // ssh encrypting on the sender at 97%, sshd decrypting on the receiver at 95%: a tie.
    let src = host_data(&wd("src"), 60, |_| Load {
        threads: vec![("ssh", "ssh", 4402, 0.97)],
        nics: vec![(0, 0.6, 22.5)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let dst = host_data(&wd("dst"), 60, |_| Load {
        threads: vec![("sshd", "sshd", 4410, 0.95)],
        nics: vec![(0, 22.5, 0.6)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let r = json(&[src.clone(), dst.clone()]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert_eq!(b["host"], "dst");
    assert_eq!(b["process"], "sshd");
    let ev = b["evidence"].to_string();
    assert!(ev.contains("also at its ceiling: src"), "{ev}");
    assert!(!b["ruled_out"].to_string().contains("`ssh`"), "{b:#}");
    // Order of the hosts does not matter.
    assert_eq!(json(&[dst, src])["bottleneck"]["host"], "dst");

    // A clearly hotter sender is named even though it is not the receiver.
    let src = host_data(&wd("src"), 60, |_| Load {
        threads: vec![("ssh", "ssh", 4402, 0.99)],
        nics: vec![(0, 0.6, 22.5)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let dst = host_data(&wd("dst"), 60, |_| Load {
        threads: vec![("sshd", "sshd", 4410, 0.86)],
        nics: vec![(0, 22.5, 0.6)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let r = json(&[src, dst]);
    assert_eq!(r["bottleneck"]["host"], "src", "{:#}", r["bottleneck"]);
    assert_eq!(r["bottleneck"]["process"], "ssh");
}

#[test]
fn pegged_ssh_is_the_wall_even_when_other_work_fills_every_core() {
    // The WD case with the indexers eating the other core: both boxes read 100% busy, ssh on
    // the sender at 97% of a core is a single-threaded process: it is the wall, not "all cores"
    // (more cores would not speed it). Seen for real in tests/e2e/real_rsync_ssh.sh on a
    // machine shared with builds.
    let src = host_data(&wd("src"), 60, |_| Load {
        threads: vec![("ssh", "ssh", 4402, 0.97)],
        background: 1.0,
        nics: vec![(0, 0.6, 45.0)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let dst = host_data(&wd("dst"), 60, |_| Load {
        threads: vec![("sshd", "sshd", 4410, 0.16)],
        background: 1.0,
        nics: vec![(0, 45.0, 0.6)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let r = json(&[src, dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert_eq!(b["host"], "src");
    assert_eq!(b["process"], "ssh");
    assert!(
        b["evidence"].to_string().contains("also at its ceiling"),
        "{b:#}"
    );
}

#[test]
fn light_swapping_does_not_hide_a_pegged_thread_but_a_storm_does() {
    let load = |swap: u32, stalls: u32| {
        move |_| Load {
            threads: vec![("synoreplicad", "synoreplicad", 8123, 0.96)],
            nics: vec![(0, 97.0, 1.7)],
            swap_pages_ps: swap,
            alloc_stalls_ps: stalls,
            avail_kib: 60_000,
            ..Default::default()
        }
    };
    let r = json(&[host_data(&atom("dst"), 60, load(300, 0))]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert!(b["evidence"].to_string().contains("swapping 300"), "{b:#}");
    let r = json(&[host_data(&atom("dst"), 60, load(300, 0))]);
    assert_eq!(r["bottleneck"]["process"], "synoreplicad");
    // Light swapping alone is still named.
    let r = json(&[host_data(&atom("dst"), 60, |_| Load {
        nics: vec![(0, 20.0, 0.1)],
        swap_pages_ps: 400,
        avail_kib: 40_000,
        ..Default::default()
    })]);
    assert_eq!(
        r["bottleneck"]["resource"], "memory",
        "{:#}",
        r["bottleneck"]
    );
    // A storm wins over the thread it slows.
    let r = json(&[host_data(&atom("dst"), 60, load(4000, 0))]);
    assert_eq!(
        r["bottleneck"]["resource"], "memory",
        "{:#}",
        r["bottleneck"]
    );
    let r = json(&[host_data(&atom("dst"), 60, load(300, 40))]);
    assert_eq!(
        r["bottleneck"]["resource"], "memory",
        "{:#}",
        r["bottleneck"]
    );
}

#[test]
fn slow_link_mostly_full_is_the_wall_and_a_bridge_does_not_hide_the_nic() {
    let mut h = atom("dst");
    // br0 over eth0: the same bytes, no link speed; eth0 negotiated at 100 Mb/s.
    h.nics = vec![("br0", 0), ("eth0", 100)];
    let dst = host_data(&h, 60, |_| Load {
        nics: vec![(0, 8.0, 0.2), (1, 8.0, 0.2)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "nic", "{b:#}");
    assert_eq!(b["device"], "eth0");
    assert_eq!(r["flow"]["to_device"], "eth0", "{:#}", r["flow"]);
    assert_eq!(r["flow"]["link_mbit"], 100);
    // The same 8 MB/s on a gigabit link is nothing.
    let mut h = atom("dst");
    h.nics = vec![("eth0", 1000)];
    let r = json(&[host_data(&h, 60, |_| Load {
        nics: vec![(0, 8.0, 0.2)],
        avail_kib: 900_000,
        ..Default::default()
    })]);
    assert_eq!(r["bottleneck"]["resource"], "none", "{:#}", r["bottleneck"]);
}

#[test]
fn lumpy_counters_are_judged_over_a_few_seconds() {
    // What short intervals see of a fast-stepping source (0.5x / 1.5x the rate in turn) and a
    // process re-read only at every 5th scan (its CPU of 5 intervals in one sample, none in
    // the 4 before): per-sample medians would say 0% and 48 MB/s; the truth is 96% and 97 MB/s.
    let dst = host_data(&atom("dst"), 120, |t| Load {
        threads: if t % 5 == 4 {
            vec![("synoreplicad", "synoreplicad", 8123, 0.96 * 5.0)]
        } else {
            Vec::new()
        },
        disks: vec![(0, 0.2, 32.0, 6.0)],
        nics: vec![(0, if t % 2 == 0 { 48.5 } else { 145.5 }, 1.7)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "cpu_thread", "{b:#}");
    assert_eq!(b["process"], "synoreplicad");
    let u = b["utilization"].as_f64().unwrap();
    assert!((0.9..=1.0).contains(&u), "{u}");
    let f = &r["flow"];
    let sustained = f["sustained_mb_s"].as_f64().unwrap();
    assert!((95.0..=99.0).contains(&sustained), "{f}");
    assert_eq!(r["hosts"][0]["samples"], 120, "raw sample count");
}

#[test]
fn a_full_link_binds_even_with_every_core_busy() {
    // Other work fills the box (builds, a scrub) while the one flow runs at the link's payload
    // ceiling: the link is what stops the flow.
    let mut h = atom("dst");
    h.nics = vec![("eth0", 100)];
    let dst = host_data(&h, 60, |_| Load {
        threads: vec![("iperf3", "iperf3", 900, 0.02)],
        background: 1.0,
        nics: vec![(0, 11.9, 0.2)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "nic", "{b:#}");
    assert!(
        b["evidence"].to_string().contains("also at its ceiling"),
        "{b:#}"
    );
    // A link at 85% of its line rate (the field's first case) does not outrank a pegged thread.
    let dst = host_data(&atom("dst"), 60, |_| Load {
        threads: vec![("synoreplicad", "synoreplicad", 8123, 0.94)],
        nics: vec![(0, 106.0, 1.7)],
        avail_kib: 900_000,
        ..Default::default()
    });
    assert_eq!(json(&[dst])["bottleneck"]["resource"], "cpu_thread");
}

#[test]
fn disk_bound_behind_md_is_judged_by_members() {
    let dst = host_data(&atom("dst"), 120, |_| Load {
        threads: vec![("smbd", "smbd", 500, 0.3)],
        disks: vec![
            (0, 0.98, 10.0, 80.0),
            (1, 0.97, 10.0, 75.0),
            (2, 0.96, 10.0, 70.0),
            (3, 0.97, 10.0, 70.0),
        ],
        nics: vec![(0, 40.0, 0.5)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "disk", "{b:#}");
    assert_eq!(b["device"], "sda");
    assert!(
        b["evidence"]
            .to_string()
            .contains("md arrays md2 judged by their members")
    );
}

#[test]
fn link_at_100_mbit_is_the_wall() {
    let mut h = atom("dst");
    h.nics = vec![("eth0", 100)];
    let dst = host_data(&h, 60, |_| Load {
        nics: vec![(0, 11.5, 0.2)],
        disks: vec![(0, 0.05, 11.0, 3.0)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "nic", "{b:#}");
    assert_eq!(b["device"], "eth0");
    assert!(b["evidence"].to_string().contains("negotiated at 100 Mb/s"));
    assert!(r["flow"]["grade"].is_null());
}

#[test]
fn swap_storm_is_memory() {
    let dst = host_data(&atom("dst"), 60, |_| Load {
        threads: vec![("rsync", "rsync", 500, 0.2)],
        disks: vec![(0, 0.9, 5.0, 200.0)],
        nics: vec![(0, 3.0, 0.1)],
        swap_pages_ps: 3000,
        alloc_stalls_ps: 40,
        avail_kib: 20_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    assert_eq!(
        r["bottleneck"]["resource"], "memory",
        "{:#}",
        r["bottleneck"]
    );
}

#[test]
fn all_cores_busy_beats_one_thread() {
    let dst = host_data(&atom("dst"), 60, |_| Load {
        threads: vec![
            ("par2", "par2", 100, 1.0),
            ("par2", "par2", 101, 1.0),
            ("par2", "par2", 102, 1.0),
            ("par2", "par2", 103, 1.0),
        ],
        nics: vec![(0, 20.0, 0.1)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    assert_eq!(
        r["bottleneck"]["resource"], "cpu_all",
        "{:#}",
        r["bottleneck"]
    );
}

#[test]
fn idle_pair_is_none_and_says_what_was_ruled_out() {
    let idle = |n| {
        host_data(&atom(n), 60, |_| Load {
            background: 0.02,
            avail_kib: 1_500_000,
            ..Default::default()
        })
    };
    let r = json(&[idle("src"), idle("dst")]);
    let b = &r["bottleneck"];
    assert_eq!(b["resource"], "none");
    assert!(b["host"].is_null());
    assert!(b["evidence"].to_string().contains("idle"));
    assert!(r["flow"].is_null());
}

#[test]
fn early_peak_is_told_apart_from_sustained() {
    let dst = host_data(&atom("dst"), 120, |t| Load {
        nics: vec![(0, if t < 10 { 62.0 } else { 40.0 }, 0.1)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let r = json(&[dst]);
    let f = &r["flow"];
    assert!((f["peak_mb_s"].as_f64().unwrap() - 62.0).abs() < 0.5, "{f}");
    assert!(
        (f["sustained_mb_s"].as_f64().unwrap() - 40.0).abs() < 0.5,
        "{f}"
    );
    assert_eq!(f["grade"], "misconfigured");
}

#[test]
fn restarting_process_is_a_pattern_with_context() {
    let mut src = host_data(&atom("src"), 600, |_| Load {
        nics: vec![(0, 0.1, 50.0)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let t0 = src.samples[0].time_ms;
    let proc_info = |pid: u32, token: u32| ProcessInfo {
        pid,
        ppid: 1,
        comm: hs("btrfs"),
        cmdline: hs(&format!("btrfs send -k {token} /volume1/@snap")),
        start_ticks: pid as u64,
    };
    for k in 0..3u32 {
        let died = t0 + 150_000 * (k as u64 + 1);
        src.events.push(TimedEvent::new(
            died,
            0,
            0,
            &Event::ProcessExit(ProcessExit {
                process: proc_info(1000 + k, 28399387 + k),
                lifetime_ms: 150_000,
                cpu_ticks: 3000,
            }),
        ));
        src.events.push(TimedEvent::new(
            died + 2000,
            0,
            0,
            &Event::ProcessStart(proc_info(1001 + k, 28399388 + k)),
        ));
    }
    let r = json(&[src]);
    let p = &r["patterns"][0];
    assert_eq!(p["process"], "btrfs", "{r:#}");
    assert_eq!(p["restarts"], 3);
    assert_eq!(p["every_s"], 150.0);
    assert_eq!(p["new_arguments_each_time"], true);
    assert_eq!(p["deaths"].as_array().unwrap().len(), 3);
    // Nothing on the network, link or memory before the deaths: the hint says so.
    assert!(
        p["before_deaths"][0]
            .as_str()
            .unwrap()
            .starts_with("no network"),
        "{p:#}"
    );
    let kinds: Vec<&str> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "process_exit").count(), 3);
}

#[test]
fn first_run_without_a_token_and_resumes_with_one_are_one_pattern() {
    let mut h = host_data(&atom("src"), 300, |_| Load {
        nics: vec![(0, 0.1, 50.0)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let t0 = h.samples[0].time_ms;
    let info = |pid: u32, cmd: String| ProcessInfo {
        pid,
        ppid: 1,
        comm: hs("btrfs"),
        cmdline: hs(&cmd),
        start_ticks: pid as u64,
    };
    let ev = |time_ms: u64, event: Event| TimedEvent::new(time_ms, 0, 0, &event);
    // 1st run without -k; the resumes carry a token; one resume is up before the death is seen.
    let cmds = [
        "btrfs send -p /v/a /v/b".to_string(),
        "btrfs send -p /v/a /v/b -k 100".to_string(),
        "btrfs send -p /v/a /v/b -k 205".to_string(),
    ];
    for (k, cmd) in cmds.iter().enumerate() {
        let died = t0 + 60_000 * (k as u64 + 1);
        h.events.push(ev(
            died,
            Event::ProcessExit(ProcessExit {
                process: info(1000 + k as u32, cmd.clone()),
                lifetime_ms: 60_000,
                cpu_ticks: 100,
            }),
        ));
        let next = format!("btrfs send -p /v/a /v/b -k {}", 100 + 105 * (k + 1));
        let start_at = if k == 1 { died - 1000 } else { died + 500 };
        h.events.push(ev(
            start_at,
            Event::ProcessStart(info(1001 + k as u32, next)),
        ));
    }
    // An unrelated btrfs command that exits once is no pattern.
    h.events.push(ev(
        t0 + 100_000,
        Event::ProcessExit(ProcessExit {
            process: info(3000, "btrfs scrub status /v".into()),
            lifetime_ms: 9_000,
            cpu_ticks: 1,
        }),
    ));
    h.events.sort_by_key(|e| e.time_ms);
    let r = json(&[h]);
    let p = r["patterns"].as_array().unwrap();
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(p[0]["restarts"], 3, "{:#}", p[0]);
    assert_eq!(p[0]["deaths"].as_array().unwrap().len(), 3);
    assert_eq!(p[0]["command"], "btrfs send -p /v/a /v/b -k N");
    assert_eq!(p[0]["every_s"], 60.0);
}

#[test]
fn deaths_after_tcp_bursts_point_at_the_network() {
    let mut h = host_data(&atom("src"), 400, |_| Load {
        nics: vec![(0, 0.1, 50.0)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let t0 = h.samples[0].time_ms;
    let deaths: Vec<u64> = (1..=3).map(|k| t0 + k * 120_000).collect();
    // 0.5 retransmits/s usually; 30/s in the 10 s before each death.
    for (i, ts) in h.samples.iter_mut().enumerate() {
        let mut smp = ts.decode().unwrap();
        let burst = deaths
            .iter()
            .any(|&d| ts.time_ms <= d && ts.time_ms + 10_000 > d);
        smp.tcp = Some(TcpActivity {
            retrans_segs: if burst { 30 } else { (i % 2) as u32 },
            ..Default::default()
        });
        *ts = TimedSample::new(ts.time_ms, ts.instance, ts.seq, &smp);
    }
    for (k, &d) in deaths.iter().enumerate() {
        let info = |pid: u32| ProcessInfo {
            pid,
            ppid: 1,
            comm: hs("btrfs"),
            cmdline: hs(&format!("btrfs send -k {} /v", 100 + pid)),
            start_ticks: pid as u64,
        };
        h.events.push(TimedEvent::new(
            d,
            0,
            0,
            &Event::ProcessExit(ProcessExit {
                process: info(500 + k as u32),
                lifetime_ms: 118_000,
                cpu_ticks: 100,
            }),
        ));
        h.events.push(TimedEvent::new(
            d + 2_000,
            0,
            0,
            &Event::ProcessStart(info(501 + k as u32)),
        ));
    }
    let r = json(&[h]);
    let p = &r["patterns"][0];
    let hint = p["before_deaths"][0].as_str().unwrap();
    assert!(
        hint.starts_with("before 3 of 3 deaths: TCP retransmits"),
        "{p:#}"
    );
    assert!(hint.contains("usually 0.5/s"), "{hint}");
    assert_eq!(p["deaths"][0]["window_s"], 59.0);
    assert!(p["summary"].as_str().unwrap().contains("a network problem"));
}

#[test]
fn progress_and_eta_from_a_sampled_mount() {
    let mut dst = host_data(&atom("dst"), 600, |_| Load {
        nics: vec![(0, 97.0, 1.7)],
        avail_kib: 900_000,
        ..Default::default()
    });
    // The agent's --mount /volume1: 2 TB used at the start, 97 MB/s landing.
    dst.instances[0].hello.mounts.push(hs("/volume1")).unwrap();
    for (k, ts) in dst.samples.iter_mut().enumerate() {
        let mut smp = ts.decode().unwrap();
        smp.mounts
            .push(MountSample {
                mount: 0,
                used_bytes: 2_000_000_000_000 + k as u64 * 97_000_000,
                free_bytes: 1 << 40,
            })
            .unwrap();
        *ts = TimedSample::new(ts.time_ms, ts.instance, ts.seq, &smp);
    }
    let r = build(
        &[dst],
        &Options {
            expect_bytes: Some(11_000_000_000_000),
            ..Default::default()
        },
    );
    let p = &r.progress[0];
    assert_eq!(p.mount, "/volume1");
    assert_eq!(p.landed_bytes, 599.0 * 97e6);
    assert!((p.rate_mb_s - 97.0).abs() < 0.1, "{}", p.rate_mb_s);
    let eta = p.eta_seconds.unwrap();
    let want = (11e12 - 599.0 * 97e6) / 97e6;
    assert!((eta - want).abs() < want * 0.01, "{eta} vs {want}");
    let text = nasprobe_analysis::text::render(&r);
    assert!(text.contains("Progress on dst /volume1"), "{text}");
}

#[test]
fn text_report_leads_with_the_verdict() {
    let dst = host_data(&wd("dst"), 60, |_| Load {
        threads: vec![("sshd", "sshd", 700, 0.97)],
        disks: vec![(0, 0.12, 22.0, 4.5)],
        nics: vec![(0, 23.0, 0.5)],
        avail_kib: 300_000,
        ..Default::default()
    });
    let r = build(&[dst], &Options::default());
    let text = nasprobe_analysis::text::render(&r);
    if std::env::var_os("NASPROBE_PRINT").is_some() {
        println!("{text}");
    }
    let first = text.lines().find(|l| l.starts_with("Verdict")).unwrap();
    assert!(
        first.contains("dst") && first.contains("sshd") && first.contains("97%"),
        "{first}"
    );
}

/// A shell loop that starts and ends cleanly every 10 s (now and then with status 1) beside a
/// real transfer, and `sleep N` with another N each time: routine, one line each at the end;
/// an `rsync` killed twice stays a pattern.
#[test]
fn clean_shell_loops_are_one_line_at_the_end_and_kills_stay_patterns() {
    let mut h = host_data(&atom("src"), 300, |_| Load {
        nics: vec![(0, 0.1, 50.0)],
        avail_kib: 900_000,
        ..Default::default()
    });
    let t0 = h.samples[0].time_ms;
    let info = |pid: u32, comm: &str, cmd: &str| ProcessInfo {
        pid,
        ppid: 1,
        comm: hs(comm),
        cmdline: hs(cmd),
        start_ticks: pid as u64,
    };
    let end = |t: u64, p: ProcessInfo, code: Option<u8>, signal: Option<u8>| {
        TimedEvent::new(
            t,
            0,
            0,
            &Event::ProcessEnd(ProcessEnd {
                exit: ProcessExit {
                    process: p,
                    lifetime_ms: 2_000,
                    cpu_ticks: 1,
                },
                status: ExitStatus {
                    seen: ExitSeen::Kernel,
                    code,
                    signal,
                    core_dumped: false,
                    oom_killed: false,
                    before_ms: 0,
                },
            }),
        )
    };
    let start = |t: u64, p: ProcessInfo| TimedEvent::new(t, 0, 0, &Event::ProcessStart(p));
    for k in 0..17u32 {
        let t = t0 + 10_000 * (k as u64 + 1);
        let code = if k == 4 || k == 11 { 1 } else { 0 };
        h.events.push(end(
            t,
            info(2000 + k, "bash", "bash /dev/fd/63"),
            Some(code),
            None,
        ));
        h.events
            .push(start(t + 500, info(2001 + k, "bash", "bash /dev/fd/63")));
        let n = [3, 5, 4][k as usize % 3];
        let sleep = format!("sleep {n}");
        h.events
            .push(end(t + 100, info(5000 + k, "sleep", &sleep), Some(0), None));
        h.events
            .push(start(t + 600, info(5001 + k, "sleep", &sleep)));
    }
    for k in 0..3u32 {
        let t = t0 + 70_000 * (k as u64 + 1);
        let cmd = format!("timeout 5 strace -p {}", 4101 + 7 * k);
        h.events
            .push(end(t, info(7000 + k, "rsync", &cmd), None, Some(9)));
        h.events.push(start(t + 500, info(7001 + k, "rsync", &cmd)));
    }
    h.events.sort_by_key(|e| e.time_ms);
    let r = build(&[h], &Options::default());
    assert_eq!(r.patterns.len(), 1, "{:#?}", r.patterns);
    let p = &r.patterns[0];
    assert_eq!((p.process.as_str(), p.cause), ("rsync", "killed"));
    // A pid that changes is new arguments, not a resume token.
    assert!(p.new_arguments_each_time && !p.resume_token, "{p:#?}");
    assert!(
        p.summary.contains("with new arguments each time") && !p.summary.contains("token"),
        "{}",
        p.summary
    );
    let lines: Vec<&str> = r.routine_exits.iter().map(|x| x.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "src: `bash`: 15 clean exits, 2 with status 1",
            "src: `sleep`: 17 clean exits"
        ]
    );
    let text = nasprobe_analysis::text::render(&r);
    assert!(!text.contains("Pattern: src: `bash"), "{text}");
    assert!(!text.contains("Pattern: src: `sleep"), "{text}");
    // The loop is one line, at the end: after the hosts' table.
    let table = text.find("hottest thread").unwrap();
    let routine = text.find("  - src: `bash`: 15 clean exits").unwrap();
    assert!(routine > table, "{text}");
    assert!(text.contains("Pattern: src: `timeout N strace"), "{text}");
}
