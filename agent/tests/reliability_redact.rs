//! Secrets on command lines never leave the agent (issue 10), end to end: the real agent runs
//! over a generated /proc tree whose busy processes carry secrets the default list masks
//! (`--password VALUE`, `password=`, `token=`, `key=`) and one only `--redact` masks; every byte
//! the agent sends on the wire for a few seconds (process samples with command lines, start
//! events) is searched for the secrets. `parse::cmdline` unit tests cover the masking rules; this
//! checks that nothing on the way (top list, events, first-report cmdline) bypasses them.

mod server_common;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use server_common::*;

const SECRETS: [&str; 5] = ["hunter2", "s3cr3tT0k", "Pa55w0rd", "xyzzyKEY", "opensesame"];

/// pid, comm, cmdline (NUL-separated).
const PROCS: [(u32, &str, &str); 5] = [
    (
        30001,
        "rsync",
        "rsync\0--server\0--password\0hunter2\0/mnt/a\0",
    ),
    (30002, "backup", "backup\0--upload\0token=s3cr3tT0k\0"),
    (30003, "mysqld", "mysqld\0--user=db\0password=Pa55w0rd\0"),
    (30004, "s3sync", "s3sync\0--api-key=xyzzyKEY\0/data\0"),
    (30005, "curl", "curl\0-u\0admin:opensesame\0http://nas/\0"),
];

fn put(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let tmp = p.with_extension("tmp~");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
}

fn pidstat(pid: u32, comm: &str, utime: u64) -> String {
    format!(
        "{pid} ({comm}) R 1 {pid} {pid} 0 -1 4194304 100 0 0 0 {utime} 3 0 0 20 0 1 0 500 \
         1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
    )
}

/// Writes the tree at step `k` (every process burns 5 ticks per step).
fn write_tree(root: &Path, k: u64) {
    let t = 1000 + k * 10;
    put(
        root,
        "proc/stat",
        &format!(
            "cpu  {t} 0 {t} {t} 0 0 0 0 0 0\ncpu0 {t} 0 {t} {t} 0 0 0 0 0 0\n\
             intr 1\nctxt {t}\nbtime 1700000000\nprocesses {t}\nprocs_running 2\nprocs_blocked 0\n"
        ),
    );
    put(root, "proc/uptime", &format!("{}.00 0.00\n", 1000 + k));
    put(
        root,
        "proc/meminfo",
        "MemTotal: 2000000 kB\nMemFree: 1000000 kB\nMemAvailable: 1500000 kB\n",
    );
    for (pid, comm, cmdline) in PROCS {
        let stat = pidstat(pid, comm, 10 + 5 * k);
        put(root, &format!("proc/{pid}/stat"), &stat);
        put(root, &format!("proc/{pid}/task/{pid}/stat"), &stat);
        put(root, &format!("proc/{pid}/comm"), &format!("{comm}\n"));
        put(root, &format!("proc/{pid}/cmdline"), cmdline);
    }
}

#[test]
fn secrets_in_command_lines_never_reach_the_wire() {
    big_stack(redact_body);
}

fn redact_body() {
    let root = std::env::temp_dir().join(format!("nasprobe-redact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("sys")).unwrap();
    write_tree(&root, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (root, stop) = (root.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut k = 1;
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                write_tree(&root, k);
                k += 1;
            }
        })
    };
    let proc_root = root.join("proc");
    let sys_root = root.join("sys");
    let agent = AgentBuilder::new("redact")
        .args(&[
            "--interval",
            "100",
            "--scan",
            "all",
            "--event-min-lifetime",
            "0",
        ])
        .args(&["--redact", "admin:", "--proc-root"])
        .arg(proc_root.to_str().unwrap())
        .arg("--sys-root")
        .arg(sys_root.to_str().unwrap())
        .start();
    let (mut c, _hello) = agent.connect();
    c.resume(0, 0);
    // Every byte the agent sends for 3 s, undecoded.
    let mut wire = Vec::new();
    let end = Instant::now() + Duration::from_secs(3);
    c.stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    while Instant::now() < end {
        let mut buf = [0u8; 16384];
        match c.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => wire.extend_from_slice(&buf[..n]),
            Err(_) => continue,
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let text = String::from_utf8_lossy(&wire);
    // The processes were reported, with their command lines masked.
    for shown in [
        "rsync --server --password *** /mnt/a",
        "backup --upload token=***",
        "mysqld --user=db password=***",
        "s3sync --api-key=***",
        "curl -u admin:*** http://nas/",
    ] {
        assert!(
            text.contains(shown),
            "{shown:?} not on the wire ({} bytes):\n{text}",
            wire.len()
        );
    }
    for s in SECRETS {
        assert!(!text.contains(s), "secret {s:?} on the wire");
        assert!(!agent.log().contains(s), "secret {s:?} in the agent's log");
    }
    println!(
        "FIGURES redact: processes=5 secrets=5 wire_bytes={} secrets_found=0",
        wire.len()
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// An open file whose path is longer than the wire's 256 bytes, with a secret near its start
/// (issue 28, item 5): the real agent on the real /proc sees this test process write it, and
/// its `OpenFiles` event carries the path masked, never the secret (it used to cut the path
/// to its last 253 bytes first and redact after).
#[test]
fn a_long_open_file_path_is_redacted_whole_before_it_is_cut() {
    big_stack(long_path_body);
}

fn long_path_body() {
    use std::os::unix::fs::FileExt;
    let root = std::env::temp_dir().join(format!("nasprobe-redact-path-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    // The secret at the end of its component: cut to its last 253 bytes, the path loses
    // `token=` and keeps the secret.
    let head = root.join(format!("token={}LongPathSecret9", "x".repeat(80)));
    let rest = 336 - head.as_os_str().len() - "/x.bin".len() - 2;
    let dir = head
        .join("d".repeat(rest / 2))
        .join("e".repeat(rest - rest / 2));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.bin");
    assert_eq!(path.as_os_str().len(), 336);
    let f = std::fs::File::create(&path).unwrap();
    // A writer the open-files sampler ranks first: storage writes (each fdatasync cleans the
    // pages the next pwrite dirties again).
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let writer = std::thread::spawn(move || {
        let block = vec![0x5au8; 1 << 20];
        while !s2.load(Ordering::SeqCst) {
            f.write_all_at(&block, 0).unwrap();
            f.sync_data().unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let agent = AgentBuilder::new("redact-path")
        .args(&["--interval", "500"])
        .start();
    let (mut c, _hello) = agent.connect();
    c.resume(0, 0);
    let mut seen = None;
    let mut all = String::new();
    let end = Instant::now() + Duration::from_secs(20);
    while seen.is_none() && Instant::now() < end {
        let r = c.record();
        let text = format!("{:?}", r.body);
        if let nasprobe_proto::RecordBody::Event(nasprobe_proto::Event::OpenFiles(of)) = &r.body {
            for p in &of.procs {
                for file in &p.files {
                    if file.path.contains("token=") || file.path.ends_with("/x.bin") {
                        seen = Some(file.path.to_string());
                    }
                }
            }
        }
        all.push_str(&text);
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let _ = std::fs::remove_dir_all(&root);
    let seen = seen.unwrap_or_else(|| panic!("no OpenFiles event named the file in 20 s"));
    println!("FIGURES redact-path: a 336-byte path arrived as {seen:?}");
    assert!(seen.ends_with("token=***"), "{seen}");
    assert!(!all.contains("LongPathSecret9"), "the secret on the wire");
    assert!(
        !agent.log().contains("LongPathSecret9"),
        "the secret in the log"
    );
}
