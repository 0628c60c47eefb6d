//! Per-sample figures: one agent's `Hello` (clock ticks) plus one `Sample` in, numbers out —
//! CPU busy per core and by mode, a process's and its hottest thread's share of a core, iostat
//! -x figures of a disk, a NIC's rate against its link speed, swap and TCP counts. The agent's
//! `sample` command, the report's series, `watch` and the exporters all compute through these,
//! so the NAS and the desktop print the same figure for the same sample.
//!
//! Rules written here once:
//! - an entry flagged `RESET` has unknown deltas: its figures are `None`, never zero;
//! - the interval is never taken as shorter than 1 ms;
//! - disk utilization is busy time / interval, capped at 1.0 (a kernel that accounts a request
//!   straddling two intervals into the second can report more busy time than the interval);
//! - NIC utilization against the link speed: full duplex max(rx, tx) / speed, half duplex
//!   (rx + tx) / speed, **unknown duplex is judged as full** (most links that do not report
//!   duplex are virtual or full-duplex gigabit; judging them half would call a link saturated
//!   at half its real capacity); unknown speed (0) gives no utilization;
//! - wire counters are widened to `u64` before they are added (a saturated or hostile sample
//!   can carry `u32::MAX`).
//!
//! `no_std` and allocation-free so that the agent can carry it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![no_std]

use nasprobe_proto::{CpuTicks, DiskSample, MAX_TOP_PROCS, NicSample, ProcSample, Sample, flags};

/// Interval length in seconds (never below 1 ms).
pub fn interval_s(s: &Sample) -> f64 {
    (f64::from(s.interval_us) / 1e6).max(1e-3)
}

/// `count` over the interval, per second.
pub fn per_s(s: &Sample, count: f64) -> f64 {
    count / interval_s(s)
}

/// The known total of a CPU entry: None when flagged RESET or empty.
fn cpu_known_total(t: &CpuTicks) -> Option<f64> {
    let total = t.total();
    (t.flags & flags::RESET == 0 && total > 0).then_some(total as f64)
}

/// Busy fraction (0..1) of one CPU entry: everything but idle and iowait.
pub fn cpu_busy(t: &CpuTicks) -> Option<f64> {
    let total = cpu_known_total(t)?;
    let idle = (u64::from(t.idle) + u64::from(t.iowait)) as f64;
    Some((total - idle) / total)
}

/// iowait fraction (0..1) of one CPU entry.
pub fn cpu_iowait(t: &CpuTicks) -> Option<f64> {
    Some(f64::from(t.iowait) / cpu_known_total(t)?)
}

/// One CPU entry split by mode, fractions 0..1 of its ticks (as `top`/`mpstat` show them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuModes {
    /// user + nice.
    pub user: f64,
    /// system (kernel) time.
    pub system: f64,
    /// Waiting for I/O with nothing else to run.
    pub iowait: f64,
    /// irq + softirq.
    pub irq: f64,
    /// Taken by the hypervisor for other guests.
    pub steal: f64,
    /// idle.
    pub idle: f64,
}

/// The modes of one CPU entry, None when it is marked reset or counted no ticks.
pub fn cpu_modes(t: &CpuTicks) -> Option<CpuModes> {
    let total = cpu_known_total(t)?;
    let f = |x: u64| x as f64 / total;
    Some(CpuModes {
        user: f(u64::from(t.user) + u64::from(t.nice)),
        system: f(u64::from(t.system)),
        iowait: f(u64::from(t.iowait)),
        irq: f(u64::from(t.irq) + u64::from(t.softirq)),
        steal: f(u64::from(t.steal)),
        idle: f(u64::from(t.idle)),
    })
}

/// `ticks` of CPU time in the interval as a fraction of one core; `hz` is the Hello's
/// `clock_ticks_per_sec` (USER_HZ).
pub fn core_fraction(hz: u32, s: &Sample, ticks: u64) -> f64 {
    ticks as f64 / (interval_s(s) * f64::from(hz.max(1)))
}

/// A process's CPU in the interval in cores (may exceed 1 for threaded ones).
pub fn proc_cores(hz: u32, s: &Sample, p: &ProcSample) -> f64 {
    core_fraction(hz, s, u64::from(p.utime) + u64::from(p.stime))
}

/// A µs duration over the interval, as a fraction of it (run delay, the agent's own CPU).
pub fn us_fraction(s: &Sample, us: u32) -> f64 {
    f64::from(us) / (interval_s(s) * 1e6)
}

