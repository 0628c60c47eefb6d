//! The hostile agent: a real handshake, then one attack (escapes in names, absurd values,
//! floods, broken frames) to show what the collector refuses and how it says so.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nasprobe_proto::*;

use super::fake::{agent_handshake, listen, send, stop_and_join, wall_ms};
use super::samples::*;

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
