//! Parsers and the sampler over the fixture trees of agent/tests/data: a real 6.18 capture and
//! generated 3.10 (WD My Cloud, armv7) and 4.4 (Synology DSM, Atom) trees.

use std::path::{Path, PathBuf};

use nasprobe_agent::config::{Config, ScanPolicy};
use nasprobe_agent::parse::{ParseError, cpu, disk, mem, net, pid, sysfs};
use nasprobe_agent::sampler::Sampler;
use nasprobe_proto::{Event, Hello, Sample, flags};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

const V310: &str = "linux-3.10.39-armv7-wdmycloud";
const V44: &str = "linux-4.4.59-x86_64-synology";
const V618: &str = "linux-6.18-x86_64-capture";

fn sampler_over(tree: &Path) -> (Sampler, Hello) {
    let cfg = Config {
        proc_root: tree.join("proc"),
        sys_root: tree.join("sys"),
        scan: ScanPolicy::All,
        ..Config::default()
    };
    let s = Sampler::new(&cfg);
    let mut h = nasprobe_proto::Hello::default();
    s.fill_hello(&mut h);
    (s, h)
}

fn two_samples(s: &mut Sampler) -> (Sample, Vec<Event>) {
    let mut out = nasprobe_proto::Sample::default();
    let mut ev = Vec::new();
    assert!(!s.sample(&mut out, &mut |e| ev.push(e)));
    assert!(s.sample(&mut out, &mut |e| ev.push(e)));
    (out, ev)
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    it.collect()
}

// ------------------------------------------------------------------ 3.10 armv7 WD My Cloud

#[test]
fn v310_parsers() {
    let mut st = cpu::ProcStat::default();
    cpu::parse_stat(&read(&format!("{V310}/proc/stat")), &mut st).unwrap();
    assert_eq!(st.cpus.len(), 2);
    assert_eq!(st.total.unwrap()[cpu::IOWAIT], 410233);
    assert_eq!((st.processes, st.procs_blocked), (Some(1212331), Some(1)));

    let m = mem::parse_meminfo(&read(&format!("{V310}/proc/meminfo"))).unwrap();
    assert_eq!(m.available, None, "3.10 has no MemAvailable");
    // free 40120 - 6144 + file 681716 - 5120 + sreclaimable 40004 - 5120 (min_free_kbytes 4096)
    assert_eq!(mem::estimate_available(&m, Some(4096)), Some(745_456));

    let v = mem::parse_vmstat(&read(&format!("{V310}/proc/vmstat"))).unwrap();
    assert_eq!(
        v.pgscan_direct,
        Some(50123 + 3012),
        "zone sum without throttle"
    );
    assert_eq!(
        (v.allocstall, v.pswpout, v.pgmajfault),
        (Some(812), Some(9210), Some(40123))
    );

    let ds = read(&format!("{V310}/proc/diskstats"));
    let lines: Vec<_> = disk::diskstats(&ds).map(|l| l.unwrap()).collect();
    let sda = lines.iter().find(|l| l.name == b"sda").unwrap();
    assert_eq!(sda.c[disk::SECTORS_WRITTEN], 4_294_960_000);
    assert_eq!(lines.len(), 16 + 8 + 9);

    let nd = read(&format!("{V310}/proc/net/dev"));
    let dev: Vec<_> = net::net_dev(&nd).map(|l| l.unwrap()).collect();
    assert_eq!(
        dev[1].name, b"egiga0",
        "no space after the colon on old kernels"
    );
    assert_eq!(dev[1].c[net::RX_BYTES], 4_294_000_000);

    let mut t = net::TcpCounters::default();
    net::parse_snmp(&read(&format!("{V310}/proc/net/snmp")), &mut t).unwrap();
    net::parse_netstat(&read(&format!("{V310}/proc/net/netstat")), &mut t).unwrap();
    assert_eq!(
        (t.retrans_segs, t.out_rsts, t.estab_resets, t.attempt_fails),
        (Some(4123), Some(912), Some(31), Some(12))
    );
    assert_eq!(
        (t.timeouts, t.timeout_aborts, t.listen_drops),
        (Some(77), Some(5), Some(3))
    );

    let p = pid::parse_pid_stat(&read(&format!("{V310}/proc/901/stat"))).unwrap();
    assert_eq!(p.comm(), b"(sd-pam)");
    let p = pid::parse_pid_stat(&read(&format!("{V310}/proc/1501/stat"))).unwrap();
    assert_eq!(
        (p.comm(), p.ppid, p.starttime),
        (&b"a) b (c"[..], 1500, 11_200_100)
    );
    assert!(matches!(
        pid::parse_pid_stat(&read(&format!("{V310}/proc/1600/stat"))),
        Err(ParseError::Truncated(_))
    ));
    assert!(pid::parse_pid_stat(&read(&format!("{V310}/proc/1700/stat"))).is_err());
    assert!(sysfs::parse_duplex(&read(&format!("{V310}/sys/class/net/egiga0/duplex"))).is_err());
    assert_eq!(
        sysfs::parse_speed(&read(&format!("{V310}/sys/class/net/lo/speed"))),
        Err(ParseError::Truncated("empty speed"))
    );
}

