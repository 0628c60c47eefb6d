//! `/proc/stat`: per-CPU and total time split, context switches, forks, runnable and blocked.

use super::{ParseError, fields, lines, parse_u64};
use nasprobe_proto::MAX_CPUS;

/// Order of the time fields on a `cpu` line, as the kernel prints them (user nice system idle
/// iowait irq softirq steal; guest and guest_nice follow but are already inside user/nice).
pub(crate) const CPU_FIELDS: usize = 8;
pub(crate) const USER: usize = 0;
pub(crate) const NICE: usize = 1;
pub(crate) const SYSTEM: usize = 2;
pub(crate) const IDLE: usize = 3;
pub const IOWAIT: usize = 4;
pub(crate) const IRQ: usize = 5;
pub(crate) const SOFTIRQ: usize = 6;
pub(crate) const STEAL: usize = 7;

/// Raw cumulative ticks (USER_HZ) of one CPU or of all together. Fields a kernel does not print
/// (steal before 2.6.11, ...) are 0.
pub(crate) type CpuRaw = [u64; CPU_FIELDS];

/// The parsed content of /proc/stat.
#[derive(Debug, Clone, Default)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: Option<CpuRaw>,
    /// `cpuN` lines as (N, ticks), in file order. Offline CPUs have no line. Capacity
    /// `MAX_CPUS` (the wire's limit): a CPU numbered past it is `ParseError::Full`.
    pub cpus: heapless::Vec<(u16, CpuRaw), MAX_CPUS>,
    pub ctxt: Option<u64>,
    /// Forks since boot (every clone: processes and threads).
    pub processes: Option<u64>,
    pub procs_running: Option<u64>,
    pub procs_blocked: Option<u64>,
}

/// Parses /proc/stat into `out` (cleared first).
pub fn parse_stat(buf: &[u8], out: &mut ProcStat) -> Result<(), ParseError> {
    out.total = None;
    out.cpus.clear();
    out.ctxt = None;
    out.processes = None;
    out.procs_running = None;
    out.procs_blocked = None;
    for line in lines(buf) {
        let mut f = fields(line);
        let Some(key) = f.next() else { continue };
        if let Some(num) = key.strip_prefix(b"cpu") {
            let ticks = parse_cpu_fields(f)?;
            if num.is_empty() {
                out.total = Some(ticks);
            } else {
                let n = parse_u64(num).ok_or(ParseError::Malformed("cpu number"))?;
                if n >= MAX_CPUS as u64 {
                    return Err(ParseError::Full("MAX_CPUS"));
                }
                out.cpus
                    .push((n as u16, ticks))
                    .map_err(|_| ParseError::Full("MAX_CPUS"))?;
            }
            continue;
        }
        let slot = match key {
            b"ctxt" => &mut out.ctxt,
            b"processes" => &mut out.processes,
            b"procs_running" => &mut out.procs_running,
            b"procs_blocked" => &mut out.procs_blocked,
            _ => continue,
        };
        let v = f.next().ok_or(ParseError::Truncated("stat counter"))?;
        *slot = Some(parse_u64(v).ok_or(ParseError::Malformed("stat counter"))?);
    }
    if out.total.is_none() {
        return Err(ParseError::Truncated("no cpu line"));
    }
    Ok(())
}

fn parse_cpu_fields<'a>(f: impl Iterator<Item = &'a [u8]>) -> Result<CpuRaw, ParseError> {
    let mut ticks = [0u64; CPU_FIELDS];
    let mut n = 0;
    for (i, v) in f.take(CPU_FIELDS).enumerate() {
        ticks[i] = parse_u64(v).ok_or(ParseError::Malformed("cpu ticks"))?;
        n = i + 1;
    }
    // user nice system idle exist on every kernel since 2.4.
    if n < 4 {
        return Err(ParseError::Truncated("cpu line"));
    }
    Ok(ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern() {
        let s = b"cpu  14291 0 4499 52719 389 0 73 29 0 0\ncpu0 6609 0 2044 27210 73 0 15 11 0 0\n\
cpu1 7681 0 2455 25508 315 0 58 17 0 0\nintr 229094 0 0\nctxt 423243\nbtime 1796044138\n\
processes 10723\nprocs_running 7\nprocs_blocked 1\nsoftirq 1 2 3\n";
        let mut p = ProcStat::default();
        parse_stat(s, &mut p).unwrap();
        assert_eq!(p.total.unwrap()[SYSTEM], 4499);
        assert_eq!(p.cpus.len(), 2);
        assert_eq!(p.cpus[1].0, 1);
        assert_eq!(p.cpus[1].1[IOWAIT], 315);
        assert_eq!(p.ctxt, Some(423243));
        assert_eq!(p.processes, Some(10723));
        assert_eq!(p.procs_running, Some(7));
        assert_eq!(p.procs_blocked, Some(1));
    }

    #[test]
    fn old_kernel_short_lines_and_gaps() {
        let mut p = ProcStat::default();
        parse_stat(b"cpu 1 2 3 4\ncpu3 1 2 3 4 5\n", &mut p).unwrap();
        assert_eq!(p.total.unwrap(), [1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(p.cpus[0].0, 3);
        assert_eq!(p.ctxt, None);
    }

    #[test]
    fn bad_input() {
        let mut p = ProcStat::default();
        assert_eq!(
            parse_stat(b"", &mut p),
            Err(ParseError::Truncated("no cpu line"))
        );
        assert_eq!(
            parse_stat(b"cpu 1 2", &mut p),
            Err(ParseError::Truncated("cpu line"))
        );
        assert_eq!(
            parse_stat(b"cpu 1 2 x 4", &mut p),
            Err(ParseError::Malformed("cpu ticks"))
        );
        assert_eq!(
            parse_stat(b"cpu 1 2 3 4\nctxt", &mut p),
            Err(ParseError::Truncated("stat counter"))
        );
        assert_eq!(
            parse_stat(b"cpu 1 2 3 4\ncpu999 1 2 3 4", &mut p),
            Err(ParseError::Full("MAX_CPUS"))
        );
        assert_eq!(
            parse_stat(b"cpu 1 2 3 4\ncpuX 1 2 3 4", &mut p),
            Err(ParseError::Malformed("cpu number"))
        );
    }
}
