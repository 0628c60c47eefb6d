//! Files that hold what others must not read (the store, the host list, its folder): created
//! mode 0600 in folders created 0700; an existing one that group or others may read is
//! warned about, once per file and run, with the fix.

use std::path::Path;

/// Creates `dir` and its missing parents, each new one mode 0700 (existing ones are left).
pub(crate) fn create_dirs(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Opens `path` for writing, truncated; a new file is created mode 0600.
pub(crate) fn create(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

/// Creates `path` empty, mode 0600, when it does not exist (before SQLite opens it: SQLite
/// then gives its `-wal` and `-shm` files the same mode).
pub(crate) fn touch(path: &Path) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    match o.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Says once per run, on stderr, that `path` (a file or folder that exists) is accessible by
/// group or others, what it holds and the fix.
pub(crate) fn warn_if_open(path: &Path, holds: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        static WARNED: std::sync::Mutex<Vec<std::path::PathBuf>> =
            std::sync::Mutex::new(Vec::new());
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 == 0 {
            return;
        }
        let mut w = WARNED.lock().unwrap_or_else(|p| p.into_inner());
        if w.iter().any(|p| p == path) {
            return;
        }
        w.push(path.to_path_buf());
        let fix = if meta.is_dir() { "700" } else { "600" };
        crate::errln!(
            "nasprobe: warning: {} is accessible by group or others (mode {mode:04o}) and holds \
             {holds}; fix it with: chmod {fix} {}",
            path.display(),
            path.display()
        );
    }
    #[cfg(not(unix))]
    let _ = (path, holds);
}
