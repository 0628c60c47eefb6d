//! Linux 3.10 has no syscall newer than `finit_module`. This test runs the agent under a seccomp
//! filter that makes EVERY later syscall fail with ENOSYS (getrandom, statx, clone3, pidfd_*,
//! close_range, openat2, faccessat2, epoll_pwait2, rseq, copy_file_range, memfd_create,
//! renameat2, sched_setattr, preadv2, io_uring_*, futex_waitv, ... everything numbered after
//! 313 on x86_64 / 273 on aarch64), as an old kernel would, and checks that a collector still
//! authenticates and receives samples.
//!
//! `NASPROBE_AGENT_BIN=dist/nasprobe-agent-x86_64-unknown-linux-musl cargo test --test
//! server_seccomp` runs it on the static build that ships.

use crate::server_common::*;
use std::time::Duration;

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "x86_64")]
const FIRST_AFTER_3_10: u32 = 314; // sched_setattr (3.14); 313 finit_module is the last of 3.10

#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
#[cfg(target_arch = "aarch64")]
const FIRST_AFTER_3_10: u32 = 274; // sched_setattr in the generic table

#[cfg(target_arch = "arm")]
const ARCH: u32 = 0x4000_0028; // AUDIT_ARCH_ARM (EABI, little endian)
#[cfg(target_arch = "arm")]
const FIRST_AFTER_3_10: u32 = 380; // sched_setattr; 379 finit_module is the last of 3.10

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Every syscall numbered `FIRST_AFTER_3_10` or above (x32 ones included) → ENOSYS.
fn filter() -> Vec<libc::sock_filter> {
    vec![
        // seccomp_data: nr at 0, arch at 4.
        stmt(LD_W_ABS, 4),
        jump(JEQ_K, ARCH, 0, 3), // another ABI: allow
        stmt(LD_W_ABS, 0),
        jump(JGE_K, FIRST_AFTER_3_10, 1, 0),
        stmt(RET_K, SECCOMP_RET_ALLOW),
        stmt(RET_K, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]
}

/// Installs `prog` on the calling process (after fork, before exec). Async-signal-safe: two
/// prctl calls on memory prepared before the fork.
fn install(prog: &[libc::sock_filter]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl calls; `fprog` points to a live filter.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[test]
fn agent_serves_with_every_post_3_10_syscall_failing_with_enosys() {
    // qemu-user does not emulate seccomp filters: under emulation there is nothing to test.
    if std::env::var_os("NASPROBE_AGENT_RUNNER").is_some_and(|r| !r.is_empty()) {
        eprintln!(
            "skipped: seccomp filters do not work under qemu-user (NASPROBE_AGENT_RUNNER set)"
        );
        return;
    }
    // Sanity: the filter does what it says, in a child process of our own.
    let prog = filter();
    // SAFETY: the child only calls async-signal-safe functions and _exit.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let ok = install(&prog).is_ok();
            let mut b = [0u8; 4];
            let r = libc::syscall(libc::SYS_getrandom, b.as_mut_ptr(), 4usize, 0u32);
            let e = *libc::__errno_location();
            let r2 = libc::syscall(libc::SYS_getpid);
            libc::_exit(if ok && r == -1 && e == libc::ENOSYS && r2 > 0 {
                0
            } else {
                1
            });
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the seccomp filter does not work here"
        );
    }

    big_stack(move || {
        let agent = AgentBuilder::new("seccomp")
            .args(&["--interval", "100"])
            .pre_exec(move || install(&prog))
            .start();
        // The filter is on the agent (mode 2 = filter).
        let status = std::fs::read_to_string(format!("/proc/{}/status", agent.child.id())).unwrap();
        assert!(
            status
                .lines()
                .any(|l| l.starts_with("Seccomp:") && l.ends_with('2')),
            "{status}"
        );
        // It made its token (from /dev/urandom), and serves.
        assert_eq!(agent.token.len(), 64);
        let (mut c, hello) = agent.connect();
        assert_ne!(hello.instance_id, 0);
        c.resume(0, 0);
        let recs = read_contiguous(&mut c, 1, 12);
        assert!(
            recs.iter()
                .any(|r| matches!(r.body, nasprobe_proto::RecordBody::Sample(_))),
            "samples are served"
        );
        // A second client resumes where the first left off.
        drop(c);
        let (mut c, _) = agent.connect();
        c.resume(hello.instance_id, 12);
        read_contiguous(&mut c, 13, 15);
        assert!(agent.wait_log("connection closed by the collector", Duration::from_secs(5)));
    });
}

