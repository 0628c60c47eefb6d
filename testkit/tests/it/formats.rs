//! The generated files have the kernel flavours' formats.

use crate::common::*;
use nasprobe_testkit::builtins::{BuiltinOptions, builtin};
use nasprobe_testkit::render;
use nasprobe_testkit::*;

fn host(kernel: Kernel) -> Host {
    Host::new("h", kernel)
        .cores(3)
        .disk(Disk::new("sda").util(20.0).rw(10.0, 5.0).partitions(2))
        .disk(Disk::new("sdb").util(20.0).rw(10.0, 5.0).partitions(2))
        .md(MdArray::new("md1", "raid1", &["sda2", "sdb2"]))
        .nic(Nic::new("eth0").speed(1000).rx(50.0).tx(1.0))
        .process(
            Process::new(100, "a) b (c")
                .cmdline(&["a) b (c", "--x", "y z"])
                .thread(Thread::new(30.0))
                .thread(Thread::new(5.0).comm("worker")),
        )
        .process(Process::new(200, "averyveryverylongname").cpu(1.0))
        .process(Process::kthread(2, "kthreadd", 0.0))
}

fn sim(kernel: Kernel) -> HostSim {
    let mut s = HostSim::new(&host(kernel), 1, 1_700_000_000);
    s.advance_to(3.0);
    s
}

const ALL: [Kernel; 3] = [Kernel::K3_10, Kernel::K4_4, Kernel::K6];

#[test]
fn proc_stat_cpu_lines_have_ten_fields_on_every_flavour() {
    for k in ALL {
        let text = render::proc_stat(&sim(k));
        let cpus = cpu_lines(&text);
        assert_eq!(cpus.len(), 4, "{k:?}: cpu + 3 cores");
        assert_eq!(cpus[0].0, "cpu");
        assert!(text.starts_with("cpu  "), "aggregate line has two spaces");
        for (name, f) in &cpus {
            assert_eq!(
                f.len(),
                10,
                "{k:?} {name}: user nice system idle iowait irq softirq steal guest guest_nice"
            );
        }
        // The cpu line is the sum of the per-core lines.
        for i in 0..10 {
            assert_eq!(cpus[0].1[i], cpus[1..].iter().map(|c| c.1[i]).sum::<u64>());
        }
        for key in [
            "intr ",
            "ctxt ",
            "btime 1",
            "processes ",
            "procs_running ",
            "procs_blocked ",
            "softirq ",
        ] {
            assert!(text.lines().any(|l| l.starts_with(key)), "{k:?}: {key}");
        }
    }
}

#[test]
fn diskstats_field_counts_per_flavour() {
    for (k, n) in [(Kernel::K3_10, 14), (Kernel::K4_4, 14), (Kernel::K6, 20)] {
        let s = sim(k);
        let text = render::diskstats(&s);
        for line in text.lines() {
            assert_eq!(line.split_whitespace().count(), n, "{k:?}: {line}");
        }
        for b in render::block_devices(&s) {
            let st = render::sys_block_stat(&s, &b.rates);
            assert_eq!(
                st.split_whitespace().count(),
                n - 3,
                "{k:?} sys/block/{}/stat",
                b.name
            );
        }
        // md reports throughput but no busy time.
        let md = diskstats(&text, "md1");
        assert!(md[2] > 0 && md[6] > 0, "md1 sectors");
        assert_eq!(md[9], 0, "md io_ticks");
        assert_eq!(md[3] + md[7] + md[10], 0, "md ticks");
        // the active partition carries the disk's I/O, the other is idle
        assert_eq!(diskstats(&text, "sda2")[9], diskstats(&text, "sda")[9]);
        assert_eq!(diskstats(&text, "sda1")[9], 0);
    }
}

