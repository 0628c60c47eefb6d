//! Counter deltas with 32-bit wrap correction and reset detection.

/// A 32-bit counter that wrapped advanced by less than this within one interval (2^31 events
/// per interval is far beyond any NAS: 2 GiB/s of bytes at 1 Hz). A backwards step whose
/// wrap-corrected delta is larger is a reset (device re-created, counters zeroed).
pub(crate) const WRAP32_MAX_STEP: u64 = 1 << 31;

/// `cur - prev` for a cumulative counter. A counter that went backwards from a value below
/// 2^32 wrapped at 32 bits (32-bit kernels print `unsigned long` counters): the delta is
/// corrected. Any other backwards step is a reset: `None` (unknown, never a huge spike).
pub fn step(prev: u64, cur: u64) -> Option<u64> {
    if cur >= prev {
        return Some(cur - prev);
    }
    if prev < (1 << 32) {
        let d = (1u64 << 32) - prev + cur;
        if d < WRAP32_MAX_STEP {
            return Some(d);
        }
    }
    None
}

/// Deltas of a counter array; `gauges[i]` entries are copied as-is. `None` when any counter
/// reset (the whole entry is then unknown for the interval).
pub fn steps<const N: usize>(
    prev: &[u64; N],
    cur: &[u64; N],
    gauges: &[bool; N],
) -> Option<[u64; N]> {
    let mut out = [0u64; N];
    for i in 0..N {
        out[i] = if gauges[i] {
            cur[i]
        } else {
            step(prev[i], cur[i])?
        };
    }
    Some(out)
}

/// Saturating narrowing for wire fields.
pub(crate) fn u32s(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Delta of two optional counters: None when either is missing or the counter reset.
pub(crate) fn opt_step(prev: Option<u64>, cur: Option<u64>) -> Option<u32> {
    Some(u32s(step(prev?, cur?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_resets() {
        assert_eq!(step(10, 15), Some(5));
        assert_eq!(step(4_294_967_000, 500), Some(796));
        assert_eq!(step(4_294_967_295, 0), Some(1));
        // backwards from below 2^32 by a lot: a reset, not a 4-billion spike
        assert_eq!(step(1000, 10), None);
        // backwards from above 2^32: a 64-bit counter never wraps: reset
        assert_eq!(step(5_000_000_000, 4_999_999_999), None);
        let g = [false, true, false];
        assert_eq!(steps(&[1, 9, 3], &[2, 4, 5], &g), Some([1, 4, 2]));
        assert_eq!(steps(&[1, 9, 3], &[0, 4, 5], &g), None);
        assert_eq!(opt_step(Some(1), None), None);
        assert_eq!(u32s(1 << 40), u32::MAX);
    }
}
