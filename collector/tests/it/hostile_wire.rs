//! The collector against an agent that holds the token and lies (issue 19): a fake agent
//! (`nasprobe::testing::HostileAgent`, the real handshake) per attack, the real collector
//! (`Collector`, the same code `record` runs) storing into a fresh database, then the real
//! `nasprobe` binary reading it back. Each test asserts the fixed behaviour:
//!
//! - names: no control character, C1 control, DEL or bidi override in any output byte (report,
//!   report --json, --html, events, events --json, export csv), stand-ins visible instead;
//! - times: `u64::MAX`, 0 and a year ahead are rejected gaps; the report's window stays sane and
//!   `--html` finishes;
//! - values: every absurd field is a `rejected: <field>` gap; `check` re-runs the checks over
//!   what is stored;
//! - seq: `Gone` to `u64::MAX` or `2^63-1` is refused, nothing is stored past it;
//! - Hello: `clock_ticks_per_sec` 0 and `cpu_count` 0 are refused before anything is stored;
//! - flood: at most `EVENTS_PER_INTERVAL` events per interval are stored, the rest one gap;
//! - formulas: CSV fields starting with `=`, `+`, `-`, `@` are prefixed with `'`;
//! - corrupt rows: reads skip them and say which (host, seq) as an `undecodable` gap; `check`
//!   names them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nasprobe::hosts::HostSpec;
use nasprobe::net::conn::{Collector, HostLive, Target};
use nasprobe::net::validate::EVENTS_PER_INTERVAL;
use nasprobe::store::Store;
use nasprobe::testing::{Attack, HostileAgent, absurd_values, hostile_hello};
use nasprobe_testkit::big_stack;

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");
const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

/// Runs a collector against one hostile agent until `done` holds for its live state (or 20 s),
/// returns the database path and the host's final live state.
fn collect(
    dir: &Path,
    attack: Attack,
    done: impl Fn(&HostLive) -> bool + Send + 'static,
) -> (PathBuf, HostLive) {
    let db = dir.join(format!("{attack:?}.db"));
    let db2 = db.clone();
    let live = big_stack(move || {
        let agent = HostileAgent::start(TOKEN.to_vec(), attack);
        let target = Target {
            spec: HostSpec {
                name: "evil".into(),
                addr: agent.addr.clone(),
                token_file: None,
            },
            token: Arc::new(TOKEN.to_vec()),
        };
        let col = Collector::start(Store::open(&db2).unwrap(), vec![target], None);
        let end = Instant::now() + Duration::from_secs(20);
        while !done(&col.live.snapshot()[0]) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        // What was received is committed by `finish`.
        let live = col.live.snapshot()[0].clone();
        col.finish().unwrap();
        live
    });
    (db, live)
}

