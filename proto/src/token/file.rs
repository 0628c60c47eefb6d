//! Token files on disk, by one set of rules for the agent (which creates the file when it is
//! missing) and the collector (which only reads it), so that both refuse the same files:
//!
//! - a regular file, or a symlink to a file in the link's own directory (`token -> token.2026`);
//!   a symlink that leaves it (to `/etc/shadow`) is refused, and so is one that does not resolve;
//! - not accessible by group or others (mode 0600; checked on Unix);
//! - at most [`MAX_TOKEN_FILE_BYTES`] bytes, the content a token by [`token_from_file`].
//!
//! A created token file is 64 lower-case hex characters (32 random bytes the caller supplies)
//! and a newline, mode 0600, its directory made 0700 when missing.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;

use super::{Hex, MAX_TOKEN_FILE_BYTES, TokenError, token_from_file};

/// Random bytes in a created token (64 hex characters).
pub const TOKEN_RANDOM_BYTES: usize = 32;

/// Why a token file cannot be used or made. Every message names the file.
#[derive(Debug)]
#[non_exhaustive]
pub enum TokenFileError {
    /// It cannot be opened or read (missing, no permission...).
    Read(PathBuf, io::Error),
    /// A symlink that does not resolve.
    Dangling(PathBuf, io::Error),
    /// A symlink to a file outside the link's directory.
    OutsideDir {
        /// The link.
        path: PathBuf,
        /// Where it leads.
        target: PathBuf,
    },
    /// A directory, a device, a FIFO...
    NotRegular(PathBuf),
    /// Group or others may access it (`mode` is its permission bits).
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Its content is not a token.
    Content(PathBuf, TokenError),
    /// Making its directory failed (the directory's path).
    CreateDir(PathBuf, io::Error),
    /// Creating or writing it failed.
    Create(PathBuf, io::Error),
}

impl core::fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TokenFileError::Read(p, e) => {
                write!(f, "cannot read token file {}: {e}", p.display())
            }
            TokenFileError::Dangling(p, e) => write!(
                f,
                "token file {}: a symlink that does not resolve: {e}",
                p.display()
            ),
            TokenFileError::OutsideDir { path, target } => write!(
                f,
                "token file {} is a symlink to {}, outside its directory: refused (copy the \
                 token file there instead, mode 0600)",
                path.display(),
                target.display()
            ),
            TokenFileError::NotRegular(p) => {
                write!(f, "token file {}: not a regular file", p.display())
            }
            TokenFileError::NotPrivate { path, mode } => {
                let p = path.display();
                write!(
                    f,
                    "token file {p} is accessible by group or others (mode {mode:o}); anyone who \
                     can read it can read the agent's samples. Fix it with: chmod 600 {p}"
                )
            }
            TokenFileError::Content(p, e) => write!(f, "token file {}: {e}", p.display()),
            TokenFileError::CreateDir(d, e) => write!(f, "creating {}: {e}", d.display()),
            TokenFileError::Create(p, e) => {
                write!(f, "creating token file {}: {e}", p.display())
            }
        }
    }
}

impl std::error::Error for TokenFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenFileError::Read(_, e)
            | TokenFileError::Dangling(_, e)
            | TokenFileError::CreateDir(_, e)
            | TokenFileError::Create(_, e) => Some(e),
            TokenFileError::Content(_, e) => Some(e),
            _ => None,
        }
    }
}

