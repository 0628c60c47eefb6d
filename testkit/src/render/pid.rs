//! Per-process files: /proc/PID/stat, status, schedstat, cmdline and the thread directories.

use super::helpers::*;
use crate::model::Kernel;
use crate::sim::{HZ, HostSim, LiveProc, LiveThread};
use std::fmt::Write as _;

fn thread_state(th: &LiveThread, p: &LiveProc, k: Kernel) -> char {
    if p.blkio_pct >= 50.0 {
        'D'
    } else if th.cpu_pct >= 50.0 {
        'R'
    } else if p.kernel_thread && th.cpu_pct == 0.0 && k == Kernel::K6 {
        'I'
    } else {
        'S'
    }
}

fn state_name(c: char) -> &'static str {
    match c {
        'R' => "R (running)",
        'D' => "D (disk sleep)",
        'I' => "I (idle)",
        _ => "S (sleeping)",
    }
}

/// /proc/PID/stat (`whole`: the process, summing its threads) or task/TID/stat (one thread).
pub fn pid_stat(sim: &HostSim, p: &LiveProc, th: &LiveThread, whole: bool) -> String {
    let k = sim.kernel();
    let age = (sim.t - p.born_t).max(0.0);
    let is32 = k == Kernel::K3_10;
    let (utime, stime) = if whole {
        (p.utime(), p.stime())
    } else {
        (th.utime, th.stime)
    };
    let leader = th.tid == p.pid;
    let minflt = if whole || leader {
        (p.minor_faults_s * age) as u64 + 120
    } else {
        0
    };
    let majflt = if whole || leader {
        (p.major_faults_s * age) as u64 + 2
    } else {
        0
    };
    let starttime = ((sim.host.uptime_s.max(60.0) + p.born_t).max(0.0) * HZ) as u64;
    let kt = p.kernel_thread;
    let page = 4096u64;
    let vsize = if kt {
        0
    } else {
        (p.vsize_mib * 1048576.0) as u64
    };
    let rss = if kt {
        0
    } else {
        (p.rss_mib * 1048576.0) as u64 / page
    };
    let rsslim: u64 = if is32 {
        4294967295
    } else {
        18446744073709551615
    };
    let salt = (p.pid as u64) << 12;
    let (code, stack) = if kt {
        (0u64, 0u64)
    } else if is32 {
        (0x8000 + (salt & 0xffff), 0xbe800000 + (salt & 0xfff00))
    } else {
        (0x55d4_a2e0_0000 + salt, 0x7ffd_1234_0000 + salt)
    };
    let (end_code, start_data, end_data, start_brk, arg_start, arg_end, env_start, env_end) = if kt
    {
        (0, 0, 0, 0, 0, 0, 0, 0)
    } else {
        let args: u64 = p.cmdline.iter().map(|a| a.len() as u64 + 1).sum();
        (
            code + 0x2_1000,
            code + 0x4_2000,
            code + 0x4_3800,
            code + 0x80_0000,
            stack + 0x1000,
            stack + 0x1000 + args,
            stack + 0x1000 + args,
            stack + 0x1fe0,
        )
    };
    let state = if whole {
        let states: Vec<char> = p.threads.iter().map(|t| thread_state(t, p, k)).collect();
        if states.contains(&'R') {
            'R'
        } else if states.contains(&'D') {
            'D'
        } else {
            states[0]
        }
    } else {
        thread_state(th, p, k)
    };
    let blkio = (p.blkio_pct / 100.0 * HZ * age) as u64;
    let flags: u64 = if kt { 69238880 } else { 4194560 };
    let priority = 20 + p.nice;
    let exit_signal: i64 = if leader { 17 } else { -1 };
    let fields: Vec<String> = vec![
        th.tid.to_string(),
        format!("({})", kernel_comm(&th.comm)),
        state.to_string(),
        p.ppid.to_string(),
        p.pid.to_string(),
        p.pid.to_string(),
        "0".into(),
        "-1".into(),
        flags.to_string(),
        minflt.to_string(),
        "0".into(),
        majflt.to_string(),
        "0".into(),
        (utime.floor() as u64).to_string(),
        (stime.floor() as u64).to_string(),
        "0".into(),
        "0".into(),
        priority.to_string(),
        p.nice.to_string(),
        p.threads.len().to_string(),
        "0".into(),
        starttime.to_string(),
        vsize.to_string(),
        rss.to_string(),
        rsslim.to_string(),
        code.to_string(),
        end_code.to_string(),
        stack.to_string(),
        "0".into(),
        "0".into(),
        "0".into(),
        "0".into(),
        if kt { "2147483647" } else { "4096" }.into(),
        if kt { "0" } else { "81923" }.into(),
        "0".into(),
        "0".into(),
        "0".into(),
        exit_signal.to_string(),
        th.core.to_string(),
        "0".into(),
        "0".into(),
        blkio.to_string(),
        "0".into(),
        "0".into(),
        start_data.to_string(),
        end_data.to_string(),
        start_brk.to_string(),
        arg_start.to_string(),
        arg_end.to_string(),
        env_start.to_string(),
        env_end.to_string(),
        "0".into(),
    ];
    debug_assert_eq!(fields.len(), 52);
    let n = sim.host.pid_stat_fields.unwrap_or(52).clamp(3, 52);
    let mut out = fields[..n].join(" ");
    out.push('\n');
    out
}

