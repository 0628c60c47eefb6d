//! The verdict as a metric: the wall the report names over a recent window, for the scrape
//! endpoint (over the 5 minutes before the newest sample) and for VictoriaMetrics (one point a
//! minute while recording, over the 5 minutes before that minute).

use std::time::Duration;

use nasprobe_analysis::Options;

use super::metrics::{Sink, VERDICT};
use crate::store::StoreReader;

/// Window the verdict looks at.
pub(crate) const WINDOW: Duration = Duration::from_secs(300);

/// Writes `nasprobe_verdict_utilization_ratio` for the window `[to_ms - WINDOW, to_ms]`, at
/// `to_ms`. Nothing when nothing was stored in the window.
pub(crate) fn emit_verdict(
    sink: &mut dyn Sink,
    store: &StoreReader,
    to_ms: u64,
) -> anyhow::Result<()> {
    let from_ms = to_ms.saturating_sub(WINDOW.as_millis() as u64);
    let hosts = store.load_window(Some(from_ms), Some(to_ms))?;
    if hosts.iter().all(|h| h.samples.is_empty()) {
        return Ok(());
    }
    let r = nasprobe_analysis::build(
        &hosts,
        &Options {
            from_ms: Some(from_ms),
            to_ms: Some(to_ms),
            expect_bytes: None,
            step_ms: None,
        },
    );
    let b = &r.bottleneck;
    let labels = [
        ("host", b.host.as_deref().unwrap_or("")),
        ("resource", b.resource.as_str()),
        ("device", b.device.as_deref().unwrap_or("")),
        ("process", b.process.as_deref().unwrap_or("")),
        ("thread", b.thread.as_deref().unwrap_or("")),
    ];
    if b.utilization.is_finite() {
        sink.point(VERDICT, &labels, b.utilization, to_ms);
    }
    Ok(())
}
