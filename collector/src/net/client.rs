//! One agent connection: the collector side of `docs/protocol.md`.
//!
//! `Challenge` → `Auth` (fresh random client nonce) → `AuthOk` (checked in constant time:
//! mutual authentication) → `Hello` → `Resume` → `Gone`/`Record`/`KeepAlive`; every frame after
//! `AuthOk` (from the agent) and after `Auth` (to it) carries the session's MAC, checked before
//! the body is decoded. Every way the agent (or someone between) can break the conversation is
//! a typed [`ClientError`] that names the host.

use std::time::Duration;

use nasprobe_proto::frame::{
    LEN_PREFIX, MAX_FRAME_LEN, decode_body, encode_sealed_frame, open_sealed, peek_len,
    split_record,
};
use nasprobe_proto::handshake::{ClientAction, ClientHandshake, HandshakeError};
use nasprobe_proto::session::{FrameMac, MAC_LEN};
use nasprobe_proto::{FrameError, Gone, Hello, KeepAlive, Message, Record, Resume, ResumeWith};
use smol::future::FutureExt as _;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;

/// Time allowed for TCP connect.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time allowed for the whole handshake (the agent's deadline is 5 s too).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(6);
/// `KeepAlive`s a second an agent may send on average (it sends one after 5 s of silence, so a
/// real one stays 10 times under this).
pub(crate) const KEEPALIVES_PER_S: u64 = 2;
/// `KeepAlive`s allowed at once beyond the rate (a few queued behind a stall).
pub(crate) const KEEPALIVE_SLACK: u64 = 20;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("{host}: cannot connect to {addr}: {source}")]
    Connect {
        host: String,
        addr: String,
        source: std::io::Error,
    },
    #[error("{host}: connecting to {addr} timed out after {}s", CONNECT_TIMEOUT.as_secs())]
    ConnectTimeout { host: String, addr: String },
    #[error("{host}: handshake not finished within {}s", HANDSHAKE_TIMEOUT.as_secs())]
    HandshakeTimeout { host: String },
    #[error("{host}: connection lost: {source}")]
    Io {
        host: String,
        source: std::io::Error,
    },
    #[error("{host}: the agent closed the connection")]
    Closed { host: String },
    #[error("{host}: nothing received for {}s (agent hung or network cut)", .timeout.as_secs())]
    ReadTimeout { host: String, timeout: Duration },
    #[error("{host}: bad frame from the agent: {source}")]
    Frame { host: String, source: FrameError },
    #[error("{host}: protocol violation: expected {expected}, got {got}")]
    Unexpected {
        host: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{host}: the agent refused us: {reason}")]
    Refused { host: String, reason: String },
    #[error("{host}: the agent closed the stream: {reason}")]
    Goodbye { host: String, reason: String },
    #[error(
        "{host}: the agent failed to prove it holds the token (another token, or not a nasprobe agent)"
    )]
    BadAgentProof { host: String },
    #[error("{host}: {}", nasprobe_proto::version_advice(*.version, "agent", "collector"))]
    Version { host: String, version: u8 },
    /// A handshake failure this collector has no better words for (a newer protocol crate's).
    #[error("{host}: handshake failed: {reason}")]
    Handshake { host: String, reason: String },
    /// A frame after the handshake whose MAC does not match: someone between the agent and
    /// the collector altered, dropped, replayed, injected or reordered frames. Nothing of it is
    /// stored; the collector reconnects and resumes.
    #[error("{host}: {source}; nothing of it was stored, reconnecting")]
    Tampered {
        host: String,
        source: nasprobe_proto::session::BadMac,
    },
    #[error("{host}: records out of order: expected seq {expected}, got {got}")]
    SeqOrder {
        host: String,
        expected: u64,
        got: u64,
    },
    #[error(
        "{host}: Gone {from}..={to} of instance {instance:#x} does not fit (expected from {expected}, instance {current:#x}, at most to {max})"
    )]
    BadGone {
        host: String,
        instance: u64,
        current: u64,
        from: u64,
        to: u64,
        expected: u64,
        max: u64,
    },
    #[error("{host}: implausible Hello: {why}")]
    BadHello { host: String, why: String },
    #[error(
        "{host}: sequence number past {} (expected {expected})",
        crate::net::validate::MAX_SEQ
    )]
    SeqRange { host: String, expected: u64 },
    /// More `KeepAlive`s than `KEEPALIVES_PER_S` allows over the connection's time.
    #[error(
        "{host}: {count} KeepAlives in {seconds:.1} s (at most {KEEPALIVES_PER_S} a second): a KeepAlive flood, disconnected"
    )]
    Flood {
        host: String,
        count: u64,
        seconds: f64,
    },
}

