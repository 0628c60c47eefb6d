//! Sizes and durations as the flags and `alerts.conf` write them (`11T`, `1.5TiB`, `30s`,
//! `1h30m`).

use std::time::Duration;

/// Parses sizes such as `11T`, `500G`, `1.5TiB`, `800GB`, `2e12` or a bare byte count. The
/// units K, M, G, T, P (optionally followed by `B`) are decimal powers of 1000 — as disk makers
/// and `df -H` count; KiB, MiB, GiB, TiB, PiB are powers of 1024. Case-insensitive.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '_'))
        .unwrap_or(t.len());
    // "1e3" is a number, "1E" is an exabyte-less typo: only treat e/E as exponent before digits.
    let (num, unit) = t.split_at(split);
    let (num, unit) = match num.rfind(['e', 'E']) {
        Some(i) if i + 1 == num.len() => (&num[..i], &t[i..]),
        _ => (num, unit),
    };
    let n: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("bad size {s:?} (examples: 11T, 500G, 1.5TiB)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "p" | "pb" => 1e15,
        "kib" => 1024.0,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        "pib" => 1024f64.powi(5),
        u => {
            return Err(format!(
                "bad size unit {u:?} in {s:?} (use K, M, G, T, P (decimal) or KiB..PiB)"
            ));
        }
    };
    let v = n * mult;
    if !v.is_finite() || v < 0.0 || v >= u64::MAX as f64 {
        return Err(format!("size {s:?} out of range"));
    }
    Ok(v.round() as u64)
}

/// Parses durations such as `500ms`, `30s`, `10m`, `2h`, `30d`, `1w`, `1h30m`; a bare number
/// is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(n) = s.parse::<u64>() {
        return Ok(Duration::from_secs(n));
    }
    let mut total_ms: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("bad duration {s:?} (examples: 30s, 10m, 2h, 30d)"));
        }
        let n: u128 = rest[..digits]
            .parse()
            .map_err(|_| format!("bad duration {s:?}"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let mult: u128 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1000,
            "m" | "min" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            "y" => 365 * 86_400_000,
            u => {
                return Err(format!(
                    "bad duration unit {u:?} in {s:?} (use ms, s, m, h, d, w, y)"
                ));
            }
        };
        rest = &rest[unit_len..];
        total_ms = total_ms
            .checked_add(n.checked_mul(mult).ok_or("duration too long")?)
            .ok_or("duration too long")?;
    }
    u64::try_from(total_ms)
        .map(Duration::from_millis)
        .map_err(|_| "duration too long".into())
}

/// `--since`: a duration ([`parse_duration`]) or a time, UTC, as the reports show times:
/// `2026-12-01T09:00[:SS][Z]` (or with a space for the `T`), `2026-12-01`, `today HH:MM`,
/// `yesterday HH:MM`, `yesterday`. A time becomes the duration from it to now; one in the future
/// is an error.
pub fn parse_since(s: &str) -> Result<Duration, String> {
    parse_duration(s).or_else(|_| {
        let now = nasprobe_proto::time::now_ms();
        let t = parse_time(s.trim(), now).ok_or_else(|| {
            format!(
                "bad --since {s:?}: a duration (30m, 2h, 7d) or a time, UTC (2026-12-01T09:00, \
                 yesterday 18:00)"
            )
        })?;
        if t > now {
            return Err(format!("--since {s:?} is in the future (times are UTC)"));
        }
        Ok(Duration::from_millis(now - t))
    })
}

/// A time of `--since` (see [`parse_since`]) in ms since the epoch, `now_ms` for today.
fn parse_time(s: &str, now_ms: u64) -> Option<u64> {
    const DAY_MS: u64 = 86_400_000;
    let today = now_ms / DAY_MS * DAY_MS;
    // HH:MM[:SS] into ms after midnight.
    let clock = |c: &str| -> Option<u64> {
        let p: Vec<&str> = c.split(':').collect();
        let n = |k: usize, max: u64| {
            p.get(k).map_or(Some(0), |x| {
                x.parse::<u64>().ok().filter(|v| *v < max && x.len() == 2)
            })
        };
        (p.len() >= 2 && p.len() <= 3).then_some(())?;
        Some((n(0, 24)? * 3600 + n(1, 60)? * 60 + n(2, 60)?) * 1000)
    };
    let (day, time) = s
        .split_once(' ')
        .or_else(|| s.split_once('T'))
        .unwrap_or((s, ""));
    let time = time.trim().trim_end_matches('Z');
    let midnight = match day.to_ascii_lowercase().as_str() {
        "today" => today,
        "yesterday" => today.checked_sub(DAY_MS)?,
        d => {
            let p: Vec<&str> = d.split('-').collect();
            if p.len() != 3 || p[0].len() != 4 || p[1].len() != 2 || p[2].len() != 2 {
                return None;
            }
            let (y, m, dd): (i64, i64, i64) =
                (p[0].parse().ok()?, p[1].parse().ok()?, p[2].parse().ok()?);
            if !(1..=12).contains(&m) || !(1..=31).contains(&dd) {
                return None;
            }
            let days = nasprobe_proto::time::days_from_civil(y, m, dd);
            u64::try_from(days).ok()? * DAY_MS
        }
    };
    let after = if time.is_empty() { 0 } else { clock(time)? };
    Some(midnight + after)
}

#[cfg(test)]
mod tests {
    #[test]
    fn since_takes_a_duration_or_a_time_in_utc() {
        use super::{parse_since, parse_time};
        // 2026-12-02T15:30:00Z
        let now = 1_796_225_400_000;
        assert_eq!(parse_time("2026-12-01T09:00", now), Some(1_796_115_600_000));
        assert_eq!(
            parse_time("2026-12-01 09:00:30Z", now),
            Some(1_796_115_630_000)
        );
        assert_eq!(parse_time("2026-12-01", now), Some(1_796_083_200_000));
        assert_eq!(parse_time("yesterday 18:00", now), Some(1_796_148_000_000));
        assert_eq!(parse_time("Today 06:00", now), Some(1_796_191_200_000));
        for bad in [
            "2026-13-01",
            "yesterday 25:00",
            "tomorrow",
            "2026-12-01T9:00",
            "soon",
        ] {
            assert_eq!(parse_time(bad, now), None, "{bad}");
        }
        assert_eq!(
            parse_since("90m").unwrap(),
            std::time::Duration::from_secs(5400)
        );
        assert!(parse_since("2999-01-01").unwrap_err().contains("future"));
        let d = parse_since("1970-01-02").unwrap();
        assert!(d.as_secs() > 50 * 365 * 86_400);
    }
}
