//! Prometheus remote write 1.0: the body of a push (`WriteRequest` of `TimeSeries` with
//! `Label`s and `Sample`s, protobuf, snappy block compression) and the receiver's credentials.
//!
//! The protobuf is written by hand: three tiny messages, encoded only (fields as in
//! prometheus/prompb types.proto and remote.proto; a `prost` build would bring a code generator
//! and its build script for ~60 lines). The points come from the same [`Sink`] calls as the
//! scrape endpoint's and VictoriaMetrics' (`super::metrics`), so names and labels are the same;
//! label values go as they are (protobuf strings need no escaping), empty ones are left out as
//! in the text formats, and labels are sorted by name, as the protocol asks.

use std::collections::HashMap;
use std::path::Path;

use super::metrics::{Metric, Sink};

/// Samples per request at most, as Prometheus' queue sends (`max_samples_per_send`); a batch
/// stops taking records once it holds this many, so it may pass it by one record's points.
pub const MAX_SAMPLES_PER_SEND: usize = 2000;
/// A batch smaller than [`MAX_SAMPLES_PER_SEND`] goes at the latest this long after the
/// previous send (Prometheus' `batch_send_deadline`).
pub const BATCH_SEND_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);
/// Backoff between retries of a failed send (Prometheus' `min_backoff`, `max_backoff`).
pub(crate) const MIN_BACKOFF: std::time::Duration = std::time::Duration::from_millis(30);
pub(crate) const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(5);

