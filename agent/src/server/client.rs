//! One collector's session: a [`Client`] is a socket, a cursor into the history ring and a
//! small partial-write buffer (the server accepts, reads, answers and drops them in
//! `sessions.rs`).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nasprobe_proto::frame::{LEN_PREFIX, MAX_CLIENT_FRAME_LEN, encode_sealed_frame};
use nasprobe_proto::handshake::AgentHandshake;
use nasprobe_proto::session::{FrameMac, MAC_LEN};
use nasprobe_proto::{Message, encode_frame};

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
}

impl Client {
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
            let count = ((ring.next_seq() - self.next_seq) as usize).min(SEAL_BATCH);
            let mut o = off;
            for i in 0..count {
                if i > 0 {
                    o = ring.next_off(o);
                }
                offs[i] = o;
                tags[i] = mac.tag_at(mac.counter() + i as u64, ring.frame_at(o));
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
