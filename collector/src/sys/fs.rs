//! Files below std: aligned buffers and page-cache control for `ladder`'s uncached reads and
//! writes, a folder's free space.

use std::fs::File;
use std::path::Path;

/// A zeroed heap buffer whose start is aligned (O_DIRECT needs the buffer, the offset and the
/// length aligned to the device's logical block).
pub(crate) struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    /// `len` zero bytes at an `align`-aligned address; `len` must be non-zero and `align` a
    /// power of two (a programming error otherwise).
    pub(crate) fn zeroed(len: usize, align: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len, align).expect("valid layout");
        assert!(len > 0, "an empty aligned buffer");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: ptr holds layout.size() initialised bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Turns the page cache off for `f` (macOS F_NOCACHE); elsewhere a no-op.
pub(crate) fn set_nocache(f: &File) -> std::io::Result<()> {
    #[cfg(target_os = "macos")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain fcntl on an fd we own.
        if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_NOCACHE, 1) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let _ = f;
    Ok(())
}

/// Drops the file's pages from the cache (after it was synced); Linux only, elsewhere a no-op.
pub(crate) fn drop_cache(f: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain advisory call on an fd we own.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    let _ = f;
}

/// Bytes an unprivileged user may still write on the file system holding `dir` (statvfs), or
/// None where it cannot be told.
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs fills the struct; c is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        #[allow(clippy::unnecessary_cast)] // c_ulong / fsblkcnt_t widths differ by platform
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}