#[test]
fn v310_sampler_inventory_and_estimate() {
    let (mut s, h) = sampler_over(&data(V310));
    assert_eq!(
        (h.host_name.as_str(), h.kernel_release.as_str(), h.cpu_count),
        ("WDMyCloudEX2Ultra", "3.10.39", 2)
    );
    assert_eq!(h.boot_id.as_str(), "5b1e2c8a-7d3f-4e0b-9a61-2f4c8d9e0a13");
    assert_eq!(
        names(h.disks.iter().map(|d| d.name.as_str())),
        ["sda", "sdb", "md1", "md0", "mtdblock0"]
    );
    assert_eq!(h.disks[0].rotational, Some(true));
    assert_eq!(h.disks[0].size_sectors, 3_907_029_168);
    assert!(h.disks[2].is_md && !h.disks[0].is_md);
    let md1 = h.md_arrays.iter().find(|m| m.name == "md1").unwrap();
    assert_eq!(
        (
            md1.level.as_str(),
            names(md1.members.iter().map(|m| m.as_str()))
        ),
        ("raid1", vec!["sda", "sdb"])
    );
    assert_eq!(names(h.nics.iter().map(|n| n.name.as_str())), ["egiga0"]);
    assert_eq!(
        (h.nics[0].mtu, h.nics[0].mac.as_str(), h.nics[0].is_bond),
        (1500, "00:90:a9:12:34:56", false)
    );

    let (out, ev) = two_samples(&mut s);
    assert!(ev.is_empty(), "{ev:?}");
    let m = out.memory.unwrap();
    assert!(m.available_estimated);
    assert_eq!(m.available_kib, 745_456);
    assert_eq!(
        (m.total_kib, m.dirty_kib, m.swap_free_kib),
        (1_034_148, 48_120, 500_112)
    );
    assert_eq!(out.cpus.len(), 2);
    assert!(
        out.top.is_empty(),
        "no CPU between two reads of a fixed tree"
    );
    // Only disks with requests in flight (a gauge) are listed, with zero deltas.
    let listed: Vec<(u16, u32, u64)> = out
        .disks
        .iter()
        .map(|d| (d.disk, d.in_flight, d.sectors_written))
        .collect();
    assert_eq!(listed, [(0, 2, 0), (1, 1, 0)]);
}

