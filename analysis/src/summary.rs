//! Each host's summary over the transfer's active period: CPU, its top processes, disks, NICs,
//! memory and TCP, as `hosts[]` of the report gives them.

use crate::report::{
    CpuSummary, DiskSummary, HostSummary, MemSummary, NicSummary, ProcSummary, TcpSummary,
    ThreadSummary,
};
use crate::series::HostSeries;
use crate::stats::{best_window, max, mean, median, pick};
use crate::verdict::candidates::nic_util;
use crate::vocab::{MB, PEAK_SPAN_MS, round2};

fn med(v: &[f64], idx: &[usize]) -> f64 {
    round2(median(&pick(v, idx)).unwrap_or(0.0))
}

fn peak_of(s: &HostSeries, v: &[f64], idx: &[usize]) -> f64 {
    let pts: Vec<(u64, f64, f64)> = idx
        .iter()
        .filter_map(|&i| Some((s.points[i].time_ms, s.points[i].interval_ms, *v.get(i)?)))
        .collect();
    round2(best_window(&pts, PEAK_SPAN_MS).unwrap_or(0.0))
}

pub(crate) fn summarize(s: &HostSeries, idx: &[usize], samples: usize) -> HostSummary {
    let cores = s
        .cpu_count
        .max(s.core_busy.iter().map(Vec::len).max().unwrap_or(0));
    let per_core_busy = (0..cores)
        .map(|c| {
            let v: Vec<f64> = idx
                .iter()
                .filter_map(|&i| s.core_busy.get(i).and_then(|r| r.get(c)).copied())
                .collect();
            round2(median(&v).unwrap_or(0.0))
        })
        .collect();
    let hottest_thread = s
        .threads
        .iter()
        .map(|(k, t)| (k, t, median(&pick(&t.frac, idx)).unwrap_or(0.0)))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(k, t, f)| ThreadSummary {
            process: k.process.clone(),
            thread: k.thread.clone(),
            pid: t.last_pid,
            tid: t.last_tid,
            core_fraction: round2(f.min(1.0)),
            peak: round2(max(&pick(&t.frac, idx)).unwrap_or(0.0).min(1.0)),
        });
    let mut top_processes: Vec<ProcSummary> = s
        .procs
        .iter()
        .map(|(name, p)| ProcSummary {
            name: name.clone(),
            pid: p.last_pid,
            cpu_cores: med(&p.cores, idx),
            cpu_cores_mean: round2(mean(&pick(&p.cores, idx)).unwrap_or(0.0)),
            threads: p.threads,
            run_delay: median(&pick(&p.run_delay_frac, idx)).map(round2),
            cmdline: p.cmdline.clone(),
        })
        .filter(|p| p.cpu_cores_mean > 0.0)
        .collect();
    top_processes.sort_by(|a, b| b.cpu_cores_mean.total_cmp(&a.cpu_cores_mean));
    top_processes.truncate(8);
    let disks = s
        .disks
        .iter()
        .map(|(name, d)| DiskSummary {
            name: name.clone(),
            is_md: d.is_md,
            rotational: d.rotational,
            util: med(&d.util, idx),
            util_peak: peak_of(s, &d.util, idx),
            await_ms: med(&d.await_ms, idx),
            queue: med(&d.queue, idx),
            read_mb_s: round2(mean(&pick(&d.read_bps, idx)).unwrap_or(0.0) / MB),
            write_mb_s: round2(mean(&pick(&d.write_bps, idx)).unwrap_or(0.0) / MB),
        })
        .collect();
    let nics = s
        .nics
        .iter()
        .map(|(name, n)| {
            let speed = median(&pick(&n.speed_bps, idx)).unwrap_or(0.0);
            let util = nic_util(n, idx);
            NicSummary {
                name: name.clone(),
                speed_mbit: (speed * 8.0 / 1e6).round() as u32,
                full_duplex: n.full_duplex.last().copied().unwrap_or(true),
                mtu: n.mtu,
                rx_mb_s: round2(med(&n.rx_bps, idx) / MB),
                tx_mb_s: round2(med(&n.tx_bps, idx) / MB),
                rx_peak_mb_s: round2(peak_of(s, &n.rx_bps, idx) / MB),
                tx_peak_mb_s: round2(peak_of(s, &n.tx_bps, idx) / MB),
                util: util.is_finite().then(|| round2(util)),
                errors_per_s: med(&n.errors_ps, idx),
                drops_per_s: med(&n.drops_ps, idx),
                is_bond: n.is_bond,
                slaves: n.slaves.clone(),
            }
        })
        .collect();
    let m = &s.mem;
    let stalls = pick(&m.alloc_stalls_ps, idx);
    HostSummary {
        name: s.name.clone(),
        samples,
        cpu: CpuSummary {
            cores,
            busy: med(&s.cpu_busy, idx),
            busy_peak: peak_of(s, &s.cpu_busy, idx),
            iowait: med(&s.cpu_iowait, idx),
            per_core_busy,
            run_queue: med(&s.run_queue, idx),
            hottest_thread,
        },
        top_processes,
        disks,
        nics,
        memory: MemSummary {
            total_mib: round2(med(&m.total_kib, idx) / 1024.0),
            available_mib_min: round2(
                pick(&m.available_kib, idx)
                    .into_iter()
                    .filter(|x| x.is_finite())
                    .fold(f64::INFINITY, f64::min)
                    .min(1e18)
                    / 1024.0,
            ),
            available_estimated: m.available_estimated,
            swap_used_mib: round2(med(&m.swap_used_kib, idx) / 1024.0),
            swap_in_pages_s: med(&m.swap_in_ps, idx),
            swap_out_pages_s: med(&m.swap_out_ps, idx),
            major_faults_s: med(&m.major_faults_ps, idx),
            alloc_stalls_s: median(&stalls).map(round2),
        },
        tcp: TcpSummary {
            retransmits: pick(&s.tcp.retrans, idx)
                .iter()
                .filter(|x| x.is_finite())
                .sum(),
            resets: pick(&s.tcp.resets, idx)
                .iter()
                .filter(|x| x.is_finite())
                .sum(),
            timeouts: pick(&s.tcp.timeouts, idx)
                .iter()
                .filter(|x| x.is_finite())
                .sum(),
        },
        agent_cpu_us_per_s: round2(median(&s.agent_cpu).unwrap_or(0.0) * 1e6),
        // Set by `analyze` from the instances.
        clock_offset_ms: None,
        clock_offset_precision_ms: None,
    }
}