impl ClientError {
    /// True when the agent sent something invalid (undecodable frame, protocol violation,
    /// another protocol version, a wrong proof): the host is marked bad.
    pub(crate) fn is_bad_agent(&self) -> bool {
        matches!(
            self,
            ClientError::Frame { .. }
                | ClientError::Unexpected { .. }
                | ClientError::Version { .. }
                | ClientError::SeqOrder { .. }
                | ClientError::BadGone { .. }
                | ClientError::BadHello { .. }
                | ClientError::SeqRange { .. }
                | ClientError::BadAgentProof { .. }
                | ClientError::Flood { .. }
        )
    }

    /// True when retrying soon is pointless (wrong token, other protocol): back off longer.
    pub fn is_configuration(&self) -> bool {
        match self {
            ClientError::Refused { reason, .. } => {
                reason.contains("authentication") || reason.contains("too many")
            }
            ClientError::BadAgentProof { .. } | ClientError::Version { .. } => true,
            _ => false,
        }
    }
}

/// What the stream brings after `Resume`.
#[derive(Debug)]
pub enum Incoming {
    Gone(Gone),
    /// A record and the postcard bytes of its body (the `Sample` or `Event`, without the
    /// `RecordBody` tag) exactly as received.
    Record(Box<Record>, Vec<u8>),
    KeepAlive(KeepAlive),
}

/// What the agent says about a test it runs.
#[derive(Debug)]
pub enum TestReply {
    Ready(nasprobe_proto::TestReady),
    Result(nasprobe_proto::TestResult),
}

/// An authenticated connection to one agent.
pub struct Session {
    host: String,
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    read_timeout: Duration,
    /// The agent's `Hello` on this connection.
    pub hello: Hello,
    /// Sequence number the next record must carry (0 before `Resume`).
    expected_seq: u64,
    /// The times records of this connection may carry (from the `Hello`).
    pub(crate) window: crate::net::validate::TimeWindow,
    /// When the `Hello` arrived (bounds how far a `Gone` may reach).
    hello_at: std::time::Instant,
    /// The session's MACs (frames to the agent, from it), once the agent proved the token.
    tx_mac: Option<FrameMac>,
    rx_mac: Option<FrameMac>,
    /// The session key, once the agent proved the token (a `test net` run key comes from it).
    session_key: Option<[u8; 32]>,
    /// The agent's clock against this one, measured over the handshake's last round trip.
    pub clock: Option<nasprobe_analysis::ClockOffset>,
    /// `KeepAlive`s received since the `Hello` (against [`KEEPALIVES_PER_S`]).
    keepalives: u64,
}

fn wire_err(host: &str) -> impl Fn(std::io::Error) -> ClientError + '_ {
    move |source| ClientError::Io {
        host: host.to_string(),
        source,
    }
}

async fn timeout<T>(
    d: Duration,
    f: impl Future<Output = Result<T, ClientError>>,
    on_timeout: impl FnOnce() -> ClientError,
) -> Result<T, ClientError> {
    f.or(async {
        smol::Timer::after(d).await;
        Err(on_timeout())
    })
    .await
}

impl Session {
    /// Connects, authenticates both ways and reads the agent's `Hello`.
    pub async fn connect(host: &str, addr: &str, token: &[u8]) -> Result<Session, ClientError> {
        let stream = timeout(
            CONNECT_TIMEOUT,
            async {
                TcpStream::connect(addr)
                    .await
                    .map_err(|source| ClientError::Connect {
                        host: host.to_string(),
                        addr: addr.to_string(),
                        source,
                    })
            },
            || ClientError::ConnectTimeout {
                host: host.to_string(),
                addr: addr.to_string(),
            },
        )
        .await?;
        stream.set_nodelay(true).ok();
        let mut s = Session {
            host: host.to_string(),
            stream,
            buf: Vec::with_capacity(MAX_FRAME_LEN + LEN_PREFIX),
            start: 0,
            read_timeout: HANDSHAKE_TIMEOUT,
            hello: Hello {
                interval_ms: 1000,
                ..Hello::default()
            },
            expected_seq: 0,
            window: crate::net::validate::TimeWindow::new(&Hello::default()),
            hello_at: std::time::Instant::now(),
            tx_mac: None,
            rx_mac: None,
            session_key: None,
            clock: None,
            keepalives: 0,
        };
        let h = host.to_string();
        timeout(HANDSHAKE_TIMEOUT, s.handshake(token), || {
            ClientError::HandshakeTimeout { host: h }
        })
        .await?;
        // The protocol: a collector that reads nothing for 3 intervals + 10 s reconnects.
        s.read_timeout = Duration::from_millis(3 * u64::from(s.hello.interval_ms.max(100)))
            + Duration::from_secs(10);
        Ok(s)
    }

