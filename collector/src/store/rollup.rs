//! Rollups: consecutive samples of one agent instance merged into one sample per resolution
//! step (a minute, an hour), stored as chunks close (the 1-minute and 1-hour tiers,
//! [`super::tiers`]) and merged again while reading, for reports over long windows.
//!
//! The agent's samples carry deltas over their interval, so a merge of consecutive samples is
//! itself a sample over the summed interval: counters (CPU ticks, disk and NIC counters, TCP and
//! VM activity, process CPU) add up, gauges take the step's last value (memory, mounts, link
//! speed) or its mean (runnable/blocked tasks, in-flight I/O) or its peak (agent RSS). Means
//! over the window (busy, util, rates) are the same as over raw samples; peaks are those of the
//! step, which the report names as its resolution. A merged sample merges again the same way,
//! so an hour is built from its minutes.

use nasprobe_proto::{
    CpuTicks, DiskSample, MAX_TOP_PROCS, NicSample, ProcSample, Sample, TcpActivity, VmActivity,
};

/// One minute, ms: the finer stored tier.
pub(crate) const MINUTE_MS: u64 = 60_000;
/// One hour, ms: the coarser stored tier.
pub(crate) const HOUR_MS: u64 = 3_600_000;
/// The stored tiers' steps, finest first.
pub(crate) const TIERS: [u64; 2] = [MINUTE_MS, HOUR_MS];
/// The report reads rollups instead of raw samples over windows longer than this (at 1 Hz,
/// 21,600 samples a host: the raw detail a day's report can afford).
pub(crate) const LONG_WINDOW_MS: u64 = 6 * HOUR_MS;
/// Over windows longer than this the report reads hourly rollups instead of 1-minute ones (two
/// weeks of minutes are 20,160 steps a host, as many as 6 h of raw samples at 1 Hz).
pub(crate) const VERY_LONG_WINDOW_MS: u64 = 14 * 24 * HOUR_MS;

/// The step of the samples a report over data spanning `span_ms` reads: None (raw samples),
/// a minute, or an hour.
pub(crate) fn step_for_span(span_ms: u64) -> Option<u64> {
    if span_ms > VERY_LONG_WINDOW_MS {
        Some(HOUR_MS)
    } else if span_ms > LONG_WINDOW_MS {
        Some(MINUTE_MS)
    } else {
        None
    }
}

/// A step's name as `--retention` and the report's resolution say it (`1m`, `1h`).
pub(crate) fn tier_name(step_ms: u64) -> String {
    if step_ms.is_multiple_of(HOUR_MS) {
        format!("{}h", step_ms / HOUR_MS)
    } else {
        format!("{}m", step_ms / MINUTE_MS)
    }
}

/// One merged step: the merged sample, the seq and agent time of its last sample.
pub(crate) struct Merged {
    pub last_seq: u64,
    pub last_ms: u64,
    pub sample: Sample,
}

/// Merges consecutive samples (raw or already merged) of one instance into steps of
/// `step_ms` by their times: a sample whose time falls in another step than the previous
/// one's closes the step.
pub(crate) struct Merger {
    step_ms: u64,
    open: Option<Step>,
}

impl Merger {
    pub fn new(step_ms: u64) -> Merger {
        Merger {
            step_ms: step_ms.max(1),
            open: None,
        }
    }

    /// Adds the next sample; returns the step it closed, if any. (By reference: a `Sample` is
    /// ~20 KB, copied only when it opens a step.)
    pub fn push(&mut self, seq: u64, time_ms: u64, s: &Sample) -> Option<Merged> {
        match self.open.as_mut() {
            Some(st) if st.last_ms / self.step_ms == time_ms / self.step_ms => {
                st.add(seq, time_ms, s);
                None
            }
            _ => self
                .open
                .replace(Step::new(seq, time_ms, s.clone()))
                .map(Step::merged),
        }
    }

    /// The step still open.
    pub fn finish(self) -> Option<Merged> {
        self.open.map(Step::merged)
    }
}

