//! `nasprobe export`: every stored point on stdout (`--format csv|json|influx`), or pushed to
//! VictoriaMetrics (`--push-vm URL`) exactly once, or to a Prometheus remote write receiver
//! (`--remote-write URL`) at least once.

use std::io::Write as _;
use std::time::Duration;

use crate::context::Context;
use crate::export::metrics::{Sink, Stamper, emit_event, emit_sample};
use crate::export::{Format, format, vm};
use crate::store::{StoreReader, Walked};

/// Writes every stored sample and event of the window (optionally only some hosts) to `sink`,
/// host by host and agent instance by instance in seq order, streaming: one sample decoded at
/// a time (`Store::walk`); a stored sample that does not decode is skipped with a warning
/// naming it. Stops early when the sink failed (a closed pipe). Returns
/// (samples, events).
pub(crate) fn write_points(
    store: &StoreReader,
    from_ms: Option<u64>,
    hosts: &[String],
    sink: &mut dyn Sink,
) -> anyhow::Result<(u64, u64)> {
    crate::store::window::ensure_hosts_stored(store, from_ms, hosts)?;
    let (mut ns, mut ne) = (0, 0);
    let mut skipped = 0u64;
    // Timestamps as pushed to VictoriaMetrics: strictly increasing per instance.
    let mut stamps = Stamper::default();
    store.walk(from_ms, None, hosts, &mut |w| {
        match w {
            Walked::Sample {
                host,
                hello,
                instance,
                seq,
                time_ms,
                sample,
            } => {
                let Some(sample) = sample else {
                    // Skipped and named, as `report` lists it among its gaps.
                    log::warn!(
                        "{host}: stored sample {seq} does not decode (corrupt row?); skipped"
                    );
                    skipped += 1;
                    return !sink.failed();
                };
                let ts = stamps.stamp((instance, false), time_ms);
                emit_sample(sink, host, hello, sample, ts);
                ns += 1;
            }
            Walked::Event {
                host,
                instance,
                time_ms,
                event,
                ..
            } => {
                let ts = stamps.stamp((instance, true), time_ms);
                emit_event(sink, host, event, ts);
                ne += 1;
            }
        }
        !sink.failed()
    })?;
    if skipped > 0 {
        log::warn!("{skipped} stored samples did not decode and were not exported");
    }
    Ok((ns, ne))
}

/// `nasprobe export --format F [--since DUR] [--host H]...`: points on stdout.
pub fn run(
    c: &Context,
    format: Format,
    since: Option<Duration>,
    hosts: &[String],
) -> anyhow::Result<()> {
    anyhow::ensure!(
        c.db.exists(),
        "no database at {} (record first, or name one with --db)",
        c.db.display()
    );
    let store = c.open_store_read()?;
    let from = since.map(|d| nasprobe_proto::time::now_ms().saturating_sub(d.as_millis() as u64));
    let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let (r, err) = match format {
        Format::Csv => {
            let mut s = format::Csv::new(out);
            let r = write_points(&store, from, hosts, &mut s);
            (r, s.error.or_else(|| s.out.flush().err()))
        }
        Format::Json => {
            let mut s = format::JsonLines::new(out);
            let r = write_points(&store, from, hosts, &mut s);
            (r, s.error.or_else(|| s.out.flush().err()))
        }
        Format::Influx => {
            let mut s = format::Influx::new(out);
            let r = write_points(&store, from, hosts, &mut s);
            (r, s.error.or_else(|| s.out.flush().err()))
        }
    };
    let (ns, ne) = r?;
    match err {
        // A closed pipe (`| head`) is a normal end for a script.
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Some(e) => return Err(anyhow::anyhow!("writing stdout: {e}")),
        None => {}
    }
    log::info!("exported {ns} samples and {ne} events");
    Ok(())
}

/// The closing line of a push.
fn say_pushed(t: &vm::BatchStats, secs: f64, url: &str) {
    crate::output::note(format_args!(
        "pushed {} samples and {} events ({} points, {:.1} MB{}{}) to {} in {:.2}s: \
         {:.0} samples/s, {:.0} points/s",
        t.samples,
        t.events,
        t.lines,
        t.bytes as f64 / 1e6,
        if t.skipped > 0 {
            format!("; {} points it already held were left out", t.skipped)
        } else {
            String::new()
        },
        if t.rejected > 0 {
            format!("; {} points refused for good", t.rejected)
        } else {
            String::new()
        },
        url,
        secs,
        t.samples as f64 / secs.max(1e-9),
        t.lines as f64 / secs.max(1e-9)
    ));
}

/// `nasprobe export --remote-write URL`: pushes everything not yet pushed to that receiver
/// (retrying a 5xx, a 429 or no answer with backoff for at most `RETRY_FOR`), then exits.
pub fn push_remote_write(
    c: &Context,
    url: &str,
    auth: Option<&std::path::Path>,
    headers: &[(String, String)],
) -> anyhow::Result<()> {
    anyhow::ensure!(c.db.exists(), "no database at {}", c.db.display());
    let mut store = c.open_store()?;
    let auth = auth
        .map(crate::export::remote_write::read_auth)
        .transpose()?;
    let pusher = vm::Pusher::new(vm::VmTarget::remote_write(url)?, Duration::from_secs(60))
        .with_auth(auth)
        .with_headers(headers)
        .with_collector(&c.collector)
        .with_trust(&c.trust);
    let mut st = vm::ExportState::load(&store, &pusher.target.cursor_key)?;
    let (t, secs) = vm::backfill_retrying(&mut store, &pusher, &mut st, RETRY_FOR)?;
    say_pushed(&t, secs, &pusher.target.shown);
    Ok(())
}

/// How long `export --remote-write` retries a receiver that does not answer 2xx or 4xx.
const RETRY_FOR: Duration = Duration::from_secs(60);

/// `nasprobe export --push-vm URL`: pushes everything not yet pushed to that target, then exits.
pub fn push_vm(c: &Context, url: &str) -> anyhow::Result<()> {
    anyhow::ensure!(c.db.exists(), "no database at {}", c.db.display());
    let mut store = c.open_store()?;
    let pusher = vm::Pusher::new(vm::VmTarget::parse(url)?, Duration::from_secs(60))
        .with_collector(&c.collector)
        .with_trust(&c.trust);
    let mut st = vm::ExportState::load(&store, &pusher.target.cursor_key)?;
    let (t, secs) =
        vm::backfill_with(&mut store, &pusher, &mut st, vm::BATCH_RECORDS, &mut |_| {})?;
    say_pushed(&t, secs, &pusher.target.shown);
    // The engine acknowledges before its disk has the rows: wait until it surely holds them,
    // so that a crash of the engine right after this command loses nothing unnoticed.
    if !st.all_sure() {
        let max = vm::DURABLE_AFTER + vm::EPOCH_CHECK * 2;
        crate::errln!(
            "nasprobe: waiting up to {}s until the engine surely holds them (interrupting is \
             safe: the next export checks them again)",
            max.as_secs()
        );
        if !vm::wait_sure(&mut store, &pusher, &mut st, max)? {
            crate::errln!("nasprobe: not sure yet; the next export checks them again");
        }
    }
    Ok(())
}
