//! Pure parser of the kernel's process connector datagrams (netlink `NETLINK_CONNECTOR`,
//! `CN_IDX_PROC`): fork, exec and exit of tasks, and the acknowledgement of a subscription.
//!
//! A datagram holds one or more netlink messages (`nlmsghdr`, 16 bytes, padded to 4), each
//! carrying a `cn_msg` (20 bytes) and a `proc_event` (`what`, `cpu`, `timestamp_ns`, then the
//! event's data). All in host byte order. The layout has been stable since 2.6.15; kernels from
//! 4.18 append `parent_pid`/`parent_tgid` to the exit data, which this parser does not need.

use super::ParseError;
use super::netlink::{
    NLMSG_DONE, NLMSG_ERROR, NLMSG_HDR, NLMSG_NOOP, NLMSG_OVERRUN, error_code, frames, u16_at,
    u32_at, u64_at,
};

const CN_MSG_HDR: usize = 20;
/// `what` + `cpu` + `timestamp_ns`.
const PROC_EVENT_HDR: usize = 16;

/// Connector index and value of the process events (linux/connector.h).
pub const CN_IDX_PROC: u32 = 1;
pub const CN_VAL_PROC: u32 = 1;
/// `enum proc_cn_mcast_op`.
pub const PROC_CN_MCAST_LISTEN: u32 = 1;

const PROC_EVENT_NONE: u32 = 0;
const PROC_EVENT_FORK: u32 = 1;
const PROC_EVENT_EXEC: u32 = 2;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;

/// One message of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcEvent {
    /// Answer to a subscription (`PROC_EVENT_NONE`, or a netlink error message): 0 = accepted,
    /// else an errno (EPERM without CAP_NET_ADMIN). `ack`: the `ack` field of the subscription
    /// it answers plus one (the kernel sends it to every listener of the group, so this is how
    /// a listener knows its own); 0 for a netlink error.
    Ack {
        err: u32,
        ack: u32,
    },
    Fork {
        parent_tgid: u32,
        child_pid: u32,
        child_tgid: u32,
    },
    Exec {
        pid: u32,
        tgid: u32,
    },
    /// A task ended. `pid == tgid`: the process (its main thread) ended.
    Exit {
        pid: u32,
        tgid: u32,
        /// The kernel's `task->exit_code`, in wait(2) status form: see [`ExitCode`].
        exit_code: u32,
        timestamp_ns: u64,
    },
    /// The kernel dropped messages (receive buffer overrun).
    Overrun,
    /// Another event (uid, gid, sid, ptrace, comm, coredump) or another connector's message.
    Other,
}

/// A wait(2) status split: `code` for a normal exit, `signal` (with `core`) for a killed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitCode {
    pub code: Option<u8>,
    pub signal: Option<u8>,
    pub core_dumped: bool,
}

impl ExitCode {
    pub fn from_wait_status(raw: u32) -> ExitCode {
        let sig = (raw & 0x7f) as u8;
        if sig == 0 {
            ExitCode {
                code: Some((raw >> 8) as u8),
                signal: None,
                core_dumped: false,
            }
        } else {
            ExitCode {
                code: None,
                signal: Some(sig),
                core_dumped: raw & 0x80 != 0,
            }
        }
    }
}

/// The messages of one datagram, in order. A message whose length is impossible ends the
/// iteration with an error (the rest of the datagram cannot be framed).
pub fn messages(buf: &[u8]) -> impl Iterator<Item = Result<ProcEvent, ParseError>> + '_ {
    frames(buf).map(|f| f.and_then(|(kind, p)| parse_one(kind, p)))
}

