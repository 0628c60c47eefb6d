//! `/proc/net/dev`: per-interface byte, packet, error and drop counters.

use super::{ParseError, fields, lines, parse_u64};

/// Counters kept per interface.
pub(crate) const NET_FIELDS: usize = 8;
pub const RX_BYTES: usize = 0;
pub(crate) const RX_PACKETS: usize = 1;
pub(crate) const RX_ERRORS: usize = 2;
pub(crate) const RX_DROPPED: usize = 3;
pub(crate) const TX_BYTES: usize = 4;
pub(crate) const TX_PACKETS: usize = 5;
pub(crate) const TX_ERRORS: usize = 6;
pub(crate) const TX_DROPPED: usize = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetDevLine<'a> {
    pub name: &'a [u8],
    pub c: [u64; NET_FIELDS],
}

/// Interface lines of /proc/net/dev (the two header lines are skipped). Old kernels print
/// `eth0:123` with no space once the number is wide: the name ends at the last ':' (alias
/// names like `eth0:1` have no line of their own).
pub fn net_dev(buf: &[u8]) -> impl Iterator<Item = Result<NetDevLine<'_>, ParseError>> {
    lines(buf)
        .filter(|l| !l.trim_ascii().is_empty() && !l.contains(&b'|'))
        .map(parse_net_dev_line)
}

pub(crate) fn parse_net_dev_line(line: &[u8]) -> Result<NetDevLine<'_>, ParseError> {
    let colon = line
        .iter()
        .rposition(|&b| b == b':')
        .ok_or(ParseError::Malformed("net/dev line without ':'"))?;
    let name = line[..colon].trim_ascii();
    if name.is_empty() {
        return Err(ParseError::Malformed("net/dev empty name"));
    }
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs drop ...
    let mut all = [0u64; 16];
    let mut n = 0;
    for v in fields(&line[colon + 1..]) {
        if n == all.len() {
            break;
        }
        all[n] = parse_u64(v).ok_or(ParseError::Malformed("net/dev counter"))?;
        n += 1;
    }
    if n < 12 {
        return Err(ParseError::Truncated("net/dev counters"));
    }
    Ok(NetDevLine {
        name,
        c: [
            all[0], all[1], all[2], all[3], all[8], all[9], all[10], all[11],
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: &[u8] = b"Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0
  eth0:4294967000   25519    1    2    0     0          0         0  1432345   16431    3    4    0     0       0          0
";

    #[test]
    fn net_dev_lines() {
        let v: Vec<_> = net_dev(DEV).map(|r| r.unwrap()).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].name, b"eth0");
        assert_eq!(v[1].c, [4294967000, 25519, 1, 2, 1432345, 16431, 3, 4]);
        assert!(parse_net_dev_line(b"eth0: 1 2 3").is_err());
        assert!(parse_net_dev_line(b"eth0 1 2 3 4 5 6 7 8 9 10 11 12").is_err());
        assert!(parse_net_dev_line(b"eth0: 1 2 3 4 5 6 7 8 9 10 11 x").is_err());
    }
}
