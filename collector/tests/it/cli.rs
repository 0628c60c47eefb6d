//! The CLI as scripts and people use it, on the real `nasprobe` binary: the exit codes
//! (`net::outcome`: `record` exits 1 with one line naming each host that was never reached or
//! never authenticated, 0 when every host delivered records; against a dead address, a fake
//! agent with another token and one with the right one); `report --host`; `nasprobe
//! completions SHELL` gives a script the shell loads (bash completes `nasprobe rep` to
//! `report`), `nasprobe man` a manual page with every subcommand and the exit codes; `-q` leaves
//! out the progress and summary lines but never the lines that explain a failing exit, `-v`
//! adds the log.

use std::path::Path;
use std::process::{Command, Output};

use nasprobe::testing::{FakeAgent, FakeHistory};

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

/// `nasprobe record --duration DUR HOSTS...` with `TOKEN` in a private token file.
fn record(dir: &Path, dur: &str, hosts: &[String]) -> Output {
    record_with(dir, &[], dur, hosts)
}

/// [`record`] with global flags (`-q`, `-v`) before the command.
fn record_with(dir: &Path, flags: &[&str], dur: &str, hosts: &[String]) -> Output {
    let tok = dir.join("token");
    std::fs::write(&tok, [TOKEN, b"\n"].concat()).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    Command::new(NP)
        .arg("--db")
        .arg(dir.join("r.db"))
        .arg("--token-file")
        .arg(&tok)
        .args(flags)
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
fn record_with_a_wrong_token_exits_1_good_agents_0_and_report_host_keeps_one() {
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
    let two = FakeAgent::start(TOKEN.to_vec(), history());
    let out = record(
        dir.path(),
        "3s",
        &[format!("good={}", good.addr), format!("two={}", two.addr)],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // report --host: only that host; a host not stored is an error naming those that are.
    let db = dir.path().join("r.db");
    let names = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["--db", db.to_str().unwrap(), "report", "--json"];
        a.extend(args);
        let v: serde_json::Value = serde_json::from_str(&np(&a)).unwrap();
        v["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&[]), ["good", "two"]);
    assert_eq!(names(&["--host", "two"]), ["two"]);
    let out = Command::new(NP)
        .args(["--db", db.to_str().unwrap(), "report", "--host", "nope"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("\"nope\"") && err.contains("good, two"),
        "{err}"
    );
}

#[test]
fn quiet_keeps_only_what_explains_the_exit_and_verbose_adds_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let good = FakeAgent::start(TOKEN.to_vec(), history());
    let hosts = [
        format!("good={}", good.addr),
        "dead=127.0.0.1:1".to_string(),
    ];
    let out = record_with(dir.path(), &["-q"], "2s", &hosts);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().all(|l| l.starts_with("nasprobe: dead")),
        "only the lines about the host that failed: {err}"
    );
    assert!(err.contains("nasprobe: dead: never reached in 2."), "{err}");
    // Without -q: the progress and summary lines; with -v: the log as well. (A new store: the
    // first one holds everything of `good` already.)
    let dir = tempfile::tempdir().unwrap();
    let out = record_with(dir.path(), &["-v"], "2s", &hosts[..1]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("nasprobe: recording good into "), "{err}");
    assert!(err.contains("nasprobe: stored "), "{err}");
    assert!(err.contains(" INFO "), "-v: the info log: {err}");
    let out = record_with(dir.path(), &["-q", "-v"], "1s", &hosts[..1]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "-q and -v together are a usage error"
    );
}

#[test]
fn a_ca_file_that_is_missing_or_holds_no_certificate_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("ca.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    for (file, why) in [
        (dir.path().join("none.pem"), "No such file"),
        (empty, "no certificate in it"),
    ] {
        let out = Command::new(NP)
            .arg("--ca-file")
            .arg(&file)
            .args([
                "export",
                "--remote-write",
                "https://localhost:1/api/v1/write",
            ])
            .arg("--db")
            .arg(dir.path().join("db"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&file.display().to_string()) && err.contains(why),
            "{err}"
        );
    }
}

fn np(args: &[&str]) -> String {
    let out = Command::new(NP).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_bash_completion_loads_and_completes_rep_to_report() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("nasprobe.bash");
    std::fs::write(&script, np(&["completions", "bash"])).unwrap();
    // As bash calls a completion function: COMP_WORDS, COMP_CWORD, then (command, word, previous).
    let probe = format!(
        "source {}; COMP_WORDS=(nasprobe rep); COMP_CWORD=1; COMP_LINE='nasprobe rep'; \
         COMP_POINT=12; _nasprobe nasprobe rep nasprobe; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &probe])
        .output()
        .expect("bash");
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(words.trim(), "report", "{out:?}");
}

#[test]
fn every_shell_gets_a_script_and_the_man_page_has_every_command() {
    for (shell, marker) in [
        ("zsh", "#compdef nasprobe"),
        ("fish", "complete -c nasprobe"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let s = np(&["completions", shell]);
        assert!(s.contains(marker) && s.contains("report"), "{shell}: {s}");
    }
    let page = np(&["man"]);
    assert!(page.contains(".TH nasprobe 1"), "{page}");
    for cmd in ["RECORD", "WATCH", "REPORT", "COMPLETIONS", "MAN"] {
        assert!(page.contains(&format!(".SH \"NASPROBE {cmd}\"")), "{cmd}");
    }
    assert!(page.contains("Exit status: 0 when every host delivered records"));
}