/// A step being merged: the sum so far and what means need.
pub(crate) struct Step {
    pub sample: Sample,
    /// Samples merged.
    pub n: u32,
    pub last_seq: u64,
    pub last_ms: u64,
    running: u64,
    blocked: u64,
    /// Per disk index: sum of in-flight counts.
    in_flight: Vec<(u16, u64)>,
}

impl Step {
    pub fn new(seq: u64, time_ms: u64, mut s: Sample) -> Step {
        let interval_us = s.interval_us;
        for d in s.disks.iter_mut() {
            *d = busy_capped(d, interval_us);
        }
        let in_flight = s
            .disks
            .iter()
            .map(|d| (d.disk, u64::from(d.in_flight)))
            .collect();
        Step {
            running: u64::from(s.procs_running),
            blocked: u64::from(s.procs_blocked),
            sample: s,
            n: 1,
            last_seq: seq,
            last_ms: time_ms,
            in_flight,
        }
    }

    /// Adds the next sample of the same instance.
    pub fn add(&mut self, seq: u64, time_ms: u64, s: &Sample) {
        let a = &mut self.sample;
        a.interval_us = a.interval_us.saturating_add(s.interval_us);
        add_cpu(&mut a.cpu_total, &s.cpu_total);
        for (i, c) in s.cpus.iter().enumerate() {
            match a.cpus.get_mut(i) {
                Some(x) => add_cpu(x, c),
                None => {
                    let _ = a.cpus.push(*c);
                }
            }
        }
        self.running += u64::from(s.procs_running);
        self.blocked += u64::from(s.procs_blocked);
        a.forks = a.forks.saturating_add(s.forks);
        a.context_switches = a.context_switches.saturating_add(s.context_switches);
        a.short_lived = a.short_lived.saturating_add(s.short_lived);
        for p in &s.top {
            match a.top.iter_mut().find(|x| x.pid == p.pid) {
                Some(x) => add_proc(x, p),
                None => {
                    if a.top.push(p.clone()).is_err() {
                        // Full: it replaces the least busy if it is busier.
                        let (i, least) = a
                            .top
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, x)| u64::from(x.utime) + u64::from(x.stime))
                            .map(|(i, x)| (i, u64::from(x.utime) + u64::from(x.stime)))
                            .expect("a full list is not empty");
                        if u64::from(p.utime) + u64::from(p.stime) > least {
                            a.top[i] = p.clone();
                        }
                    }
                }
            }
        }
        for d in &s.disks {
            match self.in_flight.iter_mut().find(|x| x.0 == d.disk) {
                Some(x) => x.1 += u64::from(d.in_flight),
                None => self.in_flight.push((d.disk, u64::from(d.in_flight))),
            }
            let d = busy_capped(d, s.interval_us);
            match a.disks.iter_mut().find(|x| x.disk == d.disk) {
                Some(x) => add_disk(x, &d),
                None => {
                    let _ = a.disks.push(d);
                }
            }
        }
        for n in &s.nics {
            match a.nics.iter_mut().find(|x| x.nic == n.nic) {
                Some(x) => add_nic(x, n),
                None => {
                    let _ = a.nics.push(*n);
                }
            }
        }
        if s.memory.is_some() {
            a.memory = s.memory;
        }
        a.vm = match (a.vm, s.vm) {
            (Some(x), Some(y)) => Some(add_vm(x, y)),
            (x, y) => x.or(y),
        };
        a.tcp = match (a.tcp, s.tcp) {
            (Some(x), Some(y)) => Some(add_tcp(x, y)),
            (x, y) => x.or(y),
        };
        if !s.mounts.is_empty() {
            a.mounts = s.mounts.clone();
        }
        a.agent.cpu_us = a.agent.cpu_us.saturating_add(s.agent.cpu_us);
        a.agent.rss_kib = a.agent.rss_kib.max(s.agent.rss_kib);
        a.agent.clients = a.agent.clients.max(s.agent.clients);
        self.n += 1;
        self.last_seq = seq;
        self.last_ms = time_ms;
    }

    fn merged(self) -> Merged {
        let (last_seq, last_ms) = (self.last_seq, self.last_ms);
        Merged {
            last_seq,
            last_ms,
            sample: self.finish(),
        }
    }

    /// The merged sample (means set, top list busiest first).
    pub fn finish(mut self) -> Sample {
        let n = u64::from(self.n.max(1));
        let a = &mut self.sample;
        a.procs_running = (self.running.div_ceil(n)).min(u64::from(u16::MAX)) as u16;
        a.procs_blocked = (self.blocked.div_ceil(n)).min(u64::from(u16::MAX)) as u16;
        for d in a.disks.iter_mut() {
            if let Some(x) = self.in_flight.iter().find(|x| x.0 == d.disk) {
                d.in_flight = (x.1 / n).min(u64::from(u32::MAX)) as u32;
            }
        }
        a.top
            .sort_by_key(|p| std::cmp::Reverse(u64::from(p.utime) + u64::from(p.stime)));
        debug_assert!(a.top.len() <= MAX_TOP_PROCS);
        self.sample
    }
}

