//! Process plumbing for the server: logging, priority, CPU affinity, pidfile and signals.
//!
//! Signals use plain `sigaction` and a self-pipe (no signalfd): the handler writes one byte to a
//! non-blocking pipe whose read end is in the server's poll set (see [`Signals`], in
//! `sys/signal.rs` with the handler). Nothing here needs a syscall newer than Linux 3.10.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::sys::signal::Signals;

// ---------------------------------------------------------------------------------------------
// Logging

enum Sink {
    Stderr,
    File(fs::File),
}

/// A small `log::Log`: one line per record, `2024-01-02T03:04:05Z LEVEL message`, to stderr or
/// to an append-only file.
pub(crate) struct Logger {
    sink: Mutex<Sink>,
    level: log::LevelFilter,
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = format!("{} {:<5} {}\n", utc_now(), r.level(), r.args());
        if let Ok(mut sink) = self.sink.lock() {
            let _ = match &mut *sink {
                Sink::Stderr => std::io::stderr().write_all(line.as_bytes()),
                Sink::File(f) => f.write_all(line.as_bytes()),
            };
        }
    }

    fn flush(&self) {}
}

/// Installs the logger: `log_file` (created 0640 if missing, appended to) or stderr. The level
/// is `info`, or what `NASPROBE_LOG` says (error, warn, info, debug, trace).
pub fn init_logging(log_file: Option<&Path>) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let sink = match log_file {
        Some(p) => Sink::File(
            fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o640)
                .open(p)
                .map_err(|e| format!("log file {}: {e}", p.display()))?,
        ),
        None => Sink::Stderr,
    };
    let level = std::env::var("NASPROBE_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(log::LevelFilter::Info);
    let logger = Box::leak(Box::new(Logger {
        sink: Mutex::new(sink),
        level,
    }));
    log::set_logger(logger).map_err(|e| e.to_string())?;
    log::set_max_level(level);
    Ok(())
}

/// Wall clock now as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn utc_now() -> String {
    let ms = nasprobe_proto::time::now_ms() / 1000 * 1000;
    nasprobe_proto::time::Rfc3339 { ms, millis: false }.to_string()
}

// ---------------------------------------------------------------------------------------------
// Priority and affinity

/// Sets the process's niceness. Failure (e.g. raising priority without the right) is logged,
/// not fatal.
pub fn set_nice(nice: i32) {
    if let Err(e) = crate::sys::process::set_nice(nice) {
        log::warn!("could not set nice {nice}: {e}");
    }
}

/// Pins the process to one CPU.
pub fn set_cpu(cpu: usize) -> Result<(), String> {
    use nix::sched::{CpuSet, sched_setaffinity};
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| format!("--cpu {cpu}: {e}"))?;
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|e| format!("--cpu {cpu}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Pidfile

/// A pidfile removed when dropped.
pub struct Pidfile {
    path: PathBuf,
}

impl Pidfile {
    /// Writes our pid to `path`. Refuses when it names a live process other than us (another
    /// agent is running); a stale one is replaced.
    pub fn create(path: &Path) -> Result<Pidfile, String> {
        let p = path.display();
        let me = std::process::id() as i32;
        if let Ok(text) = fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse::<i32>()
            && pid > 0
            && pid != me
            && crate::sys::process::exists(pid)
        {
            // Is it really an agent? comm is "nasprobe-agent" (cut to 15 bytes).
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim().starts_with("nasprobe") {
                return Err(format!("pidfile {p}: agent already running as pid {pid}"));
            }
        }
        let tmp = path.with_extension("tmp");
        fs::write(&tmp, format!("{}\n", std::process::id()))
            .and_then(|_| fs::rename(&tmp, path))
            .map_err(|e| format!("pidfile {p}: {e}"))?;
        Ok(Pidfile {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        // Only remove it when it is still ours.
        let ours = fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            == Some(std::process::id());
        if ours {
            let _ = fs::remove_file(&self.path);
        }
    }
}
