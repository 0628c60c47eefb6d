//! `/proc/net/tcp` and `/proc/net/tcp6` lines (the 3.10 fallback of sock_diag: addresses,
//! state, queues, inode; no tcp_info), and the socket inode of a `/proc/PID/fd/N` link.

use super::{ParseError, fields, lines};

/// One line of /proc/net/tcp or /proc/net/tcp6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcTcp {
    pub local: [u8; 16],
    pub local_port: u16,
    pub remote: [u8; 16],
    pub remote_port: u16,
    pub state: u8,
    pub tx_queue: u32,
    pub rx_queue: u32,
    /// Retransmissions of the current segment (the `retrnsmt` column).
    pub retransmits: u32,
    pub inode: u32,
}

fn hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        v = v << 4 | (c as char).to_digit(16)? as u64;
    }
    Some(v)
}

/// "0100007F:1F90" (IPv4: one host-order word) or 32 hex digits (IPv6: four words) + port.
fn addr(s: &[u8]) -> Option<([u8; 16], u16)> {
    let colon = s.iter().position(|&b| b == b':')?;
    let (a, p) = (&s[..colon], &s[colon + 1..]);
    let port = u16::try_from(hex(p)?).ok()?;
    let mut out = [0u8; 16];
    match a.len() {
        8 | 32 => {
            for (k, w) in a.chunks(8).enumerate() {
                let v = hex(w)? as u32;
                out[k * 4..k * 4 + 4].copy_from_slice(&v.to_ne_bytes());
            }
        }
        _ => return None,
    }
    Some((out, port))
}

/// The sockets of /proc/net/tcp(6) (the header line is skipped).
pub fn proc_net_tcp(buf: &[u8]) -> impl Iterator<Item = Result<ProcTcp, ParseError>> + '_ {
    lines(buf).skip(1).map(|l| {
        let f: heapless::Vec<&[u8], 12> = fields(l).take(12).collect();
        if f.len() < 10 {
            return Err(ParseError::Truncated("/proc/net/tcp line"));
        }
        let (local, local_port) = addr(f[1]).ok_or(ParseError::Malformed("local address"))?;
        let (remote, remote_port) = addr(f[2]).ok_or(ParseError::Malformed("remote address"))?;
        let state = hex(f[3])
            .and_then(|v| u8::try_from(v).ok())
            .ok_or(ParseError::Malformed("state"))?;
        let q = f[4];
        let c = q
            .iter()
            .position(|&b| b == b':')
            .ok_or(ParseError::Malformed("queues"))?;
        let tx_queue = hex(&q[..c])
            .and_then(|v| u32::try_from(v).ok())
            .ok_or(ParseError::Malformed("tx_queue"))?;
        let rx_queue = hex(&q[c + 1..])
            .and_then(|v| u32::try_from(v).ok())
            .ok_or(ParseError::Malformed("rx_queue"))?;
        let retransmits = hex(f[6])
            .and_then(|v| u32::try_from(v).ok())
            .ok_or(ParseError::Malformed("retrnsmt"))?;
        let inode = super::parse_u64(f[9])
            .and_then(|v| u32::try_from(v).ok())
            .ok_or(ParseError::Malformed("inode"))?;
        Ok(ProcTcp {
            local,
            local_port,
            remote,
            remote_port,
            state,
            tx_queue,
            rx_queue,
            retransmits,
            inode,
        })
    })
}

/// The inode of a `/proc/PID/fd/N` link target `socket:[12345]`; None for other files.
pub fn socket_inode(link: &[u8]) -> Option<u32> {
    let inner = link.strip_prefix(b"socket:[")?.strip_suffix(b"]")?;
    super::parse_u64(inner).and_then(|v| u32::try_from(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_lines_3_10_layout() {
        let t = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100000A:0369 0200000A:9C40 01 00000010:00000020 01:00000014 00000003     0        0 4711 2 ffff880037a1e000 20 4 30 10 -1
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 ffff880037a1e700 100 0 0 10 0
";
        let v: Vec<_> = proc_net_tcp(t).collect();
        assert_eq!(v.len(), 2);
        let a = v[0].unwrap();
        assert_eq!(&a.local[..4], &[10, 0, 0, 1]);
        assert_eq!((a.local_port, a.remote_port, a.state), (873, 40000, 1));
        assert_eq!(
            (a.tx_queue, a.rx_queue, a.retransmits, a.inode),
            (16, 32, 3, 4711)
        );
        assert_eq!(v[1].unwrap().state, 10);
        let six = b"hdr
   0: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000001000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0 100 0 0 10 0
";
        let s = proc_net_tcp(six).next().unwrap().unwrap();
        assert_eq!(&s.local[10..16], &[0xff, 0xff, 127, 0, 0, 1]);
        assert_eq!(s.inode, 99);
        assert!(
            proc_net_tcp(b"h\n 0: zz:1 00:0 01 0:0 0 0 0 0 1\n")
                .next()
                .unwrap()
                .is_err()
        );
        assert!(
            proc_net_tcp(b"h\n 0: 0100000A:0369\n")
                .next()
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn socket_links() {
        assert_eq!(socket_inode(b"socket:[4711]"), Some(4711));
        assert_eq!(socket_inode(b"pipe:[4711]"), None);
        assert_eq!(socket_inode(b"socket:[]"), None);
        assert_eq!(socket_inode(b"/dev/null"), None);
    }
}
