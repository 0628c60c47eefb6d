//! The signal handler and its self-pipe: SIGTERM, SIGINT and SIGHUP write one byte to a
//! non-blocking pipe whose read end is in the server's poll set.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

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
