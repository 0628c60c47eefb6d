//! Reading files under the roots: kept descriptors re-read with pread on a real procfs/sysfs,
//! open/read/close everywhere else, one shared buffer, no allocation.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::errno::Errno;

use crate::sys;

/// `statfs` magic numbers (linux/magic.h).
pub(crate) const PROC_SUPER_MAGIC: i64 = 0x9fa0;
pub(crate) const SYSFS_MAGIC: i64 = 0x6265_6572;

/// One root directory (`--proc-root` or `--sys-root`).
pub struct Root {
    /// O_PATH-less directory descriptor: every file is opened relative to it with openat.
    pub dir: Option<OwnedFd>,
    /// True when the root is the kernel's own procfs/sysfs. Only then are descriptors kept
    /// open and re-read with pread at offset 0: those files are regenerated on every read and
    /// never replaced. Anything else (a generated tree whose files are replaced by rename
    /// between samples) is opened fresh on every read, so content is never stale.
    pub real: bool,
    pub path: std::path::PathBuf,
}

impl Root {
    pub fn open(path: &Path, magic: i64) -> Root {
        // f_type is i64, u32 or c_ulong depending on the target: the cast is for portability.
        #[allow(clippy::unnecessary_cast)]
        let real = nix::sys::statfs::statfs(path)
            .map(|s| s.filesystem_type().0 as i64 == magic)
            .unwrap_or(false);
        let dir = cstring(path.as_os_str().as_bytes())
            .and_then(|c| open_path(&c, libc::O_RDONLY | libc::O_DIRECTORY).ok());
        if dir.is_none() {
            log::warn!(
                "{}: cannot open; everything under it reads as missing",
                path.display()
            );
        }
        Root {
            dir,
            real,
            path: path.to_path_buf(),
        }
    }

    /// The root's directory, None when it could not be opened (what is under it then reads
    /// as missing: EBADF, as `openat(-1, ...)` said before).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.dir.as_ref().map(|d| d.as_fd())
    }

    /// Reads `rel` (relative path) once into `buf` with open/read/close.
    pub(crate) fn read_once<'b>(
        &self,
        rel: &CStr,
        buf: &'b mut [u8],
    ) -> Result<&'b [u8], ReadError> {
        let fd = open_raw(self.fd(), rel, libc::O_RDONLY).map_err(ReadError::from_errno)?;
        read_at(fd.as_fd(), buf)
    }
}

/// Why a read gave nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// The file (or the process it belongs to) does not exist: `None`, no log.
    Missing,
    /// The content filled the whole buffer: it is bigger than the buffer's named capacity.
    Full,
    /// Any other error (EACCES, EINVAL on sysfs attributes of a down link, EIO ...).
    Io(Errno),
}

impl ReadError {
    pub(crate) fn from_errno(e: Errno) -> ReadError {
        match e {
            Errno::ENOENT | Errno::ESRCH | Errno::ENOTDIR => ReadError::Missing,
            e => ReadError::Io(e),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => f.write_str("missing"),
            ReadError::Full => f.write_str("bigger than the read buffer"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

pub(crate) fn cstring(b: &[u8]) -> Option<CString> {
    CString::new(b).ok()
}

/// Opens `path` relative to `dir` (close-on-exec, never a controlling terminal); `dir` None
/// (a root that could not be opened) fails with EBADF.
pub(crate) fn open_raw(
    dir: Option<BorrowedFd<'_>>,
    path: &CStr,
    flags: i32,
) -> Result<OwnedFd, Errno> {
    let dir = dir.ok_or(Errno::EBADF)?;
    sys::fd::openat(dir, path, flags | libc::O_CLOEXEC | libc::O_NOCTTY)
}

/// Opens `path` (absolute, or relative to the working directory) like [`open_raw`].
pub(crate) fn open_path(path: &CStr, flags: i32) -> Result<OwnedFd, Errno> {
    sys::fd::open(path, flags | libc::O_CLOEXEC | libc::O_NOCTTY)
}

/// One pread at offset 0. A short read is the end of the file (true for seq_file, kernfs and
/// regular files); a read that fills the buffer means the file is bigger than it: `Full`.
pub(crate) fn read_at<'b>(fd: BorrowedFd<'_>, buf: &'b mut [u8]) -> Result<&'b [u8], ReadError> {
    loop {
        let n = match sys::fd::pread0(fd, buf) {
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(ReadError::from_errno(e)),
        };
        if n >= buf.len() {
            return Err(ReadError::Full);
        }
        return Ok(&buf[..n]);
    }
}

/// A file read every sample: kept open on a real root, reopened otherwise. Errors are logged
/// once per source (and once more when it recovers).
pub(crate) struct Src {
    rel: CString,
    fd: Option<OwnedFd>,
    logged: bool,
}

impl Src {
    pub fn new(rel: &str) -> Src {
        Src {
            rel: CString::new(rel).unwrap_or_default(),
            fd: None,
            logged: false,
        }
    }

    /// Reads the whole file. `Missing` is not logged (a kernel without that file).
    pub fn read<'b>(&mut self, root: &Root, buf: &'b mut [u8]) -> Result<&'b [u8], ReadError> {
        let r = self.read_inner(root, buf);
        match r {
            // EINVAL: sysfs speed/duplex/carrier of a link that is down. Not worth a log line.
            Err(e @ (ReadError::Missing | ReadError::Io(Errno::EINVAL))) => Err(e),
            Err(e) => {
                self.complain(root, &e);
                Err(e)
            }
            Ok(b) => Ok(b),
        }
    }

    fn read_inner<'b>(&mut self, root: &Root, buf: &'b mut [u8]) -> Result<&'b [u8], ReadError> {
        if !root.real {
            return root.read_once(&self.rel, buf);
        }
        if self.fd.is_none() {
            self.fd = Some(
                open_raw(root.fd(), &self.rel, libc::O_RDONLY).map_err(ReadError::from_errno)?,
            );
        }
        let Some(fd) = self.fd.as_ref() else {
            return Err(ReadError::Io(Errno::EBADF));
        };
        match read_at(fd.as_fd(), buf) {
            Ok(b) => Ok(b),
            Err(e) => {
                // A kept descriptor that fails is dropped: the next read reopens it.
                self.fd = None;
                Err(e)
            }
        }
    }

