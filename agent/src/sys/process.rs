//! This process and others: niceness, whether a pid lives, `sysconf`.

use std::io;

/// Sets the niceness of this process.
pub(crate) fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: plain syscall on this process.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether process `pid` exists (signal 0 only checks that; EPERM counts as missing, as
/// before: the pidfile check then takes the file over).
pub(crate) fn exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// `sysconf(name)` (-1 when unknown).
pub(crate) fn sysconf(name: libc::c_int) -> libc::c_long {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(name) }
}
