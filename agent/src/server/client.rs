//! The collectors' sessions: a [`Client`] is a socket, a cursor into the history ring and a
//! small partial-write buffer; the server's methods here accept, read, answer and drop them
//! (handshake, resume, the tests a collector asks for, keep-alives and stalls).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nasprobe_proto::frame::{
    LEN_PREFIX, MAX_CLIENT_FRAME_LEN, decode_frame, decode_sealed_frame, encode_sealed_frame,
    frame_needs,
};
use nasprobe_proto::handshake::{AgentAction, AgentHandshake, HandshakeError};
use nasprobe_proto::session::{FrameMac, MAC_LEN};
use nasprobe_proto::{FrameError, Gone, KeepAlive, Message, encode_frame, version_advice};
use nix::poll::PollFlags;

use super::limiter::{AUTH_DELAY_FIRST, AUTH_DELAY_MAX, AUTH_FAIL_LIMIT, AUTH_FAIL_WINDOW};
use super::{KEEPALIVE_AFTER, MAX_OUT_FRAME, Server, refused};
use crate::ring::Ring;
use crate::sampler::wall_ms;

/// Frames a client may send per second, in every state from its first byte on (before and
/// after `AuthOk`, before `Resume`, streaming, while its test runs): a collector needs one
/// `Auth`, one `Resume` or `TestRequest` and a `KeepAlive` in a while; more and it is dropped.
pub(crate) const CLIENT_FRAMES_PER_S: u32 = 20;
/// Frames of one client acted on per round of the poll loop; the rest wait in its input buffer
/// for the next round (polled with a zero timeout), so that no peer holds the loop, and the
/// sampling tick, however fast it sends. Four: a handshake needs two, and the budget above
/// drops a flooder within six rounds.
pub(crate) const FRAMES_PER_ROUND: usize = 4;
/// How long a connection may wait for its test's result: the test's own bound and the time a
/// last `fdatasync` or stream may take to end; then it is dropped (and its test cancelled).
pub(crate) const TESTING_DEADLINE: Duration =
    crate::selftest::MAX_TEST_TIME.saturating_add(Duration::from_secs(20));
/// Per-client partial-write buffer: control frames and the tail of a half-sent record.
const OUT_CAP: usize = 2 * MAX_OUT_FRAME;
const IN_CAP: usize = LEN_PREFIX + MAX_CLIENT_FRAME_LEN + MAC_LEN;
/// History frames sealed and handed to one `writev` (two iovecs each: frame, MAC); 64 frames
/// of a 1 Hz agent are a minute of backlog, and 128 iovecs are far under IOV_MAX (1024).
const SEAL_BATCH: usize = 64;
/// Room for one encoded `Gone` (three varints of at most 10 bytes, tags, length prefix).
const GONE_FRAME_CAP: usize = 64;

/// One connected collector.
pub(super) struct Client {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
    /// Where the handshake is (streaming once `Resume` has arrived).
    pub(super) hs: AgentHandshake,
    /// Handshake deadline (until `Resume` or a `TestRequest` has arrived), then the test's
    /// ([`TESTING_DEADLINE`]) while one runs for it.
    pub(super) deadline: Instant,
    pub(super) inbuf: [u8; IN_CAP],
    pub(super) in_len: usize,
    pub(super) out: Vec<u8>,
    pub(super) out_pos: usize,
    /// Next record to send.
    pub(super) next_seq: u64,
    /// Its offset in the ring, once known (`None` while it is not written yet).
    pub(super) next_off: Option<usize>,
    pub(super) last_send: Instant,
    /// Last time the socket accepted bytes or there was nothing to send.
    pub(super) last_progress: Instant,
    pub(super) records_sent: u64,
    /// Frames received since `frames_since`, in every state (at most [`CLIENT_FRAMES_PER_S`]
    /// a second).
    pub(super) frames: u32,
    pub(super) frames_since: Instant,
    /// Whole frames wait in `inbuf` (the round's [`FRAMES_PER_ROUND`] were used): read them at
    /// the next round even if the socket has nothing new.
    pub(super) more: bool,
    /// A wrong proof over the limit: refused at `deadline`, input ignored until then.
    pub(super) refusing: bool,
    /// MACs of the frames to the collector (after `AuthOk`) and from it (after `Auth`).
    pub(super) tx_mac: Option<FrameMac>,
    pub(super) rx_mac: Option<FrameMac>,
    /// The newer record kinds this collector decodes (`ResumeWith::accepts`; none after a plain
    /// `Resume`): a record of another kind goes to it as a one-record `Gone` of `instance_id`.
    pub(super) accepts: u32,
    pub(super) instance_id: u64,
}

