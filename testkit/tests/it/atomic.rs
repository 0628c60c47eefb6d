//! A concurrent reader never sees a partial file or a half-built process directory.

use crate::common::*;
use nasprobe_testkit::builtins::{BuiltinOptions, builtin};
use nasprobe_testkit::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn check_proc_stat(text: &str, cores: usize) {
    assert!(text.ends_with('\n'));
    let cpus = cpu_lines(text);
    assert_eq!(cpus.len(), cores + 1, "{text}");
    assert!(cpus.iter().all(|c| c.1.len() == 10));
    assert!(text.lines().last().unwrap().starts_with("softirq "));
}

#[test]
fn reader_never_sees_partial_files_while_the_writer_ticks() {
    let dir = tempdir("atomic");
    let scn = builtin(
        "churn",
        &BuiltinOptions {
            churn_per_s: 400.0,
            churn_lifetime_s: 0.05,
            ..Default::default()
        },
    )
    .unwrap();
    let mut runner = Runner::new(&scn, &dir, 1_700_000_000).unwrap();
    let proc = runner.paths()[0].proc_root.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let writer_stop = stop.clone();
    let writer = std::thread::spawn(move || {
        runner
            .run_realtime(
                Duration::from_millis(1),
                Some(Duration::from_millis(1500)),
                &writer_stop,
            )
            .unwrap();
        writer_stop.store(true, Ordering::Relaxed);
        runner.hosts[0].0.births
    });
    let (mut reads, mut pid_reads, mut vanished) = (0u64, 0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        check_proc_stat(&read(&proc.join("stat")), 2);
        let ds = read(&proc.join("diskstats"));
        assert!(
            ds.ends_with('\n') && ds.lines().all(|l| l.split_whitespace().count() == 20),
            "{ds}"
        );
        let nd = read(&proc.join("net/dev"));
        assert_eq!(nd.lines().count(), 4, "{nd}");
        reads += 3;
        for e in std::fs::read_dir(&proc).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let pdir = proc.join(&name);
            // Either the whole directory is there, or it is gone: never stat without task/.
            match std::fs::read_to_string(pdir.join("stat")) {
                Ok(t) => {
                    assert!(t.ends_with('\n'), "{t:?}");
                    assert_eq!(stat_fields(t.trim_end()).1.len(), 52, "{t}");
                    pid_reads += 1;
                    match std::fs::read_dir(pdir.join("task")) {
                        Ok(tasks) => {
                            for t in tasks {
                                let t = t.unwrap().file_name().into_string().unwrap();
                                assert!(t.bytes().all(|b| b.is_ascii_digit()), "task entry {t}");
                                if let Ok(s) =
                                    std::fs::read_to_string(pdir.join("task").join(&t).join("stat"))
                                {
                                    assert_eq!(stat_fields(s.trim_end()).1.len(), 52, "{s}");
                                }
                            }
                        }
                        Err(_) => vanished += 1,
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => vanished += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    let births = writer.join().unwrap();
    assert!(births > 200, "writer made {births} processes");
    assert!(
        reads > 30 && pid_reads > 100,
        "reads {reads} pid reads {pid_reads} vanished {vanished}"
    );
    // No temporary left behind at the end but the hidden ones being renamed.
    let leftovers: Vec<_> = std::fs::read_dir(&proc)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".new-") || n.starts_with(".dead-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn processes_die_and_restart_with_new_pid_and_token() {
    let dir = tempdir("restart");
    let scn = builtin(
        "process-restarts",
        &BuiltinOptions {
            restart_every_s: Some(2.0),
            ..Default::default()
        },
    )
    .unwrap();
    let mut r = Runner::new(&scn, &dir, 1_700_000_000).unwrap();
    let proc = r.paths()[0].proc_root.clone();
    let btrfs = |proc: &std::path::Path| -> Vec<(u32, String)> {
        std::fs::read_dir(proc)
            .unwrap()
            .filter_map(|e| {
                e.unwrap()
                    .file_name()
                    .into_string()
                    .unwrap()
                    .parse::<u32>()
                    .ok()
            })
            .filter(|pid| read(&proc.join(format!("{pid}/comm"))) == "btrfs\n")
            .map(|pid| (pid, read(&proc.join(format!("{pid}/cmdline")))))
            .collect()
    };
    let first = btrfs(&proc);
    assert_eq!(first.len(), 1);
    assert!(
        first[0].1.ends_with("-k\x00100200300\x00"),
        "{:?}",
        first[0].1
    );
    r.step_to(2.1).unwrap(); // dead, in the 0.2 s gap
    assert!(btrfs(&proc).is_empty());
    r.step_to(2.3).unwrap(); // the next instance
    let second = btrfs(&proc);
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].0, first[0].0, "new pid");
    assert!(
        second[0].1.ends_with("-k\x00100305029\x00"),
        "new token: {:?}",
        second[0].1
    );
    assert!(!proc.join(first[0].0.to_string()).exists());
    let _ = std::fs::remove_dir_all(&dir);
}