fn parse_one(kind: u16, p: &[u8]) -> Result<ProcEvent, ParseError> {
    match kind {
        NLMSG_NOOP => return Ok(ProcEvent::Other),
        NLMSG_OVERRUN => return Ok(ProcEvent::Overrun),
        NLMSG_ERROR => {
            return Ok(ProcEvent::Ack {
                err: error_code(p)?,
                ack: 0,
            });
        }
        _ => {}
    }
    if p.len() < CN_MSG_HDR {
        return Err(ParseError::Truncated("cn_msg"));
    }
    if u32_at(p, 0) != CN_IDX_PROC || u32_at(p, 4) != CN_VAL_PROC {
        return Ok(ProcEvent::Other);
    }
    let data_len = u16_at(p, 16) as usize;
    let data = &p[CN_MSG_HDR..];
    if data_len > data.len() {
        return Err(ParseError::Malformed("cn_msg len"));
    }
    let ev = &data[..data_len];
    if ev.len() < PROC_EVENT_HDR {
        return Err(ParseError::Truncated("proc_event"));
    }
    let what = u32_at(ev, 0);
    let ts = u64_at(ev, 8).unwrap_or(0);
    let d = &ev[PROC_EVENT_HDR..];
    let need = |n: usize, what: &'static str| {
        if d.len() < n {
            Err(ParseError::Truncated(what))
        } else {
            Ok(())
        }
    };
    Ok(match what {
        PROC_EVENT_NONE => {
            need(4, "ack")?;
            ProcEvent::Ack {
                err: u32_at(d, 0),
                ack: u32_at(p, 12),
            }
        }
        PROC_EVENT_FORK => {
            need(16, "fork")?;
            ProcEvent::Fork {
                parent_tgid: u32_at(d, 4),
                child_pid: u32_at(d, 8),
                child_tgid: u32_at(d, 12),
            }
        }
        PROC_EVENT_EXEC => {
            need(8, "exec")?;
            ProcEvent::Exec {
                pid: u32_at(d, 0),
                tgid: u32_at(d, 4),
            }
        }
        PROC_EVENT_EXIT => {
            need(16, "exit")?;
            ProcEvent::Exit {
                pid: u32_at(d, 0),
                tgid: u32_at(d, 4),
                exit_code: u32_at(d, 8),
                timestamp_ns: ts,
            }
        }
        _ => ProcEvent::Other,
    })
}