#[test]
fn pid_stat_has_52_fields_and_survives_odd_comms() {
    for k in ALL {
        let s = sim(k);
        for p in s.procs.values() {
            let files = render::pid_files(&s, p);
            for (rel, data) in &files {
                if rel == "stat" || rel.ends_with("/stat") {
                    let line = std::str::from_utf8(data).unwrap();
                    assert!(line.ends_with('\n'));
                    let (comm, f) = stat_fields(line.trim_end());
                    assert_eq!(f.len(), 52, "{k:?} {rel}: {line}");
                    assert!(comm.len() <= 15);
                    assert!(f[38].parse::<u32>().unwrap() < 3, "processor field");
                }
            }
            let comm = files.iter().find(|(r, _)| r == "comm").unwrap();
            assert!(comm.1.len() <= 16 && comm.1.ends_with(b"\n"));
        }
        let p = &s.procs[&100];
        let (comm, f) = stat_fields(&render::pid_stat(&s, p, &p.threads[0], true));
        assert_eq!(comm, "a) b (c");
        assert_eq!(f[19], "2", "num_threads");
        assert_eq!(
            render::kernel_comm("averyveryverylongname"),
            "averyveryverylo"
        );
        assert_eq!(render::cmdline(p), b"a) b (c\0--x\0y z\0");
        let kt = &s.procs[&2];
        assert!(
            render::cmdline(kt).is_empty(),
            "kernel threads have an empty cmdline"
        );
    }
    let mut h = host(Kernel::K6);
    h.pid_stat_fields = Some(44);
    let s = HostSim::new(&h, 1, 0);
    let p = &s.procs[&100];
    assert_eq!(
        stat_fields(&render::pid_stat(&s, p, &p.threads[0], true))
            .1
            .len(),
        44
    );
}

#[test]
fn schedstat_absent_on_3_10_by_default() {
    for (k, want) in [
        (Kernel::K3_10, false),
        (Kernel::K4_4, true),
        (Kernel::K6, true),
    ] {
        let s = sim(k);
        let files = render::pid_files(&s, &s.procs[&100]);
        assert_eq!(files.iter().any(|(r, _)| r == "schedstat"), want, "{k:?}");
        assert_eq!(
            files.iter().any(|(r, _)| r.ends_with("/schedstat")),
            want,
            "{k:?}"
        );
        if want {
            let (_, d) = files.iter().find(|(r, _)| r == "schedstat").unwrap();
            assert_eq!(
                std::str::from_utf8(d).unwrap().split_whitespace().count(),
                3
            );
        }
    }
}

#[test]
fn meminfo_lines_and_mem_available() {
    for k in ALL {
        let text = render::meminfo(&sim(k));
        assert_eq!(text.contains("MemAvailable:"), k != Kernel::K3_10, "{k:?}");
        for line in text.lines() {
            let (name, rest) = line.split_once(':').unwrap();
            assert!(!name.contains(' '), "{line}");
            let rest = rest.trim_start();
            let num = rest.strip_suffix(" kB").unwrap_or(rest);
            num.parse::<u64>()
                .unwrap_or_else(|_| panic!("{k:?}: {line}"));
            assert!(
                line.len() >= 24,
                "value right-aligned in 8 columns after a 16-column label: {line}"
            );
        }
    }
}

#[test]
fn net_files_parse() {
    for k in ALL {
        let s = sim(k);
        let dev = render::net_dev(&s);
        assert!(dev.starts_with("Inter-|"));
        let (rx, _) = net_dev_bytes(&dev, "eth0");
        assert!(rx > 0);
        net_dev_bytes(&dev, "lo");
        let snmp_text = render::net_snmp(&s);
        for prefix in ["Ip", "Icmp", "Tcp", "Udp", "UdpLite"] {
            assert_eq!(
                snmp_text
                    .lines()
                    .filter(|l| l.starts_with(&format!("{prefix}:")))
                    .count(),
                2,
                "{k:?} {prefix}"
            );
        }
        assert_eq!(snmp(&snmp_text, "Tcp", "MaxConn"), -1);
        snmp(&snmp_text, "Tcp", "RetransSegs");
        let ns = render::net_netstat(&s);
        snmp(&ns, "TcpExt", "TCPTimeouts");
        snmp(&ns, "IpExt", "InOctets");
        let vm = render::vmstat(&s);
        for key in ["pswpin ", "pswpout ", "pgmajfault ", "pgpgin "] {
            assert!(vm.lines().any(|l| l.starts_with(key)), "{k:?} {key}");
        }
        assert_eq!(
            vm.lines().any(|l| l.starts_with("allocstall ")),
            k != Kernel::K6
        );
        assert_eq!(
            vm.lines().any(|l| l.starts_with("allocstall_normal ")),
            k == Kernel::K6
        );
        let la = render::loadavg(&s);
        assert_eq!(la.split_whitespace().count(), 5, "{la}");
        let up = render::uptime(&s);
        assert_eq!(up.split_whitespace().count(), 2);
        assert_eq!(render::boot_id(&s).trim().len(), 36);
    }
}

