//! `nasprobe deploy` against a hostile NAS (issue 39, rows 5, 8, 9 and 13): a fake `ssh`
//! (`NASPROBE_SSH`, a shell script) answers as a hostile box would: terminal escapes in every
//! answer, 1 GiB to the probe, a probe that never ends, a token that is no token. Each test
//! asserts the bound: no ESC or BEL byte reaches the desktop's terminal, the collector's address
//! space stays under 512 MiB while 1 GiB is offered, the step fails at its deadline, no token
//! file or host list is written, a prefix that resolves to a system folder and a destination
//! that starts with `-` are refused before any ssh is run, and `--` precedes the destination in
//! every ssh call. (The quoting of values for the NAS's shell: cmd/deploy.rs's unit tests, which
//! source the rendered files in a real `sh`.)

use std::path::PathBuf;
use std::process::{Command, Output};

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
/// The collector's address-space limit while a NAS offers 1 GiB (its old cost was 2.1 GB).
const AS_LIMIT: u64 = 512 << 20;

/// A fake ssh: logs its arguments (one call a line, fields split by `|`) to `calls`, answers
/// `ssh -G` as OpenSSH does for an alias of 127.0.0.1, and runs `$FAKE_MODE`'s answer for the
/// remote command.
const FAKE_SSH: &str = r#"#!/bin/sh
printf '%s|' "$@" >>"$FAKE_DIR/calls"; echo >>"$FAKE_DIR/calls"
for a in "$@"; do
    case "$a" in
        -G) printf 'user root\nhostname 127.0.0.1\nport 22\n'; exit 0 ;;
        -O) exit 0 ;;
    esac
done
for cmd in "$@"; do :; done
esc=$(printf '\033]0;owned\007\033]52;c;aGk=\007\033[2J\033[H')
case "$FAKE_MODE:$cmd" in
    escapes:"sh -s") cat >/dev/null; printf '%sx86_64\n' "$esc"; printf '%s\n' "$esc" >&2 ;;
    flood:"sh -s") cat >/dev/null; exec head -c 1073741824 /dev/zero ;;
    hang:"sh -s") cat >/dev/null; exec sleep 600 ;;
    token:"sh -s")
        cat >"$FAKE_DIR/script"
        if grep -q '^uname -m' "$FAKE_DIR/script"; then printf 'x86_64\n0\n'
        else echo "result=installed old= new=nasprobe-agent_0.1 changed=agent boot=none:initdir"
        fi ;;
    token:mktemp*) echo /tmp/nasprobe-deploy.fake ;;
    token:cat\ \>*) cat >/dev/null ;;
    token:cat\ *) printf '%s' "$esc"; head -c 5000 /dev/zero | tr '\0' a ;;
    *) cat >/dev/null ;;
esac
"#;

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        std::fs::write(&ssh, FAKE_SSH).unwrap();
        std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::write(dir.path().join("agent"), b"not really an agent").unwrap();
        Fake { dir }
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    /// `nasprobe deploy ARGS` through the fake in `mode`, its address space limited.
    fn deploy(&self, mode: &str, args: &[&str]) -> Output {
        let mut c = Command::new(NP);
        c.arg("--hosts-file")
            .arg(self.path("conf/hosts"))
            .arg("deploy")
            .arg("--agent")
            .arg(self.path("agent"))
            .args(args)
            .env("NASPROBE_SSH", self.path("ssh"))
            .env("NASPROBE_SCP", "/nonexistent/scp")
            .env("NASPROBE_SSH_DEADLINE", "3")
            .env("FAKE_DIR", self.dir.path())
            .env("FAKE_MODE", mode);
        limit_address_space(&mut c);
        c.output().unwrap()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn limit_address_space(c: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setrlimit(2) only, between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let l = libc::rlimit {
                rlim_cur: AS_LIMIT,
                rlim_max: AS_LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The first character of `b` a terminal would act on (ESC, BEL, CSI), if any.
fn control_at(b: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(b)
        .chars()
        .position(|x| matches!(x, '\u{1b}' | '\u{7}' | '\u{9b}'))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn nothing_written(f: &Fake) {
    assert!(!f.path("conf/hosts").exists(), "a host list was written");
    assert!(!f.path("conf/tokens").exists(), "a token was written");
}

#[test]
fn escapes_from_the_nas_never_reach_the_terminal() {
    let f = Fake::new();
    let o = f.deploy("escapes", &["root@nas1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    for (what, b) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        assert_eq!(control_at(b), None, "{what}: {}", text(&o));
    }
    assert!(text(&o).contains("␛]0;owned␇"), "{}", text(&o));
}

#[test]
fn a_gigabyte_answer_is_cut_off_at_the_bound() {
    let f = Fake::new();
    let o = f.deploy("flood", &["root@nas1"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("answered more than 64 KiB"), "{t}");
}

#[test]
fn a_nas_that_never_answers_fails_at_the_deadline() {
    let f = Fake::new();
    let start = std::time::Instant::now();
    let o = f.deploy("hang", &["root@nas1"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("gave no complete answer in 3 s"), "{t}");
    // A hang guard, not a timing assertion: without the deadline this takes 600 s.
    assert!(start.elapsed().as_secs() < 120);
}

#[test]
fn a_token_that_is_no_token_is_never_written() {
    let f = Fake::new();
    let o = f.deploy("token", &["root@nas1"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("nasprobe: deploy: token:") && l.contains("is no token")),
        "{t}"
    );
    assert_eq!(control_at(&o.stdout), None, "{t}");
    assert_eq!(control_at(&o.stderr), None, "{t}");
    nothing_written(&f);
    let calls = f.calls();
    assert!(calls.len() >= 5, "{calls:?}");
    for c in &calls {
        let a: Vec<&str> = c.split('|').collect();
        if a.contains(&"-G") || a.contains(&"-O") {
            continue;
        }
        let at = a.iter().position(|x| *x == "root@nas1").expect(c);
        assert_eq!(a[at - 1], "--", "no -- before the destination: {c}");
    }
}

#[test]
fn prefixes_and_destinations_that_are_not_safe_are_refused_before_ssh() {
    let f = Fake::new();
    for (args, want) in [
        (
            &["--prefix", "//etc", "root@nas1"][..],
            "is /etc, the root or a top-level",
        ),
        (&["--prefix", "/usr/..", "root@nas1"][..], "is /, the root"),
        (&["--prefix", "/volume1/../etc", "root@nas1"][..], "is /etc"),
        (
            &["--prefix", "/usr/local", "root@nas1"][..],
            "a system folder",
        ),
        (
            &["--", "-oProxyCommand=touch x"][..],
            "must not start with '-'",
        ),
    ] {
        let o = f.deploy("token", args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {t}");
        assert!(t.lines().count() == 1 && t.contains(want), "{args:?}: {t}");
    }
    assert_eq!(f.calls(), Vec::<String>::new(), "ssh ran");
    nothing_written(&f);
}