/// The top processes of a sample grouped by name: same-named processes add up (two rsync).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcGroup<'a> {
    /// The process name (comm) the group shares.
    pub name: &'a str,
    /// CPU in cores, summed over the group.
    pub cores: f64,
    /// Time its threads waited for a CPU, fraction of the interval, summed over the group;
    /// None when no member reported it.
    pub run_delay: Option<f64>,
    /// Of the last member listed.
    pub pid: u32,
    /// Threads, summed over the group.
    pub threads: u16,
    /// The last command line a member carried.
    pub cmdline: Option<&'a str>,
}

/// The busiest thread of a process, named by its process's and its own name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadFigure<'a> {
    /// The process's name (comm).
    pub process: &'a str,
    /// The thread's own name (comm); the process name for the main thread.
    pub thread: &'a str,
    /// The process id.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// Fraction of one core.
    pub cores: f64,
}

/// The process groups of a sample, in the order of their first member.
pub fn proc_groups(hz: u32, s: &Sample) -> heapless::Vec<ProcGroup<'_>, MAX_TOP_PROCS> {
    let mut out: heapless::Vec<ProcGroup<'_>, MAX_TOP_PROCS> = heapless::Vec::new();
    for p in &s.top {
        let cores = proc_cores(hz, s, p);
        let delay = p.run_delay_us.map(|d| us_fraction(s, d));
        let cmdline = p.cmdline.as_ref().map(|c| c.as_str());
        match out.iter_mut().find(|g| g.name == p.comm.as_str()) {
            Some(g) => {
                g.cores += cores;
                if let Some(d) = delay {
                    g.run_delay = Some(g.run_delay.unwrap_or(0.0) + d);
                }
                g.pid = p.pid;
                g.threads = p.threads;
                g.cmdline = cmdline.or(g.cmdline);
            }
            // `top` holds at most MAX_TOP_PROCS entries, so there is always room.
            None => {
                let _ = out.push(ProcGroup {
                    name: p.comm.as_str(),
                    cores,
                    run_delay: delay,
                    pid: p.pid,
                    threads: p.threads,
                    cmdline,
                });
            }
        }
    }
    out
}

/// The hottest thread of each listed process: the one the agent names, or the process itself
/// when it is single-threaded. The same (process, thread) name twice keeps the busiest.
pub fn thread_figures(hz: u32, s: &Sample) -> heapless::Vec<ThreadFigure<'_>, MAX_TOP_PROCS> {
    let mut out: heapless::Vec<ThreadFigure<'_>, MAX_TOP_PROCS> = heapless::Vec::new();
    for p in &s.top {
        let t = match &p.hottest_thread {
            Some(t) => ThreadFigure {
                process: p.comm.as_str(),
                thread: t.comm.as_ref().map_or(p.comm.as_str(), |c| c.as_str()),
                pid: p.pid,
                tid: t.tid,
                cores: core_fraction(hz, s, u64::from(t.ticks)),
            },
            None if p.threads <= 1 => ThreadFigure {
                process: p.comm.as_str(),
                thread: p.comm.as_str(),
                pid: p.pid,
                tid: p.pid,
                cores: proc_cores(hz, s, p),
            },
            None => continue,
        };
        match out
            .iter_mut()
            .find(|x| x.process == t.process && x.thread == t.thread)
        {
            Some(x) if t.cores > x.cores => *x = t,
            Some(_) => {}
            None => {
                let _ = out.push(t);
            }
        }
    }
    out
}

/// The busiest of [`thread_figures`].
pub fn hottest_thread(hz: u32, s: &Sample) -> Option<ThreadFigure<'_>> {
    thread_figures(hz, s)
        .into_iter()
        .max_by(|a, b| a.cores.total_cmp(&b.cores))
}

/// iostat -x figures of one disk in one interval (Default: an idle disk).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DiskFigures {
    /// Busy time / interval, 0..1.
    pub util: f64,
    /// Average time per completed request, ms (None without requests).
    pub await_ms: Option<f64>,
    /// Average queue size (weighted busy time / interval).
    pub queue: f64,
    /// Bytes read per second.
    pub read_bps: f64,
    /// Bytes written per second.
    pub write_bps: f64,
    /// Completed requests per second, reads and writes.
    pub reads_s: f64,
    /// Completed writes per second.
    pub writes_s: f64,
}

