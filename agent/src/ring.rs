//! The history ring: encoded wire frames (`Record` messages, length prefix included) in one byte
//! buffer allocated once at start; the oldest frames are overwritten.
//!
//! Frames are stored exactly as they go on the wire and are never split across the end of the
//! buffer (a frame that does not fit at the end starts again at offset 0), so consecutive frames
//! form at most two contiguous byte runs that a client can be sent with one `write` each.
//! Sequence numbers are contiguous: the frame `k` places after the oldest has seq `oldest + k`,
//! so a lookup walks length prefixes and never decodes a frame.

use nasprobe_proto::frame::LEN_PREFIX;

pub(crate) struct Ring {
    buf: Box<[u8]>,
    /// Offset of the oldest frame.
    tail: usize,
    /// Where the next frame goes.
    head: usize,
    /// When wrapped, the frames run `[tail, wrap_end)` then `[0, head)`; else `[tail, head)`.
    wrapped: bool,
    wrap_end: usize,
    count: u64,
    /// Seq of the frame at `tail` (equal to `next_seq` when empty).
    oldest_seq: u64,
    /// Seq the next pushed frame gets.
    next_seq: u64,
    /// Offset of the newest frame.
    newest_off: usize,
}

impl Ring {
    /// A ring of `capacity` bytes; the first frame pushed gets seq 1.
    pub fn new(capacity: usize) -> Ring {
        Ring {
            buf: vec![0u8; capacity].into_boxed_slice(),
            tail: 0,
            head: 0,
            wrapped: false,
            wrap_end: 0,
            count: 0,
            oldest_seq: 1,
            next_seq: 1,
            newest_off: 0,
        }
    }

    /// Seq the next pushed frame will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Oldest seq held (== `next_seq()` when empty).
    pub fn oldest_seq(&self) -> u64 {
        self.oldest_seq
    }

    /// `(oldest, newest)` seq held, `(0, 0)` when empty (as `Hello` wants it).
    pub fn seq_range(&self) -> (u64, u64) {
        if self.count == 0 {
            (0, 0)
        } else {
            (self.oldest_seq, self.next_seq - 1)
        }
    }

    /// Bytes held (frames only, not the unused end of a wrapped buffer).
    pub fn used_bytes(&self) -> usize {
        if self.count == 0 {
            0
        } else if self.wrapped {
            self.wrap_end - self.tail + self.head
        } else {
            self.head - self.tail
        }
    }

    fn frame_len_at(&self, off: usize) -> usize {
        let p = &self.buf[off..off + LEN_PREFIX];
        LEN_PREFIX + u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as usize
    }

    fn evict_one(&mut self) {
        let len = self.frame_len_at(self.tail);
        self.tail += len;
        self.count -= 1;
        self.oldest_seq += 1;
        if self.wrapped && self.tail == self.wrap_end {
            self.tail = 0;
            self.wrapped = false;
        }
    }

    /// Appends one whole frame (length prefix + body, as `encode_frame` made it), evicting the
    /// oldest frames as needed. Returns `(seq, offset)` of the new frame, or `None` when the
    /// frame is malformed or larger than the whole ring.
    pub fn push(&mut self, frame: &[u8]) -> Option<(u64, usize)> {
        let l = frame.len();
        if l <= LEN_PREFIX || l > self.buf.len() {
            return None;
        }
        let announced = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        if announced + LEN_PREFIX != l {
            return None;
        }
        loop {
            if self.count == 0 {
                self.tail = 0;
                self.head = 0;
                self.wrapped = false;
            }
            if !self.wrapped {
                if self.buf.len() - self.head >= l {
                    break;
                }
                self.wrap_end = self.head;
                self.wrapped = true;
                self.head = 0;
            } else {
                if self.tail - self.head >= l {
                    break;
                }
                self.evict_one();
            }
        }
        let off = self.head;
        self.buf[off..off + l].copy_from_slice(frame);
        self.head += l;
        self.count += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.newest_off = off;
        Some((seq, off))
    }

    /// True while the frame with this seq is still held.
    pub fn holds(&self, seq: u64) -> bool {
        seq >= self.oldest_seq && seq < self.next_seq
    }

    /// Offset of the frame with this seq, if still held (walks from the oldest: used on resume,
    /// not per sample).
    pub fn find(&self, seq: u64) -> Option<usize> {
        if !self.holds(seq) {
            return None;
        }
        if seq == self.next_seq - 1 {
            return Some(self.newest_off);
        }
        let mut off = self.tail;
        for _ in self.oldest_seq..seq {
            off = self.next_off(off);
        }
        Some(off)
    }

    /// Offset of the frame after the one at `off` (meaningless past the newest frame).
    pub(crate) fn next_off(&self, off: usize) -> usize {
        let n = off + self.frame_len_at(off);
        if self.wrapped && n == self.wrap_end {
            0
        } else {
            n
        }
    }

    /// The frame at `off`.
    pub(crate) fn frame_at(&self, off: usize) -> &[u8] {
        &self.buf[off..off + self.frame_len_at(off)]
    }

