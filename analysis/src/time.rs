//! RFC 3339 times of the report (UTC, whole seconds): the calendar lives in
//! [`nasprobe_proto::time`], shared with the agent and the exporters.

pub use nasprobe_proto::time::parse_rfc3339;

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn rfc3339(ms: u64) -> String {
    nasprobe_proto::time::Rfc3339 { ms, millis: false }.to_string()
}

/// A duration for people: "45 s", "2 min 30 s", "1 h 32 min", "2 d 3 h".
pub fn dur(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        if s.is_multiple_of(60) {
            format!("{} min", s / 60)
        } else {
            format!("{} min {} s", s / 60, s % 60)
        }
    } else if s < 86_400 {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{} d {} h", s / 86_400, (s % 86_400) / 3600)
    }
}
