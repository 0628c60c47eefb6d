//! `nasprobe record`: connect, store, reconnect and resume, until stopped or DUR has passed.

use std::time::{Duration, Instant};

use crate::cli::Common;
use crate::conn::Collector;

/// Set by SIGINT/SIGTERM.
pub static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Installs SIGINT/SIGTERM handlers that set [`STOP`] (a second signal ends the process).
pub fn install_signal_handlers() {
    #[cfg(unix)]
    unsafe {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

pub fn run(
    c: &Common,
    duration: Option<Duration>,
    export_vm: Option<&str>,
    hosts: &[String],
) -> anyhow::Result<()> {
    let targets = crate::targets(c, hosts, false)?;
    let db = crate::db_path(c);
    let store = crate::open_store(&db)?;
    // The exporter reads the store through its own connection and pushes what is committed.
    let exporter = match export_vm {
        Some(url) => {
            let target = crate::export::vm::VmTarget::parse(url)?;
            eprintln!("nasprobe: pushing to VictoriaMetrics at {}", target.base);
            let pusher = crate::export::vm::Pusher::new(target, Duration::from_secs(30));
            Some(crate::export::vm::Exporter::start(
                db.clone(),
                pusher,
                Default::default(),
            )?)
        }
        None => None,
    };
    install_signal_handlers();
    let names: Vec<_> = targets.iter().map(|t| t.spec.name.clone()).collect();
    log::info!("recording {} into {}", names.join(", "), db.display());
    eprintln!(
        "nasprobe: recording {} into {}{}",
        names.join(", "),
        db.display(),
        duration.map_or(String::new(), |d| format!(" for {}s", d.as_secs_f64()))
    );
    let col = Collector::start(store, targets, Some(c.retention));
    let start = Instant::now();
    while !STOP.load(std::sync::atomic::Ordering::SeqCst)
        && duration.is_none_or(|d| start.elapsed() < d)
        && !col.is_finished()
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let live = col.live.clone();
    let store = col.finish();
    // Push what the last batches stored (the exporter gives up after its drain time).
    if let Some(x) = exporter {
        let l = x.live.clone();
        x.finish();
        let o = std::sync::atomic::Ordering::Relaxed;
        eprintln!(
            "nasprobe: pushed {} samples and {} events ({} points){}",
            l.samples.load(o),
            l.events.load(o),
            l.lines.load(o),
            if l.caught_up.load(o) {
                ""
            } else {
                "; some wait in the store"
            }
        );
    }
    let store = store?;
    for h in live.snapshot() {
        if let Some(b) = &h.bad {
            eprintln!(
                "nasprobe: {} marked bad ({} records rejected): {b}",
                h.name, h.rejected
            );
        }
    }
    let committed = live.committed.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "nasprobe: stored {committed} records in {} ({})",
        store.path().display(),
        live.snapshot()
            .iter()
            .map(|h| format!("{}: {}", h.name, h.received))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