impl Client {
    /// A connection that has sent nothing yet: its handshake awaits `Auth` until `deadline`.
    pub(super) fn new(
        stream: TcpStream,
        peer: SocketAddr,
        agent_nonce: [u8; 32],
        deadline: Instant,
        now: Instant,
    ) -> Client {
        Client {
            stream,
            peer,
            hs: AgentHandshake::new(agent_nonce),
            deadline,
            inbuf: [0u8; IN_CAP],
            in_len: 0,
            out: Vec::with_capacity(OUT_CAP),
            tx_mac: None,
            rx_mac: None,
            accepts: 0,
            instance_id: 0,
            out_pos: 0,
            next_seq: 0,
            next_off: None,
            last_send: now,
            last_progress: now,
            records_sent: 0,
            frames: 0,
            frames_since: now,
            more: false,
            refusing: false,
        }
    }

    pub(super) fn pending(&self, ring: &Ring) -> bool {
        self.out_pos < self.out.len() || (self.hs.is_streaming() && self.next_seq < ring.next_seq())
    }

    /// Queues one control frame. Fails (the client is dropped) only if the partial-write buffer
    /// cannot take it, which needs a client that reads nothing.
    pub(super) fn queue(&mut self, msg: &Message, scratch: &mut [u8]) -> Result<(), String> {
        let n = match self.tx_mac.as_mut() {
            Some(mac) => encode_sealed_frame(msg, scratch, mac),
            None => encode_frame(msg, scratch),
        }
        .map_err(|e| format!("encoding a reply: {e}"))?;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        if self.out.len() + n > OUT_CAP {
            return Err("send buffer full".into());
        }
        self.out.extend_from_slice(&scratch[..n]);
        Ok(())
    }

    /// Writes what is pending: the partial-write buffer first, then whole runs of ring frames.
    /// `Err` means drop the client.
    /// Queues `Gone` for the record at `off` (the next one) instead of the record, and steps
    /// over it.
    fn skip_as_gone(&mut self, ring: &Ring, off: usize) -> Result<(), String> {
        let seq = self.next_seq;
        let gone = Message::Gone(Gone {
            instance_id: self.instance_id,
            from_seq: seq,
            to_seq: seq,
        });
        let mut buf = [0u8; GONE_FRAME_CAP];
        self.queue(&gone, &mut buf)?;
        self.next_seq += 1;
        self.next_off = (self.next_seq < ring.next_seq()).then(|| ring.next_off(off));
        Ok(())
    }