    /// Logs a problem with this source, once.
    pub(crate) fn complain(&mut self, root: &Root, what: &dyn std::fmt::Display) {
        if !self.logged {
            self.logged = true;
            log::warn!(
                "{}/{}: {what}; reported as missing (logged once)",
                root.path.display(),
                self.rel.to_string_lossy()
            );
        }
    }
}

/// Log-once flags for sources that are not one file (per-pid files, per-device sysfs).
#[derive(Default)]
pub struct Once(bool);

impl Once {
    pub fn warn(&mut self, what: std::fmt::Arguments<'_>) {
        if !self.0 {
            self.0 = true;
            log::warn!("{what} (logged once)");
        }
    }
}

/// Builds `"<a>/<b>/<file>"` paths of numbers into a reusable stack buffer.
pub(crate) struct PathBuf64 {
    buf: [u8; 96],
    len: usize,
}

impl Default for PathBuf64 {
    fn default() -> Self {
        PathBuf64 {
            buf: [0; 96],
            len: 0,
        }
    }
}

impl PathBuf64 {
    pub fn clear(&mut self) -> &mut Self {
        self.len = 0;
        self
    }

    pub fn num(&mut self, mut n: u32) -> &mut Self {
        let mut tmp = [0u8; 10];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.bytes(&tmp[i..])
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        let n = b.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        self
    }

    pub(crate) fn as_cstr(&mut self) -> &CStr {
        self.buf[self.len] = 0;
        CStr::from_bytes_with_nul(&self.buf[..=self.len]).unwrap_or(c"")
    }
}

/// Reads the numeric directory entries (pids, tids) of `dir` into `out`, sorted. Returns false
/// when `out` was full (the rest were left out; the caller logs and counts it).
pub(crate) fn list_numeric(
    dir: Option<BorrowedFd<'_>>,
    dents: &mut [u8],
    out: &mut Vec<u32>,
    cap: usize,
) -> Result<bool, Errno> {
    out.clear();
    let dir = dir.ok_or(Errno::EBADF)?;
    sys::dirent::rewind(dir)?;
    let mut complete = true;
    loop {
        let n = sys::dirent::getdents(dir, dents)?;
        if n == 0 {
            break;
        }
        for name in sys::dirent::names(dents, n) {
            if let Some(v) = crate::parse::parse_u64(name).and_then(|v| u32::try_from(v).ok()) {
                if out.len() < cap {
                    out.push(v);
                } else {
                    complete = false;
                }
            }
        }
    }
    out.sort_unstable();
    Ok(complete)
}

/// Names of the entries of a directory (sysfs listings: md slaves); setup-time only.
pub(crate) fn list_names(root: &Root, rel: &str) -> Vec<Vec<u8>> {
    let mut p = root.path.clone();
    p.push(rel);
    let mut v: Vec<Vec<u8>> = match std::fs::read_dir(&p) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().as_bytes().to_vec())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Reads a small file under a root (setup-time, allocation allowed).
pub(crate) fn read_small(root: &Root, rel: &str) -> Option<Vec<u8>> {
    let mut buf = [0u8; 4096];
    let c = cstring(rel.as_bytes())?;
    root.read_once(&c, &mut buf).ok().map(|b| b.to_vec())
}

/// Whether a path exists under a root.
pub fn exists(root: &Root, rel: &str) -> bool {
    let mut p = root.path.clone();
    p.push(rel);
    p.symlink_metadata().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_numeric_reads_the_numbers_sorted_and_bounded() {
        let d = std::env::temp_dir().join(format!("nasprobe-io-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        for name in ["30", "7", "x", "12a", "100"] {
            std::fs::write(d.join(name), b"").unwrap();
        }
        let c = cstring(d.as_os_str().as_bytes()).unwrap();
        let dir = open_path(&c, libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
        let mut dents = vec![0u8; 256];
        let mut out = Vec::new();
        assert_eq!(
            list_numeric(Some(dir.as_fd()), &mut dents, &mut out, 16),
            Ok(true)
        );
        assert_eq!(out, [7, 30, 100]);
        // Read again (rewound), with room for two: incomplete.
        assert_eq!(
            list_numeric(Some(dir.as_fd()), &mut dents, &mut out, 2),
            Ok(false)
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            list_numeric(None, &mut dents, &mut out, 2),
            Err(Errno::EBADF)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
