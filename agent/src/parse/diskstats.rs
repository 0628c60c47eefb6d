//! `/proc/diskstats`: 14 fields up to 4.17 (3.10, 4.4), 18 with discards (4.18+), 20 with
//! flushes (5.5+). Only the first 11 counters (what iostat -x uses) are kept.

use super::{ParseError, fields, lines, parse_u64};

/// Counters kept per device, in file order after major, minor and name.
pub(crate) const DISK_FIELDS: usize = 11;
pub(crate) const READS: usize = 0;
pub(crate) const READS_MERGED: usize = 1;
pub(crate) const SECTORS_READ: usize = 2;
pub(crate) const READ_MS: usize = 3;
pub(crate) const WRITES: usize = 4;
pub(crate) const WRITES_MERGED: usize = 5;
pub const SECTORS_WRITTEN: usize = 6;
pub(crate) const WRITE_MS: usize = 7;
/// A gauge, not a counter.
pub(crate) const IN_FLIGHT: usize = 8;
pub(crate) const IO_MS: usize = 9;
pub(crate) const WEIGHTED_MS: usize = 10;

/// One line of /proc/diskstats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskLine<'a> {
    pub major: u32,
    pub minor: u32,
    pub name: &'a [u8],
    pub c: [u64; DISK_FIELDS],
}

/// The lines of /proc/diskstats; a bad line is an `Err` item and the next lines still come.
pub fn diskstats(buf: &[u8]) -> impl Iterator<Item = Result<DiskLine<'_>, ParseError>> {
    lines(buf)
        .filter(|l| !l.trim_ascii().is_empty())
        .map(parse_disk_line)
}

pub(crate) fn parse_disk_line(line: &[u8]) -> Result<DiskLine<'_>, ParseError> {
    let mut f = fields(line);
    let num = |v: Option<&[u8]>| -> Result<u32, ParseError> {
        let v = v.ok_or(ParseError::Truncated("diskstats device"))?;
        parse_u64(v)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or(ParseError::Malformed("diskstats major/minor"))
    };
    let major = num(f.next())?;
    let minor = num(f.next())?;
    let name = f.next().ok_or(ParseError::Truncated("diskstats name"))?;
    let mut c = [0u64; DISK_FIELDS];
    for slot in c.iter_mut() {
        let v = f
            .next()
            .ok_or(ParseError::Truncated("diskstats counters"))?;
        *slot = parse_u64(v).ok_or(ParseError::Malformed("diskstats counter"))?;
    }
    // Any further fields (discards, flushes) must still be numbers: garbage means a damaged line.
    for v in f {
        parse_u64(v).ok_or(ParseError::Malformed("diskstats counter"))?;
    }
    Ok(DiskLine {
        major,
        minor,
        name,
        c,
    })
}

/// The whole disk a partition name belongs to, by the kernel's naming rules: `sda3` → `sda`,
/// `hdb1` → `hdb`, `vda2`/`xvda2` → `vda`/`xvda`, `mmcblk0p1` → `mmcblk0`, `nvme0n1p2` →
/// `nvme0n1`, `md0p1` → `md0`, `loop0p1` → `loop0`. `None` when the name is not a partition by
/// those rules (the sampler asks sysfs first; this is the fallback for trees without /sys).
pub fn partition_parent(name: &[u8]) -> Option<&[u8]> {
    let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits == name.len() {
        return None;
    }
    let stem = &name[..name.len() - digits];
    for prefix in [&b"sd"[..], b"hd", b"vd", b"xvd"] {
        if stem.len() > prefix.len()
            && stem.starts_with(prefix)
            && stem[prefix.len()..].iter().all(|b| b.is_ascii_lowercase())
        {
            return Some(stem);
        }
    }
    // "<disk ending in a digit>p<N>"
    if let Some(base) = stem.strip_suffix(b"p")
        && base.last().is_some_and(|b| b.is_ascii_digit())
        && [&b"mmcblk"[..], b"nvme", b"md", b"loop", b"nbd"]
            .iter()
            .any(|p| base.starts_with(p))
    {
        return Some(base);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_layouts() {
        let v310 = b"   8       0 sda 100 2 3000 40 50 6 700 80 1 90 120\n";
        let v418 = b"   8       0 sda 100 2 3000 40 50 6 700 80 1 90 120 5 0 10 3\n";
        let v55 = b" 254       0 vda 33827 6111 3031954 17976 10056 20118 4802544 16661 0 6392 35514 6479 94 606960 825 824 50\n";
        for s in [&v310[..], v418] {
            let d = diskstats(s).next().unwrap().unwrap();
            assert_eq!((d.major, d.minor, d.name), (8, 0, &b"sda"[..]));
            assert_eq!(d.c, [100, 2, 3000, 40, 50, 6, 700, 80, 1, 90, 120]);
        }
        let d = diskstats(v55).next().unwrap().unwrap();
        assert_eq!(d.c[SECTORS_WRITTEN], 4802544);
        assert_eq!(d.c[WEIGHTED_MS], 35514);
    }

    #[test]
    fn bad_lines_do_not_stop_the_rest() {
        let s = b"8 0 sda 1 2 3\n8 16 sdb 1 2 3 4 5 6 7 8 9 10 11\nx y z\n8 32 sdc 1 2 3 4 5 6 7 8 9 10 1x\n";
        let v: Vec<_> = diskstats(s).collect();
        assert_eq!(v.len(), 4);
        assert_eq!(v[0], Err(ParseError::Truncated("diskstats counters")));
        assert_eq!(v[1].unwrap().name, b"sdb");
        assert!(v[2].is_err());
        assert!(v[3].is_err());
    }

    #[test]
    fn parents() {
        let p = |s: &str| {
            partition_parent(s.as_bytes()).map(|p| std::str::from_utf8(p).unwrap().to_string())
        };
        assert_eq!(p("sda3").as_deref(), Some("sda"));
        assert_eq!(p("sdab12").as_deref(), Some("sdab"));
        assert_eq!(p("hdb1").as_deref(), Some("hdb"));
        assert_eq!(p("xvda2").as_deref(), Some("xvda"));
        assert_eq!(p("mmcblk0p1").as_deref(), Some("mmcblk0"));
        assert_eq!(p("nvme0n1p2").as_deref(), Some("nvme0n1"));
        assert_eq!(p("md0p1").as_deref(), Some("md0"));
        assert_eq!(p("sda"), None);
        assert_eq!(p("md2"), None);
        assert_eq!(p("mmcblk0"), None);
        assert_eq!(p("nvme0n1"), None);
        assert_eq!(p("loop0"), None);
        assert_eq!(p("dm-0"), None);
        assert_eq!(p("mtdblock3"), None);
    }
}