    pub(super) fn flush(&mut self, ring: &Ring, now: Instant) -> Result<(), String> {
        loop {
            if self.out_pos < self.out.len() {
                match self.stream.write(&self.out[self.out_pos..]) {
                    Ok(0) => return Err("connection closed while sending".into()),
                    Ok(n) => {
                        self.out_pos += n;
                        self.last_send = now;
                        self.last_progress = now;
                        if self.out_pos == self.out.len() {
                            self.out.clear();
                            self.out_pos = 0;
                        }
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("send failed: {e}")),
                }
            }
            if !self.hs.is_streaming() || self.next_seq >= ring.next_seq() {
                self.last_progress = now;
                return Ok(());
            }
            if !ring.holds(self.next_seq) {
                return Err(format!(
                    "fell behind: record {} was overwritten before it could be sent \
                     (ring holds {}..); it will resume",
                    self.next_seq,
                    ring.oldest_seq()
                ));
            }
            let Some(mac) = self.tx_mac.as_mut() else {
                return Err("streaming before the handshake sealed the connection".into());
            };
            let off = match self.next_off {
                Some(o) => o,
                None => ring.find(self.next_seq).unwrap_or(0),
            };
            // The next frames of the shared ring, each followed by this client's MAC of it.
            let mut offs = [0usize; SEAL_BATCH];
            let mut tags = [[0u8; MAC_LEN]; SEAL_BATCH];
            let mut count = ((ring.next_seq() - self.next_seq) as usize).min(SEAL_BATCH);
            let missing = nasprobe_proto::accepts::ALL & !self.accepts;
            let mut o = off;
            for i in 0..count {
                if i > 0 {
                    o = ring.next_off(o);
                }
                if missing != 0 && frame_needs(ring.frame_at(o)) & missing != 0 {
                    count = i;
                    break;
                }
                offs[i] = o;
                tags[i] = mac.tag_at(mac.counter() + i as u64, ring.frame_at(o));
            }
            if count == 0 {
                // The next record is of a kind this collector cannot decode: it gets that
                // seq as gone, and the stream goes on contiguous.
                self.skip_as_gone(ring, off)?;
                continue;
            }
            let mut iov = [io::IoSlice::new(&[]); 2 * SEAL_BATCH];
            for i in 0..count {
                iov[2 * i] = io::IoSlice::new(ring.frame_at(offs[i]));
                iov[2 * i + 1] = io::IoSlice::new(&tags[i]);
            }
            let n = match self.stream.write_vectored(&iov[..2 * count]) {
                Ok(0) => return Err("connection closed while sending".into()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.next_off = Some(off);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("send failed: {e}")),
            };
            self.last_send = now;
            self.last_progress = now;
            // Step over the frames written; one written in part leaves its tail and MAC in `out`.
            let mut at = 0usize;
            let mut started = 0usize;
            while started < count && at < n {
                let frame = ring.frame_at(offs[started]);
                let end = at + frame.len() + MAC_LEN;
                if end > n {
                    self.out.clear();
                    let from = n - at;
                    if from < frame.len() {
                        self.out.extend_from_slice(&frame[from..]);
                        self.out.extend_from_slice(&tags[started]);
                    } else {
                        self.out
                            .extend_from_slice(&tags[started][from - frame.len()..]);
                    }
                    self.out_pos = 0;
                }
                at = end;
                started += 1;
            }
            mac.advance(started as u64);
            self.next_seq += started as u64;
            self.records_sent += started as u64;
            self.next_off =
                (self.next_seq < ring.next_seq()).then(|| ring.next_off(offs[started - 1]));
        }
    }
}

impl Server {
    pub(super) fn flush_streaming(&mut self, now: Instant) {
        for slot in 0..self.clients.len() {
            let Some(c) = self.clients[slot].as_mut() else {
                continue;
            };
            if !c.hs.is_streaming() {
                continue;
            }
            if let Err(reason) = c.flush(&self.ring, now) {
                self.drop_client(slot, &reason, log::Level::Warn);
            }
        }
    }

    pub(super) fn drop_client(&mut self, slot: usize, reason: &str, level: log::Level) {
        if let Some(t) = self.test.as_ref().filter(|t| t.slot == slot) {
            // The collector went away: the test stops and deletes its file; its end is
            // collected when the thread says it is done.
            t.cancel();
        }
        if let Some(c) = self.clients[slot].take() {
            log::log!(
                level,
                "client {}: closed: {reason} ({} records sent)",
                c.peer,
                c.records_sent
            );
        }
    }

