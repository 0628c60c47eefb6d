//! The collector's token code: where the token file is by default, reading one by the agent's
//! rules, and creating a fresh one (`watch --local`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Default token file when neither the host nor `--token-file` names one.
pub(crate) fn default_path() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("token")
}

/// Reads a token file by the agent's rules (`nasprobe_proto::token`): a regular file, not
/// accessible by group or others (mode 0600), at most 4096 bytes, the token 16+ printable ASCII
/// characters once surrounding whitespace is trimmed. A symlink is followed only to a file in the
/// same directory (e.g. `token -> token.2026`): one to elsewhere (`/etc/shadow`) is refused.
pub fn read_token(path: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let p = path.display();
    let link = std::fs::symlink_metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot read token file {p}: {e}"))?;
    if link.file_type().is_symlink() {
        let real = std::fs::canonicalize(path)
            .map_err(|e| anyhow::anyhow!("token file {p}: a symlink that does not resolve: {e}"))?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        anyhow::ensure!(
            real.parent() == Some(dir.as_path()),
            "token file {p} is a symlink to {}, outside its directory: refused (copy the token \
             file there instead, mode 0600)",
            real.display()
        );
    }
    let mut f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot read token file {p}: {e}"))?;
    let meta = f
        .metadata()
        .map_err(|e| anyhow::anyhow!("token file {p}: {e}"))?;
    anyhow::ensure!(meta.is_file(), "token file {p}: not a regular file");
    #[cfg(unix)]
    anyhow::ensure!(
        std::os::unix::fs::MetadataExt::mode(&meta) & 0o077 == 0,
        "token file {p} is accessible by group or others (mode {:o}); anyone who can read it can \
         read your agents' samples. Fix it with: chmod 600 {p}",
        std::os::unix::fs::MetadataExt::mode(&meta) & 0o777
    );
    let max = nasprobe_proto::token::MAX_TOKEN_FILE_BYTES;
    let mut raw = Vec::new();
    (&mut f)
        .take(max + 1)
        .read_to_end(&mut raw)
        .map_err(|e| anyhow::anyhow!("token file {p}: {e}"))?;
    let t = nasprobe_proto::token::token_from_file(&raw)
        .map_err(|e| anyhow::anyhow!("token file {p}: {e}"))?;
    Ok(t.to_vec())
}

/// 32 random bytes from the OS (tokens, handshake and test nonces).
pub(crate) fn random_bytes() -> [u8; 32] {
    let mut n = [0u8; 32];
    getrandom::fill(&mut n).expect("the OS random source failed");
    n
}

/// Writes a fresh token (32 random bytes as hex, a newline) to a new file of mode 0600.
pub(crate) fn create(path: &Path) -> anyhow::Result<()> {
    let n = random_bytes();
    let hex: String = n.iter().map(|b| format!("{b:02x}")).collect();
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    use std::io::Write;
    o.open(path)
        .and_then(|mut f| f.write_all(format!("{hex}\n").as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))
}
