//! `/proc/meminfo` and `/proc/vmstat`.

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

/// /proc/vmstat counters (pages or events since boot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmStat {
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
    pub pgmajfault: Option<u64>,
    /// `allocstall` (up to 4.9) or the sum of `allocstall_*` (4.10+).
    pub allocstall: Option<u64>,
    /// `pgscan_direct` (4.8+) or the sum of its zone variants `pgscan_direct_{dma,dma32,normal,
    /// high,movable}` (older kernels). `pgscan_direct_throttle` is another counter: left out.
    pub pgscan_direct: Option<u64>,
}

/// Parses /proc/vmstat ("name value" lines).
pub fn parse_vmstat(buf: &[u8]) -> Result<VmStat, ParseError> {
    let mut v = VmStat::default();
    let mut stall_sum: Option<u64> = None;
    let mut scan_sum: Option<u64> = None;
    for line in lines(buf) {
        let mut f = fields(line);
        let Some(name) = f.next() else { continue };
        let val = || -> Result<u64, ParseError> {
            let s = fields(line)
                .nth(1)
                .ok_or(ParseError::Truncated("vmstat value"))?;
            parse_u64(s).ok_or(ParseError::Malformed("vmstat value"))
        };
        match name {
            b"pswpin" => v.pswpin = Some(val()?),
            b"pswpout" => v.pswpout = Some(val()?),
            b"pgmajfault" => v.pgmajfault = Some(val()?),
            b"allocstall" => v.allocstall = Some(val()?),
            b"pgscan_direct" => v.pgscan_direct = Some(val()?),
            b"pgscan_direct_throttle" => {}
            n if n.starts_with(b"allocstall_") => {
                stall_sum = Some(stall_sum.unwrap_or(0).wrapping_add(val()?));
            }
            n if n.starts_with(b"pgscan_direct_") => {
                scan_sum = Some(scan_sum.unwrap_or(0).wrapping_add(val()?));
            }
            _ => {}
        }
    }
    if v.allocstall.is_none() {
        v.allocstall = stall_sum;
    }
    if v.pgscan_direct.is_none() {
        v.pgscan_direct = scan_sum;
    }
    if v.pswpin.is_none() && v.pgmajfault.is_none() {
        return Err(ParseError::Truncated("vmstat without pswpin/pgmajfault"));
    }
    Ok(v)
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

    #[test]
    fn vmstat_variants() {
        let new = parse_vmstat(
            b"pswpin 1\npswpout 2\nallocstall_dma 0\nallocstall_normal 5\nallocstall_movable 6\n\
pgmajfault 7\npgscan_direct 8\npgscan_direct_throttle 99\n",
        )
        .unwrap();
        assert_eq!(new.allocstall, Some(11));
        assert_eq!(new.pgscan_direct, Some(8));
        assert_eq!(new.pgmajfault, Some(7));
        let old = parse_vmstat(
            b"pswpin 1\npswpout 2\npgmajfault 3\npgscan_direct_dma 1\npgscan_direct_normal 2\n\
pgscan_direct_high 4\npgscan_direct_movable 0\npgscan_direct_throttle 77\nallocstall 9\n",
        )
        .unwrap();
        assert_eq!(old.pgscan_direct, Some(7));
        assert_eq!(old.allocstall, Some(9));
        assert!(parse_vmstat(b"nr_free_pages 3\n").is_err());
        assert!(parse_vmstat(b"pswpin x\n").is_err());
    }
}
