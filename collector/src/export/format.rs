//! Writers of points: Prometheus text (with millisecond timestamps, for VictoriaMetrics'
//! `/api/v1/import/prometheus`; without, for the scrape endpoint), InfluxDB line protocol, CSV
//! and JSON lines.

use std::fmt::Write as _;
use std::io::Write as _;

use super::metrics::{ALL, Metric, OwnedPoint, Sink};

/// Label keys in the CSV column order (every label any metric has).
pub(crate) const LABEL_KEYS: &[&str] = &[
    "host",
    "cpu",
    "device",
    "process",
    "thread",
    "mountpoint",
    "kind",
];

/// Escapes a Prometheus label value (`\`, `"`, newline).
pub(crate) fn escape_label(out: &mut Vec<u8>, v: &str) {
    for b in v.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            _ => out.push(b),
        }
    }
}

fn prom_series(out: &mut Vec<u8>, name: &str, labels: &[(&str, &str)]) {
    out.extend_from_slice(name.as_bytes());
    let mut first = true;
    for (k, v) in labels {
        if v.is_empty() {
            continue;
        }
        out.push(if first { b'{' } else { b',' });
        first = false;
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"=\"");
        escape_label(out, v);
        out.push(b'"');
    }
    if !first {
        out.push(b'}');
    }
}

/// Prometheus text lines with explicit millisecond timestamps: `name{labels} value ts_ms`.
#[derive(Debug, Default)]
pub struct PromLines {
    pub buf: Vec<u8>,
    pub lines: usize,
}

impl Sink for PromLines {
    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        prom_series(&mut self.buf, m.name, labels);
        let _ = writeln!(self.buf, " {value} {ts}");
        self.lines += 1;
    }
}

/// The text exposition format 0.0.4 of `points` (no timestamps): families in the order of
/// [`ALL`], each with its HELP and TYPE lines once.
pub(crate) fn exposition(points: &[OwnedPoint]) -> Vec<u8> {
    let mut out = Vec::with_capacity(points.len() * 80 + 4096);
    let rank = |p: &OwnedPoint| {
        ALL.iter()
            .position(|m| m.name == p.metric.name)
            .unwrap_or(usize::MAX)
    };
    let mut order: Vec<(usize, &OwnedPoint)> = points.iter().map(|p| (rank(p), p)).collect();
    order.sort_by_key(|(r, _)| *r); // stable: series keep their order within a family
    let mut last: Option<&str> = None;
    for (_, p) in order {
        let m = p.metric;
        if last != Some(m.name) {
            let _ = writeln!(out, "# HELP {} {}", m.name, escape_help(m.help));
            let _ = writeln!(out, "# TYPE {} {}", m.name, m.kind.as_str());
            last = Some(m.name);
        }
        let labels: Vec<(&str, &str)> = p.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        prom_series(&mut out, m.name, &labels);
        let _ = writeln!(out, " {}", p.value);
    }
    out
}

fn escape_help(h: &str) -> String {
    h.replace('\\', "\\\\").replace('\n', "\\n")
}

/// InfluxDB line protocol: measurement `nasprobe`, one field per line named after the metric
/// without its `nasprobe_` prefix (so VictoriaMetrics' `/write` names it `nasprobe_<field>`,
/// the same name as everywhere else), labels as tags, nanosecond timestamps.
pub struct Influx<W: std::io::Write> {
    pub out: W,
    pub error: Option<std::io::Error>,
    line: Vec<u8>,
}

impl<W: std::io::Write> Influx<W> {
    pub fn new(out: W) -> Self {
        Influx {
            out,
            error: None,
            line: Vec::with_capacity(256),
        }
    }
}

fn influx_escape(out: &mut Vec<u8>, v: &str) {
    for b in v.bytes() {
        match b {
            b',' | b'=' | b' ' | b'\\' => {
                out.push(b'\\');
                out.push(b);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            _ => out.push(b),
        }
    }
}

impl<W: std::io::Write> Sink for Influx<W> {
    fn failed(&self) -> bool {
        self.error.is_some()
    }

    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        if self.error.is_some() {
            return;
        }
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"nasprobe");
        for (k, v) in labels {
            if v.is_empty() {
                continue;
            }
            l.push(b',');
            l.extend_from_slice(k.as_bytes());
            l.push(b'=');
            influx_escape(l, v);
        }
        l.push(b' ');
        l.extend_from_slice(m.name.trim_start_matches("nasprobe_").as_bytes());
        let _ = writeln!(l, "={value} {}", u128::from(ts) * 1_000_000);
        if let Err(e) = self.out.write_all(l) {
            self.error = Some(e);
        }
    }
}

/// CSV with a header: `timestamp_ms,time,metric,<label columns>,value`, one point per row.
pub(crate) struct Csv<W: std::io::Write> {
    pub out: W,
    pub error: Option<std::io::Error>,
    line: String,
}

impl<W: std::io::Write> Csv<W> {
    pub fn new(mut out: W) -> Self {
        let mut header = String::from("timestamp_ms,time,metric");
        for k in LABEL_KEYS {
            header.push(',');
            header.push_str(k);
        }
        header.push_str(",value\n");
        let error = out.write_all(header.as_bytes()).err();
        Csv {
            out,
            error,
            line: String::with_capacity(256),
        }
    }
}

/// Writes one CSV field. A value a spreadsheet would run as a formula (it starts with `=`, `+`,
/// `-`, `@`, a tab or a carriage return: a process name is chosen by whoever runs the process)
/// gets a leading `'`, which spreadsheets show as text (docs/metrics.md).
fn csv_field(out: &mut String, v: &str) {
    let quoted;
    let v = if v.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        quoted = format!("'{v}");
        quoted.as_str()
    } else {
        v
    };
    if v.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(v);
    }
}

