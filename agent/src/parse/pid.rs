//! `/proc/PID/stat` (also `/proc/PID/task/TID/stat`), `/proc/PID/schedstat` and
//! `/proc/PID/cmdline`.

use super::{ParseError, fields, parse_u64, req_u64};
use nasprobe_proto::CMDLINE_LEN;

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
    let close = buf
        .iter()
        .rposition(|&b| b == b')')
        .ok_or(ParseError::Truncated("no ')' in stat"))?;
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

/// /proc/PID/schedstat: "on_cpu_ns run_delay_ns timeslices". Returns run_delay in ns.
pub fn parse_schedstat(buf: &[u8]) -> Result<u64, ParseError> {
    let mut f = fields(buf);
    req_u64(f.next(), "schedstat on_cpu")?;
    req_u64(f.next(), "schedstat run_delay")
}

/// Patterns always masked in command lines; `--redact` adds more.
pub const DEFAULT_REDACT: [&[u8]; 4] = [b"password=", b"--password", b"token=", b"key="];

/// What replaces a masked value.
pub(crate) const MASK: &str = "***";

/// Formats a raw /proc/PID/cmdline (NUL-separated arguments) for display: arguments joined
/// by one space, secrets masked, at most `max` bytes (capped at `CMDLINE_LEN`), non-UTF-8
/// bytes as '?'.
///
/// Masking: where an argument contains a pattern (ASCII case-insensitive), the rest of that
/// argument after the pattern (after a following '=' when the pattern has none) becomes `***`.
/// An argument that IS a pattern (`--password`) masks the whole next argument.
pub fn format_cmdline<'p>(
    raw: &[u8],
    patterns: impl Iterator<Item = &'p [u8]> + Clone,
    max: usize,
    out: &mut heapless::String<CMDLINE_LEN>,
) {
    out.clear();
    let max = max.min(CMDLINE_LEN);
    let raw = raw.strip_suffix(b"\0").unwrap_or(raw);
    if raw.is_empty() {
        return;
    }
    let mut mask_next = false;
    let mut first = true;
    for arg in raw.split(|&b| b == 0) {
        if !first && !push_label(out, b" ", max) {
            return;
        }
        first = false;
        if mask_next {
            mask_next = false;
            if !push_label(out, MASK.as_bytes(), max) {
                return;
            }
            continue;
        }
        let mut cut = None;
        for p in patterns.clone() {
            if p.is_empty() {
                continue;
            }
            if let Some(at) = find_ci(arg, p) {
                let mut end = at + p.len();
                if end < arg.len() && !p.ends_with(b"=") && arg[end] == b'=' {
                    end += 1;
                }
                if end == arg.len() {
                    // Nothing follows the pattern in this argument: the value, if any, is the
                    // next one (`--password X`, `password= X`, `x-token= X`). Found by fuzzing:
                    // `password=` ending an argument that is not the pattern itself let the next
                    // argument through.
                    mask_next = true;
                    if !arg.ends_with(b"=") {
                        continue;
                    }
                }
                cut = Some(cut.map_or(end, |c: usize| c.min(end)));
            }
        }
        match cut {
            Some(end) => {
                if !push_label(out, &arg[..end], max) || !push_label(out, MASK.as_bytes(), max) {
                    return;
                }
            }
            None => {
                if !push_label(out, arg, max) {
                    return;
                }
            }
        }
    }
}

/// Appends sanitized bytes; false when `max` was reached (the output is then complete).
fn push_label(out: &mut heapless::String<CMDLINE_LEN>, bytes: &[u8], max: usize) -> bool {
    let mut tmp = heapless::String::<CMDLINE_LEN>::new();
    let room = max.saturating_sub(out.len());
    let complete = super::to_label(bytes, room, &mut tmp);
    let _ = out.push_str(&tmp);
    complete
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
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

    #[test]
    fn schedstat() {
        assert_eq!(parse_schedstat(b"150777 293972 5\n"), Ok(293972));
        assert!(parse_schedstat(b"150777").is_err());
    }

    fn fmt(raw: &[u8], extra: &[&[u8]], max: usize) -> String {
        let mut out = heapless::String::new();
        format_cmdline(
            raw,
            DEFAULT_REDACT.iter().copied().chain(extra.iter().copied()),
            max,
            &mut out,
        );
        out.as_str().to_string()
    }

    #[test]
    fn cmdline() {
        assert_eq!(
            fmt(b"btrfs\0send\0-k\x0028399387\0", &[], 256),
            "btrfs send -k 28399387"
        );
        assert_eq!(fmt(b"", &[], 256), "");
        assert_eq!(
            fmt(b"a\0password=hunter2\0b\0", &[], 256),
            "a password=*** b"
        );
        assert_eq!(
            fmt(b"x\0--password\0hunter2\0y", &[], 256),
            "x --password *** y"
        );
        assert_eq!(
            fmt(b"x\0--password=hunter2\0", &[], 256),
            "x --password=***"
        );
        assert_eq!(fmt(b"x\0--TOKEN=abc\0", &[], 256), "x --TOKEN=***");
        // A pattern ending its argument: the next argument is the value.
        assert_eq!(
            fmt(b"a\0password=\0hunter2\0", &[], 256),
            "a password=*** ***"
        );
        assert_eq!(
            fmt(b"a\0-password=\0hunter1\0b", &[], 256),
            "a -password=*** *** b"
        );
        assert_eq!(
            fmt(b"a\0--password=\0hunter2\0", &[], 256),
            "a --password=*** ***"
        );
        assert_eq!(fmt(b"a\0x-token=\0t\0", &[], 256), "a x-token=*** ***");
        assert_eq!(fmt(b"curl\0-u\0me:pw\0", &[b"-u"], 256), "curl -u ***");
        assert_eq!(fmt(b"abcdef\0ghi", &[], 4), "abcd");
        assert_eq!(fmt(b"ab\0cd", &[], 3), "ab ");
        assert_eq!(fmt(b"a\xff\nb", &[], 256), "a? b");
        let long = vec![b'x'; 1000];
        assert_eq!(fmt(&long, &[], 256).len(), 256);
    }
}
