//! One push target over HTTP: where it is and how it takes points ([`VmTarget`], [`Encoding`]),
//! the client that sends a batch's body and reads the answer ([`Pusher`]: VictoriaMetrics'
//! import, its start time and the points it already holds; Prometheus remote write), and the
//! body being built (`Body`). The cursor and batching around it are [`super::vm`]'s.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::format::PromLines;
use super::metrics::{Metric, Sink};
use super::remote_write::{self as rw, RwBatch};
use crate::store::StoreError;

/// A batch's body is cut after this many bytes (the rest goes in the next one).
pub(crate) const BATCH_BYTES: usize = 8 << 20;

/// How a target takes points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// VictoriaMetrics' `/api/v1/import/prometheus`, exactly once.
    VmImport,
    /// Prometheus remote write 1.0, at least once.
    RemoteWrite,
}

/// Where to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmTarget {
    /// VictoriaMetrics: `http://host:port` or `https://…` (with any path prefix, e.g. a vmauth route), no
    /// trailing slash. Remote write: the whole URL of the receiver's write endpoint.
    pub base: String,
    /// `base` as it is printed and stored: its secrets redacted (`http::redact`).
    pub shown: String,
    /// The key of this target's cursors in the store (from `shown`: no secret is stored).
    pub cursor_key: String,
    pub encoding: Encoding,
}

/// A receiver's URL with its scheme (`http://` added when none is given; `https://` taken).
fn with_scheme(url: &str) -> anyhow::Result<String> {
    crate::http::url_with_scheme("receiver", url).map_err(|e| anyhow::anyhow!(e))
}

impl VmTarget {
    /// A remote write receiver: `http://host:port/path`, or `host:port` for Prometheus' own
    /// `/api/v1/write`.
    pub fn remote_write(url: &str) -> anyhow::Result<VmTarget> {
        let mut u = with_scheme(url)?;
        let rest = crate::http::after_scheme(&u);
        anyhow::ensure!(
            !rest.is_empty() && !rest.starts_with('/') && !rest.contains(['#', ' ']),
            "{url}: not a remote write URL (example: http://127.0.0.1:9090/api/v1/write)"
        );
        if !rest.contains('/') {
            u.push_str("/api/v1/write");
        }
        Ok(VmTarget {
            shown: crate::http::redact(&u),
            cursor_key: format!("rw {}", crate::http::redact(&u)),
            base: u,
            encoding: Encoding::RemoteWrite,
        })
    }

    /// Accepts `http://host:port`, `host:port`, or a URL ending in `/api/v1/import/prometheus`.
    pub fn parse(url: &str) -> anyhow::Result<VmTarget> {
        let mut u = with_scheme(url)?;
        if let Some(s) = u.strip_suffix("/api/v1/import/prometheus") {
            u = s.to_string();
        }
        while !crate::http::after_scheme(&u).is_empty() && u.ends_with('/') {
            u.pop();
        }
        let host = crate::http::after_scheme(&u);
        anyhow::ensure!(
            !host.is_empty() && !host.contains(['?', '#', ' ']),
            "{url}: not a VictoriaMetrics URL (example: http://127.0.0.1:8428)"
        );
        Ok(VmTarget {
            shown: crate::http::redact(&u),
            cursor_key: format!("vm {}", crate::http::redact(&u)),
            base: u,
            encoding: Encoding::VmImport,
        })
    }

    pub(crate) fn import_url(&self) -> String {
        format!("{}/api/v1/import/prometheus", self.base)
    }
}

/// Why a push did not go through.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    #[error("{url}: {source}")]
    Http { url: String, source: ureq::Error },
    /// The receiver's certificate was not accepted (what it was checked against is said).
    #[error("{0}")]
    Certificate(String),
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url}: {msg}")]
    Answer { url: String, msg: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The engine's identity over time: a restart changes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Epoch {
    /// `vm_app_start_timestamp` (seconds).
    pub start: f64,
    /// `vm_app_uptime_seconds` when read.
    pub uptime: f64,
    /// When it was read.
    pub at: Instant,
}

impl Epoch {
    /// True when `later` is another run of the engine than `self`.
    pub fn restarted(&self, later: &Epoch) -> bool {
        let elapsed = later.at.saturating_duration_since(self.at).as_secs_f64();
        later.start != self.start || later.uptime + 1.5 < self.uptime + elapsed
    }
}

