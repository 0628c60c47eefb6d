//! Helpers shared by the testkit tests: temp dirs and tiny parsers of the generated files.

use std::path::{Path, PathBuf};

pub fn tempdir(tag: &str) -> PathBuf {
    // tmpfs when there is one: renames over existing files are slow on ext4 (auto_da_alloc).
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let d = base.join(format!("nasprobe-testkit-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Fields of a /proc/PID/stat line after the comm, comm located by the LAST ')'.
pub fn stat_fields(line: &str) -> (String, Vec<String>) {
    let open = line.find('(').expect("(");
    let close = line.rfind(')').expect(")");
    let comm = line[open + 1..close].to_string();
    let mut v: Vec<String> = vec![line[..open].trim().to_string(), comm.clone()];
    v.extend(line[close + 1..].split_whitespace().map(|s| s.to_string()));
    (comm, v)
}

/// (rx_bytes, tx_bytes) of `iface` in /proc/net/dev text.
pub fn net_dev_bytes(text: &str, iface: &str) -> (u64, u64) {
    for line in text.lines().skip(2) {
        let (name, rest) = line.split_once(':').unwrap();
        if name.trim() == iface {
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            assert_eq!(f.len(), 16, "{line}");
            return (f[0], f[8]);
        }
    }
    panic!("{iface} not in net/dev");
}

/// The numeric fields of device `dev` in /proc/diskstats (after the name).
pub fn diskstats(text: &str, dev: &str) -> Vec<u64> {
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t[2] == dev {
            return t[3..].iter().map(|x| x.parse().unwrap()).collect();
        }
    }
    panic!("{dev} not in diskstats");
}

/// Per-core (user+nice+system+irq+softirq+steal, total) from /proc/stat.
pub fn cpu_lines(text: &str) -> Vec<(String, Vec<u64>)> {
    text.lines()
        .filter(|l| l.starts_with("cpu"))
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (
                t[0].to_string(),
                t[1..].iter().map(|x| x.parse().unwrap()).collect(),
            )
        })
        .collect()
}

/// Value of `key` in a header/value block pair of net/snmp or net/netstat.
pub fn snmp(text: &str, prefix: &str, key: &str) -> i64 {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{prefix}:")))
        .collect();
    let keys: Vec<&str> = lines[0].split_whitespace().skip(1).collect();
    let vals: Vec<&str> = lines[1].split_whitespace().skip(1).collect();
    assert_eq!(keys.len(), vals.len());
    let i = keys
        .iter()
        .position(|k| *k == key)
        .unwrap_or_else(|| panic!("{key} not in {prefix}"));
    vals[i].parse().unwrap()
}
