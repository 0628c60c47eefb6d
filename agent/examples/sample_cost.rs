//! CPU cost of one sample, for `scripts/bench` (a benchmark, not a timed test).
//!
//! ```text
//! sample_cost [AGENT FLAGS] [--count N] [--pause-ms MS] [--busy K]
//! sample_cost --make-tree DIR --procs N          # write a generated tree with N processes
//! ```
//!
//! Runs `Sampler::sample` N times (default 200) over `--proc-root`/`--sys-root` (default the
//! real /proc and /sys; any agent flag applies, e.g. `--scan all`), sleeping `--pause-ms`
//! (default 20) between samples so caches cool a little as they do at 1 Hz. Prints the CPU time
//! per sample: mean from getrusage(RUSAGE_SELF) over the whole run (what the agent reports as
//! its own cost) and median/p95/max from CLOCK_THREAD_CPUTIME_ID around each call.
//! `--busy K`: on a generated tree, K processes get +1..+K ticks before every sample (the file
//! rewrites are not counted), so the top list, threads and command lines are exercised.
//! `--connector`: subscribe to the kernel's process connector (root) and hand its messages to
//! the sampler before each sample, as the serving agent does (their reading is counted).

use std::path::Path;

use nasprobe_agent::config::{self, Command};
use nasprobe_agent::sampler::Sampler;

fn cpu_ns(clock: nix::time::ClockId) -> u64 {
    nix::time::clock_gettime(clock)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

fn rusage_us() -> u64 {
    let r = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage");
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    us(r.user_time()) + us(r.system_time())
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| -> Option<String> {
        let i = args.iter().position(|a| a == flag)?;
        args.remove(i);
        (i < args.len()).then(|| args.remove(i))
    };
    if let Some(dir) = take("--make-tree") {
        let n: u32 = take("--procs").and_then(|v| v.parse().ok()).unwrap_or(100);
        make_tree(Path::new(&dir), n);
        println!("wrote {dir} with {n} processes");
        return;
    }
    let pause_ms: u64 = take("--pause-ms")
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    if let Some(n) = take("--baseline") {
        baseline(n.parse().unwrap_or(200), pause_ms);
        return;
    }
    let busy: u32 = take("--busy").and_then(|v| v.parse().ok()).unwrap_or(0);
    let with_connector = match args.iter().position(|a| a == "--connector") {
        Some(i) => {
            args.remove(i);
            true
        }
        None => false,
    };
    let mut argv = vec!["sample".to_string()];
    argv.extend(args);
    let cfg = match config::parse_args(argv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sample_cost: {e}");
            std::process::exit(2);
        }
    };
    let count = match cfg.command {
        Command::Sample { count, .. } if count > 1 => count,
        _ => 200,
    };
    let mut s = Sampler::new(&cfg);
    let mut connector = with_connector.then(|| {
        nasprobe_agent::events::connector::Connector::open(std::time::Duration::from_secs(1))
            .unwrap_or_else(|e| {
                eprintln!("sample_cost: --connector: {e}");
                std::process::exit(2);
            })
    });
    s.set_kernel_exits(connector.is_some());
    let mut out = nasprobe_proto::Sample::default();
    let mut events = 0u64;
    s.sample(&mut out, &mut |_| events += 1);
    let mut per = Vec::with_capacity(count as usize);
    let mut total_us = 0u64;
    for i in 0..count {
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        if busy > 0 {
            churn(&cfg.proc_root, busy, i + 1);
        }
        let r0 = rusage_us();
        let t0 = cpu_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID);
        if let Some(c) = connector.as_mut() {
            while c.drain(64, &mut |ev| s.proc_event(ev)) > 0 {}
        }
        s.sample(&mut out, &mut |_| events += 1);
        let t1 = cpu_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID);
        total_us += rusage_us() - r0;
        per.push(t1 - t0);
    }
    per.sort_unstable();
    let q = |f: f64| per[((per.len() - 1) as f64 * f) as usize] as f64 / 1000.0;
    let (tracked, full) = s.process_stats();
    let (scans, triggered) = s.scan_counts();
    println!(
        "proc_root={} scan={:?} samples={count} processes={tracked} top={} events={events} table_full={full} full_scans={scans} triggered_scans={triggered}",
        cfg.proc_root.display(),
        cfg.scan,
        out.top.len()
    );
    println!(
        "cpu per sample: mean {:.1} µs (getrusage) · median {:.1} µs · p95 {:.1} µs · max {:.1} µs (thread cputime)",
        total_us as f64 / count as f64,
        q(0.5),
        q(0.95),
        q(1.0)
    );
}