/// An HTTP client for one target.
#[derive(Clone)]
pub struct Pusher {
    pub target: VmTarget,
    agent: ureq::Agent,
    /// What the receiver's https certificate is checked against.
    trust: crate::http::Trust,
    /// Each request's time limit.
    timeout: Duration,
    /// The `Authorization` header's value (remote write, `--remote-write-auth`).
    auth: Option<String>,
    /// More headers of every remote write request (`--remote-write-header`).
    headers: Vec<(String, String)>,
    /// The `collector` label of every series pushed.
    pub collector: String,
}

/// A batch being built, in its target's encoding.
pub(crate) enum Body {
    Lines(PromLines),
    Rw(RwBatch),
}

impl Body {
    pub(crate) fn new(e: Encoding) -> Body {
        match e {
            Encoding::VmImport => Body::Lines(PromLines {
                buf: Vec::with_capacity(BATCH_BYTES + (1 << 16)),
                lines: 0,
            }),
            Encoding::RemoteWrite => Body::Rw(RwBatch::default()),
        }
    }

    pub(crate) fn points(&self) -> usize {
        match self {
            Body::Lines(l) => l.lines,
            Body::Rw(b) => b.points(),
        }
    }

    /// True once the batch takes no more records.
    pub(crate) fn full(&self) -> bool {
        match self {
            Body::Lines(l) => l.buf.len() >= BATCH_BYTES,
            Body::Rw(b) => b.points() >= rw::MAX_SAMPLES_PER_SEND,
        }
    }
}

impl Sink for Body {
    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        match self {
            Body::Lines(l) => l.point(m, labels, value, ts),
            Body::Rw(b) => b.point(m, labels, value, ts),
        }
    }
}

/// True when a remote write answer says the batch will never be taken (4xx but 429).
pub fn refused_for_good(e: &PushError) -> bool {
    matches!(e, PushError::Status { status, .. } if (400..500).contains(status) && *status != 429)
}

fn read_body(
    trust: &crate::http::Trust,
    url: &str,
    r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    limit: u64,
) -> Result<String, PushError> {
    let url = &crate::http::redact(url);
    let mut resp = r.map_err(|source| match crate::http::is_certificate_error(&source) {
        true => PushError::Certificate(trust.describe(url, &source)),
        false => PushError::Http {
            url: url.to_string(),
            source,
        },
    })?;
    let status = resp.status().as_u16();
    if let Some(words) = crate::http::redirect_words(&resp) {
        return Err(PushError::Status {
            url: url.to_string(),
            status,
            body: words,
        });
    }
    let body = resp.body_mut().with_config().limit(limit).read_to_string();
    if (200..300).contains(&status) {
        return body.map_err(|source| PushError::Http {
            url: url.to_string(),
            source,
        });
    }
    Err(PushError::Status {
        url: url.to_string(),
        status,
        body: crate::http::answer_text(&body.unwrap_or_default(), crate::http::ANSWER_CHARS),
    })
}

