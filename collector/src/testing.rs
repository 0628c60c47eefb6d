//! Test support: realistic samples and a small in-process fake agent speaking the protocol.
//!
//! The fake agent is a stepping stone and a load tool; the end-to-end tests use the real
//! `nasprobe-agent`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nasprobe_proto::frame::{
    LEN_PREFIX, MAX_CLIENT_FRAME_LEN, decode_frame, decode_sealed_frame, encode_sealed_frame,
};
use nasprobe_proto::handshake::{AgentAction, AgentHandshake};
use nasprobe_proto::session::{FrameMac, MAC_LEN};
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
        let history = Arc::new(Mutex::new(history));
        let h2 = history.clone();
        let (addr, stop, connections, thread) = listen(l, move |c, stop| {
            let _ = serve(c, &token, &h2, stop);
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
        stop_and_join(&self.stop, &mut self.thread);
    }
}

type Listening = (
    String,
    Arc<AtomicBool>,
    Arc<std::sync::atomic::AtomicU64>,
    std::thread::JoinHandle<()>,
);

/// Accepts connections on `l` until stopped, each served on its own thread (a 16 MiB stack:
/// decoded messages are large in debug builds) by `serve(connection, stop)`. Returns the
/// address, the stop flag, the connection count and the accept thread.
fn listen(
    l: TcpListener,
    serve: impl Fn(TcpStream, &AtomicBool) + Send + Sync + 'static,
) -> Listening {
    let addr = l.local_addr().expect("addr").to_string();
    l.set_nonblocking(true).ok();
    let stop = Arc::new(AtomicBool::new(false));
    let connections = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (s2, c2) = (stop.clone(), connections.clone());
    let serve = Arc::new(serve);
    let thread = std::thread::spawn(move || {
        while !s2.load(Ordering::SeqCst) {
            match l.accept() {
                Ok((c, _)) => {
                    c2.fetch_add(1, Ordering::SeqCst);
                    c.set_nonblocking(false).ok();
                    let (serve, s3) = (serve.clone(), s2.clone());
                    std::thread::Builder::new()
                        .stack_size(16 << 20)
                        .spawn(move || serve(c, &s3))
                        .ok();
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    (addr, stop, connections, thread)
}

fn stop_and_join(stop: &AtomicBool, thread: &mut Option<std::thread::JoinHandle<()>>) {
    stop.store(true, Ordering::SeqCst);
    if let Some(t) = thread.take() {
        t.join().ok();
    }
}

fn send(c: &mut TcpStream, m: &Message, seal: Option<&mut AgentSeal>) -> std::io::Result<()> {
    let mut buf = vec![0u8; 70_000];
    let n = match seal {
        Some(s) => s.encode(m, &mut buf)?,
        None => encode_frame(m, &mut buf).map_err(std::io::Error::other)?,
    };
    c.write_all(&buf[..n])
}

fn recv(c: &mut TcpStream, rx: Option<&mut FrameMac>) -> std::io::Result<Message> {
    let mut len = [0u8; LEN_PREFIX];
    c.read_exact(&mut len)?;
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_CLIENT_FRAME_LEN {
        return Err(std::io::Error::other("too long"));
    }
    let mut frame = len.to_vec();
    frame.resize(LEN_PREFIX + n + if rx.is_some() { MAC_LEN } else { 0 }, 0);
    c.read_exact(&mut frame[LEN_PREFIX..])?;
    let got = match rx {
        Some(mac) => decode_sealed_frame(&frame, MAX_CLIENT_FRAME_LEN, mac),
        None => decode_frame(&frame, MAX_CLIENT_FRAME_LEN),
    };
    match got {
        Ok(Some((m, _))) => Ok(m),
        _ => Err(std::io::Error::other("bad frame")),
    }
}

/// The fake agents' side of a session after the handshake: frames to the collector sealed
/// with the session's MAC, frames from it checked (`nasprobe_proto::session`).
pub struct AgentSeal {
    pub tx: FrameMac,
    pub rx: FrameMac,
}

impl AgentSeal {
    /// Encodes `m` as a sealed frame into `buf`; its length.
    pub fn encode(&mut self, m: &Message, buf: &mut [u8]) -> std::io::Result<usize> {
        encode_sealed_frame(m, buf, &mut self.tx).map_err(std::io::Error::other)
    }

    /// `m` as a sealed frame.
    pub fn frame(&mut self, m: &Message) -> Vec<u8> {
        let mut buf = vec![0u8; 70_000];
        let n = self.encode(m, &mut buf).expect("encodes");
        buf.truncate(n);
        buf
    }

    /// Raw frame bytes (possibly broken on purpose) followed by their MAC: what a hostile
    /// agent that holds the token sends.
    pub fn seal_raw(&mut self, frame: &[u8]) -> Vec<u8> {
        let mut f = frame.to_vec();
        f.extend_from_slice(&self.tx.seal(frame));
        f
    }

    /// Reads the collector's next (sealed) frame.
    pub fn recv(&mut self, c: &mut TcpStream) -> std::io::Result<Message> {
        recv(c, Some(&mut self.rx))
    }
}

/// The agent's side of the real handshake, driven by proto's shared state machine
/// (`AgentHandshake`): `Challenge` → `Auth` (checked against `token`) → `AuthOk` → `Hello` →
/// `Resume`, sealed after `AuthOk` as the protocol wants. None when the client failed (it got
/// `Refused`). Shared by [`FakeAgent`], [`HostileAgent`] and the load tool.
pub fn agent_handshake(
    c: &mut TcpStream,
    token: &[u8],
    hello: &Hello,
    agent_nonce: [u8; 32],
) -> std::io::Result<Option<(Resume, AgentSeal)>> {
    let mut hs = AgentHandshake::new(agent_nonce);
    let mut seal: Option<AgentSeal> = None;
    send(c, &hs.challenge(), None)?;
    loop {
        let m = recv(c, seal.as_mut().map(|s| &mut s.rx))?;
        match hs.on_message(token, &m) {
            Ok(AgentAction::SendAuthOk(ok)) => {
                send(c, &Message::AuthOk(ok), None)?;
                let (tx, rx) = hs.frame_macs(token).expect("the collector's proof checked");
                let mut sl = AgentSeal { tx, rx };
                send(c, &Message::Hello(hello.clone()), Some(&mut sl))?;
                seal = Some(sl);
            }
            Ok(AgentAction::Resume(r)) => {
                return Ok(seal.map(|sl| (r, sl)));
            }
            // A fake agent runs no tests: it closes.
            Ok(AgentAction::Test(_)) => return Ok(None),
            Ok(AgentAction::Nothing) => {}
            Err(e) => {
                let reason = s(&e.to_string());
                send(c, &Message::Refused(Refused { reason }), seal.as_mut())?;
                return Ok(None);
            }
        }
    }
}

fn serve(
    mut c: TcpStream,
    token: &[u8],
    h: &Mutex<FakeHistory>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let hello = {
        let g = h.lock().unwrap();
        let mut hello = nas_hello(g.instance_id, g.started_ms, g.interval_ms);
        hello.oldest_seq = g.ring.front().map_or(0, |r| r.seq);
        hello.newest_seq = g.ring.back().map_or(0, |r| r.seq);
        // The agent's clock: the time of its newest record (histories run ahead of real time).
        hello.now_ms = g
            .ring
            .back()
            .map_or(g.started_ms, |r| r.time_ms.max(g.started_ms));
        hello
    };
    let inst = hello.instance_id;
    let Some((r, mut seal)) = agent_handshake(&mut c, token, &hello, [7u8; 32])? else {
        return Ok(());
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
                Some(&mut seal),
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
                let n = seal.encode(&Message::Record(rec.clone()), &mut buf)?;
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

/// Milliseconds since the Unix epoch on this machine.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What a [`HostileAgent`] does after a real handshake (one mode per finding of issue 19).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attack {
    /// Terminal escapes (`ESC[2J`, OSC 0 title, OSC 52 clipboard), C1 controls, DEL and bidi
    /// overrides in the host, disk, NIC and mount names of the `Hello`, in process and thread
    /// names and command lines of samples and events.
    Names,
    /// Record times `u64::MAX`, 0 and a year ahead among normal records (seq 2, 4, 6).
    Times,
    /// One sample per absurd value of [`absurd_values`] (seq 2, 3, ...), normal ones around.
    Values,
    /// A `Hello` with `clock_ticks_per_sec` 0.
    HelloTicks0,
    /// A `Hello` with `cpu_count` 0.
    HelloCpus0,
    /// `Gone { to_seq: u64::MAX }` first.
    GoneMax,
    /// `Gone { to_seq: 2^63 - 1 }` first.
    GoneHalf,
    /// 20,000 process events in one interval between two samples, then normal records.
    Flood,
    /// Process names starting with `=`, `+`, `-`, `@` (spreadsheet formulas).
    Formulas,
    /// Real and absurd `ProcessEnd` (and a real `ExitWatch`) events, see [`event_cases`].
    ProcessEndValues,
    /// Real and absurd `KernelMessage` events, see [`event_cases`].
    KernelMessageValues,
    /// Real and absurd `Connections` events, see [`event_cases`].
    ConnectionsValues,
    /// Real and absurd `OpenFiles` events, see [`event_cases`].
    OpenFilesValues,
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

fn info(c: &mut TcpConn) -> &mut TcpConnInfo {
    c.info.as_mut().expect("connections_event has tcp_info")
}

/// For an event attack: the real-looking events (stored) and the absurd ones with the word
/// their rejection must name.
pub fn event_cases(attack: Attack) -> (Vec<Event>, Vec<(&'static str, Event)>) {
    let mut absurd = Vec::new();
    let real = match attack {
        Attack::ProcessEndValues => {
            let base = process_end_event(4242);
            let mut add = |why: &'static str, f: &dyn Fn(&mut ProcessEnd)| {
                let Event::ProcessEnd(mut p) = base.clone() else {
                    unreachable!()
                };
                f(&mut p);
                absurd.push((why, Event::ProcessEnd(p)));
            };
            add("signal 200", &|p| p.status.signal = Some(200));
            add("signal 0", &|p| p.status.signal = Some(0));
            add("code and signal", &|p| p.status.code = Some(1));
            add("core_dumped", &|p| {
                p.status.signal = None;
                p.status.code = Some(0);
                p.status.core_dumped = true;
            });
            add("before_ms", &|p| p.status.before_ms = u32::MAX);
            add("scan", &|p| p.status.seen = ExitSeen::Scan);
            add("pid", &|p| p.exit.process.pid = u32::MAX);
            add("cpu_ticks", &|p| p.exit.cpu_ticks = u64::MAX);
            let mut scanned = process_end_event(4243);
            if let Event::ProcessEnd(p) = &mut scanned {
                p.status = ExitStatus {
                    seen: ExitSeen::Scan,
                    code: None,
                    signal: None,
                    core_dumped: false,
                    oom_killed: false,
                    before_ms: 0,
                };
            }
            let watch = Event::ExitWatch(ExitWatch {
                source: ExitSeen::Kernel,
                dropped: 12,
            });
            vec![base, scanned, watch]
        }
        Attack::KernelMessageValues => {
            let base = kernel_message_event(4242);
            let mut add = |why: &'static str, f: &dyn Fn(&mut KernelMessage)| {
                let Event::KernelMessage(mut k) = base.clone() else {
                    unreachable!()
                };
                f(&mut k);
                absurd.push((why, Event::KernelMessage(k)));
            };
            add("level", &|k| k.level = 200);
            add("pid", &|k| k.pid = Some(99_999_999));
            add("suppressed", &|k| k.suppressed = u32::MAX);
            let mut link = kernel_message_event(0);
            if let Event::KernelMessage(k) = &mut link {
                k.level = 6;
                k.pid = None;
                k.nic = Some(s("eth0"));
                k.text = s("e1000e: eth0 NIC Link is Down");
                k.suppressed = 0;
            }
            vec![base, link]
        }
        Attack::ConnectionsValues => {
            let base = connections_event(4242);
            let mut add = |why: &'static str, f: &dyn Fn(&mut TcpConn)| {
                let Event::Connections(mut c) = base.clone() else {
                    unreachable!()
                };
                f(&mut c.procs[0].conns[0]);
                absurd.push((why, Event::Connections(c)));
            };
            add("state", &|c| c.state = 99);
            add("address", &|c| c.remote.addr.truncate(3));
            add("send_queue", &|c| c.send_queue = u32::MAX);
            add("rtt_us", &|c| info(c).rtt_us = u32::MAX);
            add("rto_us", &|c| info(c).rto_us = 4_000_000_000);
            add("snd_cwnd", &|c| info(c).snd_cwnd = u32::MAX);
            add("bytes_acked", &|c| info(c).bytes_acked = Some(u64::MAX));
            add("bytes_received", &|c| {
                info(c).bytes_received = Some(u64::MAX - 5)
            });
            add("delivery_rate", &|c| info(c).delivery_rate = Some(u64::MAX));
            add("busy_time_us", &|c| info(c).busy_time_us = Some(u64::MAX));
            add("over busy_time_us", &|c| {
                info(c).rwnd_limited_us = Some(800_000_000)
            });
            let Event::Connections(mut bad_pid) = base.clone() else {
                unreachable!()
            };
            bad_pid.procs[0].pid = 5_000_000;
            absurd.push(("pid", Event::Connections(bad_pid)));
            // The /proc/net/tcp fallback: no tcp_info, an IPv6 pair.
            let mut fallback = connections_event(4243);
            if let Event::Connections(c) = &mut fallback {
                let conn = &mut c.procs[0].conns[0];
                conn.info = None;
                conn.state = 8;
                conn.local.addr = heapless::Vec::from_slice(&[0xfd; 16]).unwrap();
                conn.remote.addr = heapless::Vec::from_slice(&[0xfe; 16]).unwrap();
            }
            vec![base, fallback]
        }
        Attack::OpenFilesValues => {
            let base = open_files_event(4242);
            let mut add = |why: &'static str, f: &dyn Fn(&mut ProcFiles)| {
                let Event::OpenFiles(mut o) = base.clone() else {
                    unreachable!()
                };
                f(&mut o.procs[0]);
                absurd.push((why, Event::OpenFiles(o)));
            };
            add("pid", &|p| p.pid = 5_000_000);
            add("fd", &|p| p.files[0].fd = u32::MAX);
            add("path", &|p| p.files[0].path = s("relative/a.mkv"));
            add("pos", &|p| p.files[0].pos = u64::MAX);
            add("size", &|p| p.files[1].size = 1 << 63);
            add("no file", &|p| p.files.clear());
            // A deleted temp file, a cut path, read-write.
            let mut other = open_files_event(4243);
            if let Event::OpenFiles(o) = &mut other {
                let f = &mut o.procs[0].files[1];
                f.path = s("/volume2/.a.mkv.XyZ123 (deleted)");
                f.mode = FileMode::ReadWrite;
                o.procs[0].files[0].path = s(".../deep/tail/a.mkv");
                o.procs[0].more = 3;
            }
            vec![base, other]
        }
        _ => Vec::new(),
    };
    (real, absurd)
}

/// Names with escapes, for [`Attack::Names`] (each fits its field's capacity).
pub const EVIL_COMM: &str = "\u{1b}]52;c;aGk=\u{7}"; // OSC 52: writes "hi" to the clipboard
pub const EVIL_TITLE: &str = "nas\u{1b}]0;pwned\u{7}\u{1b}[2J";
pub const EVIL_PATH: &str = "/share/\u{1b}]0;pwned\u{7}\u{202e}vkm.exe";
pub const EVIL_CMDLINE: &str =
    "rsync\u{1b}]52;c;cHduZWQ=\u{7} \u{202e}gpj.exe \u{9b}31m\u{7f} --bwlimit=0";

/// Samples with one absurd value each and the word their rejection must name.
pub fn absurd_values(hello: &Hello) -> Vec<(&'static str, Sample)> {
    let base = nas_sample(3);
    let mut out = Vec::new();
    let mut add = |why: &'static str, f: &dyn Fn(&mut Sample)| {
        let mut s = base.clone();
        f(&mut s);
        out.push((why, s));
    };
    add("swap in", &|s| {
        s.vm.as_mut().unwrap().swap_in_pages = u32::MAX
    });
    add("available", &|s| {
        s.memory.as_mut().unwrap().available_kib = 1_400_000_000_000_000_000 / 1024;
    });
    add("free", &|s| {
        let m = s.memory.as_mut().unwrap();
        m.free_kib = m.total_kib + 1;
    });
    add("weighted_ms", &|s| s.disks[0].weighted_ms = u32::MAX);
    add("ticks in", &|s| {
        s.top[0].utime = u32::MAX;
    });
    add("threads", &|s| s.top[0].threads = u16::MAX);
    add("link speed", &|s| s.nics[0].speed_mbit = u32::MAX);
    add("procs_running", &|s| s.procs_running = u16::MAX);
    add("disk index", &|s| s.disks[0].disk = 60_000);
    add("nic index", &|s| s.nics[0].nic = 60_000);
    add("mount index", &|s| {
        s.mounts
            .push(MountSample {
                mount: 7,
                used_bytes: 1,
                free_bytes: 1,
            })
            .unwrap();
    });
    let n_mounts = hello.mounts.len() as u16;
    add("1 EiB", &|s| {
        s.mounts
            .push(MountSample {
                mount: n_mounts.saturating_sub(1),
                used_bytes: 18_000_000_000_000_000_000,
                free_bytes: 1,
            })
            .unwrap();
    });
    out
}

/// The `Hello` of a hostile agent in `attack` mode (clock: now).
pub fn hostile_hello(attack: Attack) -> Hello {
    let now = wall_ms();
    let mut h = nas_hello(0x0bad_0000 + attack as u64, now - 60_000, 1000);
    h.now_ms = now;
    h.mounts.push(s("/volume1")).ok();
    match attack {
        Attack::Names => {
            h.host_name = s(EVIL_TITLE);
            h.disks[0].name = s("sd\u{1b}[2Ja");
            h.nics[0].name = s("eth\u{202e}0");
            h.mounts[0] = s("/vol\u{9b}1;1H\u{7f}");
            h.kernel_release = s("4.4\u{1b}]52;c;aGk=\u{7}");
        }
        Attack::HelloTicks0 => h.clock_ticks_per_sec = 0,
        Attack::HelloCpus0 => h.cpu_count = 0,
        _ => {}
    }
    h
}

fn rec(seq: u64, time_ms: u64, body: RecordBody) -> Message {
    Message::Record(Record { seq, time_ms, body })
}

fn proc_event(pid: u32, comm: &str, cmdline: &str, start: bool) -> Event {
    let Event::ProcessExit(mut x) = exit_event(pid) else {
        unreachable!("exit_event makes a ProcessExit")
    };
    x.process.comm = s(comm);
    x.process.cmdline = s(cmdline);
    x.lifetime_ms = 2000;
    x.cpu_ticks = 10;
    if start {
        Event::ProcessStart(x.process)
    } else {
        Event::ProcessExit(x)
    }
}

/// What a hostile agent sends after `Resume` (records numbered from 1).
pub fn hostile_script(attack: Attack, hello: &Hello) -> Vec<Message> {
    let t0 = hello.now_ms - 30_000;
    let at = |seq: u64| t0 + seq * 1000;
    let sample = |seq: u64| RecordBody::Sample(nas_sample(seq));
    let mut out = Vec::new();
    match attack {
        Attack::Names | Attack::Formulas => {
            let names: Vec<String> = if attack == Attack::Names {
                vec![
                    EVIL_COMM.into(),
                    "smb\u{202e}d".into(),
                    "x\u{7f}\u{85}y".into(),
                ]
            } else {
                ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)"]
                    .map(String::from)
                    .to_vec()
            };
            let mut seq = 1;
            for round in 0..5u64 {
                let mut smp = nas_sample(seq);
                for (k, n) in names.iter().enumerate() {
                    smp.top[k].comm = s(n);
                    smp.top[k].cmdline = Some(s(EVIL_CMDLINE));
                }
                if let Some(t) = smp.top[0].hottest_thread.as_mut() {
                    t.comm = Some(s(&names[0]));
                }
                out.push(rec(seq, at(seq), RecordBody::Sample(smp)));
                seq += 1;
                let ev = proc_event(
                    4000 + round as u32,
                    &names[round as usize % names.len()],
                    EVIL_CMDLINE,
                    round % 2 == 0,
                );
                out.push(rec(seq, at(seq), RecordBody::Event(ev)));
                seq += 1;
            }
            // Names only: the file a copy is on, its path and process with escapes, moving.
            for k in 0..2 * u64::from(attack == Attack::Names) {
                let Event::OpenFiles(mut o) = open_files_event(4100) else {
                    unreachable!("open_files_event makes an OpenFiles")
                };
                o.procs[0].comm = s(&names[0]);
                let f = &mut o.procs[0].files[0];
                f.path = s(EVIL_PATH);
                f.pos += k * 100_000_000;
                out.push(rec(seq, at(seq), RecordBody::Event(Event::OpenFiles(o))));
                seq += 1;
            }
        }
        Attack::Times => {
            for seq in 1..=8 {
                let t = match seq {
                    2 => u64::MAX,
                    4 => 0,
                    6 => hello.now_ms + 365 * 86_400_000,
                    _ => at(seq),
                };
                out.push(rec(seq, t, sample(seq)));
            }
        }
        Attack::Values => {
            out.push(rec(1, at(1), sample(1)));
            let mut seq = 2;
            for (_, smp) in absurd_values(hello) {
                out.push(rec(seq, at(seq), RecordBody::Sample(smp)));
                seq += 1;
            }
            out.push(rec(seq, at(seq), sample(seq)));
        }
        Attack::GoneMax | Attack::GoneHalf => {
            let to_seq = if attack == Attack::GoneMax {
                u64::MAX
            } else {
                (1 << 63) - 1
            };
            out.push(Message::Gone(Gone {
                instance_id: hello.instance_id,
                from_seq: 1,
                to_seq,
            }));
            out.push(rec(to_seq.wrapping_add(1), at(1), sample(1)));
            out.push(rec(to_seq.wrapping_add(2), at(2), sample(2)));
        }
        Attack::Flood => {
            out.push(rec(1, at(1), sample(1)));
            let mut seq = 2;
            for k in 0..20_000u32 {
                let ev = proc_event(10_000 + k, "fork", "fork bomb", k % 2 == 0);
                out.push(rec(seq, at(1) + 500, RecordBody::Event(ev)));
                seq += 1;
            }
            for _ in 0..3 {
                out.push(rec(seq, at(seq), sample(seq)));
                seq += 1;
            }
        }
        Attack::HelloTicks0 | Attack::HelloCpus0 => {
            out.push(rec(1, at(1), sample(1)));
        }
        Attack::ProcessEndValues
        | Attack::KernelMessageValues
        | Attack::ConnectionsValues
        | Attack::OpenFilesValues => {
            // Sample, the real events, the absurd ones, sample: each in its own interval so
            // the flood cap stays out of the way.
            let (real, absurd) = event_cases(attack);
            out.push(rec(1, at(1), sample(1)));
            let mut seq = 2;
            for ev in real.into_iter().chain(absurd.into_iter().map(|(_, e)| e)) {
                out.push(rec(seq, at(seq), RecordBody::Event(ev)));
                seq += 1;
            }
            out.push(rec(seq, at(seq), sample(seq)));
        }
    }
    out
}

/// A fake agent on 127.0.0.1 that completes the real handshake, then follows an [`Attack`]
/// script and keeps the connection open (a `KeepAlive` a second) until dropped.
pub struct HostileAgent {
    pub addr: String,
    pub stop: Arc<AtomicBool>,
    /// Connections accepted so far.
    pub connections: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HostileAgent {
    pub fn start(token: Vec<u8>, attack: Attack) -> HostileAgent {
        Self::start_on("127.0.0.1:0", token, attack)
    }

    /// On a given address (e.g. a fixed port for scripts).
    pub fn start_on(addr: &str, token: Vec<u8>, attack: Attack) -> HostileAgent {
        let l = TcpListener::bind(addr).expect("bind");
        let (addr, stop, connections, thread) = listen(l, move |c, stop| {
            let _ = serve_attack(c, &token, attack, stop);
        });
        HostileAgent {
            addr,
            stop,
            connections,
            thread: Some(thread),
        }
    }
}

impl Drop for HostileAgent {
    fn drop(&mut self) {
        stop_and_join(&self.stop, &mut self.thread);
    }
}

fn serve_attack(
    mut c: TcpStream,
    token: &[u8],
    attack: Attack,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut hello = hostile_hello(attack);
    let script = hostile_script(attack, &hello);
    let newest = script
        .iter()
        .filter_map(|m| match m {
            Message::Record(r) => Some(r.seq),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    hello.oldest_seq = 1;
    hello.newest_seq = newest.min(i64::MAX as u64);
    let Some((r, mut seal)) = agent_handshake(&mut c, token, &hello, [11u8; 32])? else {
        return Ok(());
    };
    // A collector that already holds part of the script resumes after it.
    let after = if r.instance_id == hello.instance_id {
        r.after_seq
    } else {
        0
    };
    let mut w = std::io::BufWriter::new(c.try_clone()?);
    let mut buf = vec![0u8; 70_000];
    for m in &script {
        if let Message::Record(rec) = m
            && rec.seq <= after
            && after > 0
        {
            continue;
        }
        let n = seal.encode(m, &mut buf)?;
        w.write_all(&buf[..n])?;
    }
    w.flush()?;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(200));
        send(
            &mut c,
            &Message::KeepAlive(KeepAlive { time_ms: wall_ms() }),
            Some(&mut seal),
        )?;
    }
    Ok(())
}