    /// The contiguous run of whole frames starting at the frame at `off` (to the end of its
    /// segment): the tests' view of the layout (the server sends frame by frame, each with its
    /// client's MAC).
    #[cfg(test)]
    pub(crate) fn run_from(&self, off: usize) -> &[u8] {
        let end = if self.wrapped && off >= self.tail {
            self.wrap_end
        } else {
            self.head
        };
        &self.buf[off..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of total length `len` whose body bytes all equal `tag`.
    fn frame(len: usize, tag: u8) -> Vec<u8> {
        let mut f = vec![tag; len];
        f[..4].copy_from_slice(&((len - 4) as u32).to_le_bytes());
        f
    }

    fn tag_of(r: &Ring, seq: u64) -> Option<u8> {
        r.find(seq).map(|off| r.frame_at(off)[4])
    }

    #[test]
    fn empty_ring() {
        let r = Ring::new(100);
        assert_eq!(r.seq_range(), (0, 0));
        assert_eq!(r.next_seq(), 1);
        assert_eq!(r.oldest_seq(), 1);
        assert!(r.find(1).is_none());
        assert!(r.find(0).is_none());
        assert_eq!(r.used_bytes(), 0);
    }

    #[test]
    fn push_and_lookup_without_wrap() {
        let mut r = Ring::new(100);
        for i in 1..=5u8 {
            assert_eq!(r.push(&frame(10, i)).unwrap().0, i as u64);
        }
        assert_eq!(r.seq_range(), (1, 5));
        for i in 1..=5u8 {
            assert_eq!(tag_of(&r, i as u64), Some(i));
        }
        assert_eq!(r.used_bytes(), 50);
        // The run from the oldest is every frame, back to back.
        let off = r.find(1).unwrap();
        assert_eq!(r.run_from(off).len(), 50);
        assert_eq!(r.run_from(r.find(4).unwrap()).len(), 20);
    }

    #[test]
    fn wrap_around_evicts_oldest_and_keeps_frames_whole() {
        let mut r = Ring::new(100);
        // 9 frames of 11 bytes = 99 bytes: no wrap yet.
        for i in 1..=9u8 {
            r.push(&frame(11, i));
        }
        assert_eq!(r.seq_range(), (1, 9));
        // The 10th does not fit in the last byte: it goes to 0 and evicts seq 1.
        let (seq, off) = r.push(&frame(11, 10)).unwrap();
        assert_eq!((seq, off), (10, 0));
        assert_eq!(r.seq_range(), (2, 10));
        assert!(r.find(1).is_none());
        for s in 2..=10u64 {
            assert_eq!(tag_of(&r, s), Some(s as u8), "seq {s}");
            assert_eq!(r.frame_at(r.find(s).unwrap()).len(), 11);
        }
        // Runs: seq 2..=9 in the high segment, 10 in the low one.
        assert_eq!(r.run_from(r.find(2).unwrap()).len(), 8 * 11);
        assert_eq!(r.next_off(r.find(9).unwrap()), 0);
        assert_eq!(r.run_from(r.find(10).unwrap()).len(), 11);
        assert_eq!(r.used_bytes(), 99);
    }

    #[test]
    fn long_run_of_mixed_sizes_stays_consistent() {
        let mut r = Ring::new(1000);
        let mut sizes = Vec::new();
        let mut x = 12345u32;
        for seq in 1..=5000u64 {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            let len = 5 + (x >> 16) as usize % 120;
            sizes.push(len);
            assert_eq!(r.push(&frame(len, seq as u8)).unwrap().0, seq);
            let (old, new) = r.seq_range();
            assert_eq!(new, seq);
            // Exactly the newest frames that fit are held: the one before `old` would not fit.
            let held: usize = (old..=new).map(|s| sizes[s as usize - 1]).sum();
            assert!(held <= 1000);
            assert_eq!(r.used_bytes(), held);
            // Walk every held frame: lengths and tags match, the walk ends at the newest.
            let mut off = r.find(old).unwrap();
            for s in old..=new {
                let f = r.frame_at(off);
                assert_eq!(f.len(), sizes[s as usize - 1]);
                assert_eq!(f[4], s as u8);
                if s < new {
                    off = r.next_off(off);
                }
            }
            assert_eq!(off, r.find(new).unwrap());
        }
    }

    #[test]
    fn eviction_gives_exact_gone_range() {
        let mut r = Ring::new(64);
        for i in 1..=20u8 {
            r.push(&frame(16, i));
        }
        // 64 bytes hold exactly 4 frames of 16.
        assert_eq!(r.seq_range(), (17, 20));
        assert!(!r.holds(16));
        assert!(r.holds(17));
        // A client that holds up to 10 misses 11..=16.
        let after = 10u64;
        assert_eq!((after + 1, r.oldest_seq() - 1), (11, 16));
    }

    #[test]
    fn refuses_bad_frames() {
        let mut r = Ring::new(32);
        assert!(r.push(&frame(33, 1)).is_none());
        assert!(r.push(&[1, 0, 0, 0]).is_none());
        let mut lying = frame(10, 1);
        lying[0] = 9;
        assert!(r.push(&lying).is_none());
        assert!(r.push(&frame(32, 1)).is_some());
        assert!(r.push(&frame(32, 2)).is_some());
        assert_eq!(r.seq_range(), (2, 2));
    }
}
