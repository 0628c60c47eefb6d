//! Parsers and the sampler over the real captures of this machine in agent/tests/data (a 6.18
//! tree, connector, kmsg and sock_diag records). The 3.10 and 4.4 trees are written by testkit
//! at test time (`sampler_generated.rs`); the real captures of others are read in place by
//! `captures.rs`.

use std::path::{Path, PathBuf};

use nasprobe_agent::config::{Config, ScanPolicy};
use nasprobe_agent::parse::{diskstats, meminfo, pid_stat, proc_stat, schedstat, snmp, vmstat};
use nasprobe_agent::sampler::Sampler;
use nasprobe_proto::{Event, Hello, Sample};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

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

// ------------------------------------------------------------------ 6.18 x86_64 real capture

#[test]
fn v618_capture() {
    let mut st = proc_stat::ProcStat::default();
    proc_stat::parse_stat(&read(&format!("{V618}/proc/stat")), &mut st).unwrap();
    assert_eq!(st.cpus.len(), 2);
    assert!(st.ctxt.is_some() && st.processes.is_some() && st.procs_running.is_some());
    let m = meminfo::parse_meminfo(&read(&format!("{V618}/proc/meminfo"))).unwrap();
    assert!(m.available.is_some() && m.sreclaimable.is_some());
    let v = vmstat::parse_vmstat(&read(&format!("{V618}/proc/vmstat"))).unwrap();
    assert!(v.allocstall.is_some() && v.pgscan_direct.is_some());
    for l in diskstats::diskstats(&read(&format!("{V618}/proc/diskstats"))) {
        l.unwrap();
    }
    let mut t = snmp::TcpCounters::default();
    snmp::parse_snmp(&read(&format!("{V618}/proc/net/snmp")), &mut t).unwrap();
    snmp::parse_netstat(&read(&format!("{V618}/proc/net/netstat")), &mut t).unwrap();
    assert!(t.retrans_segs.is_some() && t.timeouts.is_some() && t.listen_drops.is_some());
    for dir in std::fs::read_dir(data(&format!("{V618}/proc"))).unwrap() {
        let dir = dir.unwrap().path();
        if dir.join("stat").exists() {
            let p = pid_stat::parse_pid_stat(&std::fs::read(dir.join("stat")).unwrap()).unwrap();
            schedstat::parse_schedstat(&std::fs::read(dir.join("schedstat")).unwrap()).unwrap();
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
    use nasprobe_agent::parse::proc_net_tcp::proc_net_tcp;
    use nasprobe_agent::parse::sock_diag::{DiagItem, dump_messages};
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
