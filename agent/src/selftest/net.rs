//! `nasprobe test net` on the agents, bound to its run ([`nasprobe_proto::test_stream`]): the
//! receiver speaks first on every stream with a proof of the run key and admits only the
//! announced streams, each opened with its MAC within [`HEADER_DEADLINE`]; the sender writes
//! nothing to a peer that did not prove the run key, and says one same sentence whether the
//! port refused, timed out or answered something else (so it scans no ports).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nasprobe_proto::test_stream::{
    CHALLENGE_LEN, RECEIVER_HELLO_LEN, STREAM_HEADER_LEN, check_receiver_hello,
    check_stream_header, receiver_hello, stream_header,
};
use nasprobe_proto::{
    MAX_NET_RUNS, MAX_NET_STREAMS, NetReceiveRun, NetRun, NetSendRun, TestResult,
};

use super::base::{MAX_TEST_TIME, failed, us, wall_ms};

/// What a sender writes at a time.
const NET_CHUNK: usize = 128 << 10;
/// Socket timeouts of the test streams: how soon a worker notices a cancel or a dead peer.
const NET_IO_TIMEOUT: Duration = Duration::from_millis(500);
/// The one deadline of a test connection's opening, both sides: connect, the receiver's proof
/// and the sender's header. A LAN round trip is under 10 ms; 3 s leaves a loaded NAS room.
pub(crate) const HEADER_DEADLINE: Duration = Duration::from_secs(3);
/// Connections a receiver holds before their header arrived. When it is full the oldest goes
/// (it had the longest time): slow connections without the run key cannot keep a sender out,
/// whose header follows the receiver's proof within a round trip.
const MAX_PENDING: usize = 16;
/// The receiver ends this long after its last stream closed.
const RECEIVE_IDLE_END: Duration = Duration::from_secs(2);
/// What the sender says when the peer was not this run's receiver, however it failed.
pub(crate) const NOT_THE_RECEIVER: &str =
    "no nasprobe receiver of this run answered at the test address within 3 s";

/// What makes a request impossible before it starts (see [`super::precheck`]).
pub(super) fn precheck_receive(n: &NetReceiveRun) -> Result<(), String> {
    if n.seconds == 0 || Duration::from_secs(u64::from(n.seconds)) > MAX_TEST_TIME {
        return Err(format!("a test lasts 1..{} s", MAX_TEST_TIME.as_secs()));
    }
    check_streams(&n.streams)
}

pub(super) fn precheck_send(n: &NetSendRun) -> Result<(), String> {
    n.to.as_str()
        .parse::<SocketAddr>()
        .map_err(|_| "the receiver's address is not ADDR:PORT".to_string())?;
    let total = u64::from(n.seconds) * n.streams.len() as u64;
    if n.seconds == 0 || total > MAX_TEST_TIME.as_secs() {
        return Err(format!(
            "runs x seconds must be 1..{} s (asked {} x {} s)",
            MAX_TEST_TIME.as_secs(),
            n.streams.len(),
            n.seconds
        ));
    }
    check_streams(&n.streams)
}

fn check_streams(streams: &[u8]) -> Result<(), String> {
    if streams.is_empty() {
        return Err("at least one run".into());
    }
    if streams.iter().any(|&k| k == 0 || k > MAX_NET_STREAMS) {
        return Err(format!("1..{MAX_NET_STREAMS} streams a run"));
    }
    Ok(())
}

/// One run as the receiver counts it.
#[derive(Debug, Default, Clone, Copy)]
struct RunCount {
    streams: u8,
    bytes: u64,
    first: Option<(Instant, u64)>,
    last: Option<(Instant, u64)>,
}

fn run_out(c: &RunCount) -> NetRun {
    let (micros, started_ms, ended_ms) = match (c.first, c.last) {
        (Some((a, am)), Some((b, bm))) => (us(b.saturating_duration_since(a)), am, bm),
        _ => (0, 0, 0),
    };
    NetRun {
        streams: c.streams,
        bytes: c.bytes,
        micros,
        retransmits: 0,
        started_ms,
        ended_ms,
    }
}

