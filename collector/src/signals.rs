//! SIGINT/SIGTERM: the first asks every running command to stop cleanly (flush the store,
//! restore the terminal), a second one ends the process.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT/SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the SIGINT/SIGTERM handlers (a second signal ends the process).
pub fn install() {
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

/// True once a stop was asked for.
pub(crate) fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
