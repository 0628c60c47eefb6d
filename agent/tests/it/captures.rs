//! The agent's parsers over every real /proc and /sys capture others wrote down (the
//! `shared/captures` folder beside the repository, see its SOURCES.md), read in place, never
//! copied here: each file parses or is refused with a typed `ParseError`, never a panic; the
//! figures that can be checked by hand against the file (CPU count, disk and NIC names,
//! MemTotal) match.
//!
//! The captures live outside the repository: `NASPROBE_CAPTURES` names the folder, else the
//! first `shared/captures` above this crate. Missing, the test is skipped (and fails under
//! `CI=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nasprobe_agent::parse::diskstats::diskstats;
use nasprobe_agent::parse::meminfo::parse_meminfo;
use nasprobe_agent::parse::net_dev::net_dev;
use nasprobe_agent::parse::pid_stat::parse_pid_stat;
use nasprobe_agent::parse::proc_stat::{ProcStat, parse_stat};
use nasprobe_agent::parse::snmp::{TcpCounters, parse_netstat, parse_snmp};
use nasprobe_agent::parse::vmstat::parse_vmstat;
use nasprobe_agent::parse::{ParseError, sysfs};

fn captures() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NASPROBE_CAPTURES") {
        return Some(PathBuf::from(d));
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/captures"))
        .find(|d| d.join("SOURCES.md").is_file())
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// What one capture gave: a short summary for the hand checks, or the typed refusal.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Stat {
        cpus: usize,
        total: bool,
        ctxt: Option<u64>,
    },
    Disks(Vec<String>),
    Nics(Vec<String>),
    Mem {
        total_kib: Option<u64>,
    },
    Vm,
    Tcp(TcpCounters),
    Pid {
        pid: u32,
        comm: String,
        state: char,
    },
    /// A sysfs attribute the kernel refuses to read (speed/duplex of a virtual NIC).
    SysfsRefused,
    /// A file the agent never reads (cpuinfo, version, mdstat, status, …).
    NotRead,
    Refused(ParseError),
}

fn names<'a>(it: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    it.map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

/// Runs the parser the agent uses for this file (by its name and place in the tree).
fn parse_one(rel: &str, buf: &[u8]) -> Outcome {
    let name = rel.rsplit('/').next().unwrap();
    let parent = rel.rsplit('/').nth(1).unwrap_or("");
    let refused = |e| Outcome::Refused(e);
    match name {
        "stat" if parent.chars().all(|c| c.is_ascii_digit()) => match parse_pid_stat(buf) {
            Ok(p) => Outcome::Pid {
                pid: p.pid,
                comm: String::from_utf8_lossy(p.comm()).into_owned(),
                state: p.state as char,
            },
            Err(e) => refused(e),
        },
        "stat" if parent == "kernel" => Outcome::NotRead,
        "stat" => {
            let mut s = ProcStat::default();
            match parse_stat(buf, &mut s) {
                Ok(()) => Outcome::Stat {
                    cpus: s.cpus.len(),
                    total: s.total.is_some(),
                    ctxt: s.ctxt,
                },
                Err(e) => refused(e),
            }
        }
        "diskstats" | "diskstats.partial" => {
            let mut out = Vec::new();
            for l in diskstats(buf) {
                match l {
                    Ok(l) => out.push(l.name),
                    Err(e) => return refused(e),
                }
            }
            Outcome::Disks(names(out.into_iter()))
        }
        "dev" if parent == "net" => {
            let mut out = Vec::new();
            for l in net_dev(buf) {
                match l {
                    Ok(l) => out.push(l.name),
                    Err(e) => return refused(e),
                }
            }
            Outcome::Nics(names(out.into_iter()))
        }
        "meminfo" | "meminfo.partial" => match parse_meminfo(buf) {
            Ok(m) => Outcome::Mem { total_kib: m.total },
            Err(e) => refused(e),
        },
        "vmstat" => match parse_vmstat(buf) {
            Ok(_) => Outcome::Vm,
            Err(e) => refused(e),
        },
        "snmp" | "netstat" => {
            let mut t = TcpCounters::default();
            let r = if name == "snmp" {
                parse_snmp(buf, &mut t)
            } else {
                parse_netstat(buf, &mut t)
            };
            match r {
                Ok(()) => Outcome::Tcp(t),
                Err(e) => refused(e),
            }
        }
        // A terminal transcript of `cat speed` / `cat duplex` failing with EINVAL: the agent
        // reads those files and gets the error; the text around them is no attribute.
        "speed_duplex.transcript" => {
            // Whatever the agent would get if it read this text as the attribute: refused.
            assert!(sysfs::parse_speed(buf).is_err() && sysfs::parse_duplex(buf).is_err());
            Outcome::SysfsRefused
        }
        "cpuinfo" | "version" | "mdstat" | "status" | "SOURCES.md" => Outcome::NotRead,
        other => panic!("{rel}: no rule for a capture named {other:?}: add one"),
    }
}

