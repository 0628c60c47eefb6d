//! Instructions of the per-frame MAC (issue 20), for `scripts/bench`-style counting: seals
//! `FRAMES` frames of `BYTES` bytes each with the agent's `FrameMac` and prints a digest of the
//! MACs (so nothing is optimized away). Run it for two frame counts under callgrind (x86_64) or
//! under `qemu-arm -singlestep -d exec,nochain` (armv7: one log line per instruction); the
//! difference over the difference in frames is the cost of one frame's MAC.
//!
//! ```text
//! mac_cost FRAMES BYTES
//! ```

use nasprobe_proto::session::{Direction, FrameMac};

fn main() {
    let mut args = std::env::args().skip(1);
    let frames: u64 = args.next().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let bytes: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(256);
    let mut frame = vec![0u8; bytes.max(5)];
    for (i, b) in frame.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(151).wrapping_add(7);
    }
    let mac = FrameMac::new(
        b"token-of-the-cost-run",
        &[7; 32],
        &[1; 32],
        Direction::ToCollector,
    );
    let mut digest = 0u8;
    for n in 0..frames {
        let t = mac.tag_at(n, &frame);
        digest ^= t[(n % 16) as usize];
    }
    println!("frames={frames} bytes={bytes} digest={digest}");
}
