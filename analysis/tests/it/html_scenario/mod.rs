//! A synthetic replication between two Atom NAS boxes, the field's first case: the destination's
//! `synoreplicad` thread pins one core at ~96% while its disks idle at ~20% util and the link
//! carries ~97 MB/s of ~117; the source's `btrfs send` dies every few minutes (hours, in the
//! long run) and resumes with a new token; the destination's agent restarts once (a gap).
//!
//! Shared by `tests/html.rs` and `examples/html_demo.rs` (included with `#[path]`).

use heapless::{String as HString, Vec as HVec};
use nasprobe_analysis::{GapInfo, HostData, Instance, TimedEvent, TimedSample};
use nasprobe_proto::*;

/// 2025-11-30T00:00:00Z.
pub const T0: u64 = 1_764_460_800_000;

fn hs<const N: usize>(s: &str) -> HString<N> {
    HString::try_from(s).unwrap()
}

/// Deterministic noise in -1..1 from a host, a channel and a time step.
fn noise(host: u64, ch: u64, t: u64) -> f64 {
    let mut x = host
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(ch.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(t.wrapping_mul(0x94D0_49BB_1331_11EB));
    x ^= x >> 31;
    x = x.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^= x >> 29;
    (x % 20_001) as f64 / 10_000.0 - 1.0
}

fn hello(name: &str, instance_id: u64) -> Hello {
    let mut disks = HVec::new();
    for n in ["sda", "sdb", "sdc", "sdd", "md2"] {
        disks
            .push(DiskInfo {
                name: hs(n),
                rotational: Some(n != "md2"),
                size_sectors: 7_814_037_168,
                is_md: n == "md2",
            })
            .unwrap();
    }
    let mut members = HVec::new();
    for m in ["sda", "sdb", "sdc", "sdd"] {
        members.push(hs(m)).unwrap();
    }
    let mut md_arrays = HVec::new();
    md_arrays
        .push(MdInfo {
            name: hs("md2"),
            level: hs("raid5"),
            members,
        })
        .unwrap();
    let mut nics = HVec::new();
    for n in ["eth0", "eth1"] {
        nics.push(NicInfo {
            name: hs(n),
            mtu: 1500,
            is_bond: false,
            slaves: HVec::new(),
            speed_override_mbit: None,
            mac: hs(""),
        })
        .unwrap();
    }
    Hello {
        protocol_version: 1,
        agent_version: hs("0.1.0"),
        instance_id,
        started_ms: T0,
        now_ms: T0,
        host_name: hs(name),
        kernel_release: hs("4.4.302+"),
        arch: hs("x86_64"),
        cpu_count: 4,
        clock_ticks_per_sec: 100,
        page_size: 4096,
        boot_id: hs(""),
        interval_ms: 1000,
        oldest_seq: 1,
        newest_seq: 1,
        disks,
        md_arrays,
        nics,
        mounts: HVec::new(),
    }
}

/// What one host does during one interval.
struct Load {
    /// (process, pid, fraction of a core, core it sits on)
    threads: Vec<(&'static str, u32, f64, usize)>,
    background: f64,
    /// Per member disk: (util, MB/s read, MB/s written, await ms).
    disks: [(f64, f64, f64, f64); 4],
    /// eth0 rx, tx MB/s.
    nic: (f64, f64),
    avail_kib: u64,
    swap_pages: u32,
}

fn sample(l: &Load, step_s: u64, link_up_eth1: bool) -> Sample {
    let ticks = 100 * step_s as u32;
    let mut cpus: HVec<CpuTicks, MAX_CPUS> = HVec::new();
    for c in 0..4 {
        let mut busy = l.background;
        for th in &l.threads {
            if th.3 == c {
                busy += th.2;
            }
        }
        let b = (busy.clamp(0.0, 1.0) * ticks as f64).round() as u32;
        cpus.push(CpuTicks {
            user: b * 3 / 4,
            system: b - b * 3 / 4,
            idle: ticks - b,
            ..Default::default()
        })
        .unwrap();
    }
    let mut total = CpuTicks::default();
    for c in &cpus {
        total.user += c.user;
        total.system += c.system;
        total.idle += c.idle;
    }
    let mut top: HVec<ProcSample, MAX_TOP_PROCS> = HVec::new();
    for (p, pid, frac, _) in &l.threads {
        let t = (frac * ticks as f64).round() as u32;
        let _ = top.push(ProcSample {
            pid: *pid,
            comm: hs(p),
            state: b'R',
            threads: 3,
            utime: t,
            stime: 0,
            run_delay_us: Some(2000),
            hottest_thread: Some(ThreadSample {
                tid: pid + 1,
                comm: None,
                ticks: t,
            }),
            cmdline: None,
        });
    }
    let mut disks = HVec::new();
    let ms = 1000.0 * step_s as f64;
    let mut md_r = 0.0;
    let mut md_w = 0.0;
    for (i, (util, rd, wr, aw)) in l.disks.iter().enumerate() {
        let ios = ((rd + wr) * 1e6 * step_s as f64 / 131_072.0).max(1.0) as u32;
        md_r += rd;
        md_w += wr;
        disks
            .push(DiskSample {
                disk: i as u16,
                reads: if *rd > 0.0 { ios } else { 0 },
                sectors_read: (rd * 1e6 * step_s as f64 / 512.0) as u64,
                read_ms: if *rd > 0.0 {
                    (ios as f64 * aw) as u32
                } else {
                    0
                },
                writes: if *wr > 0.0 { ios } else { 0 },
                sectors_written: (wr * 1e6 * step_s as f64 / 512.0) as u64,
                write_ms: if *wr > 0.0 {
                    (ios as f64 * aw) as u32
                } else {
                    0
                },
                io_ms: (util * ms) as u32,
                weighted_ms: (ios as f64 * aw) as u32,
                ..Default::default()
            })
            .unwrap();
    }
    // md2: the array's own counters (io_ticks reads 0 on md).
    disks
        .push(DiskSample {
            disk: 4,
            reads: 1,
            sectors_read: (md_r * 0.75 * 1e6 * step_s as f64 / 512.0) as u64,
            writes: 1,
            sectors_written: (md_w * 0.75 * 1e6 * step_s as f64 / 512.0) as u64,
            ..Default::default()
        })
        .unwrap();
    let mut nics = HVec::new();
    nics.push(NicSample {
        nic: 0,
        flags: flags::LINK_UP | flags::FULL_DUPLEX,
        speed_mbit: 1000,
        rx_bytes: (l.nic.0 * 1e6 * step_s as f64) as u64,
        tx_bytes: (l.nic.1 * 1e6 * step_s as f64) as u64,
        rx_packets: (l.nic.0 * 1e6 * step_s as f64 / 1500.0) as u32,
        tx_packets: (l.nic.1 * 1e6 * step_s as f64 / 1500.0) as u32,
        ..Default::default()
    })
    .unwrap();
    nics.push(NicSample {
        nic: 1,
        flags: if link_up_eth1 {
            flags::LINK_UP | flags::FULL_DUPLEX
        } else {
            0
        },
        speed_mbit: if link_up_eth1 { 1000 } else { 0 },
        rx_bytes: 300 * step_s,
        tx_bytes: 120 * step_s,
        ..Default::default()
    })
    .unwrap();
    Sample {
        interval_us: (step_s * 1_000_000) as u32,
        cpu_total: total,
        cpus,
        procs_running: 2,
        procs_blocked: 0,
        forks: 1,
        context_switches: 4000,
        short_lived: 0,
        top,
        disks,
        nics,
        memory: Some(Memory {
            total_kib: 2_034_000,
            free_kib: l.avail_kib / 3,
            available_kib: l.avail_kib,
            swap_total_kib: 2 << 20,
            swap_free_kib: (2 << 20) - 180_000,
            ..Default::default()
        }),
        vm: Some(VmActivity {
            swap_in_pages: l.swap_pages * step_s as u32 / 2,
            swap_out_pages: l.swap_pages * step_s as u32 / 2,
            major_faults: l.swap_pages * step_s as u32 / 4,
            alloc_stalls: Some(0),
            direct_scanned: Some(0),
        }),
        tcp: Some(TcpActivity::default()),
        mounts: HVec::new(),
        agent: AgentSelf {
            cpu_us: 180 * step_s as u32,
            rss_kib: 1400,
            clients: 1,
        },
    }
}

fn proc_info(pid: u32, token: u64) -> ProcessInfo {
    ProcessInfo {
        pid,
        ppid: 1,
        comm: hs("btrfs"),
        cmdline: hs(&format!(
            "btrfs send -k {token} /volume1/@sharesnap/backup/GMT+00-2025.11.29"
        )),
        start_ticks: pid as u64,
    }
}

/// The pair over `seconds` at one sample per `step_s`: `btrfs send` on the source dies every
/// `death_every_s` (±jitter) and resumes `resume_s` later; the destination's agent is away for
/// the `gaps` (start, length in seconds) and the last one is an agent restart.
#[allow(clippy::too_many_lines)] // a test scenario, told start to end
pub fn pair(seconds: u64, step_s: u64, death_every_s: u64, gaps: &[(u64, u64)]) -> Vec<HostData> {
    let resume_s = (step_s * 3).max(6);
    // Deaths of btrfs send on the source.
    let mut deaths = Vec::new();
    let mut t = death_every_s;
    let mut k = 0u64;
    while t + resume_s < seconds {
        deaths.push(t);
        k += 1;
        let jitter = (noise(7, 7, k) * death_every_s as f64 * 0.15) as i64;
        t = (t as i64 + death_every_s as i64 + jitter) as u64;
    }
    let stalled = |s: u64| deaths.iter().any(|&d| s >= d && s < d + resume_s);
    let ramp = |s: u64| ((s as f64 + step_s as f64) / 20.0).min(1.0);

    let mut hosts = Vec::new();
    for (hi, name) in ["src", "dst"].into_iter().enumerate() {
        let is_dst = hi == 1;
        let mut h = HostData {
            name: name.to_string(),
            instances: vec![Instance {
                id: 1,
                hello: hello(name, 0x51_0000 + hi as u64),
                clock: None,
            }],
            ..Default::default()
        };
        let mut instance = 0usize;
        let mut seq = 1u64;
        let mut s = 0u64;
        while s < seconds {
            let end = s + step_s;
            if is_dst && let Some(&(gs, gl)) = gaps.iter().find(|g| s >= g.0 && s < g.0 + g.1) {
                if s == gs {
                    h.gaps.push(GapInfo {
                        from_ms: T0 + gs * 1000,
                        to_ms: T0 + (gs + gl) * 1000,
                        samples: Some(gl / step_s),
                        reason: if (gs, gl) == *gaps.last().unwrap() {
                            "agent restarted".into()
                        } else {
                            "collector was not connected and the agent's ring had wrapped".into()
                        },
                    });
                    seq += gl / step_s;
                    if (gs, gl) == *gaps.last().unwrap() {
                        instance = 1;
                        h.instances.push(Instance {
                            id: 2,
                            hello: hello(name, 0x52_0000),
                            clock: None,
                        });
                        h.events.push(TimedEvent::new(
                            T0 + (gs + gl) * 1000,
                            1,
                            1,
                            &Event::AgentStart(AgentStart {
                                agent_version: hs("0.1.0"),
                                instance_id: 0x52_0000,
                                interval_ms: (step_s * 1000) as u32,
                            }),
                        ));
                        seq = 2;
                    }
                }
                s = end;
                continue;
            }
            let flow = if stalled(s) {
                0.05
            } else {
                ramp(s) * (96.5 + 2.5 * noise(hi as u64, 1, s))
            };
            let active = flow > 1.0;
            let migrate = ((s / 47) % 4) as usize;
            let load = if is_dst {
                Load {
                    threads: vec![
                        (
                            "synoreplicad",
                            4242,
                            if active {
                                (0.955 + 0.03 * noise(1, 2, s)) * ramp(s).max(0.3)
                            } else {
                                0.04
                            },
                            migrate,
                        ),
                        (
                            "btrfs",
                            4300,
                            if active {
                                0.18 + 0.04 * noise(1, 3, s)
                            } else {
                                0.01
                            },
                            (migrate + 1) % 4,
                        ),
                        (
                            "synoindexd",
                            812,
                            0.04 + 0.03 * noise(1, 9, s),
                            (migrate + 2) % 4,
                        ),
                    ],
                    background: 0.03 + 0.02 * noise(1, 4, s),
                    disks: std::array::from_fn(|d| {
                        let f = flow / 96.0;
                        (
                            (0.13 + 0.03 * d as f64 + 0.03 * noise(1, 10 + d as u64, s)) * f + 0.01,
                            0.0,
                            24.0 * f,
                            5.0 + 1.5 * noise(1, 20 + d as u64, s),
                        )
                    }),
                    nic: (flow, flow * 0.012),
                    avail_kib: (610_000.0 + 40_000.0 * noise(1, 5, s / 30)) as u64,
                    swap_pages: if noise(1, 6, s) > 0.93 {
                        (40.0 + 60.0 * noise(1, 7, s).abs()) as u32
                    } else {
                        0
                    },
                }
            } else {
                Load {
                    threads: vec![
                        (
                            "btrfs",
                            1000 + deaths.iter().filter(|&&d| d <= s).count() as u32,
                            if active {
                                0.25 + 0.05 * noise(0, 2, s)
                            } else {
                                0.0
                            },
                            (migrate + 3) % 4,
                        ),
                        (
                            "synoreplicad",
                            2100,
                            if active { 0.12 } else { 0.01 },
                            migrate,
                        ),
                    ],
                    background: 0.05 + 0.03 * noise(0, 4, s),
                    disks: std::array::from_fn(|d| {
                        let f = flow / 96.0;
                        (
                            (0.14 + 0.045 * d as f64 + 0.04 * noise(0, 10 + d as u64, s)) * f
                                + 0.01,
                            32.0 * f,
                            0.0,
                            4.0 + 1.0 * noise(0, 20 + d as u64, s),
                        )
                    }),
                    nic: (flow * 0.012, flow),
                    avail_kib: (1_250_000.0 + 30_000.0 * noise(0, 5, s / 30)) as u64,
                    swap_pages: 0,
                }
            };
            let eth1_up = !(is_dst && s >= seconds * 3 / 4);
            h.samples.push(TimedSample::new(
                T0 + end * 1000,
                instance,
                seq,
                &sample(&load, step_s, eth1_up),
            ));
            seq += 1;
            s = end;
        }
        if is_dst {
            h.events.push(TimedEvent::new(
                T0 + (seconds * 3 / 4) * 1000,
                instance,
                0,
                &Event::LinkChange(LinkChange {
                    nic: hs("eth1"),
                    up: false,
                    speed_mbit: 0,
                    full_duplex: None,
                    mtu: 1500,
                }),
            ));
        } else {
            for (k, &d) in deaths.iter().enumerate() {
                let pid = 1000 + k as u32;
                let born = if k == 0 { 0 } else { deaths[k - 1] + resume_s };
                h.events.push(TimedEvent::new(
                    T0 + d * 1000,
                    0,
                    0,
                    &Event::ProcessExit(ProcessExit {
                        process: proc_info(pid, 28_399_387 + 1000 * k as u64),
                        lifetime_ms: (d - born) * 1000,
                        cpu_ticks: (d - born) * 25,
                    }),
                ));
                h.events.push(TimedEvent::new(
                    T0 + (d + resume_s) * 1000,
                    0,
                    0,
                    &Event::ProcessStart(proc_info(pid + 1, 28_399_387 + 1000 * (k as u64 + 1))),
                ));
            }
        }
        h.events.sort_by_key(|e| e.time_ms);
        hosts.push(h);
    }
    hosts
}

/// Ten minutes at 1 Hz: two deaths of `btrfs send`, a 30 s agent restart on the destination.
pub fn ten_minutes() -> Vec<HostData> {
    pair(600, 1, 200, &[(300, 30)])
}

/// Seven days at one sample a minute: `btrfs send` dies every ~90 min, two gaps on the
/// destination (an overnight one and an agent restart).
pub fn seven_days() -> Vec<HostData> {
    pair(
        7 * 86_400,
        60,
        5400,
        &[(2 * 86_400 + 3600, 5 * 3600), (5 * 86_400, 1800)],
    )
}

/// The end of `comm` (pid `pid`) at `t_ms` as the process connector reports it: exit status
/// `code` or signal `signal`, `oom` when the OOM killer chose it.
pub fn process_end(
    t_ms: u64,
    pid: u32,
    comm: &str,
    code: Option<u8>,
    signal: Option<u8>,
    oom: bool,
) -> TimedEvent {
    TimedEvent::new(
        t_ms,
        0,
        0,
        &Event::ProcessEnd(ProcessEnd {
            exit: ProcessExit {
                process: ProcessInfo {
                    pid,
                    ppid: 1,
                    comm: hs(comm),
                    cmdline: hs(&format!("{comm} --daemon")),
                    start_ticks: 0,
                },
                lifetime_ms: 2_000,
                cpu_ticks: 10,
            },
            status: ExitStatus {
                seen: ExitSeen::Kernel,
                code,
                signal,
                core_dumped: false,
                oom_killed: oom,
                before_ms: 0,
            },
        }),
    )
}

/// [`seven_days`] with a crash loop on the source: `n` exits of `rsyncd` with status 1, evenly
/// over the week, and one OOM kill of `smbd` in the middle.
pub fn seven_days_crash_loop(n: u64) -> Vec<HostData> {
    let mut hosts = seven_days();
    let src = &mut hosts[0];
    let every_ms = 7 * 86_400_000 / n;
    for k in 0..n {
        let t = T0 + 1_000 + k * every_ms;
        src.events.push(process_end(
            t,
            5_000 + k as u32,
            "rsyncd",
            Some(1),
            None,
            false,
        ));
    }
    src.events.push(process_end(
        T0 + 3 * 86_400_000 + 500,
        77,
        "smbd",
        None,
        Some(9),
        true,
    ));
    src.events.sort_by_key(|e| e.time_ms);
    hosts
}
