//! The fake agent: a real handshake, then a history of records served from any seq on.

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

use super::samples::*;

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
pub(super) fn listen(
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

pub(super) fn stop_and_join(stop: &AtomicBool, thread: &mut Option<std::thread::JoinHandle<()>>) {
    stop.store(true, Ordering::SeqCst);
    if let Some(t) = thread.take() {
        t.join().ok();
    }
}

pub(super) fn send(
    c: &mut TcpStream,
    m: &Message,
    seal: Option<&mut AgentSeal>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 70_000];
    let n = match seal {
        Some(s) => s.encode(m, &mut buf)?,
        None => encode_frame(m, &mut buf).map_err(std::io::Error::other)?,
    };
    c.write_all(&buf[..n])
}

pub(super) fn recv(c: &mut TcpStream, rx: Option<&mut FrameMac>) -> std::io::Result<Message> {
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
) -> std::io::Result<Option<(nasprobe_proto::ResumeWith, AgentSeal)>> {
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
pub(super) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
