//! Round three against a hostile peer (issue 39), the collector's rows, on the real `nasprobe`
//! binary and loopback peers: a closed stderr or stdout never aborts a command (`2>&1 | head
//! -1`); the remote-write credentials file is refused when others may read it or when a CR is
//! inside; a receiver's error body with terminal escapes reaches stderr made safe.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nasprobe::testing::{FakeAgent, FakeHistory};

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

/// A private token file holding `TOKEN`.
fn token(dir: &Path) -> PathBuf {
    let tok = dir.join("token");
    std::fs::write(&tok, [TOKEN, b"\n"].concat()).unwrap();
    chmod(&tok, 0o600);
    tok
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

/// `nasprobe --db DIR/r.db --token-file DIR/token ARGS...`.
fn np(dir: &Path) -> Command {
    let mut c = Command::new(NP);
    c.arg("--db")
        .arg(dir.join("r.db"))
        .arg("--token-file")
        .arg(token(dir));
    c
}

/// 20 samples at 1 Hz ending now.
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

/// Runs `sh -c 'CMD 2>&1 | head -1; echo "exit $?"'`-like: the command's stdout and stderr are
/// one pipe whose reader takes one line and goes away. Returns (the line, the exit code).
fn first_line_then_close(mut c: Command) -> (String, Option<i32>) {
    let (rd, wr) = std::io::pipe().unwrap();
    let mut child = c
        .stdout(wr.try_clone().unwrap())
        .stderr(wr)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    drop(c);
    let mut line = String::new();
    BufReader::new(rd).read_line(&mut line).unwrap();
    // The reader is dropped here: every later write of the command meets a closed pipe.
    let st = child.wait().unwrap();
    (line, st.code())
}

/// Row 14: `record … 2>&1 | head -1` ended with a panic (SIGABRT, exit 134 in release; 101 in
/// debug) at its first line after the reader left; now it ends cleanly, with its exit code,
/// and the store it wrote is whole. Read commands with their output cut after one line too.
#[test]
fn a_closed_stderr_or_stdout_never_aborts_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::start(TOKEN.to_vec(), history());
    let mut rec = np(dir.path());
    rec.args(["record", "--duration", "2s", &format!("nas={}", agent.addr)]);
    let (line, code) = first_line_then_close(rec);
    assert!(line.starts_with("nasprobe: recording nas"), "{line}");
    assert_eq!(
        code,
        Some(0),
        "record exits as when interrupted, not by a panic"
    );
    // The store is whole and holds every record the agent sent.
    let check = np(dir.path()).arg("check").output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{text}");
    assert!(
        text.contains("seq 1..20 stored 20 gone 0 duplicates 0 holes none"),
        "{text}"
    );
    for args in [
        &["report"][..],
        &["events"],
        &["check"],
        &["export", "--format", "csv"],
        &["alerts"],
        &["report", "--json"],
    ] {
        let mut c = np(dir.path());
        c.args(args);
        let (line, code) = first_line_then_close(c);
        assert!(!line.is_empty(), "{args:?}");
        assert!(
            matches!(code, Some(0 | 1)),
            "{args:?} ended by {code:?} after {line:?}"
        );
    }
}

/// Row 11: a credentials file of mode 0644 was used silently; a CR inside the token gave 60 s
/// of silent retries. Both are now one error at start naming the mode or the byte, before
/// anything is sent (the receiver here counts the connections it gets: none).
#[test]
fn remote_write_credentials_open_to_others_or_with_a_cr_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::start(TOKEN.to_vec(), history());
    let out = np(dir.path())
        .args(["record", "--duration", "1s", &format!("nas={}", agent.addr)])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rx = TcpListener::bind("127.0.0.1:0").unwrap();
    rx.set_nonblocking(true).unwrap();
    let url = format!("http://{}/api/v1/write", rx.local_addr().unwrap());
    let auth = dir.path().join("auth");
    for (content, mode, want) in [
        (
            &b"bearer s3cret\n"[..],
            0o644,
            "permissions 0644 are too open",
        ),
        (b"bearer s3cret\n", 0o640, "permissions 0640 are too open"),
        (
            b"bearer s3c\rret\n",
            0o600,
            "a carriage return (CR) at byte 10",
        ),
        (
            b"bearer s3cret\r\n",
            0o600,
            "a carriage return (CR) at byte 13",
        ),
        (
            b"bearer s3cret\nbasic a:b\n",
            0o600,
            "a line feed (LF) at byte 13",
        ),
    ] {
        std::fs::write(&auth, content).unwrap();
        chmod(&auth, mode);
        let t = std::time::Instant::now();
        let out = np(dir.path())
            .args(["export", "--remote-write", &url, "--remote-write-auth"])
            .arg(&auth)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(want), "{want:?} in {err}");
        assert!(t.elapsed().as_secs() < 5, "at start, not after retries");
        assert!(!err.contains("s3c"), "the secret is not printed: {err}");
    }
    assert!(rx.accept().is_err(), "nothing was sent");
}

