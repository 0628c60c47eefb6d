//! The server's side of the collectors' sessions: it accepts, reads, answers and drops its
//! [`Client`]s (handshake, resume, the tests a collector asks for, keep-alives and stalls).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nasprobe_proto::frame::{MAX_CLIENT_FRAME_LEN, decode_frame, decode_sealed_frame};
use nasprobe_proto::handshake::{AgentAction, HandshakeError};
use nasprobe_proto::{FrameError, Gone, KeepAlive, Message, encode_frame, version_advice};
use nix::poll::PollFlags;

use super::base::{KEEPALIVE_AFTER, refused};
use super::client::{CLIENT_FRAMES_PER_S, Client, FRAMES_PER_ROUND, IN_CAP, TESTING_DEADLINE};
use super::limiter::{AUTH_DELAY_FIRST, AUTH_DELAY_MAX, AUTH_FAIL_LIMIT, AUTH_FAIL_WINDOW};
use super::state::Server;
use crate::sampler::wall_ms;

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
