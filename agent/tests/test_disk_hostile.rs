//! `test disk` against a peer holding the token (issue 28, item 6), through the real agent
//! started with `--allow-tests=disk:DIR`: a folder reached through a symlink out of DIR, a
//! folder outside DIR and `..` are refused before anything is written (and do not use up the
//! one test a minute); then a 1 GiB test runs while the agent's resident memory is sampled:
//! it stays bounded (the big-block pass used to allocate the whole block).

mod server_common;

use std::path::Path;
use std::time::{Duration, Instant};

use nasprobe_proto::{DiskTest, Message, TestRequest, TestResult};
use server_common::*;

fn vm_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn disk(path: &Path, bytes: u64) -> TestRequest {
    TestRequest::Disk(DiskTest {
        path: path.to_str().unwrap().try_into().unwrap(),
        bytes,
        // Where the temp folder is a tmpfs (some CI runners) the test still runs.
        allow_tmpfs: true,
    })
}

/// The agent's answer to one test request: its refusal or its result.
fn ask(agent: &Agent, req: TestRequest) -> Result<TestResult, String> {
    let (mut c, _hello) = agent.connect();
    c.send(&Message::TestRequest(req));
    loop {
        match c.recv_within(Duration::from_secs(90)) {
            Ok(Message::TestResult(r)) => return Ok(r),
            Ok(Message::Refused(r)) => return Err(r.reason.to_string()),
            Ok(Message::KeepAlive(_)) => {}
            other => panic!("expected a test reply, got {other:?}\n{}", agent.log()),
        }
    }
}

fn is_empty(d: &Path) -> bool {
    std::fs::read_dir(d).unwrap().next().is_none()
}

#[test]
fn a_scoped_disk_test_refuses_symlinks_out_and_a_1_gib_test_keeps_the_agent_small() {
    big_stack(|| {
        let root =
            std::env::temp_dir().join(format!("nasprobe-disk-hostile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let allowed = root.join("share");
        let outside = root.join("etc");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, allowed.join("link")).unwrap();
        let scope = format!("--allow-tests=disk:{},net", allowed.display());
        let agent = Agent::start("disk-hostile", &["--interval", "500", &scope]);
        let pid = agent.child.id();

        for (what, path, says) in [
            ("a symlink out", allowed.join("link"), "symlink"),
            (
                "outside the scope",
                outside.clone(),
                "not in a folder this agent allows",
            ),
            ("..", allowed.join("sub/../../etc"), "'..'"),
        ] {
            let why = ask(&agent, disk(&path, 8 << 20)).expect_err(what);
            assert!(why.contains(says), "{what}: {why}");
            eprintln!("refused ({what}): {why}");
        }
        assert!(is_empty(&outside), "nothing written outside the scope");

        // Refused before writing: the minute is not used, the 1 GiB test runs at once.
        let rss0 = vm_kib(pid, "VmRSS:");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let sampler = std::thread::spawn(move || {
            let mut max = 0;
            while !s2.load(std::sync::atomic::Ordering::SeqCst) {
                max = max.max(vm_kib(pid, "VmRSS:"));
                std::thread::sleep(Duration::from_millis(50));
            }
            max
        });
        let t0 = Instant::now();
        let r = ask(&agent, disk(&allowed.join("sub"), 1 << 30));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let max_rss = sampler.join().unwrap();
        let hwm = vm_kib(pid, "VmHWM:");
        let d = match r {
            Ok(TestResult::Disk(d)) => d,
            Ok(TestResult::Failed(why)) => panic!("the test failed: {why}\n{}", agent.log()),
            other => panic!("{other:?}"),
        };
        println!(
            "FIGURES disk 1 GiB: {} MB written, big block {} MiB, in {:.1} s; agent RSS {} KiB \
             before, at most {} KiB sampled, VmHWM {} KiB",
            d.bytes / 1_000_000,
            d.big_block_bytes >> 20,
            t0.elapsed().as_secs_f64(),
            rss0,
            max_rss,
            hwm
        );
        assert!(d.bytes > 0 && d.read_bytes > 0);
        // Bounded: many times the ~2 MiB of blocks, far under the 1 GiB the big pass held.
        assert!(
            hwm < 64 * 1024,
            "the agent's peak RSS was {hwm} KiB during a 1 GiB test"
        );
        assert!(is_empty(&allowed.join("sub")), "test file left");
        let _ = std::fs::remove_dir_all(&root);
    });
}
