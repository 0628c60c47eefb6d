//! `/proc/net/snmp` (`Tcp:`) and `/proc/net/netstat` (`TcpExt:`), both a header line of
//! names then a line of values: the TCP counters.

use super::{ParseError, fields, lines, parse_i64};

/// The TCP counters of /proc/net/snmp (`Tcp:`) and /proc/net/netstat (`TcpExt:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpCounters {
    pub retrans_segs: Option<u64>,
    pub out_rsts: Option<u64>,
    pub in_errs: Option<u64>,
    pub estab_resets: Option<u64>,
    pub attempt_fails: Option<u64>,
    /// TcpExt TCPTimeouts: retransmission timer expiries.
    pub timeouts: Option<u64>,
    /// TcpExt TCPAbortOnTimeout: connections killed after the retransmission or keepalive
    /// timer gave up (Linux counts keepalive aborts here; it has no separate counter).
    pub timeout_aborts: Option<u64>,
    /// TcpExt ListenDrops: SYNs dropped at a listening socket.
    pub listen_drops: Option<u64>,
}

/// Calls `each(name, value)` for every header/value pair of the `prefix` (e.g. `b"Tcp:"`)
/// line pair. Names are matched, never positions. Values may be negative (Tcp MaxConn -1);
/// those are skipped.
pub(crate) fn snmp_pairs(
    buf: &[u8],
    prefix: &[u8],
    mut each: impl FnMut(&[u8], u64),
) -> Result<bool, ParseError> {
    let mut it = lines(buf);
    while let Some(line) = it.next() {
        let Some(rest) = line.strip_prefix(prefix) else {
            continue;
        };
        let values = it
            .next()
            .and_then(|v| v.strip_prefix(prefix))
            .ok_or(ParseError::Truncated("snmp value line"))?;
        let mut names = fields(rest);
        let mut vals = fields(values);
        loop {
            match (names.next(), vals.next()) {
                (Some(n), Some(v)) => match parse_i64(v) {
                    Some(x) if x >= 0 => each(n, x as u64),
                    Some(_) => {}
                    None => return Err(ParseError::Malformed("snmp value")),
                },
                (None, None) => return Ok(true),
                _ => return Err(ParseError::Truncated("snmp header/value count")),
            }
        }
    }
    Ok(false)
}

/// Fills the `Tcp:` fields from /proc/net/snmp.
pub fn parse_snmp(buf: &[u8], out: &mut TcpCounters) -> Result<(), ParseError> {
    let found = snmp_pairs(buf, b"Tcp:", |n, v| {
        let slot = match n {
            b"RetransSegs" => &mut out.retrans_segs,
            b"OutRsts" => &mut out.out_rsts,
            b"InErrs" => &mut out.in_errs,
            b"EstabResets" => &mut out.estab_resets,
            b"AttemptFails" => &mut out.attempt_fails,
            _ => return,
        };
        *slot = Some(v);
    })?;
    if found {
        Ok(())
    } else {
        Err(ParseError::Truncated("no Tcp: lines"))
    }
}

/// Fills the `TcpExt:` fields from /proc/net/netstat.
pub fn parse_netstat(buf: &[u8], out: &mut TcpCounters) -> Result<(), ParseError> {
    let found = snmp_pairs(buf, b"TcpExt:", |n, v| {
        let slot = match n {
            b"TCPTimeouts" => &mut out.timeouts,
            b"TCPAbortOnTimeout" => &mut out.timeout_aborts,
            b"ListenDrops" => &mut out.listen_drops,
            _ => return,
        };
        *slot = Some(v);
    })?;
    if found {
        Ok(())
    } else {
        Err(ParseError::Truncated("no TcpExt: lines"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snmp_by_name() {
        let snmp = b"Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
Tcp: 1 200 120000 -1 10 20 3 4 5 600 700 8 9 10 0\n";
        let mut t = TcpCounters::default();
        parse_snmp(snmp, &mut t).unwrap();
        assert_eq!(
            (
                t.retrans_segs,
                t.out_rsts,
                t.in_errs,
                t.estab_resets,
                t.attempt_fails
            ),
            (Some(8), Some(10), Some(9), Some(4), Some(3))
        );
        // reordered columns still match by name
        let re = b"Tcp: OutRsts RetransSegs\nTcp: 1 2\n";
        let mut t = TcpCounters::default();
        parse_snmp(re, &mut t).unwrap();
        assert_eq!((t.out_rsts, t.retrans_segs), (Some(1), Some(2)));
        assert!(parse_snmp(b"Tcp: A B\nTcp: 1\n", &mut t).is_err());
        assert!(parse_snmp(b"Tcp: A B\n", &mut t).is_err());
        assert!(parse_snmp(b"Ip: A\nIp: 1\n", &mut t).is_err());
        assert!(parse_snmp(b"Tcp: A\nTcp: zz\n", &mut t).is_err());
    }

    #[test]
    fn netstat() {
        let s =
            b"TcpExt: SyncookiesSent ListenDrops TCPTimeouts TCPAbortOnTimeout\nTcpExt: 0 5 6 7\n\
IpExt: InNoRoutes\nIpExt: 0\n";
        let mut t = TcpCounters::default();
        parse_netstat(s, &mut t).unwrap();
        assert_eq!(
            (t.listen_drops, t.timeouts, t.timeout_aborts),
            (Some(5), Some(6), Some(7))
        );
    }
}