/// The subscription message (`PROC_CN_MCAST_LISTEN`) as bytes to send to the kernel; its
/// acknowledgement carries `ack + 1`.
pub fn listen_message(seq: u32, ack: u32, own_pid: u32) -> [u8; NLMSG_HDR + CN_MSG_HDR + 4] {
    let mut m = [0u8; NLMSG_HDR + CN_MSG_HDR + 4];
    let total = m.len() as u32;
    m[0..4].copy_from_slice(&total.to_ne_bytes());
    m[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m[12..16].copy_from_slice(&own_pid.to_ne_bytes());
    let c = NLMSG_HDR;
    m[c..c + 4].copy_from_slice(&CN_IDX_PROC.to_ne_bytes());
    m[c + 4..c + 8].copy_from_slice(&CN_VAL_PROC.to_ne_bytes());
    m[c + 8..c + 12].copy_from_slice(&seq.to_ne_bytes());
    m[c + 12..c + 16].copy_from_slice(&ack.to_ne_bytes());
    m[c + 16..c + 18].copy_from_slice(&4u16.to_ne_bytes());
    m[c + CN_MSG_HDR..].copy_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datagram as the kernel builds it: nlmsghdr, cn_msg, proc_event.
    pub(crate) fn datagram(what: u32, data: &[u32]) -> Vec<u8> {
        let mut ev = Vec::new();
        ev.extend(what.to_ne_bytes());
        ev.extend(1u32.to_ne_bytes());
        ev.extend(123_456_789u64.to_ne_bytes());
        for d in data {
            ev.extend(d.to_ne_bytes());
        }
        let mut cn = Vec::new();
        cn.extend(CN_IDX_PROC.to_ne_bytes());
        cn.extend(CN_VAL_PROC.to_ne_bytes());
        cn.extend(7u32.to_ne_bytes());
        cn.extend(0u32.to_ne_bytes());
        cn.extend((ev.len() as u16).to_ne_bytes());
        cn.extend(0u16.to_ne_bytes());
        cn.extend(ev);
        let mut m = Vec::new();
        m.extend(((NLMSG_HDR + cn.len()) as u32).to_ne_bytes());
        m.extend(NLMSG_DONE.to_ne_bytes());
        m.extend(0u16.to_ne_bytes());
        m.extend(0u32.to_ne_bytes());
        m.extend(0u32.to_ne_bytes());
        m.extend(cn);
        m
    }

    #[test]
    fn exit_fork_exec_ack() {
        // 3.10 exit data: pid, tgid, exit_code, exit_signal.
        let d = datagram(PROC_EVENT_EXIT, &[100, 100, 9, 17]);
        assert_eq!(
            messages(&d).collect::<Vec<_>>(),
            [Ok(ProcEvent::Exit {
                pid: 100,
                tgid: 100,
                exit_code: 9,
                timestamp_ns: 123_456_789
            })]
        );
        // 4.18+ exit data also carries the parent.
        let d = datagram(PROC_EVENT_EXIT, &[101, 100, 3 << 8, 17, 1, 1]);
        assert!(matches!(
            messages(&d).next(),
            Some(Ok(ProcEvent::Exit {
                pid: 101,
                tgid: 100,
                exit_code: 768,
                ..
            }))
        ));
        let d = datagram(PROC_EVENT_FORK, &[1, 1, 200, 200]);
        assert_eq!(
            messages(&d).next(),
            Some(Ok(ProcEvent::Fork {
                parent_tgid: 1,
                child_pid: 200,
                child_tgid: 200
            }))
        );
        let d = datagram(PROC_EVENT_EXEC, &[200, 200]);
        assert_eq!(
            messages(&d).next(),
            Some(Ok(ProcEvent::Exec {
                pid: 200,
                tgid: 200
            }))
        );
        let d = datagram(PROC_EVENT_NONE, &[1]);
        assert_eq!(
            messages(&d).next(),
            Some(Ok(ProcEvent::Ack { err: 1, ack: 0 }))
        );
        // UID change: known, not needed.
        let d = datagram(4, &[1, 1, 0, 0]);
        assert_eq!(messages(&d).next(), Some(Ok(ProcEvent::Other)));
    }

    #[test]
    fn two_messages_in_one_datagram() {
        let mut d = datagram(PROC_EVENT_FORK, &[1, 1, 200, 200]);
        d.extend(datagram(PROC_EVENT_EXIT, &[200, 200, 0, 17]));
        let v: Vec<_> = messages(&d).collect();
        assert_eq!(v.len(), 2);
        assert!(matches!(v[1], Ok(ProcEvent::Exit { exit_code: 0, .. })));
    }

    #[test]
    fn cut_and_lying_lengths_are_typed_errors() {
        let d = datagram(PROC_EVENT_EXIT, &[100, 100, 9, 17]);
        for cut in 1..d.len() {
            let v: Vec<_> = messages(&d[..cut]).collect();
            assert_eq!(v.len(), 1, "cut {cut}");
            assert!(v[0].is_err(), "cut {cut}: {v:?}");
        }
        let mut lie = d.clone();
        lie[0..4].copy_from_slice(&4u32.to_ne_bytes());
        assert_eq!(
            messages(&lie).collect::<Vec<_>>(),
            [Err(ParseError::Malformed("nlmsg_len"))]
        );
        // cn_msg claims more data than the message holds.
        let mut lie = d.clone();
        lie[NLMSG_HDR + 16..NLMSG_HDR + 18].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(
            messages(&lie).next(),
            Some(Err(ParseError::Malformed("cn_msg len")))
        );
        // Another connector (e.g. CN_IDX_CIFS) is not ours.
        let mut other = d;
        other[NLMSG_HDR..NLMSG_HDR + 4].copy_from_slice(&2u32.to_ne_bytes());
        assert_eq!(messages(&other).next(), Some(Ok(ProcEvent::Other)));
    }

    #[test]
    fn netlink_error_and_overrun() {
        let mut m = Vec::new();
        m.extend(36u32.to_ne_bytes());
        m.extend(NLMSG_ERROR.to_ne_bytes());
        m.extend([0u8; 10]);
        m.extend((-1i32).to_ne_bytes());
        m.extend([0u8; 16]);
        assert_eq!(
            messages(&m).next(),
            Some(Ok(ProcEvent::Ack { err: 1, ack: 0 }))
        );
        let mut o = Vec::new();
        o.extend(16u32.to_ne_bytes());
        o.extend(NLMSG_OVERRUN.to_ne_bytes());
        o.extend([0u8; 10]);
        assert_eq!(messages(&o).next(), Some(Ok(ProcEvent::Overrun)));
    }

    #[test]
    fn wait_status() {
        let c = ExitCode::from_wait_status;
        assert_eq!(
            c(3 << 8),
            ExitCode {
                code: Some(3),
                signal: None,
                core_dumped: false
            }
        );
        assert_eq!(
            c(9),
            ExitCode {
                code: None,
                signal: Some(9),
                core_dumped: false
            }
        );
        assert_eq!(
            c(11 | 0x80),
            ExitCode {
                code: None,
                signal: Some(11),
                core_dumped: true
            }
        );
        assert_eq!(c(0).code, Some(0));
    }

    #[test]
    fn listen_message_parses_as_a_connector_message() {
        let m = listen_message(5, 9, 42);
        assert_eq!(u32_at(&m, 0) as usize, m.len());
        // Its payload is the op, not a proc_event: too short for one.
        assert_eq!(
            messages(&m).next(),
            Some(Err(ParseError::Truncated("proc_event")))
        );
    }
}
