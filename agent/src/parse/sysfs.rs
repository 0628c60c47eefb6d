//! Small sysfs and procfs value files: one number, one word, or a word list.

use super::{ParseError, fields, parse_i64, parse_u64, trim};

/// One unsigned number ("1\n").
pub fn parse_num(buf: &[u8]) -> Result<u64, ParseError> {
    let t = trim(buf);
    if t.is_empty() {
        return Err(ParseError::Truncated("empty value"));
    }
    parse_u64(t).ok_or(ParseError::Malformed("not a number"))
}

/// 0/1 flags (queue/rotational, carrier).
pub fn parse_bool(buf: &[u8]) -> Result<bool, ParseError> {
    match trim(buf) {
        b"0" => Ok(false),
        b"1" => Ok(true),
        b"" => Err(ParseError::Truncated("empty flag")),
        _ => Err(ParseError::Malformed("flag not 0/1")),
    }
}

/// /sys/class/net/IF/speed in Mbit/s: -1 or 0 (unknown, link down) and absurd values are
/// `Ok(0)`; only garbage is an error.
pub fn parse_speed(buf: &[u8]) -> Result<u32, ParseError> {
    let t = trim(buf);
    if t.is_empty() {
        return Err(ParseError::Truncated("empty speed"));
    }
    let v = parse_i64(t).ok_or(ParseError::Malformed("speed"))?;
    // SPEED_UNKNOWN is -1 (and 65535 as u16 on some drivers).
    Ok(if v <= 0 || v == 65535 || v > u32::MAX as i64 {
        0
    } else {
        v as u32
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duplex {
    Full,
    Half,
    Unknown,
}

pub fn parse_duplex(buf: &[u8]) -> Result<Duplex, ParseError> {
    match trim(buf) {
        b"full" => Ok(Duplex::Full),
        b"half" => Ok(Duplex::Half),
        b"unknown" => Ok(Duplex::Unknown),
        b"" => Err(ParseError::Truncated("empty duplex")),
        _ => Err(ParseError::Malformed("duplex")),
    }
}

/// RFC 2863 operstate as Linux prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperState {
    Up,
    Down,
    /// "unknown": virtual devices and drivers without operstate support (decide by carrier).
    Unknown,
    /// dormant, lowerlayerdown, notpresent, testing.
    Other,
}

pub fn parse_operstate(buf: &[u8]) -> Result<OperState, ParseError> {
    match trim(buf) {
        b"up" => Ok(OperState::Up),
        b"down" => Ok(OperState::Down),
        b"unknown" => Ok(OperState::Unknown),
        b"dormant" | b"lowerlayerdown" | b"notpresent" | b"testing" => Ok(OperState::Other),
        b"" => Err(ParseError::Truncated("empty operstate")),
        _ => Err(ParseError::Malformed("operstate")),
    }
}

/// One word (md/level "raid1", address "00:11:22:33:44:55", boot_id, osrelease, hostname).
pub fn parse_word(buf: &[u8]) -> Result<&[u8], ParseError> {
    let t = trim(buf);
    if t.is_empty() {
        return Err(ParseError::Truncated("empty value"));
    }
    if t.iter().any(|b| b.is_ascii_whitespace()) {
        return Err(ParseError::Malformed("more than one word"));
    }
    Ok(t)
}

/// A space-separated word list (bonding/slaves "eth0 eth1").
pub fn words(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    fields(buf)
}

/// /proc/uptime "12345.67 23456.78": seconds since boot, in milliseconds.
pub fn parse_uptime_ms(buf: &[u8]) -> Result<u64, ParseError> {
    let first = fields(buf).next().ok_or(ParseError::Truncated("uptime"))?;
    let (secs, frac) = match first.iter().position(|&b| b == b'.') {
        Some(dot) => (&first[..dot], &first[dot + 1..]),
        None => (first, &b""[..]),
    };
    let s = parse_u64(secs).ok_or(ParseError::Malformed("uptime"))?;
    let mut ms = 0u64;
    for i in 0..3 {
        let d = match frac.get(i) {
            Some(b) if b.is_ascii_digit() => (b - b'0') as u64,
            Some(_) => return Err(ParseError::Malformed("uptime")),
            None => 0,
        };
        ms = ms * 10 + d;
    }
    s.checked_mul(1000)
        .and_then(|v| v.checked_add(ms))
        .ok_or(ParseError::Malformed("uptime"))
}

/// /proc/self/statm: resident pages (second field).
pub fn parse_statm_resident(buf: &[u8]) -> Result<u64, ParseError> {
    let mut f = fields(buf);
    super::req_u64(f.next(), "statm size")?;
    super::req_u64(f.next(), "statm resident")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(parse_num(b"3907029168\n"), Ok(3907029168));
        assert!(parse_num(b"\n").is_err());
        assert!(parse_num(b"12 kB").is_err());
        assert_eq!(parse_bool(b"1\n"), Ok(true));
        assert!(parse_bool(b"2").is_err());
        assert_eq!(parse_speed(b"1000\n"), Ok(1000));
        assert_eq!(parse_speed(b"-1\n"), Ok(0));
        assert_eq!(parse_speed(b"65535"), Ok(0));
        assert!(parse_speed(b"fast").is_err());
        assert_eq!(parse_duplex(b"full\n"), Ok(Duplex::Full));
        assert!(parse_duplex(b"ful").is_err());
        assert_eq!(parse_operstate(b"up\n"), Ok(OperState::Up));
        assert_eq!(parse_operstate(b"lowerlayerdown\n"), Ok(OperState::Other));
        assert!(parse_operstate(b"sideways").is_err());
        assert_eq!(parse_word(b"raid1\n"), Ok(&b"raid1"[..]));
        assert!(parse_word(b"a b").is_err());
        assert_eq!(words(b"eth0 eth1\n").count(), 2);
        assert_eq!(parse_uptime_ms(b"12345.67 999.00\n"), Ok(12_345_670));
        assert_eq!(parse_uptime_ms(b"5 1"), Ok(5000));
        assert!(parse_uptime_ms(b"1.x").is_err());
        assert_eq!(parse_statm_resident(b"765 389 300 5 0 100 0\n"), Ok(389));
    }
}
