//! Netlink sock_diag dumps of TCP sockets: `inet_diag_msg` with the `INET_DIAG_INFO`
//! attribute, a `struct tcp_info` whose length tells the kernel's age (104 bytes on 3.10, 192
//! from 4.10 with busy/rwnd/sndbuf-limited times), and the dump request. All in host byte order
//! except ports and addresses (network order, as the kernel keeps them).

use super::ParseError;
use super::netlink::{
    NLMSG_DONE, NLMSG_ERROR, NLMSG_HDR, error_code, frames, u16_at, u32_at, u64_at,
};
use nasprobe_proto::TcpConnInfo;

/// SOCK_DIAG_BY_FAMILY (linux/sock_diag.h).
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
const INET_DIAG_MSG_LEN: usize = 72;
const INET_DIAG_INFO: u16 = 2;
/// `struct tcp_info` of 3.10 (up to `tcpi_total_retrans`).
pub const TCP_INFO_3_10: usize = 104;

/// One TCP socket of a dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiagSock {
    /// AF_INET (2) or AF_INET6 (10).
    pub family: u8,
    /// TCP state (1 ESTABLISHED .. 11 CLOSING, 10 LISTEN).
    pub state: u8,
    /// Addresses as the kernel keeps them (IPv4 in the first 4 bytes); ports in host order.
    pub local: [u8; 16],
    pub local_port: u16,
    pub remote: [u8; 16],
    pub remote_port: u16,
    pub inode: u32,
    /// Receive queue (unread bytes) and send queue (unacknowledged bytes) of an established
    /// socket.
    pub rqueue: u32,
    pub wqueue: u32,
    pub info: Option<TcpInfo>,
}

/// The fields of `struct tcp_info` the agent reports (the wire's [`TcpConnInfo`]: None where
/// the kernel's struct is too short to have them) and the retransmissions of the current
/// segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpInfo {
    pub retransmits: u8,
    pub info: TcpConnInfo,
}

/// `struct tcp_info` of any kernel since 3.10; shorter than 3.10's is an error.
pub fn parse_tcp_info(b: &[u8]) -> Result<TcpInfo, ParseError> {
    if b.len() < TCP_INFO_3_10 {
        return Err(ParseError::Truncated("tcp_info"));
    }
    Ok(TcpInfo {
        retransmits: b[2],
        info: TcpConnInfo {
            probes: b[3],
            backoff: b[4],
            rto_us: u32_at(b, 8),
            rtt_us: u32_at(b, 68),
            snd_cwnd: u32_at(b, 80),
            total_retrans: u32_at(b, 100),
            last_data_sent_ms: u32_at(b, 44),
            last_data_recv_ms: u32_at(b, 52),
            bytes_acked: u64_at(b, 120),
            bytes_received: u64_at(b, 128),
            delivery_rate: u64_at(b, 160),
            busy_time_us: u64_at(b, 168),
            rwnd_limited_us: u64_at(b, 176),
            sndbuf_limited_us: u64_at(b, 184),
        },
    })
}

/// One message of a sock_diag dump datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagItem {
    Sock(DiagSock),
    /// The dump is complete.
    Done,
    /// The kernel refused the request (errno).
    Error(u32),
}

/// The messages of one datagram of a dump (several sockets per datagram); it ends at the
/// first Done, error or unframeable message.
pub fn dump_messages(buf: &[u8]) -> impl Iterator<Item = Result<DiagItem, ParseError>> + '_ {
    let mut ended = false;
    frames(buf).map_while(move |f| {
        if ended {
            return None;
        }
        let item = f.and_then(|(kind, p)| match kind {
            NLMSG_DONE => Ok(DiagItem::Done),
            NLMSG_ERROR => error_code(p).map(DiagItem::Error),
            SOCK_DIAG_BY_FAMILY => parse_diag_msg(p).map(DiagItem::Sock),
            _ => Err(ParseError::Malformed("nlmsg_type")),
        });
        ended = !matches!(item, Ok(DiagItem::Sock(_)));
        Some(item)
    })
}

