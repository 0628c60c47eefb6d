//! Golden byte vectors: the exact frame of every message type, and its round trip.
//! A changed vector is a changed wire format: bump PROTOCOL_VERSION or add, never edit.

use heapless::{String, Vec};
use nasprobe_proto::frame::{MAX_FRAME_LEN, decode_frame, encode_frame, frame_needs};
use nasprobe_proto::*;

fn s<const N: usize>(v: &str) -> String<N> {
    String::try_from(v).unwrap()
}

#[test]
fn frame_needs_names_the_records_old_collectors_cannot_decode() {
    let frame = |body| {
        let mut buf = [0u8; 256];
        let n = encode_frame(
            &Message::Record(Record {
                seq: 300,
                time_ms: 1_764_460_800_000,
                body,
            }),
            &mut buf,
        )
        .unwrap();
        buf[..n].to_vec()
    };
    let shaping = frame(RecordBody::Event(Event::Shaping(
        Shaping { nics: Vec::new() }.into(),
    )));
    assert_eq!(frame_needs(&shaping), accepts::SHAPING);
    let exit_watch = frame(RecordBody::Event(Event::ExitWatch(ExitWatch {
        source: ExitSeen::Kernel,
        dropped: 0,
    })));
    assert_eq!(frame_needs(&exit_watch), 0);
    assert_eq!(frame_needs(&[]), 0);
    assert_eq!(frame_needs(&shaping[..6]), 0);
}

#[test]
fn resume_with_is_taken_by_agents_that_say_so() {
    assert!(takes_resume_with("0.1.0+resume-with"));
    assert!(takes_resume_with("0.3.1+git.resume-with.x"));
    assert!(!takes_resume_with("0.1.0"));
    assert!(!takes_resume_with("0.1.0+resume-without"));
    assert!(!takes_resume_with("resume-with"));
}

fn test_one(msg: Message, expected: &[u8]) {
    let mut buf = [0u8; 4096];
    let n = encode_frame(&msg, &mut buf).unwrap();
    if std::env::var_os("NASPROBE_PRINT_GOLDEN").is_some() {
        println!("{:?}", &buf[..n]);
    }
    assert_eq!(&buf[..n], expected, "encoding of {msg:?}");
    let (back, used) = decode_frame(expected, MAX_FRAME_LEN).unwrap().unwrap();
    assert_eq!(used, expected.len());
    assert_eq!(back, msg);
}

pub fn sample_hello() -> Hello {
    let mut disks = Vec::new();
    disks
        .push(DiskInfo {
            name: s("sda"),
            rotational: Some(true),
            size_sectors: 7814037168,
            is_md: false,
        })
        .unwrap();
    disks
        .push(DiskInfo {
            name: s("md0"),
            rotational: None,
            size_sectors: 4096,
            is_md: true,
        })
        .unwrap();
    let mut members = Vec::new();
    members.push(s("sda")).unwrap();
    let mut md_arrays = Vec::new();
    md_arrays
        .push(MdInfo {
            name: s("md0"),
            level: s("raid1"),
            members,
        })
        .unwrap();
    let mut nics = Vec::new();
    nics.push(NicInfo {
        name: s("egiga0"),
        mtu: 1500,
        is_bond: false,
        slaves: Vec::new(),
        speed_override_mbit: None,
        mac: s("00:90:a9:01:02:03"),
    })
    .unwrap();
    let mut mounts = Vec::new();
    mounts.push(s("/mnt/HD/HD_a2")).unwrap();
    Hello {
        protocol_version: 2,
        agent_version: s("0.1.0"),
        instance_id: 0x0102030405060708,
        started_ms: 1_700_000_000_000,
        now_ms: 1_700_000_001_000,
        host_name: s("nas"),
        kernel_release: s("3.10.39"),
        arch: s("armv7l"),
        cpu_count: 2,
        clock_ticks_per_sec: 100,
        page_size: 4096,
        boot_id: s(""),
        interval_ms: 1000,
        oldest_seq: 1,
        newest_seq: 2,
        disks,
        md_arrays,
        nics,
        mounts,
    }
}

pub fn sample_sample() -> Sample {
    let core = CpuTicks {
        flags: 0,
        user: 60,
        nice: 0,
        system: 30,
        idle: 5,
        iowait: 1,
        irq: 0,
        softirq: 4,
        steal: 0,
    };
    let mut cpus = Vec::new();
    cpus.push(core).unwrap();
    cpus.push(CpuTicks {
        idle: 100,
        ..Default::default()
    })
    .unwrap();
    let mut top = Vec::new();
    top.push(ProcSample {
        pid: 4242,
        comm: s("sshd"),
        state: b'R',
        threads: 1,
        utime: 70,
        stime: 27,
        run_delay_us: Some(1500),
        hottest_thread: Some(ThreadSample {
            tid: 4242,
            comm: None,
            ticks: 97,
        }),
        cmdline: Some(s("sshd: root@notty")),
    })
    .unwrap();
    let mut disks = Vec::new();
    disks
        .push(DiskSample {
            disk: 0,
            flags: 0,
            writes: 95,
            sectors_written: 21510,
            write_ms: 430,
            io_ms: 119,
            weighted_ms: 450,
            ..Default::default()
        })
        .unwrap();
    let mut nics = Vec::new();
    nics.push(NicSample {
        nic: 0,
        flags: flags::LINK_UP | flags::FULL_DUPLEX,
        speed_mbit: 1000,
        rx_bytes: 25_000_000,
        tx_bytes: 400_000,
        rx_packets: 17000,
        tx_packets: 6000,
        ..Default::default()
    })
    .unwrap();
    let mut mounts = Vec::new();
    mounts
        .push(MountSample {
            mount: 0,
            used_bytes: 1 << 40,
            free_bytes: 1 << 41,
        })
        .unwrap();
    Sample {
        interval_us: 1_000_250,
        cpu_total: core,
        cpus,
        procs_running: 2,
        procs_blocked: 0,
        forks: 3,
        context_switches: 2500,
        short_lived: 1,
        top,
        disks,
        nics,
        memory: Some(Memory {
            total_kib: 1_000_000,
            free_kib: 50_000,
            available_kib: 600_000,
            available_estimated: true,
            buffers_kib: 1000,
            cached_kib: 500_000,
            dirty_kib: 12,
            writeback_kib: 0,
            swap_total_kib: 500_000,
            swap_free_kib: 500_000,
        }),
        vm: Some(VmActivity {
            swap_in_pages: 0,
            swap_out_pages: 0,
            major_faults: 2,
            alloc_stalls: None,
            direct_scanned: Some(0),
        }),
        tcp: Some(TcpActivity {
            retrans_segs: 3,
            timeouts: Some(1),
            ..Default::default()
        }),
        mounts,
        agent: AgentSelf {
            cpu_us: 180,
            rss_kib: 1100,
            clients: 1,
        },
    }
}