/// The headers of every remote write request besides `Authorization`.
pub(crate) const HEADERS: &[(&str, &str)] = &[
    ("Content-Encoding", "snappy"),
    ("Content-Type", "application/x-protobuf"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field: tag (field number, wire type 2), length, bytes.
fn bytes_field(out: &mut Vec<u8>, field: u8, b: &[u8]) {
    out.push(field << 3 | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// One series of a batch: its encoded labels and its (value, timestamp ms) samples.
type Series = (Vec<u8>, Vec<(f64, u64)>);

/// The series of one batch, in the order first seen, each with its samples in arrival order
/// (per series increasing: records come per agent instance in sequence order, stamped strictly
/// increasing by `Stamper`).
#[derive(Debug, Default)]
pub struct RwBatch {
    /// Encoded `Label` fields of a series (its identity) → index in `series`.
    index: HashMap<Vec<u8>, usize>,
    series: Vec<Series>,
    points: usize,
    /// Scratch space for one series' labels.
    labels: Vec<(&'static str, String)>,
}

impl RwBatch {
    /// Points taken so far.
    pub fn points(&self) -> usize {
        self.points
    }

    pub fn is_empty(&self) -> bool {
        self.points == 0
    }

    /// The uncompressed protobuf `WriteRequest`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.points * 12 + self.series.len() * 96);
        let mut ts = Vec::with_capacity(1024);
        let mut s = Vec::with_capacity(24);
        for (labels, samples) in &self.series {
            ts.clear();
            ts.extend_from_slice(labels);
            for (v, t) in samples {
                s.clear();
                s.push(1 << 3 | 1); // value: double
                s.extend_from_slice(&v.to_le_bytes());
                s.push(2 << 3); // timestamp: int64, varint
                varint(&mut s, *t);
                bytes_field(&mut ts, 2, &s);
            }
            bytes_field(&mut out, 1, &ts);
        }
        out
    }

    /// The request body: [`RwBatch::encode`] in snappy's block format.
    pub fn body(&self) -> Vec<u8> {
        snap::raw::Encoder::new()
            .compress_vec(&self.encode())
            .expect("snappy takes any input below 4 GiB")
    }
}

impl Sink for RwBatch {
    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        self.labels.clear();
        self.labels.push(("__name__", m.name.to_string()));
        for (k, v) in labels.iter().filter(|(_, v)| !v.is_empty()) {
            self.labels.push((k, v.to_string()));
        }
        self.labels.sort_by(|a, b| a.0.cmp(b.0));
        let mut key = Vec::with_capacity(128);
        let mut l = Vec::with_capacity(64);
        for (k, v) in &self.labels {
            l.clear();
            bytes_field(&mut l, 1, k.as_bytes());
            bytes_field(&mut l, 2, v.as_bytes());
            bytes_field(&mut key, 1, &l);
        }
        let i = match self.index.get(&key) {
            Some(i) => *i,
            None => {
                self.series.push((key.clone(), Vec::new()));
                self.index.insert(key, self.series.len() - 1);
                self.series.len() - 1
            }
        };
        self.series[i].1.push((value, ts));
        self.points += 1;
    }
}

/// Reads the receiver's credentials (`--remote-write-auth FILE`): one line, `bearer TOKEN` or
/// `basic USER:PASSWORD`; returns the `Authorization` header's value. Read once, when the
/// command starts, so every fault is one error then, not retries later: the file must not be
/// accessible by group or others (refused naming its mode, as ssh refuses a private key), and
/// a CR, LF or other control character inside the line (a file saved on Windows, two lines
/// pasted) is refused naming its byte, since a header cannot carry it.
pub fn read_auth(path: &Path) -> anyhow::Result<String> {
    let what = || format!("remote write credentials {}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", what()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", what()))?
            .permissions()
            .mode()
            & 0o777;
        anyhow::ensure!(
            mode & 0o077 == 0,
            "{}: permissions {mode:04o} are too open: it holds a password and must not be \
             readable by others; fix it with: chmod 600 {}",
            what(),
            path.display()
        );
    }
    let line = text.strip_suffix('\n').unwrap_or(&text);
    if let Some((i, c)) = line
        .char_indices()
        .find(|&(_, c)| c.is_control() && c != '\t')
    {
        let name = match c {
            '\r' => "a carriage return (CR)".to_string(),
            '\n' => "a line feed (LF)".to_string(),
            c => format!("the control character U+{:04X}", c as u32),
        };
        anyhow::bail!(
            "{}: {name} at byte {i}: want one line 'bearer TOKEN' or 'basic USER:PASSWORD' \
             (saved with Unix line ends)",
            what()
        );
    }
    let line = line.trim();
    let (kind, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    match kind.to_ascii_lowercase().as_str() {
        "bearer" if !rest.is_empty() => Ok(format!("Bearer {rest}")),
        "basic" if rest.contains(':') => Ok(format!("Basic {}", base64(rest.as_bytes()))),
        _ => anyhow::bail!(
            "{}: want one line 'bearer TOKEN' or 'basic USER:PASSWORD'",
            what()
        ),
    }
}

/// Headers a `--remote-write-header` may not set: the protocol's own, the body's length, and
/// `Authorization` (that is `--remote-write-auth`'s, from a file, off the command line).
const RESERVED_HEADERS: &[&str] = &[
    "content-encoding",
    "content-type",
    "content-length",
    "x-prometheus-remote-write-version",
    "authorization",
    "host",
    "transfer-encoding",
    "connection",
];

/// Parses `--remote-write-header 'NAME: VALUE'` (e.g. `X-Scope-OrgID: site1`, the tenant of a
/// multi-tenant Mimir or Cortex): NAME an HTTP token, VALUE printable ASCII, neither empty.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: want 'NAME: VALUE', e.g. 'X-Scope-OrgID: site1'"))?;
    let (name, value) = (name.trim(), value.trim());
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("{s:?}: {name:?} is not a header name"));
    }
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c == ' ' || c == '\t' || c.is_ascii_graphic())
    {
        return Err(format!("{s:?}: the value is empty or not printable ASCII"));
    }
    let lower = name.to_ascii_lowercase();
    if lower == "authorization" {
        return Err(format!(
            "{s:?}: credentials go in a file: --remote-write-auth FILE"
        ));
    }
    if RESERVED_HEADERS.contains(&lower.as_str()) {
        return Err(format!("{s:?}: {name} is set by nasprobe"));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Standard base64 with padding (RFC 4648), for basic auth.
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            out.push(if i <= c.len() {
                A[(n >> shift) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::metrics::{CPU_BUSY, EVENT};
    use super::*;

    #[test]
    fn extra_headers_are_checked_and_the_protocol_headers_are_not_overridden() {
        assert_eq!(
            parse_header("X-Scope-OrgID: site-1").unwrap(),
            ("X-Scope-OrgID".to_string(), "site-1".to_string())
        );
        assert_eq!(parse_header(" A:b c ").unwrap(), ("A".into(), "b c".into()));
        for bad in [
            "X-Scope-OrgID",
            ": x",
            "X Y: z",
            "X-A: ",
            "X-A: a\r\nInjected: 1",
            "X-A: é",
            "content-type: text/plain",
            "Authorization: Bearer x",
        ] {
            assert!(parse_header(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_header("Authorization: x")
                .unwrap_err()
                .contains("--remote-write-auth")
        );
    }

    #[test]
    fn encodes_a_write_request() {
        let mut b = RwBatch::default();
        b.point(CPU_BUSY, &[("host", "a"), ("cpu", "0")], 0.5, 1000);
        b.point(CPU_BUSY, &[("host", "a"), ("cpu", "0")], 0.25, 2000);
        b.point(
            EVENT,
            &[("host", "a"), ("kind", "x"), ("process", "")],
            1.0,
            300,
        );
        assert_eq!(b.points(), 3);
        let enc = b.encode();
        // First series: labels sorted (__name__, cpu, host), then its two samples.
        let label = |k: &str, v: &str| {
            let mut l = vec![0x0a, k.len() as u8];
            l.extend_from_slice(k.as_bytes());
            l.extend_from_slice(&[0x12, v.len() as u8]);
            l.extend_from_slice(v.as_bytes());
            let mut f = vec![0x0a, l.len() as u8];
            f.extend(l);
            f
        };
        let sample = |v: f64, t: &[u8]| {
            let mut s = vec![0x09];
            s.extend_from_slice(&v.to_le_bytes());
            s.push(0x10);
            s.extend_from_slice(t);
            let mut f = vec![0x12, s.len() as u8];
            f.extend(s);
            f
        };
        let mut ts = label("__name__", "nasprobe_cpu_busy_ratio");
        ts.extend(label("cpu", "0"));
        ts.extend(label("host", "a"));
        ts.extend(sample(0.5, &[0xe8, 0x07]));
        ts.extend(sample(0.25, &[0xd0, 0x0f]));
        let mut want = vec![0x0a, ts.len() as u8];
        want.extend(ts);
        assert_eq!(&enc[..want.len()], &want[..]);
        // The second series has no empty `process` label.
        let rest = &enc[want.len()..];
        assert!(rest.windows(4).any(|w| w == b"kind"));
        assert!(!rest.windows(7).any(|w| w == b"process"));
        let body = b.body();
        assert_eq!(
            snap::raw::Decoder::new().decompress_vec(&body).unwrap(),
            enc
        );
    }

    #[test]
    fn credentials() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("auth");
        std::fs::write(&p, "bearer abc.def\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_eq!(read_auth(&p).unwrap(), "Bearer abc.def");
        std::fs::write(&p, "basic Aladdin:open sesame\n").unwrap();
        assert_eq!(read_auth(&p).unwrap(), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        for bad in ["", "token", "basic nocolon", "bearer"] {
            std::fs::write(&p, bad).unwrap();
            assert!(read_auth(&p).is_err(), "{bad}");
        }
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
    }
}