/// The figures of one disk, None when its counters are marked reset (no previous reading).
pub fn disk(s: &Sample, d: &DiskSample) -> Option<DiskFigures> {
    if d.flags & flags::RESET != 0 {
        return None;
    }
    let secs = interval_s(s);
    let ms = secs * 1000.0;
    let ios = u64::from(d.reads) + u64::from(d.writes);
    Some(DiskFigures {
        util: (f64::from(d.io_ms) / ms).min(1.0),
        await_ms: (ios > 0)
            .then(|| (u64::from(d.read_ms) + u64::from(d.write_ms)) as f64 / ios as f64),
        queue: f64::from(d.weighted_ms) / ms,
        read_bps: d.sectors_read as f64 * 512.0 / secs,
        write_bps: d.sectors_written as f64 * 512.0 / secs,
        reads_s: f64::from(d.reads) / secs,
        writes_s: f64::from(d.writes) / secs,
    })
}

/// Full duplex, or duplex unknown (judged as full, see the module's rules).
pub fn nic_full_duplex(n: &NicSample) -> bool {
    n.flags & flags::FULL_DUPLEX != 0 || n.flags & flags::DUPLEX_UNKNOWN != 0
}

/// Link speed in bytes per second (0 when unknown).
pub fn link_bytes_s(speed_mbit: u32) -> f64 {
    f64::from(speed_mbit) * 1e6 / 8.0
}

/// Use of a link (0..1, more when the speed is wrong): full duplex max(rx, tx) / speed, half
/// (rx + tx) / speed; None when the speed is unknown.
pub fn link_util(rx_bps: f64, tx_bps: f64, speed_bps: f64, full_duplex: bool) -> Option<f64> {
    (speed_bps > 0.0).then(|| {
        if full_duplex {
            rx_bps.max(tx_bps) / speed_bps
        } else {
            (rx_bps + tx_bps) / speed_bps
        }
    })
}

/// Throughput of one NIC in one interval against its link speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NicFigures {
    /// The link is up (operstate).
    pub up: bool,
    /// Full duplex or unknown ([`nic_full_duplex`]): rx and tx each up to the link speed.
    pub full_duplex: bool,
    /// Bytes received per second.
    pub rx_bps: f64,
    /// Bytes sent per second.
    pub tx_bps: f64,
    /// See [`link_util`].
    pub util: Option<f64>,
    /// Receive and transmit errors in the interval.
    pub errors: u64,
    /// Receive and transmit drops in the interval.
    pub drops: u64,
}

/// The figures of one NIC, None when its counters are marked reset (no previous reading).
pub fn nic(s: &Sample, n: &NicSample) -> Option<NicFigures> {
    if n.flags & flags::RESET != 0 {
        return None;
    }
    let secs = interval_s(s);
    let rx = n.rx_bytes as f64 / secs;
    let tx = n.tx_bytes as f64 / secs;
    let full = nic_full_duplex(n);
    Some(NicFigures {
        up: n.flags & flags::LINK_UP != 0,
        full_duplex: full,
        rx_bps: rx,
        tx_bps: tx,
        util: link_util(rx, tx, link_bytes_s(n.speed_mbit), full),
        errors: u64::from(n.rx_errors) + u64::from(n.tx_errors),
        drops: u64::from(n.rx_dropped) + u64::from(n.tx_dropped),
    })
}

/// Pages swapped in + out in the interval (0 without vm figures).
pub fn swap_pages(s: &Sample) -> u64 {
    s.vm.map_or(0, |v| {
        u64::from(v.swap_in_pages) + u64::from(v.swap_out_pages)
    })
}

/// TCP resets of the interval: sent plus established connections reset.
pub fn tcp_resets(t: &nasprobe_proto::TcpActivity) -> u64 {
    u64::from(t.out_rsts) + u64::from(t.estab_resets)
}

