//! The candidate walls of one host over the transfer's active period: its hottest thread, all
//! its cores, its busiest disk and NIC, and memory, each with its utilization and sentence.

use super::flow::is_virtual_nic;
use super::walls::*;
use crate::series::{HostSeries, NicSeries};
use crate::stats::{max, mean, median, percentile, pick};
use crate::vocab::{Candidate, MB, Resource, pct, round2};

/// Util fraction of a NIC over the active points (NaN when the speed is unknown).
pub(crate) fn nic_util(n: &NicSeries, idx: &[usize]) -> f64 {
    median(&pick(&n.util(), idx)).unwrap_or(f64::NAN)
}

/// "; busiest: pigz 3.9 cores (9 threads), smbd 0.1" — the processes using the most CPU.
fn busiest_processes(s: &HostSeries, idx: &[usize]) -> String {
    let mut v: Vec<(&String, f64, u16)> = s
        .procs
        .iter()
        .map(|(n, p)| (n, mean(&pick(&p.cores, idx)).unwrap_or(0.0), p.threads))
        .filter(|p| p.1 >= 0.05)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    if v.is_empty() {
        return String::new();
    }
    let list: Vec<String> = v
        .iter()
        .take(3)
        .map(|(n, c, t)| {
            if *t > 1 {
                format!("{n} {c:.1} cores ({t} threads)")
            } else {
                format!("{n} {c:.1} cores")
            }
        })
        .collect();
    format!("; busiest: {}", list.join(", "))
}

/// All candidates of one host over the active points: its hottest thread, all cores, its
/// busiest disk and NIC, and memory.
pub(crate) fn candidates(s: &HostSeries, idx: &[usize]) -> Vec<Candidate> {
    let busy = median(&pick(&s.cpu_busy, idx)).unwrap_or(0.0);
    let mut out = Vec::new();
    out.extend(thread_candidate(s, idx, busy));
    out.push(cpu_all_candidate(s, idx, busy));
    out.extend(disk_candidate(s, idx));
    out.extend(nic_candidate(s, idx, None));
    out.push(memory_candidate(s, idx));
    out
}

/// The ports of the flow's sending connection, on its host: its egress packets leave from
/// `local` to `remote`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowPorts {
    pub local: u16,
    pub remote: u16,
}

/// The hottest thread against one core (`busy`: all cores together, for the sentence).
fn thread_candidate(s: &HostSeries, idx: &[usize], busy: f64) -> Option<Candidate> {
    let h = &s.name;
    let cores = s.cpu_count.max(1);
    let hottest = s
        .threads
        .iter()
        .map(|(k, t)| (k, t, median(&pick(&t.frac, idx)).unwrap_or(0.0)))
        .max_by(|a, b| a.2.total_cmp(&b.2));
    let (k, t, frac) = hottest?;
    let frac = frac.min(1.0);
    let peak = max(&pick(&t.frac, idx)).unwrap_or(frac).min(1.0);
    let proc_cores = s
        .procs
        .get(&k.process)
        .and_then(|p| median(&pick(&p.cores, idx)))
        .unwrap_or(frac);
    let thread_desc = if k.thread == k.process {
        format!("one thread of `{}`", k.process)
    } else {
        format!("thread `{}` of `{}`", k.thread, k.process)
    };
    // One core, full, mostly this thread's: the thread has all the rest leaves it.
    let busiest_other = s
        .procs
        .iter()
        .filter(|(n, _)| **n != k.process)
        .map(|(_, p)| median(&pick(&p.cores, idx)).unwrap_or(0.0))
        .fold(0.0, f64::max);
    let one_core_full = cores == 1
        && busy >= CPU_ALL_WALL
        && frac >= ONE_CORE_THREAD_SHARE
        && frac >= ONE_CORE_THREAD_LEAD * busiest_other;
    let score = if one_core_full {
        (frac / (frac + (1.0 - busy).max(0.0))).min(1.0)
    } else {
        frac
    };
    // Waiting for a CPU while cores idle: held back, not headroom (`starved`).
    let starved = super::starved::starved_note(s, idx, &k.process, busy)
        .map(|n| format!("; {n}"))
        .unwrap_or_default();
    Some(Candidate {
        host: h.clone(),
        resource: Resource::CpuThread,
        device: None,
        process: Some(k.process.clone()),
        thread: (k.thread != k.process).then(|| k.thread.clone()),
        utilization: round2(frac),
        score,
        wall: score >= THREAD_WALL,
        lone: proc_cores < LONE_THREAD_CORES,
        sentence: format!(
            "{h}: {thread_desc} ({}) at {} of a core (median; peak {}) while {}{starved}",
            if t.last_tid != 0 && t.last_tid != t.last_pid {
                format!("pid {}, tid {}", t.last_pid, t.last_tid)
            } else {
                format!("pid {}", t.last_pid)
            },
            pct(frac),
            pct(peak),
            if one_core_full {
                format!(
                    "the host's one core was {} busy: the thread had all of it that the rest left",
                    pct(busy)
                )
            } else {
                format!("all {cores} cores together were {} busy", pct(busy))
            }
        ),
    })
}