/// RFC 3339 UTC with milliseconds.
pub(crate) fn rfc3339_ms(ms: u64) -> String {
    nasprobe_proto::time::Rfc3339 { ms, millis: true }.to_string()
}

impl<W: std::io::Write> Sink for Csv<W> {
    fn failed(&self) -> bool {
        self.error.is_some()
    }

    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        if self.error.is_some() {
            return;
        }
        let l = &mut self.line;
        l.clear();
        let _ = write!(l, "{ts},{},{}", rfc3339_ms(ts), m.name);
        for k in LABEL_KEYS {
            l.push(',');
            if let Some((_, v)) = labels.iter().find(|(n, _)| n == k) {
                csv_field(l, v);
            }
        }
        let _ = writeln!(l, ",{value}");
        if let Err(e) = self.out.write_all(l.as_bytes()) {
            self.error = Some(e);
        }
    }
}

/// JSON lines: `{"timestamp_ms":..,"time":"..","metric":"..","host":"..",<labels>,"value":..}`.
pub(crate) struct JsonLines<W: std::io::Write> {
    pub out: W,
    pub error: Option<std::io::Error>,
    line: String,
}

impl<W: std::io::Write> JsonLines<W> {
    pub fn new(out: W) -> Self {
        JsonLines {
            out,
            error: None,
            line: String::with_capacity(256),
        }
    }
}

fn json_str(out: &mut String, v: &str) {
    out.push_str(&serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into()));
}

impl<W: std::io::Write> Sink for JsonLines<W> {
    fn failed(&self) -> bool {
        self.error.is_some()
    }

    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        if self.error.is_some() {
            return;
        }
        let l = &mut self.line;
        l.clear();
        let _ = write!(
            l,
            "{{\"timestamp_ms\":{ts},\"time\":\"{}\",\"metric\":\"{}\"",
            rfc3339_ms(ts),
            m.name
        );
        for (k, v) in labels {
            let _ = write!(l, ",\"{k}\":");
            json_str(l, v);
        }
        let _ = writeln!(l, ",\"value\":{value}}}");
        if let Err(e) = self.out.write_all(l.as_bytes()) {
            self.error = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::metrics::{CPU_BUSY, EVENT, Points};
    use super::*;

    #[test]
    fn prom_lines_escape_and_skip_empty_labels() {
        let mut p = PromLines::default();
        p.point(
            EVENT,
            &[
                ("host", "a\"b"),
                ("kind", "process_exit"),
                ("process", "x\\y\nz"),
            ],
            1.0,
            1_700_000_000_123,
        );
        assert_eq!(
            String::from_utf8(p.buf).unwrap(),
            "nasprobe_event{host=\"a\\\"b\",kind=\"process_exit\",process=\"x\\\\y\\nz\"} 1 1700000000123\n"
        );
    }

    #[test]
    fn collector_label_is_last_and_escaped() {
        use super::super::metrics::WithCollector;
        let mut p = PromLines::default();
        let mut w = WithCollector {
            inner: &mut p,
            name: "desk\"1",
        };
        w.point(CPU_BUSY, &[("host", "a"), ("cpu", "0")], 0.5, 7);
        assert_eq!(
            String::from_utf8(p.buf).unwrap(),
            "nasprobe_cpu_busy_ratio{host=\"a\",cpu=\"0\",collector=\"desk\\\"1\"} 0.5 7\n"
        );
    }

    #[test]
    fn exposition_groups_families() {
        let mut pts = Points::default();
        pts.point(CPU_BUSY, &[("host", "a"), ("cpu", "0")], 0.5, 1);
        pts.point(EVENT, &[("host", "a"), ("kind", "agent_start")], 1.0, 1);
        pts.point(CPU_BUSY, &[("host", "b"), ("cpu", "0")], 0.25, 1);
        let t = String::from_utf8(exposition(&pts.0)).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            format!("# HELP nasprobe_cpu_busy_ratio {}", CPU_BUSY.help)
        );
        assert_eq!(lines[1], "# TYPE nasprobe_cpu_busy_ratio gauge");
        assert_eq!(
            lines[2],
            "nasprobe_cpu_busy_ratio{host=\"a\",cpu=\"0\"} 0.5"
        );
        assert_eq!(
            lines[3],
            "nasprobe_cpu_busy_ratio{host=\"b\",cpu=\"0\"} 0.25"
        );
        assert_eq!(lines[5], "# TYPE nasprobe_event gauge");
    }

    #[test]
    fn influx_csv_json() {
        let mut i = Influx::new(Vec::new());
        i.point(CPU_BUSY, &[("host", "a b"), ("cpu", "0")], 0.5, 1000);
        assert_eq!(
            String::from_utf8(i.out).unwrap(),
            "nasprobe,host=a\\ b,cpu=0 cpu_busy_ratio=0.5 1000000000\n"
        );
        let mut c = Csv::new(Vec::new());
        c.point(CPU_BUSY, &[("host", "a,b"), ("cpu", "3")], 0.5, 1000);
        assert_eq!(
            String::from_utf8(c.out).unwrap(),
            "timestamp_ms,time,metric,host,cpu,device,process,thread,mountpoint,kind,value\n\
             1000,1970-01-01T00:00:01.000Z,nasprobe_cpu_busy_ratio,\"a,b\",3,,,,,,0.5\n"
        );
        let mut j = JsonLines::new(Vec::new());
        j.point(CPU_BUSY, &[("host", "a\"")], 0.5, 1000);
        let line = String::from_utf8(j.out).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["host"], "a\"");
        assert_eq!(v["value"], 0.5);
        assert_eq!(v["metric"], "nasprobe_cpu_busy_ratio");
    }

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