/// TCP retransmission timeouts of the interval, plus connections aborted on timeout.
pub fn tcp_timeouts(t: &nasprobe_proto::TcpActivity) -> u64 {
    u64::from(t.timeouts.unwrap_or(0)) + u64::from(t.timeout_aborts.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::{ProcSample, ThreadSample};

    fn sample(interval_us: u32) -> Sample {
        Sample {
            interval_us,
            ..Default::default()
        }
    }

    #[test]
    fn cpu_busy_iowait_and_modes() {
        let t = CpuTicks {
            user: 30,
            system: 20,
            idle: 40,
            iowait: 10,
            ..Default::default()
        };
        assert!((cpu_busy(&t).unwrap() - 0.5).abs() < 1e-12);
        assert!((cpu_iowait(&t).unwrap() - 0.1).abs() < 1e-12);
        let m = cpu_modes(&t).unwrap();
        assert!((m.user + m.system + m.iowait + m.irq + m.steal + m.idle - 1.0).abs() < 1e-12);
        let r = CpuTicks {
            flags: flags::RESET,
            ..t
        };
        assert_eq!((cpu_busy(&r), cpu_iowait(&r)), (None, None));
        assert_eq!(cpu_busy(&CpuTicks::default()), None);
    }

    #[test]
    fn saturated_wire_values_do_not_overflow() {
        let s = sample(1_000_000);
        let p = ProcSample {
            pid: 1,
            comm: heapless::String::try_from("x").unwrap(),
            state: b'R',
            threads: 1,
            utime: u32::MAX,
            stime: u32::MAX,
            run_delay_us: None,
            hottest_thread: None,
            cmdline: None,
        };
        assert_eq!(proc_cores(100, &s, &p), 2.0 * f64::from(u32::MAX) / 100.0);
        let d = DiskSample {
            reads: u32::MAX,
            writes: u32::MAX,
            read_ms: u32::MAX,
            write_ms: u32::MAX,
            io_ms: u32::MAX,
            ..Default::default()
        };
        let f = disk(&s, &d).unwrap();
        assert_eq!((f.util, f.await_ms), (1.0, Some(1.0)));
    }

    #[test]
    fn disk_util_is_capped_and_await_needs_requests() {
        let s = sample(500_000);
        let d = DiskSample {
            io_ms: 700,
            weighted_ms: 1000,
            sectors_read: 2048,
            ..Default::default()
        };
        let f = disk(&s, &d).unwrap();
        assert_eq!(f.util, 1.0);
        assert_eq!(f.await_ms, None);
        assert_eq!(f.queue, 2.0);
        assert_eq!(f.read_bps, 2048.0 * 512.0 * 2.0);
    }

    #[test]
    fn nic_duplex_rule() {
        let s = sample(1_000_000);
        let base = NicSample {
            speed_mbit: 8,
            rx_bytes: 600_000,
            tx_bytes: 400_000,
            ..Default::default()
        };
        let util = |f: u8| nic(&s, &NicSample { flags: f, ..base }).unwrap().util;
        assert_eq!(util(flags::FULL_DUPLEX), Some(0.6));
        assert_eq!(util(flags::DUPLEX_UNKNOWN), Some(0.6));
        assert_eq!(util(0), Some(1.0));
        assert_eq!(
            nic(
                &s,
                &NicSample {
                    speed_mbit: 0,
                    ..base
                }
            )
            .unwrap()
            .util,
            None
        );
        assert_eq!(
            nic(
                &s,
                &NicSample {
                    flags: flags::RESET,
                    ..base
                }
            ),
            None
        );
    }

    #[test]
    fn groups_add_processes_and_keep_the_busiest_thread() {
        let mut s = sample(1_000_000);
        let mk = |pid: u32, ticks: u32, thread: Option<(u32, u32)>| ProcSample {
            pid,
            comm: heapless::String::try_from("rsync").unwrap(),
            state: b'R',
            threads: if thread.is_some() { 4 } else { 1 },
            utime: ticks,
            stime: 0,
            run_delay_us: Some(100_000),
            hottest_thread: thread.map(|(tid, ticks)| ThreadSample {
                tid,
                comm: None,
                ticks,
            }),
            cmdline: None,
        };
        s.top.push(mk(10, 50, None)).unwrap();
        s.top.push(mk(11, 80, Some((12, 70)))).unwrap();
        let g = proc_groups(100, &s);
        assert_eq!(g.len(), 1);
        assert!((g[0].cores - 1.3).abs() < 1e-12);
        assert!((g[0].run_delay.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(g[0].pid, 11);
        let t = hottest_thread(100, &s).unwrap();
        assert_eq!((t.pid, t.tid), (11, 12));
        assert!((t.cores - 0.7).abs() < 1e-12);
        assert_eq!(thread_figures(100, &s).len(), 1);
    }
}
