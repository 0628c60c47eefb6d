//! The exit codes a script can use (`net::outcome`): `record` exits 1 with one line naming each
//! host that was never reached or never authenticated, 0 when every host delivered records.
//! Real processes: the `nasprobe` binary against a dead address, a fake agent with another
//! token and a fake agent with the right one.

use std::path::Path;
use std::process::{Command, Output};

use nasprobe::testing::{FakeAgent, FakeHistory};

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

/// `nasprobe record --duration DUR HOSTS...` with `TOKEN` in a private token file.
fn record(dir: &Path, dur: &str, hosts: &[String]) -> Output {
    let tok = dir.join("token");
    std::fs::write(&tok, [TOKEN, b"\n"].concat()).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    Command::new(NP)
        .arg("--db")
        .arg(dir.join("r.db"))
        .arg("--token-file")
        .arg(&tok)
        .args(["record", "--duration", dur])
        .args(hosts)
        .output()
        .unwrap()
}

fn history() -> FakeHistory {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut h = FakeHistory::new(7, now - 20_000, 1000);
    for _ in 0..20 {
        h.push(100);
    }
    h
}

#[test]
fn record_against_a_dead_address_exits_1_naming_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "5s", &["nas=127.0.0.1:1".into()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("nasprobe: nas: never reached in 5."),
        "{err}"
    );
}

#[test]
fn record_with_a_wrong_token_exits_1_and_a_good_agent_0() {
    let dir = tempfile::tempdir().unwrap();
    let good = FakeAgent::start(TOKEN.to_vec(), history());
    let other = FakeAgent::start(b"fedcba9876543210fedcba9876543210".to_vec(), history());
    let out = record(
        dir.path(),
        "3s",
        &[format!("good={}", good.addr), format!("bad={}", other.addr)],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let failed: Vec<&str> = err.lines().filter(|l| l.contains(": never ")).collect();
    assert_eq!(failed.len(), 1, "one line, for the host that failed: {err}");
    assert!(
        failed[0].starts_with("nasprobe: bad: never authenticated in 3."),
        "{err}"
    );
    // A new store: the first one already holds everything of `good`.
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "3s", &[format!("good={}", good.addr)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}
