//! Pure parser of kernel log records as `/dev/kmsg` gives them (one record per read, Linux
//! 3.5+): `PRI,SEQ,TS_USEC,FLAGS;MESSAGE` then optional ` KEY=VALUE` continuation lines, and the
//! few messages the agent acts on: OOM kills, segfaults, hung tasks, NIC trouble, TCP memory.

use super::{ParseError, parse_u64};

/// One record: syslog level (0 emerg .. 7 debug), sequence number, µs since boot, the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub level: u8,
    pub seq: u64,
    pub ts_us: u64,
    pub text: &'a [u8],
}

pub fn parse_record(buf: &[u8]) -> Result<Record<'_>, ParseError> {
    let semi = buf
        .iter()
        .position(|&b| b == b';')
        .ok_or(ParseError::Truncated("kmsg prefix"))?;
    let mut f = buf[..semi].split(|&b| b == b',');
    let pri = f
        .next()
        .and_then(parse_u64)
        .ok_or(ParseError::Malformed("kmsg priority"))?;
    let seq = f
        .next()
        .and_then(parse_u64)
        .ok_or(ParseError::Malformed("kmsg sequence"))?;
    let ts_us = f
        .next()
        .and_then(parse_u64)
        .ok_or(ParseError::Malformed("kmsg timestamp"))?;
    let rest = &buf[semi + 1..];
    // The message ends at the first newline; continuation lines (" SUBSYSTEM=...") follow.
    let text = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
    Ok(Record {
        level: (pri & 7) as u8,
        seq,
        ts_us,
        text,
    })
}

/// What a kernel message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind<'a> {
    /// The OOM killer killed this process: "Killed process PID (COMM)" (3.10 on, memory
    /// cgroup or global) or "oom-kill:...,pid=PID,..." (4.19+).
    OomKill {
        pid: u32,
    },
    /// `COMM[PID]: segfault at ...` (user-space crash).
    Segfault {
        pid: u32,
    },
    /// "INFO: task COMM:PID blocked for more than N seconds." (hung task).
    HungTask {
        pid: u32,
    },
    /// A line naming a network interface with link loss, a transmit timeout or a reset (`name`
    /// is the first word that `is_nic` accepts).
    Nic {
        name: &'a [u8],
    },
    /// "TCP: out of memory -- consider tuning tcp_mem".
    TcpMemory,
    Other,
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn pid_at(s: &[u8]) -> Option<u32> {
    let end = s
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    parse_u64(&s[..end]).and_then(|v| u32::try_from(v).ok())
}

const NIC_TROUBLE: [&[u8]; 8] = [
    b"Link is Down",
    b"link is down",
    b"link down",
    b"NIC Link is Down",
    b"transmit queue",
    b"tx timeout",
    b"Reset adapter",
    b"reset adapter",
];