/// A connection to the test port whose header has not arrived yet.
struct Pending {
    stream: TcpStream,
    challenge: [u8; CHALLENGE_LEN],
    head: [u8; STREAM_HEADER_LEN],
    got: usize,
    since: Instant,
}

enum Opening {
    More,
    Bad,
    Header(u8, u8),
}

impl Pending {
    /// Reads what came of the header (never past it: the data is the stream thread's).
    fn read(&mut self, key: &[u8; 32]) -> Opening {
        match self.stream.read(&mut self.head[self.got..]) {
            Ok(0) => Opening::Bad,
            Ok(k) => {
                self.got += k;
                if self.got < STREAM_HEADER_LEN {
                    return Opening::More;
                }
                match check_stream_header(key, &self.challenge, &self.head) {
                    Some((run, stream)) => Opening::Header(run, stream),
                    None => Opening::Bad,
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Opening::More,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Opening::More,
            Err(_) => Opening::Bad,
        }
    }
}

/// The streams announced and those admitted (one bit per stream of each run).
struct Admission {
    announced: heapless::Vec<u8, MAX_NET_RUNS>,
    admitted: [u32; MAX_NET_RUNS],
}

impl Admission {
    /// Admits stream `stream` of run `run` once, if it was announced.
    fn admit(&mut self, run: u8, stream: u8) -> bool {
        let (run, stream) = (usize::from(run), u32::from(stream));
        let Some(&k) = self.announced.get(run) else {
            return false;
        };
        if stream >= u32::from(k) || self.admitted[run] & (1 << stream) != 0 {
            return false;
        }
        self.admitted[run] |= 1 << stream;
        true
    }

    fn count(&self) -> u32 {
        self.admitted.iter().map(|m| m.count_ones()).sum()
    }

    fn total(&self) -> u32 {
        self.announced.iter().map(|&k| u32::from(k)).sum()
    }
}

/// Accepts what waits on the listener: each connection gets the receiver's proof at once and
/// joins `pending` (the oldest leaves when it is full).
fn accept_pending(listener: &TcpListener, key: &[u8; 32], pending: &mut Vec<Pending>) {
    loop {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut challenge = [0u8; CHALLENGE_LEN];
        if crate::token::random_bytes(&mut challenge).is_err() || s.set_nonblocking(true).is_err() {
            continue;
        }
        // 32 bytes on a fresh socket: the send buffer takes them whole.
        if !matches!(
            s.write(&receiver_hello(key, &challenge)),
            Ok(RECEIVER_HELLO_LEN)
        ) {
            continue;
        }
        if pending.len() == MAX_PENDING
            && let Some(oldest) = (0..pending.len()).min_by_key(|&i| pending[i].since)
        {
            pending.swap_remove(oldest);
        }
        pending.push(Pending {
            stream: s,
            challenge,
            head: [0; STREAM_HEADER_LEN],
            got: 0,
            since: Instant::now(),
        });
    }
}

/// The receiving side: counts per run what the admitted streams bring until the sender is done
/// (or the time is up, the byte cap reached, a cancel).
pub(super) fn receive(
    n: &NetReceiveRun,
    key: &[u8; 32],
    listener: TcpListener,
    cancel: &AtomicBool,
) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(u64::from(n.seconds) + 5);
    let counts = Arc::new(Mutex::new([RunCount::default(); MAX_NET_RUNS]));
    let total = Arc::new(AtomicU64::new(0));
    let mut admission = Admission {
        announced: n.streams.clone(),
        admitted: [0; MAX_NET_RUNS],
    };
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut pending: Vec<Pending> = Vec::with_capacity(MAX_PENDING);
    let mut last_active = Instant::now();
    // Tells the stream threads to stop (a cancel, the time is up).
    let stop = Arc::new(AtomicBool::new(false));
    if listener.set_nonblocking(true).is_err() {
        return failed("cannot poll the test port");
    }
    loop {
        let now = Instant::now();
        threads.retain(|t| !t.is_finished());
        if cancel.load(Ordering::SeqCst) || now >= deadline {
            break;
        }
        let admitted = admission.count();
        if admitted == admission.total() && threads.is_empty() {
            break;
        }
        if !threads.is_empty() {
            last_active = now;
        } else if admitted > 0 && now.duration_since(last_active) >= RECEIVE_IDLE_END {
            break;
        }
        pending.retain(|p| now.duration_since(p.since) < HEADER_DEADLINE);
        let readable: Vec<bool> = {
            let mut fds = Vec::with_capacity(1 + pending.len());
            fds.push(nix::poll::PollFd::new(
                listener.as_fd(),
                nix::poll::PollFlags::POLLIN,
            ));
            for p in &pending {
                fds.push(nix::poll::PollFd::new(
                    p.stream.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                ));
            }
            // 200 ms: the end conditions and header deadlines above are checked that often.
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(200u16));
            fds.iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect()
        };
        // Backwards: swap_remove brings in an entry already seen.
        for i in (0..pending.len()).rev() {
            if !readable[i + 1] {
                continue;
            }
            match pending[i].read(key) {
                Opening::More => {}
                Opening::Bad => {
                    pending.swap_remove(i);
                }
                Opening::Header(run, stream) => {
                    let p = pending.swap_remove(i);
                    if !admission.admit(run, stream) {
                        continue;
                    }
                    if let Ok(mut c) = counts.lock() {
                        let r = &mut c[usize::from(run)];
                        r.streams = r.streams.saturating_add(1);
                    }
                    let (counts, total, stop) = (counts.clone(), total.clone(), stop.clone());
                    let (max, run) = (n.max_bytes, usize::from(run));
                    if let Ok(t) =
                        std::thread::Builder::new()
                            .name("test-rx".into())
                            .spawn(move || {
                                count_stream(p.stream, run, max, &counts, &total, deadline, &stop)
                            })
                    {
                        threads.push(t);
                    }
                }
            }
        }
        if readable[0] {
            accept_pending(&listener, key, &mut pending);
        }
    }
    drop(listener);
    drop(pending);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().ok();
    }
    let counts = *counts.lock().expect("not poisoned");
    let mut runs = heapless::Vec::new();
    for c in counts
        .iter()
        .take(admission.announced.len())
        .take_while(|c| c.streams > 0)
    {
        let _ = runs.push(run_out(c));
    }
    if runs.is_empty() {
        return failed("no stream of the sender arrived");
    }
    TestResult::Net(runs)
}