    pub(super) fn accept_all(&mut self, now: Instant) {
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE, ENOBUFS...: the listener stays readable, so stop polling it for a
                    // second instead of spinning.
                    log::warn!("accept failed: {e}; pausing accepts for 1 s");
                    self.accept_paused_until = Some(now + Duration::from_secs(1));
                    return;
                }
            };
            if let Err(e) = stream.set_nonblocking(true) {
                log::warn!("client {peer}: closed: set_nonblocking: {e}");
                continue;
            }
            let _ = stream.set_nodelay(true);
            let Some(slot) = self.clients.iter().position(|c| c.is_none()) else {
                let reason = format!(
                    "too many clients (at most {}, see --max-clients)",
                    self.limits.max_clients
                );
                self.refuse_now(stream, peer, &reason, log::Level::Warn);
                continue;
            };
            if self.limits.client_sndbuf > 0 {
                let _ = nix::sys::socket::setsockopt(
                    &stream,
                    nix::sys::socket::sockopt::SndBuf,
                    &self.limits.client_sndbuf,
                );
            }
            let mut nonce = [0u8; 32];
            if let Err(e) = crate::token::random_bytes(&mut nonce) {
                log::error!("client {peer}: closed: /dev/urandom: {e}");
                continue;
            }
            let mut c = Client::new(
                stream,
                peer,
                nonce,
                now + self.limits.handshake_timeout,
                now,
            );
            log::debug!("client {peer}: connected");
            let challenge = c.hs.challenge();
            let r = c
                .queue(&challenge, &mut self.scratch)
                .and_then(|_| c.flush(&self.ring, now));
            self.clients[slot] = Some(c);
            if let Err(reason) = r {
                self.drop_client(slot, &reason, log::Level::Info);
            }
        }
    }

    /// Sends `Refused` on a fresh socket (best effort: it fits in any socket buffer) and closes.
    pub(super) fn refuse_now(
        &mut self,
        mut stream: TcpStream,
        peer: SocketAddr,
        reason: &str,
        lvl: log::Level,
    ) {
        log::log!(lvl, "client {peer}: refused: {reason}");
        if let Ok(n) = encode_frame(&refused(reason), &mut self.scratch) {
            let _ = stream.write(&self.scratch[..n]);
        }
    }

    /// Handles readiness of one client.
    pub(super) fn service(&mut self, slot: usize, revents: PollFlags, now: Instant) {
        if revents.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            && let Err((reason, level)) = self.read_client(slot, now)
        {
            self.drop_client(slot, &reason, level);
            return;
        }
        if let Some(c) = self.clients[slot].as_mut()
            && (revents.contains(PollFlags::POLLOUT) || c.pending(&self.ring))
            && let Err(reason) = c.flush(&self.ring, now)
        {
            self.drop_client(slot, &reason, log::Level::Warn);
        }
    }

    /// Reads what the client sent and acts on its whole frames, at most [`FRAMES_PER_ROUND`]
    /// (the rest stay buffered, `more` set); a deadline that passed ends the connection here
    /// too, however much keeps arriving.
    pub(super) fn read_client(
        &mut self,
        slot: usize,
        now: Instant,
    ) -> Result<(), (String, log::Level)> {
        let mut handled = 0usize;
        loop {
            // The frames already buffered first.
            loop {
                let Some(c) = self.clients[slot].as_mut() else {
                    return Ok(());
                };
                if handled == FRAMES_PER_ROUND {
                    c.more = true;
                    return Ok(());
                }
                let got = match c.rx_mac.as_mut() {
                    Some(mac) => {
                        decode_sealed_frame(&c.inbuf[..c.in_len], MAX_CLIENT_FRAME_LEN, mac)
                    }
                    None => decode_frame(&c.inbuf[..c.in_len], MAX_CLIENT_FRAME_LEN),
                };
                let (msg, used) = match got {
                    Ok(Some(x)) => x,
                    Ok(None) => {
                        c.more = false;
                        break;
                    }
                    Err(FrameError::UnsupportedVersion(v)) => {
                        let reason = version_advice(v, "collector", "agent").to_string();
                        self.refuse_and_drop(slot, &reason);
                        return Ok(());
                    }
                    Err(e @ FrameError::BadMac(_)) => {
                        // Nothing more is believed from it, nor sent to it in this session.
                        let reason = e.to_string();
                        self.drop_client(slot, &reason, log::Level::Warn);
                        return Ok(());
                    }
                    Err(e) => {
                        let reason = format!("bad frame: {e}");
                        self.refuse_and_drop(slot, &reason);
                        return Ok(());
                    }
                };
                c.inbuf.copy_within(used..c.in_len, 0);
                c.in_len -= used;
                handled += 1;
                self.on_message(slot, msg, now);
            }
            if self.deadline_passed(slot, now) {
                return Ok(());
            }
            let Some(c) = self.clients[slot].as_mut() else {
                return Ok(());
            };
            if c.in_len == IN_CAP {
                // Cannot happen: a whole frame fits and is consumed above; be safe anyway.
                return Err(("input buffer full".into(), log::Level::Warn));
            }
            let n = match c.stream.read(&mut c.inbuf[c.in_len..]) {
                Ok(0) => {
                    return Err((
                        "connection closed by the collector".into(),
                        log::Level::Info,
                    ));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err((format!("receive failed: {e}"), log::Level::Info)),
            };
            c.in_len += n;
        }
    }

    /// Queues `Refused { reason }`, tries to send it, and drops the client (logged).
    pub(super) fn refuse_and_drop(&mut self, slot: usize, reason: &str) {
        if let Some(c) = self.clients[slot].as_mut()
            && c.queue(&refused(reason), &mut self.scratch).is_ok()
        {
            let _ = c.flush(&self.ring, Instant::now());
        }
        self.drop_client(slot, reason, log::Level::Warn);
    }

    pub(super) fn on_message(&mut self, slot: usize, msg: Message, now: Instant) {
        let Some(c) = self.clients[slot].as_mut() else {
            return;
        };
        // One budget for every frame, whatever the state (a refused proof's wait included).
        if now.duration_since(c.frames_since) >= Duration::from_secs(1) {
            c.frames_since = now;
            c.frames = 0;
        }
        c.frames += 1;
        if c.frames > CLIENT_FRAMES_PER_S {
            let reason =
                format!("sends too much: more than {CLIENT_FRAMES_PER_S} messages in a second");
            self.refuse_and_drop(slot, &reason);
            return;
        }
        if c.refusing {
            return;
        }
        let r = match c.hs.on_message(&self.token, &msg) {
            Ok(AgentAction::Nothing) => return,
            Ok(AgentAction::SendAuthOk(ok)) => {
                self.limiter.succeed(c.peer.ip());
                let ok = Message::AuthOk(ok);
                let hello = Message::Hello(self.hello());
                let Some(c) = self.clients[slot].as_mut() else {
                    return;
                };
                // AuthOk goes out as it is; every frame after it, both ways, carries a MAC.
                let r = c.queue(&ok, &mut self.scratch);
                if let Some((tx, rx)) = c.hs.frame_macs(&self.token) {
                    c.tx_mac = Some(tx);
                    c.rx_mac = Some(rx);
                }
                let r = r
                    .and_then(|_| c.queue(&hello, &mut self.scratch))
                    .and_then(|_| c.flush(&self.ring, now));
                if let Err(reason) = r {
                    self.drop_client(slot, &reason, log::Level::Warn);
                }
                return;
            }
            Ok(AgentAction::Resume(r)) => r,
            Ok(AgentAction::Test(req)) => {
                self.start_test(slot, req, now);
                return;
            }
            Err(HandshakeError::BadProof) => {
                let ip = c.peer.ip();
                match self.limiter.fail(ip, now) {
                    Some(delay) => {
                        if delay == AUTH_DELAY_FIRST {
                            log::warn!(
                                "{ip}: {AUTH_FAIL_LIMIT} failed authentications within {} s: its \
                                 wrong proofs are now refused after a delay (up to {} ms); a \
                                 right one is not delayed",
                                AUTH_FAIL_WINDOW.as_secs(),
                                AUTH_DELAY_MAX.as_millis()
                            );
                        }
                        c.refusing = true;
                        c.deadline = now + delay;
                    }
                    None => self.refuse_and_drop(slot, &HandshakeError::BadProof.to_string()),
                }
                return;
            }
            Err(e) => {
                self.refuse_and_drop(slot, &e.to_string());
                return;
            }
        };
        let ring = &self.ring;
        let oldest = ring.oldest_seq();
        let next = ring.next_seq();
        let (start, gone) = if r.instance_id == self.instance_id {
            let want = r.after_seq.saturating_add(1);
            if want < oldest {
                (oldest, Some((want, oldest - 1)))
            } else {
                (want.min(next), None)
            }
        } else {
            (oldest, (oldest > 1).then_some((1, oldest - 1)))
        };
        c.next_seq = start;
        c.next_off = ring.find(start);
        c.accepts = r.accepts;
        c.instance_id = self.instance_id;
        log::info!(
            "client {}: authenticated; resuming at {start} (instance {}, ring {}..{})",
            c.peer,
            if r.instance_id == self.instance_id {
                "same"
            } else {
                "new"
            },
            oldest,
            next.saturating_sub(1)
        );
        let mut res = Ok(());
        if let Some((from_seq, to_seq)) = gone {
            let g = Message::Gone(Gone {
                instance_id: self.instance_id,
                from_seq,
                to_seq,
            });
            res = c.queue(&g, &mut self.scratch);
        }
        let res = res.and_then(|_| c.flush(&self.ring, now));
        if let Err(reason) = res {
            self.drop_client(slot, &reason, log::Level::Warn);
        }
    }

    /// A collector asked for a test: start it in its thread, or refuse and say why.
    pub(super) fn start_test(
        &mut self,
        slot: usize,
        req: nasprobe_proto::TestRequest,
        now: Instant,
    ) {
        let why = crate::selftest::refusal(
            &self.cfg.allow_tests,
            &req,
            self.test.is_some(),
            self.last_test_end,
            now,
        );
        let folder = match why.map_or_else(
            || crate::selftest::precheck(&req, &self.cfg.allow_tests),
            Err,
        ) {
            Ok(f) => f,
            Err(why) => {
                self.refuse_and_drop(slot, &why);
                return;
            }
        };
        // A net test's run key: from this session's key for the receiver, unsealed with it
        // for the sender (nasprobe_proto::test_stream).
        let session_key = self.clients[slot]
            .as_ref()
            .and_then(|c| c.hs.session_key(&self.token));
        let run_key = match (&req, session_key) {
            (nasprobe_proto::TestRequest::NetReceiveRun(_), Some(k)) => {
                Some(nasprobe_proto::test_stream::run_key(&k))
            }
            (nasprobe_proto::TestRequest::NetSendRun(n), Some(k)) => {
                Some(nasprobe_proto::test_stream::seal_run_key(&k, &n.sealed_key))
            }
            _ => None,
        };
        // A receiver binds its test port now, says so, and its thread takes the listener.
        let listener = match &req {
            nasprobe_proto::TestRequest::NetReceiveRun(_) => {
                let addr = SocketAddr::new(self.cfg.listen.ip(), self.cfg.test_port);
                match std::net::TcpListener::bind(addr) {
                    Ok(l) => Some(l),
                    Err(e) => {
                        self.refuse_and_drop(slot, &format!("cannot listen on {addr}: {e}"));
                        return;
                    }
                }
            }
            _ => None,
        };
        if let Some(l) = &listener {
            let port = l.local_addr().map_or(self.cfg.test_port, |a| a.port());
            let ready = Message::TestReady(nasprobe_proto::TestReady { port });
            let Some(c) = self.clients[slot].as_mut() else {
                return;
            };
            if let Err(reason) = c
                .queue(&ready, &mut self.scratch)
                .and_then(|_| c.flush(&self.ring, now))
            {
                self.drop_client(slot, &reason, log::Level::Warn);
                return;
            }
        }
        let started = crate::selftest::start(
            req,
            slot,
            self.cfg.sys_root.clone(),
            listener,
            run_key,
            folder,
        );
        match started {
            Ok(t) => {
                if let Some(c) = self.clients[slot].as_mut() {
                    c.deadline = now + TESTING_DEADLINE;
                    log::info!("client {}: test started", c.peer);
                }
                self.test = Some(t);
            }
            Err(e) => self.refuse_and_drop(slot, &format!("cannot start the test: {e}")),
        }
    }

    /// The test's thread is done: send its result to the collector that asked (if it is still
    /// there) and close that connection.
    pub(super) fn finish_test(&mut self, now: Instant) {
        let Some(t) = self.test.take() else {
            return;
        };
        let slot = t.slot;
        // A test that wrote nothing (it failed before its first byte) does not use the minute.
        if t.began() {
            self.last_test_end = Some(now);
        }
        let result = t.finish();
        let Some(c) = self.clients[slot].as_mut().filter(|c| c.hs.is_testing()) else {
            log::info!(
                "test ended after its collector went away: {}",
                crate::selftest::describe(&result)
            );
            return;
        };
        log::info!("client {}: test done", c.peer);
        let msg = Message::TestResult(result);
        if c.queue(&msg, &mut self.scratch).is_ok() {
            let _ = c.flush(&self.ring, now);
        }
        self.drop_client(slot, "test done", log::Level::Info);
    }

    /// Ends the connection in `slot` when its deadline passed (the handshake's, or the test's
    /// while one runs for it); true when it did.
    pub(super) fn deadline_passed(&mut self, slot: usize, now: Instant) -> bool {
        let Some(c) = self.clients[slot].as_ref() else {
            return false;
        };
        if c.hs.is_streaming() || now < c.deadline {
            return false;
        }
        if c.hs.is_testing() {
            let reason = format!(
                "its test did not end within {} s: cancelled",
                TESTING_DEADLINE.as_secs()
            );
            self.refuse_and_drop(slot, &reason);
        } else if c.refusing {
            self.refuse_and_drop(slot, &HandshakeError::BadProof.to_string());
        } else {
            let reason = format!(
                "handshake not completed within {} ms",
                self.limits.handshake_timeout.as_millis()
            );
            self.refuse_and_drop(slot, &reason);
        }
        true
    }

    /// Handshake and test deadlines, stalled senders and keep-alives.
    pub(super) fn check_timers(&mut self, now: Instant) {
        for slot in 0..self.clients.len() {
            if self.deadline_passed(slot, now) {
                continue;
            }
            let Some(c) = self.clients[slot].as_mut() else {
                continue;
            };
            if !c.hs.is_streaming() {
                continue;
            }
            if c.pending(&self.ring) {
                if now.duration_since(c.last_progress) >= self.limits.stall_timeout {
                    let reason = format!(
                        "not reading: nothing could be sent for {} ms (record {} waiting); it \
                         will resume",
                        self.limits.stall_timeout.as_millis(),
                        c.next_seq
                    );
                    self.drop_client(slot, &reason, log::Level::Warn);
                }
            } else if now.duration_since(c.last_send) >= KEEPALIVE_AFTER {
                let ka = Message::KeepAlive(KeepAlive { time_ms: wall_ms() });
                let r = c
                    .queue(&ka, &mut self.scratch)
                    .and_then(|_| c.flush(&self.ring, now));
                if let Err(reason) = r {
                    self.drop_client(slot, &reason, log::Level::Warn);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::frame::decode_sealed_frame;
    use nasprobe_proto::handshake::{ClientAction, ClientHandshake};
    use nasprobe_proto::{
        Event, Record, RecordBody, Resume, ResumeWith, Shaping, accepts, encode_frame,
    };

    const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn record(seq: u64, ev: Event) -> std::vec::Vec<u8> {
        let mut buf = [0u8; 512];
        let msg = Message::Record(Record {
            seq,
            time_ms: 1000 + seq,
            body: RecordBody::Event(ev),
        });
        let n = encode_frame(&msg, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    /// What a collector that resumed with `resume` reads when the ring holds a link event, a
    /// `Shaping` and another link event.
    fn stream_to(resume: Message) -> std::vec::Vec<Message> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut theirs = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ours, peer) = listener.accept().unwrap();
        let now = Instant::now();
        let mut c = Client::new(ours, peer, [7; 32], now, now);
        let mut them = ClientHandshake::new([1; 32]);
        let ClientAction::SendAuth(auth) = them.on_message(TOKEN, c.hs.challenge()).unwrap() else {
            panic!("the collector answers the challenge");
        };
        let AgentAction::SendAuthOk(ok) = c.hs.on_message(TOKEN, &Message::Auth(auth)).unwrap()
        else {
            panic!("the agent takes the proof");
        };
        them.on_message(TOKEN, Message::AuthOk(ok)).unwrap();
        let (tx, rx) = c.hs.frame_macs(TOKEN).unwrap();
        c.tx_mac = Some(tx);
        c.rx_mac = Some(rx);
        let AgentAction::Resume(r) = c.hs.on_message(TOKEN, &resume).unwrap() else {
            panic!("the agent takes the resume");
        };
        let mut ring = Ring::new(4096);
        let link = || {
            Event::ExitWatch(nasprobe_proto::ExitWatch {
                source: nasprobe_proto::ExitSeen::Kernel,
                dropped: 0,
            })
        };
        for (seq, ev) in [
            (1, link()),
            (
                2,
                Event::Shaping(Shaping {
                    nics: heapless::Vec::new(),
                }),
            ),
            (3, link()),
        ] {
            ring.push(&record(seq, ev)).unwrap();
        }
        c.next_seq = 1;
        c.next_off = ring.find(1);
        c.accepts = r.accepts;
        c.instance_id = 42;
        c.flush(&ring, now).unwrap();
        drop(c);
        let mut bytes = std::vec::Vec::new();
        theirs.read_to_end(&mut bytes).unwrap();
        let (_, mut mac) = them.frame_macs(TOKEN).unwrap();
        let mut got = std::vec::Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let (msg, used) = decode_sealed_frame(&bytes[at..], MAX_OUT_FRAME, &mut mac)
                .unwrap()
                .unwrap();
            got.push(msg);
            at += used;
        }
        got
    }

    fn seqs(got: &[Message]) -> std::vec::Vec<std::string::String> {
        got.iter()
            .map(|m| match m {
                Message::Record(r) => format!("record {}", r.seq),
                Message::Gone(g) => {
                    format!("gone {}..{} of {}", g.from_seq, g.to_seq, g.instance_id)
                }
                other => other.name().into(),
            })
            .collect()
    }

    #[test]
    fn a_collector_that_accepts_shaping_gets_it() {
        let got = stream_to(Message::ResumeWith(ResumeWith {
            instance_id: 0,
            after_seq: 0,
            accepts: accepts::SHAPING,
        }));
        assert_eq!(seqs(&got), ["record 1", "record 2", "record 3"]);
        assert!(
            matches!(&got[1], Message::Record(r) if matches!(r.body, RecordBody::Event(Event::Shaping(_))))
        );
    }

    #[test]
    fn an_old_collector_gets_a_gone_for_shaping_and_the_rest_contiguous() {
        let got = stream_to(Message::Resume(Resume {
            instance_id: 0,
            after_seq: 0,
        }));
        assert_eq!(seqs(&got), ["record 1", "gone 2..2 of 42", "record 3"]);
    }
}