fn process() -> ProcessInfo {
    ProcessInfo {
        pid: 31337,
        ppid: 1,
        comm: s("btrfs"),
        cmdline: s("btrfs send -k 28399387"),
        start_ticks: 123456,
    }
}

#[test]
fn challenge() {
    test_one(
        Message::Challenge(Challenge {
            agent_nonce: [7; 32],
        }),
        &[
            34, 0, 0, 0, 2, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
            7, 7, 7, 7, 7, 7, 7, 7, 7,
        ],
    );
}

#[test]
fn auth() {
    let mut expected = vec![66, 0, 0, 0, 2, 1];
    expected.extend([1u8; 32]);
    expected.extend([2u8; 32]);
    test_one(
        Message::Auth(Auth {
            client_nonce: [1; 32],
            mac: [2; 32],
        }),
        &expected,
    );
}

#[test]
fn auth_ok() {
    let mut expected = vec![34, 0, 0, 0, 2, 2];
    expected.extend([9u8; 32]);
    test_one(Message::AuthOk(AuthOk { mac: [9; 32] }), &expected);
}

#[test]
fn hello() {
    test_one(Message::Hello(sample_hello()), &GOLDEN_HELLO);
}

#[test]
fn resume() {
    test_one(
        Message::Resume(Resume {
            instance_id: 5,
            after_seq: 300,
        }),
        &[5, 0, 0, 0, 2, 4, 5, 172, 2],
    );
}

#[test]
fn gone() {
    test_one(
        Message::Gone(Gone {
            instance_id: 5,
            from_seq: 1,
            to_seq: 128,
        }),
        &[6, 0, 0, 0, 2, 5, 5, 1, 128, 1],
    );
}

#[test]
fn record_sample() {
    test_one(
        Message::Record(Record {
            seq: 7,
            time_ms: 1_700_000_002_000,
            body: RecordBody::Sample(sample_sample()),
        }),
        &GOLDEN_SAMPLE,
    );
}

#[test]
fn record_events() {
    let events = [
        (Event::ProcessStart(process()), &GOLDEN_EV_START[..]),
        (
            Event::ProcessExit(ProcessExit {
                process: process(),
                lifetime_ms: 4_800_000,
                cpu_ticks: 90_000,
            }),
            &GOLDEN_EV_EXIT[..],
        ),
        (
            Event::LinkChange(LinkChange {
                nic: s("eth0"),
                up: true,
                speed_mbit: 100,
                full_duplex: Some(true),
                mtu: 1500,
            }),
            &GOLDEN_EV_LINK[..],
        ),
        (
            Event::AgentStart(AgentStart {
                agent_version: s("0.1.0"),
                instance_id: 9,
                interval_ms: 1000,
            }),
            &GOLDEN_EV_AGENT[..],
        ),
        (
            Event::DeviceAdded(DeviceAdded::Disk(s("sdc"))),
            &GOLDEN_EV_DEV[..],
        ),
    ];
    for (ev, golden) in events {
        test_one(event_record(ev), golden);
    }
}

/// An event as the record every event golden vector wraps it in.
fn event_record(ev: Event) -> Message {
    Message::Record(Record {
        seq: 8,
        time_ms: 1000,
        body: RecordBody::Event(ev),
    })
}

fn connections() -> Connections {
    let mut conns = Vec::new();
    conns
        .push(TcpConn {
            local: SockAddr {
                addr: Vec::from_slice(&[10, 0, 0, 1]).unwrap(),
                port: 873,
            },
            remote: SockAddr {
                addr: Vec::from_slice(&[10, 0, 0, 2]).unwrap(),
                port: 40000,
            },
            state: 1,
            send_queue: 0,
            recv_queue: 70000,
            info: Some(TcpConnInfo {
                probes: 0,
                backoff: 2,
                rto_us: 1_600_000,
                rtt_us: 180_000,
                snd_cwnd: 10,
                total_retrans: 7,
                last_data_sent_ms: 40_000,
                last_data_recv_ms: 12,
                bytes_acked: Some(1),
                bytes_received: Some(100_000),
                delivery_rate: None,
                busy_time_us: None,
                rwnd_limited_us: Some(5_000_000),
                sndbuf_limited_us: Some(0),
            }),
            retransmits: 3,
        })
        .unwrap();
    let mut procs = Vec::new();
    procs
        .push(ProcConnections {
            pid: 31337,
            comm: s("rsync"),
            conns,
            more: 1,
        })
        .unwrap();
    Connections { procs }
}

#[test]
fn record_exit_status_events() {
    let exit = ProcessExit {
        process: process(),
        lifetime_ms: 4_800_000,
        cpu_ticks: 90_000,
    };
    let events = [
        (
            Event::ProcessEnd(ProcessEnd {
                exit: exit.clone(),
                status: ExitStatus {
                    seen: ExitSeen::Kernel,
                    code: None,
                    signal: Some(9),
                    core_dumped: false,
                    oom_killed: true,
                    before_ms: 250,
                },
            }),
            &GOLDEN_EV_END_KILLED[..],
        ),
        (
            Event::ProcessEnd(ProcessEnd {
                exit: exit.clone(),
                status: ExitStatus {
                    seen: ExitSeen::Scan,
                    code: None,
                    signal: None,
                    core_dumped: false,
                    oom_killed: false,
                    before_ms: 0,
                },
            }),
            &GOLDEN_EV_END_SCAN[..],
        ),
        (
            Event::ExitWatch(ExitWatch {
                source: ExitSeen::Kernel,
                dropped: 300,
            }),
            &GOLDEN_EV_WATCH[..],
        ),
        (
            Event::KernelMessage(KernelMessage {
                level: 3,
                pid: Some(21859),
                nic: None,
                text: s("Killed process 21859 (rsync)"),
                suppressed: 2,
            }),
            &GOLDEN_EV_KMSG[..],
        ),
        (Event::Connections(connections()), &GOLDEN_EV_CONNS[..]),
    ];
    for (ev, golden) in events {
        let (x, st) = ev.as_exit().map_or((None, None), |(x, s)| (Some(x), s));
        if let Event::ProcessEnd(e) = &ev {
            assert_eq!((x, st), (Some(&exit), Some(&e.status)));
        }
        test_one(event_record(ev), golden);
    }
}

