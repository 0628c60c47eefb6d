//! `/proc/vmstat`: swapping, major faults and direct reclaim, counted since boot.

use super::{ParseError, fields, lines, parse_u64};

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
        // Every name matched below starts with 'p' or 'a': the other ~3/4 of the ~190 lines
        // are passed over without splitting out their name (a superset test: the fields'
        // separators are ASCII whitespace).
        if !matches!(line.trim_ascii_start().first(), Some(b'p' | b'a')) {
            continue;
        }
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
        let indented =
            parse_vmstat(b"nr_free_pages 3\n \tpswpin 5\nzz 1\n\r\tpgmajfault 2\n  \n").unwrap();
        assert_eq!((indented.pswpin, indented.pgmajfault), (Some(5), Some(2)));
    }
}
