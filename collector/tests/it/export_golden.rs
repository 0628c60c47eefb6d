//! `nasprobe export` over a fixed recording (the testing NAS, one host, three records 1 s apart
//! from 2023-11-14T22:13:21Z, the third an exit event): CSV, JSON lines and line protocol
//! byte for byte as kept in `tests/golden/`. Regenerate them with
//! `NASPROBE_BLESS=1 cargo test -p nasprobe --test it export_golden::` and review the diff.

use std::path::Path;
use std::process::Command;

use crate::export_serve::fill_from;

/// The recording's start, ms since the epoch (fixed: the output names its times).
const START_MS: u64 = 1_700_000_000_000;

/// `export --format FORMAT` over the recording equals the golden file `export.EXT`.
fn golden(format: &str, ext: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("np.db");
    fill_from(&db, &["nas1"], 3, START_MS, 3);
    let out = Command::new(env!("CARGO_BIN_EXE_nasprobe"))
        .arg("--db")
        .arg(&db)
        .args(["export", "--format", format])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/export.{ext}"));
    if std::env::var_os("NASPROBE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with NASPROBE_BLESS=1 to create it",
            path.display()
        )
    });
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "export --format {format} differs from {} at line {}:\n got: {:?}\nwant: {:?}\n\
             (NASPROBE_BLESS=1 regenerates it)",
            path.display(),
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first)
        );
    }
}

#[test]
fn csv_is_as_kept() {
    golden("csv", "csv");
}

#[test]
fn json_lines_are_as_kept() {
    golden("json", "jsonl");
}

#[test]
fn line_protocol_is_as_kept() {
    golden("influx", "influx");
}
