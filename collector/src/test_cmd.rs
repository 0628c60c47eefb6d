//! `nasprobe test disk`: the tests people run by hand on a NAS (dd, hdparm), run by its agent
//! (started with `--allow-tests`) while the collector records it, so the result comes with the
//! wall that set it.

use std::time::Duration;

use anyhow::bail;
use nasprobe_proto::{DiskResult, DiskTest, PATH_LEN, TestRequest, TestResult};
use serde::Serialize;

use crate::client::{ClientError, Session};
use crate::conn::Collector;
use crate::context::Context;

/// How long the collector waits for a result: the agent's own budget (60 s) and some slack.
const RESULT_WAIT: Duration = Duration::from_secs(75);
/// After a test, the agent's last samples of it still have to arrive and be stored.
const SETTLE: Duration = Duration::from_millis(2500);

/// `test disk --json`.
#[derive(Debug, Clone, Serialize)]
pub struct DiskOut {
    pub host: String,
    pub path: String,
    /// The block device holding the folder, as the agent found it.
    pub device: String,
    pub fs_type: String,
    pub bytes: u64,
    pub write_mb_s: f64,
    pub read_mb_s: f64,
    pub block_bytes: u32,
    /// False when the agent could not drop the file from the page cache before reading.
    pub cache_dropped: bool,
    /// The big-block pass (the `dd bs=1G` trap): its block size and rate; null when not run.
    pub big_block_bytes: Option<u64>,
    pub big_block_write_mb_s: Option<f64>,
    /// The `bottleneck` of `report --json` over the test.
    pub wall: serde_json::Value,
}

fn mb_s(bytes: u64, us: u64) -> f64 {
    nasprobe_analysis::verdict::round2(bytes as f64 / (us.max(1) as f64 / 1e6) / 1e6)
}

/// Runs one test on `host`'s agent while recording it; returns the result and the wall.
fn run_recorded(
    c: &Context,
    host: &str,
    req: TestRequest,
) -> anyhow::Result<(String, TestResult, serde_json::Value)> {
    let mut targets = c.targets(&[host.to_string()], false)?;
    anyhow::ensure!(targets.len() == 1, "name one host");
    let target = targets.remove(0);
    let name = target.spec.name.clone();
    let addr = target.spec.addr.clone();
    let token = target.token.clone();
    let collector = Collector::start(c.open_store()?, vec![target], Some(c.retention));
    crate::signals::install();
    let outcome = smol::block_on(async {
        let mut s = Session::connect(&name, &addr, &token).await?;
        s.test(req, RESULT_WAIT).await
    });
    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            collector.finish().ok();
            return Err(match e {
                ClientError::Refused { host, reason } => {
                    anyhow::anyhow!("{host}: the agent refused the test: {reason}")
                }
                e => e.into(),
            });
        }
    };
    let (from, to) = match &result {
        TestResult::Disk(d) => (d.started_ms, d.ended_ms),
        TestResult::Failed(_) => (0, 0),
    };
    std::thread::sleep(SETTLE);
    let store = collector.finish()?;
    let wall = if to > from {
        let r = crate::report::load_between(&store, Some(from), Some(to), None)?
            .1
            .report;
        serde_json::to_value(&r.bottleneck)?
    } else {
        serde_json::Value::Null
    };
    Ok((name, result, wall))
}

/// `nasprobe test disk HOST --path DIR [--size 1G] [--allow-tmpfs] [--json]`.
pub fn disk(
    c: &Context,
    host: &str,
    path: &str,
    bytes: u64,
    allow_tmpfs: bool,
    json: bool,
) -> anyhow::Result<()> {
    let Ok(p) = heapless::String::<PATH_LEN>::try_from(path) else {
        bail!("--path is longer than {PATH_LEN} bytes");
    };
    let req = TestRequest::Disk(DiskTest {
        path: p,
        bytes,
        allow_tmpfs,
    });
    let (name, result, wall) = run_recorded(c, host, req)?;
    let d: DiskResult = match result {
        TestResult::Disk(d) => d,
        TestResult::Failed(why) => bail!("{name}: the disk test failed: {why}"),
    };
    let big = (d.big_block_bytes > 0).then(|| mb_s(d.big_block_bytes, d.big_write_us));
    let out = DiskOut {
        host: name,
        path: path.to_string(),
        device: d.device.to_string(),
        fs_type: d.fs_type.to_string(),
        bytes: d.bytes,
        write_mb_s: mb_s(d.bytes, d.write_us),
        read_mb_s: mb_s(d.read_bytes, d.read_us),
        block_bytes: d.block_bytes,
        cache_dropped: d.cache_dropped,
        big_block_bytes: (d.big_block_bytes > 0).then_some(d.big_block_bytes),
        big_block_write_mb_s: big,
        wall,
    };
    let mut o = crate::output::stdout();
    if json {
        o.line(&serde_json::to_string_pretty(&out)?)?;
    } else {
        o.text(&disk_text(&out))?;
    }
    o.finish()?;
    Ok(())
}

fn wall_sentence(w: &serde_json::Value) -> Option<String> {
    let res = w.get("resource")?.as_str()?;
    if res == "none" {
        return Some("no wall found on the host meanwhile".into());
    }
    let what = w
        .get("device")
        .and_then(|d| d.as_str())
        .or(w.get("process").and_then(|p| p.as_str()))
        .map(|x| format!(" {x}"))
        .unwrap_or_default();
    let u = w.get("utilization").and_then(|u| u.as_f64()).unwrap_or(0.0);
    Some(format!(
        "the wall meanwhile: {res}{what} at {:.0}%",
        u * 100.0
    ))
}

fn disk_text(d: &DiskOut) -> String {
    let mut o = format!(
        "{}: {} on {} ({}), {} MB in {} KiB blocks, synced\n",
        d.host,
        d.path,
        if d.device.is_empty() { "?" } else { &d.device },
        d.fs_type,
        d.bytes / 1_000_000,
        d.block_bytes / 1024
    );
    o += &format!("  write {:>8.1} MB/s\n", d.write_mb_s);
    o += &format!(
        "  read  {:>8.1} MB/s{}\n",
        d.read_mb_s,
        if d.cache_dropped {
            ""
        } else {
            " (the page cache could not be dropped: this may be the cache)"
        }
    );
    if let (Some(b), Some(r)) = (d.big_block_bytes, d.big_block_write_mb_s) {
        o += &format!(
            "  with {} MiB blocks: {:.1} MB/s{}\n",
            b >> 20,
            r,
            if r < 0.7 * d.write_mb_s {
                format!(
                    " — slower than with 1 MiB blocks ({:.1}): measure with 1 MiB blocks \
                     (dd bs=1M), not one huge one",
                    d.write_mb_s
                )
            } else {
                String::new()
            }
        );
    }
    if let Some(w) = wall_sentence(&d.wall) {
        o += &format!("  {w}\n");
    }
    o
}
