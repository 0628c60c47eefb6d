//! One collector's session: a [`Client`] is a socket, a cursor into the history ring and a
//! small partial-write buffer (the server accepts, reads, answers and drops them in
//! `sessions.rs`).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nasprobe_proto::frame::{LEN_PREFIX, MAX_CLIENT_FRAME_LEN, encode_sealed_frame, frame_needs};
use nasprobe_proto::handshake::AgentHandshake;
use nasprobe_proto::session::{FrameMac, MAC_LEN};
use nasprobe_proto::{Gone, Message, encode_frame};

use super::base::MAX_OUT_FRAME;
use crate::ring::Ring;

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
pub(super) const OUT_CAP: usize = 2 * MAX_OUT_FRAME;
pub(super) const IN_CAP: usize = LEN_PREFIX + MAX_CLIENT_FRAME_LEN + MAC_LEN;
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
#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    use nasprobe_proto::frame::decode_sealed_frame;
    use nasprobe_proto::handshake::{AgentAction, ClientAction, ClientHandshake};
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
                Event::Shaping(
                    Shaping {
                        nics: heapless::Vec::new(),
                    }
                    .into(),
                ),
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