fn add_cpu(a: &mut CpuTicks, b: &CpuTicks) {
    a.flags |= b.flags;
    a.user = a.user.saturating_add(b.user);
    a.nice = a.nice.saturating_add(b.nice);
    a.system = a.system.saturating_add(b.system);
    a.idle = a.idle.saturating_add(b.idle);
    a.iowait = a.iowait.saturating_add(b.iowait);
    a.irq = a.irq.saturating_add(b.irq);
    a.softirq = a.softirq.saturating_add(b.softirq);
    a.steal = a.steal.saturating_add(b.steal);
}

fn add_proc(a: &mut ProcSample, b: &ProcSample) {
    a.state = b.state;
    a.threads = b.threads;
    a.utime = a.utime.saturating_add(b.utime);
    a.stime = a.stime.saturating_add(b.stime);
    a.run_delay_us = match (a.run_delay_us, b.run_delay_us) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, y) => x.or(y),
    };
    // The thread that was hottest in any one interval, with the ticks of that interval summed
    // when it is the same thread again.
    a.hottest_thread = match (a.hottest_thread.take(), &b.hottest_thread) {
        (Some(mut x), Some(y)) if x.tid == y.tid => {
            x.ticks = x.ticks.saturating_add(y.ticks);
            Some(x)
        }
        (Some(x), Some(y)) => Some(if y.ticks > x.ticks { y.clone() } else { x }),
        (x, y) => x.or_else(|| y.clone()),
    };
    if a.cmdline.is_none() {
        a.cmdline = b.cmdline.clone();
    }
}

/// The disk's busy time cut to its sample's interval: the formulas cap each sample's
/// utilisation at 100 % (`nasprobe_formulas`, disk util), so a merged step must add the capped
/// busy times for its utilisation to be the mean of the samples' (a jittered interval can
/// report io_ms a little over it).
fn busy_capped(d: &DiskSample, interval_us: u32) -> DiskSample {
    let mut d = *d;
    d.io_ms = d.io_ms.min(interval_us / 1000);
    d
}

fn add_disk(a: &mut DiskSample, b: &DiskSample) {
    a.flags |= b.flags;
    a.reads = a.reads.saturating_add(b.reads);
    a.reads_merged = a.reads_merged.saturating_add(b.reads_merged);
    a.sectors_read = a.sectors_read.saturating_add(b.sectors_read);
    a.read_ms = a.read_ms.saturating_add(b.read_ms);
    a.writes = a.writes.saturating_add(b.writes);
    a.writes_merged = a.writes_merged.saturating_add(b.writes_merged);
    a.sectors_written = a.sectors_written.saturating_add(b.sectors_written);
    a.write_ms = a.write_ms.saturating_add(b.write_ms);
    a.io_ms = a.io_ms.saturating_add(b.io_ms);
    a.weighted_ms = a.weighted_ms.saturating_add(b.weighted_ms);
}

