//! Wire times (ms since the Unix epoch, UTC) as calendar dates: the one civil-date algorithm
//! (Howard Hinnant's, public domain) behind every RFC 3339 time the agent logs, the report and
//! the exporters write, and the parser of the times people give back; plus the wall clock.

use core::fmt;

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) to days since 1970-01-01.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Displays Unix milliseconds as RFC 3339 UTC: `YYYY-MM-DDTHH:MM:SSZ`, or with `.mmm` before
/// the `Z` when `millis` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc3339 {
    /// The time, ms since the Unix epoch.
    pub ms: u64,
    /// Show the milliseconds (`.mmm`).
    pub millis: bool,
}

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.ms / 1000;
        let rem = secs % 86_400;
        let (y, m, d) = civil_from_days((secs / 86_400) as i64);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )?;
        if self.millis {
            write!(f, ".{:03}", self.ms % 1000)?;
        }
        f.write_str("Z")
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` (UTC) into Unix milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    let num = |r: core::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let frac_ms = match s.get(19..s.len() - 1)? {
        "" => 0,
        f if f.starts_with('.') => {
            let digits = &f[1..(f.len().min(4))];
            let v: u64 = digits.parse().ok()?;
            v * 10u64.pow(3 - digits.len() as u32)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    u64::try_from(secs).ok().map(|s| s * 1000 + frac_ms)
}

/// Wall clock now, ms since the Unix epoch (0 if the clock is before 1970).
#[cfg(feature = "std")]
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::string::ToString;

    fn s(ms: u64) -> std::string::String {
        Rfc3339 { ms, millis: false }.to_string()
    }

    #[test]
    fn known_instants() {
        assert_eq!(s(0), "1970-01-01T00:00:00Z");
        assert_eq!(s(1_700_000_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(s(951_782_400_000), "2000-02-29T00:00:00Z");
        let ms = |ms| Rfc3339 { ms, millis: true }.to_string();
        assert_eq!(ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(ms(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20Z"),
            Some(1_700_000_000_000)
        );
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20.5Z"),
            Some(1_700_000_000_500)
        );
        assert_eq!(parse_rfc3339("garbage"), None);
        for ms in [0u64, 86_399_000, 1_764_460_800_000, 4_102_444_800_000] {
            assert_eq!(parse_rfc3339(&s(ms)), Some(ms));
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19723), (2024, 1, 1));
        assert_eq!(civil_from_days(19782), (2024, 2, 29));
        assert_eq!(civil_from_days(20453), (2025, 12, 31));
        // Every day of 1900..2100 round-trips.
        for days in -25_567..47_482 {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }
}