    /// Drives the protocol's handshake machine until the agent's Hello.
    async fn handshake(&mut self, token: &[u8]) -> Result<(), ClientError> {
        let mut hs = ClientHandshake::new(crate::token::random_bytes());
        // When the last Auth went out: the agent stamps its Hello after reading it.
        let mut auth_sent_ms = None;
        loop {
            let msg = self.read_msg().await?;
            let awaiting = hs.awaiting();
            match hs.on_message(token, msg) {
                Ok(ClientAction::SendAuth(a)) => {
                    // Before the write: the agent may answer before this task runs again.
                    auth_sent_ms = Some(nasprobe_proto::time::now_ms());
                    self.send(&Message::Auth(a)).await?;
                }
                Ok(ClientAction::Wait) => {
                    // The agent proved the token: every frame from here on is sealed.
                    if let Some((tx, rx)) = hs.frame_macs(token) {
                        self.tx_mac = Some(tx);
                        self.rx_mac = Some(rx);
                    }
                    self.session_key = hs.session_key(token);
                }
                Ok(ClientAction::Hello(mut h)) => {
                    let received_ms = nasprobe_proto::time::now_ms();
                    self.clock = auth_sent_ms.and_then(|sent| {
                        nasprobe_analysis::ClockOffset::measure(sent, received_ms, h.now_ms)
                    });
                    nasprobe_proto::sanitize::hello(&mut h);
                    crate::net::validate::check_hello(&h, nasprobe_proto::time::now_ms()).map_err(
                        |why| ClientError::BadHello {
                            host: self.host.clone(),
                            why,
                        },
                    )?;
                    self.window = crate::net::validate::TimeWindow::new(&h);
                    self.hello_at = std::time::Instant::now();
                    self.hello = h;
                    return Ok(());
                }
                Err(e) => {
                    let host = self.host.clone();
                    return Err(match e {
                        HandshakeError::Unexpected { got, .. } => ClientError::Unexpected {
                            host,
                            expected: awaiting,
                            got,
                        },
                        HandshakeError::BadProof => ClientError::BadAgentProof { host },
                        HandshakeError::Refused(reason) => ClientError::Refused {
                            host,
                            reason: nasprobe_proto::sanitize::text(&reason),
                        },
                        HandshakeError::Version(version) => ClientError::Version { host, version },
                        other => ClientError::Handshake {
                            host,
                            reason: other.to_string(),
                        },
                    });
                }
            }
        }
    }

    /// Asks for everything after `after_seq` of `instance_id` (see the protocol's step 4).
    pub async fn resume(&mut self, instance_id: u64, after_seq: u64) -> Result<(), ClientError> {
        self.expected_seq = if instance_id == self.hello.instance_id {
            after_seq
                .checked_add(1)
                .filter(|&s| s <= crate::net::validate::MAX_SEQ)
                .ok_or_else(|| ClientError::SeqRange {
                    host: self.host.clone(),
                    expected: after_seq,
                })?
        } else {
            1
        };
        // An agent that says it takes ResumeWith is told which newer records this collector
        // decodes; to the others the plain Resume they know.
        let msg = if nasprobe_proto::takes_resume_with(&self.hello.agent_version) {
            Message::ResumeWith(ResumeWith {
                instance_id,
                after_seq,
                accepts: nasprobe_proto::accepts::ALL,
            })
        } else {
            Message::Resume(Resume {
                instance_id,
                after_seq,
            })
        };
        self.send(&msg).await
    }

