//! The nasprobe-scenario binary: host lines, ready, SIGTERM exit, JSON scenarios.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_nasprobe-scenario");

#[test]
fn once_prints_host_lines_and_ready() {
    let dir = tempdir("cli-once");
    let out = Command::new(BIN)
        .args(["run", "--builtin", "wd-ssh", "--once", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let d = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(
        lines[0],
        format!(
            "host=src kernel=k3_10 proc={0}/src/proc sys={0}/src/sys",
            d.display()
        )
    );
    assert!(lines[1].starts_with("host=dst kernel=k3_10 "));
    assert_eq!(lines[2], "ready");
    assert!(d.join("dst/proc/4410/task/4410/stat").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_updates_until_sigterm_then_exits_zero() {
    let dir = tempdir("cli-run");
    let json = dir.join("s.json");
    std::fs::write(
        &json,
        r#"{"name":"t","hosts":[{"name":"a","kernel":"k6","cores":2,
            "nics":[{"name":"eth0","speed_mbit":1000,"rx_mbs":10}],
            "processes":[{"pid":300,"comm":"x y","threads":[{"cpu_pct":50}]}]}]}"#,
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["run", "--tick-ms", "20", "--scenario"])
        .arg(&json)
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("host=a kernel=k6 proc="), "{line}");
    line.clear();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let dev = dir.join("out/a/proc/net/dev");
    let a = net_dev_bytes(&read(&dev), "eth0").0;
    std::thread::sleep(std::time::Duration::from_millis(300));
    let b = net_dev_bytes(&read(&dev), "eth0").0;
    assert!(b > a, "the tree moves in real time");
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_refused_with_a_message() {
    let out = Command::new(BIN)
        .args(["run", "--builtin", "nope", "--out", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown builtin"));
    let out = Command::new(BIN).args(["list"]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 10);
}