/// An HTTP receiver on loopback answering every request `status` with `body`.
fn answering(status: u16, body: &'static str) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let mut r = BufReader::new(c.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if h == "\r\n" {
                        let mut b = vec![0; len];
                        if r.read_exact(&mut b).is_err() {
                            return;
                        }
                        let resp = format!(
                            "HTTP/1.1 {status} X\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if c.write_all(resp.as_bytes()).is_err() {
                            return;
                        }
                        len = 0;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// What a hostile receiver puts in its error body: clear screen, OSC 0 title, BEL, a C1 CSI,
/// a bidi override.
pub(crate) const HOSTILE_BODY: &str =
    "bad \u{1b}[2J\u{1b}]0;owned\u{7} \u{9b}31m \u{202e}gpj.exe end";

/// The bytes that must never reach a terminal from a receiver.
pub(crate) fn has_escape(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c, '\u{1b}' | '\u{7}' | '\u{9b}' | '\u{202e}'))
}

/// Row 6: a push receiver's error body with escapes was printed raw (ESC, BEL, U+202E, C1);
/// now the refusal line is there, made safe by the one sanitizer.
#[test]
fn a_push_receivers_error_body_reaches_stderr_made_safe() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::start(TOKEN.to_vec(), history());
    let url = answering(400, HOSTILE_BODY);
    let out = np(dir.path())
        .args(["record", "--duration", "3s", "--remote-write"])
        .arg(format!("{url}/api/v1/write"))
        .arg(format!("nas={}", agent.addr))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HTTP 400: bad ␛[2J␛]0;owned␇"), "{err}");
    assert!(err.contains("gpj.exe end"), "{err}");
    assert!(!has_escape(&err), "{err:?}");
}

fn mode(p: &Path) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777
}

/// Row 4: a receiver URL with `user:pass@` and `?token=` that fails printed the secret on
/// stderr at each attempt, showed it in `nasprobe alerts` and stored it in the outbox of a
/// 0644 database in 0755 folders. Now the secrets are `***` everywhere they are printed or
/// stored, the store is 0600 (its -wal too) in new folders of 0700; an existing open one is
/// warned about once.
#[test]
fn receiver_secrets_are_redacted_and_the_store_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new/deeper/r.db");
    // A port nothing listens on: every delivery fails.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let agent = FakeAgent::start(TOKEN.to_vec(), history());
    let hook = format!("webhook=http://alice:hunter2pw@127.0.0.1:{port}/x?token=TOKSECRET9&a=1");
    let ntfy = format!("ntfy=http://127.0.0.1:{port}/topic?auth=AUTHSECRET8");
    let out = Command::new(NP)
        .arg("--db")
        .arg(&db)
        .arg("--token-file")
        .arg(token(dir.path()))
        .args([
            "-v",
            "record",
            "--duration",
            "6s",
            "--alert",
            "host_lost.for=1s",
        ])
        .args(["--no-alert", "stall", "--no-alert", "death"])
        .args(["--notify", &hook, "--notify", &ntfy])
        .arg(format!("nas={}", agent.addr))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("alice:***@127.0.0.1"),
        "the failures are said: {err}"
    );
    assert!(err.contains("token=***&a=1"), "{err}");
    let alerts = Command::new(NP)
        .arg("--db")
        .arg(&db)
        .arg("alerts")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&alerts.stdout);
    assert!(shown.contains("auth=***"), "{shown}");
    let mut stored = Vec::new();
    for f in std::fs::read_dir(db.parent().unwrap()).unwrap() {
        let f = f.unwrap().path();
        stored.extend(std::fs::read(&f).unwrap());
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    for secret in ["hunter2pw", "TOKSECRET9", "AUTHSECRET8"] {
        assert!(!err.contains(secret), "{secret} on stderr: {err}");
        assert!(!shown.contains(secret), "{secret} in alerts: {shown}");
        let s = secret.as_bytes();
        assert!(
            !stored.windows(s.len()).any(|w| w == s),
            "{secret} in the store"
        );
    }
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir.path().join("new")), 0o700);
    // An existing store open to others: one warning with the fix, the file left as it is.
    chmod(&db, 0o644);
    let out = Command::new(NP)
        .arg("--db")
        .arg(&db)
        .arg("--token-file")
        .arg(token(dir.path()))
        .args(["record", "--duration", "1s", "nas=127.0.0.1:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let warned = err.lines().filter(|l| l.contains("(mode 0644)")).count();
    assert_eq!(warned, 1, "{err}");
    assert!(
        err.contains(&format!("chmod 600 {}", db.display())),
        "{err}"
    );
}