/// All cores together.
fn cpu_all_candidate(s: &HostSeries, idx: &[usize], busy: f64) -> Candidate {
    let h = &s.name;
    let cores = s.cpu_count.max(1);
    let per_core: Vec<f64> = (0..cores)
        .map(|c| {
            let v: Vec<f64> = idx
                .iter()
                .filter_map(|&i| s.core_busy.get(i).and_then(|r| r.get(c)).copied())
                .collect();
            median(&v).unwrap_or(0.0)
        })
        .collect();
    let core_max = max(&per_core).unwrap_or(0.0);
    let core_min = per_core.iter().copied().fold(f64::INFINITY, f64::min);
    Candidate {
        host: h.clone(),
        resource: Resource::CpuAll,
        device: None,
        process: None,
        thread: None,
        utilization: round2(busy),
        score: busy,
        wall: busy >= CPU_ALL_WALL,
        lone: false,
        sentence: format!(
            "{h}: {cores} cores {} busy together (per core {}-{}), run queue {:.1}{}",
            pct(busy),
            pct(if core_min.is_finite() { core_min } else { 0.0 }),
            pct(core_max),
            median(&pick(&s.run_queue, idx)).unwrap_or(0.0),
            busiest_processes(s, idx)
        ),
    }
}

/// The busiest disk. md arrays are judged by their members, so only real disks compete.
fn disk_candidate(s: &HostSeries, idx: &[usize]) -> Option<Candidate> {
    let h = &s.name;
    let mut disk_best: Option<(String, f64, f64, f64)> = None;
    let mut utils = Vec::new();
    for (name, d) in &s.disks {
        if d.is_md {
            continue;
        }
        let util = median(&pick(&d.util, idx)).unwrap_or(0.0);
        let aw = median(&pick(&d.await_ms, idx)).unwrap_or(0.0);
        let q = median(&pick(&d.queue, idx)).unwrap_or(0.0);
        let io = mean(&pick(&d.read_bps, idx)).unwrap_or(0.0)
            + mean(&pick(&d.write_bps, idx)).unwrap_or(0.0);
        if io > 0.0 || util > 0.0 {
            utils.push(util);
        }
        if disk_best.as_ref().is_none_or(|b| util > b.1) {
            disk_best = Some((name.clone(), util, aw, q));
        }
    }
    let (name, util, aw, q) = disk_best?;
    let lo = utils.iter().copied().fold(f64::INFINITY, f64::min);
    let md_of = s
        .disks
        .iter()
        .filter(|(_, d)| d.is_md)
        .map(|(n, _)| n.clone())
        .collect::<Vec<_>>();
    let md_note = if md_of.is_empty() {
        String::new()
    } else {
        format!(" (md arrays {} judged by their members)", md_of.join(", "))
    };
    let range = if utils.len() > 1 && lo.is_finite() {
        format!("{}-{}", pct(lo), pct(util))
    } else {
        pct(util)
    };
    Some(Candidate {
        host: h.clone(),
        resource: Resource::Disk,
        device: Some(name.clone()),
        process: None,
        thread: None,
        utilization: round2(util),
        score: util,
        wall: util >= DISK_WALL,
        lone: false,
        sentence: format!(
            "{h}: disks at {range} util{md_note}; busiest {name} at {}, await {:.1} ms, queue {:.1}",
            pct(util),
            aw,
            q
        ),
    })
}