    /// The next item of the stream, checked: records contiguous, `Gone` where it belongs.
    pub async fn next(&mut self) -> Result<Incoming, ClientError> {
        let (msg, body_at) = self.read_frame().await?;
        match msg {
            Message::Record(mut r) => {
                if r.seq != self.expected_seq {
                    return Err(ClientError::SeqOrder {
                        host: self.host.clone(),
                        expected: self.expected_seq,
                        got: r.seq,
                    });
                }
                self.expected_seq = self.next_seq(r.seq)?;
                let mut body = body_at;
                sanitize_record(&mut r, &mut body);
                Ok(Incoming::Record(Box::new(r), body))
            }
            Message::Gone(g) => {
                let max = self.gone_max();
                if g.instance_id != self.hello.instance_id
                    || g.from_seq != self.expected_seq
                    || g.to_seq < g.from_seq
                    || g.to_seq > max
                {
                    return Err(ClientError::BadGone {
                        host: self.host.clone(),
                        instance: g.instance_id,
                        current: self.hello.instance_id,
                        from: g.from_seq,
                        to: g.to_seq,
                        expected: self.expected_seq,
                        max,
                    });
                }
                self.expected_seq = self.next_seq(g.to_seq)?;
                Ok(Incoming::Gone(g))
            }
            Message::KeepAlive(k) => {
                self.count_keepalive()?;
                Ok(Incoming::KeepAlive(k))
            }
            Message::Refused(r) => Err(ClientError::Goodbye {
                host: self.host.clone(),
                reason: nasprobe_proto::sanitize::text(&r.reason),
            }),
            other => Err(self.unexpected("Record, Gone or KeepAlive", &other)),
        }
    }

    /// Asks for a test instead of a stream and waits (at most `limit`) for its result; the
    /// agent closes the connection after it. A refusal (tests off, one running, too soon, too
    /// big) is `ClientError::Refused` with the agent's reason.
    pub async fn test(
        &mut self,
        req: nasprobe_proto::TestRequest,
        limit: Duration,
    ) -> Result<nasprobe_proto::TestResult, ClientError> {
        self.send_test(req).await?;
        loop {
            if let TestReply::Result(r) = self.test_reply(limit).await? {
                return Ok(r);
            }
        }
    }

    /// The session key of this authenticated connection (see `nasprobe_proto::test_stream`).
    pub fn session_key(&self) -> Option<[u8; 32]> {
        self.session_key
    }

    /// Sends a test request (see [`Session::test`]); the replies come from
    /// [`Session::test_reply`].
    pub async fn send_test(&mut self, req: nasprobe_proto::TestRequest) -> Result<(), ClientError> {
        self.send(&Message::TestRequest(req)).await
    }

    /// The agent's next word on a test: ready (a receiver's port) or its result, within `limit`.
    pub async fn test_reply(&mut self, limit: Duration) -> Result<TestReply, ClientError> {
        self.read_timeout = limit;
        loop {
            match self.read_msg().await? {
                Message::TestResult(mut r) => {
                    nasprobe_proto::sanitize::test_result(&mut r);
                    return Ok(TestReply::Result(r));
                }
                Message::TestReady(r) => return Ok(TestReply::Ready(r)),
                Message::KeepAlive(_) => self.count_keepalive()?,
                Message::Refused(r) => {
                    return Err(ClientError::Refused {
                        host: self.host.clone(),
                        reason: nasprobe_proto::sanitize::text(&r.reason),
                    });
                }
                other => return Err(self.unexpected("TestResult or TestReady", &other)),
            }
        }
    }

    /// Counts a `KeepAlive`: an error when there were more than the rate allows since the
    /// `Hello` (on the collector's clock).
    fn count_keepalive(&mut self) -> Result<(), ClientError> {
        self.keepalives += 1;
        let seconds = self.hello_at.elapsed().as_secs_f64();
        let allowed = (seconds as u64)
            .saturating_mul(KEEPALIVES_PER_S)
            .saturating_add(KEEPALIVE_SLACK);
        if self.keepalives > allowed {
            return Err(ClientError::Flood {
                host: self.host.clone(),
                count: self.keepalives,
                seconds,
            });
        }
        Ok(())
    }

    /// The seq after `seq`, when it is still one the store can keep.
    fn next_seq(&self, seq: u64) -> Result<u64, ClientError> {
        seq.checked_add(1)
            .filter(|&s| s <= crate::net::validate::MAX_SEQ)
            .ok_or_else(|| ClientError::SeqRange {
                host: self.host.clone(),
                expected: seq,
            })
    }

    /// The highest seq a `Gone` may reach now: the records the ring overwrote lie before its
    /// oldest at the `Hello`, plus what it can have overwritten since (what the agent produced
    /// since: a sample and the collector's event cap per interval, +2 intervals).
    fn gone_max(&self) -> u64 {
        let iv = u64::from(self.hello.interval_ms.max(1));
        let intervals =
            u64::try_from(self.hello_at.elapsed().as_millis()).unwrap_or(u64::MAX) / iv + 2;
        let per = 1 + crate::net::validate::EVENTS_PER_INTERVAL as u64;
        self.hello
            .oldest_seq
            .saturating_sub(1)
            .saturating_add(intervals.saturating_mul(per))
            .min(
                self.hello
                    .newest_seq
                    .saturating_add(intervals.saturating_mul(per)),
            )
            .min(crate::net::validate::MAX_SEQ - 1)
    }