fn add_nic(a: &mut NicSample, b: &NicSample) {
    a.flags |= b.flags;
    a.speed_mbit = b.speed_mbit;
    a.rx_bytes = a.rx_bytes.saturating_add(b.rx_bytes);
    a.tx_bytes = a.tx_bytes.saturating_add(b.tx_bytes);
    a.rx_packets = a.rx_packets.saturating_add(b.rx_packets);
    a.tx_packets = a.tx_packets.saturating_add(b.tx_packets);
    a.rx_errors = a.rx_errors.saturating_add(b.rx_errors);
    a.tx_errors = a.tx_errors.saturating_add(b.tx_errors);
    a.rx_dropped = a.rx_dropped.saturating_add(b.rx_dropped);
    a.tx_dropped = a.tx_dropped.saturating_add(b.tx_dropped);
}

fn opt_add(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, y) => x.or(y),
    }
}

fn add_vm(a: VmActivity, b: VmActivity) -> VmActivity {
    VmActivity {
        swap_in_pages: a.swap_in_pages.saturating_add(b.swap_in_pages),
        swap_out_pages: a.swap_out_pages.saturating_add(b.swap_out_pages),
        major_faults: a.major_faults.saturating_add(b.major_faults),
        alloc_stalls: opt_add(a.alloc_stalls, b.alloc_stalls),
        direct_scanned: opt_add(a.direct_scanned, b.direct_scanned),
    }
}

fn add_tcp(a: TcpActivity, b: TcpActivity) -> TcpActivity {
    TcpActivity {
        retrans_segs: a.retrans_segs.saturating_add(b.retrans_segs),
        out_rsts: a.out_rsts.saturating_add(b.out_rsts),
        in_errs: a.in_errs.saturating_add(b.in_errs),
        estab_resets: a.estab_resets.saturating_add(b.estab_resets),
        attempt_fails: a.attempt_fails.saturating_add(b.attempt_fails),
        timeouts: opt_add(a.timeouts, b.timeouts),
        keepalive_aborts: opt_add(a.keepalive_aborts, b.keepalive_aborts),
        timeout_aborts: opt_add(a.timeout_aborts, b.timeout_aborts),
        listen_drops: opt_add(a.listen_drops, b.listen_drops),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::nas_sample;

    #[test]
    fn a_step_sums_counters_and_averages_gauges() {
        let s: Vec<Sample> = (1..=3).map(nas_sample).collect();
        let mut st = Step::new(1, 1000, s[0].clone());
        st.add(2, 2000, &s[1]);
        st.add(3, 3000, &s[2]);
        assert_eq!((st.n, st.last_seq, st.last_ms), (3, 3, 3000));
        let m = st.finish();
        let sum = |f: &dyn Fn(&Sample) -> u64| s.iter().map(f).sum::<u64>();
        assert_eq!(u64::from(m.interval_us), sum(&|x| u64::from(x.interval_us)));
        assert_eq!(
            u64::from(m.cpu_total.user),
            sum(&|x| u64::from(x.cpu_total.user))
        );
        assert_eq!(
            u64::from(m.cpus[2].idle),
            sum(&|x| u64::from(x.cpus[2].idle))
        );
        assert_eq!(
            m.disks[0].sectors_written,
            sum(&|x| x.disks[0].sectors_written)
        );
        assert_eq!(m.nics[0].rx_bytes, sum(&|x| x.nics[0].rx_bytes));
        let pid = s[0].top[0].pid;
        let top = m.top.iter().find(|p| p.pid == pid).unwrap();
        let want: u64 = s
            .iter()
            .filter_map(|x| x.top.iter().find(|p| p.pid == pid))
            .map(|p| u64::from(p.utime))
            .sum();
        assert_eq!(u64::from(top.utime), want);
        let mean = sum(&|x| u64::from(x.procs_running)).div_ceil(3);
        assert_eq!(u64::from(m.procs_running), mean);
        assert_eq!(m.memory, s[2].memory, "a gauge takes the step's last value");
        // The merged sample is a valid sample on the wire.
        let b = postcard::to_allocvec(&m).unwrap();
        assert_eq!(postcard::from_bytes::<Sample>(&b).unwrap(), m);
    }
}