#[test]
fn keep_alive() {
    test_one(
        Message::KeepAlive(KeepAlive { time_ms: 1000 }),
        &[4, 0, 0, 0, 2, 7, 232, 7],
    );
}

#[test]
fn refused() {
    test_one(
        Message::Refused(Refused {
            reason: s("bad token"),
        }),
        &[
            12, 0, 0, 0, 2, 8, 9, b'b', b'a', b'd', b' ', b't', b'o', b'k', b'e', b'n',
        ],
    );
}

#[test]
fn test_request_disk() {
    test_one(
        Message::TestRequest(TestRequest::Disk(DiskTest {
            path: s("/v1"),
            bytes: 1 << 20,
            allow_tmpfs: false,
        })),
        &[11, 0, 0, 0, 2, 9, 0, 3, b'/', b'v', b'1', 128, 128, 64, 0],
    );
}

#[test]
fn test_result_disk_and_failed() {
    test_one(
        Message::TestResult(TestResult::Disk(DiskResult {
            device: s("sda"),
            fs_type: s("ext4"),
            block_bytes: 1 << 20,
            bytes: 1000,
            write_us: 2,
            read_bytes: 1000,
            read_us: 1,
            cache_dropped: true,
            big_block_bytes: 0,
            big_write_us: 0,
            started_ms: 5,
            ended_ms: 6,
        })),
        &[
            26, 0, 0, 0, 2, 10, 0, 3, b's', b'd', b'a', 4, b'e', b'x', b't', b'4', 128, 128, 64,
            232, 7, 2, 232, 7, 1, 1, 0, 0, 5, 6,
        ],
    );
    test_one(
        Message::TestResult(TestResult::Failed(s("full"))),
        &[8, 0, 0, 0, 2, 10, 1, 4, b'f', b'u', b'l', b'l'],
    );
}

const GOLDEN_HELLO: [u8; 145] = [
    141, 0, 0, 0, 2, 3, 2, 5, 48, 46, 49, 46, 48, 136, 142, 152, 168, 192, 224, 128, 129, 1, 128,
    208, 149, 255, 188, 49, 232, 215, 149, 255, 188, 49, 3, 110, 97, 115, 7, 51, 46, 49, 48, 46,
    51, 57, 6, 97, 114, 109, 118, 55, 108, 2, 100, 128, 32, 0, 232, 7, 1, 2, 2, 3, 115, 100, 97, 1,
    1, 176, 253, 130, 142, 29, 0, 3, 109, 100, 48, 0, 128, 32, 1, 1, 3, 109, 100, 48, 5, 114, 97,
    105, 100, 49, 1, 3, 115, 100, 97, 1, 6, 101, 103, 105, 103, 97, 48, 220, 11, 0, 0, 0, 17, 48,
    48, 58, 57, 48, 58, 97, 57, 58, 48, 49, 58, 48, 50, 58, 48, 51, 1, 13, 47, 109, 110, 116, 47,
    72, 68, 47, 72, 68, 95, 97, 50,
];
const GOLDEN_SAMPLE: [u8; 189] = [
    185, 0, 0, 0, 2, 6, 7, 208, 223, 149, 255, 188, 49, 0, 186, 134, 61, 0, 60, 0, 30, 5, 1, 0, 4,
    0, 2, 0, 60, 0, 30, 5, 1, 0, 4, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 2, 0, 3, 196, 19, 1, 1, 146,
    33, 4, 115, 115, 104, 100, 82, 1, 70, 27, 1, 220, 11, 1, 146, 33, 0, 97, 1, 16, 115, 115, 104,
    100, 58, 32, 114, 111, 111, 116, 64, 110, 111, 116, 116, 121, 1, 0, 0, 0, 0, 0, 0, 95, 0, 134,
    168, 1, 174, 3, 0, 119, 194, 3, 1, 0, 6, 232, 7, 192, 240, 245, 11, 128, 181, 24, 232, 132, 1,
    240, 46, 0, 0, 0, 0, 1, 192, 132, 61, 208, 134, 3, 192, 207, 36, 1, 232, 7, 160, 194, 30, 12,
    0, 160, 194, 30, 160, 194, 30, 1, 0, 0, 2, 0, 1, 0, 1, 3, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 128,
    128, 128, 128, 128, 32, 128, 128, 128, 128, 128, 64, 180, 1, 204, 8, 1,
];
const GOLDEN_EV_START: [u8; 47] = [
    43, 0, 0, 0, 2, 6, 8, 232, 7, 1, 0, 233, 244, 1, 1, 5, 98, 116, 114, 102, 115, 22, 98, 116,
    114, 102, 115, 32, 115, 101, 110, 100, 32, 45, 107, 32, 50, 56, 51, 57, 57, 51, 56, 55, 192,
    196, 7,
];
const GOLDEN_EV_EXIT: [u8; 54] = [
    50, 0, 0, 0, 2, 6, 8, 232, 7, 1, 1, 233, 244, 1, 1, 5, 98, 116, 114, 102, 115, 22, 98, 116,
    114, 102, 115, 32, 115, 101, 110, 100, 32, 45, 107, 32, 50, 56, 51, 57, 57, 51, 56, 55, 192,
    196, 7, 128, 252, 164, 2, 144, 191, 5,
];
const GOLDEN_EV_END_KILLED: [u8; 62] = [
    58, 0, 0, 0, 2, 6, 8, 232, 7, 1, 5, 233, 244, 1, 1, 5, 98, 116, 114, 102, 115, 22, 98, 116,
    114, 102, 115, 32, 115, 101, 110, 100, 32, 45, 107, 32, 50, 56, 51, 57, 57, 51, 56, 55, 192,
    196, 7, 128, 252, 164, 2, 144, 191, 5, 0, 0, 1, 9, 0, 1, 250, 1,
];
const GOLDEN_EV_END_SCAN: [u8; 60] = [
    56, 0, 0, 0, 2, 6, 8, 232, 7, 1, 5, 233, 244, 1, 1, 5, 98, 116, 114, 102, 115, 22, 98, 116,
    114, 102, 115, 32, 115, 101, 110, 100, 32, 45, 107, 32, 50, 56, 51, 57, 57, 51, 56, 55, 192,
    196, 7, 128, 252, 164, 2, 144, 191, 5, 1, 0, 0, 0, 0, 0,
];
const GOLDEN_EV_WATCH: [u8; 14] = [10, 0, 0, 0, 2, 6, 8, 232, 7, 1, 6, 0, 172, 2];
const GOLDEN_EV_KMSG: [u8; 47] = [
    43, 0, 0, 0, 2, 6, 8, 232, 7, 1, 7, 3, 1, 227, 170, 1, 0, 28, 75, 105, 108, 108, 101, 100, 32,
    112, 114, 111, 99, 101, 115, 115, 32, 50, 49, 56, 53, 57, 32, 40, 114, 115, 121, 110, 99, 41,
    2,
];
const GOLDEN_EV_CONNS: [u8; 74] = [
    70, 0, 0, 0, 2, 6, 8, 232, 7, 1, 8, 1, 233, 244, 1, 5, 114, 115, 121, 110, 99, 1, 4, 10, 0, 0,
    1, 233, 6, 4, 10, 0, 0, 2, 192, 184, 2, 1, 0, 240, 162, 4, 1, 0, 2, 128, 212, 97, 160, 254, 10,
    10, 7, 192, 184, 2, 12, 1, 1, 1, 160, 141, 6, 0, 0, 1, 192, 150, 177, 2, 1, 0, 3, 1,
];
const GOLDEN_EV_LINK: [u8; 22] = [
    18, 0, 0, 0, 2, 6, 8, 232, 7, 1, 2, 4, 101, 116, 104, 48, 1, 100, 1, 1, 220, 11,
];
const GOLDEN_EV_AGENT: [u8; 20] = [
    16, 0, 0, 0, 2, 6, 8, 232, 7, 1, 3, 5, 48, 46, 49, 46, 48, 9, 232, 7,
];
const GOLDEN_EV_DEV: [u8; 16] = [12, 0, 0, 0, 2, 6, 8, 232, 7, 1, 4, 0, 3, 115, 100, 99];