    /// Sends a `KeepAlive` (the agent ignores it; it keeps NAT state alive).
    pub async fn keepalive(&mut self, time_ms: u64) -> Result<(), ClientError> {
        self.send(&Message::KeepAlive(KeepAlive { time_ms })).await
    }

    fn unexpected(&self, expected: &'static str, got: &Message) -> ClientError {
        ClientError::Unexpected {
            host: self.host.clone(),
            expected,
            got: got.name(),
        }
    }

    async fn send(&mut self, m: &Message) -> Result<(), ClientError> {
        let mut out = [0u8; 256 + MAC_LEN];
        let n = match self.tx_mac.as_mut() {
            Some(mac) => encode_sealed_frame(m, &mut out, mac),
            None => nasprobe_proto::encode_frame(m, &mut out),
        }
        .map_err(|source| ClientError::Frame {
            host: self.host.clone(),
            source,
        })?;
        self.stream
            .write_all(&out[..n])
            .await
            .map_err(wire_err(&self.host))
    }

    async fn read_msg(&mut self) -> Result<Message, ClientError> {
        Ok(self.read_frame().await?.0)
    }

    /// Reads one frame; returns the message and, for a `Record`, its body bytes.
    async fn read_frame(&mut self) -> Result<(Message, Vec<u8>), ClientError> {
        loop {
            let avail = &self.buf[self.start..];
            let ferr = |source| match source {
                // A frame of another protocol version: say so plainly.
                FrameError::UnsupportedVersion(version) => ClientError::Version {
                    host: self.host.clone(),
                    version,
                },
                FrameError::BadMac(source) => ClientError::Tampered {
                    host: self.host.clone(),
                    source,
                },
                source => ClientError::Frame {
                    host: self.host.clone(),
                    source,
                },
            };
            // The frame's own length, then what it takes on the wire (its MAC after it).
            let whole = match self.rx_mac.as_mut() {
                Some(mac) => open_sealed(avail, MAX_FRAME_LEN, mac)
                    .map_err(ferr)?
                    .map(|frame_len| (frame_len, frame_len + MAC_LEN)),
                None => peek_len(avail, MAX_FRAME_LEN)
                    .map_err(ferr)?
                    .map(|len| (LEN_PREFIX + len, LEN_PREFIX + len))
                    .filter(|&(_, total)| avail.len() >= total),
            };
            if let Some((frame_len, total)) = whole {
                {
                    let body = &avail[LEN_PREFIX..frame_len];
                    let msg = decode_body(body).map_err(ferr)?;
                    let raw = match &msg {
                        Message::Record(_) => split_record(&body[1..])
                            .map(|p| p.body.to_vec())
                            .map_err(|source| ClientError::Frame {
                                host: self.host.clone(),
                                source,
                            })?,
                        _ => Vec::new(),
                    };
                    self.start += total;
                    return Ok((msg, raw));
                }
            }
            // Need more bytes: compact, then read with the read timeout.
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let old = self.buf.len();
            self.buf.resize(old + 16 * 1024, 0);
            let host = self.host.clone();
            let to = self.read_timeout;
            let stream = &mut self.stream;
            let buf = &mut self.buf[old..];
            let n = timeout(
                to,
                async { stream.read(buf).await.map_err(wire_err(&host)) },
                || ClientError::ReadTimeout {
                    host: host.clone(),
                    timeout: to,
                },
            )
            .await;
            let n = match n {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            };
            self.buf.truncate(old + n);
            if n == 0 {
                return Err(ClientError::Closed {
                    host: self.host.clone(),
                });
            }
        }
    }
}

/// Makes a record's strings safe (`proto::sanitize`); when one changed, `body` (its postcard
/// body as received) is re-encoded from the fixed record so that what is stored is what is shown.
fn sanitize_record(r: &mut Record, body: &mut Vec<u8>) {
    use nasprobe_proto::{RecordBody, sanitize};
    let changed = match &mut r.body {
        RecordBody::Sample(s) => sanitize::sample(s),
        RecordBody::Event(e) => sanitize::event(e),
    };
    if changed {
        let enc = match &r.body {
            RecordBody::Sample(s) => postcard::to_allocvec(s),
            RecordBody::Event(e) => postcard::to_allocvec(e),
        };
        if let Ok(b) = enc {
            *body = b;
        }
    }
}