/// Counts what one admitted stream of run `run` brings.
fn count_stream(
    mut s: TcpStream,
    run: usize,
    max: u64,
    counts: &Mutex<[RunCount; MAX_NET_RUNS]>,
    total: &AtomicU64,
    deadline: Instant,
    stop: &AtomicBool,
) {
    s.set_nonblocking(false).ok();
    s.set_read_timeout(Some(NET_IO_TIMEOUT)).ok();
    let mut buf = vec![0u8; NET_CHUNK];
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                let now = (Instant::now(), wall_ms());
                if let Ok(mut c) = counts.lock() {
                    let r = &mut c[run];
                    r.bytes += k as u64;
                    r.first.get_or_insert(now);
                    r.last = Some(now);
                }
                if total.fetch_add(k as u64, Ordering::Relaxed) + k as u64 > max {
                    break;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
}

/// Opens stream `stream` of run `run` to `to`: nothing is written until the peer proved the
/// run key. A failure of any kind takes the whole [`HEADER_DEADLINE`] (a refused port answers
/// as late as a silent one).
fn open_stream(to: &SocketAddr, key: &[u8; 32], run: u8, stream: u8) -> Option<TcpStream> {
    let t0 = Instant::now();
    let s = try_open(to, key, run, stream, t0);
    if s.is_none() {
        std::thread::sleep(HEADER_DEADLINE.saturating_sub(t0.elapsed()));
    }
    s
}

fn try_open(
    to: &SocketAddr,
    key: &[u8; 32],
    run: u8,
    stream: u8,
    t0: Instant,
) -> Option<TcpStream> {
    let mut s = TcpStream::connect_timeout(to, HEADER_DEADLINE).ok()?;
    let mut hello = [0u8; RECEIVER_HELLO_LEN];
    let mut got = 0;
    while got < RECEIVER_HELLO_LEN {
        let left = HEADER_DEADLINE.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return None;
        }
        s.set_read_timeout(Some(left)).ok()?;
        match s.read(&mut hello[got..]) {
            Ok(0) => return None,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let challenge = check_receiver_hello(key, &hello)?;
    s.set_write_timeout(Some(NET_IO_TIMEOUT)).ok()?;
    s.write_all(&stream_header(key, &challenge, run, stream))
        .ok()?;
    Some(s)
}

/// The bytes a sender sends: they do not compress.
fn payload() -> Arc<[u8]> {
    let mut buf = vec![0u8; NET_CHUNK];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for c in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    buf.into()
}

/// The sending side: run by run, `streams` connections to the receiver, each sending for
/// `seconds` (or up to the byte cap), then the sockets' retransmissions from TCP_INFO.
/// `began` is set once a stream is open to the receiver (before, the request used nothing).
pub(super) fn send(
    n: &NetSendRun,
    key: &[u8; 32],
    cancel: &AtomicBool,
    began: &AtomicBool,
) -> TestResult {
    let Ok(to) = n.to.as_str().parse::<SocketAddr>() else {
        return failed("bad receiver address");
    };
    let mut runs = heapless::Vec::new();
    let buf = payload();
    let sent_total = Arc::new(AtomicU64::new(0));
    for (i, &k) in n.streams.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) {
            return failed("cancelled: the collector went away");
        }
        let run_for = Duration::from_secs(u64::from(n.seconds));
        let mut streams = Vec::new();
        for j in 0..k {
            match open_stream(&to, key, i as u8, j) {
                Some(s) => {
                    began.store(true, Ordering::SeqCst);
                    streams.push(s);
                }
                None => return failed(NOT_THE_RECEIVER),
            }
        }
        let started_ms = wall_ms();
        let t0 = Instant::now();
        let end = t0 + run_for;
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<JoinHandle<(u64, u32)>> = streams
            .into_iter()
            .filter_map(|s| {
                let (buf, stop, total, max) =
                    (buf.clone(), stop.clone(), sent_total.clone(), n.max_bytes);
                std::thread::Builder::new()
                    .name("test-tx".into())
                    .spawn(move || send_stream(s, &buf, end, &stop, &total, max))
                    .ok()
            })
            .collect();
        // The cancel flag is the caller's: watch it while the streams send.
        while threads.iter().any(|t| !t.is_finished()) {
            if cancel.load(Ordering::SeqCst) {
                stop.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let (mut bytes, mut retrans) = (0u64, 0u32);
        for t in threads {
            if let Ok((b, r)) = t.join() {
                bytes += b;
                retrans = retrans.saturating_add(r);
            }
        }
        let _ = runs.push(NetRun {
            streams: k,
            bytes,
            micros: us(t0.elapsed()),
            retransmits: retrans,
            started_ms,
            ended_ms: wall_ms(),
        });
        if cancel.load(Ordering::SeqCst) {
            return failed("cancelled: the collector went away");
        }
    }
    TestResult::Net(runs)
}

/// One stream's sending until `end`, a stop or the byte cap: bytes sent and retransmissions.
fn send_stream(
    mut s: TcpStream,
    buf: &[u8],
    end: Instant,
    stop: &AtomicBool,
    total: &AtomicU64,
    max: u64,
) -> (u64, u32) {
    let mut sent = 0u64;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        match s.write(buf) {
            Ok(w) => {
                sent += w as u64;
                if total.fetch_add(w as u64, Ordering::Relaxed) + w as u64 > max {
                    break;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    s.shutdown(std::net::Shutdown::Write).ok();
    (sent, crate::sys::socket::total_retransmits(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_announced_streams_are_admitted_once() {
        let mut a = Admission {
            announced: heapless::Vec::from_slice(&[1, 4]).unwrap(),
            admitted: [0; MAX_NET_RUNS],
        };
        assert!(a.admit(0, 0));
        assert!(!a.admit(0, 0), "twice");
        assert!(!a.admit(0, 1), "run 0 has one stream");
        assert!(a.admit(1, 3));
        assert!(!a.admit(1, 4));
        assert!(!a.admit(2, 0), "no third run");
        assert!(!a.admit(255, 255));
        assert_eq!((a.count(), a.total()), (2, 5));
    }
}