pub(crate) fn pid_status(sim: &HostSim, p: &LiveProc) -> String {
    let k = sim.kernel();
    let main = &p.threads[0];
    let age = (sim.t - p.born_t).max(0.0);
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", kernel_comm(&p.comm));
    if k == Kernel::K6 {
        let _ = writeln!(out, "Umask:\t0022");
    }
    let _ = writeln!(out, "State:\t{}", state_name(thread_state(main, p, k)));
    let _ = writeln!(out, "Tgid:\t{}", p.pid);
    if k != Kernel::K3_10 {
        let _ = writeln!(out, "Ngid:\t0");
    }
    let _ = writeln!(out, "Pid:\t{}", p.pid);
    let _ = writeln!(out, "PPid:\t{}", p.ppid);
    let _ = writeln!(out, "TracerPid:\t0");
    let u = p.uid;
    let _ = writeln!(out, "Uid:\t{u}\t{u}\t{u}\t{u}");
    let _ = writeln!(out, "Gid:\t{u}\t{u}\t{u}\t{u}");
    let _ = writeln!(out, "FDSize:\t64");
    let _ = writeln!(out, "Groups:\t");
    if k != Kernel::K3_10 {
        let _ = writeln!(out, "NStgid:\t{}", p.pid);
        let _ = writeln!(out, "NSpid:\t{}", p.pid);
        let _ = writeln!(out, "NSpgid:\t{}", p.pid);
        let _ = writeln!(out, "NSsid:\t{}", p.pid);
    }
    if !p.kernel_thread {
        let vm = |out: &mut String, name: &str, kb: u64| {
            let _ = writeln!(out, "{name}:\t{kb:>8} kB");
        };
        let vs = (p.vsize_mib * 1024.0) as u64;
        let rs = (p.rss_mib * 1024.0) as u64;
        vm(&mut out, "VmPeak", vs + 1024);
        vm(&mut out, "VmSize", vs);
        vm(&mut out, "VmLck", 0);
        vm(&mut out, "VmPin", 0);
        vm(&mut out, "VmHWM", rs + 256);
        vm(&mut out, "VmRSS", rs);
        if k == Kernel::K6 {
            vm(&mut out, "RssAnon", rs * 7 / 10);
            vm(&mut out, "RssFile", rs * 3 / 10);
            vm(&mut out, "RssShmem", 0);
        }
        vm(&mut out, "VmData", vs / 3);
        vm(&mut out, "VmStk", 132);
        vm(&mut out, "VmExe", 600);
        vm(&mut out, "VmLib", 4000);
        vm(&mut out, "VmPTE", 60);
        vm(&mut out, "VmSwap", 0);
    }
    let _ = writeln!(out, "Threads:\t{}", p.threads.len());
    let _ = writeln!(out, "SigQ:\t0/7752");
    let _ = writeln!(
        out,
        "Cpus_allowed_list:\t0-{}",
        sim.host.cores.saturating_sub(1)
    );
    // Whole seconds only, so an idle process's files change once a second, not every tick.
    let _ = writeln!(out, "voluntary_ctxt_switches:\t{}", age.floor() as u64 * 20);
    let _ = writeln!(
        out,
        "nonvoluntary_ctxt_switches:\t{}",
        (age * p.cpu_pct() / 10.0) as u64
    );
    out
}

pub fn schedstat(th: &LiveThread) -> String {
    let run_ns = ((th.utime + th.stime) * 1e7) as u64;
    let wait_ns = (th.delay_s * 1e9) as u64;
    let slices = run_ns / 3_000_000 + (th.delay_s * 10.0) as u64 + 1;
    format!("{run_ns} {wait_ns} {slices}\n")
}

pub fn cmdline(p: &LiveProc) -> Vec<u8> {
    let mut v = Vec::new();
    for a in &p.cmdline {
        v.extend_from_slice(a.as_bytes());
        v.push(0);
    }
    v
}

/// Files of one process directory, relative to /proc/PID (e.g. "stat", "task/812/comm").
pub fn pid_files(sim: &HostSim, p: &LiveProc) -> Vec<(String, Vec<u8>)> {
    let sched = sim.host.has_schedstat();
    let main = &p.threads[0];
    let mut v = vec![
        (
            "stat".to_string(),
            pid_stat(sim, p, main, true).into_bytes(),
        ),
        ("status".into(), pid_status(sim, p).into_bytes()),
        ("cmdline".into(), cmdline(p)),
        (
            "comm".into(),
            format!("{}\n", kernel_comm(&p.comm)).into_bytes(),
        ),
    ];
    if sched {
        // /proc/PID/schedstat is the leader thread's, not the sum.
        v.push(("schedstat".into(), schedstat(main).into_bytes()));
    }
    for th in &p.threads {
        let d = format!("task/{}", th.tid);
        v.push((
            format!("{d}/stat"),
            pid_stat(sim, p, th, false).into_bytes(),
        ));
        v.push((
            format!("{d}/comm"),
            format!("{}\n", kernel_comm(&th.comm)).into_bytes(),
        ));
        if sched {
            v.push((format!("{d}/schedstat"), schedstat(th).into_bytes()));
        }
    }
    v
}