fn parse_diag_msg(p: &[u8]) -> Result<DiagSock, ParseError> {
    if p.len() < INET_DIAG_MSG_LEN {
        return Err(ParseError::Truncated("inet_diag_msg"));
    }
    let mut local = [0u8; 16];
    local.copy_from_slice(&p[8..24]);
    let mut remote = [0u8; 16];
    remote.copy_from_slice(&p[24..40]);
    let mut s = DiagSock {
        family: p[0],
        state: p[1],
        local,
        local_port: u16::from_be_bytes([p[4], p[5]]),
        remote,
        remote_port: u16::from_be_bytes([p[6], p[7]]),
        inode: u32_at(p, 68),
        rqueue: u32_at(p, 56),
        wqueue: u32_at(p, 60),
        info: None,
    };
    // Attributes: struct rtattr { u16 len; u16 type; } + payload, 4-aligned.
    let mut a = &p[INET_DIAG_MSG_LEN..];
    while a.len() >= 4 {
        let alen = u16_at(a, 0) as usize;
        if alen < 4 || alen > a.len() {
            return Err(ParseError::Malformed("rtattr len"));
        }
        if u16_at(a, 2) == INET_DIAG_INFO {
            s.info = Some(parse_tcp_info(&a[4..alen])?);
        }
        a = &a[(alen.div_ceil(4) * 4).min(a.len())..];
    }
    Ok(s)
}

