//! `/proc/PID/stat` (also `/proc/PID/task/TID/stat`).

use super::{ParseError, fields, parse_u64, req_u64};

/// Bytes of comm kept. The kernel's limit is TASK_COMM_LEN 16 (15 + NUL), but since 4.x kernel
/// worker threads show longer names in /proc/PID/stat ("kworker/u8:2-events_unbound"); those
/// are cut to the wire's `COMM_LEN` by the sampler. 64 holds every name the kernel prints.
pub(crate) const COMM_BUF: usize = 64;

/// The fields of /proc/PID/stat the agent uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidStat {
    pub pid: u32,
    comm: [u8; COMM_BUF],
    comm_len: u8,
    /// State letter: R S D Z T t X I ...
    pub state: u8,
    pub ppid: u32,
    /// Ticks (USER_HZ) in user and kernel mode over the whole life.
    pub utime: u64,
    pub stime: u64,
    pub num_threads: u32,
    /// Ticks since boot at which the task started: with the pid, its identity.
    pub starttime: u64,
}

impl PidStat {
    /// The raw comm bytes (between the first '(' and the last ')', cut at `COMM_BUF`).
    pub fn comm(&self) -> &[u8] {
        &self.comm[..self.comm_len as usize]
    }
}

/// Parses one stat line. The comm may hold spaces and parentheses (`a) b (c`): it ends at the
/// LAST ')' of the line, since every field after it is a number or a state letter.
pub fn parse_pid_stat(buf: &[u8]) -> Result<PidStat, ParseError> {
    let open = buf
        .iter()
        .position(|&b| b == b'(')
        .ok_or(ParseError::Truncated("no '(' in stat"))?;
    let close = super::rfind_byte(buf, b')').ok_or(ParseError::Truncated("no ')' in stat"))?;
    if close < open {
        return Err(ParseError::Malformed("')' before '(' in stat"));
    }
    let pid = parse_u64(super::trim(&buf[..open]))
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(ParseError::Malformed("pid"))?;
    let name = &buf[open + 1..close];
    let mut comm = [0u8; COMM_BUF];
    let n = name.len().min(COMM_BUF);
    comm[..n].copy_from_slice(&name[..n]);

    // Fields after ')': index 0 is field 3 (state) of proc(5).
    let mut f = fields(&buf[close + 1..]);
    let state = match f.next() {
        Some([c]) if c.is_ascii_alphabetic() => *c,
        Some(_) => return Err(ParseError::Malformed("state")),
        None => return Err(ParseError::Truncated("state")),
    };
    let ppid = req_u64(f.next(), "ppid")?;
    // Skip pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt (fields 5..=13).
    // tty_nr and tpgid may be -1 style values on some kernels: only skip them.
    let mut f = f.skip(9);
    let utime = req_u64(f.next(), "utime")?;
    let stime = req_u64(f.next(), "stime")?;
    // cutime cstime priority nice (16..=19); priority and nice may be negative.
    let mut f = f.skip(4);
    let num_threads = req_u64(f.next(), "num_threads")?;
    let _itrealvalue = f.next().ok_or(ParseError::Truncated("itrealvalue"))?;
    let starttime = req_u64(f.next(), "starttime")?;
    Ok(PidStat {
        pid,
        comm,
        comm_len: n as u8,
        state,
        ppid: u32::try_from(ppid).map_err(|_| ParseError::Malformed("ppid"))?,
        utime,
        stime,
        num_threads: u32::try_from(num_threads)
            .map_err(|_| ParseError::Malformed("num_threads"))?,
        starttime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(comm: &str) -> Vec<u8> {
        format!(
            "1234 ({comm}) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 98765 \
             1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        )
        .into_bytes()
    }

    #[test]
    fn comm_with_spaces_and_parens() {
        for c in ["(sd-pam)", "a) b (c", "tricky ) 1 2 3", "", "x"] {
            let p = parse_pid_stat(&stat(c)).unwrap();
            assert_eq!(p.comm(), c.as_bytes());
            assert_eq!((p.pid, p.state, p.ppid), (1234, b'S', 1));
            assert_eq!(
                (p.utime, p.stime, p.num_threads, p.starttime),
                (250, 75, 3, 98765)
            );
        }
    }

    #[test]
    fn stat_errors() {
        let s = stat("x");
        assert!(matches!(
            parse_pid_stat(&s[..40]),
            Err(ParseError::Truncated(_))
        ));
        assert!(parse_pid_stat(b"").is_err());
        assert!(parse_pid_stat(b"12 (a) 7 1").is_err());
        assert!(parse_pid_stat(b"x (a) S 1").is_err());
        assert!(parse_pid_stat(b") 1 (").is_err());
        let g = String::from_utf8(stat("x"))
            .unwrap()
            .replace(" 250 ", " 2x0 ");
        assert_eq!(
            parse_pid_stat(g.as_bytes()),
            Err(ParseError::Malformed("utime"))
        );
    }
}
