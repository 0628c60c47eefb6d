//! Export to the engines people already run, and to scripts:
//!
//! - [`vm`]: `record --export-vm URL` and `export --push-vm URL` push every stored sample and
//!   event to VictoriaMetrics, exactly once (a per-instance cursor in the store);
//! - [`serve`]: `serve --metrics ADDR:PORT`, a Prometheus scrape endpoint with the newest rates;
//! - `export --format csv|json|influx` (`cmd::export`): points on stdout for scripts and notebooks.
//!
//! [`metrics`] names every metric (docs/metrics.md lists them with their node_exporter
//! counterparts) and turns samples into points; [`format`](mod@format) writes them.

pub mod format;
pub mod metrics;
pub mod serve;
pub mod verdict;
pub mod vm;

use clap::ValueEnum;

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