/// The busiest physical NIC against its link. `ports`: the flow's, when it leaves this host
/// (known only once the flow's connections are: [`candidates`] passes None and guesses the
/// shaper class by rate, the verdict asks again with them).
pub(crate) fn nic_candidate(
    s: &HostSeries,
    idx: &[usize],
    ports: Option<FlowPorts>,
) -> Option<Candidate> {
    let h = &s.name;
    let mut nic_best: Option<(String, f64, f64, f64)> = None;
    for (name, n) in &s.nics {
        if is_virtual_nic(name) || n.is_bond {
            continue;
        }
        let util = nic_util(n, idx);
        let rate = median(&pick(&n.rx_bps, idx))
            .unwrap_or(0.0)
            .max(median(&pick(&n.tx_bps, idx)).unwrap_or(0.0));
        let speed = median(&pick(&n.speed_bps, idx)).unwrap_or(0.0);
        let key = if util.is_finite() {
            util
        } else {
            -1.0 + rate / 1e12
        };
        if nic_best.as_ref().is_none_or(|b| key > b.1) {
            nic_best = Some((name.clone(), key, rate, speed));
        }
    }
    let (name, util, rate, speed) = nic_best?;
    let configured = s.nics.get(&name).is_some_and(|n| n.speed_configured);
    if !configured && let Some(c) = shaped_candidate(s, &name, idx, speed, ports) {
        return Some(c);
    }
    let util = util.max(0.0);
    let over_link = util > NIC_OVER_LINK;
    let slow_link = speed > 0.0 && speed * 8.0 / 1e6 < 1000.0;
    let speed_txt = if speed > 0.0 {
        // One decimal on slow links: 11.5 of 12.5 MB/s, not "11 of 12".
        let d = usize::from(speed < 100.0 * MB);
        format!(
            "{:.d$} MB/s of {:.d$} ({:.d$} practical; link {} Mb/s)",
            rate / MB,
            speed / MB,
            speed * NIC_PRACTICAL / MB,
            (speed * 8.0 / 1e6).round()
        )
    } else {
        format!("{:.0} MB/s (link speed unknown)", rate / MB)
    };
    Some(Candidate {
        host: h.clone(),
        resource: Resource::Nic,
        device: Some(name.clone()),
        process: None,
        thread: None,
        utilization: round2(util),
        score: if over_link { 0.0 } else { util / NIC_PRACTICAL },
        wall: !over_link && (util >= NIC_WALL || (slow_link && util >= NIC_SLOW_LINK_WALL)),
        lone: false,
        sentence: format!(
            "{h}: {name} at {speed_txt}, {} of the link{}",
            pct(util),
            if over_link {
                format!(
                    " — more than the link can carry: its stated speed ({} Mb/s{}) is not \
                     its ceiling (a virtual link), so it is not the wall",
                    (speed * 8.0 / 1e6).round(),
                    if configured {
                        ", set by --link-speed"
                    } else {
                        ""
                    }
                )
            } else if slow_link && configured {
                format!(
                    " — a {} Mb/s link (speed set by --link-speed)",
                    (speed * 8.0 / 1e6).round()
                )
            } else if slow_link {
                format!(
                    " — negotiated at {} Mb/s, below gigabit: check the cable, the switch port and autonegotiation",
                    (speed * 8.0 / 1e6).round()
                )
            } else {
                String::new()
            }
        ),
    })
}

/// The NIC `name` against its traffic-control cap, when a root qdisc caps it below the link
/// (`--link-speed` overrides it: the caller asks only without). With several classes the flow's
/// is the one whose filter matches its `ports`; without such a filter, the one whose cap the
/// sending rate is nearest is the one the flow rides.
fn shaped_candidate(
    s: &HostSeries,
    name: &str,
    idx: &[usize],
    speed: f64,
    ports: Option<FlowPorts>,
) -> Option<Candidate> {
    let n = s.nics.get(name)?;
    let sh = n.shaper.as_ref()?;
    let tx = median(&pick(&n.tx_bps, idx)).unwrap_or(0.0);
    let near = |cap: u64| (cap as f64 / 8.0 / tx.max(1.0)).ln().abs();
    let matched = ports.and_then(|f| {
        sh.caps.iter().find_map(|c| {
            let p = c
                .ports
                .iter()
                .find(|p| p.port == if p.dst { f.remote } else { f.local })?;
            Some((c, *p))
        })
    });
    let class = match matched {
        Some((c, _)) => c,
        None => sh
            .caps
            .iter()
            .min_by(|a, b| near(a.cap_bit_s).total_cmp(&near(b.cap_bit_s)))?,
    };
    let (cap_bit, class) = (class.cap_bit_s, class.class);
    let cap = cap_bit as f64 / 8.0;
    if cap <= 0.0 || (speed > 0.0 && cap >= speed) {
        return None;
    }
    let util = tx / cap;
    let link = if speed > 0.0 {
        format!("the link is {} Mb/s", (speed * 8.0 / 1e6).round())
    } else {
        "the link speed is unknown".to_string()
    };
    let mbit = |b: u64| format!("{} Mbit/s", (b as f64 / 1e6).round());
    let range = |caps: &[nasprobe_proto::ShapedClass]| match caps {
        [lo, .., hi] => format!(" with caps {}..{}", mbit(lo.cap_bit_s), mbit(hi.cap_bit_s)),
        _ => String::new(),
    };
    let what = if let Some((_, p)) = matched {
        format!(
            "shapes egress{} ({}); the flow is in class {} (its filter matches {} port {}), \
             capped at {}",
            range(&sh.caps),
            sh.kind,
            nasprobe_proto::ClassName(class),
            if p.dst { "destination" } else { "source" },
            p.port,
            mbit(cap_bit)
        )
    } else if sh.caps.len() == 1 && class == 0 {
        format!("caps egress at {} ({})", mbit(cap_bit), sh.kind)
    } else if sh.caps.len() == 1 {
        format!(
            "caps egress at {} ({} class {})",
            mbit(cap_bit),
            sh.kind,
            nasprobe_proto::ClassName(class)
        )
    } else {
        format!(
            "shapes egress{} ({}); the flow rides near class {} at {}",
            range(&sh.caps),
            sh.kind,
            nasprobe_proto::ClassName(class),
            mbit(cap_bit)
        )
    };
    Some(Candidate {
        host: s.name.clone(),
        resource: Resource::Nic,
        device: Some(name.to_string()),
        process: None,
        thread: None,
        utilization: round2(util),
        score: util / NIC_PRACTICAL,
        wall: util >= NIC_WALL,
        lone: false,
        sentence: format!(
            "{}{what}; {link}: sending {:.1} MB/s, {} of the cap — such rules come from \
             Synology DSM's Traffic Control, QNAP's QoS or a `tc` line (`tc qdisc show dev \
             {name}`)",
            crate::vocab::shaped_nic_words(&s.name, name),
            tx / MB,
            pct(util),
        ),
    })
}