fn np(db: &Path, args: &[&str]) -> Output {
    Command::new(NP)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

/// The first byte sequence that a terminal would interpret: C0 (except `\n`, `\t`), DEL, C1
/// (UTF-8 `C2 80..9F`), bidi controls and line separators (UTF-8 `E2 80 8E/8F/A8..AE`,
/// `E2 81 A6..A9`, `D8 9C`).
fn unsafe_at(b: &[u8]) -> Option<usize> {
    (0..b.len()).find(|&i| {
        let c = b[i];
        let n = |k: usize| b.get(i + k).copied().unwrap_or(0);
        (c < 0x20 && c != b'\n' && c != b'\t')
            || c == 0x7f
            || (c == 0xc2 && (0x80..=0x9f).contains(&n(1)))
            || (c == 0xe2 && n(1) == 0x80 && matches!(n(2), 0x8e | 0x8f | 0xa8..=0xae))
            || (c == 0xe2 && n(1) == 0x81 && (0xa6..=0xa9).contains(&n(2)))
            || (c == 0xd8 && n(1) == 0x9c)
    })
}

fn assert_safe(what: &str, b: &[u8]) {
    if let Some(i) = unsafe_at(b) {
        let lo = i.saturating_sub(40);
        panic!(
            "{what}: unsafe byte {:#04x} at {i}: {:?}",
            b[i],
            String::from_utf8_lossy(&b[lo..(i + 40).min(b.len())])
        );
    }
}

#[test]
fn names_with_escapes_never_reach_an_output() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live) = collect(dir.path(), Attack::Names, |h| h.received >= 12);
    assert_eq!(live.received, 12, "{live:?}");
    let h = live.hello.as_ref().unwrap();
    assert!(h.host_name.contains('␛'), "{:?}", h.host_name);
    let html = dir.path().join("r.html");
    let mut seen_standin = false;
    for args in [
        &["report"][..],
        &["report", "--json"],
        &["report", "--html", html.to_str().unwrap()],
        &["events"],
        &["events", "--json"],
        &["export", "--format", "csv"],
        &["export", "--format", "json"],
        &["check"],
    ] {
        let o = np(&db, args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_safe(&format!("{args:?} stdout"), &o.stdout);
        assert_safe(&format!("{args:?} stderr"), &o.stderr);
        seen_standin |= String::from_utf8_lossy(&o.stdout).contains('␛');
    }
    let page = std::fs::read(&html).unwrap();
    assert_safe("report.html", &page);
    assert!(
        String::from_utf8_lossy(&page).contains('␛'),
        "stand-ins shown in the HTML"
    );
    assert!(seen_standin, "the stand-ins are shown, not dropped");
    // The item a copy is on: its path is shown with stand-ins in transfers[] and stalls[].
    let o = np(&db, &["report", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let path = v["transfers"][0]["path"].as_str().unwrap_or_default();
    assert!(path.starts_with("/share/␛]0;pwned␇"), "{}", v["transfers"]);
}

/// A database an older collector wrote with raw escapes is shown safely too (the read edge).
#[test]
fn escapes_already_in_a_store_are_made_safe_when_read() {
    use nasprobe::store::Item;
    use nasprobe_proto::{Record, RecordBody};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    big_stack({
        let db = db.clone();
        move || {
            let mut st = Store::open(&db).unwrap();
            let mut hello = hostile_hello(Attack::Names);
            hello.host_name = "raw\u{1b}]0;t\u{7}".try_into().unwrap();
            let reg = st.register("old", "1.2.3.4:7451", &hello).unwrap();
            let script = nasprobe::testing::hostile_script(Attack::Names, &hello);
            let mut items = Vec::new();
            for m in script {
                if let nasprobe_proto::Message::Record(r) = m {
                    let body = match &r.body {
                        RecordBody::Sample(s) => postcard::to_allocvec(s).unwrap(),
                        RecordBody::Event(e) => postcard::to_allocvec(e).unwrap(),
                    };
                    let r: Record = r;
                    items.push(Item::from_record(reg.instance, &r, body));
                }
            }
            st.write_batch(&items).unwrap();
        }
    });
    for args in [
        &["report"][..],
        &["report", "--json"],
        &["events"],
        &["events", "--json"],
    ] {
        let o = np(&db, args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_safe(&format!("old store {args:?}"), &o.stdout);
    }
}

#[test]
fn record_times_outside_the_plausible_window_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live) = collect(dir.path(), Attack::Times, |h| h.received + h.rejected >= 8);
    assert_eq!((live.received, live.rejected), (5, 3), "{live:?}");
    assert!(
        live.bad.as_deref().unwrap().contains("time_ms"),
        "{:?}",
        live.bad
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (lo, hi): (i64, i64) = conn
        .query_row(
            // Raw rows of the open window and the chunks folded from the older ones.
            "SELECT MIN(lo), MAX(hi) FROM (
                 SELECT MIN(time_ms) AS lo, MAX(time_ms) AS hi FROM samples
                 UNION ALL SELECT MIN(first_ms), MAX(last_ms) FROM sample_chunks)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let now = nasprobe_proto::time::now_ms() as i64;
    assert!(lo > now - 86_400_000 && hi < now + 86_400_000, "{lo} {hi}");
    let rejected: Vec<(i64, String)> = conn
        .prepare("SELECT from_seq, reason FROM gaps ORDER BY from_seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rejected.iter().map(|g| g.0).collect::<Vec<_>>(), [2, 4, 6]);
    for (_, why) in &rejected {
        assert!(why.starts_with("rejected: time_ms"), "{why}");
    }
    let o = np(&db, &["report"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!text.contains("584556019"), "{text}");
    let html = dir.path().join("t.html");
    let o = np(&db, &["report", "--html", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(&html).unwrap().len() < 4 << 20);
}

/// The gaps stored are one `rejected: …` per field of `fields`, in order, each naming it; and
/// `check` passes over what was stored.
fn assert_rejected_gaps(conn: &rusqlite::Connection, db: &Path, fields: Vec<&str>) {
    let reasons: Vec<String> = conn
        .prepare("SELECT reason FROM gaps ORDER BY from_seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(reasons.len(), fields.len(), "{reasons:#?}");
    for (field, why) in fields.iter().zip(&reasons) {
        assert!(
            why.starts_with("rejected: ") && why.contains(field),
            "{field}: {why}"
        );
    }
    let o = np(db, &["check"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

/// After the row `seq` of `table` is changed to `body` (a row that slipped in: an older
/// collector, a hand edit), `check` fails naming the host, the seq and `field`.
fn assert_check_names(
    conn: &rusqlite::Connection,
    db: &Path,
    table: &str,
    seq: u64,
    body: &[u8],
    field: &str,
) {
    conn.execute(
        &format!("UPDATE {table} SET body = ?1 WHERE seq = ?2"),
        rusqlite::params![body, seq as i64],
    )
    .unwrap();
    let o = np(db, &["check"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("host evil") && out.contains(&format!("seq {seq}")) && out.contains(field),
        "{field}: {out}"
    );
}

#[test]
fn every_absurd_field_is_a_rejected_gap_and_check_reruns_the_checks() {
    let dir = tempfile::tempdir().unwrap();
    let hello = hostile_hello(Attack::Values);
    let absurd = absurd_values(&hello);
    let n = absurd.len() as u64;
    let (db, live) = collect(dir.path(), Attack::Values, move |h| {
        h.received + h.rejected >= n + 2
    });
    assert_eq!((live.received, live.rejected), (2, n), "{live:?}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_rejected_gaps(&conn, &db, absurd.iter().map(|a| a.0).collect());

    // A row that slipped in (an older collector, a hand edit): check re-runs the checks on it.
    let mut s = nasprobe::testing::nas_sample(9);
    s.vm.as_mut().unwrap().swap_out_pages = u32::MAX;
    let body = postcard::to_allocvec(&s).unwrap();
    assert_check_names(&conn, &db, "samples", 1, &body, "swap out");
}

#[test]
fn a_hello_with_absurd_fields_is_refused() {
    for (attack, field) in [
        (Attack::HelloTicks0, "clock_ticks_per_sec 0"),
        (Attack::HelloCpus0, "cpu_count 0"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (db, live) = collect(dir.path(), attack, |h| h.bad.is_some());
        let bad = live.bad.unwrap_or_default();
        assert!(
            bad.contains("evil: implausible Hello") && bad.contains(field),
            "{bad}"
        );
        assert_eq!(live.received, 0);
        let conn = rusqlite::Connection::open(&db).unwrap();
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM instances", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "{attack:?}: nothing registered");
    }
}

#[test]
fn a_gone_past_the_hello_range_is_refused() {
    for attack in [Attack::GoneMax, Attack::GoneHalf] {
        let dir = tempfile::tempdir().unwrap();
        let (db, live) = collect(dir.path(), attack, |h| h.bad.is_some());
        let bad = live.bad.unwrap_or_default();
        // GoneHalf's Hello announces seq 2^63-1 itself: more than an agent of its age can have
        // numbered, so the Hello is refused before the Gone (issue 28).
        let hello_refused = attack == Attack::GoneHalf;
        let why = if hello_refused {
            "evil: implausible Hello: newest_seq"
        } else {
            "evil: Gone 1..="
        };
        assert!(bad.contains(why), "{attack:?}: {bad}");
        assert_eq!(live.received, 0, "{attack:?}");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let (rows, neg): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM samples)
                      + (SELECT COUNT(*) FROM gaps WHERE reason NOT LIKE 'refused:%'),
                        (SELECT COUNT(*) FROM samples WHERE seq < 0)
                      + (SELECT COUNT(*) FROM instances WHERE last_seq < 0)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((rows, neg), (0, 0), "{attack:?}");
        // The refusal is stored (no seq range: nothing of the stream is claimed by it).
        let refused: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM gaps WHERE reason LIKE 'refused: host marked bad: evil: Gone%'
                 AND from_seq IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        // (A refused Hello registers nothing: there is no instance to store the refusal under.)
        assert_eq!(
            refused >= 1,
            !hello_refused,
            "{attack:?}: the refusal is stored"
        );
        let o = np(&db, &["check"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && (hello_refused || out.contains("seq none")),
            "{attack:?}: {out}"
        );
    }
}

#[test]
fn an_event_flood_is_capped_counted_and_one_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live) = collect(dir.path(), Attack::Flood, |h| {
        h.received + h.dropped.events >= 20_004
    });
    let kept = EVENTS_PER_INTERVAL as u64;
    assert_eq!(live.dropped.events, 20_000 - kept, "{live:?}");
    assert_eq!(live.received, 4 + kept);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let events: i64 = conn
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(events as u64, kept);
    let gaps: Vec<(i64, i64, i64, String)> = conn
        .prepare("SELECT from_seq, to_seq, samples, reason FROM gaps")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].0 as u64, 2 + kept);
    assert_eq!(gaps[0].1, 20_001);
    assert_eq!(gaps[0].2 as u64, 20_000 - kept);
    assert!(gaps[0].3.starts_with("flood"), "{gaps:?}");
    let o = np(&db, &["check"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let o = np(&db, &["report"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.lines().filter(|l| l.contains("flood")).count(),
        1,
        "{text}"
    );
}

#[test]
fn csv_fields_that_look_like_formulas_are_neutralized() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = collect(dir.path(), Attack::Formulas, |h| h.received >= 10);
    let o = np(&db, &["export", "--format", "csv"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = String::from_utf8_lossy(&o.stdout);
    let mut saw = 0;
    for line in csv.lines().skip(1) {
        for field in line.split(',') {
            let f = field.trim_start_matches('"');
            let raw_minus = f.starts_with('-') && !f[1..].starts_with(|c: char| c.is_ascii_digit());
            assert!(
                !f.starts_with(['=', '+', '@']) && !raw_minus,
                "raw formula field {field:?} in {line}"
            );
            saw += usize::from(f.starts_with("'=") || f.starts_with("'+") || f.starts_with("'@"));
        }
    }
    assert!(saw > 0, "the names are exported, prefixed: {csv}");
}

#[test]
fn a_corrupt_row_is_skipped_named_and_reported_as_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = collect(dir.path(), Attack::Names, |h| h.received >= 12);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE samples SET body = x'' WHERE seq = 3", [])
        .unwrap();
    conn.execute("UPDATE events SET body = body || x'00ff' WHERE seq = 4", [])
        .unwrap();
    for args in [&["report"][..], &["events"], &["export", "--format", "csv"]] {
        let o = np(&db, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {err}");
    }
    let o = np(&db, &["report", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let gaps: Vec<String> = v["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["reason"].as_str().unwrap().to_string())
        .collect();
    for want in [
        "undecodable: the stored sample seq 3 does not decode",
        "undecodable: the stored event seq 4 does not decode",
    ] {
        assert!(gaps.iter().any(|r| r == want), "{want}: {gaps:?}");
    }
    let o = np(&db, &["check"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("host evil") && out.contains("seq 3") && out.contains("seq 4"),
        "{out}"
    );
}

fn write_mode(path: &Path, content: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn token_files_follow_the_agents_rules() {
    use nasprobe::token::read_token;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hex = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
    write_mode(&d.join("good"), hex, 0o600);
    assert_eq!(read_token(&d.join("good")).unwrap(), &hex[..64]);
    std::os::unix::fs::symlink("good", d.join("same-dir-link")).unwrap();
    assert_eq!(read_token(&d.join("same-dir-link")).unwrap(), &hex[..64]);
    let other = tempfile::tempdir().unwrap();
    write_mode(&other.path().join("secret"), hex, 0o600);
    std::os::unix::fs::symlink(other.path().join("secret"), d.join("far-link")).unwrap();
    std::os::unix::fs::symlink("/etc/shadow", d.join("shadow-link")).unwrap();
    write_mode(&d.join("short"), b"abcd\n", 0o600);
    write_mode(
        &d.join("binary"),
        b"0123456789abcdef\x00\x01\xfe\xff0123456789",
        0o600,
    );
    write_mode(&d.join("huge"), &vec![b'a'; 100_000], 0o600);
    write_mode(&d.join("open"), hex, 0o644);
    for (name, want) in [
        ("far-link", "outside its directory"),
        ("shadow-link", "outside its directory"),
        ("short", "shorter than 16"),
        ("binary", "printable ASCII"),
        // Its real size, not what was read of it (issue 28).
        ("huge", "100000 bytes, more than a token file holds (4096)"),
        ("open", "chmod 600"),
        ("missing", "cannot read token file"),
    ] {
        let e = read_token(&d.join(name)).unwrap_err().to_string();
        assert!(e.contains(want), "{name}: {e}");
    }
    std::fs::create_dir(d.join("dir")).unwrap();
    std::fs::set_permissions(
        d.join("dir"),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    assert!(read_token(&d.join("dir")).is_err());
}

#[test]
fn record_with_a_wrong_token_exits_non_zero_naming_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let agent = nasprobe::testing::FakeAgent::start(
        TOKEN.to_vec(),
        nasprobe::testing::FakeHistory::new(1, nasprobe_proto::time::now_ms(), 1000),
    );
    let tok = dir.path().join("token");
    write_mode(&tok, b"ffffffffffffffffffffffffffffffff\n", 0o600);
    let o = Command::new(NP)
        .arg("--db")
        .arg(dir.path().join("w.db"))
        .arg("--token-file")
        .arg(&tok)
        .args(["record", "--duration", "2s"])
        .arg(format!("nas9={}", agent.addr))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    // One line naming the host and why (`net::outcome`).
    assert!(
        err.lines()
            .any(|l| l.starts_with("nasprobe: nas9: never authenticated")
                && l.contains("the agent refused us: authentication failed")),
        "{err}"
    );
}

/// Read commands open the database read-only: on a read-only mount they work (and say they
/// read a snapshot), and they never write (issue 19, finding 10).
#[test]
fn read_commands_work_on_a_read_only_mount() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("ro");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        nasprobe_testkit::skip::missing(
            "read_commands_work_on_a_read_only_mount",
            "cannot mount a tmpfs (not root?)",
        );
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            Command::new("umount").arg(&self.0).status().ok();
        }
    }
    let _u = Unmount(mnt.clone());
    let (src, _) = collect(dir.path(), Attack::Flood, |h| h.received >= 4);
    let db = mnt.join("ro.db");
    std::fs::copy(&src, &db).unwrap();
    let st = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(st.success());
    let before = std::fs::read(&db).unwrap();
    for args in [
        &["report"][..],
        &["report", "--json"],
        &["events"],
        &["check"],
        &["export", "--format", "csv"],
    ] {
        let o = np(&db, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("read as an immutable snapshot"),
            "{args:?}: {err}"
        );
        assert!(!o.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "nothing written");
    let names: Vec<_> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

/// An event attack: the real-looking events are stored, every absurd one is a `rejected: …`
/// gap naming its field, `check` passes, and re-runs the same checks on a stored row changed
/// into an absurd one.
fn event_attack(attack: Attack) {
    let dir = tempfile::tempdir().unwrap();
    let (real, absurd) = nasprobe::testing::event_cases(attack);
    assert!(!real.is_empty() && !absurd.is_empty());
    let n = (real.len() + absurd.len() + 2) as u64;
    let (db, live) = collect(dir.path(), attack, move |h| h.received + h.rejected >= n);
    assert_eq!(
        (live.received, live.rejected),
        (real.len() as u64 + 2, absurd.len() as u64),
        "{live:?}"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stored: Vec<Vec<u8>> = conn
        .prepare("SELECT body FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let stored: Vec<nasprobe_proto::Event> = stored
        .iter()
        .map(|b| postcard::from_bytes(b).unwrap())
        .collect();
    assert_eq!(stored, real, "the real-looking events are stored as sent");
    assert_rejected_gaps(&conn, &db, absurd.iter().map(|a| a.0).collect());

    // A row that slipped in: `check` runs the same event checks over what is stored.
    let (field, bad) = &absurd[0];
    let body = postcard::to_allocvec(bad).unwrap();
    assert_check_names(&conn, &db, "events", 2, &body, field);
}

#[test]
fn absurd_process_ends_are_rejected_gaps_real_ones_stored() {
    event_attack(Attack::ProcessEndValues);
}

#[test]
fn absurd_kernel_messages_are_rejected_gaps_real_ones_stored() {
    event_attack(Attack::KernelMessageValues);
}

#[test]
fn absurd_connections_are_rejected_gaps_real_ones_stored() {
    event_attack(Attack::ConnectionsValues);
}

#[test]
fn absurd_open_files_are_rejected_gaps_real_ones_stored() {
    event_attack(Attack::OpenFilesValues);
}
