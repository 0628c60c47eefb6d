//! `/proc/PID/schedstat`: the time a process waited for a CPU.

use super::{ParseError, fields, req_u64};

/// /proc/PID/schedstat: "on_cpu_ns run_delay_ns timeslices". Returns run_delay in ns.
pub fn parse_schedstat(buf: &[u8]) -> Result<u64, ParseError> {
    let mut f = fields(buf);
    req_u64(f.next(), "schedstat on_cpu")?;
    req_u64(f.next(), "schedstat run_delay")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat() {
        assert_eq!(parse_schedstat(b"150777 293972 5\n"), Ok(293972));
        assert!(parse_schedstat(b"150777").is_err());
    }
}
