//! `/proc/meminfo`: memory in KiB, and what is available estimated the kernel's way on
//! kernels without `MemAvailable`.

use super::{ParseError, fields, lines, parse_u64};

/// /proc/meminfo values in KiB; a line the kernel lacks is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: Option<u64>,
    pub free: Option<u64>,
    /// Since 3.14; absent on 3.10 (WD MyCloud).
    pub available: Option<u64>,
    pub buffers: Option<u64>,
    pub cached: Option<u64>,
    pub dirty: Option<u64>,
    pub writeback: Option<u64>,
    pub swap_total: Option<u64>,
    pub swap_free: Option<u64>,
    pub active_file: Option<u64>,
    pub inactive_file: Option<u64>,
    pub sreclaimable: Option<u64>,
}

/// Parses /proc/meminfo ("Name:   1234 kB" lines). Unknown names are skipped.
pub fn parse_meminfo(buf: &[u8]) -> Result<MemInfo, ParseError> {
    let mut m = MemInfo::default();
    for line in lines(buf) {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            if line.trim_ascii().is_empty() {
                continue;
            }
            return Err(ParseError::Malformed("meminfo line without ':'"));
        };
        let slot = match &line[..colon] {
            b"MemTotal" => &mut m.total,
            b"MemFree" => &mut m.free,
            b"MemAvailable" => &mut m.available,
            b"Buffers" => &mut m.buffers,
            b"Cached" => &mut m.cached,
            b"Dirty" => &mut m.dirty,
            b"Writeback" => &mut m.writeback,
            b"SwapTotal" => &mut m.swap_total,
            b"SwapFree" => &mut m.swap_free,
            b"Active(file)" => &mut m.active_file,
            b"Inactive(file)" => &mut m.inactive_file,
            b"SReclaimable" => &mut m.sreclaimable,
            _ => continue,
        };
        let v = fields(&line[colon + 1..])
            .next()
            .ok_or(ParseError::Truncated("meminfo value"))?;
        *slot = Some(parse_u64(v).ok_or(ParseError::Malformed("meminfo value"))?);
    }
    if m.total.is_none() || m.free.is_none() {
        return Err(ParseError::Truncated("meminfo without MemTotal/MemFree"));
    }
    Ok(m)
}

/// Estimates MemAvailable (KiB) for kernels without it (3.10), following the kernel's own
/// formula (si_mem_available, mm/page_alloc.c since 3.14) with the zone watermarks derived from
/// `vm.min_free_kbytes` as the kernel sets them by default (low = min * 5/4, reserve ≈ high =
/// min * 3/2):
///
/// `free - reserve + file - min(file/2, low) + sreclaimable - min(sreclaimable/2, low)`
///
/// where `file` is Active(file) + Inactive(file) (Cached + Buffers when those lines are
/// missing). Without min_free_kbytes the watermarks count as 0 (a slight over-estimate).
pub fn estimate_available(m: &MemInfo, min_free_kib: Option<u64>) -> Option<u64> {
    let free = m.free?;
    let min = min_free_kib.unwrap_or(0);
    let low = min * 5 / 4;
    let reserve = min * 3 / 2;
    let file = match (m.active_file, m.inactive_file) {
        (Some(a), Some(i)) => a + i,
        _ => m.cached.unwrap_or(0) + m.buffers.unwrap_or(0),
    };
    let srecl = m.sreclaimable.unwrap_or(0);
    let avail =
        free.saturating_sub(reserve) + file - (file / 2).min(low) + srecl - (srecl / 2).min(low);
    Some(match m.total {
        Some(t) => avail.min(t),
        None => avail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_modern_and_old() {
        let m = parse_meminfo(
            b"MemTotal:        8024512 kB\nMemFree:         1000 kB\nMemAvailable:    5000 kB\n\
Buffers: 10 kB\nCached: 20 kB\nSwapCached: 0 kB\nActive(file): 100 kB\nInactive(file): 200 kB\n\
Dirty: 3 kB\nWriteback: 4 kB\nSwapTotal: 50 kB\nSwapFree: 40 kB\nSReclaimable: 60 kB\nHugePages_Total: 0\n",
        )
        .unwrap();
        assert_eq!(m.total, Some(8024512));
        assert_eq!(m.available, Some(5000));
        assert_eq!(
            (m.dirty, m.writeback, m.swap_free),
            (Some(3), Some(4), Some(40))
        );
        // free 1000 - reserve 150 + file 300 - min(150, 125) + srecl 60 - min(30, 125)
        assert_eq!(estimate_available(&m, Some(100)), Some(850 + 175 + 30));
        assert_eq!(estimate_available(&m, None), Some(1000 + 300 + 60));
    }

    #[test]
    fn meminfo_bad() {
        assert!(parse_meminfo(b"").is_err());
        assert!(parse_meminfo(b"MemTotal: 1 kB\n").is_err());
        assert_eq!(
            parse_meminfo(b"MemTotal: 1 kB\nMemFree: x kB\n"),
            Err(ParseError::Malformed("meminfo value"))
        );
        assert_eq!(
            parse_meminfo(b"MemTotal: 1 kB\nMemFree:"),
            Err(ParseError::Truncated("meminfo value"))
        );
        assert!(parse_meminfo(b"garbage\n").is_err());
    }
}
