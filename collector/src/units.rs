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
