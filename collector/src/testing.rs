//! Test support: realistic samples and a small in-process fake agent speaking the protocol.
//!
//! The fake agent is a stepping stone and a load tool; the end-to-end tests use the real
//! `nasprobe-agent`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nasprobe_proto::frame::{LEN_PREFIX, MAX_CLIENT_FRAME_LEN, decode_frame};
use nasprobe_proto::handshake::{AgentAction, AgentHandshake};
use nasprobe_proto::*;

fn s<const N: usize>(x: &str) -> heapless::String<N> {
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

/// The history of a fake agent: records in order from some seq on.
#[derive(Debug, Default)]
pub struct FakeHistory {
    pub instance_id: u64,
    pub started_ms: u64,
    pub interval_ms: u32,
    /// Records the ring still holds, contiguous.
    pub ring: std::collections::VecDeque<Record>,
    pub next_seq: u64,
}

impl FakeHistory {
    pub fn new(instance_id: u64, started_ms: u64, interval_ms: u32) -> Self {
        FakeHistory {
            instance_id,
            started_ms,
            interval_ms,
            ring: Default::default(),
            next_seq: 1,
        }
    }

    /// Appends a sample (every 10th record an event) and keeps at most `cap` records.
    pub fn push(&mut self, cap: usize) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let time_ms = self.started_ms + seq * u64::from(self.interval_ms);
        let body = if seq.is_multiple_of(10) {
            RecordBody::Event(exit_event(seq as u32))
        } else {
            RecordBody::Sample(nas_sample(seq))
        };
        self.ring.push_back(Record { seq, time_ms, body });
        while self.ring.len() > cap {
            self.ring.pop_front();
        }
    }
}

/// A fake agent on 127.0.0.1: speaks the protocol from a shared history, one connection at a
/// time, live-streams what gets pushed. For tests and the ingest benchmark.
pub struct FakeAgent {
    pub addr: String,
    pub history: Arc<Mutex<FakeHistory>>,
    pub stop: Arc<AtomicBool>,
    /// Connections accepted so far.
    pub connections: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeAgent {
    pub fn start(token: Vec<u8>, history: FakeHistory) -> FakeAgent {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        l.set_nonblocking(true).ok();
        let history = Arc::new(Mutex::new(history));
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (h2, s2, c2) = (history.clone(), stop.clone(), connections.clone());
        let thread = std::thread::spawn(move || {
            while !s2.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((c, _)) => {
                        c2.fetch_add(1, Ordering::SeqCst);
                        c.set_nonblocking(false).ok();
                        let (token, h3, s3) = (token.clone(), h2.clone(), s2.clone());
                        std::thread::Builder::new()
                            .stack_size(16 << 20)
                            .spawn(move || {
                                let _ = serve(c, &token, &h3, &s3);
                            })
                            .ok();
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        FakeAgent {
            addr,
            history,
            stop,
            connections,
            thread: Some(thread),
        }
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
    }
}

fn send(c: &mut TcpStream, m: &Message) -> std::io::Result<()> {
    let mut buf = vec![0u8; 70_000];
    let n = encode_frame(m, &mut buf).map_err(std::io::Error::other)?;
    c.write_all(&buf[..n])
}

fn recv(c: &mut TcpStream) -> std::io::Result<Message> {
    let mut len = [0u8; LEN_PREFIX];
    c.read_exact(&mut len)?;
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_CLIENT_FRAME_LEN {
        return Err(std::io::Error::other("too long"));
    }
    let mut frame = len.to_vec();
    frame.resize(LEN_PREFIX + n, 0);
    c.read_exact(&mut frame[LEN_PREFIX..])?;
    match decode_frame(&frame, MAX_CLIENT_FRAME_LEN) {
        Ok(Some((m, _))) => Ok(m),
        _ => Err(std::io::Error::other("bad frame")),
    }
}

fn serve(
    mut c: TcpStream,
    token: &[u8],
    h: &Mutex<FakeHistory>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut hs = AgentHandshake::new([7u8; 32]);
    send(&mut c, &hs.challenge())?;
    let mut inst = 0;
    let r = loop {
        match hs.on_message(token, &recv(&mut c)?) {
            Ok(AgentAction::SendAuthOk(ok)) => {
                send(&mut c, &Message::AuthOk(ok))?;
                let hello = {
                    let g = h.lock().unwrap();
                    let mut hello = nas_hello(g.instance_id, g.started_ms, g.interval_ms);
                    hello.oldest_seq = g.ring.front().map_or(0, |r| r.seq);
                    hello.newest_seq = g.ring.back().map_or(0, |r| r.seq);
                    hello
                };
                inst = hello.instance_id;
                send(&mut c, &Message::Hello(hello))?;
            }
            Ok(AgentAction::Resume(r)) => break r,
            // A fake agent runs no tests: it closes.
            Ok(AgentAction::Test(_)) => return Ok(()),
            Ok(AgentAction::Nothing) => {}
            Err(e) => {
                let reason = s(&e.to_string());
                send(&mut c, &Message::Refused(Refused { reason }))?;
                return Ok(());
            }
        }
    };
    let mut next = {
        let g = h.lock().unwrap();
        let after = if r.instance_id == g.instance_id {
            r.after_seq
        } else {
            0
        };
        let oldest = g.ring.front().map_or(g.next_seq, |r| r.seq);
        if after + 1 < oldest {
            send(
                &mut c,
                &Message::Gone(Gone {
                    instance_id: g.instance_id,
                    from_seq: after + 1,
                    to_seq: oldest - 1,
                }),
            )?;
            oldest
        } else {
            after + 1
        }
    };
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, c.try_clone()?);
    let mut buf = vec![0u8; 70_000];
    while !stop.load(Ordering::SeqCst) {
        let mut out = Vec::with_capacity(512 * 1024);
        {
            let g = h.lock().unwrap();
            if g.instance_id != inst {
                return Ok(());
            }
            let start = g.ring.front().map_or(0, |r| r.seq);
            let skip = next.saturating_sub(start) as usize;
            for rec in g.ring.iter().skip(skip).take(1000) {
                next = rec.seq + 1;
                let n = encode_frame(&Message::Record(rec.clone()), &mut buf)
                    .map_err(std::io::Error::other)?;
                out.extend_from_slice(&buf[..n]);
            }
        }
        if out.is_empty() {
            w.flush()?;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        w.write_all(&out)?;
    }
    Ok(())
}
