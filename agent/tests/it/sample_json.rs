//! Snapshot of `nasprobe-agent sample --json` and of the human output for one fixed sample:
//! the JSON is a contract for scripts on the NAS (field names, nulls, escaping, device indices
//! resolved to names), the human figures come from `nasprobe-formulas` (disk util capped at 1,
//! unknown duplex judged full).

use heapless::{String, Vec};
use nasprobe_agent::sample_cmd::{human, json_event, json_sample};
use nasprobe_proto::*;

fn s<const N: usize>(v: &str) -> String<N> {
    String::try_from(v).unwrap()
}

fn hello() -> Hello {
    let mut h = Hello {
        host_name: s("nas\"1"),
        kernel_release: s("3.10.39"),
        arch: s("armv7l"),
        cpu_count: 1,
        interval_ms: 1000,
        ..Hello::default()
    };
    h.disks
        .push(DiskInfo {
            name: s("sda"),
            rotational: Some(true),
            size_sectors: 1 << 30,
            is_md: false,
        })
        .unwrap();
    h.nics
        .push(NicInfo {
            name: s("egiga0"),
            mtu: 1500,
            is_bond: false,
            slaves: Vec::new(),
            speed_override_mbit: None,
            mac: s(""),
        })
        .unwrap();
    h.mounts.push(s("/mnt/HD/HD_a2")).unwrap();
    h
}

fn sample() -> Sample {
    let cpu = CpuTicks {
        user: 40,
        system: 30,
        idle: 20,
        iowait: 10,
        ..Default::default()
    };
    let mut smp = Sample {
        interval_us: 500_000,
        cpu_total: cpu,
        procs_running: 2,
        procs_blocked: 1,
        forks: 3,
        context_switches: 900,
        short_lived: 1,
        memory: Some(Memory {
            total_kib: 255_000,
            free_kib: 10_000,
            available_kib: 100_000,
            available_estimated: true,
            ..Default::default()
        }),
        vm: Some(VmActivity {
            swap_in_pages: 1,
            alloc_stalls: None,
            ..Default::default()
        }),
        tcp: Some(TcpActivity {
            retrans_segs: 5,
            timeouts: Some(1),
            ..Default::default()
        }),
        agent: AgentSelf {
            cpu_us: 1200,
            rss_kib: 900,
            clients: 1,
        },
        ..Sample::default()
    };
    smp.cpus.push(cpu).unwrap();
    smp.top
        .push(ProcSample {
            pid: 812,
            comm: s("rsync"),
            state: b'R',
            threads: 3,
            utime: 30,
            stime: 10,
            run_delay_us: Some(2500),
            hottest_thread: Some(ThreadSample {
                tid: 813,
                comm: None,
                ticks: 35,
            }),
            cmdline: Some(s("rsync -a \"/a b\" /c")),
        })
        .unwrap();
    smp.disks
        .push(DiskSample {
            disk: 0,
            reads: 10,
            sectors_read: 4096,
            read_ms: 40,
            writes: 10,
            sectors_written: 2048,
            write_ms: 60,
            in_flight: 2,
            // More busy time than the interval: util is capped at 100 %.
            io_ms: 510,
            weighted_ms: 750,
            ..Default::default()
        })
        .unwrap();
    smp.nics
        .push(NicSample {
            nic: 0,
            flags: flags::LINK_UP | flags::DUPLEX_UNKNOWN,
            speed_mbit: 100,
            rx_bytes: 5_000_000,
            tx_bytes: 1_000_000,
            rx_packets: 3500,
            tx_packets: 1200,
            ..Default::default()
        })
        .unwrap();
    smp.mounts
        .push(MountSample {
            mount: 0,
            used_bytes: 3 << 30,
            free_bytes: 1 << 30,
        })
        .unwrap();
    smp
}

