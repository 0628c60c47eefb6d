//! Reliability of the agent over time and under load (issue 10). Both tests are `#[ignore]`d:
//! they take minutes and want a release build, so `cargo test --workspace` skips them and
//! `tests/e2e/reliability_soak.sh` runs them (`cargo test --release ... -- --ignored`).
//!
//! - `soak_fast_churn`: the agent at 100 Hz (`NASPROBE_ALLOW_FAST=1 --interval 10`, test-only)
//!   against a churning generated /proc tree (`nasprobe-scenario run --builtin churn`) for
//!   `NASPROBE_SOAK_SECONDS` (default 120): every seq received contiguous, RSS flat once the
//!   ring is full, no fd leak (/proc/PID/fd counted every second), no panic.
//! - `stress_cpu_and_memory`: the agent (nice 19, as shipped) shares a 256 MiB memory cgroup
//!   with `stress-ng --vm` while `stress-ng --cpu` pegs every core: it keeps sampling, late
//!   samples carry their real interval, RSS does not grow, CPU per sample stays in budget.
//!
//! Each prints one `FIGURES ...` line for RELIABILITY.md.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server_common::*;
use nasprobe_proto::{Record, RecordBody};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// utime + stime of `pid` in clock ticks (USER_HZ, 100 here).
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = s.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the comm: state is field 3, utime 14, stime 15 → indices 11 and 12 here.
    f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
}

fn clk_tck() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// Reads records for `dur` (or until `stop` says so), checking that seqs are contiguous from
/// `first`; calls `each_second` about once a second.
fn stream_for(
    c: &mut Conn,
    first: u64,
    dur: Duration,
    mut on_record: impl FnMut(&Record),
    mut each_second: impl FnMut(),
) -> u64 {
    let t0 = Instant::now();
    let mut next_tick = t0 + Duration::from_secs(1);
    let mut expect = first;
    while t0.elapsed() < dur {
        let r = c.record();
        assert_eq!(r.seq, expect, "records must be contiguous");
        expect += 1;
        on_record(&r);
        if Instant::now() >= next_tick {
            next_tick += Duration::from_secs(1);
            each_second();
        }
    }
    expect
}

struct KillOnDrop(Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scenario_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("NASPROBE_SCENARIO_BIN") {
        return PathBuf::from(p);
    }
    // Next to the test binary's profile dir: target/<profile>/nasprobe-scenario.
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap();
    profile.join("nasprobe-scenario")
}

#[test]
#[ignore = "minutes long; run by tests/e2e/reliability_soak.sh"]
fn soak_fast_churn() {
    big_stack(soak_fast_churn_body);
}