/// Percent-encodes a query parameter value.
fn query_escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len() * 3);
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Pusher {
    /// A client whose every request ends within `timeout`; https checked against Mozilla's
    /// roots until [`Pusher::with_trust`].
    pub fn new(target: VmTarget, timeout: Duration) -> Pusher {
        let trust = crate::http::Trust::default();
        Pusher {
            target,
            agent: trust.agent(timeout),
            trust,
            timeout,
            auth: None,
            headers: Vec::new(),
            collector: super::metrics::default_collector_name(),
        }
    }

    /// Checks the receiver's https certificate against `trust` (`--ca-file`).
    pub fn with_trust(mut self, trust: &crate::http::Trust) -> Pusher {
        self.agent = trust.agent(self.timeout);
        self.trust = trust.clone();
        self
    }

    /// Sends `Authorization: VALUE` with every push.
    pub fn with_auth(mut self, auth: Option<String>) -> Pusher {
        self.auth = auth;
        self
    }

    /// Sends these headers with every remote write request (`--remote-write-header`; the
    /// VictoriaMetrics import sends none).
    pub fn with_headers(mut self, headers: &[(String, String)]) -> Pusher {
        self.headers = headers.to_vec();
        self
    }

    /// Sets the `collector` label.
    pub fn with_collector(mut self, name: &str) -> Pusher {
        self.collector = name.to_string();
        self
    }

    /// Sends a batch; returns the bytes that went on the wire.
    pub(crate) fn send(&self, body: &Body) -> Result<u64, PushError> {
        match body {
            Body::Lines(l) => self.import(&l.buf).map(|_| l.buf.len() as u64),
            Body::Rw(b) => {
                let bytes = b.body();
                let url = &self.target.base;
                let mut req = self.agent.post(url);
                for (k, v) in rw::HEADERS {
                    req = req.header(*k, *v);
                }
                if let Some(a) = &self.auth {
                    req = req.header("Authorization", a);
                }
                for (k, v) in &self.headers {
                    req = req.header(k, v);
                }
                read_body(&self.trust, url, req.send(&bytes[..]), 1 << 16)
                    .map(|_| bytes.len() as u64)
            }
        }
    }

    /// POSTs Prometheus text lines.
    pub fn import(&self, body: &[u8]) -> Result<(), PushError> {
        let url = self.target.import_url();
        let r = self
            .agent
            .post(&url)
            .header("Content-Type", "text/plain")
            .send(body);
        read_body(&self.trust, &url, r, 1 << 16).map(|_| ())
    }

    /// Makes what the engine received visible to queries (`/internal/force_flush`).
    pub fn force_flush(&self) -> Result<(), PushError> {
        let url = format!("{}/internal/force_flush", self.target.base);
        read_body(&self.trust, &url, self.agent.get(&url).call(), 1 << 16).map(|_| ())
    }

    /// The engine's start time and uptime, from its `/metrics`.
    pub fn epoch(&self) -> Result<Epoch, PushError> {
        let url = format!("{}/metrics", self.target.base);
        let text = read_body(&self.trust, &url, self.agent.get(&url).call(), 64 << 20)?;
        let at = Instant::now();
        let find = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        };
        match (
            find("vm_app_start_timestamp").or_else(|| find("process_start_time_seconds")),
            find("vm_app_uptime_seconds"),
        ) {
            (Some(start), uptime) => Ok(Epoch {
                start,
                uptime: uptime.unwrap_or(0.0),
                at,
            }),
            _ => Err(PushError::Answer {
                url: crate::http::redact(&url),
                msg: "no vm_app_start_timestamp in /metrics: is this VictoriaMetrics?".into(),
            }),
        }
    }

    /// The points the engine holds for `host` between the two times (ms, inclusive), as
    /// (series key, timestamp ms); see `series_key`.
    pub fn existing(
        &self,
        host: &str,
        from_ms: u64,
        to_ms: u64,
    ) -> Result<HashSet<(String, u64)>, PushError> {
        let esc = host.replace('\\', "\\\\").replace('"', "\\\"");
        let sel = format!("{{__name__=~\"nasprobe_.+\",host=\"{esc}\"}}");
        let url = format!(
            "{}/api/v1/export?match[]={}&start={}&end={}",
            self.target.base,
            query_escape(&sel),
            from_ms.saturating_sub(1000) / 1000,
            to_ms / 1000 + 1
        );
        let text = read_body(&self.trust, &url, self.agent.get(&url).call(), 1 << 30)?;
        let mut out = HashSet::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| PushError::Answer {
                    url: crate::http::redact(&url),
                    msg: format!("export line does not parse: {e}"),
                })?;
            let Some(metric) = v["metric"].as_object() else {
                continue;
            };
            let name = metric
                .get("__name__")
                .and_then(|n| n.as_str())
                .unwrap_or("");
            let labels: Vec<(&str, &str)> = metric
                .iter()
                .filter(|(k, _)| *k != "__name__")
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect();
            let key = series_key(name, &labels);
            for t in v["timestamps"].as_array().into_iter().flatten() {
                if let Some(t) = t.as_u64() {
                    out.insert((key.clone(), t));
                }
            }
        }
        Ok(out)
    }
}

/// A series as a string: the name, then the non-empty labels sorted by key.
pub(crate) fn series_key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut l: Vec<&(&str, &str)> = labels.iter().filter(|(_, v)| !v.is_empty()).collect();
    l.sort();
    let mut s = String::with_capacity(64);
    s.push_str(name);
    for (k, v) in l {
        s.push('\u{1f}');
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    s
}

/// Writes points, leaving out the points the engine already holds.
pub(crate) struct Filtered<'a> {
    pub(crate) lines: Body,
    pub(crate) have: Option<&'a HashSet<(String, u64)>>,
    pub(crate) skipped: u64,
}

impl Sink for Filtered<'_> {
    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        if let Some(have) = self.have
            && have.contains(&(series_key(m.name, labels), ts))
        {
            self.skipped += 1;
            return;
        }
        self.lines.point(m, labels, value, ts);
    }
}