mod decoder_errors {
    use super::*;
    use nasprobe_proto::frame::{FrameError, MAX_CLIENT_FRAME_LEN};

    #[test]
    fn partial_frames_wait_for_more() {
        let frame = [5, 0, 0, 0, 2, 4, 5, 172, 2];
        for cut in 0..frame.len() {
            assert_eq!(
                decode_frame(&frame[..cut], MAX_FRAME_LEN),
                Ok(None),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn oversize_length_is_refused_before_the_body() {
        let prefix = (MAX_CLIENT_FRAME_LEN as u32 + 1).to_le_bytes();
        assert_eq!(
            decode_frame(&prefix, MAX_CLIENT_FRAME_LEN),
            Err(FrameError::TooLong {
                len: MAX_CLIENT_FRAME_LEN + 1,
                max: MAX_CLIENT_FRAME_LEN
            })
        );
        assert!(matches!(
            decode_frame(&[255, 255, 255, 255], MAX_FRAME_LEN),
            Err(FrameError::TooLong { .. })
        ));
    }

    #[test]
    fn empty_wrong_version_garbage_and_lying_length() {
        assert_eq!(
            decode_frame(&[0, 0, 0, 0], MAX_FRAME_LEN),
            Err(FrameError::Empty)
        );
        assert_eq!(
            decode_frame(&[5, 0, 0, 0, 1, 4, 5, 172, 2], MAX_FRAME_LEN),
            Err(FrameError::UnsupportedVersion(1))
        );
        assert_eq!(
            decode_frame(&[3, 0, 0, 0, 2, 200, 200], MAX_FRAME_LEN),
            Err(FrameError::Malformed)
        );
        // Length says 7 but the message takes 4: the extra bytes are refused.
        assert_eq!(
            decode_frame(&[7, 0, 0, 0, 2, 4, 5, 172, 2, 0, 0], MAX_FRAME_LEN),
            Err(FrameError::TrailingBytes(2))
        );
        // Length says 3 but the message needs 4: the body is short.
        assert_eq!(
            decode_frame(&[3, 0, 0, 0, 2, 4, 5, 172, 2], MAX_FRAME_LEN),
            Err(FrameError::Malformed)
        );
    }

    #[test]
    fn over_capacity_list_is_malformed_not_truncated() {
        // A Gone with a varint that overflows u64.
        let body = [
            PROTOCOL_VERSION,
            5,
            255,
            255,
            255,
            255,
            255,
            255,
            255,
            255,
            255,
            255,
            1,
            0,
            0,
        ];
        let mut frame = (body.len() as u32).to_le_bytes().to_vec();
        frame.extend(body);
        assert_eq!(
            decode_frame(&frame, MAX_FRAME_LEN),
            Err(FrameError::Malformed)
        );
    }

    #[test]
    fn small_output_buffer_is_a_typed_error() {
        let mut out = [0u8; 10];
        assert_eq!(
            encode_frame(&Message::Hello(sample_hello()), &mut out),
            Err(FrameError::BufferFull)
        );
    }

    #[test]
    fn every_prefix_of_every_golden_frame_is_handled() {
        for golden in [
            &GOLDEN_HELLO[..],
            &GOLDEN_SAMPLE[..],
            &GOLDEN_EV_EXIT[..],
            &GOLDEN_EV_END_KILLED[..],
            &GOLDEN_EV_WATCH[..],
            &GOLDEN_EV_KMSG[..],
            &GOLDEN_EV_CONNS[..],
            &GOLDEN_EV_SHAPING[..],
        ] {
            for cut in 0..golden.len() {
                assert_eq!(decode_frame(&golden[..cut], MAX_FRAME_LEN), Ok(None));
                // Same bytes with the length patched to the cut: never a panic.
                if cut > 4 {
                    let mut f = golden[..cut].to_vec();
                    f[..4].copy_from_slice(&((cut - 4) as u32).to_le_bytes());
                    assert!(decode_frame(&f, MAX_FRAME_LEN).is_err());
                }
            }
        }
    }
}

/// `split_record` and `sample_interval_us` over the golden frames: the layout the store relies
/// on (it keeps a record's body bytes as they came) is the wire's.
mod record_split {
    use super::*;
    use nasprobe_proto::frame::{FrameError, LEN_PREFIX, sample_interval_us, split_record};

    fn after_version(frame: &[u8]) -> &[u8] {
        &frame[LEN_PREFIX + 1..]
    }

    #[test]
    fn sample_record_splits_into_seq_time_and_sample_bytes() {
        let p = split_record(after_version(&GOLDEN_SAMPLE)).unwrap();
        assert_eq!(
            (p.seq, p.time_ms, p.is_event),
            (7, 1_700_000_002_000, false)
        );
        let sample: Sample = postcard::from_bytes(p.body).unwrap();
        assert_eq!(sample, sample_sample());
        assert_eq!(sample_interval_us(p.body), Ok(sample_sample().interval_us));
    }

    #[test]
    fn event_records_split() {
        for golden in [
            &GOLDEN_EV_START[..],
            &GOLDEN_EV_EXIT,
            &GOLDEN_EV_LINK,
            &GOLDEN_EV_AGENT,
            &GOLDEN_EV_DEV,
        ] {
            let p = split_record(after_version(golden)).unwrap();
            assert_eq!((p.seq, p.time_ms, p.is_event), (8, 1000, true));
            let Message::Record(r) = decode_frame(golden, MAX_FRAME_LEN).unwrap().unwrap().0 else {
                panic!("not a record");
            };
            let RecordBody::Event(e) = r.body else {
                panic!("not an event");
            };
            assert_eq!(postcard::from_bytes::<Event>(p.body).unwrap(), e);
        }
    }

    #[test]
    fn interval_is_read_at_every_varint_length() {
        for iv in [0u32, 1, 127, 128, 200_000, 1_000_000, u32::MAX] {
            let mut s = sample_sample();
            s.interval_us = iv;
            let mut buf = [0u8; 4096];
            let body = postcard::to_slice(&s, &mut buf).unwrap();
            assert_eq!(sample_interval_us(body), Ok(iv));
        }
    }

    #[test]
    fn other_messages_and_truncations_are_malformed() {
        assert_eq!(
            split_record(after_version(&GOLDEN_HELLO)),
            Err(FrameError::Malformed)
        );
        let body = after_version(&GOLDEN_SAMPLE);
        // Cut inside the tag, seq, time or body tag: never a panic, always Malformed.
        for cut in 0..8 {
            assert_eq!(
                split_record(&body[..cut]),
                Err(FrameError::Malformed),
                "{cut}"
            );
        }
        // A body tag past RecordBody's variants.
        let mut bad = body.to_vec();
        bad[8] = 2;
        assert_eq!(split_record(&bad), Err(FrameError::Malformed));
        assert_eq!(sample_interval_us(&[0x80]), Err(FrameError::Malformed));
    }

    #[test]
    fn vocabulary_defaults_totals_and_kinds() {
        let h = Hello::default();
        assert_eq!(
            (h.protocol_version, h.clock_ticks_per_sec, h.page_size),
            (PROTOCOL_VERSION, 100, 4096)
        );
        assert!(Sample::default().cpus.is_empty());
        let t = CpuTicks {
            user: u32::MAX,
            steal: u32::MAX,
            idle: 2,
            ..Default::default()
        };
        assert_eq!(t.total(), 2 * u64::from(u32::MAX) + 2);
        let kinds: std::vec::Vec<&str> = [
            &GOLDEN_EV_START[..],
            &GOLDEN_EV_EXIT,
            &GOLDEN_EV_LINK,
            &GOLDEN_EV_AGENT,
            &GOLDEN_EV_DEV,
        ]
        .iter()
        .map(|g| {
            let p = split_record(after_version(g)).unwrap();
            postcard::from_bytes::<Event>(p.body).unwrap().kind()
        })
        .collect();
        assert_eq!(
            kinds,
            [
                "process_start",
                "process_exit",
                "link_change",
                "agent_start",
                "device_added"
            ]
        );
    }
}

/// The handshake machines of both sides driven against each other over real frames: the
/// transcript is golden (Challenge, Auth and AuthOk bytes with known nonces and token, the
/// proofs computed independently with Python's hmac), and every misstep is a typed error.
mod handshake {
    use super::*;
    use nasprobe_proto::handshake::*;

    const TOKEN: &[u8] = b"token";
    const CLIENT_MAC: &str = "9218d9ca4a9fb1a27bea61ecb31482a098b3154b0b157a2da26d23a649e1b72c";
    const AGENT_MAC: &str = "2cd18a255b843db869ed5247aad43dea3d91c8c8bd7c289db1a5aee22f69f5e2";

    use nasprobe_testkit::big_stack;

    fn unhex(h: &str) -> std::vec::Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Encodes and decodes `m` as one frame (what the wire does to it).
    fn wire(m: &Message, transcript: &mut std::vec::Vec<std::vec::Vec<u8>>) -> Message {
        let mut buf = [0u8; 4096];
        let n = encode_frame(m, &mut buf).unwrap();
        transcript.push(buf[..n].to_vec());
        decode_frame(&buf[..n], MAX_FRAME_LEN).unwrap().unwrap().0
    }

    #[test]
    fn both_sides_complete_and_the_transcript_is_golden() {
        big_stack(|| {
            let mut t = std::vec::Vec::new();
            let mut agent = AgentHandshake::new([7; 32]);
            let mut client = ClientHandshake::new([1; 32]);
            let ch = wire(&agent.challenge(), &mut t);
            let ClientAction::SendAuth(auth) = client.on_message(TOKEN, ch).unwrap() else {
                panic!("client answers the Challenge");
            };
            let auth = wire(&Message::Auth(auth), &mut t);
            let AgentAction::SendAuthOk(ok) = agent.on_message(TOKEN, &auth).unwrap() else {
                panic!("agent accepts the Auth");
            };
            let ok = wire(&Message::AuthOk(ok), &mut t);
            assert_eq!(client.on_message(TOKEN, ok).unwrap(), ClientAction::Wait);
            assert_eq!(client.awaiting(), "Hello");
            let hello = wire(&Message::Hello(sample_hello()), &mut t);
            assert_eq!(
                client.on_message(TOKEN, hello).unwrap(),
                ClientAction::Hello(sample_hello())
            );
            assert!(client.is_done());
            assert!(!agent.is_streaming());
            let resume = Resume {
                instance_id: 5,
                after_seq: 9,
            };
            let r = wire(&Message::Resume(resume.clone()), &mut t);
            assert_eq!(
                agent.on_message(TOKEN, &r).unwrap(),
                AgentAction::Resume(ResumeWith::from(&resume))
            );
            assert!(agent.is_streaming());
            let ka = Message::KeepAlive(KeepAlive { time_ms: 1 });
            assert_eq!(agent.on_message(TOKEN, &ka).unwrap(), AgentAction::Nothing);

            let mut want_auth = vec![66, 0, 0, 0, 2, 1];
            want_auth.extend([1u8; 32]);
            want_auth.extend(unhex(CLIENT_MAC));
            let mut want_ok = vec![34, 0, 0, 0, 2, 2];
            want_ok.extend(unhex(AGENT_MAC));
            let mut want_ch = vec![34, 0, 0, 0, 2, 0];
            want_ch.extend([7u8; 32]);
            assert_eq!(t[0], want_ch);
            assert_eq!(t[1], want_auth);
            assert_eq!(t[2], want_ok);
            assert_eq!(t[3], GOLDEN_HELLO);
        });
    }

    #[test]
    fn wrong_token_either_way_is_bad_proof() {
        big_stack(|| {
            let mut agent = AgentHandshake::new([7; 32]);
            let mut client = ClientHandshake::new([1; 32]);
            let ClientAction::SendAuth(auth) =
                client.on_message(b"tokem", agent.challenge()).unwrap()
            else {
                panic!()
            };
            assert_eq!(
                agent.on_message(TOKEN, &Message::Auth(auth)),
                Err(HandshakeError::BadProof)
            );
            // An agent that does not know the token cannot prove itself to the collector.
            let mut client = ClientHandshake::new([1; 32]);
            client.on_message(TOKEN, agent.challenge()).unwrap();
            let forged = Message::AuthOk(AuthOk { mac: [0; 32] });
            assert_eq!(
                client.on_message(TOKEN, forged),
                Err(HandshakeError::BadProof)
            );
        });
    }

    #[test]
    fn out_of_order_refused_and_other_versions_are_typed() {
        big_stack(|| {
            let mut agent = AgentHandshake::new([7; 32]);
            let resume = Message::Resume(Resume {
                instance_id: 0,
                after_seq: 0,
            });
            assert_eq!(
                agent.on_message(TOKEN, &resume),
                Err(HandshakeError::Unexpected {
                    awaiting: "Auth",
                    got: "Resume"
                })
            );
            let ka = Message::KeepAlive(KeepAlive { time_ms: 1 });
            assert!(
                agent.on_message(TOKEN, &ka).is_err(),
                "no KeepAlive before Auth"
            );

            let mut client = ClientHandshake::new([1; 32]);
            assert_eq!(
                client.on_message(TOKEN, Message::Hello(sample_hello())),
                Err(HandshakeError::Unexpected {
                    awaiting: "Challenge",
                    got: "Hello"
                })
            );
            let mut client = ClientHandshake::new([1; 32]);
            let refused = Message::Refused(Refused {
                reason: s("too many clients"),
            });
            assert_eq!(
                client.on_message(TOKEN, refused),
                Err(HandshakeError::Refused(s("too many clients")))
            );
            // A Hello of another version after a good AuthOk.
            let mut agent = AgentHandshake::new([7; 32]);
            let mut client = ClientHandshake::new([1; 32]);
            let ClientAction::SendAuth(auth) = client.on_message(TOKEN, agent.challenge()).unwrap()
            else {
                panic!()
            };
            let AgentAction::SendAuthOk(ok) =
                agent.on_message(TOKEN, &Message::Auth(auth)).unwrap()
            else {
                panic!()
            };
            client.on_message(TOKEN, Message::AuthOk(ok)).unwrap();
            let mut h = sample_hello();
            h.protocol_version = PROTOCOL_VERSION + 1;
            assert_eq!(
                client.on_message(TOKEN, Message::Hello(h)),
                Err(HandshakeError::Version(PROTOCOL_VERSION + 1))
            );
        });
    }
}

#[test]
fn handshake_takes_a_test_request_instead_of_resume() {
    use nasprobe_proto::handshake::*;
    const TOK: &[u8] = b"0123456789abcdef0123456789abcdef";
    let mut agent = AgentHandshake::new([7; 32]);
    let mut client = ClientHandshake::new([1; 32]);
    let ClientAction::SendAuth(auth) = client.on_message(TOK, agent.challenge()).unwrap() else {
        panic!("no Auth")
    };
    assert!(matches!(
        agent.on_message(TOK, &Message::Auth(auth)),
        Ok(AgentAction::SendAuthOk(_))
    ));
    let req = TestRequest::Disk(DiskTest {
        path: s("/volume1"),
        bytes: 1 << 30,
        allow_tmpfs: false,
    });
    match agent.on_message(TOK, &Message::TestRequest(req.clone())) {
        Ok(AgentAction::Test(r)) => assert_eq!(r, req),
        other => panic!("{other:?}"),
    }
    assert!(agent.is_testing() && !agent.is_streaming());
    // KeepAlives are fine while it runs; a Resume afterwards is not.
    assert!(matches!(
        agent.on_message(TOK, &Message::KeepAlive(KeepAlive { time_ms: 1 })),
        Ok(AgentAction::Nothing)
    ));
    assert!(
        agent
            .on_message(
                TOK,
                &Message::Resume(Resume {
                    instance_id: 1,
                    after_seq: 0
                })
            )
            .is_err()
    );
}

#[test]
fn net_test_messages() {
    test_one(
        Message::TestRequest(TestRequest::NetReceive(NetReceive {
            seconds: 20,
            nonce: [9; 16],
            max_bytes: 300,
        })),
        &[
            22, 0, 0, 0, 2, 9, 1, 20, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 172, 2,
        ],
    );
    test_one(
        Message::TestRequest(TestRequest::NetSend(NetSend {
            to: s("h:1"),
            seconds: 10,
            streams: Vec::from_slice(&[1, 4]).unwrap(),
            nonce: [9; 16],
            max_bytes: 1,
        })),
        &[
            28, 0, 0, 0, 2, 9, 2, 3, b'h', b':', b'1', 10, 2, 1, 4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
            9, 9, 9, 9, 9, 9, 1,
        ],
    );
    test_one(
        Message::TestReady(TestReady { port: 7452 }),
        &[4, 0, 0, 0, 2, 11, 156, 58],
    );
    test_one(
        Message::ResumeWith(ResumeWith {
            instance_id: 5,
            after_seq: 300,
            accepts: accepts::SHAPING,
        }),
        &[6, 0, 0, 0, 2, 12, 5, 172, 2, 1],
    );
    test_one(
        Message::TestResult(TestResult::Net(
            Vec::from_slice(&[NetRun {
                streams: 1,
                bytes: 2,
                micros: 3,
                retransmits: 4,
                started_ms: 5,
                ended_ms: 6,
            }])
            .unwrap(),
        )),
        &[10, 0, 0, 0, 2, 10, 2, 1, 1, 2, 3, 4, 5, 6],
    );
}

/// The run-bound `test net` requests (issue 28): appended variants 3 and 4 of `TestRequest`.
#[test]
fn net_run_test_messages() {
    test_one(
        Message::TestRequest(TestRequest::NetReceiveRun(NetReceiveRun {
            seconds: 20,
            streams: Vec::from_slice(&[1, 4]).unwrap(),
            max_bytes: 300,
        })),
        &[9, 0, 0, 0, 2, 9, 3, 20, 2, 1, 4, 172, 2],
    );
    test_one(
        Message::TestRequest(TestRequest::NetSendRun(NetSendRun {
            to: s("h:1"),
            seconds: 10,
            streams: Vec::from_slice(&[1, 4]).unwrap(),
            max_bytes: 1,
            sealed_key: [7; 32],
        })),
        &[
            44, 0, 0, 0, 2, 9, 4, 3, b'h', b':', b'1', 10, 2, 1, 4, 1, 7, 7, 7, 7, 7, 7, 7, 7, 7,
            7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        ],
    );
}

/// The opening bytes of a `test net` stream: fixed keys give fixed bytes (a changed vector is
/// a changed wire).
#[test]
fn net_test_stream_bytes() {
    use nasprobe_proto::test_stream::*;
    const GOLDEN_RUN_KEY: [u8; 8] = [42, 181, 245, 149, 60, 54, 17, 112];
    const GOLDEN_RX_PROOF: [u8; 8] = [227, 62, 210, 95, 97, 114, 181, 126];
    const GOLDEN_HEADER: [u8; 10] = [1, 3, 183, 125, 33, 119, 67, 149, 190, 107];
    const GOLDEN_SEALED: [u8; 4] = [9, 169, 83, 181];
    let key = run_key(&[1; 32]);
    assert_eq!(key[..8], GOLDEN_RUN_KEY, "run key {:?}", &key[..8]);
    let hello = receiver_hello(&key, &[2; 16]);
    assert_eq!(
        hello[16..24],
        GOLDEN_RX_PROOF,
        "rx proof {:?}",
        &hello[16..24]
    );
    let head = stream_header(&key, &[2; 16], 1, 3);
    assert_eq!(head[..10], GOLDEN_HEADER, "header {:?}", &head[..10]);
    assert_eq!(
        seal_run_key(&[5; 32], &key)[..4],
        GOLDEN_SEALED,
        "sealed {:?}",
        &seal_run_key(&[5; 32], &key)[..4]
    );
}

/// A `cp` reading one file and writing another, and an rsync with a deleted temp file.
#[test]
fn record_open_files_event() {
    let file = |fd, path: &str, pos, size, mode| OpenFile {
        fd,
        path: s(path),
        pos,
        size,
        mode,
    };
    let mut procs = Vec::new();
    procs
        .push(ProcFiles {
            pid: 4242,
            comm: s("cp"),
            files: Vec::from_slice(&[
                file(3, "/src/a.mkv", 1_048_576, 5_000_000_000, FileMode::Read),
                file(4, "/share/a.mkv", 1_048_576, 1_048_576, FileMode::Write),
            ])
            .unwrap(),
            more: 0,
        })
        .unwrap();
    procs
        .push(ProcFiles {
            pid: 77,
            comm: s("rsync"),
            files: Vec::from_slice(&[file(
                1,
                "/share/.b.XyZ (deleted)",
                0,
                0,
                FileMode::ReadWrite,
            )])
            .unwrap(),
            more: 9,
        })
        .unwrap();
    test_one(
        event_record(Event::OpenFiles(OpenFiles { procs })),
        &GOLDEN_EV_FILES[..],
    );
}

const GOLDEN_EV_FILES: [u8; 98] = [
    94, 0, 0, 0, 2, 6, 8, 232, 7, 1, 9, 2, 146, 33, 2, 99, 112, 2, 3, 10, 47, 115, 114, 99, 47, 97,
    46, 109, 107, 118, 128, 128, 64, 128, 228, 151, 208, 18, 0, 4, 12, 47, 115, 104, 97, 114, 101,
    47, 97, 46, 109, 107, 118, 128, 128, 64, 128, 128, 64, 1, 0, 77, 5, 114, 115, 121, 110, 99, 1,
    1, 23, 47, 115, 104, 97, 114, 101, 47, 46, 98, 46, 88, 121, 90, 32, 40, 100, 101, 108, 101,
    116, 101, 100, 41, 0, 0, 2, 9,
];

/// Sealed frames (protocol 2): the session key and the MACs after the handshake, computed
/// independently with Python (`hmac` for the key, `hashlib.blake2s(key=..., digest_size=16)`
/// for the MACs) for token "token", agent nonce [7; 32], client nonce [1; 32] over
/// `KeepAlive { time_ms: 1000 }`.
mod sealed {
    use super::*;
    use nasprobe_proto::frame::{decode_sealed_frame, encode_sealed_frame};
    use nasprobe_proto::session::{BadMac, Direction, FrameMac, session_key};

    const KEY: &str = "057b76e0241104a11d0ce717d6b306400a723717d77e2e1dea5a1abeeec6e1c9";
    const FRAME: [u8; 8] = [4, 0, 0, 0, 2, 7, 232, 7];
    const TO_COLLECTOR_0: [u8; 16] = [
        24, 199, 248, 57, 195, 228, 179, 34, 142, 137, 219, 40, 112, 63, 30, 184,
    ];
    const TO_COLLECTOR_1: [u8; 16] = [
        253, 138, 150, 178, 107, 12, 150, 5, 163, 194, 133, 182, 152, 202, 192, 147,
    ];
    const TO_AGENT_0: [u8; 16] = [
        196, 155, 223, 1, 15, 60, 236, 185, 49, 110, 148, 107, 74, 32, 41, 39,
    ];

    fn mac(d: Direction) -> FrameMac {
        FrameMac::new(b"token", &[7; 32], &[1; 32], d)
    }

    fn ka() -> Message {
        Message::KeepAlive(KeepAlive { time_ms: 1000 })
    }

    #[test]
    fn session_key_and_frame_macs_are_golden() {
        let k = session_key(b"token", &[7; 32], &[1; 32]);
        let hex: std::string::String = k.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, KEY);
        let mut tx = mac(Direction::ToCollector);
        let mut buf = [0u8; 64];
        let n = encode_sealed_frame(&ka(), &mut buf, &mut tx).unwrap();
        let mut want = FRAME.to_vec();
        want.extend(TO_COLLECTOR_0);
        assert_eq!(&buf[..n], &want[..]);
        let n = encode_sealed_frame(&ka(), &mut buf, &mut tx).unwrap();
        assert_eq!(&buf[FRAME.len()..n], &TO_COLLECTOR_1);
        let n = encode_sealed_frame(&ka(), &mut buf, &mut mac(Direction::ToAgent)).unwrap();
        assert_eq!(&buf[FRAME.len()..n], &TO_AGENT_0);
    }

    #[test]
    fn sealed_frames_decode_in_order_and_every_misstep_is_bad_mac() {
        let mut wire = FRAME.to_vec();
        wire.extend(TO_COLLECTOR_0);
        wire.extend(FRAME);
        wire.extend(TO_COLLECTOR_1);
        let mut rx = mac(Direction::ToCollector);
        // Every prefix short of a whole frame and its MAC waits for more.
        for cut in 0..FRAME.len() + 16 {
            assert_eq!(
                decode_sealed_frame(&wire[..cut], MAX_FRAME_LEN, &mut rx),
                Ok(None)
            );
        }
        assert_eq!(rx.counter(), 0);
        let (m, used) = decode_sealed_frame(&wire, MAX_FRAME_LEN, &mut rx)
            .unwrap()
            .unwrap();
        assert_eq!((m, used), (ka(), 24));
        // The second frame's MAC is not the first's: a replay of frame 0 is refused.
        assert_eq!(
            decode_sealed_frame(&wire[..24], MAX_FRAME_LEN, &mut rx),
            Err(FrameError::BadMac(BadMac { counter: 1 }))
        );
        assert_eq!(
            decode_sealed_frame(&wire[24..], MAX_FRAME_LEN, &mut rx).map(|o| o.map(|x| x.1)),
            Ok(Some(24))
        );
        // One bit flipped anywhere in frame or MAC.
        for i in 0..24 {
            let mut w = wire[..24].to_vec();
            w[i] ^= 0x80;
            let r = decode_sealed_frame(&w, MAX_FRAME_LEN, &mut mac(Direction::ToCollector));
            // A flipped length makes the receiver wait for bytes whose MAC cannot match.
            assert!(r.is_err() || (i < 4 && r == Ok(None)), "byte {i}: {r:?}");
        }
        // The agent's frames are not the collector's.
        assert!(decode_sealed_frame(&wire, MAX_FRAME_LEN, &mut mac(Direction::ToAgent)).is_err());
    }
}

/// `Event::Shaping` (variant 10): eth0 (nic 0) under tbf at 200 Mbit/s; eth1 (nic 1) under htb
/// with class 1:10 at 200 Mbit/s (its u32 filters: destination port 7462, source port 5201, one
/// port more), 1:20 at 40 Gbit/s, default 1:20.
#[test]
fn record_shaping_event() {
    let tbf = NicShaping {
        nic: 0,
        kind: ShaperKind::Tbf,
        classes: Vec::from_slice(&[ShapedClass {
            class: 0,
            cap_bit_s: 200_000_000,
            ports: Vec::new(),
            more_ports: 0,
        }])
        .unwrap(),
        more: 0,
        default_class: None,
    };
    let htb = NicShaping {
        nic: 1,
        kind: ShaperKind::Htb,
        classes: Vec::from_slice(&[
            ShapedClass {
                class: 0x0001_0010,
                cap_bit_s: 200_000_000,
                ports: Vec::from_slice(&[
                    PortMatch {
                        port: 7462,
                        dst: true,
                    },
                    PortMatch {
                        port: 5201,
                        dst: false,
                    },
                ])
                .unwrap(),
                more_ports: 1,
            },
            ShapedClass {
                class: 0x0001_0020,
                cap_bit_s: 40_000_000_000,
                ports: Vec::new(),
                more_ports: 0,
            },
        ])
        .unwrap(),
        more: 0,
        default_class: Some(0x0001_0020),
    };
    test_one(
        event_record(Event::Shaping(
            Shaping {
                nics: Vec::from_slice(&[tbf, htb]).unwrap(),
            }
            .into(),
        )),
        &GOLDEN_EV_SHAPING[..],
    );
    assert_eq!(ClassName(0x0001_0010).to_string(), "1:10");
    assert_eq!(ClassName(0xFFFF_0001).to_string(), "ffff:1");
}

const GOLDEN_EV_SHAPING: [u8; 58] = [
    54, 0, 0, 0, 2, 6, 8, 232, 7, 1, 10, 2, 0, 0, 1, 0, 128, 132, 175, 95, 0, 0, 0, 0, 1, 1, 2,
    144, 128, 4, 128, 132, 175, 95, 2, 166, 58, 1, 209, 40, 0, 1, 160, 128, 4, 128, 160, 190, 129,
    149, 1, 0, 0, 0, 1, 160, 128, 4,
];