/// Sorts a message: the process or NIC it is about, if it is one the agent reports.
pub fn classify<'a>(text: &'a [u8], is_nic: &dyn Fn(&[u8]) -> bool) -> Kind<'a> {
    if let Some(at) = find(text, b"Killed process ")
        && let Some(pid) = pid_at(&text[at + 15..])
    {
        return Kind::OomKill { pid };
    }
    if text.starts_with(b"oom-kill:")
        && let Some(at) = find(text, b",pid=")
        && let Some(pid) = pid_at(&text[at + 5..])
    {
        return Kind::OomKill { pid };
    }
    if let Some(at) = find(text, b"]: segfault at ") {
        let open = text[..at].iter().rposition(|&b| b == b'[');
        if let Some(pid) = open.and_then(|o| pid_at(&text[o + 1..at])) {
            return Kind::Segfault { pid };
        }
    }
    if let Some(rest) = text.strip_prefix(b"INFO: task ")
        && let Some(at) = find(rest, b" blocked for more than ")
    {
        let colon = rest[..at].iter().rposition(|&b| b == b':');
        if let Some(pid) = colon.and_then(|c| pid_at(&rest[c + 1..at])) {
            return Kind::HungTask { pid };
        }
    }
    if find(text, b"TCP: out of memory").is_some() {
        return Kind::TcpMemory;
    }
    if NIC_TROUBLE.iter().any(|t| find(text, t).is_some()) {
        for w in text.split(|&b| b == b' ' || b == b':' || b == b',' || b == b'(' || b == b')') {
            if !w.is_empty() && is_nic(w) {
                return Kind::Nic { name: w };
            }
        }
    }
    Kind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> Kind<'_> {
        classify(line.as_bytes(), &|w| w == b"eth0" || w == b"egiga0")
    }

    #[test]
    fn records() {
        let r = parse_record(b"6,421,1411508650,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=python3,pid=21859,uid=0\n").unwrap();
        assert_eq!((r.level, r.seq, r.ts_us), (6, 421, 1_411_508_650));
        assert!(r.text.ends_with(b"uid=0"));
        // Facility bits above the level; continuation lines are not part of the text.
        let r = parse_record(b"30,7,100,c;eth0: link down\n SUBSYSTEM=net\n DEVICE=n2\n").unwrap();
        assert_eq!((r.level, r.text), (6, &b"eth0: link down"[..]));
        assert_eq!(
            parse_record(b"no prefix"),
            Err(ParseError::Truncated("kmsg prefix"))
        );
        assert_eq!(
            parse_record(b"x,1,2;m"),
            Err(ParseError::Malformed("kmsg priority"))
        );
        assert_eq!(
            parse_record(b"6,1;m"),
            Err(ParseError::Malformed("kmsg timestamp"))
        );
    }

    #[test]
    fn oom_lines_of_3_10_and_current_kernels() {
        // 3.10: the choice, then the kill (a child may be sacrificed: the kill is what counts).
        assert_eq!(
            kind("Out of memory: Kill process 1234 (btrfs) score 867 or sacrifice child"),
            Kind::Other
        );
        assert_eq!(
            kind("Killed process 1235 (btrfs) total-vm:123456kB, anon-rss:1000kB, file-rss:0kB"),
            Kind::OomKill { pid: 1235 }
        );
        assert_eq!(
            kind("Memory cgroup out of memory: Kill process 99 (rsync) score 0 or sacrifice child"),
            Kind::Other
        );
        // 5.x+: global and memory cgroup kills, and the 4.19+ summary line.
        assert_eq!(
            kind("Out of memory: Killed process 4242 (rsync) total-vm:78080kB, anon-rss:65152kB"),
            Kind::OomKill { pid: 4242 }
        );
        assert_eq!(
            kind(
                "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=rsync,pid=4242,uid=0"
            ),
            Kind::OomKill { pid: 4242 }
        );
        assert_eq!(
            kind("oom_reaper: reaped process 4242 (rsync), now anon-rss:0kB"),
            Kind::Other
        );
    }

    #[test]
    fn other_messages() {
        assert_eq!(
            kind("rsync[3001]: segfault at 0 ip 00007f sp 00007ffd error 4 in rsync[55+1000]"),
            Kind::Segfault { pid: 3001 }
        );
        assert_eq!(
            kind("INFO: task btrfs-transacti:412 blocked for more than 120 seconds."),
            Kind::HungTask { pid: 412 }
        );
        assert_eq!(
            kind("e1000e: eth0 NIC Link is Down"),
            Kind::Nic { name: b"eth0" }
        );
        assert_eq!(
            kind("NETDEV WATCHDOG: egiga0 (mv643xx_eth): transmit queue 0 timed out"),
            Kind::Nic { name: b"egiga0" }
        );
        // Trouble on an interface the agent does not know: not reported.
        assert_eq!(kind("e1000e: eth9 NIC Link is Down"), Kind::Other);
        assert_eq!(
            kind("TCP: out of memory -- consider tuning tcp_mem"),
            Kind::TcpMemory
        );
        assert_eq!(kind("eth0: renamed from veth1"), Kind::Other);
        // A pid past u32 or no digits: not a pid.
        assert_eq!(kind("Killed process 99999999999 (x)"), Kind::Other);
        assert_eq!(kind("x[]: segfault at 0"), Kind::Other);
    }
}