#[test]
fn sysfs_tree_of_a_nas() {
    let dir = tempdir("sysfs");
    let scn = builtin("synology-replication", &BuiltinOptions::default()).unwrap();
    let r = Runner::new(&scn, &dir, 1_700_000_000).unwrap();
    let paths = r.paths();
    assert_eq!(
        paths.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["src", "dst"]
    );
    let sys = &paths[1].sys_root;
    assert_eq!(read(&sys.join("class/net/eth0/speed")), "1000\n");
    assert_eq!(read(&sys.join("class/net/eth0/duplex")), "full\n");
    assert_eq!(read(&sys.join("class/net/eth0/operstate")), "up\n");
    assert_eq!(read(&sys.join("class/net/eth0/mtu")), "1500\n");
    assert_eq!(read(&sys.join("class/net/eth1/operstate")), "down\n");
    assert!(
        !sys.join("class/net/eth1/speed").exists(),
        "speed unreadable while admin down"
    );
    assert_eq!(read(&sys.join("block/sda/queue/rotational")), "1\n");
    assert_eq!(read(&sys.join("block/md2/md/level")), "raid5\n");
    let mut slaves: Vec<String> = std::fs::read_dir(sys.join("block/md2/slaves"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    slaves.sort();
    assert_eq!(slaves, ["sda3", "sdb3", "sdc3", "sdd3"]);
    // the slave links resolve to the partition directory
    assert!(sys.join("block/md2/slaves/sda3/stat").exists());
    assert_eq!(read(&sys.join("block/md2/slaves/sda3/partition")), "3\n");
    let src_sys = &paths[0].sys_root;
    assert_eq!(
        read(&src_sys.join("class/net/bond0/bonding/slaves")),
        "eth0 eth1\n"
    );
    assert_eq!(read(&src_sys.join("class/net/bond0/speed")), "2000\n");
    assert!(src_sys.join("class/net/eth0/master").exists());
    let proc = &paths[1].proc_root;
    for f in [
        "stat",
        "meminfo",
        "vmstat",
        "diskstats",
        "net/dev",
        "net/snmp",
        "net/netstat",
        "loadavg",
        "uptime",
        "sys/kernel/random/boot_id",
        "mdstat",
        "cpuinfo",
    ] {
        assert!(proc.join(f).is_file(), "{f}");
    }
    assert!(read(&proc.join("cpuinfo")).contains("C2538"));
    assert_eq!(read(&proc.join("8123/task/8131/comm")), "synoreplicad\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn builtins_round_trip_through_json() {
    for name in builtins::NAMES {
        let s = builtin(
            name,
            &BuiltinOptions {
                procs: 50,
                ..Default::default()
            },
        )
        .unwrap();
        s.validate().unwrap();
        let json = s.to_json();
        let back = Scenario::from_json(&json).unwrap();
        assert_eq!(back.to_json(), json, "{name}");
    }
    let small = r#"{"name":"t","hosts":[{"name":"a","kernel":"k3_10","cores":2,
        "nics":[{"name":"egiga0","speed_mbit":1000,"tx_mbs":22}],
        "processes":[{"pid":300,"comm":"ssh","threads":[{"cpu_pct":97}]}]}]}"#;
    let s = Scenario::from_json(small).unwrap();
    assert_eq!(s.hosts[0].kernel, Kernel::K3_10);
    assert_eq!(s.hosts[0].nics[0].duplex, "full");
    assert!(
        Scenario::from_json(r#"{"hosts":[{"name":"a","corez":2}]}"#).is_err(),
        "unknown keys are refused"
    );
}

use nasprobe_testkit::builtins;