/// Reads the token at `path` by the rules above.
pub fn read(path: &Path) -> Result<Vec<u8>, TokenFileError> {
    let p = || path.to_path_buf();
    let link = fs::symlink_metadata(path).map_err(|e| TokenFileError::Read(p(), e))?;
    if link.file_type().is_symlink() {
        let real = fs::canonicalize(path).map_err(|e| TokenFileError::Dangling(p(), e))?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if real.parent() != Some(dir.as_path()) {
            return Err(TokenFileError::OutsideDir {
                path: p(),
                target: real,
            });
        }
    }
    let mut f = fs::File::open(path).map_err(|e| TokenFileError::Read(p(), e))?;
    let meta = f.metadata().map_err(|e| TokenFileError::Read(p(), e))?;
    if !meta.is_file() {
        return Err(TokenFileError::NotRegular(p()));
    }
    #[cfg(unix)]
    {
        let mode = std::os::unix::fs::MetadataExt::mode(&meta) & 0o777;
        if mode & 0o077 != 0 {
            return Err(TokenFileError::NotPrivate { path: p(), mode });
        }
    }
    if meta.len() > MAX_TOKEN_FILE_BYTES {
        return Err(TokenFileError::Content(
            p(),
            TokenError::TooLarge(meta.len()),
        ));
    }
    let mut raw = Vec::new();
    (&mut f)
        .take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(|e| TokenFileError::Read(p(), e))?;
    let t = token_from_file(&raw).map_err(|e| TokenFileError::Content(p(), e))?;
    Ok(t.to_vec())
}

/// Whether nothing is at `path` (not even a dangling symlink): the agent then creates it.
pub fn is_missing(path: &Path) -> Result<bool, TokenFileError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(TokenFileError::Read(path.to_path_buf(), e)),
    }
}

/// Creates a token file at `path` holding `random` as hex and a newline (mode 0600; never
/// over an existing file), making its directory (0700) when missing; synced to disk.
pub fn create(path: &Path, random: &[u8; TOKEN_RANDOM_BYTES]) -> Result<(), TokenFileError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir)
            .map_err(|e| TokenFileError::CreateDir(dir.to_path_buf(), e))?;
    }
    let mut text = hex(random);
    text.push('\n');
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let err = |e| TokenFileError::Create(path.to_path_buf(), e);
    let mut f = o.open(path).map_err(err)?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(err)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use core::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    let _ = write!(s, "{}", Hex(bytes));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;
    use std::string::ToString;

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "nasprobe-proto-token-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[cfg(unix)]
    fn write_mode(path: &Path, content: &[u8], mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::write(path, content).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }

    #[cfg(unix)]
    #[test]
    fn created_files_read_back_and_are_private() {
        use std::os::unix::fs::MetadataExt;
        let d = tmpdir("create");
        let path = d.join("sub/token");
        assert!(is_missing(&path).unwrap());
        create(&path, &[0xab; TOKEN_RANDOM_BYTES]).unwrap();
        assert!(!is_missing(&path).unwrap());
        assert_eq!(read(&path).unwrap(), hex(&[0xab; 32]).as_bytes());
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(d.join("sub")).unwrap().mode() & 0o777, 0o700);
        let e = create(&path, &[0; 32]).unwrap_err().to_string();
        assert!(e.starts_with("creating token file"), "{e}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_rules_refuse_links_out_open_modes_and_non_tokens() {
        let d = tmpdir("rules");
        let other = tmpdir("rules-other");
        let hex = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
        write_mode(&d.join("good"), hex, 0o600);
        std::os::unix::fs::symlink("good", d.join("same-dir-link")).unwrap();
        assert_eq!(read(&d.join("same-dir-link")).unwrap(), &hex[..64]);
        write_mode(&other.join("secret"), hex, 0o600);
        std::os::unix::fs::symlink(other.join("secret"), d.join("far-link")).unwrap();
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
        write_mode(&d.join("open"), hex, 0o640);
        write_mode(&d.join("huge"), &[b'a'; 100_000], 0o600);
        for (name, want) in [
            ("far-link", "outside its directory"),
            ("dangling", "does not resolve"),
            ("open", "mode 640"),
            ("open", "chmod 600"),
            ("huge", "100000 bytes, more than a token file holds"),
            ("missing", "cannot read token file"),
        ] {
            let e = read(&d.join(name)).unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
        assert!(matches!(read(&d), Err(TokenFileError::NotRegular(_))));
        fs::remove_dir_all(&d).unwrap();
        fs::remove_dir_all(&other).unwrap();
    }
}