/// Memory: swapping or reclaim stalls that stall the work.
fn memory_candidate(s: &HostSeries, idx: &[usize]) -> Candidate {
    let h = &s.name;
    let swap_ps = median(&pick(&s.mem.swap_in_ps, idx)).unwrap_or(0.0)
        + median(&pick(&s.mem.swap_out_ps, idx)).unwrap_or(0.0);
    let stalls = median(&pick(&s.mem.alloc_stalls_ps, idx)).unwrap_or(0.0);
    let majflt = median(&pick(&s.mem.major_faults_ps, idx)).unwrap_or(0.0);
    let total = median(&pick(&s.mem.total_kib, idx)).unwrap_or(0.0);
    let avail = percentile(&pick(&s.mem.available_kib, idx), 0.1).unwrap_or(total);
    let used_frac = if total > 0.0 {
        (1.0 - avail / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let swapping = swap_ps >= SWAP_WALL_PAGES_PS || (stalls > 0.0 && swap_ps > 0.0);
    let storm = swap_ps >= SWAP_STORM_PAGES_PS || (stalls >= STORM_STALLS_PS && swap_ps > 0.0);
    Candidate {
        host: h.clone(),
        resource: Resource::Memory,
        device: None,
        process: None,
        thread: None,
        utilization: round2(if swapping {
            used_frac.max(0.9)
        } else {
            used_frac
        }),
        // A storm beats every other wall; light swapping ranks just above the thresholds of
        // the others, so a thread or disk clearly at its ceiling is still named first.
        score: if storm {
            MEMORY_STORM_SCORE
        } else if swapping {
            0.86 + 0.08 * (swap_ps / SWAP_STORM_PAGES_PS).min(1.0)
        } else {
            0.0
        },
        wall: swapping,
        lone: false,
        sentence: format!(
            "{h}: memory {} used ({:.0} MiB available{}), swapping {:.0} pages/s ({:.1} MB/s), {:.0} major faults/s, {:.0} allocation stalls/s",
            pct(used_frac),
            avail / 1024.0,
            if s.mem.available_estimated {
                ", estimated: kernel lacks MemAvailable"
            } else {
                ""
            },
            swap_ps,
            swap_ps * s.page_size.max(1) as f64 / MB,
            majflt,
            stalls
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Shaper;

    /// nas's eth0: a 1000 Mb/s link sending 23.8 MB/s (190 Mbit/s) for 10 points.
    fn host(shaper: Option<Shaper>, configured: bool) -> HostSeries {
        let mut s = HostSeries {
            name: "nas".into(),
            ..Default::default()
        };
        s.nics.insert(
            "eth0".into(),
            NicSeries {
                rx_bps: vec![0.2e6; 10],
                tx_bps: vec![23.8e6; 10],
                speed_bps: vec![125e6; 10],
                full_duplex: vec![true; 10],
                up: vec![true; 10],
                speed_configured: configured,
                shaper,
                ..Default::default()
            },
        );
        s
    }

    fn tbf() -> Option<Shaper> {
        Some(Shaper {
            kind: "tbf",
            caps: vec![cap(0, 200_000_000, &[])],
            default_class: None,
        })
    }

    #[test]
    fn a_tbf_cap_is_the_ceiling() {
        let idx: Vec<usize> = (0..10).collect();
        let c = nic_candidate(&host(tbf(), false), &idx, None).unwrap();
        assert!(c.wall, "{}", c.sentence);
        assert!(
            c.sentence.contains(
                "traffic control on eth0 caps egress at 200 Mbit/s (tbf); the link is 1000 Mb/s"
            ),
            "{}",
            c.sentence
        );
        assert!(c.sentence.contains("DSM"));
        // The verdict line says what the NIC is at a share of: the cap, not the link.
        let wall = super::super::decide::decide(std::slice::from_ref(&c), None);
        assert_eq!(crate::text::nic_ceiling(&wall), "its traffic-control cap");
        let mut plain = c.clone();
        plain.sentence = "nas: eth0 at 95% of its 1000 Mb/s link".into();
        let wall = super::super::decide::decide(std::slice::from_ref(&plain), None);
        assert_eq!(crate::text::nic_ceiling(&wall), "its link");
        // Unshaped, the same flow is 19% of the link: no wall.
        let c = nic_candidate(&host(None, false), &idx, None).unwrap();
        assert!(!c.wall && !c.sentence.contains("traffic control"));
        // --link-speed overrides the shaper.
        let c = nic_candidate(&host(tbf(), true), &idx, None).unwrap();
        assert!(!c.sentence.contains("traffic control"), "{}", c.sentence);
    }

    fn cap(class: u32, cap_bit_s: u64, ports: &[(u16, bool)]) -> nasprobe_proto::ShapedClass {
        nasprobe_proto::ShapedClass {
            class,
            cap_bit_s,
            ports: ports
                .iter()
                .map(|&(port, dst)| nasprobe_proto::PortMatch { port, dst })
                .collect(),
            more_ports: 0,
        }
    }

    /// 1:10 at 200 Mbit/s for destination port 7462 and source port 5201, 1:20 at 900 for
    /// destination port 445.
    fn htb() -> Shaper {
        Shaper {
            kind: "htb",
            caps: vec![
                cap(0x0001_0010, 200_000_000, &[(7462, true), (5201, false)]),
                cap(0x0001_0020, 900_000_000, &[(445, true)]),
            ],
            default_class: Some(0x0001_0020),
        }
    }

    #[test]
    fn htb_class_whose_filter_matches_the_flow_is_named() {
        let idx: Vec<usize> = (0..10).collect();
        let s = host(Some(htb()), false);
        let of = |local, remote| {
            nic_candidate(&s, &idx, Some(FlowPorts { local, remote }))
                .unwrap()
                .sentence
        };
        let c = of(40_000, 7462);
        assert!(
            c.contains(
                "traffic control on eth0 shapes egress with caps 200 Mbit/s..900 Mbit/s (htb); \
                 the flow is in class 1:10 (its filter matches destination port 7462), capped at \
                 200 Mbit/s"
            ),
            "{c}"
        );
        // A source port: the flow is sent from 5201.
        assert!(
            of(5201, 40_000).contains("class 1:10 (its filter matches source port 5201)"),
            "{}",
            of(5201, 40_000)
        );
        // The flow to 445 is in 1:20 although its rate is nearer 1:10's cap: 21% of 900 Mbit/s.
        let c = nic_candidate(
            &s,
            &idx,
            Some(FlowPorts {
                local: 40_000,
                remote: 445,
            }),
        )
        .unwrap();
        assert!(
            c.sentence
                .contains("the flow is in class 1:20 (its filter matches destination port 445)"),
            "{}",
            c.sentence
        );
        assert!(!c.wall, "{}", c.sentence);
        // 7462 as a source port is not the filter's destination port: the rate decides.
        assert!(of(7462, 40_000).contains("the flow rides near class 1:10 at 200 Mbit/s"));
    }

    #[test]
    fn htb_classes_name_the_one_the_flow_rides() {
        let idx: Vec<usize> = (0..10).collect();
        let c = nic_candidate(&host(Some(htb()), false), &idx, None).unwrap();
        assert!(c.wall, "{}", c.sentence);
        assert!(
            c.sentence.contains(
                "shapes egress with caps 200 Mbit/s..900 Mbit/s (htb); the flow rides near class 1:10 at 200 Mbit/s"
            ),
            "{}",
            c.sentence
        );
    }
}
