//! SIGINT/SIGTERM: the first asks every running command to stop cleanly (flush the store,
//! restore the terminal), a second one ends the process. A self-pipe lets a waiting thread
//! sleep until a signal or a `wake` instead of polling a flag.

#[cfg(unix)]
use std::sync::atomic::AtomicI32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by SIGINT/SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);
/// The self-pipe (read end, write end; -1 until made), non-blocking both ends.
#[cfg(unix)]
static WAKE_RD: AtomicI32 = AtomicI32::new(-1);
#[cfg(unix)]
static WAKE_WR: AtomicI32 = AtomicI32::new(-1);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    wake();
}

/// Makes the self-pipe once (before the handlers can use it). `pipe` + `fcntl` rather than
/// `pipe2`: macOS has no `pipe2`.
#[cfg(unix)]
fn ensure_pipe() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut fds = [-1i32; 2];
        // SAFETY: pipe writes two descriptors into the array it is given; fcntl on them.
        unsafe {
            if libc::pipe(fds.as_mut_ptr()) != 0 {
                return;
            }
            for fd in fds {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        WAKE_RD.store(fds[0], Ordering::SeqCst);
        WAKE_WR.store(fds[1], Ordering::SeqCst);
    });
}

/// Wakes a thread in [`sleep`] (async-signal-safe: one `write` to a non-blocking pipe).
#[cfg(unix)]
pub(crate) fn wake() {
    let fd = WAKE_WR.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: writes one byte from a live buffer; a full pipe (EAGAIN) already wakes.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
}

/// Sleeps until a signal, a [`wake`] or `timeout` (None: no limit), whichever comes first.
#[cfg(unix)]
pub(crate) fn sleep(timeout: Option<Duration>) {
    ensure_pipe();
    let fd = WAKE_RD.load(Ordering::SeqCst);
    if fd < 0 {
        std::thread::sleep(timeout.unwrap_or(Duration::from_millis(50)));
        return;
    }
    let ms = timeout.map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; then reads into a live buffer until the pipe is empty.
    unsafe {
        libc::poll(&mut p, 1, ms);
        let mut buf = [0u8; 64];
        while libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) > 0 {}
    }
}

/// Without Unix signals (Windows): a condition variable does what the self-pipe does (nothing
/// calls [`wake`] from a signal handler there).
#[cfg(not(unix))]
static WOKEN: (std::sync::Mutex<bool>, std::sync::Condvar) =
    (std::sync::Mutex::new(false), std::sync::Condvar::new());

#[cfg(not(unix))]
fn ensure_pipe() {}

/// Wakes a thread in [`sleep`].
#[cfg(not(unix))]
pub(crate) fn wake() {
    let (m, cv) = &WOKEN;
    *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
    cv.notify_all();
}

/// Sleeps until a [`wake`] or `timeout` (None: no limit), whichever comes first.
#[cfg(not(unix))]
pub(crate) fn sleep(timeout: Option<Duration>) {
    let (m, cv) = &WOKEN;
    let mut woken = m.lock().unwrap_or_else(|e| e.into_inner());
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    while !*woken {
        match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                woken = cv
                    .wait_timeout(woken, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            None => woken = cv.wait(woken).unwrap_or_else(|e| e.into_inner()),
        }
    }
    *woken = false;
}

/// Installs the SIGINT/SIGTERM handlers (a second signal ends the process).
pub fn install() {
    ensure_pipe();
    #[cfg(unix)]
    unsafe {
        // SAFETY: a zeroed sigaction is a valid value (empty mask, no flags) before the fields
        // set below; the handler does only async-signal-safe work: a store to an atomic and one
        // write(2) to the non-blocking self-pipe (`wake`), made by ensure_pipe above.
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// Asks the running command to stop as SIGINT does (stderr was closed under it).
pub(crate) fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
    wake();
}

/// True once a stop was asked for.
pub(crate) fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