/// A dump request for all TCP sockets of `family` (AF_INET or AF_INET6) except listeners,
/// with `tcp_info`.
pub fn dump_request(family: u8, seq: u32) -> [u8; NLMSG_HDR + 56] {
    let mut m = [0u8; NLMSG_HDR + 56];
    let total = m.len() as u32;
    m[0..4].copy_from_slice(&total.to_ne_bytes());
    m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    // NLM_F_REQUEST | NLM_F_DUMP (NLM_F_ROOT | NLM_F_MATCH).
    m[6..8].copy_from_slice(&0x301u16.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    let r = NLMSG_HDR;
    m[r] = family;
    m[r + 1] = 6; // IPPROTO_TCP
    m[r + 2] = 1 << (INET_DIAG_INFO - 1);
    // idiag_states: every state but LISTEN (10).
    let states: u32 = !(1u32 << 10);
    m[r + 4..r + 8].copy_from_slice(&states.to_ne_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `struct tcp_info` of `len` bytes with recognisable values.
    fn info(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[2] = 3; // retransmits
        b[3] = 1; // probes
        b[4] = 2; // backoff
        b[8..12].copy_from_slice(&1_600_000u32.to_ne_bytes());
        b[44..48].copy_from_slice(&40_000u32.to_ne_bytes());
        b[68..72].copy_from_slice(&180_000u32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        if len >= 104 {
            b[100..104].copy_from_slice(&7u32.to_ne_bytes());
        }
        if len >= 136 {
            b[120..128].copy_from_slice(&123_456u64.to_ne_bytes());
        }
        if len >= 192 {
            b[176..184].copy_from_slice(&5_000_000u64.to_ne_bytes());
        }
        b
    }

    fn diag_msg(inode: u32, info_len: Option<usize>) -> Vec<u8> {
        let mut p = vec![0u8; INET_DIAG_MSG_LEN];
        p[0] = 2;
        p[1] = 1;
        p[4..6].copy_from_slice(&873u16.to_be_bytes());
        p[6..8].copy_from_slice(&40000u16.to_be_bytes());
        p[8..12].copy_from_slice(&[10, 0, 0, 1]);
        p[24..28].copy_from_slice(&[10, 0, 0, 2]);
        p[56..60].copy_from_slice(&5u32.to_ne_bytes());
        p[68..72].copy_from_slice(&inode.to_ne_bytes());
        if let Some(n) = info_len {
            p.extend(((4 + n) as u16).to_ne_bytes());
            p.extend(INET_DIAG_INFO.to_ne_bytes());
            p.extend(info(n));
            while !p.len().is_multiple_of(4) {
                p.push(0);
            }
        }
        let mut m = Vec::new();
        m.extend(((NLMSG_HDR + p.len()) as u32).to_ne_bytes());
        m.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m.extend([0u8; 10]);
        m.extend(p);
        m
    }

    #[test]
    fn tcp_info_of_3_10_and_4_10() {
        let t = parse_tcp_info(&info(104)).unwrap();
        let old = t.info;
        assert_eq!(
            (
                t.retransmits,
                old.probes,
                old.backoff,
                old.rto_us,
                old.rtt_us
            ),
            (3, 1, 2, 1_600_000, 180_000)
        );
        assert_eq!(
            (old.snd_cwnd, old.total_retrans, old.last_data_sent_ms),
            (10, 7, 40_000)
        );
        assert_eq!((old.bytes_acked, old.rwnd_limited_us), (None, None));
        let new = parse_tcp_info(&info(232)).unwrap().info;
        assert_eq!(new.bytes_acked, Some(123_456));
        assert_eq!(new.rwnd_limited_us, Some(5_000_000));
        // 4.2-4.8: bytes counters, no limited times.
        let mid = parse_tcp_info(&info(144)).unwrap().info;
        assert_eq!((mid.bytes_acked, mid.busy_time_us), (Some(123_456), None));
        assert_eq!(
            parse_tcp_info(&info(103)),
            Err(ParseError::Truncated("tcp_info"))
        );
    }

    #[test]
    fn dump_with_two_sockets_then_done() {
        let mut d = diag_msg(111, Some(104));
        d.extend(diag_msg(222, None));
        let mut done = vec![0u8; 20];
        done[0..4].copy_from_slice(&20u32.to_ne_bytes());
        done[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        d.extend(done);
        let v: Vec<_> = dump_messages(&d).collect();
        assert_eq!(v.len(), 3);
        let Ok(DiagItem::Sock(a)) = v[0] else {
            panic!("{v:?}")
        };
        assert_eq!((a.local_port, a.remote_port, a.inode), (873, 40000, 111));
        assert_eq!(&a.remote[..4], &[10, 0, 0, 2]);
        assert_eq!(a.rqueue, 5);
        assert_eq!(a.info.map(|i| i.info.total_retrans), Some(7));
        assert!(matches!(
            v[1],
            Ok(DiagItem::Sock(DiagSock {
                inode: 222,
                info: None,
                ..
            }))
        ));
        assert_eq!(v[2], Ok(DiagItem::Done));
    }

    #[test]
    fn refusals_and_garbage_are_typed() {
        let mut e = vec![0u8; 36];
        e[0..4].copy_from_slice(&36u32.to_ne_bytes());
        e[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e[16..20].copy_from_slice(&(-13i32).to_ne_bytes());
        assert_eq!(
            dump_messages(&e).collect::<Vec<_>>(),
            [Ok(DiagItem::Error(13))]
        );
        let d = diag_msg(1, Some(104));
        for cut in 1..d.len() {
            let v: Vec<_> = dump_messages(&d[..cut]).collect();
            assert!(v.iter().any(|r| r.is_err()), "cut {cut}: {v:?}");
        }
        // An attribute claiming more than there is.
        let mut bad = diag_msg(1, Some(104));
        let at = NLMSG_HDR + INET_DIAG_MSG_LEN;
        bad[at..at + 2].copy_from_slice(&500u16.to_ne_bytes());
        assert_eq!(
            dump_messages(&bad).next(),
            Some(Err(ParseError::Malformed("rtattr len")))
        );
    }

    #[test]
    fn request_layout() {
        let r = dump_request(10, 9);
        assert_eq!(u32_at(&r, 0) as usize, r.len());
        assert_eq!(u16_at(&r, 4), SOCK_DIAG_BY_FAMILY);
        assert_eq!((r[16], r[17], r[18]), (10, 6, 2));
    }
}
