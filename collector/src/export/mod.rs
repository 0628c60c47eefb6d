//! Export to the engines people already run, and to scripts:
//!
//! - [`vm`]: `--export-vm URL` and `--remote-write URL` (of `record`, `watch`, `serve`) and
//!   `export --push-vm | --remote-write URL` push every stored sample and event to
//!   VictoriaMetrics, exactly once, or to a Prometheus remote write receiver
//!   ([`remote_write`]), at least once (a per-instance cursor in the store);
//! - [`serve`]: `serve --metrics ADDR:PORT`, a Prometheus scrape endpoint with the newest rates;
//! - `export --format csv|json|influx` (`cmd::export`): points on stdout for scripts and notebooks.
//!
//! [`metrics`] names every metric (docs/metrics.md lists them with their node_exporter
//! counterparts) and turns samples into points; [`format`](mod@format) writes them.

pub mod format;
pub mod metrics;
pub mod pusher;
pub mod remote_write;
pub mod serve;
pub mod verdict;
pub mod vm;

pub use metrics::default_collector_name;

use std::path::Path;
use std::time::Duration;

use clap::ValueEnum;

/// Where a command that records also pushes (its `--export-vm`, `--remote-write` and
/// `--remote-write-auth`).
#[derive(Debug, Clone, Default)]
pub struct PushTo {
    /// VictoriaMetrics' base URL.
    pub export_vm: Option<String>,
    /// A Prometheus remote write receiver's URL.
    pub remote_write: Option<String>,
    /// Its credentials file.
    pub remote_write_auth: Option<std::path::PathBuf>,
    /// More headers of its requests (`--remote-write-header`).
    pub remote_write_headers: Vec<(String, String)>,
}

/// The exporters a command that records runs beside it (`--export-vm`, `--remote-write`).
pub(crate) struct Pushing(Vec<vm::Exporter>);

impl Pushing {
    /// Starts one exporter per target given, each reading the store at `db` on its own
    /// connection and pushing what is committed (https checked against `trust`).
    pub(crate) fn start(
        db: &Path,
        push: &PushTo,
        collector: &str,
        trust: &crate::http::Trust,
    ) -> anyhow::Result<Pushing> {
        let mut targets = Vec::new();
        if let Some(url) = &push.export_vm {
            targets.push((vm::VmTarget::parse(url)?, None));
        }
        if let Some(url) = &push.remote_write {
            let auth = push
                .remote_write_auth
                .as_deref()
                .map(remote_write::read_auth)
                .transpose()?;
            targets.push((vm::VmTarget::remote_write(url)?, auth));
        }
        let mut out = Vec::new();
        for (target, auth) in targets {
            crate::errln!(
                "nasprobe: pushing to {} at {} (collector {collector})",
                kind_name(target.encoding),
                target.shown
            );
            let opts = vm::ExportOptions::for_encoding(target.encoding);
            let pusher = vm::Pusher::new(target, Duration::from_secs(30))
                .with_auth(auth)
                .with_headers(&push.remote_write_headers)
                .with_collector(collector)
                .with_trust(trust);
            out.push(vm::Exporter::start(db.to_path_buf(), pusher, opts)?);
        }
        Ok(Pushing(out))
    }

    /// Pushes what the last batches stored (each exporter gives up after its drain time) and
    /// says what went.
    pub(crate) fn finish(self) {
        use std::sync::atomic::Ordering::Relaxed;
        for x in self.0 {
            let (l, url) = (x.live.clone(), x.url.clone());
            x.finish();
            crate::errln!(
                "nasprobe: pushed {} samples and {} events ({} points) to {url}{}{}",
                l.samples.load(Relaxed),
                l.events.load(Relaxed),
                l.lines.load(Relaxed),
                match l.rejected.load(Relaxed) {
                    0 => String::new(),
                    n => format!("; {n} points refused by the receiver"),
                },
                if l.caught_up.load(Relaxed) {
                    ""
                } else {
                    "; some wait in the store"
                }
            );
        }
    }
}

/// How a target is named to users.
pub(crate) fn kind_name(e: vm::Encoding) -> &'static str {
    match e {
        vm::Encoding::VmImport => "VictoriaMetrics",
        vm::Encoding::RemoteWrite => "remote write",
    }
}

/// Output format of `nasprobe export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One point per row: timestamp_ms,time,metric,host,cpu,device,process,thread,mountpoint,kind,value
    Csv,
    /// JSON lines: one object per point with its labels as keys
    Json,
    /// InfluxDB line protocol (measurement "nasprobe", one field per metric, ns timestamps)
    Influx,
}
