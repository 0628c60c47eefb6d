//! Realistic records: a NAS's `Hello`, samples and each kind of event.

use nasprobe_proto::*;

pub(crate) fn s<const N: usize>(x: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in x.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

/// A `Hello` of a 4-core NAS with 8 disks (one md array) and 4 NICs.
pub fn nas_hello(instance_id: u64, started_ms: u64, interval_ms: u32) -> Hello {
    let mut disks = heapless::Vec::new();
    for d in [
        "sda", "sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh", "md0",
    ] {
        disks
            .push(DiskInfo {
                name: s(d),
                rotational: Some(d != "md0"),
                size_sectors: 7_814_037_168,
                is_md: d == "md0",
            })
            .ok();
    }
    let mut nics = heapless::Vec::new();
    for n in ["eth0", "eth1", "eth2", "eth3"] {
        nics.push(NicInfo {
            name: s(n),
            mtu: 1500,
            is_bond: false,
            slaves: heapless::Vec::new(),
            speed_override_mbit: None,
            mac: s("00:11:32:aa:bb:cc"),
        })
        .ok();
    }
    Hello {
        protocol_version: PROTOCOL_VERSION,
        agent_version: s("0.1.0"),
        instance_id,
        started_ms,
        now_ms: started_ms,
        host_name: s("fakenas"),
        kernel_release: s("4.4.302+"),
        arch: s("x86_64"),
        cpu_count: 4,
        clock_ticks_per_sec: 100,
        page_size: 4096,
        boot_id: s("8b0c5d9e-1111-2222-3333-444455556666"),
        interval_ms,
        oldest_seq: 0,
        newest_seq: 0,
        disks,
        md_arrays: heapless::Vec::new(),
        nics,
        mounts: heapless::Vec::new(),
    }
}

/// A busy sample of that NAS: 4 cores, 8 active disks, 4 NICs, 8 top processes.
pub fn nas_sample(i: u64) -> Sample {
    let j = (i % 17) as u32;
    let cpu = |k: u32| CpuTicks {
        flags: 0,
        user: 20 + k + j,
        nice: 0,
        system: 10 + j,
        idle: 60 - k,
        iowait: 3,
        irq: 0,
        softirq: 2,
        steal: 0,
    };
    let mut cpus = heapless::Vec::new();
    for k in 0..4 {
        cpus.push(cpu(k * 5)).ok();
    }
    let mut top = heapless::Vec::new();
    for (k, name) in [
        "synoreplicad",
        "btrfs",
        "smbd",
        "kworker/u8:2",
        "md0_raid5",
        "nginx",
        "postgres",
        "synoindexd",
    ]
    .iter()
    .enumerate()
    {
        let k = k as u32;
        top.push(ProcSample {
            pid: 1200 + k * 37,
            comm: s(name),
            state: b'R',
            threads: 1 + k as u16,
            utime: 90 / (k + 1) + j,
            stime: 5,
            run_delay_us: Some(1500 + k),
            hottest_thread: (k < 3).then(|| ThreadSample {
                tid: 1300 + k,
                comm: None,
                ticks: 80 / (k + 1),
            }),
            cmdline: None,
        })
        .ok();
    }
    let mut disks = heapless::Vec::new();
    for d in 0..8u16 {
        disks
            .push(DiskSample {
                disk: d,
                flags: 0,
                reads: 40 + j,
                reads_merged: 3,
                sectors_read: 20_000 + u64::from(j) * 64,
                read_ms: 90,
                writes: 60 + j,
                writes_merged: 10,
                sectors_written: 30_000,
                write_ms: 150,
                in_flight: 1,
                io_ms: 210 + j,
                weighted_ms: 250,
            })
            .ok();
    }
    let mut nics = heapless::Vec::new();
    for n in 0..4u16 {
        nics.push(NicSample {
            nic: n,
            flags: flags::LINK_UP | flags::FULL_DUPLEX,
            speed_mbit: 1000,
            rx_bytes: if n == 0 {
                98_000_000 + u64::from(j) * 1000
            } else {
                1200
            },
            tx_bytes: if n == 0 { 1_500_000 } else { 800 },
            rx_packets: if n == 0 { 65_000 } else { 10 },
            tx_packets: if n == 0 { 20_000 } else { 8 },
            rx_errors: 0,
            tx_errors: 0,
            rx_dropped: 0,
            tx_dropped: 0,
        })
        .ok();
    }
    Sample {
        interval_us: 1_000_000 + j,
        cpu_total: cpu(7),
        cpus,
        procs_running: 3,
        procs_blocked: 1,
        forks: 2,
        context_switches: 12_000 + u64::from(j),
        short_lived: 0,
        top,
        disks,
        nics,
        memory: Some(Memory {
            total_kib: 2_034_000,
            free_kib: 80_000,
            available_kib: 900_000,
            available_estimated: false,
            buffers_kib: 10_000,
            cached_kib: 700_000,
            dirty_kib: 30_000,
            writeback_kib: 0,
            swap_total_kib: 2_000_000,
            swap_free_kib: 1_900_000,
        }),
        vm: Some(VmActivity {
            swap_in_pages: 0,
            swap_out_pages: 0,
            major_faults: 1,
            alloc_stalls: Some(0),
            direct_scanned: Some(0),
        }),
        tcp: Some(TcpActivity::default()),
        mounts: heapless::Vec::new(),
        agent: AgentSelf {
            cpu_us: 250,
            rss_kib: 1400,
            clients: 1,
        },
    }
}

/// A process-exit event.
pub fn exit_event(pid: u32) -> Event {
    Event::ProcessExit(ProcessExit {
        process: ProcessInfo {
            pid,
            ppid: 1,
            comm: s("btrfs"),
            cmdline: s("btrfs send -p /vol/snap1 /vol/snap2"),
            start_ticks: 123_456,
        },
        lifetime_ms: 3_600_000,
        cpu_ticks: 98_765,
    })
}
/// A killed rsync as the process connector reports it.
pub fn process_end_event(pid: u32) -> Event {
    let Event::ProcessExit(exit) = exit_event(pid) else {
        unreachable!("exit_event makes a ProcessExit")
    };
    Event::ProcessEnd(ProcessEnd {
        exit,
        status: ExitStatus {
            seen: ExitSeen::Kernel,
            code: None,
            signal: Some(9),
            core_dumped: false,
            oom_killed: true,
            before_ms: 420,
        },
    })
}

/// An OOM-kill line of the kernel log.
pub fn kernel_message_event(pid: u32) -> Event {
    Event::KernelMessage(KernelMessage {
        level: 3,
        pid: Some(pid),
        nic: None,
        text: s("Out of memory: Killed process 4242 (rsync) total-vm:1048576kB"),
        suppressed: 5,
    })
}

/// One rsync with one busy IPv4 connection (tcp_info of a 5.x kernel).
pub fn connections_event(pid: u32) -> Event {
    let addr = |a: [u8; 4], port| SockAddr {
        addr: heapless::Vec::from_slice(&a).unwrap(),
        port,
    };
    let conn = TcpConn {
        local: addr([192, 168, 1, 10], 873),
        remote: addr([192, 168, 1, 20], 51234),
        state: 1,
        send_queue: 262_144,
        recv_queue: 0,
        info: Some(TcpConnInfo {
            probes: 0,
            backoff: 0,
            rto_us: 204_000,
            rtt_us: 1_250,
            snd_cwnd: 310,
            total_retrans: 17,
            last_data_sent_ms: 0,
            last_data_recv_ms: 40,
            bytes_acked: Some(81_000_000_000),
            bytes_received: Some(1_200_000),
            delivery_rate: Some(117_000_000),
            busy_time_us: Some(700_000_000),
            rwnd_limited_us: Some(1_000_000),
            sndbuf_limited_us: Some(30_000_000),
        }),
        retransmits: 0,
    };
    let mut procs = heapless::Vec::new();
    procs
        .push(ProcConnections {
            pid,
            comm: s("rsync"),
            conns: heapless::Vec::from_slice(&[conn]).unwrap(),
            more: 2,
        })
        .unwrap();
    Event::Connections(Connections { procs })
}

/// A `cp` reading a film from a share and writing it to another.
pub fn open_files_event(pid: u32) -> Event {
    let file = |fd, path: &str, pos, size, mode| OpenFile {
        fd,
        path: s(path),
        pos,
        size,
        mode,
    };
    let files = heapless::Vec::from_slice(&[
        file(
            3,
            "/volume1/video/a.mkv",
            2_000_000_000,
            5_000_000_000,
            FileMode::Read,
        ),
        file(
            4,
            "/volume2/backup/a.mkv",
            2_000_000_000,
            2_000_000_000,
            FileMode::Write,
        ),
    ])
    .unwrap();
    let mut procs = heapless::Vec::new();
    procs
        .push(ProcFiles {
            pid,
            comm: s("cp"),
            files,
            more: 0,
        })
        .unwrap();
    Event::OpenFiles(OpenFiles { procs })
}

pub(crate) fn info(c: &mut TcpConn) -> &mut TcpConnInfo {
    c.info.as_mut().expect("connections_event has tcp_info")
}
