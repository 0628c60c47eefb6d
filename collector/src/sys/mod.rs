//! Every `unsafe` of the collector, behind safe functions: the signal pipe, the aligned,
//! uncached file I/O of `ladder`, free space and the machine's host name. The rest of the crate denies `unsafe_code`.

pub(crate) mod fs;
pub mod signals;

/// This machine's host name (None when it has none or it cannot be read).
pub(crate) fn host_name() -> Option<String> {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its length less one; the last byte stays 0, so the
        // name is NUL-terminated even when gethostname cut it.
        let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
        if r != 0 {
            return None;
        }
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        Some(String::from_utf8_lossy(&buf[..end]).into_owned())
    }
    #[cfg(not(unix))]
    {
        std::env::var("COMPUTERNAME").ok()
    }
}