#[test]
fn sample_json_snapshot() {
    let mut o = std::string::String::new();
    json_sample(&mut o, &hello(), &sample());
    let want = concat!(
        r#"{"host":"nas\"1","interval_us":500000,"#,
        r#""cpu_total":{"reset":false,"user":40,"nice":0,"system":30,"idle":20,"iowait":10,"irq":0,"softirq":0,"steal":0},"#,
        r#""cpus":[{"reset":false,"user":40,"nice":0,"system":30,"idle":20,"iowait":10,"irq":0,"softirq":0,"steal":0}],"#,
        r#""procs_running":2,"procs_blocked":1,"forks":3,"context_switches":900,"short_lived":1,"#,
        r#""top":[{"pid":812,"comm":"rsync","state":"R","threads":3,"utime":30,"stime":10,"run_delay_us":2500,"#,
        r#""hottest_thread":{"tid":813,"ticks":35,"comm":"rsync"},"cmdline":"rsync -a \"/a b\" /c"}],"#,
        r#""disks":[{"name":"sda","index":0,"reset":false,"reads":10,"reads_merged":0,"sectors_read":4096,"#,
        r#""read_ms":40,"writes":10,"writes_merged":0,"sectors_written":2048,"write_ms":60,"in_flight":2,"#,
        r#""io_ms":510,"weighted_ms":750}],"#,
        r#""nics":[{"name":"egiga0","index":0,"reset":false,"up":true,"full_duplex":false,"speed_mbit":100,"#,
        r#""rx_bytes":5000000,"tx_bytes":1000000,"rx_packets":3500,"tx_packets":1200,"rx_errors":0,"#,
        r#""tx_errors":0,"rx_dropped":0,"tx_dropped":0}],"#,
        r#""memory":{"total_kib":255000,"free_kib":10000,"available_kib":100000,"available_estimated":true,"#,
        r#""buffers_kib":0,"cached_kib":0,"dirty_kib":0,"writeback_kib":0,"swap_total_kib":0,"swap_free_kib":0},"#,
        r#""vm":{"swap_in_pages":1,"swap_out_pages":0,"major_faults":0,"alloc_stalls":null,"direct_scanned":null},"#,
        r#""tcp":{"retrans_segs":5,"out_rsts":0,"in_errs":0,"estab_resets":0,"attempt_fails":0,"timeouts":1,"#,
        r#""keepalive_aborts":null,"timeout_aborts":null,"listen_drops":null},"#,
        r#""mounts":[{"path":"/mnt/HD/HD_a2","used_bytes":3221225472,"free_bytes":1073741824}],"#,
        r#""agent":{"cpu_us":1200,"rss_kib":900}}"#,
        "\n"
    );
    assert_eq!(o, want);
    let v: serde_json::Value = serde_json::from_str(&o).expect("valid JSON");
    assert_eq!(v["top"][0]["cmdline"], "rsync -a \"/a b\" /c");
}

#[test]
fn event_json_snapshot() {
    let p = ProcessInfo {
        pid: 7,
        ppid: 1,
        comm: s("smbd"),
        cmdline: s("smbd\n-D"),
        start_ticks: 99,
    };
    let events = [
        Event::ProcessStart(p.clone()),
        Event::ProcessExit(ProcessExit {
            process: p,
            lifetime_ms: 5000,
            cpu_ticks: 12,
        }),
        Event::LinkChange(LinkChange {
            nic: s("eth0"),
            up: false,
            speed_mbit: 0,
            full_duplex: None,
            mtu: 1500,
        }),
        Event::DeviceAdded(DeviceAdded::Disk(s("sdc"))),
    ];
    let mut o = std::string::String::new();
    for e in &events {
        json_event(&mut o, e);
    }
    let proc_json = r#"{"pid":7,"ppid":1,"comm":"smbd","cmdline":"smbd\u000a-D","start_ticks":99}"#;
    let want = format!(
        "{{\"event\":\"process_start\",\"process\":{proc_json}}}\n\
         {{\"event\":\"process_exit\",\"lifetime_ms\":5000,\"cpu_ticks\":12,\"process\":{proc_json}}}\n\
         {{\"event\":\"link_change\",\"nic\":\"eth0\",\"up\":false,\"speed_mbit\":0,\"mtu\":1500,\"full_duplex\":null}}\n\
         {{\"event\":\"device_added\",\"kind\":\"disk\",\"name\":\"sdc\"}}\n"
    );
    assert_eq!(o, want);
}

#[test]
fn human_figures_follow_the_shared_rules() {
    let mut o = std::string::String::new();
    human(&mut o, &hello(), &sample());
    // 510 ms busy in a 500 ms interval: capped at 100 %, not 102 %.
    assert!(
        o.contains("disk sda      util 100.0%  read    4.19 MB/s  write    2.10 MB/s  await   5.00 ms  queue 1.50  in flight 2"),
        "{o}"
    );
    // Unknown duplex judged full: max(10, 2) MB/s of 12.5 MB/s = 80 %, not (10 + 2) / 12.5.
    assert!(
        o.contains("nic  egiga0   rx   10.00 MB/s  tx    2.00 MB/s  errs 0/0 drops 0/0  100 Mbit/s duplex unknown, judged full (80.0% of link)"),
        "{o}"
    );
    assert!(o.contains("cores  cpu0  70%"), "{o}");
    // rsync: 40 ticks in 0.5 s at 100 Hz = 80 % of a core; its thread 35 ticks = 70 %.
    assert!(
        o.contains("     812 rsync           R    3   80.0   20.0       2.5  813 rsync 70.0%"),
        "{o}"
    );
}