#[test]
fn every_capture_parses_or_is_refused_and_hand_checked_figures_match() {
    let Some(dir) = captures() else {
        nasprobe_testkit::skip::missing(
            "captures",
            "no shared/captures folder (set NASPROBE_CAPTURES)",
        );
        return;
    };
    let mut all = Vec::new();
    files(&dir, &mut all);
    all.sort();
    let mut got: BTreeMap<String, Outcome> = BTreeMap::new();
    for p in &all {
        let rel = p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
        let buf = std::fs::read(p).unwrap();
        let out = std::panic::catch_unwind(|| parse_one(&rel, &buf))
            .unwrap_or_else(|_| panic!("{rel}: the parser panicked"));
        // Every prefix of the file too (a read cut short): refused or parsed, never a panic.
        for cut in (0..buf.len()).step_by(buf.len() / 64 + 1) {
            std::panic::catch_unwind(|| parse_one(&rel, &buf[..cut]))
                .unwrap_or_else(|_| panic!("{rel}: the parser panicked on {cut} bytes"));
        }
        got.insert(rel, out);
    }
    for (rel, out) in &got {
        eprintln!("{rel}: {out:?}");
    }
    let at = |rel: &str| {
        got.get(rel)
            .unwrap_or_else(|| panic!("{rel} is not among the captures"))
            .clone()
    };
    hand_checks(&at);
    assert!(got.len() >= 52, "{} captures", got.len());
}

