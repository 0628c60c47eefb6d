//! Process plumbing for the server: logging, priority, CPU affinity, pidfile and signals.
//!
//! Signals use plain `sigaction` and a self-pipe (no signalfd): the handler writes one byte to a
//! non-blocking pipe whose read end is in the server's poll set. Nothing here needs a syscall
//! newer than Linux 3.10.

use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

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
    // SAFETY: plain syscall on this process.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if r != 0 {
        log::warn!(
            "could not set nice {nice}: {}",
            std::io::Error::last_os_error()
        );
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
            // SAFETY: signal 0 only checks that the process exists.
            && pid > 0
            && pid != me
            && unsafe { libc::kill(pid, 0) } == 0
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

// ---------------------------------------------------------------------------------------------
// Signals

static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
static LAST_SIGNAL: AtomicU8 = AtomicU8::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST_SIGNAL.store(sig as u8, Ordering::Relaxed);
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; the pipe is non-blocking, a full pipe only
        // means a wake-up is already pending.
        unsafe {
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
    }
}

/// Read end of the self-pipe that SIGTERM and SIGINT write to; readable = time to exit.
pub struct Signals {
    read: OwnedFd,
    _write: OwnedFd,
}

impl Signals {
    /// Installs the handlers for SIGTERM, SIGINT and SIGHUP (all mean "exit cleanly"; SIGHUP
    /// stays ignored when the agent was started ignoring it, as under nohup), and ignores
    /// SIGPIPE.
    pub fn install() -> Result<Signals, String> {
        use nix::fcntl::OFlag;
        use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
        let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)
            .map_err(|e| format!("pipe: {e}"))?;
        SIGNAL_PIPE.store(write.as_raw_fd(), Ordering::Relaxed);
        let act = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        let ign = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
        // SAFETY: the handler only does async-signal-safe work.
        unsafe {
            for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
                let old = sigaction(s, &act).map_err(|e| format!("sigaction {s}: {e}"))?;
                // Started with nohup (SIGHUP ignored): keep it that way.
                if s == Signal::SIGHUP && matches!(old.handler(), SigHandler::SigIgn) {
                    sigaction(s, &ign).map_err(|e| format!("sigaction {s}: {e}"))?;
                }
            }
            sigaction(Signal::SIGPIPE, &ign).map_err(|e| format!("sigaction SIGPIPE: {e}"))?;
        }
        Ok(Signals {
            read,
            _write: write,
        })
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.read.as_fd()
    }

    /// Drains the pipe; returns the last signal received, if any.
    pub fn take(&self) -> Option<i32> {
        let mut buf = [0u8; 16];
        let mut got = false;
        while let Ok(n) = nix::unistd::read(&self.read, &mut buf) {
            if n == 0 {
                break;
            }
            got = true;
        }
        got.then(|| LAST_SIGNAL.load(Ordering::Relaxed) as i32)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        SIGNAL_PIPE.store(-1, Ordering::Relaxed);
    }
}