#[test]
fn v310_counters_wrap_at_32_bits() {
    // Copy the tree, prime, then put the files of one second later in place (by rename).
    let tmp = std::env::temp_dir().join(format!("nasprobe-v310-wrap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(&data(V310), &tmp);
    let (mut s, h) = sampler_over(&tmp);
    let mut out = nasprobe_proto::Sample::default();
    let mut ev = Vec::new();
    assert!(!s.sample(&mut out, &mut |e| ev.push(e)));
    for f in ["proc/diskstats", "proc/net/dev"] {
        std::fs::rename(tmp.join(format!("{f}.next")), tmp.join(f)).unwrap();
    }
    assert!(s.sample(&mut out, &mut |e| ev.push(e)));
    let idx = |n: &str| h.disks.iter().position(|d| d.name == n).unwrap() as u16;
    let sda = out.disks.iter().find(|d| d.disk == idx("sda")).unwrap();
    assert_eq!(sda.flags, 0);
    assert_eq!(
        (sda.reads, sda.sectors_read, sda.writes, sda.sectors_written),
        (100, 2000, 100, 9000)
    );
    assert_eq!((sda.in_flight, sda.io_ms, sda.weighted_ms), (3, 1000, 1000));
    let sdb = out.disks.iter().find(|d| d.disk == idx("sdb")).unwrap();
    assert_eq!(sdb.sectors_written, 9000);
    let md1 = out.disks.iter().find(|d| d.disk == idx("md1")).unwrap();
    assert_eq!(
        (md1.sectors_written, md1.io_ms),
        (968_000, 0),
        "md reports no busy time: members do"
    );
    let nic = out.nics[0];
    assert_eq!((nic.rx_bytes, nic.rx_packets), (1_000_000, 777));
    assert_eq!(
        nic.flags,
        flags::LINK_UP | flags::DUPLEX_UNKNOWN,
        "garbage duplex: unknown"
    );
    assert_eq!(nic.speed_mbit, 1000);
    let _ = std::fs::remove_dir_all(&tmp);
}

// ------------------------------------------------------------------ 4.4 x86_64 Synology

#[test]
fn v44_parsers() {
    let v = mem::parse_vmstat(&read(&format!("{V44}/proc/vmstat"))).unwrap();
    assert_eq!(
        (v.pgscan_direct, v.allocstall),
        (Some(81231 + 41231), Some(1231))
    );
    let m = mem::parse_meminfo(&read(&format!("{V44}/proc/meminfo"))).unwrap();
    assert_eq!(m.available, Some(1_301_232));
    let ds = read(&format!("{V44}/proc/diskstats"));
    let all: Vec<_> = disk::diskstats(&ds).collect();
    assert_eq!(
        all.iter().filter(|l| l.is_err()).count(),
        1,
        "the sdq garbage line"
    );
    let mut t = net::TcpCounters::default();
    assert!(
        net::parse_netstat(&read(&format!("{V44}/proc/net/netstat")), &mut t).is_err(),
        "cut after the header"
    );
    let p = pid::parse_pid_stat(&read(&format!("{V44}/proc/15234/stat"))).unwrap();
    assert_eq!(
        (p.comm(), p.utime, p.stime, p.num_threads),
        (&b"btrfs"[..], 412_312, 5_123_123, 1)
    );
    let mut c = heapless::String::new();
    pid::format_cmdline(
        &read(&format!("{V44}/proc/15234/cmdline")),
        pid::DEFAULT_REDACT.iter().copied(),
        256,
        &mut c,
    );
    assert!(
        c.starts_with("btrfs send -p /volume1/@sharesnap/data/") && c.contains(" -k 28399387 "),
        "{c}"
    );
}

#[test]
fn v44_sampler_inventory() {
    let (mut s, h) = sampler_over(&data(V44));
    assert_eq!((h.kernel_release.as_str(), h.cpu_count), ("4.4.59+", 4));
    assert_eq!(
        names(h.disks.iter().map(|d| d.name.as_str())),
        ["sda", "sdb", "sdc", "sdd", "md0", "md1", "md2", "dm-0"]
    );
    let md2 = h.md_arrays.iter().find(|m| m.name == "md2").unwrap();
    assert_eq!(md2.level.as_str(), "raid5");
    assert_eq!(
        names(md2.members.iter().map(|m| m.as_str())),
        ["sda", "sdb", "sdc", "sdd"]
    );
    assert_eq!(
        names(h.nics.iter().map(|n| n.name.as_str())),
        ["eth0", "eth1", "bond0"]
    );
    let bond = &h.nics[2];
    assert!(bond.is_bond);
    assert_eq!(
        names(bond.slaves.iter().map(|m| m.as_str())),
        ["eth0", "eth1"]
    );
    let (out, _) = two_samples(&mut s);
    let tcp = out.tcp.unwrap();
    assert_eq!(tcp.retrans_segs, 0);
    assert_eq!(
        (tcp.timeouts, tcp.timeout_aborts),
        (None, None),
        "netstat truncated: unknown, not zero"
    );
    assert!(!out.memory.unwrap().available_estimated);
    assert_eq!(out.cpus.len(), 4);
}

// ------------------------------------------------------------------ 6.18 x86_64 real capture

#[test]
fn v618_capture() {
    let mut st = cpu::ProcStat::default();
    cpu::parse_stat(&read(&format!("{V618}/proc/stat")), &mut st).unwrap();
    assert_eq!(st.cpus.len(), 2);
    assert!(st.ctxt.is_some() && st.processes.is_some() && st.procs_running.is_some());
    let m = mem::parse_meminfo(&read(&format!("{V618}/proc/meminfo"))).unwrap();
    assert!(m.available.is_some() && m.sreclaimable.is_some());
    let v = mem::parse_vmstat(&read(&format!("{V618}/proc/vmstat"))).unwrap();
    assert!(v.allocstall.is_some() && v.pgscan_direct.is_some());
    for l in disk::diskstats(&read(&format!("{V618}/proc/diskstats"))) {
        l.unwrap();
    }
    let mut t = net::TcpCounters::default();
    net::parse_snmp(&read(&format!("{V618}/proc/net/snmp")), &mut t).unwrap();
    net::parse_netstat(&read(&format!("{V618}/proc/net/netstat")), &mut t).unwrap();
    assert!(t.retrans_segs.is_some() && t.timeouts.is_some() && t.listen_drops.is_some());
    for dir in std::fs::read_dir(data(&format!("{V618}/proc"))).unwrap() {
        let dir = dir.unwrap().path();
        if dir.join("stat").exists() {
            let p = pid::parse_pid_stat(&std::fs::read(dir.join("stat")).unwrap()).unwrap();
            pid::parse_schedstat(&std::fs::read(dir.join("schedstat")).unwrap()).unwrap();
            assert!(p.starttime > 0);
        }
    }
    let (mut s, h) = sampler_over(&data(V618));
    assert!(h.kernel_release.starts_with("6.18"));
    assert!(h.disks.iter().any(|d| d.name == "vda"));
    assert!(
        !h.disks.iter().any(|d| d.name.starts_with("loop")),
        "unused loops are left out"
    );
    assert!(h.nics.iter().any(|n| n.name == "eth0"));
    let (out, _) = two_samples(&mut s);
    assert!(out.memory.is_some() && out.vm.is_some() && out.tcp.is_some());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Real connector datagrams of this machine (tests/data/capture_cn_proc.py): the ack, then
/// fork, exec and exit of `sh -c 'exit 3'` and of a `sleep` killed with SIGKILL.
#[test]
fn cn_proc_capture_of_this_machine() {
    use nasprobe_agent::parse::cn_proc::{ExitCode, ProcEvent, messages};
    let raw = read("cn_proc-6.18-x86_64.bin");
    let mut rest = &raw[..];
    let mut evs = Vec::new();
    while !rest.is_empty() {
        let n = u32::from_ne_bytes(rest[..4].try_into().unwrap()) as usize;
        for m in messages(&rest[4..4 + n]) {
            evs.push(m.unwrap());
        }
        rest = &rest[4 + n..];
    }
    assert!(matches!(evs[0], ProcEvent::Ack { err: 0, .. }));
    let exits: Vec<_> = evs
        .iter()
        .filter_map(|e| match *e {
            ProcEvent::Exit {
                pid,
                tgid,
                exit_code,
                ..
            } if pid == tgid => Some(ExitCode::from_wait_status(exit_code)),
            _ => None,
        })
        .collect();
    assert_eq!(exits.len(), 2, "{evs:?}");
    assert_eq!((exits[0].code, exits[0].signal), (Some(3), None));
    assert_eq!((exits[1].code, exits[1].signal), (None, Some(9)));
    assert!(!exits[1].core_dumped);
    let forks = evs
        .iter()
        .filter(|e| matches!(e, ProcEvent::Fork { .. }))
        .count();
    let execs = evs
        .iter()
        .filter(|e| matches!(e, ProcEvent::Exec { .. }))
        .count();
    assert_eq!((forks, execs), (2, 2));
}

/// Real /dev/kmsg records of a memory cgroup OOM kill on this machine (6.18): the 4.19+
/// summary line and the kill both name the victim; the "invoked oom-killer" line names the
/// allocating task, not the victim, and is not a kill.
#[test]
fn kmsg_capture_of_a_memcg_oom_kill() {
    use nasprobe_agent::parse::kmsg::{Kind, classify, parse_record};
    let raw = read("kmsg-6.18-x86_64-memcg-oom.txt");
    let kinds: Vec<(u8, Kind)> = raw
        .split_inclusive(|&b| b == b'\n')
        .map(|line| {
            let r = parse_record(line).unwrap();
            (r.level, classify(r.text, &|_| false))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (4, Kind::Other),
            (6, Kind::OomKill { pid: 21859 }),
            (3, Kind::OomKill { pid: 21859 }),
        ]
    );
}

/// A real sock_diag dump and /proc/net/tcp of this machine (tests/data/capture_sock_diag.py):
/// one loopback connection, 100 000 bytes sent, 30 000 read. Both sources agree on the
/// inodes; the reading end holds 70 000 unread bytes; a 6.18 tcp_info has every field.
#[test]
fn sock_diag_and_proc_net_tcp_capture_of_this_machine() {
    use nasprobe_agent::parse::tcp_conn::{DiagItem, dump_messages, proc_net_tcp};
    let raw = read("sock_diag-6.18.44.bin");
    let items: Vec<DiagItem> = dump_messages(&raw).map(|m| m.unwrap()).collect();
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[2], DiagItem::Done);
    let socks: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            DiagItem::Sock(s) => Some(*s),
            _ => None,
        })
        .collect();
    let server = socks.iter().find(|s| s.local_port == 47351).unwrap();
    let client = socks.iter().find(|s| s.remote_port == 47351).unwrap();
    assert_eq!((server.state, client.state), (1, 1));
    assert_eq!(&server.local[..4], &[127, 0, 0, 1]);
    assert_eq!(server.remote_port, client.local_port);
    assert_eq!(server.rqueue, 70_000);
    let ci = client.info.unwrap().info;
    assert_eq!(ci.bytes_acked, Some(100_001), "SYN counts one");
    assert!(ci.rwnd_limited_us.is_some() && ci.delivery_rate.is_some());
    assert_eq!(server.info.unwrap().info.bytes_received, Some(100_000));
    let t = read("proc_net_tcp-6.18.44.txt");
    let lines: Vec<_> = proc_net_tcp(&t).map(|l| l.unwrap()).collect();
    assert_eq!(lines.len(), 2);
    let ps = lines.iter().find(|l| l.local_port == 47351).unwrap();
    assert_eq!((ps.inode, ps.rx_queue), (server.inode, 70_000));
    let pc = lines.iter().find(|l| l.remote_port == 47351).unwrap();
    assert_eq!(pc.inode, client.inode);
}

/// The generated 3.10 and 4.4 trees print /proc/PID/stat as those kernels do (and as testkit
/// renders it): 52 fields since 3.5. The damaged files (1600 truncated, 1700 garbage) aside.
#[test]
fn generated_pid_stats_have_the_kernels_52_fields() {
    for tree in [V310, V44] {
        let mut n = 0;
        for e in std::fs::read_dir(data(&format!("{tree}/proc"))).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.chars().all(|c| c.is_ascii_digit()) || name == "1600" || name == "1700" {
                continue;
            }
            let text = std::fs::read_to_string(e.path().join("stat")).unwrap();
            let after_comm = text.rsplit_once(')').unwrap().1;
            assert_eq!(
                after_comm.split_whitespace().count() + 2,
                52,
                "{tree}/proc/{name}/stat"
            );
            n += 1;
        }
        assert!(n >= 3, "{tree}: {n} processes");
    }
}