/// Figures read off the files by hand (counted `cpuN` lines, MemTotal lines, the name column).
fn hand_checks(at: &dyn Fn(&str) -> Outcome) {
    let stat = |rel: &str, cpus: usize, ctxt: u64| {
        assert_eq!(
            at(rel),
            Outcome::Stat {
                cpus,
                total: true,
                ctxt: Some(ctxt)
            },
            "{rel}"
        );
    };
    stat("node_exporter-fixtures/stat", 8, 38_014_093);
    stat("sysstat-tests-root1/stat", 9, 130_465_866);
    stat("zte-zx279128-router-4.1.25-armv7/stat", 2, 983_753);
    // Only cpu0 is listed (the other cores hot-unplugged), and the old 8-field format.
    stat("gocleverinsignia5-android-3.4.5-armv7/stat", 1, 1_161_689);
    stat("d2000-arm720t-armv4t-2.6.x/stat", 1, 25_774);

    for (rel, kib) in [
        ("cubian-a20-armv7/meminfo", 846_992),
        ("zte-zx279128-router-4.1.25-armv7/meminfo", 94_412),
        ("openwrt-arm-sysinfo164/meminfo", 125_128),
        ("synology-ds918p-dsm6.2.4-4.4.59-x86_64/meminfo", 7_989_744),
        (
            "synology-ds3622xsp-dsm7-rrloader/meminfo.partial",
            65_879_776,
        ),
        ("gocleverinsignia5-android-3.4.5-armv7/meminfo", 990_732),
    ] {
        assert_eq!(
            at(rel),
            Outcome::Mem {
                total_kib: Some(kib)
            },
            "{rel}"
        );
    }

    let disks = |rel: &str| match at(rel) {
        Outcome::Disks(d) => d,
        o => panic!("{rel}: {o:?}"),
    };
    let mut zte: Vec<String> = (0..=10).map(|i| format!("mtdblock{i}")).collect();
    zte.extend(["sda".into(), "sda1".into()]);
    assert_eq!(disks("zte-zx279128-router-4.1.25-armv7/diskstats"), zte);
    let sata = disks("synology-dsm7-sataN-beszel365/diskstats.partial");
    assert_eq!(sata.len(), 20);
    assert_eq!(&sata[16..], ["sata1", "sata1p1", "sata1p2", "sata1p3"]);
    let ne = disks("node_exporter-fixtures/diskstats");
    assert_eq!(ne.len(), 51);
    for d in [
        "sda",
        "mmcblk0p1",
        "vda2",
        "nvme0n1p2",
        "dm-5",
        "sr0",
        "fd0",
    ] {
        assert!(ne.iter().any(|x| x == d), "{d} in {ne:?}");
    }
    assert_eq!(disks("d2000-arm720t-armv4t-2.6.x/diskstats").len(), 44);
    assert_eq!(disks("sysstat-tests-root1/diskstats").len(), 22);
    let android = disks("gocleverinsignia5-android-3.4.5-armv7/diskstats");
    assert_eq!(
        (android.len(), android.last().unwrap().as_str()),
        (32, "dm-8")
    );

    let nics = |rel: &str| match at(rel) {
        Outcome::Nics(n) => n,
        o => panic!("{rel}: {o:?}"),
    };
    assert_eq!(nics("d2000-arm720t-armv4t-2.6.x/net/dev"), ["lo", "eth0"]);
    assert_eq!(
        nics("node_exporter-issue73-netdev-nospace/net/dev"),
        ["lo", "eth0", "eth1", "sit0"]
    );
    assert_eq!(
        nics("sysstat-tests-root1/net/dev"),
        ["lo", "virbr0-nic", "enp6s0", "virbr0", "virbr0-1", "wlp5s0"]
    );
    assert_eq!(
        nics("node_exporter-fixtures/net/dev"),
        [
            "tun0",
            "veth4B09XN",
            "lo",
            "eth0",
            "lxcbr0",
            "wlan0",
            "docker0",
            "ibr10:30"
        ]
    );
    let zte = nics("zte-zx279128-router-4.1.25-armv7/net/dev");
    assert_eq!(zte.len(), 26);
    assert!(zte.iter().any(|n| n == "apcli0") && zte.iter().any(|n| n == "ip6tnl0"));

    // Tcp: line of node_exporter's snmp: AttemptFails 341, EstabResets 161, RetransSegs 227,
    // InErrs 5, OutRsts 1003; its netstat's TCPTimeouts 115.
    match at("node_exporter-fixtures/net/snmp") {
        Outcome::Tcp(t) => assert_eq!(
            (
                t.retrans_segs,
                t.out_rsts,
                t.in_errs,
                t.estab_resets,
                t.attempt_fails
            ),
            (Some(227), Some(1003), Some(5), Some(161), Some(341))
        ),
        o => panic!("{o:?}"),
    }
    match at("node_exporter-fixtures/net/netstat") {
        Outcome::Tcp(t) => assert_eq!(t.timeouts, Some(115)),
        o => panic!("{o:?}"),
    }
    assert_eq!(
        at("node_exporter-fixtures/10/stat"),
        Outcome::Pid {
            pid: 10,
            comm: "khungtaskd".into(),
            state: 'S'
        }
    );
    assert_eq!(
        at("zte-zx279128-router-4.1.25-armv7/1/stat"),
        Outcome::Pid {
            pid: 1,
            comm: "init".into(),
            state: 'S'
        }
    );
    assert_eq!(at("d2000-arm720t-armv4t-2.6.x/vmstat"), Outcome::Vm);
    assert_eq!(
        at("synology-ds220p-dsm7.1.1/sys/class/net/ovs_eth0/speed_duplex.transcript"),
        Outcome::SysfsRefused
    );
}
