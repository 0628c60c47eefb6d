//! The shared token: a file of 64 hex characters (32 random bytes) and a newline, mode 0600.
//!
//! Created when missing (parent directory 0700 when it has to be made). The agent refuses to
//! start when the file is readable or writable by group or others: anyone who can read it can
//! read every sample.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use nasprobe_proto::token::{MAX_TOKEN_FILE_BYTES as MAX_TOKEN_FILE, token_from_file};

/// Fills `buf` from /dev/urandom (not getrandom(2): Linux 3.10 lacks it).
pub(crate) fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

/// Loads the token at `path`, creating it when missing. The token is the file's content with
/// surrounding whitespace trimmed (the HMAC key is those bytes, so collectors read the file the
/// same way).
pub fn load_or_create(path: &Path) -> Result<Vec<u8>, String> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path)?,
        Err(e) => return Err(format!("token file {}: {e}", path.display())),
        Ok(_) => {}
    }
    load(path)
}

/// Loads an existing token file, refusing one that group or others can access.
pub fn load(path: &Path) -> Result<Vec<u8>, String> {
    let p = path.display();
    let mut f = fs::File::open(path).map_err(|e| format!("token file {p}: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("token file {p}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("token file {p}: not a regular file"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "token file {p} is accessible by group or others (mode {:o}); anyone who can read \
             it can read this host's samples. Fix it with: chmod 600 {p}",
            meta.mode() & 0o777
        ));
    }
    if meta.len() > MAX_TOKEN_FILE {
        return Err(format!(
            "token file {p}: larger than {MAX_TOKEN_FILE} bytes"
        ));
    }
    let mut content = Vec::new();
    f.read_to_end(&mut content)
        .map_err(|e| format!("token file {p}: {e}"))?;
    let token = token_from_file(&content).map_err(|e| format!("token file {p}: {e}"))?;
    Ok(token.to_vec())
}

fn create(path: &Path) -> Result<(), String> {
    let p = path.display();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let mut raw = [0u8; 32];
    random_bytes(&mut raw).map_err(|e| format!("reading /dev/urandom: {e}"))?;
    let mut text = hex(&raw);
    text.push('\n');
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("creating token file {p}: {e}"))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("writing token file {p}: {e}"))?;
    log::info!("created token file {p} (mode 0600); give it to the collector");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tmpdir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("nasprobe-token-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn creates_hex_token_with_private_modes() {
        let d = tmpdir("create");
        let path = d.join("sub/token");
        let t = load_or_create(&path).unwrap();
        assert_eq!(t.len(), 64);
        assert!(t.iter().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(d.join("sub")).unwrap().mode() & 0o777, 0o700);
        // Stable across loads.
        assert_eq!(load_or_create(&path).unwrap(), t);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_group_readable_with_the_fix() {
        let d = tmpdir("perm");
        fs::create_dir_all(&d).unwrap();
        let path = d.join("token");
        fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_or_create(&path).unwrap_err();
        assert!(e.contains(&format!("chmod 600 {}", path.display())), "{e}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load(&path).unwrap(), b"0123456789abcdef0123456789abcdef");
        fs::remove_dir_all(&d).unwrap();
    }
}