/// The floor: the same reads as a `--scan all` sample of the real /proc with kept descriptors
/// (system files, a /proc listing, every /proc/PID/stat), without any parsing — what a C loop
/// doing the same reads costs. `sample_cost --baseline N`.
fn baseline(count: u32, pause_ms: u64) {
    use std::os::fd::AsRawFd;
    let files = [
        "stat",
        "diskstats",
        "net/dev",
        "meminfo",
        "vmstat",
        "net/snmp",
        "net/netstat",
    ];
    let fixed: Vec<std::fs::File> = files
        .iter()
        .filter_map(|f| std::fs::File::open(Path::new("/proc").join(f)).ok())
        .collect();
    let dir = std::fs::File::open("/proc").unwrap();
    let pids: Vec<std::fs::File> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::File::open(e.path().join("stat")).ok())
        .collect();
    let mut buf = vec![0u8; 65536];
    let mut dents = vec![0u8; 8192];
    let mut per = Vec::new();
    for _ in 0..count {
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        let t0 = cpu_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID);
        for f in fixed.iter().chain(pids.iter()) {
            // SAFETY: valid buffer and descriptor.
            unsafe { libc::pread(f.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        }
        // SAFETY: as above; rewind then list.
        unsafe { libc::lseek(dir.as_raw_fd(), 0, libc::SEEK_SET) };
        while unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                dents.as_mut_ptr(),
                dents.len(),
            )
        } > 0
        {}
        per.push(cpu_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID) - t0);
    }
    per.sort_unstable();
    println!(
        "baseline (reads only, {} system files + {} /proc/PID/stat + listing): median {:.1} µs · p95 {:.1} µs",
        fixed.len(),
        pids.len(),
        per[per.len() / 2] as f64 / 1000.0,
        per[per.len() * 95 / 100] as f64 / 1000.0
    );
}

fn pidstat(pid: u32, comm: &str, threads: u32, ticks: u64, start: u64) -> String {
    format!(
        "{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194560 100 0 0 0 {ticks} {} 0 0 20 0 {threads} 0 {start} \
         8163328 512 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
        ticks / 3
    )
}

fn put(p: &Path, content: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let tmp = p.with_extension("tmp~");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

/// A tree shaped like a NAS: the system files of this machine's /proc (or of the fixtures when
/// unreadable), `n` processes, every tenth with 4 threads.
fn make_tree(dir: &Path, n: u32) {
    let _ = std::fs::remove_dir_all(dir);
    let proc = dir.join("proc");
    for f in [
        "stat",
        "meminfo",
        "vmstat",
        "diskstats",
        "uptime",
        "net/dev",
        "net/snmp",
        "net/netstat",
    ] {
        let content = std::fs::read(Path::new("/proc").join(f)).unwrap_or_default();
        put(&proc.join(f), &String::from_utf8_lossy(&content));
    }
    for i in 0..n {
        let pid = 100 + i * 3;
        let threads = if i % 10 == 0 { 4 } else { 1 };
        let comm = format!("proc{i}");
        put(
            &proc.join(format!("{pid}/stat")),
            &pidstat(pid, &comm, threads, 100, 500 + i as u64),
        );
        put(&proc.join(format!("{pid}/schedstat")), "1000 2000 3\n");
        put(
            &proc.join(format!("{pid}/cmdline")),
            &format!("/usr/bin/{comm}\0--flag\0value\0"),
        );
        for t in 0..threads {
            let tid = if t == 0 { pid } else { 100_000 + pid * 4 + t };
            put(
                &proc.join(format!("{pid}/task/{tid}/stat")),
                &pidstat(tid, &comm, threads, 10, 500 + i as u64),
            );
        }
    }
    let sys = dir.join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    std::fs::create_dir_all(sys.join("class/net")).unwrap();
}

/// Gives the first `busy` processes of a generated tree more CPU time (sample `round`).
fn churn(proc: &Path, busy: u32, round: u32) {
    for i in 0..busy {
        let pid = 100 + i * 3;
        let p = proc.join(format!("{pid}/stat"));
        if !p.exists() {
            continue;
        }
        let threads = if i % 10 == 0 { 4 } else { 1 };
        let ticks = 100 + (round as u64) * (i as u64 + 1);
        put(
            &p,
            &pidstat(pid, &format!("proc{i}"), threads, ticks, 500 + i as u64),
        );
    }
}