/// socket(AF_NETLINK, …) → EPERM (the process connector, and every netlink family after it),
/// lseek(…, SEEK_END) → EPERM (positioning /dev/kmsg at its end; listing /proc rewinds with
/// SEEK_SET, which stays allowed), everything else allowed.
fn netlink_filter() -> Vec<libc::sock_filter> {
    // seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (low 32 bits first: little endian).
    vec![
        stmt(LD_W_ABS, 4),
        jump(JEQ_K, ARCH, 0, 9), // another ABI: allow
        stmt(LD_W_ABS, 0),
        jump(JEQ_K, libc::SYS_lseek as u32, 0, 2),
        stmt(LD_W_ABS, 32),
        jump(JEQ_K, libc::SEEK_END as u32, 4, 5),
        jump(JEQ_K, libc::SYS_socket as u32, 0, 4),
        stmt(LD_W_ABS, 16),
        jump(JEQ_K, libc::AF_NETLINK as u32, 1, 0),
        stmt(RET_K, SECCOMP_RET_ALLOW),
        stmt(RET_K, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(RET_K, SECCOMP_RET_ALLOW),
    ]
}

/// Reads records until one satisfies `want` (or panics after `within`).
fn find_record<T>(
    c: &mut Conn,
    within: Duration,
    mut want: impl FnMut(&nasprobe_proto::Event) -> Option<T>,
) -> T {
    let end = std::time::Instant::now() + within;
    let mut seen = Vec::new();
    while std::time::Instant::now() < end {
        let r = c.record();
        if let nasprobe_proto::RecordBody::Event(e) = &r.body {
            if let Some(t) = want(e) {
                return t;
            }
            seen.push(format!("{e:?}"));
        }
    }
    panic!("not found within {within:?}; events: {seen:#?}");
}

/// A `sleep` child killed with SIGKILL; the `ProcessEnd` the agent reports for it.
fn kill_a_child_and_find_its_end(agent: &Agent) -> nasprobe_proto::ExitStatus {
    let (mut c, _) = agent.connect();
    c.resume(0, 0);
    let watch = find_record(&mut c, Duration::from_secs(10), |e| match e {
        nasprobe_proto::Event::ExitWatch(w) => Some(*w),
        _ => None,
    });
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let pid = child.id();
    // Long enough for a full scan (--scan all) to take it into the table.
    std::thread::sleep(Duration::from_millis(600));
    child.kill().unwrap();
    child.wait().unwrap();
    let st = find_record(&mut c, Duration::from_secs(10), |e| match e {
        nasprobe_proto::Event::ProcessEnd(x) if x.exit.process.pid == pid => Some(x.status),
        _ => None,
    });
    assert_eq!(watch.source, st.seen, "ExitWatch tells how exits are seen");
    st
}

#[test]
fn connector_and_kernel_log_refused_by_seccomp_degrade_to_scans() {
    if std::env::var_os("NASPROBE_AGENT_RUNNER").is_some_and(|r| !r.is_empty()) {
        eprintln!(
            "skipped: seccomp filters do not work under qemu-user (NASPROBE_AGENT_RUNNER set)"
        );
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        nasprobe_testkit::skip::missing(
            "connector_and_kernel_log_refused_by_seccomp_degrade_to_scans",
            "root (the process connector needs CAP_NET_ADMIN)",
        );
        return;
    }
    let args = [
        "--interval",
        "100",
        "--scan",
        "all",
        "--event-min-lifetime",
        "0",
    ];
    big_stack(move || {
        // Unfiltered first: the kernel answers, exits carry their status.
        let agent = AgentBuilder::new("connector-on").args(&args).start();
        assert!(
            agent.wait_log("process connector on", Duration::from_secs(5)),
            "{}",
            agent.log()
        );
        let st = kill_a_child_and_find_its_end(&agent);
        assert_eq!(
            (st.seen, st.code, st.signal, st.core_dumped),
            (nasprobe_proto::ExitSeen::Kernel, None, Some(9), false)
        );
        drop(agent);

        let prog = netlink_filter();
        let agent = AgentBuilder::new("connector-refused")
            .args(&args)
            .pre_exec(move || install(&prog))
            .start();
        assert!(
            agent.wait_log(
                "process connector unavailable (socket(NETLINK_CONNECTOR): Operation not permitted",
                Duration::from_secs(5)
            ),
            "{}",
            agent.log()
        );
        #[cfg(not(target_arch = "arm"))] // arm's musl seeks with _llseek
        assert!(
            agent.wait_log("kernel log unavailable", Duration::from_secs(5)),
            "{}",
            agent.log()
        );
        let st = kill_a_child_and_find_its_end(&agent);
        assert_eq!(
            (st.seen, st.code, st.signal),
            (nasprobe_proto::ExitSeen::Scan, None, None)
        );
        // And it still serves samples.
        let (mut c, _) = agent.connect();
        c.resume(0, 0);
        let recs = read_contiguous(&mut c, 1, 10);
        assert!(
            recs.iter()
                .any(|r| matches!(r.body, nasprobe_proto::RecordBody::Sample(_)))
        );
    });
}