fn soak_fast_churn_body() {
    let secs = env_u64("NASPROBE_SOAK_SECONDS", 120);
    let interval_ms = env_u64("NASPROBE_SOAK_INTERVAL_MS", 10);
    let scen = scenario_bin();
    assert!(
        scen.exists(),
        "{} missing: cargo build --release -p nasprobe-testkit (or set NASPROBE_SCENARIO_BIN)",
        scen.display()
    );
    let out = PathBuf::from(format!("/dev/shm/nasprobe-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // Births every interval: 200/s living 300 ms, ticking every 5 ms.
    let mut generator = Command::new(&scen)
        .args(["run", "--builtin", "churn", "--tick-ms", "5"])
        .args(["--churn-per-s", "200", "--churn-life-ms", "300", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn nasprobe-scenario");
    {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(generator.stdout.take().unwrap()).lines();
        loop {
            match lines.next() {
                Some(Ok(l)) if l == "ready" => break,
                Some(Ok(_)) => continue,
                other => panic!("scenario did not get ready: {other:?}"),
            }
        }
        // Keep draining stdout so the generator never blocks on it.
        std::thread::spawn(move || for _ in lines {});
    }
    let generator = KillOnDrop(generator);
    let proc_root = out.join("churn/proc");
    let sys_root = out.join("churn/sys");
    let ms = interval_ms.to_string();
    // SAFETY: set before the agent is spawned; no other thread reads the environment here.
    unsafe { std::env::set_var("NASPROBE_ALLOW_FAST", "1") };
    let agent = AgentBuilder::new("soak")
        .args(&[
            "--interval",
            &ms,
            "--history-bytes",
            "1048576",
            "--scan",
            "all",
        ])
        .args(&["--event-min-lifetime", "0", "--proc-root"])
        .arg(proc_root.to_str().unwrap())
        .arg("--sys-root")
        .arg(sys_root.to_str().unwrap())
        .start();
    let pid = agent.child.id();
    let (mut c, hello) = agent.connect();
    assert_eq!(hello.interval_ms as u64, interval_ms);
    c.resume(0, 0);

    let t0 = Instant::now();
    let mut samples = 0u64;
    let mut events = 0u64;
    let mut rss: Vec<(f64, u64)> = Vec::new();
    let mut fds: Vec<(f64, usize)> = Vec::new();
    let mut full_at: Option<f64> = None;
    let cpu0 = cpu_ticks(pid);
    let end = stream_for(
        &mut c,
        1,
        Duration::from_secs(secs),
        |r| match &r.body {
            RecordBody::Sample(_) => samples += 1,
            RecordBody::Event(_) => events += 1,
        },
        || {
            let t = t0.elapsed().as_secs_f64();
            rss.push((t, rss_kib(pid)));
            fds.push((t, fd_count(pid)));
            if full_at.is_none() && agent.log().contains("history ring full") {
                full_at = Some(t);
            }
        },
    );
    let wall = t0.elapsed().as_secs_f64();
    let cpu_s = (cpu_ticks(pid) - cpu0) as f64 / clk_tck() as f64;
    let records = end - 1;
    assert!(
        agent.child.id() == pid && std::fs::metadata(format!("/proc/{pid}")).is_ok(),
        "the agent died"
    );
    let log = agent.log();
    assert!(!log.contains("panicked"), "agent panicked:\n{log}");
    // Steady state: after the ring filled (its pages are touched once) and 10% of the run.
    let warm = full_at.unwrap_or(wall).max(wall * 0.1) + 2.0;
    let steady_rss: Vec<u64> = rss.iter().filter(|x| x.0 >= warm).map(|x| x.1).collect();
    let steady_fd: Vec<usize> = fds.iter().filter(|x| x.0 >= warm).map(|x| x.1).collect();
    let (rss_min, rss_max) = (
        *steady_rss.iter().min().unwrap_or(&0),
        *steady_rss.iter().max().unwrap_or(&0),
    );
    let (fd_min, fd_max) = (
        *steady_fd.iter().min().unwrap_or(&0),
        *steady_fd.iter().max().unwrap_or(&0),
    );
    let expected = wall * 1000.0 / interval_ms as f64;
    println!(
        "FIGURES soak_fast_churn: seconds={wall:.0} interval_ms={interval_ms} records={records} \
         samples={samples} events={events} expected_samples~{expected:.0} lost=0 \
         ring_full_at_s={:.1} rss_kib_steady={rss_min}..{rss_max} rss_kib_peak={} \
         fds_steady={fd_min}..{fd_max} fds_all={}..{} agent_cpu_s={cpu_s:.2} \
         cpu_pct_of_core={:.1} cpu_us_per_sample={:.0} steady_points={}",
        full_at.unwrap_or(-1.0),
        rss.iter().map(|x| x.1).max().unwrap_or(0),
        fds.iter().map(|x| x.1).min().unwrap_or(0),
        fds.iter().map(|x| x.1).max().unwrap_or(0),
        100.0 * cpu_s / wall,
        cpu_s * 1e6 / samples.max(1) as f64,
        steady_rss.len(),
    );
    assert!(
        steady_rss.len() >= 3,
        "run too short for a steady state ({wall:.0} s, ring full at {full_at:?}); use \
         NASPROBE_SOAK_SECONDS >= 60"
    );
    assert!(
        rss_max - rss_min <= 256,
        "RSS grew in steady state: {rss_min}..{rss_max} KiB ({rss:?})"
    );
    assert!(fd_max - fd_min <= 2, "fd count moved: {fds:?}");
    assert!(
        samples as f64 >= expected * 0.5,
        "{samples} samples, expected about {expected:.0}"
    );
    drop(generator);
    let _ = std::fs::remove_dir_all(&out);
}

/// A memory cgroup (v1 or v2) with a limit, removed on drop. `None` when cgroups cannot be made.
struct MemCgroup {
    dir: PathBuf,
}

impl MemCgroup {
    fn new(limit: u64) -> Option<MemCgroup> {
        let name = format!("nasprobe-stress-{}", std::process::id());
        for (base, file) in [
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
            ("/sys/fs/cgroup", "memory.max"),
        ] {
            let dir = Path::new(base).join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                if std::fs::write(dir.join(file), limit.to_string()).is_ok() {
                    return Some(MemCgroup { dir });
                }
                let _ = std::fs::remove_dir(&dir);
            }
        }
        None
    }

    fn add(&self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).unwrap();
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    /// Times the limit was hit (v1 failcnt, v2 memory.events max).
    fn pressure(&self) -> String {
        let v1 = self.read("memory.failcnt");
        if !v1.is_empty() {
            return format!("failcnt={v1}");
        }
        let ev = self.read("memory.events");
        ev.lines()
            .filter(|l| l.starts_with("max ") || l.starts_with("oom_kill "))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // Move what is left to the parent, then remove.
        let parent = self.dir.parent().unwrap().join("cgroup.procs");
        for p in self.read("cgroup.procs").lines() {
            let _ = std::fs::write(&parent, p);
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
#[ignore = "pegs every core for half a minute; run by tests/e2e/reliability_soak.sh"]
fn stress_cpu_and_memory() {
    big_stack(stress_body);
}

#[allow(clippy::too_many_lines)] // a test scenario, told start to end
fn stress_body() {
    let secs = env_u64("NASPROBE_STRESS_SECONDS", 30);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    // A small ring: it is full within the baseline, so RSS should not move afterwards.
    let agent = AgentBuilder::new("stress")
        .args(&[
            "--interval",
            "100",
            "--history-bytes",
            "65536",
            "--nice",
            "19",
        ])
        .start();
    let pid = agent.child.id();
    let cg = MemCgroup::new(256 << 20);
    if let Some(cg) = &cg {
        cg.add(pid);
    } else {
        eprintln!("note: no memory cgroup could be made: memory pressure is machine-wide");
    }
    let (mut c, hello) = agent.connect();
    c.resume(hello.instance_id, hello.newest_seq);
    let first = hello.newest_seq + 1;

    #[derive(Default)]
    struct Stats {
        first_time: Option<u64>,
        last_time: u64,
        /// Sum of interval_us after the first sample.
        sum_interval_us: u64,
        late: u64,
        worst_late_ms: f64,
        max_interval_ms: f64,
        min_interval_ms: f64,
        samples: u64,
    }
    let stats = std::cell::RefCell::new(Stats {
        min_interval_ms: f64::MAX,
        ..Default::default()
    });
    // Each sample's interval_us is CLOCK_MONOTONIC between the moments its counters were read;
    // time_ms is the wall clock when it was recorded, after the reads. A starved agent can be
    // descheduled between the two, so single pairs differ by up to one sample's duration, but
    // the intervals must add up to the elapsed time: nothing is lost or invented.
    let check = |r: &Record| {
        let mut st = stats.borrow_mut();
        if let RecordBody::Sample(s) = &r.body {
            st.samples += 1;
            let iv = s.interval_us as f64 / 1000.0;
            if st.first_time.is_none() {
                st.first_time = Some(r.time_ms);
            } else {
                st.sum_interval_us += u64::from(s.interval_us);
                st.max_interval_ms = st.max_interval_ms.max(iv);
                st.min_interval_ms = st.min_interval_ms.min(iv);
                st.worst_late_ms = st.worst_late_ms.max(iv - 100.0);
                if iv > 150.0 {
                    st.late += 1;
                }
            }
            st.last_time = r.time_ms;
        }
    };

    // Baseline: 5 s unloaded.
    let cpu_a = cpu_ticks(pid);
    let rss_a = rss_kib(pid);
    let next = stream_for(&mut c, first, Duration::from_secs(5), check, || {});
    let base_samples = stats.borrow().samples;
    let cpu_b = cpu_ticks(pid);
    let rss_b = rss_kib(pid);

    // Stress: every core pegged, memory hogs in the agent's cgroup.
    let stress = Command::new("stress-ng").arg("--version").output().is_ok();
    let mut hogs: Vec<KillOnDrop> = Vec::new();
    let cg_procs = cg.as_ref().map(|c| c.dir.join("cgroup.procs"));
    let in_cg = |cmd: &str| -> Child {
        let script = match &cg_procs {
            Some(p) => format!("echo $$ > {} && exec {cmd}", p.display()),
            None => format!("exec {cmd}"),
        };
        Command::new("sh")
            .args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let tool;
    if stress {
        tool = "stress-ng";
        hogs.push(KillOnDrop(in_cg(&format!(
            "stress-ng --cpu {cores} --vm 2 --vm-bytes 320M --vm-keep --timeout {}s",
            secs + 10
        ))));
    } else {
        tool = "busy loops + tail on /dev/zero";
        for _ in 0..cores {
            hogs.push(KillOnDrop(in_cg("sh -c 'while :; do :; done'")));
        }
        for _ in 0..2 {
            hogs.push(KillOnDrop(in_cg(
                "sh -c 'while :; do head -c 300M /dev/zero | tail; done'",
            )));
        }
    }
    let mut rss_max = rss_b;
    let mut loadavg = String::new();
    let end = stream_for(&mut c, next, Duration::from_secs(secs), check, || {
        rss_max = rss_max.max(rss_kib(pid));
        loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    });
    let cpu_c = cpu_ticks(pid);
    let pressure = cg.as_ref().map(|c| c.pressure()).unwrap_or_default();
    drop(hogs);
    let Stats {
        first_time,
        last_time,
        sum_interval_us,
        late,
        worst_late_ms,
        max_interval_ms,
        min_interval_ms,
        samples,
    } = stats.into_inner();
    let wall_ms = last_time.saturating_sub(first_time.unwrap_or(last_time)) as f64;
    let sum_ms = sum_interval_us as f64 / 1000.0;
    let stress_samples = samples - base_samples;
    let tck = clk_tck() as f64;
    let base_us = (cpu_b - cpu_a) as f64 * 1e6 / tck / base_samples.max(1) as f64;
    let stress_us = (cpu_c - cpu_b) as f64 * 1e6 / tck / stress_samples.max(1) as f64;
    let expected = secs as f64 * 10.0;
    println!(
        "FIGURES stress_cpu_and_memory: tool={tool:?} cores={cores} seconds={secs} \
         cgroup={} pressure={pressure:?} loadavg={:?} records={} samples_baseline={base_samples} \
         samples_stress={stress_samples} expected~{expected:.0} lost=0 \
         late_samples_over_150ms={late} min_interval_ms={min_interval_ms:.1} \
         max_interval_ms={max_interval_ms:.1} worst_late_ms={worst_late_ms:.1} \
         sum_interval_ms={sum_ms:.0} wall_span_ms={wall_ms:.0} \
         rss_kib_start={rss_a} rss_kib_after_baseline={rss_b} rss_kib_max_stress={rss_max} \
         cpu_us_per_sample_baseline={base_us:.0} cpu_us_per_sample_stress={stress_us:.0} \
         agent_cpu_pct_of_core_stress={:.2}",
        cg.as_ref()
            .map_or("none".to_string(), |c| c.dir.display().to_string()),
        loadavg.trim(),
        end - first,
        100.0 * (cpu_c - cpu_b) as f64 / tck / secs as f64,
    );
    assert!(
        (sum_ms - wall_ms).abs() <= 1000.0 && (sum_ms - wall_ms).abs() <= wall_ms * 0.03,
        "intervals add up to {sum_ms:.0} ms over a wall span of {wall_ms:.0} ms"
    );
    // Never a burst: the next sample starts at least half an interval after one is done.
    assert!(
        min_interval_ms >= 45.0,
        "an interval of {min_interval_ms} ms"
    );
    // It keeps sampling. At nice 19 (as shipped: it must never hurt the box) against nice-0
    // hogs on every core the scheduler gives it ~1-2% of a core, so ticks are late and some
    // are skipped (never burst); what matters is that samples keep coming and say how long
    // their interval really was (checked above for every one).
    assert!(
        stress_samples as f64 >= expected * 0.1,
        "{stress_samples} samples under stress, expected about {expected:.0}"
    );
    assert!(
        max_interval_ms < 5000.0,
        "a sample came {max_interval_ms:.0} ms after the previous one"
    );
    assert!(
        rss_max <= rss_b + 256,
        "RSS grew under stress: {rss_b} -> {rss_max} KiB"
    );
    // Budget (DESIGN.md: 300 µs per sample here with ~80 processes; the machine running CI has
    // more): loose bound 5 ms per sample, and the agent under 5% of one core.
    assert!(
        stress_us < 5000.0,
        "{stress_us:.0} µs CPU per sample under stress"
    );
    assert!(base_us < 5000.0, "{base_us:.0} µs CPU per sample");
}
