//! RFC 3339 times of the report (UTC, whole seconds): the calendar lives in
//! [`nasprobe_proto::time`], shared with the agent and the exporters.

pub use nasprobe_proto::time::parse_rfc3339;

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn rfc3339(ms: u64) -> String {
    nasprobe_proto::time::Rfc3339 { ms, millis: false }.to_string()
}
